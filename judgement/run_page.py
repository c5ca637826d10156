"""The run page's judgement: one call, run_page(benchmark), returns every figure, label and
sentence the page shows beside its points, so the view formats and decides nothing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from analysis.cost import GpuHourPrice, PointCost
from analysis.scaling import ScalingResult
from analysis.sentences import Sentence
from analysis.types import SweepSummary, Verdict
from benchmarks.models import Benchmark, CapacityPlan, ExternalReference, Point
from judgement import charts
from judgement.charts import chart_overlay, references_for_chart
from judgement.cost_view import node_price, point_costs, stale_price
from judgement.engine_work import EngineWork, engine_work
from judgement.figures import figures_by_key, replica_figures
from judgement.lora_view import AdapterSection, adapter_sections
from judgement.operating_point import Shown, shown_operating_point
from judgement.operating_point import frontier as pareto_frontier
from judgement.queues import QueueCharts, queue_charts
from judgement.repeat_capacity import capacity_rows
from judgement.rows import capacity_plans, load_points, point_by_id, scaling_reference_choices
from judgement.scaling_view import node_scaling_refusal, scaling_for
from judgement.search_view import SearchView, search_view
from judgement.spec_decode import SpecDecode, spec_decode_by_key
from judgement.stability_view import RunStability, figure_sentences, run_stability
from judgement.verdict_rows import (
    EvidenceItem,
    evidence_items,
    ladder_diagnoses,
    sweep_change,
    verdict_rows,
)
from judgement.vocabulary import AnalysisError


@dataclass(frozen=True, kw_only=True)
class PointRow:
    """What the points table shows beside one stored point."""

    point: Point
    cost: PointCost | None
    engine_work: EngineWork | None
    spec_decode: SpecDecode | None
    verdict: Verdict | None
    evidence: list[EvidenceItem]
    # Why the point has no verdict (no engine samples, or its figures do not read).
    no_verdict: str | None
    selected: bool
    on_frontier: bool


@dataclass(frozen=True, kw_only=True)
class ScalingSection:
    """One node run (several replicas) against the one-engine point chosen as its reference
    (the query parameter `param`), or why it cannot be judged."""

    point: Point
    param: str
    choices: list[Point]
    reference: Point | None
    window_seconds: float | None
    per_replica: tuple[Any, ...]
    refusal: str | None
    result: ScalingResult | None
    error: str | None


@dataclass(frozen=True, kw_only=True)
class RunPage:
    rows: list[PointRow]
    shown: Shown
    search: SearchView | None
    selected_point: Point | None
    stability: RunStability
    # The operating point's figures, each with its interval where the run has one.
    operating_figures: list[Sentence]
    summary: SweepSummary | None
    ladders: tuple[str, ...]
    summary_error: str | None
    verdict_error: str | None
    frontier_error: str | None
    # Whose throughput the Pareto frontier divides by: a CPU engine has no GPU.
    pareto_unit: str
    pareto: dict[str, Any] | None
    queue: QueueCharts
    capacity: list[dict[str, Any]]
    price: GpuHourPrice | None
    stale_price: str | None
    # Why points have no cost, each reason once (a CPU sweep's every point shares one).
    cost_reasons: list[str]
    # The two % of peak columns only when some point has a GPU figure to show (a CPU engine
    # has none): columns empty in every row would push the verdict aside.
    peaks_shown: bool
    # Why points have no % of peak, each reason once.
    peak_notes: list[str]
    # Speculative decoding's column only where some point's engine ran it.
    spec_decode_shown: bool
    scaling: list[ScalingSection]
    capacity_plans: list[CapacityPlan]
    # Figures per LoRA adapter, for the points whose workload had a split.
    lora: list[AdapterSection]
    references: list[ExternalReference]
    unreadable: dict[str, str]
    overlay: dict[str, Any]


def point_label(point: Point) -> str:
    """A point as a chart names it: config, load and repeat."""
    return f"{point.engine_label} · {point.load_label} · r{point.repeat}"


def _scaling_section(point: Point, query: Mapping[str, str]) -> ScalingSection:
    param = f"scaling_ref_{point.pk}"
    reference = point_by_id(query.get(param))
    refusal = node_scaling_refusal(point)
    result, error = None, None
    if refusal is None and reference is not None:
        try:
            result = scaling_for(point, reference)
        except AnalysisError as exc:
            error = str(exc)
    return ScalingSection(
        point=point, param=param, choices=scaling_reference_choices(point), reference=reference,
        window_seconds=(point.window_end - point.window_start
                        if point.window_start is not None and point.window_end is not None
                        else None),
        per_replica=replica_figures(point), refusal=refusal, result=result, error=error)


def run_page(benchmark: Benchmark, query: Mapping[str, str]) -> RunPage | None:
    """Everything the run page judges; None for a run without points. query: the page's
    query parameters, which name each node run's scaling reference (ScalingSection.param)."""
    points = load_points(benchmark)
    if not points:
        return None
    figs, unreadable = figures_by_key(points)
    fig_list = list(figs.values())
    shown = shown_operating_point(benchmark, fig_list)
    stability = run_stability(fig_list, searched=benchmark.search is not None)
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
    cpu_only = all(f.hardware is not None and f.hardware.cpu_engine for f in fig_list)
    pareto_unit = "CPU engine" if fig_list and cpu_only else "GPU"
    rows = [
        PointRow(
            point=p,
            cost=costs.get(p.key),
            engine_work=work.get(p.key),
            spec_decode=speculative.get(p.key),
            verdict=found.by_key.get(p.key),
            evidence=evidence_items(found.by_key.get(p.key)),
            no_verdict=found.missing.get(p.key) or unreadable.get(p.key),
            selected=p.key == shown.key,
            on_frontier=p.key in frontier.keys,
        )
        for p in points
    ]
    return RunPage(
        rows=rows,
        shown=shown,
        search=search_view(benchmark, points, fig_list, shown),
        selected_point=by_key.get(shown.key) if shown.key else None,
        stability=stability,
        operating_figures=[s for s in figure_sentences(figs[shown.key], fig_list,
                                                       stability.noise) if s is not None]
        if shown.key in figs else [],
        summary=summary,
        ladders=ladder_diagnoses(found),
        summary_error=summary_error,
        verdict_error=found.error,
        frontier_error=frontier.error,
        pareto_unit=pareto_unit,
        pareto=None if frontier.error else charts.pareto_figure(
            frontier.points, frontier.keys, {p.key: point_label(p) for p in points},
            pareto_unit,
        ),
        queue=queue_charts(points, figs),
        capacity=capacity_rows(fig_list),
        price=price,
        stale_price=stale_price(price),
        cost_reasons=sorted({c.reason for c in costs.values() if c.reason}),
        peaks_shown=any(w is not None and w.has_gpu_figure for w in work.values()),
        peak_notes=sorted({share.detail for w in work.values() if w is not None
                           for share in (w.bandwidth, w.compute) if share.pct is None}),
        spec_decode_shown=bool(speculative),
        scaling=[_scaling_section(p, query) for p in points if p.replicas > 1],
        capacity_plans=capacity_plans(benchmark),
        lora=adapter_sections(points),
        references=refs,
        unreadable=unreadable,
        overlay=chart_overlay(
            points, figs, shown.key, refs, [field for field, _ in charts.LATENCY_METRICS]
        ),
    )
