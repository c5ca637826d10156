"""Links sent before tokens were hashed keep opening what they opened."""

from __future__ import annotations

import pytest
from django.test import Client

from reports.models import Report, ReportVersion, token_digest
from tests.migrations import migrate
from tests.reports.helpers import make_report

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("reports", "0003_report_permissions")]
# Through to the newest reports schema, which the models this test reads with describe.
AFTER = [("reports", "0005_report_capacity_plan")]
SENT = "a-link-sent-before-the-upgrade-0123456789ab"
SENT_UNPUBLISHED = "a-link-of-a-report-from-before-versions-012"


def test_links_sent_before_hashing_open_the_same_pages_after(sweep, owner,
                                                             newest_schema_after):
    published = make_report(sweep, owner, title="Published before")
    unpublished = make_report(sweep, owner, title="Never opened", publish=False)
    apps = migrate(BEFORE)
    # What that schema stored: the tokens themselves, version 1 sharing its report's.
    OldReport = apps.get_model("reports", "Report")
    OldVersion = apps.get_model("reports", "ReportVersion")
    OldReport.objects.filter(pk=published.pk).update(token=SENT)
    OldVersion.objects.filter(report_id=published.pk).update(token=SENT)
    OldReport.objects.filter(pk=unpublished.pk).update(token=SENT_UNPUBLISHED)

    migrate(AFTER)
    stored = {r.pk: r for r in Report.objects.all()}
    assert stored[published.pk].token_digest == token_digest(SENT)
    assert ReportVersion.objects.get(report=published.pk).token_digest == token_digest(SENT)
    assert stored[unpublished.pk].token_digest == token_digest(SENT_UNPUBLISHED)
    assert stored[published.pk].code != stored[unpublished.pk].code
    body = Client().get(f"/r/{SENT}/?lang=en").content.decode()
    assert "Published before" in body and "Version 1" in body
    assert "Never opened" in Client().get(f"/r/{SENT_UNPUBLISHED}/").content.decode()
    # The stored digest is no key: only the token that was sent opens the page.
    assert Client().get(f"/r/{token_digest(SENT)}/").status_code == 404
