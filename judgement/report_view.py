"""A report's judgement in one call: report_view(ask) returns every value, label and sentence a
customer report shows, as Words (judgement.report_phrases), so reports/ only translates,
formats numbers in the report's language and lays them out.

Every figure comes through the same calls the run page makes (the default operating point, the
verdicts, the comparisons and the scaling). This module judges the headline, the comparison
table and the node scaling; judgement.report_references the dated references,
judgement.report_sweep the curve and the queue evidence, judgement.report_method the
methodology and the acceptance checklist.
Call it inside translation.override(language): a capacity plan's words come translated by
judgement.capacity_view in the active language.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from django.utils.translation import gettext

from analysis.sentences import Sentence
from analysis.types import ScalingResult
from judgement.capacity_view import plan_view, price_text
from judgement.comparison_view import compare_points, output_parity
from judgement.cost_view import worth_of
from judgement.public_provenance import is_cpu_engine
from judgement.report_method import (
    LIMITS,
    METRIC_DEFINITIONS,
    AcceptanceView,
    MethodRowView,
    acceptance,
    capacity_of,
    methodology,
)
from judgement.report_phrases import (
    AFTER,
    BEFORE,
    FACTOR_LABELS,
    HIDDEN_FACTOR_VALUES,
    NODE_RUN,
    SINGLE_REPLICA_REFERENCE,
    Figure,
    Phrase,
    Words,
    _,
    change,
    differs_text,
    engine,
    factor_label,
    factor_value,
    guard_text,
    guarded,
    is_controlled,
    joined,
    labels,
    latency_sentence,
    number,
    percent,
    seconds,
    spec_sentence,
    workload_row,
)
from judgement.report_references import ReferenceView, reference_rows
from judgement.report_rows import Sweeps
from judgement.report_sweep import CurveView, QueueView, curve, queue
from judgement.request_timeline import PHASE_NAMES
from judgement.request_timeline import TITLES as TIMELINE_TITLES
from judgement.rows import Benchmark, CapacityPlan, ExternalReference, Point
from judgement.scaling_view import scaling_for
from judgement.stability_view import comparison_stability
from judgement.vocabulary import AnalysisError

# What a report may show (reports.models.Item's values), as report_view is asked for them.
HEADLINE, COMPARISON_TABLE, CURVES = "headline", "comparison_table", "curves"
QUEUE_EVIDENCE, NODE_SCALING, REFERENCES, FLEET = (
    "queue_evidence", "node_scaling", "references", "fleet")


@dataclass(frozen=True, kw_only=True)
class ReportAsk:
    """What a report was built to show: its points, its references and plan, its items."""

    benchmark: Benchmark
    baseline: Point
    candidate: Point
    scaling_point: Point | None
    scaling_reference: Point | None
    references: Sequence[ExternalReference]
    capacity_plan: CapacityPlan | None
    shows: frozenset[str]
    # The day the report is built: a price's age is told as of it.
    today: date


@dataclass(frozen=True, kw_only=True)
class SideView:
    """One measured point as the customer sees it."""

    label: Phrase
    config: Figure
    output_throughput: float
    throughput: Figure
    median_e2el: Figure
    cpu_engine: bool


@dataclass(frozen=True, kw_only=True)
class HeadlineView:
    baseline: SideView
    candidate: SideView
    # None when the input/output specs differ: then spec_sentence says so instead.
    ratio: Figure | None
    improvement: Figure | None
    latency_sentence: Phrase
    controlled: bool
    held_fixed: list[tuple[Words, Words]]
    differing: list[tuple[Words, Words, Words]]
    not_recorded: list[Words]
    spec_sentence: Phrase | None
    ratio_interval: Sentence | None
    stability: list[Phrase]


@dataclass(frozen=True, kw_only=True)
class TableRowView:
    comparison: Words
    baseline: Words
    result: Words
    shows: Words
    differs: Words


@dataclass(frozen=True, kw_only=True)
class ScalingView:
    """The node run against its single-replica reference, or why it cannot be shown."""

    missing: Phrase | None = None
    sentence: Phrase | None = None
    facts: list[tuple[Phrase, Words]] = field(default_factory=list)
    figure: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class FleetRowView:
    config_label: str
    capacity: str
    gpus: str
    hours: str | None
    cost: str | None
    sentences: list[str]


@dataclass(frozen=True, kw_only=True)
class FleetView:
    """A stored capacity plan as it was answered, in the active language (plan_view)."""

    headline: str
    notes: list[Words]
    rows: list[FleetRowView]
    batch: bool
    check: list[str]
    check_held: bool | None


@dataclass(frozen=True, kw_only=True)
class ReportView:
    cpu_engine: bool
    chart_labels: dict[str, Phrase]
    headline: HeadlineView | None
    worth: list[Sentence]
    parity: list[Sentence]
    parity_flagged: bool
    scaling: ScalingView | None
    references: list[ReferenceView] | None
    table: list[TableRowView] | None
    curve: CurveView | None
    queue: QueueView | None
    fleet: FleetView | None
    methodology: list[MethodRowView]
    metric_definitions: list[tuple[Phrase, Phrase]]
    limits: list[Phrase]
    acceptance: list[AcceptanceView]
    # Ids of the rows the figures came from, for the version's record.
    sources: dict[str, Any]


def report_points(ask: ReportAsk) -> list[tuple[Phrase, Point]]:
    """The report's points (node scaling only when shown), in the order a reference prefers
    them: the "after" point first."""
    chosen: list[tuple[Phrase, Point | None]] = [(AFTER, ask.candidate), (BEFORE, ask.baseline)]
    if NODE_SCALING in ask.shows and ask.scaling_point is not None:
        chosen += [(SINGLE_REPLICA_REFERENCE, ask.scaling_reference),
                   (NODE_RUN, ask.scaling_point)]
    seen: set[int] = set()
    out = []
    for label, point in chosen:
        if point is not None and point.pk not in seen:
            seen.add(point.pk)
            out.append((label, point))
    return out


def report_view(ask: ReportAsk) -> ReportView:
    """Everything a report shows, from the stored rows as of now. Raises AnalysisError when
    the two headline points cannot be compared (e.g. one has no latency data)."""
    sweeps = Sweeps()
    points = report_points(ask)
    comparison = compare_points(ask.baseline, ask.candidate)
    parity = output_parity(ask.baseline, ask.candidate).parity
    sources: dict[str, Any] = {
        "baseline_point": ask.baseline.pk, "candidate_point": ask.candidate.pk,
        "scaling_point": None, "scaling_reference": None,
        "point_ids": sorted(p.pk for _label, p in points),
    }
    shown = ask.shows
    headline = _headline(ask.baseline, ask.candidate, comparison) if HEADLINE in shown else None
    worth: list[Sentence] = []
    parity_words: list[Sentence] = []
    flagged = False
    if HEADLINE in shown or COMPARISON_TABLE in shown:
        worth = list(worth_of(
            ask.baseline, ask.candidate, comparison, today=ask.today,
            figures_of=lambda benchmark: list(sweeps.of(benchmark)[1].values())).sentences)
        if parity.measured or any((p.workload or {}).get("keep_outputs")
                                  for p in (ask.baseline, ask.candidate)):
            parity_words = [parity.sentence, *parity.notes]
            flagged = parity.beyond_tolerance
    scaling_view, outcome = (_scaling(ask, sources) if NODE_SCALING in shown
                             else (None, None))
    references = (reference_rows(ask.references, points, sources) if REFERENCES in shown
                  else None)
    table = (_table(ask, comparison, references or [], outcome, sweeps)
             if COMPARISON_TABLE in shown else None)
    curve_view = curve(ask.benchmark, sweeps) if CURVES in shown else None
    if curve_view is not None:
        sources |= curve_view.sources
    queue_view = queue(ask.baseline, ask.candidate, sweeps) if QUEUE_EVIDENCE in shown else None
    fleet = _fleet(ask.capacity_plan) if FLEET in shown else None
    if fleet is not None and ask.capacity_plan is not None:
        sources["capacity_plan"] = ask.capacity_plan.pk
    node = ask.scaling_point if outcome is not None else None
    sources["point_ids"] = _all_point_ids(sources)
    return ReportView(
        cpu_engine=any(is_cpu_engine(p) for _label, p in points),
        chart_labels=CHART_LABELS,
        headline=headline, worth=worth, parity=parity_words, parity_flagged=flagged,
        scaling=scaling_view, references=references, table=table, curve=curve_view,
        queue=queue_view, fleet=fleet,
        methodology=methodology(ask.baseline, ask.candidate, node, sweeps),
        metric_definitions=METRIC_DEFINITIONS, limits=LIMITS,
        acceptance=acceptance(ask.baseline, ask.candidate, parity),
        sources=sources,
    )


def _all_point_ids(sources: dict[str, Any]) -> list[int]:
    """Every point a figure on the page came from, for the version's record."""
    ids = set(sources["point_ids"]) | set(sources.get("curve_points", []))
    ids |= {sources.get(name) for name in ("scaling_point", "scaling_reference",
                                           "operating_point_point")}
    ids |= set((sources.get("references") or {}).values())
    return sorted(i for i in ids if i is not None)


