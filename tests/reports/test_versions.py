"""A sent link never changes: publishing freezes the page; publishing again makes a new version."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from benchmarks.models import AuditEvent, ExternalReference, OperatingPoint, Point
from benchmarks.storage.operating_points import save_operating_point
from judgement.figures import figures_by_key
from judgement.operating_point import select
from reports import publishing
from reports.content import build_report_content
from reports.models import ReportCaveat, ReportVersion, token_digest
from tests.reports.conftest import point
from tests.reports.helpers import make_report

pytestmark = pytest.mark.django_db


def _reference(value: float = 20000.0) -> ExternalReference:
    # The report points' own spec, so the reference is compared and its ratio printed.
    return ExternalReference.objects.create(
        source="Vendor per-GPU figure", url="https://vendor.example/perf", value=value,
        recorded_on="2025-03-01", gpu_name="NVIDIA H200", workload_spec="63-66 in / 256 out")


def _pages(token: str) -> dict[str, str]:
    return {lang: Client().get(f"/r/{token}/?lang={lang}").content.decode()
            for lang in ("en", "ko")}


def _edit_everything(sweep, report) -> None:
    """What an engineer may change after the link went out: the reference, the operating
    point, the stored points, a caveat and the report's own title."""
    ExternalReference.objects.update(value=30000.0, source="Vendor figure, corrected")
    OperatingPoint.objects.create(benchmark=sweep, method="override", point=point(sweep, 64, 16),
                                  sentence="chosen by an engineer", reason="a latency target")
    Point.objects.filter(pk=point(sweep, 64, 32).pk).update(output_throughput=50000.0)
    Point.objects.filter(pk=point(sweep, 8, 32).pk).update(median_e2el_ms=7000.0)
    ReportCaveat.objects.filter(report=report).update(text="Edited later.")
    type(report).objects.filter(pk=report.pk).update(title="Renamed later")


def test_a_sent_report_is_unchanged_after_its_reference_operating_point_and_points_change(
        sweep, owner):
    report = make_report(sweep, owner, references=[_reference()], caveats=["Short prompts."])
    sent = _pages(report.issued_token)
    assert "20,000" in sent["en"] and "2.09x" in sent["en"]  # 41,874 / 20,000
    assert "max_num_seqs 64 at burst 32" in sent["en"]

    _edit_everything(sweep, report)

    assert _pages(report.issued_token) == sent
    # The live data did change: a draft built now shows it.
    draft = build_report_content(type(report).objects.get(pk=report.pk))
    assert draft.title == "Renamed later"
    assert any("30,000" in r.reference_value for r in draft.references)


def test_publishing_again_makes_version_2_while_the_first_link_still_shows_version_1(
        sweep, owner, owner_client):
    report = make_report(sweep, owner, references=[_reference()])
    _edit_everything(sweep, report)

    response = owner_client.post(f"/reports/{report.code}/publish/")
    assert response.status_code == 200
    first, second = ReportVersion.objects.filter(report=report).order_by("number")
    assert (first.number, second.number) == (1, 2)
    assert first.token_digest == report.token_digest != second.token_digest
    # Version 2's link is on the page that answered the POST, the only time it is shown.
    second_token = _reissued_token(response)
    assert token_digest(second_token) == second.token_digest
    assert response["Cache-Control"] == "no-store"

    old, new = _pages(report.issued_token)["en"], _pages(second_token)["en"]
    assert "Version 1" in old and "20,000" in old and "Renamed later" not in old
    assert "Version 2" in new and "30,000" in new and "Renamed later" in new
    assert "max_num_seqs 64 at burst 16" in new and "a latency target" in new
    assert "max_num_seqs 64 at burst 16" not in old


def test_the_engineer_sees_each_version_and_when_it_was_generated_but_no_link_again(
        sweep, owner, owner_client):
    report = make_report(sweep, owner)
    second = publishing.publish(report, owner)
    body = owner_client.get(f"/reports/{report.code}/").content.decode()
    assert report.issued_token not in body and second.issued_token not in body
    assert "/r/" not in body  # a link is shown once, when it is issued
    assert 'id="version-1"' in body and 'id="version-2"' in body
    assert body.count("Re-issue link") == 2
    assert second.generated_at.strftime("%Y-%m-%d %H:%M") in body
    assert "Version 2, generated" in body  # the latest is the one previewed
    older = owner_client.get(f"/reports/{report.code}/?version=1").content.decode()
    assert "Version 1, generated" in older
    listing = owner_client.get("/reports/").content.decode()
    assert "v1-v2" in listing


