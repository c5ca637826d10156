"""Engineer pages (login required; building, publishing, re-issuing links and revoking need
publish_report) and the public report page (no login, token only).

Only the digest of a link's token is stored, so a link is shown once: on the page that answers
the POST which issued it (build, publish, re-issue), never kept in a message or a session.
"""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.contrib.staticfiles import finders
from django.db import transaction
from django.db.models import Max
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.templatetags.static import static
from django.urls import reverse
from django.utils import timezone, translation
from django.views.decorators.http import require_POST, require_safe

from benchmarks.models import AuditEvent, Benchmark, Comparison
from judgement.vocabulary import AnalysisError
from reports import pdf, publishing
from reports.content import build_report_content
from reports.forms import ReportForm
from reports.models import Report, ReportVersion, token_digest
from reports.page import ReportContent

ASSETS = {"plotly": "vendor/plotly/plotly.min.js", "js": "js/report.js",
          "css": "css/report.css"}
LANGUAGES = publishing.LANGUAGES
# What a customer can read: building a report (which publishes version 1), publishing again,
# re-issuing a link, revoking.
PUBLISH = "reports.publish_report"


def _get_report_for_user(request: HttpRequest, code: UUID) -> Report:
    """An engineer manages only the reports they built; anyone else gets a 404."""
    return get_object_or_404(Report, code=code, created_by=request.user)


def _public_version(token: str) -> tuple[Report, ReportVersion | None]:
    """The report behind a link and the version the link shows, found by the token's digest
    (None: the report's own token, of a report from before versions; it is frozen on its first
    live opening). Once a report has versions its own token opens nothing by itself: version 1
    carries it, and a re-issued version 1 must leave the old link dead."""
    digest = token_digest(token)
    version = ReportVersion.objects.select_related("report").filter(token_digest=digest).first()
    if version is not None:
        return version.report, version
    return get_object_or_404(Report, token_digest=digest, versions__isnull=True), None


def _issued_link(request: HttpRequest, report: Report, number: int, token: str,
                 headline: str) -> HttpResponse:
    """The page that shows the link of version `number` just issued, the one time it can be
    shown. Not cached, and the token leaves in no Referer header."""
    url = request.build_absolute_uri(reverse("report_public", args=[token]))
    ctx = {"report": report, "number": number, "headline": headline, "url": url}
    response = render(request, "reports/link.html", ctx)
    response["Cache-Control"] = "no-store"
    response["Referrer-Policy"] = "no-referrer"
    return response


@login_required
@require_safe
def report_list(request: HttpRequest) -> HttpResponse:
    reports = (Report.objects.for_owner(request.user).select_related("benchmark")
               .annotate(latest_version=Max("versions__number"),
                         last_published=Max("versions__generated_at")))
    return render(request, "reports/list.html", {"reports": reports})


def _build(request: HttpRequest, form: ReportForm) -> HttpResponse:
    """Save the report (form.save_for publishes its version 1) with the record of it, and show
    version 1's link."""
    with transaction.atomic():
        report = form.save_for(request.user)
        AuditEvent.objects.record(request.user, AuditEvent.Action.PUBLISHED, report,
                                  detail="version 1 (built)")
    assert report.issued_token is not None  # save_for issued it; version 1 opens with it
    return _issued_link(request, report, 1, report.issued_token, "Report created.")


@login_required
@permission_required(PUBLISH, raise_exception=True)
def report_new(request: HttpRequest, code: UUID) -> HttpResponse:
    benchmark = get_object_or_404(Benchmark, code=code)
    form = ReportForm(request.POST or None, benchmark=benchmark,
                      plan_code=request.GET.get("capacity_plan"))
    if request.method == "POST" and form.is_valid():
        return _build(request, form)
    ctx = {"form": form, "benchmark": benchmark}
    return render(request, "reports/new.html", ctx, status=400 if form.errors else 200)