CHART_LABELS = {
    "throughput": _("Output tokens/s"),
    "latency": _("Median request latency (s)"),
    "selected": _("Operating point"),
    "time": _("Seconds since the point started"),
    "requests": _("Requests"),
    "waiting": _("waiting"),
    "running": _("running"),
    "kv": _("KV cache use"),
    "replica": _("replica"),
    "reference": _("single-replica reference"),
    # The request timeline's words (judgement.request_timeline), in the report's language.
    "due_order": Phrase(TIMELINE_TITLES["lanes"]),
    "engine_counts": Phrase(TIMELINE_TITLES["counts"]),
    "request": Phrase(TIMELINE_TITLES["request"]),
    **{f"phase_{name}": Phrase(words) for name, words in PHASE_NAMES.items()},
}


# --- headline ----------------------------------------------------------------------------------


def _side(point: Point, label: Phrase) -> SideView:
    cpu = is_cpu_engine(point)
    return SideView(
        label=CPU_SIDE_LABELS[label.msgid] if cpu else label,
        config=engine(point.engine_label),
        output_throughput=point.output_throughput,
        throughput=number(point.output_throughput),
        median_e2el=seconds(point.median_e2el_ms),
        cpu_engine=cpu,
    )


# A side's label on a CPU engine, one whole label each.
CPU_SIDE_LABELS = {BEFORE.msgid: _("Before (CPU engine)"), AFTER.msgid: _("After (CPU engine)")}


