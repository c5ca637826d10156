"""Cost per million output tokens at a run's node price, and what a tuning is worth."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import date

from django.utils import timezone

from analysis import AnalysisError, cost
from analysis.cost import PRICE_MAX_AGE_DAYS, GpuHourPrice, PointCost, Worth
from analysis.types import Comparison as ComparisonResult
from analysis.types import PointFigures
from benchmarks.models import Benchmark, Node, Point
from judgement.figures import figures, figures_by_key
from judgement.repeat_capacity import capacity_of
from judgement.rows import load_points


def node_price(node: Node | None) -> GpuHourPrice | None:
    """The node's GPU-hour price as the cost rules read it; None when it has none.

    The row's constraint holds a price to its currency and date; a currency the admin let in
    lower case reads as its code, one that is not a code at all as no price.
    """
    if node is None or node.gpu_hour_price is None or node.price_as_of is None:
        return None
    try:
        return GpuHourPrice(amount=node.gpu_hour_price, currency=node.price_currency.upper(),
                            as_of=node.price_as_of)
    except AnalysisError:
        return None


def joules_per_output_token(point: Point) -> float | None:
    """Energy per output token from the point's telemetry summary, where it was measured."""
    value = (point.telemetry or {}).get("joules_per_output_token")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _cost_input(point: Point, fig: PointFigures, node: Node | None, *,
                throughput: float | None = None, repeats: int = 1) -> cost.CostInput:
    """The point as the cost rules read it: its figures, where it ran, its run's node."""
    provenance = point.provenance or {}
    hardware = provenance.get("hardware") or {}
    engine = provenance.get("engine") or {}
    return cost.CostInput(
        key=point.key,
        output_throughput=fig.output_throughput if throughput is None else throughput,
        gpus=fig.gpu_count,
        valid=fig.valid,
        run_valid=fig.run_valid,
        launch_style=engine.get("launch_style"),
        host_has_gpu=bool(hardware.get("gpu_count") or hardware.get("gpu_name"))
        if hardware else None,
        node=node.queue if node is not None else None,
        price=node_price(node),
        joules_per_output_token=joules_per_output_token(point),
        repeats=repeats,
    )


def point_costs(benchmark: Benchmark, points: Sequence[Point],
                figs: Mapping[str, PointFigures]) -> dict[str, PointCost]:
    """Each readable point's cost per million output tokens at its run's node price, or why
    it has none (a CPU engine, an invalid run, no price)."""
    node = benchmark.node
    return {p.key: cost.point_cost(_cost_input(p, figs[p.key], node))
            for p in points if p.key in figs}


def stale_price(price: GpuHourPrice | None, today: date | None = None) -> str | None:
    """'The price as of ... is N days old, ...' when the price is older than
    PRICE_MAX_AGE_DAYS; None when it is recent or there is none."""
    if price is None:
        return None
    found = cost.stale_price_sentence(price, today or timezone.localdate(), PRICE_MAX_AGE_DAYS)
    return None if found is None else str(found)


def _benchmark_figures(benchmark: Benchmark) -> list[PointFigures]:
    return list(figures_by_key(load_points(benchmark))[0].values())


def worth_of(
    baseline: Point,
    candidate: Point,
    comparison: ComparisonResult,
    *,
    today: date | None = None,
    figures_of: Callable[[Benchmark], Sequence[PointFigures]] = _benchmark_figures,
) -> Worth:
    """What the candidate's setting is worth against the baseline's, in money and GPUs.

    Each side at its setting's capacity (the lowest valid repeat within its own run, as the
    run page's capacity rows group them), priced at its run's node; the GPU figure on the
    candidate's node. figures_of gives a run's figures (a report passes the ones it read).
    """

    def side(point: Point) -> cost.CostInput:
        figs = figures_of(point.benchmark)
        fig = next((f for f in figs if f.key == point.key), None) or figures(point)
        estimate = capacity_of(fig, figs)
        if estimate is None:  # no valid repeat: the rules say so rather than price it
            return _cost_input(point, fig, point.benchmark.node)
        return _cost_input(point, fig, point.benchmark.node, throughput=estimate.capacity,
                           repeats=estimate.repeats)

    node = candidate.benchmark.node
    return cost.worth(
        side(baseline),
        side(candidate),
        node_gpus=node.gpu_count if node is not None else None,
        same_spec=comparison.spec.status == "match",
        today=today or timezone.localdate(),
    )
