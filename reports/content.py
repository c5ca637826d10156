"""What a report shows, as plain numbers and sentences: build_report_content(report).

Every figure comes from the judgement package, through the same calls the run page makes (the
default operating point, the verdicts, the comparisons and the scaling); the report only
chooses what to show and words it (reports/wording.py). This module builds the comparisons:
the headline, the comparison table, the node scaling and the references; reports/sections.py
the curve, the queue evidence and the methodology. Nothing but reports.page's dataclasses
reaches the template, so a hostname, a user name or a link to a run cannot appear by accident;
an engine label goes through facts.public_engine_label (no flag values, no local paths).

The public page never calls this: it renders the snapshot reports/publishing.py stored when the
version was published, so a link already sent cannot change. Call it inside
translation.override(language).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone
from django.utils.translation import gettext as _

from judgement.comparison_view import compare_points, compare_with_reference, output_parity
from judgement.cost_view import worth_of
from judgement.report_rows import Sweeps
from judgement.request_timeline import PHASE_NAMES
from judgement.request_timeline import TITLES as TIMELINE_TITLES
from judgement.rows import ExternalReference, Point
from judgement.scaling_view import scaling_for
from judgement.stability_view import comparison_stability
from judgement.vocabulary import UNIT_OUTPUT_TPS_PER_GPU, AnalysisError
from reports import facts
from reports.build_reads import Build, report_points
from reports.fleet_section import fleet
from reports.models import Item, Report
from reports.page import Headline, ReferenceRow, ReportContent, Side, TableRow
from reports.sections import acceptance, capacity_of, curve, methodology, queue
from reports.wording import (
    FACTOR_LABELS,
    HIDDEN_FACTOR_VALUES,
    cpu_label,
    day,
    differs_text,
    factor_label,
    factor_phrase,
    factor_value,
    guard_text,
    guarded,
    is_controlled,
    labels,
    latency_sentence,
    num,
    pct,
    percent,
    ratio,
    seconds,
    spec_sentence,
    spec_text,
    tokens_per_s,
    workload_row,
)


def _side(point: Point, label: str) -> Side:
    cpu = facts.is_cpu_engine(point)
    return Side(
        label=label + cpu_label(cpu),
        config=facts.public_engine_label(point.engine_label),
        output_throughput=point.output_throughput,
        output_throughput_text=num(point.output_throughput),
        median_e2el_text=seconds(point.median_e2el_ms),
        cpu_engine=cpu,
    )


def build_report_content(report: Report, generated_at: datetime | None = None,
                         version: int | None = None) -> ReportContent:
    """The whole page from the stored rows, as of now. Raises AnalysisError when the two
    headline points cannot be compared (e.g. one has no latency data)."""
    baseline, candidate = report.baseline_point, report.candidate_point
    build = Build(report=report, sweeps=Sweeps(), points=report_points(report))
    build.comparison = compare_points(baseline, candidate)
    build.parity = output_parity(baseline, candidate).parity
    content = ReportContent(
        title=report.title,
        language=report.language,
        created_on=day(generated_at or timezone.now()),
        cpu_engine=any(facts.is_cpu_engine(p) for _label, p in build.points),
        items=[item for item in Item.values if report.shows(item)],
        version=version,
        figures={"labels": _chart_labels()},
        sources={
            "baseline_point": baseline.pk, "candidate_point": candidate.pk,
            "scaling_point": None, "scaling_reference": None,
            "point_ids": sorted(p.pk for _label, p in build.points),
        },
    )
    if report.shows(Item.HEADLINE):
        content.headline = _headline(baseline, candidate, build.comparison)
    if report.shows(Item.HEADLINE) or report.shows(Item.COMPARISON_TABLE):
        content.worth = _worth(build, generated_at)
        _parity(content, build)
    if report.shows(Item.NODE_SCALING):
        _scaling(content, build)
    if report.shows(Item.REFERENCES):
        content.references = _references(content, build)
    if report.shows(Item.COMPARISON_TABLE):
        content.table = _table(content, build)
    if report.shows(Item.CURVES):
        curve(content, build)
    if report.shows(Item.QUEUE_EVIDENCE):
        queue(content, build)
    if report.shows(Item.FLEET):
        fleet(content, build)
    methodology(content, build)
    acceptance(content, build)
    caveats = list(report.caveats.all())
    content.caveats = [(c.kind, c.text) for c in caveats]
    content.sources["caveats"] = [c.pk for c in caveats]
    content.sources["point_ids"] = _all_point_ids(content.sources)
    return content


def _all_point_ids(sources: dict[str, Any]) -> list[int]:
    """Every point a figure on the page came from, for the version's record."""
    ids = set(sources["point_ids"]) | set(sources.get("curve_points", []))
    ids |= {sources.get(name) for name in ("scaling_point", "scaling_reference",
                                           "operating_point_point")}
    ids |= set((sources.get("references") or {}).values())
    return sorted(i for i in ids if i is not None)