def test_the_draft_preview_shows_what_publishing_now_would_store(sweep, owner, owner_client):
    report = make_report(sweep, owner, references=[_reference()])
    _edit_everything(sweep, report)
    published = owner_client.get(f"/reports/{report.code}/").content.decode()
    draft = owner_client.get(f"/reports/{report.code}/?draft=1").content.decode()
    assert "Draft: the current stored data, not published" in draft
    assert "30,000" in draft and "30,000" not in published
    assert "Publish version 2 from the current data" in draft


def test_the_public_page_reads_no_point_reference_or_operating_point_row(sweep, owner):
    report = make_report(sweep, owner, references=[_reference()])
    with CaptureQueriesContext(connection) as queries:
        response = Client().get(f"/r/{report.issued_token}/")
    assert response.status_code == 200
    read = " ".join(q["sql"] for q in queries.captured_queries)
    for table in ("benchmarks_point", "benchmarks_externalreference",
                  "benchmarks_operatingpoint", "reports_reportcaveat"):
        assert table not in read, table


def test_the_pdf_is_printed_from_the_stored_version_too(sweep, owner, monkeypatch):
    printed: list[str] = []
    monkeypatch.setattr("reports.pdf.html_to_pdf",
                        lambda html: printed.append(html) or b"%PDF-1.7")
    report = make_report(sweep, owner, references=[_reference()])
    _edit_everything(sweep, report)
    response = Client().get(f"/r/{report.issued_token}/report.pdf?lang=en")
    assert response.status_code == 200 and response.content == b"%PDF-1.7"
    assert len(printed) == 1
    assert "20,000" in printed[0] and "30,000" not in printed[0]
    assert "Renamed later" not in printed[0]


def test_a_report_from_before_versions_is_frozen_the_first_time_its_link_is_opened(sweep, owner):
    report = make_report(sweep, owner, publish=False, references=[_reference()])
    assert not report.versions.exists()
    first = _pages(report.issued_token)
    version = report.versions.get()
    assert version.number == 1 and version.token_digest == report.token_digest
    _edit_everything(sweep, report)
    assert _pages(report.issued_token) == first
    assert report.versions.count() == 1


def test_the_preview_of_a_report_from_before_versions_says_it_is_not_published(
        sweep, owner, owner_client):
    report = make_report(sweep, owner, publish=False)
    body = owner_client.get(f"/reports/{report.code}/").content.decode()
    assert "Not published yet" in body and report.issued_token not in body
    assert "Publish version 1 from the current data" in body
    assert not report.versions.exists()  # looking at the preview froze nothing


def test_publishing_version_1_of_a_report_from_before_versions_keeps_the_link_sent(
        sweep, owner, owner_client):
    report = make_report(sweep, owner, publish=False)
    response = owner_client.post(f"/reports/{report.code}/publish/")
    assert response.status_code == 302  # no new link to show: the one sent opens it
    assert report.versions.get().token_digest == report.token_digest
    assert "Version 1" in Client().get(f"/r/{report.issued_token}/?lang=en").content.decode()


def test_the_version_keeps_the_ids_of_the_rows_its_figures_came_from(sweep, owner):
    points = list(sweep.points.all())
    figs = figures_by_key([p for p in points if p.replicas == 1])[0]
    save_operating_point(sweep, select("knee", {}, list(figs.values())),
                                   points)
    reference = _reference()
    report = make_report(sweep, owner, references=[reference])
    sources = report.versions.get().sources
    single = set(sweep.points.filter(replicas=1).values_list("pk", flat=True))
    assert set(sources["curve_points"]) == single
    assert sources["baseline_point"] == point(sweep, 8, 32).pk
    assert sources["scaling_point"] == point(sweep, 64, 32, replicas=2).pk
    assert sources["operating_point"] == OperatingPoint.objects.get(is_current=True).pk
    assert sources["references"] == {str(reference.pk): point(sweep, 64, 32).pk}
    assert set(sources["point_ids"]) == single | {point(sweep, 64, 32, replicas=2).pk}