def _headline(baseline: Point, candidate: Point, comparison: Any) -> HeadlineView:
    rows = comparison.factors
    # A factor whose value the page hides (the host) has nothing to show as held fixed: a bare
    # label read as a value gone missing. Whether it matched still counts in "controlled".
    held: list[tuple[Words, Words]] = [
        (factor_label(row), factor_value(row.name, row.baseline))
        for row in rows if row.status == "match" and row.name not in HIDDEN_FACTOR_VALUES
    ]
    differing: list[tuple[Words, Words, Words]] = [
        (factor_label(row),
         *(("", "") if row.name in HIDDEN_FACTOR_VALUES
           else (factor_value(row.name, row.baseline), factor_value(row.name, row.candidate))))
        for row in rows if row.status == "differ"
    ]
    ratio_value = guarded(comparison, "ratio")
    spec = workload_row(comparison)
    stability = comparison_stability(baseline, candidate, ratio_value)
    return HeadlineView(
        ratio_interval=stability.ratio,
        stability=[_("Before: %(sentence)s", sentence=s) for s in stability.baseline.sentences]
        + [_("After: %(sentence)s", sentence=s) for s in stability.candidate.sentences],
        baseline=_side(baseline, BEFORE),
        candidate=_side(candidate, AFTER),
        ratio=None if ratio_value is None else Figure(ratio_value, "ratio"),
        improvement=None if ratio_value is None
        else change(guarded(comparison, "improvement_pct")),
        spec_sentence=None if ratio_value is not None or spec is None else spec_sentence(spec),
        latency_sentence=latency_sentence(comparison.baseline_median_e2el_ms,
                                          comparison.candidate_median_e2el_ms),
        controlled=is_controlled(comparison),
        held_fixed=held,
        differing=differing,
        not_recorded=labels(comparison, "unknown"),
    )


