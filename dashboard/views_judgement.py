"""Pages of the judgement layer: operating point, saved comparisons, external references, and
the judgement sections of the run page. Views only call the judgement package, which calls
the pure functions in analysis; an AnalysisError is shown as its message, never a 500.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_safe

from benchmarks.models import Benchmark, Comparison, ExternalReference, Point
from benchmarks.storage.operating_points import save_operating_point
from dashboard.access import (
    ADD_REFERENCE,
    CHOOSE_OPERATING_POINT,
    EDIT_REFERENCE,
    SAVE_COMPARISON,
    AuthenticatedHttpRequest,
    get_benchmark_for_user,
    get_comparison_for_user,
)
from dashboard.forms_capacity import PlanCapacityForm, plan_form
from dashboard.forms_judgement import (
    ComparisonForm,
    ExternalReferenceForm,
    OperatingPointForm,
    ReferenceCompareForm,
    point_label,
)
from judgement.comparison_view import (
    compare_points,
    compare_saved,
    compare_with_reference,
    output_parity,
)
from judgement.cost_view import worth_of
from judgement.figures import figures_by_key
from judgement.operating_point import select
from judgement.rows import load_points
from judgement.run_page import run_page
from judgement.stability_view import comparison_stability
from judgement.vocabulary import AnalysisError


def _point_or_none(value: str | None) -> Point | None:
    if value and value.isdigit():
        return Point.objects.select_related("benchmark").filter(pk=int(value)).first()
    return None


# --------------------------------------------------------------------------------------------
# The run page's judgement sections
# --------------------------------------------------------------------------------------------


def run_detail_context(request: HttpRequest, benchmark: Benchmark) -> dict[str, Any]:
    """What the run page adds for the judgement layer (called by dashboard.views.run_detail):
    judgement.run_page's values, and the forms that act on them."""
    page = run_page(benchmark, request.GET)
    if page is None:
        return {"judgement": None}
    return {
        "judgement": page,
        "operating_point_form": OperatingPointForm(benchmark=benchmark),
        "fleet": {"form": plan_form(benchmark), "plans": page.capacity_plans,
                  "action": reverse("capacity_new", args=[benchmark.code])},
    }


# --------------------------------------------------------------------------------------------
# Operating point
# --------------------------------------------------------------------------------------------


@login_required
def operating_point(request: HttpRequest, code: UUID) -> HttpResponse:
    """GET: the current choice, its history and the form; POST: choose and store."""
    if request.method == "POST" and not request.user.has_perm(CHOOSE_OPERATING_POINT):
        raise PermissionDenied  # the history stays readable to everyone logged in
    benchmark = get_benchmark_for_user(request, code)
    form = OperatingPointForm(request.POST or None, benchmark=benchmark)
    if request.method == "POST" and form.is_valid():
        points = load_points(benchmark)
        figs = list(figures_by_key(points)[0].values())
        try:
            chosen = select(form.cleaned_data["method"], form.params(), figs)
        except AnalysisError as exc:
            form.add_error(None, f"Cannot select: {exc}.")
        else:
            save_operating_point(benchmark, chosen, points, request.user)
            messages.success(request, f"Operating point: {chosen.chosen_key}.")
            return redirect(f"{_run_url(benchmark)}#operating-point")
    ctx = {
        "benchmark": benchmark,
        "form": form,
        "history": benchmark.operating_points.select_related("point", "chosen_by"),
    }
    return render(request, "judgement/operating_point.html", ctx,
                  status=400 if form.errors else 200)


def _run_url(benchmark: Benchmark) -> str:
    return reverse("run_detail", args=[benchmark.code])


# --------------------------------------------------------------------------------------------
# Saved comparisons
# --------------------------------------------------------------------------------------------


@login_required
@require_safe
def comparisons(request: HttpRequest) -> HttpResponse:
    rows = Comparison.objects.select_related(
        "baseline_point__benchmark", "candidate_point__benchmark", "created_by"
    )[:200]
    return render(request, "judgement/comparisons.html", {"comparisons": rows})