def _chart_labels() -> dict[str, str]:
    return {
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
        "due_order": _(TIMELINE_TITLES["lanes"]),
        "engine_counts": _(TIMELINE_TITLES["counts"]),
        "request": _(TIMELINE_TITLES["request"]),
        **{f"phase_{name}": _(words) for name, words in PHASE_NAMES.items()},
    }


def _headline(baseline: Point, candidate: Point, comparison: Any) -> Headline:
    rows = comparison.factors
    # A factor whose value the page hides (the host) has nothing to show as held fixed: a bare
    # label read as a value gone missing. Whether it matched still counts in "controlled".
    held = [
        (factor_label(row), factor_value(row.name, row.baseline))
        for row in rows if row.status == "match" and row.name not in HIDDEN_FACTOR_VALUES
    ]
    differing = [
        (factor_label(row),
         *(("", "") if row.name in HIDDEN_FACTOR_VALUES
           else (factor_value(row.name, row.baseline), factor_value(row.name, row.candidate))))
        for row in rows if row.status == "differ"
    ]
    ratio_value = guarded(comparison, "ratio")
    spec = workload_row(comparison)
    stability = comparison_stability(baseline, candidate, ratio_value)
    return Headline(
        ratio_interval=None if stability.ratio is None else stability.ratio.translated(_),
        stability=[_("Before: %(sentence)s") % {"sentence": s.translated(_)}
                   for s in stability.baseline.sentences]
        + [_("After: %(sentence)s") % {"sentence": s.translated(_)}
           for s in stability.candidate.sentences],
        baseline=_side(baseline, _("Before")),
        candidate=_side(candidate, _("After")),
        ratio_text=None if ratio_value is None else ratio(ratio_value),
        improvement_text=None if ratio_value is None
        else pct(guarded(comparison, "improvement_pct")),
        spec_sentence=None if ratio_value is not None or spec is None else spec_sentence(spec),
        latency_sentence=latency_sentence(comparison.baseline_median_e2el_ms,
                                           comparison.candidate_median_e2el_ms),
        controlled=is_controlled(comparison),
        held_fixed=held,
        differing=differing,
        not_recorded=labels(comparison, "unknown"),
    )


def _parity(content: ReportContent, build: Build) -> None:
    """Whether the tuning changed the model's outputs, as the comparison page says it; nothing
    when neither point kept its outputs (the acceptance checklist says it was not measured)."""
    parity = build.parity
    if parity.measured or any((p.workload or {}).get("keep_outputs") for p in
                              (build.report.baseline_point, build.report.candidate_point)):
        content.parity = [s.translated(_) for s in (parity.sentence, *parity.notes)]
        content.parity_flagged = parity.beyond_tolerance


def _worth(build: Build, generated_at: datetime | None) -> list[str]:
    """What the tuning is worth, as the comparison page says it: each setting at its capacity
    in the figures this build read, with the price's age as of the day the report is built."""
    report = build.report
    worth = worth_of(
        report.baseline_point, report.candidate_point, build.comparison,
        today=timezone.localdate(generated_at) if generated_at else timezone.localdate(),
        figures_of=lambda benchmark: list(build.sweeps.of(benchmark)[1].values()),
    )
    return [sentence.translated(_) for sentence in worth.sentences]


# --- comparison table ---------------------------------------------------------------------------


def _table(content: ReportContent, build: Build) -> list[TableRow]:
    """One row per comparison, as the case study's table: the local tuning result, each dated
    reference, and the node capacity when node scaling is shown."""
    rows = [_tuning_row(build)]
    rows += [_reference_table_row(r) for r in content.references or []]
    node, reference = build.report.scaling_point, build.report.scaling_reference
    if build.scaling is not None and node is not None and reference is not None:
        rows.append(_capacity_row(build, node, reference))
    return rows