# --- comparison table ---------------------------------------------------------------------------


def _table(ask: ReportAsk, comparison: Any, references: list[ReferenceView],
           outcome: ScalingResult | None, sweeps: Sweeps) -> list[TableRowView]:
    """One row per comparison, as the case study's table: the local tuning result, each dated
    reference, and the node capacity when node scaling is shown."""
    rows = [_tuning_row(ask, comparison)]
    rows += [_reference_table_row(r) for r in references]
    node, reference = ask.scaling_point, ask.scaling_reference
    if outcome is not None and node is not None and reference is not None:
        rows.append(_capacity_row(outcome, node, reference, sweeps))
    return rows


def _tuning_row(ask: ReportAsk, comparison: Any) -> TableRowView:
    baseline, candidate = ask.baseline, ask.candidate
    cpu = is_cpu_engine(baseline) or is_cpu_engine(candidate)
    ratio_value = guarded(comparison, "ratio")
    latency = latency_sentence(comparison.baseline_median_e2el_ms,
                               comparison.candidate_median_e2el_ms)
    spec = workload_row(comparison)
    shows: Words
    if ratio_value is None:
        shows = spec_sentence(spec) if spec is not None else ""
    else:
        shows = _("Ratio %(ratio)s (%(change)s).", ratio=Figure(ratio_value, "ratio"),
                  change=change(guarded(comparison, "improvement_pct")))
    settings = _("Engine settings %(before)s → %(after)s.",
                 before=engine(baseline.engine_label), after=engine(candidate.engine_label))
    return TableRowView(
        comparison=(_("Local tuning: output tokens/s (CPU engine)") if cpu
                    else _("Local tuning: output tokens/s")),
        baseline=number(comparison.baseline_throughput),
        result=number(comparison.candidate_throughput),
        shows=joined([shows, latency]),
        differs=differs_text(comparison, settings),
    )


def _reference_table_row(row: ReferenceView) -> TableRowView:
    label = _("%(source)s (recorded %(date)s), %(unit)s", source=row.source,
              date=row.recorded_on, unit=row.unit)
    if row.no_match is not None:
        spec = joined([FACTOR_LABELS["workload"], ": ", row.spec, " → ", row.local_spec], "")
        return TableRowView(comparison=label, baseline=row.reference_value, result="-",
                            shows=row.no_match, differs=guard_text(False, [spec], None))
    unknown = _("Not stated by the reference or not recorded: %(list)s.",
                list=joined(row.not_recorded, ", ")) if row.not_recorded else None
    value: Words = row.local_value or "-"
    return TableRowView(
        comparison=label,
        baseline=row.reference_value,
        result=_("%(value)s (CPU engine)", value=value) if row.cpu_engine else value,
        shows=_("%(local)s is %(ratio)s the reference (%(change)s).",
                ratio=row.ratio or "", change=row.difference or "", local=row.local_label or ""),
        differs=guard_text(row.controlled, row.differing, unknown),
    )


def _capacity_row(outcome: ScalingResult, node: Point, reference: Point,
                  sweeps: Sweeps) -> TableRowView:
    efficiency = _("Scaling efficiency %(eff)s: node throughput over one common window against "
                   "%(n)s x the single-replica reference (%(ref)s).",
                   eff=percent(outcome.efficiency * 100), n=str(outcome.n_replicas),
                   ref=number(outcome.reference_throughput))
    shows: Words = efficiency
    estimate = capacity_of(node, sweeps)
    if estimate is not None and estimate.repeats > 1:
        shows = joined([efficiency, _(
            "Capacity, the lowest of %(count)s valid repeats: %(value)s.",
            count=str(estimate.repeats), value=Figure(estimate.capacity, "tokens_per_s"))])
    differs: Words
    try:
        differs = differs_text(compare_points(reference, node))
    except AnalysisError:
        differs = _("Replicas: 1 → %(n)s.", n=str(outcome.n_replicas))
    n = str(outcome.n_replicas)
    return TableRowView(
        comparison=(_("Node capacity: %(n)s replicas, one common window (CPU engine)", n=n)
                    if is_cpu_engine(node)
                    else _("Node capacity: %(n)s replicas, one common window", n=n)),
        baseline=_("%(n)s x %(ref)s = %(ideal)s", n=n, ref=number(outcome.reference_throughput),
                   ideal=number(outcome.ideal_throughput)),
        result=number(outcome.node_throughput),
        shows=shows,
        differs=differs,
    )