@login_required
@permission_required(PUBLISH, raise_exception=True)
def report_new_from_comparison(request: HttpRequest, code: UUID) -> HttpResponse:
    comparison = get_object_or_404(
        Comparison.objects.select_related("baseline_point", "candidate_point__benchmark"),
        code=code,
    )
    # The curve is the candidate's sweep: where the tuned setting sits on its own curve.
    benchmark = comparison.candidate_point.benchmark
    form = ReportForm(request.POST or None, benchmark=benchmark, comparison=comparison,
                      plan_code=request.GET.get("capacity_plan"))
    if request.method == "POST" and form.is_valid():
        return _build(request, form)
    ctx = {"form": form, "benchmark": benchmark, "comparison": comparison}
    return render(request, "reports/new.html", ctx, status=400 if form.errors else 200)


def _language(request: HttpRequest, default: str) -> str:
    lang = request.GET.get("lang", "")
    return lang if lang in LANGUAGES else default


def _report_context(content: ReportContent, language: str, assets: dict[str, str]) -> dict:
    return {
        "content": content,
        "language": language,
        "other_language": "en" if language == "ko" else "ko",
        "assets": assets,
    }


def _static_assets() -> dict[str, str]:
    return {name: static(path) for name, path in ASSETS.items()}


def _chosen_version(request: HttpRequest, versions: list[ReportVersion]) -> ReportVersion | None:
    """?version=N, else the latest; None when nothing is published yet."""
    wanted = request.GET.get("version", "")
    for version in versions:
        if wanted.isdigit() and version.number == int(wanted):
            return version
    return versions[-1] if versions else None


@login_required
@require_safe
def report_preview(request: HttpRequest, code: UUID) -> HttpResponse:
    """A published version exactly as its link shows it, or (?draft=1) the current rows."""
    report = _get_report_for_user(request, code)
    versions = list(report.versions.order_by("number"))
    shown = _chosen_version(request, versions)
    draft = request.GET.get("draft") == "1" or shown is None
    language = _language(request, shown.language if shown and not draft else report.language)
    ctx: dict = {"report": report, "versions": versions,
                 "shown_version": None if draft else shown, "draft": draft,
                 "next_number": len(versions) + 1}
    with translation.override(language):
        if shown is not None and not draft:
            ctx.update(_report_context(publishing.content_of(shown, language), language,
                                       _static_assets()))
        else:
            try:
                ctx.update(_report_context(build_report_content(report), language,
                                           _static_assets()))
            except AnalysisError as exc:
                ctx["draft_error"] = str(exc)
        return render(request, "reports/preview.html", ctx)


@login_required
@require_POST
@permission_required(PUBLISH, raise_exception=True)
def report_publish(request: HttpRequest, code: UUID) -> HttpResponse:
    """A new version from the current rows, with its own link; earlier links stay as they are."""
    report = _get_report_for_user(request, code)
    if not report.is_live():
        messages.error(request, f"This report is {report.status}: its links answer 410 Gone, "
                                "so a new version could not be read by anyone.")
        return redirect("report_preview", code=report.code)
    try:
        with transaction.atomic():
            version = publishing.publish(report, request.user)
            AuditEvent.objects.record(request.user, AuditEvent.Action.PUBLISHED, report,
                                      detail=f"version {version.number}")
    except AnalysisError as exc:
        messages.error(request, f"Not published: {exc}.")
        return redirect("report_preview", code=report.code)
    preview = f"{reverse('report_preview', args=[report.code])}?version={version.number}"
    if version.issued_token is None:
        # Version 1 of a report from before versions: it opens with the link already sent.
        messages.success(request, "Version 1 published: the report's first link shows it "
                                  "(re-issue that link if you no longer have it).")
        return redirect(preview)
    return _issued_link(request, report, version.number, version.issued_token,
                        f"Version {version.number} published. Links sent earlier keep showing "
                        "the version they were sent with.")


@login_required
@require_POST
@permission_required(PUBLISH, raise_exception=True)
def report_reissue(request: HttpRequest, code: UUID, number: int) -> HttpResponse:
    """A new link for one version, for an engineer who lost it (only its digest is kept) or
    sent it to the wrong person: the old link answers 404 from now on."""
    report = _get_report_for_user(request, code)
    version = get_object_or_404(report.versions, number=number)
    if not report.is_live():
        messages.error(request, f"This report is {report.status}: every link answers 410 Gone, "
                                "a new one would too.")
        return redirect("report_preview", code=report.code)
    with transaction.atomic():
        token = publishing.reissue(version)
        AuditEvent.objects.record(request.user, AuditEvent.Action.REISSUED, report,
                                  detail=f"version {version.number}")
    return _issued_link(request, report, version.number, token,
                        f"New link for version {version.number}. The old link no longer opens "
                        "anything (404).")