@login_required
@permission_required(SAVE_COMPARISON, raise_exception=True)
def comparison_new(request: AuthenticatedHttpRequest) -> HttpResponse:
    preselected = [_point_or_none(request.GET.get("baseline")),
                   _point_or_none(request.GET.get("candidate"))]
    initial = {
        "baseline_point": preselected[0].pk if preselected[0] else None,
        "candidate_point": preselected[1].pk if preselected[1] else None,
    }
    form = ComparisonForm(request.POST or None, initial=initial, preselected=preselected)
    if request.method == "POST" and form.is_valid():
        baseline = form.cleaned_data["baseline_point"]
        candidate = form.cleaned_data["candidate_point"]
        try:
            compare_points(baseline, candidate)
        except AnalysisError as exc:
            form.add_error(None, f"Cannot compare these points: {exc}.")
        else:
            with transaction.atomic():
                comparison = Comparison.objects.create(
                    name=form.cleaned_data["name"]
                    or f"{point_label(baseline)} -> {point_label(candidate)}"[:200],
                    baseline_point=baseline,
                    candidate_point=candidate,
                    notes=form.cleaned_data["notes"],
                    created_by=request.user,
                )
            return redirect("comparison_detail", code=comparison.code)
    return render(request, "judgement/comparison_new.html", {"form": form},
                  status=400 if form.errors else 200)


@login_required
@require_safe
def comparison_detail(request: HttpRequest, code: UUID) -> HttpResponse:
    comparison = get_comparison_for_user(request, code)
    result, error = compare_saved(comparison)
    worth = None if result is None else worth_of(
        comparison.baseline_point, comparison.candidate_point, result)
    parity = output_parity(comparison.baseline_point, comparison.candidate_point)
    stability = None if result is None else comparison_stability(
        comparison.baseline_point, comparison.candidate_point, result.ratio)
    ctx = {"comparison": comparison, "result": result, "error": error, "worth": worth,
           "parity": parity, "stability": stability,
           "capacity": {"form": PlanCapacityForm(node=comparison.candidate_point.benchmark.node,
                                                 comparison=True),
                        "plans": list(comparison.capacity_plans.all()[:20]),
                        "action": reverse("capacity_new_from_comparison",
                                          args=[comparison.code])}}
    return render(request, "judgement/comparison_detail.html", ctx)


# --------------------------------------------------------------------------------------------
# External references
# --------------------------------------------------------------------------------------------


@login_required
@require_safe
def references(request: HttpRequest) -> HttpResponse:
    return render(request, "judgement/references.html",
                  {"references": ExternalReference.objects.all()})


@login_required
@permission_required(ADD_REFERENCE, raise_exception=True)
def reference_new(request: HttpRequest) -> HttpResponse:
    return _reference_form(request, None)


@login_required
@permission_required(EDIT_REFERENCE, raise_exception=True)
def reference_edit(request: HttpRequest, pk: int) -> HttpResponse:
    return _reference_form(request, get_object_or_404(ExternalReference, pk=pk))


def _reference_form(request: HttpRequest, ref: ExternalReference | None) -> HttpResponse:
    form = ExternalReferenceForm(request.POST or None, instance=ref)
    if request.method == "POST" and form.is_valid():
        saved = form.save()
        messages.success(request, f"Saved the reference {saved.source} ({saved.recorded_on}).")
        return redirect("references")
    return render(request, "judgement/reference_form.html", {"form": form, "reference": ref},
                  status=400 if form.errors else 200)


@login_required
@require_safe
def reference_compare(request: HttpRequest, pk: int) -> HttpResponse:
    ref = get_object_or_404(ExternalReference, pk=pk)
    preselected = _point_or_none(request.GET.get("point"))
    form = ReferenceCompareForm(request.GET or None, preselected=preselected)
    result = error = None
    point = None
    if form.is_bound and form.is_valid():
        point = form.cleaned_data["point"]
        result, error = compare_with_reference(point, ref)
    ctx = {"reference": ref, "form": form, "point": point, "result": result, "error": error}
    return render(request, "judgement/reference_compare.html", ctx)
