"""Publishing: freeze what a report shows into a numbered version with its own link.

A version's content is built once, in every report language, from the rows as they are at
that moment, and stored as JSON; the public page and its PDF load it back with content_of()
and read no other row. The same dataclasses describe the page either way (one pydantic
adapter over reports.page.ReportContent), so a snapshot renders exactly as it was built.

Each version's link token is made here (or, for version 1, with the report) and handed back on
the instance (issued_token) for the engineer to see once; the database keeps its digest only.
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone, translation
from pydantic import TypeAdapter

from reports.content import build_report_content
from reports.models import Report, ReportVersion
from reports.page import ReportContent

LANGUAGES = ("ko", "en")

_CONTENT = TypeAdapter(ReportContent)


def snapshot(content: ReportContent) -> dict[str, Any]:
    """The content as JSON. warnings="error": a lazy translation or another non-JSON value
    left in a field must fail here, not come back as something else."""
    return _CONTENT.dump_python(content, mode="json", exclude={"sources"}, warnings="error")


def content_of(version: ReportVersion, language: str) -> ReportContent:
    """The stored page in `language` (the version's own language when it lacks that one)."""
    data = version.content.get(language) or version.content[version.language]
    return _CONTENT.validate_python(data)


@transaction.atomic
def publish(report: Report, user: Any = None) -> ReportVersion:
    """Build the report from the stored rows now and keep it as its next version.

    Version 1 opens with the report's own token, so a link sent before versions existed keeps
    working; every later version gets a new one. The returned version's issued_token is the
    token of its new link, or, for version 1, the report's when this same instance issued it
    (None otherwise: that link is already out). Raises AnalysisError when the rows cannot make
    the page (reports.content says why).
    """
    # One publisher at a time per report: the row lock makes the next number safe to take.
    Report.objects.select_for_update().filter(pk=report.pk).first()
    number = (report.versions.aggregate(last=Max("number"))["last"] or 0) + 1
    generated_at = timezone.now()
    contents: dict[str, Any] = {}
    sources: dict[str, Any] = {}
    for language in LANGUAGES:
        with translation.override(language):
            content = build_report_content(report, generated_at=generated_at, version=number)
        contents[language] = snapshot(content)
        sources = content.sources
    version = ReportVersion(
        report=report,
        number=number,
        language=report.language,
        generated_at=generated_at,
        content=contents,
        sources=sources,
        published_by=user if getattr(user, "is_authenticated", False) else None,
    )
    if number == 1:
        version.token_digest, version.issued_token = report.token_digest, report.issued_token
    else:
        version.issue_token()
    version.save(force_insert=True)
    # Hand back the row as stored: jsonb keeps keys in its own order, and the chart data must
    # render the same on the first view as on every later one.
    version.refresh_from_db(fields=["content", "sources"])
    return version


def first_version(report: Report) -> ReportVersion:
    """The version the report's own token shows, publishing it if the report has none yet."""
    version = report.versions.filter(number=1).first()
    if version is not None:
        return version
    try:
        with transaction.atomic():
            Report.objects.select_for_update().filter(pk=report.pk).first()
            return report.versions.filter(number=1).first() or publish(report)
    except IntegrityError:
        # Another request froze it between our look and our lock: show what it stored.
        return report.versions.get(number=1)


def reissue(version: ReportVersion) -> str:
    """A new link for the version, returning its token; the old link answers 404 from now on.

    The report's own token, which a version 1 shares, stops opening anything too: it serves
    only a report that has no version yet (views._public_version).
    """
    token = version.issue_token()
    version.save(update_fields=["token_digest"])
    return token


def latest_version(report: Report) -> ReportVersion | None:
    return report.versions.order_by("-number").first()