def _tuning_row(build: Build) -> TableRow:
    report, comparison = build.report, build.comparison
    baseline, candidate = report.baseline_point, report.candidate_point
    cpu = facts.is_cpu_engine(baseline) or facts.is_cpu_engine(candidate)
    ratio_value = guarded(comparison, "ratio")
    latency = latency_sentence(comparison.baseline_median_e2el_ms,
                                comparison.candidate_median_e2el_ms)
    spec = workload_row(comparison)
    if ratio_value is None:
        shows = spec_sentence(spec) if spec is not None else ""
    else:
        shows = _("Ratio %(ratio)s (%(change)s).") % {
            "ratio": ratio(ratio_value), "change": pct(guarded(comparison, "improvement_pct"))}
    settings = _("Engine settings %(before)s → %(after)s.") % {
        "before": facts.public_engine_label(baseline.engine_label),
        "after": facts.public_engine_label(candidate.engine_label)}
    return TableRow(
        comparison=(_("Local tuning: output tokens/s (CPU engine)") if cpu
                    else _("Local tuning: output tokens/s")),
        baseline=num(comparison.baseline_throughput),
        result=num(comparison.candidate_throughput),
        shows=f"{shows} {latency}",
        differs=differs_text(comparison, settings),
    )


def _reference_table_row(row: ReferenceRow) -> TableRow:
    label = _("%(source)s (recorded %(date)s), %(unit)s") % {
        "source": row.source, "date": row.recorded_on, "unit": row.unit}
    if row.no_match:
        spec = f"{FACTOR_LABELS['workload']}: {row.spec} → {row.local_spec}"
        return TableRow(comparison=label, baseline=row.reference_value, result="-",
                        shows=row.no_match, differs=guard_text(False, [spec], None))
    unknown = (_("Not stated by the reference or not recorded: %(list)s.")
               % {"list": ", ".join(row.not_recorded)}) if row.not_recorded else None
    return TableRow(
        comparison=label,
        baseline=row.reference_value,
        result=(row.local_value or "-") + cpu_label(row.cpu_engine),
        shows=_("%(local)s is %(ratio)s the reference (%(change)s).") % {
            "ratio": row.ratio_text, "change": row.difference_text, "local": row.local_label},
        differs=guard_text(row.controlled, row.differing, unknown),
    )


def _capacity_row(build: Build, node: Point, reference: Point) -> TableRow:
    outcome = build.scaling
    shows = _("Scaling efficiency %(eff)s: node throughput over one common window against "
              "%(n)s x the single-replica reference (%(ref)s).") % {
        "eff": percent(outcome.efficiency * 100), "n": outcome.n_replicas,
        "ref": num(outcome.reference_throughput)}
    estimate = capacity_of(node, build)
    if estimate is not None and estimate.repeats > 1:
        shows += " " + _("Capacity, the lowest of %(count)s valid repeats: %(value)s.") % {
            "count": estimate.repeats, "value": tokens_per_s(estimate.capacity)}
    try:
        differs = differs_text(compare_points(reference, node))
    except AnalysisError:
        differs = _("Replicas: 1 → %(n)s.") % {"n": outcome.n_replicas}
    return TableRow(
        comparison=_("Node capacity: %(n)s replicas, one common window") % {
            "n": outcome.n_replicas} + cpu_label(facts.is_cpu_engine(node)),
        baseline=_("%(n)s x %(ref)s = %(ideal)s") % {
            "n": outcome.n_replicas, "ref": num(outcome.reference_throughput),
            "ideal": num(outcome.ideal_throughput)},
        result=num(outcome.node_throughput),
        shows=shows,
        differs=differs,
    )


# --- node scaling ------------------------------------------------------------------------------


def scaling_problem(node: Point, reference: Point) -> str | None:
    """Why these two points cannot make a scaling section (for the build form), or None."""
    if node.replicas < 2:
        return "The node run must have at least two replicas."
    try:
        scaling_for(node, reference)
    except (AnalysisError, ValueError) as exc:
        return str(exc)
    return None


def _scaling(content: ReportContent, build: Build) -> None:
    node, reference = build.report.scaling_point, build.report.scaling_reference
    if node is None or reference is None:
        content.scaling_missing = _("No node run was chosen for this report.")
        return
    content.sources.update(scaling_point=node.pk, scaling_reference=reference.pk)
    try:
        outcome = scaling_for(node, reference)
    except (AnalysisError, ValueError):
        content.scaling_missing = _("The chosen node run cannot be compared with its reference.")
        return
    build.scaling = outcome
    efficiency = percent(outcome.efficiency * 100)
    content.scaling_sentence = _(
        "%(n)s replicas on %(gpus)s devices: %(node)s output tokens/s over one common window "
        "of %(window)s s (first request sent to last completion), %(per_gpu)s per device; "
        "%(eff)s of %(n)s x the single-replica reference (%(ref)s).%(cpu)s"
    ) % {"n": outcome.n_replicas, "gpus": outcome.total_gpus,
         "node": num(outcome.node_throughput), "window": num(outcome.window_seconds, 1),
         "per_gpu": num(outcome.throughput_per_gpu), "eff": efficiency,
         "ref": num(outcome.reference_throughput), "cpu": cpu_label(facts.is_cpu_engine(node))}
    valid = outcome.all_replicas_valid
    content.scaling_facts = [
        (_("Node output tokens/s"), num(outcome.node_throughput)),
        (_("Common window"), _("%(value)s s") % {"value": num(outcome.window_seconds, 1)}),
        (_("Ideal (N x reference)"), num(outcome.ideal_throughput)),
        (_("Scaling efficiency"), efficiency),
        (_("Requests completed / failed"), f"{num(node.completed)} / {num(node.failed)}"),
        (_("Every replica completed every request"),
         _("yes") if valid else (_("no") if valid is False else _("not recorded"))),
    ]
    content.figures["scaling"] = {
        "replicas": [r.replica for r in outcome.per_replica],
        "throughput": [r.output_throughput for r in outcome.per_replica],
        "reference": outcome.reference_throughput,
        "node": outcome.node_throughput,
    }