@login_required
@require_POST
@permission_required(PUBLISH, raise_exception=True)
def report_revoke(request: HttpRequest, code: UUID) -> HttpResponse:
    report = _get_report_for_user(request, code)
    with transaction.atomic():
        revoked = Report.objects.filter(pk=report.pk, revoked_at__isnull=True).update(
            revoked_at=timezone.now())
        if revoked:  # a second click revokes nothing more
            AuditEvent.objects.record(request.user, AuditEvent.Action.REVOKED, report)
    messages.info(
        request, f"Report \u201c{report.title}\u201d revoked: its link now answers 410 Gone."
    )
    return redirect("report_list")


def _gone(request: HttpRequest, report: Report) -> HttpResponse:
    with translation.override(report.language):
        response = render(request, "reports/gone.html", {"language": report.language},
                          status=410)
    return _private(response)


def _private(response: HttpResponse) -> HttpResponse:
    # Revocation must take effect at once, and the token must not leave in a Referer header.
    response["Cache-Control"] = "no-store"
    response["Referrer-Policy"] = "no-referrer"
    response["X-Robots-Tag"] = "noindex, nofollow"
    return response


def _frozen(report: Report, version: ReportVersion | None) -> ReportVersion | None:
    """The version to show; a report from before versions is frozen now (None if it cannot
    be built, which the caller answers without showing anything of the run)."""
    if version is not None:
        return version
    try:
        return publishing.first_version(report)
    except AnalysisError:
        return None


def _unavailable() -> HttpResponse:
    return _private(HttpResponse("This report could not be generated. Ask the engineer who "
                                 "sent the link.", status=503,
                                 content_type="text/plain; charset=utf-8"))


@require_safe
def report_public(request: HttpRequest, token: str) -> HttpResponse:
    """Readable without login. Unknown token: 404. Revoked or expired: 410 Gone. Renders the
    version's stored content only: no row the figures came from is read."""
    report, version = _public_version(token)
    if not report.is_live():
        return _gone(request, report)
    version = _frozen(report, version)
    if version is None:
        return _unavailable()
    language = _language(request, version.language)
    with translation.override(language):
        ctx = _report_context(publishing.content_of(version, language), language,
                              _static_assets())
        response = render(request, "reports/public.html", ctx)
    return _private(response)


def _inline_assets() -> dict[str, str]:
    """The page's stylesheet and scripts as text, for a printed page that may load nothing."""
    texts = {}
    for name, path in ASSETS.items():
        found = finders.find(path)
        if found is None:
            raise pdf.PdfUnavailable("The PDF could not be printed.")
        texts[name] = pdf.inline_asset(Path(found))
    return texts


def _printed_page(version: ReportVersion, language: str) -> str:
    with translation.override(language):
        ctx = _report_context(publishing.content_of(version, language), language, {})
        ctx.update(inline=_inline_assets(), print_csp=pdf.PRINT_CSP)
        return render_to_string("reports/printed.html", ctx)


@require_safe
def report_pdf(request: HttpRequest, token: str) -> HttpResponse:
    """The stored version printed once per language (reports.pdf keeps it); 429 while another
    print runs, 503 with a plain sentence when none can be made."""
    report, version = _public_version(token)
    if not report.is_live():
        return _gone(request, report)
    version = _frozen(report, version)
    if version is None:
        return _unavailable()
    language = _language(request, version.language)
    try:
        document = pdf.cached_pdf(version.token_digest, language,
                                  lambda: _printed_page(version, language))
    except pdf.PdfBusy as exc:
        response = HttpResponse(str(exc), status=429, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = str(pdf.RETRY_AFTER_S)
        return _private(response)
    except pdf.PdfUnavailable as exc:
        message = f"{exc} Use your browser's Print instead: the page has a print stylesheet."
        return _private(HttpResponse(message, status=503,
                                     content_type="text/plain; charset=utf-8"))
    response = HttpResponse(document, content_type="application/pdf")
    response["Content-Disposition"] = (
        f'attachment; filename="report-v{version.number}-{language}.pdf"')
    return _private(response)