# --- node scaling ------------------------------------------------------------------------------


def _scaling(ask: ReportAsk, sources: dict[str, Any]
             ) -> tuple[ScalingView, ScalingResult | None]:
    node, reference = ask.scaling_point, ask.scaling_reference
    if node is None or reference is None:
        return ScalingView(missing=_("No node run was chosen for this report.")), None
    sources |= {"scaling_point": node.pk, "scaling_reference": reference.pk}
    try:
        outcome = scaling_for(node, reference)
    except (AnalysisError, ValueError):
        return ScalingView(missing=_(
            "The chosen node run cannot be compared with its reference.")), None
    values: dict[str, Words] = {
        "n": str(outcome.n_replicas), "gpus": str(outcome.total_gpus),
        "node": number(outcome.node_throughput), "window": number(outcome.window_seconds, 1),
        "per_gpu": number(outcome.throughput_per_gpu),
        "eff": percent(outcome.efficiency * 100), "ref": number(outcome.reference_throughput)}
    sentence = Phrase(SCALING_CPU if is_cpu_engine(node) else SCALING, values)
    valid = outcome.all_replicas_valid
    facts: list[tuple[Phrase, Words]] = [
        (_("Node output tokens/s"), number(outcome.node_throughput)),
        (_("Common window"), _("%(value)s s", value=number(outcome.window_seconds, 1))),
        (_("Ideal (N x reference)"), number(outcome.ideal_throughput)),
        (_("Scaling efficiency"), percent(outcome.efficiency * 100)),
        (_("Requests completed / failed"),
         joined([number(node.completed), number(node.failed)], " / ")),
        (_("Every replica completed every request"),
         _("yes") if valid else (_("no") if valid is False else _("not recorded"))),
    ]
    figure = {
        "replicas": [r.replica for r in outcome.per_replica],
        "throughput": [r.output_throughput for r in outcome.per_replica],
        "reference": outcome.reference_throughput,
        "node": outcome.node_throughput,
    }
    return ScalingView(sentence=sentence, facts=facts, figure=figure), outcome


SCALING = _(
    "%(n)s replicas on %(gpus)s devices: %(node)s output tokens/s over one common window "
    "of %(window)s s (first request sent to last completion), %(per_gpu)s per device; "
    "%(eff)s of %(n)s x the single-replica reference (%(ref)s).").msgid
SCALING_CPU = _(
    "%(n)s replicas on %(gpus)s devices: %(node)s output tokens/s over one common window "
    "of %(window)s s (first request sent to last completion), %(per_gpu)s per device; "
    "%(eff)s of %(n)s x the single-replica reference (%(ref)s). (CPU engine)").msgid


# --- the fleet ---------------------------------------------------------------------------------


def _fleet(row: CapacityPlan | None) -> FleetView | None:
    """What a stored capacity plan means for the customer's fleet, as it was answered."""
    if row is None:
        return None
    view = plan_view(row, gettext)
    notes: list[Words] = list(view.notes)
    if view.targets:
        notes.append(_("Latency targets: %(targets)s.", targets=view.targets))
    if price_text(row) is None:
        notes.append(_("No GPU-hour price was set, so the plan gives no cost."))
    return FleetView(
        headline=view.headline, notes=notes, batch=view.batch,
        rows=[FleetRowView(config_label=r.config_label, capacity=r.capacity, gpus=r.gpus,
                           hours=r.hours, cost=r.cost, sentences=r.sentences)
              for r in view.rows],
        check=view.check.sentences if view.check else [],
        check_held=view.check.held if view.check else None)
