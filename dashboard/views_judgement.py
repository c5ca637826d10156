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
from benchmarks.operating_points import save_operating_point
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
from judgement import charts
from judgement.charts import chart_overlay, references_for_chart
from judgement.comparison_view import (
    compare_points,
    compare_saved,
    compare_with_reference,
    output_parity,
)
from judgement.cost_view import node_price, point_costs, stale_price, worth_of
from judgement.engine_work import engine_work
from judgement.figures import figures_by_key, replica_figures
from judgement.lora_view import adapter_sections
from judgement.operating_point import frontier as pareto_frontier
from judgement.operating_point import select, shown_operating_point
from judgement.queues import queue_charts
from judgement.repeat_capacity import capacity_rows
from judgement.rows import capacity_plans, load_points, scaling_reference_choices
from judgement.scaling_view import node_scaling_refusal, scaling_for
from judgement.search_view import search_view
from judgement.spec_decode import spec_decode_by_key
from judgement.stability_view import comparison_stability, figure_sentences, run_stability
from judgement.verdict_rows import evidence_items, ladder_diagnoses, sweep_change, verdict_rows
from judgement.vocabulary import AnalysisError


def _point_or_none(value: str | None) -> Point | None:
    if value and value.isdigit():
        return Point.objects.select_related("benchmark").filter(pk=int(value)).first()
    return None


# --------------------------------------------------------------------------------------------
# The run page's judgement sections
# --------------------------------------------------------------------------------------------


def _scaling_sections(request: HttpRequest, points: list[Point]) -> list[dict[str, Any]]:
    """One section per replica point; the reference is chosen explicitly (?scaling_ref_<id>=)."""
    sections = []
    for point in points:
        if point.replicas <= 1:
            continue
        section: dict[str, Any] = {
            "point": point,
            "param": f"scaling_ref_{point.pk}",
            "choices": scaling_reference_choices(point),
            "result": None,
            "error": None,
            "reference": _point_or_none(request.GET.get(f"scaling_ref_{point.pk}")),
        }
        section["window_seconds"] = (
            point.window_end - point.window_start
            if point.window_start is not None and point.window_end is not None
            else None
        )
        section["per_replica"] = replica_figures(point)
        section["refusal"] = node_scaling_refusal(point)
        if section["refusal"] is None and section["reference"] is not None:
            try:
                section["result"] = scaling_for(point, section["reference"])
            except AnalysisError as exc:
                section["error"] = str(exc)
        sections.append(section)
    return sections


def _point_label(point: Point) -> str:
    return f"{point.engine_label} · {point.load_label} · r{point.repeat}"


def run_detail_context(request: HttpRequest, benchmark: Benchmark) -> dict[str, Any]:
    """What the run page adds for the judgement layer (called by dashboard.views.run_detail)."""
    points = load_points(benchmark)
    if not points:
        return {"judgement": None}
    figs, unreadable = figures_by_key(points)
    fig_list = list(figs.values())
    shown = shown_operating_point(benchmark, fig_list)
    stability = run_stability(fig_list)
    found = verdict_rows(fig_list)
    summary, summary_error = sweep_change(found, fig_list)
    frontier = pareto_frontier(fig_list)
    spec = next((f.workload for f in fig_list if f.workload is not None), None)
    refs = references_for_chart(spec)
    by_key = {p.key: p for p in points}
    costs = point_costs(benchmark, points, figs)
    price = node_price(benchmark.node)
    work = {key: engine_work(fig) for key, fig in figs.items()}
    speculative = spec_decode_by_key(points)
    # A CPU engine has no GPU: its throughput is per engine.
    cpu_only = all(f.hardware is not None and f.hardware.cpu_engine for f in fig_list)
    pareto_unit = "CPU engine" if fig_list and cpu_only else "GPU"
    rows = [
        {
            "point": p,
            "cost": costs.get(p.key),
            "engine_work": work.get(p.key),
            "spec_decode": speculative.get(p.key),
            "verdict": found.by_key.get(p.key),
            "evidence": evidence_items(found.by_key.get(p.key)),
            "no_verdict": found.missing.get(p.key) or unreadable.get(p.key),
            "selected": p.key == shown.key,
            "on_frontier": p.key in frontier.keys,
        }
        for p in points
    ]
    return {
        "judgement": {
            "rows": rows,
            "shown": shown,
            "search": search_view(benchmark, points, fig_list, shown),
            "selected_point": by_key.get(shown.key) if shown.key else None,
            "stability": stability,
            "operating_figures": [s for s in figure_sentences(figs[shown.key], fig_list,
                                                               stability.noise) if s is not None]
            if shown.key in figs else [],
            "form": OperatingPointForm(benchmark=benchmark),
            "summary": summary,
            "ladders": ladder_diagnoses(found),
            "summary_error": summary_error,
            "verdict_error": found.error,
            "frontier_error": frontier.error,
            "pareto_unit": pareto_unit,
            "pareto": None if frontier.error else charts.pareto_figure(
                frontier.points, frontier.keys, {p.key: _point_label(p) for p in points},
                pareto_unit,
            ),
            "queue": queue_charts(points, figs),
            "capacity": capacity_rows(fig_list),
            "price": price,
            "stale_price": stale_price(price),
            # Why points have no cost, each reason once (a CPU sweep's every point shares one).
            "cost_reasons": sorted({c.reason for c in costs.values() if c.reason}),
            # The two % of peak columns only when some point has a GPU figure to show (a CPU
            # engine has none): columns empty in every row would push the verdict aside.
            "peaks_shown": any(w is not None and w.has_gpu_figure for w in work.values()),
            # Why points have no % of peak, each reason once.
            "peak_notes": sorted({share.detail for w in work.values() if w is not None
                                  for share in (w.bandwidth, w.compute) if share.pct is None}),
            # Speculative decoding's column only where some point's engine ran it.
            "spec_decode_shown": bool(speculative),
            "scaling": _scaling_sections(request, points),
            "fleet": {"form": plan_form(benchmark), "plans": capacity_plans(benchmark),
                         "action": reverse("capacity_new", args=[benchmark.code])},
            # Figures per LoRA adapter, for the points whose workload had a split.
            "lora": adapter_sections(points),
            "references": refs,
            "unreadable": unreadable,
            "overlay": chart_overlay(
                points, figs, shown.key, refs, [field for field, _ in charts.LATENCY_METRICS]
            ),
        }
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
