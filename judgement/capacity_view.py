"""A capacity plan for the pages and the report: the points a plan reads, its inputs from what
a person asked, the rule's answer (analysis.capacity_plan.plan_capacity, which the CLI calls
too) kept as JSON on the row, and every line, cell and sentence the plan page and the report
show.

A stored plan is shown as it was answered; only the check against the engine is judged on
every view, from the check run's points, like any other measured run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.utils import timezone
from pydantic import TypeAdapter

from analysis import AnalysisError
from analysis import capacity_words as words
from analysis.capacity_plan import plan_capacity, runs_together
from analysis.capacity_types import (
    CapacityPlan,
    ConfigPlan,
    Demand,
    DemandKind,
    PlanInputs,
    trace_demand,
)
from analysis.capacity_verify import Check, check_points, promise_check, speed_check
from analysis.capacity_words import Cells, cells
from analysis.sentences import Sentence
from analysis.types import PointFigures
from benchmarks.models import Benchmark, Comparison, Node, Point
from benchmarks.models import CapacityPlan as PlanRow
from judgement.cost_view import node_price
from judgement.figures import figures_by_key, parse_spec
from judgement.rows import config_points, load_points, plan_config_points, plan_runs_points
from runner.schema.flags import parse_slos, slo_text
from runner.workloads.prompts import DatasetError, dataset_file
from runner.workloads.traces import TRACE_RATE_WINDOW_S, read_trace, trace_rate

PLAN_JSON = TypeAdapter(CapacityPlan)
INPUTS_JSON = TypeAdapter(PlanInputs)
Gettext = Callable[[str], str]


def english(message: str) -> str:
    return message


# --- what a person asked ---------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Asked:
    """The plan form's fields as typed (dashboard.forms_capacity): the rules' inputs come from
    them here, so the form only checks that each is a number or a choice."""

    kind: DemandKind
    rate: float | None = None
    trace: str = ""
    trace_at: str = "peak"
    trace_window_s: float = TRACE_RATE_WINDOW_S
    requests: int | None = None
    hours: float | None = None
    spec: str = ""
    slos: str = ""
    margin_pct: float = 0.0


def inputs_of(asked: Asked, node: Node | None) -> PlanInputs:
    """The rules' inputs; AnalysisError says what does not make a demand. The price is the
    node's now (a plan edited later takes the price of that day)."""
    try:
        slos = parse_slos(asked.slos.split())
    except ValueError as exc:
        raise AnalysisError(str(exc)) from None
    return PlanInputs(demand=_demand(asked), slos=slos, margin_pct=asked.margin_pct,
                      price=node_price(node))


def _demand(asked: Asked) -> Demand:
    if asked.kind == "batch":
        if asked.requests is None or asked.hours is None:
            raise AnalysisError("a batch job needs its number of requests and its deadline")
        return Demand(kind="batch", requests=asked.requests, hours=asked.hours)
    if asked.kind == "trace":
        try:
            source = read_trace(dataset_file(asked.trace, settings.HEADROOM_DATA_DIR))
            found = trace_rate(source, asked.trace_window_s, asked.trace_at or "peak")
        except DatasetError as exc:  # TraceError is one
            raise AnalysisError(str(exc)) from None
        return trace_demand(found, asked.trace)
    spec = parse_spec(asked.spec) if asked.spec.strip() else None
    if asked.spec.strip() and spec is None:
        raise AnalysisError(f"{asked.spec!r} is not a spec such as 1000 in / 1000 out")
    if asked.rate is None:
        raise AnalysisError("a demand needs its requests/s at peak")
    return Demand(kind="rate", rate=asked.rate, workload=spec)


def asked_of(row: PlanRow) -> Asked:
    """What a stored plan was asked, to fill the form that edits it into a new plan."""
    found = stored_inputs(row)
    demand = found.demand
    slos = " ".join(f"{slo_text(name)}:{limit:g}" for name, limit in found.slos.items())
    spec = demand.workload.label() if demand.kind == "rate" and demand.workload else ""
    return Asked(kind=demand.kind, rate=demand.rate if demand.kind == "rate" else None,
                 trace=demand.trace or "", trace_at=demand.trace_statistic or "peak",
                 trace_window_s=demand.trace_window_s or TRACE_RATE_WINDOW_S,
                 requests=demand.requests, hours=demand.hours, spec=spec, slos=slos,
                 margin_pct=found.margin_pct)


# --- the points a plan reads, and its answer ---------------------------------------------------


def source_points(benchmark: Benchmark, scope: str,
                  comparison: Comparison | None = None) -> list[Point]:
    """A run's points, every run of its plan, or a comparison's two configs in their runs."""
    if scope == PlanRow.Scope.COMPARISON and comparison is not None:
        sides = (comparison.baseline_point, comparison.candidate_point)
        return config_points([(p.benchmark, p.engine_label) for p in sides])
    if scope == PlanRow.Scope.PLAN:
        return plan_runs_points(benchmark)
    return load_points(benchmark)


def answer(points: list[Point], inputs: PlanInputs) -> CapacityPlan:
    """The rule's answer over the points, each run's points read as one run (runs_together)."""
    runs: dict[int, list[Point]] = {}
    for point in points:
        runs.setdefault(point.benchmark_id, []).append(point)
    figs = runs_together([(f"run {pk}", list(figures_by_key(group)[0].values()))
                          for pk, group in runs.items()])
    return plan_capacity(figs, inputs, today=timezone.localdate())


