"""Engineer pages (login required) and the public report page (no login, token only)."""

from __future__ import annotations

from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.staticfiles import finders
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.templatetags.static import static
from django.urls import reverse
from django.utils import timezone, translation
from django.views.decorators.http import require_POST

from benchmarks.models import Benchmark, Comparison
from reports import pdf
from reports.content import build_report_content
from reports.forms import ReportForm
from reports.models import Report

ASSETS = {"plotly": "vendor/plotly/plotly.min.js", "js": "js/report.js",
          "css": "css/report.css"}
LANGUAGES = ("ko", "en")


def _get_report_for_user(request: HttpRequest, token: str) -> Report:
    """An engineer manages only the reports they built; anyone else gets a 404."""
    return get_object_or_404(Report, token=token, created_by=request.user)


def _public_report(token: str) -> Report:
    queryset = Report.objects.select_related(
        "benchmark__runtime", "baseline_point", "candidate_point", "scaling_point",
        "scaling_reference",
    )
    return get_object_or_404(queryset, token=token)


@login_required
def report_list(request: HttpRequest) -> HttpResponse:
    reports = Report.objects.for_owner(request.user).select_related("benchmark")
    return render(request, "reports/list.html", {"reports": reports})


@login_required
def report_new(request: HttpRequest, code: UUID) -> HttpResponse:
    benchmark = get_object_or_404(Benchmark, code=code)
    form = ReportForm(request.POST or None, benchmark=benchmark)
    if request.method == "POST" and form.is_valid():
        report = form.save_for(request.user)
        messages.success(request, "Report created. Check the preview before sending the link.")
        return redirect("report_preview", token=report.token)
    ctx = {"form": form, "benchmark": benchmark}
    return render(request, "reports/new.html", ctx, status=400 if form.errors else 200)


@login_required
def report_new_from_comparison(request: HttpRequest, code: UUID) -> HttpResponse:
    comparison = get_object_or_404(
        Comparison.objects.select_related("baseline_point", "candidate_point__benchmark"),
        code=code,
    )
    # The curve is the candidate's sweep: where the tuned setting sits on its own curve.
    benchmark = comparison.candidate_point.benchmark
    form = ReportForm(request.POST or None, benchmark=benchmark, comparison=comparison)
    if request.method == "POST" and form.is_valid():
        report = form.save_for(request.user)
        messages.success(request, "Report created. Check the preview before sending the link.")
        return redirect("report_preview", token=report.token)
    ctx = {"form": form, "benchmark": benchmark, "comparison": comparison}
    return render(request, "reports/new.html", ctx, status=400 if form.errors else 200)


def _language(request: HttpRequest, report: Report) -> str:
    lang = request.GET.get("lang", "")
    return lang if lang in LANGUAGES else report.language


def _report_context(report: Report, language: str, assets: dict[str, str]) -> dict:
    return {
        "content": build_report_content(report),
        "language": language,
        "other_language": "en" if language == "ko" else "ko",
        "assets": assets,
        "token": report.token,
    }


def _static_assets() -> dict[str, str]:
    return {name: static(path) for name, path in ASSETS.items()}


@login_required
def report_preview(request: HttpRequest, token: str) -> HttpResponse:
    report = _get_report_for_user(request, token)
    language = _language(request, report)
    with translation.override(language):
        ctx = _report_context(report, language, _static_assets())
        ctx["report"] = report
        ctx["public_url"] = request.build_absolute_uri(
            reverse("report_public", args=[report.token]))
        return render(request, "reports/preview.html", ctx)


@login_required
@require_POST
def report_revoke(request: HttpRequest, token: str) -> HttpResponse:
    report = _get_report_for_user(request, token)
    Report.objects.filter(pk=report.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    messages.info(request, f"Report \u201c{report.title}\u201d revoked: its link now answers 410 Gone.")
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


def report_public(request: HttpRequest, token: str) -> HttpResponse:
    """Readable without login. Unknown token: 404. Revoked or expired: 410 Gone."""
    report = _public_report(token)
    if not report.is_live():
        return _gone(request, report)
    language = _language(request, report)
    with translation.override(language):
        ctx = _report_context(report, language, _static_assets())
        response = render(request, "reports/public.html", ctx)
    return _private(response)


def _file_assets() -> dict[str, str]:
    paths = {}
    for name, path in ASSETS.items():
        found = finders.find(path)
        if found is None:
            raise Http404(f"static file {path} is missing")
        paths[name] = "file://" + str(found)
    return paths


def report_pdf(request: HttpRequest, token: str) -> HttpResponse:
    report = _public_report(token)
    if not report.is_live():
        return _gone(request, report)
    language = _language(request, report)
    with translation.override(language):
        ctx = _report_context(report, language, _file_assets())
        ctx["printing"] = True
        html = render_to_string("reports/public.html", ctx)
    try:
        document = pdf.html_to_pdf(html)
    except pdf.PdfUnavailable as exc:
        response = HttpResponse(str(exc), status=503, content_type="text/plain; charset=utf-8")
        return _private(response)
    response = HttpResponse(document, content_type="application/pdf")
    response["Content-Disposition"] = f'attachment; filename="report-{language}.pdf"'
    return _private(response)