# --- references --------------------------------------------------------------------------------


def _compared_at_same_spec(build: Build, row: ExternalReference) -> tuple[Any, Any, bool]:
    """(label and point, comparison) of the first report point measured at the reference's
    spec, or (None, None); the flag says whether the reference could be compared at all."""
    comparable = False
    for label, point in build.points:
        result, _error = compare_with_reference(point, row)
        if result is None:
            continue
        comparable = True
        spec = workload_row(result)
        if spec is not None and spec.status == "match" and guarded(result, "ratio") is not None:
            return (label, point), result, True
    return None, None, comparable


def _reference_latency(result: Any) -> str | None:
    """'Median request latency (E2EL): reference 9.0 s, this result 2.5 s (-72.2%)'; the
    statistic is named, and a mean is only ever set beside a mean."""
    reference_ms = getattr(result, "reference_latency_ms", None)
    local_ms = getattr(result, "local_latency_ms", None)
    statistic = getattr(result, "latency_statistic", None)
    if reference_ms is None or statistic not in ("median", "mean"):
        return None
    label = (_("Median request latency (E2EL)") if statistic == "median"
             else _("Mean request latency (E2EL)"))
    text = _("%(label)s: reference %(reference)s, this result %(local)s") % {
        "label": label, "reference": seconds(reference_ms), "local": seconds(local_ms)}
    change = guarded(result, "latency_difference_pct")
    return text if change is None else f"{text} ({pct(change)})"


def _references(content: ReportContent, build: Build) -> list[ReferenceRow]:
    """Each reference against the report point of the same input/output spec (the "after"
    point first); when none has it, the row says so and gives no ratio."""
    rows = []
    compared: dict[str, int | None] = {}
    local_specs = ", ".join(dict.fromkeys(spec_text(p) for _label, p in build.points))
    for row in build.report.references.all():
        chosen, result, comparable = _compared_at_same_spec(build, row)
        if not comparable:
            continue  # the reference itself cannot be compared (its unit): nothing to show
        compared[str(row.pk)] = chosen[1].pk if chosen else None
        unit = (_("output tokens/s per GPU") if row.unit == UNIT_OUTPUT_TPS_PER_GPU
                else _("output tokens/s"))
        common: dict[str, Any] = {
            "source": row.source, "url": row.url, "recorded_on": day(row.recorded_on),
            "no_longer_listed_on": day(row.no_longer_listed_on)
            if row.no_longer_listed_on else None,
            "reference_value": num(row.value), "unit": unit, "spec": row.workload_spec or "-",
            "local_spec": local_specs,
        }
        if result is None:
            rows.append(ReferenceRow(
                **common, local_label=None, local_value=None, ratio_text=None,
                difference_text=None, controlled=False, matching=[], differing=[],
                not_recorded=[], cpu_engine=False,
                no_match=_("No point in this report was measured at the reference's "
                           "input/output spec (%(reference)s; this report: %(local)s), so no "
                           "ratio is given.") % {"reference": common["spec"],
                                                 "local": local_specs},
            ))
            continue
        label, point = chosen
        rows.append(ReferenceRow(
            **common,
            local_label=f"{label}: {facts.public_engine_label(point.engine_label)}",
            local_value=num(result.local_value),
            ratio_text=ratio(guarded(result, "ratio") or 0.0),
            difference_text=pct(guarded(result, "difference_pct")),
            controlled=is_controlled(result),
            matching=labels(result, "match"),
            differing=[factor_phrase(r) for r in result.factors if r.status == "differ"],
            not_recorded=labels(result, "unknown"),
            cpu_engine=facts.is_cpu_engine(point),
            latency_text=_reference_latency(result),
        ))
    content.sources["references"] = compared
    return rows