def row_fields(plan: CapacityPlan, points: list[Point]) -> dict[str, Any]:
    """What a plan's row keeps of it: inputs, answer, whether it was met, the points read."""
    return {"inputs": INPUTS_JSON.dump_python(plan.inputs, mode="json"),
            "outputs": PLAN_JSON.dump_python(plan, mode="json"), "met": plan.met,
            "point_ids": sorted(p.pk for p in points)}


def stored_plan(row: PlanRow) -> CapacityPlan:
    return PLAN_JSON.validate_python(row.outputs)


def stored_inputs(row: PlanRow) -> PlanInputs:
    return INPUTS_JSON.validate_python(row.inputs)


def checkable(row: PlanRow, config_label: str) -> ConfigPlan:
    """The sized config of the plan a check may load; AnalysisError when there is none."""
    found = next((c for c in stored_plan(row).configs if c.config_label == config_label), None)
    if found is None or not found.sized:
        raise AnalysisError(f"engine config {config_label} has no plan to check")
    return found


# --- what the pages show -----------------------------------------------------------------------


@dataclass
class ConfigRow:
    name: str
    config_label: str
    sized: bool
    capacity: str
    gpus: str
    hours: str | None
    cost: str | None
    sentences: list[str]


@dataclass
class CheckView:
    """The run that loaded a config at the plan's rate, and what it measured beside the
    promise; pending until it has points."""

    run: Benchmark
    config_name: str
    promise: str
    sentences: list[str] = field(default_factory=list)
    held: bool | None = None


@dataclass
class PlanView:
    headline: str
    notes: list[str]
    rows: list[ConfigRow]
    met: bool
    batch: bool
    check: CheckView | None
    targets: str


def _text(sentence: Sentence | None, gettext: Gettext) -> str | None:
    return None if sentence is None else sentence.translated(gettext)


def config_row(config: ConfigPlan, price: Any, kind: DemandKind,
               gettext: Gettext = english) -> ConfigRow:
    found: Cells = cells(config, price, kind)
    return ConfigRow(
        name=config.name, config_label=config.config_label, sized=config.sized,
        capacity=found.capacity.translated(gettext), gpus=found.gpus.translated(gettext),
        hours=_text(found.hours, gettext), cost=_text(found.cost, gettext),
        sentences=[s.translated(gettext) for s in config.sentences])


def plan_view(row: PlanRow, gettext: Gettext = english, *, with_check: bool = True) -> PlanView:
    plan = stored_plan(row)
    kind = plan.inputs.demand.kind
    return PlanView(
        headline=plan.headline.translated(gettext),
        notes=[n.translated(gettext) for n in plan.notes],
        rows=[config_row(c, plan.inputs.price, kind, gettext) for c in plan.configs],
        met=plan.met, batch=kind == "batch",
        check=check_view(row, plan, gettext) if with_check else None,
        targets=words.limits_text(plan.inputs.slos) if plan.inputs.slos else "")


def check_view(row: PlanRow, plan: CapacityPlan, gettext: Gettext = english) -> CheckView | None:
    run = row.check_run
    config = next((c for c in plan.configs if c.config_label == row.check_config), None)
    share = config.share if config is not None else None
    if run is None or config is None or share is None:
        return None
    promise = Sentence(words.CELL_RATE, {"rate": words.rate_text(share)})
    view = CheckView(run=run, config_name=config.name, promise=promise.translated(gettext))
    points = [p for p in load_points(run) if p.engine_label == config.config_label]
    if not points:
        return view
    measured = list(figures_by_key(points)[0].values())
    found: tuple[Check, ...] = check_points(measured, plan.inputs.slos)
    view.sentences = [c.sentence.translated(gettext) for c in found]
    speed = speed_check(_plan_points(row, config), measured, config)
    if speed is not None:
        view.sentences.append(speed.sentence.translated(gettext))
    view.held = promise_check(found, config).held
    return view


def _plan_points(row: PlanRow, config: ConfigPlan) -> list[PointFigures]:
    """The points the plan read of the config, each run's read on its own: a plan over a
    plan's runs holds one key in each."""
    by_run: dict[int, list[Point]] = {}
    for point in plan_config_points(row, config.config_label):
        by_run.setdefault(point.benchmark_id, []).append(point)
    return [f for points in by_run.values() for f in figures_by_key(points)[0].values()]


def price_text(row: PlanRow) -> str | None:
    price = stored_inputs(row).price
    return None if price is None else f"{price.text} per GPU-hour as of {price.as_of}"


def demand_label(inputs: Mapping[str, Any]) -> str:
    """'40 requests/s at peak', for lists of plans (English: the dashboard's own list)."""
    demand = inputs.get("demand") or {}
    if demand.get("kind") == "batch":
        return f"{demand.get('requests'):,} requests in {demand.get('hours'):g} h"
    if demand.get("kind") == "trace":
        return f"trace {demand.get('trace')} at its {demand.get('trace_statistic')}"
    return f"{Decimal(str(demand.get('rate'))).normalize():f} requests/s at peak"