def test_revoking_closes_the_link_of_every_version_and_stops_new_ones(sweep, owner, owner_client):
    report = make_report(sweep, owner)
    second = publishing.publish(report, owner)
    owner_client.post(f"/reports/{report.code}/revoke/")
    for token in (report.issued_token, second.issued_token):
        assert Client().get(f"/r/{token}/").status_code == 410
        assert Client().get(f"/r/{token}/report.pdf").status_code == 410
    owner_client.post(f"/reports/{report.code}/publish/")
    assert report.versions.count() == 2


def test_only_the_owner_can_publish_and_only_by_post(sweep, owner, teammate, owner_client):
    report = make_report(sweep, owner)
    assert owner_client.get(f"/reports/{report.code}/publish/").status_code == 405
    client = Client()
    client.force_login(teammate)
    assert client.post(f"/reports/{report.code}/publish/").status_code == 404
    assert report.versions.count() == 1


def test_a_snapshot_loads_back_as_the_same_content(sweep, owner):
    report = make_report(sweep, owner, references=[_reference()])
    version = report.versions.get()
    for language in ("ko", "en"):
        loaded = publishing.content_of(version, language)
        assert publishing.snapshot(loaded) == version.content[language]
        assert loaded.headline is not None and loaded.headline.ratio_text == "2.32x"


def _reissued_token(response) -> str:
    (token,) = re.findall(r"http://testserver/r/([^/\"]+)/", response.content.decode())
    return token


def test_reissuing_a_link_kills_the_old_one_and_the_new_one_shows_the_same_version(
        sweep, owner, owner_client):
    report = make_report(sweep, owner)
    second = publishing.publish(report, owner)
    sent = _pages(report.issued_token)

    response = owner_client.post(f"/reports/{report.code}/versions/1/reissue/")
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    new = _reissued_token(response)
    assert new != report.issued_token
    assert Client().get(f"/r/{report.issued_token}/").status_code == 404
    assert Client().get(f"/r/{report.issued_token}/report.pdf").status_code == 404
    assert _pages(new) == sent
    # The other version's link is untouched, and nothing was published.
    assert Client().get(f"/r/{second.issued_token}/").status_code == 200
    assert report.versions.count() == 2
    event = AuditEvent.objects.get(action=AuditEvent.Action.REISSUED)
    assert (event.actor, event.target_id, event.detail) == (owner, report.pk, "version 1")


def test_a_later_version_can_be_reissued_too_and_no_other_link_changes(
        sweep, owner, teammate, owner_client):
    theirs = make_report(sweep, teammate)
    report = make_report(sweep, owner)
    second = publishing.publish(report, owner)
    new = _reissued_token(owner_client.post(f"/reports/{report.code}/versions/2/reissue/"))
    assert Client().get(f"/r/{second.issued_token}/").status_code == 404
    assert "Version 2" in _pages(new)["en"]
    assert Client().get(f"/r/{report.issued_token}/").status_code == 200
    owner_client.post(f"/reports/{report.code}/versions/1/reissue/")
    assert Client().get(f"/r/{theirs.issued_token}/").status_code == 200


def test_only_the_owner_reissues_only_by_post_and_only_a_live_report(
        sweep, owner, teammate, owner_client):
    report = make_report(sweep, owner)
    url = f"/reports/{report.code}/versions/1/reissue/"
    assert owner_client.get(url).status_code == 405
    client = Client()
    client.force_login(teammate)
    assert client.post(url).status_code == 404
    assert owner_client.post(f"/reports/{report.code}/versions/2/reissue/").status_code == 404
    owner_client.post(f"/reports/{report.code}/revoke/")
    assert owner_client.post(url).status_code == 302  # refused with a message: it is revoked
    assert Client().get(f"/r/{report.issued_token}/").status_code == 410  # still the same link
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.REISSUED).exists()
