"""What a report shows, as plain numbers and sentences: build_report_content(report).

The public page renders only what this returns. It is built from the chosen points and the
analysis layer's pure functions; nothing else from the database reaches the template, so a
hostname, a user name or a link to a run cannot appear by accident. Call it inside
translation.override(language): sentences go through gettext and numbers through Django's
formats (grouped thousands, the language's dates).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from django.utils import formats
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from benchmarks import charts
from benchmarks.analysis import AnalysisError
from benchmarks.analysis.compare import compare, compare_reference
from benchmarks.analysis.convert import replica_figures_from_point_result
from benchmarks.analysis.repeats import capacity_estimate, lowest_repeats
from benchmarks.analysis.scaling import scaling
from benchmarks.analysis.selection import knee
from benchmarks.analysis.types import (
    REFERENCE_UNITS,
    UNIT_OUTPUT_TPS_PER_GPU,
    Measured,
    Reference,
    WorkloadShape,
)
from benchmarks.analysis.verdicts import verdict
from benchmarks.models import ExternalReference, OperatingPoint, Point, PointData
from reports import facts
from reports.models import Item, Report

FACTOR_LABELS = {
    "gpu_sku": gettext_lazy("GPU"),
    "gpu_count": gettext_lazy("GPU count"),
    "runtime": gettext_lazy("runtime"),
    "runtime_version": gettext_lazy("runtime version"),
    "checkpoint": gettext_lazy("checkpoint"),
    "checkpoint_revision": gettext_lazy("checkpoint revision"),
    "precision": gettext_lazy("precision"),
    "kv_dtype": gettext_lazy("KV cache dtype"),
    "request_count": gettext_lazy("request count"),
    "workload": gettext_lazy("input/output spec"),
    "host": gettext_lazy("host"),
}
# Factors whose value is never printed: only whether the two sides matched.
HIDDEN_FACTOR_VALUES = {"host"}

VERDICT_NAMES = {
    "client_bound": gettext_lazy("the load generator (client-bound)"),
    "kv_capacity": gettext_lazy("KV cache capacity"),
    "scheduler_cap": gettext_lazy("the scheduler cap (max_num_seqs)"),
    "token_budget": gettext_lazy("the token budget (max_num_batched_tokens)"),
    "saturated": gettext_lazy("saturation"),
    "underloaded": gettext_lazy("no limit (underloaded)"),
    "unclear": gettext_lazy("unclear"),
}


# ---------------------------------------------------------------------------------------------
# Formatting
# ---------------------------------------------------------------------------------------------


def num(value: float | None, decimals: int = 0) -> str:
    """A figure in the active language: grouped thousands, fixed decimals, '-' when missing."""
    if value is None:
        return "-"
    return formats.number_format(round(value, decimals), decimals, use_l10n=True,
                                 force_grouping=True)


def pct(value: float, decimals: int = 1) -> str:
    sign = "+" if value > 0 else ""
    return f"{sign}{num(value, decimals)}%"


def ratio(value: float) -> str:
    return f"{num(value, 2)}x"


def day(value: date | datetime | None) -> str:
    return formats.date_format(value, "DATE_FORMAT") if value else "-"


def seconds(ms: float | None) -> str:
    return "-" if ms is None else _("%(value)s s") % {"value": num(ms / 1000, 1)}


# ---------------------------------------------------------------------------------------------
# What the page receives
# ---------------------------------------------------------------------------------------------


@dataclass
class Side:
    """One measured point as the customer sees it."""

    label: str
    config: str
    output_throughput: float
    output_throughput_text: str
    median_e2el_text: str
    cpu_engine: bool


@dataclass
class Headline:
    baseline: Side
    candidate: Side
    ratio_text: str
    improvement_text: str
    latency_sentence: str
    controlled: bool
    held_fixed: list[tuple[str, str]]
    differing: list[tuple[str, str, str]]
    not_recorded: list[str]


@dataclass
class TableRow:
    comparison: str
    baseline: str
    result: str
    shows: str


@dataclass
class QueueSide:
    title: str
    verdict: str
    sentence: str


@dataclass
class ReferenceRow:
    source: str
    url: str
    recorded_on: str
    no_longer_listed_on: str | None
    reference_value: str
    local_value: str
    unit: str
    ratio_text: str
    matching: list[str]
    differing: list[str]
    not_recorded: list[str]
    cpu_engine: bool


@dataclass
class ReportContent:
    title: str
    language: str
    created_on: str
    cpu_engine: bool
    items: list[str]
    headline: Headline | None = None
    table: list[TableRow] | None = None
    curve_sentence: str | None = None
    curve_selected: str | None = None
    queue: list[QueueSide] | None = None
    scaling_sentence: str | None = None
    scaling_facts: list[tuple[str, str]] = field(default_factory=list)
    scaling_missing: str | None = None
    references: list[ReferenceRow] | None = None
    methodology: list[tuple[str, str]] = field(default_factory=list)
    metric_definitions: list[tuple[str, str]] = field(default_factory=list)
    limits: list[str] = field(default_factory=list)
    caveats: list[tuple[str, str]] = field(default_factory=list)
    # Everything the charts draw (json_script): raw numbers and translated axis titles.
    figures: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# Builder
# ---------------------------------------------------------------------------------------------


def cpu_label(cpu: bool) -> str:
    return _(" (CPU engine)") if cpu else ""


def _side(point: Point, label: str) -> Side:
    cpu = facts.is_cpu_engine(point)
    return Side(
        label=label + cpu_label(cpu),
        config=point.engine_label,
        output_throughput=point.output_throughput,
        output_throughput_text=num(point.output_throughput),
        median_e2el_text=seconds(point.median_e2el_ms),
        cpu_engine=cpu,
    )


def _factor_value(name: str, value: str | None) -> str:
    if value is None:
        return "-"
    if name == "checkpoint":
        return facts.public_model_name(value) or "-"
    return value


def build_report_content(report: Report) -> ReportContent:
    baseline, candidate = report.baseline_point, report.candidate_point
    sources = [baseline, candidate]
    if report.shows(Item.NODE_SCALING) and report.scaling_point:
        sources += [report.scaling_point, report.scaling_reference]
    content = ReportContent(
        title=report.title,
        language=report.language,
        created_on=day(report.created_at),
        cpu_engine=any(facts.is_cpu_engine(p) for p in sources if p is not None),
        items=[item for item in Item.values if report.shows(item)],
        figures={"labels": _chart_labels()},
    )
    comparison = compare(
        Measured(facts=facts.run_facts(baseline), figures=facts.figures(baseline)),
        Measured(facts=facts.run_facts(candidate), figures=facts.figures(candidate)),
    )
    if report.shows(Item.HEADLINE):
        content.headline = _headline(baseline, candidate, comparison)
    if report.shows(Item.COMPARISON_TABLE):
        content.table = _table(baseline, candidate, comparison)
    if report.shows(Item.CURVES):
        _curve(content, report)
    if report.shows(Item.QUEUE_EVIDENCE):
        _queue(content, baseline, candidate)
    if report.shows(Item.NODE_SCALING):
        _scaling(content, report)
    if report.shows(Item.REFERENCES):
        content.references = _references(report, candidate)
    _methodology(content, report)
    content.caveats = [(c.kind, c.text) for c in report.caveats.all()]
    return content


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
    }


def _headline(baseline: Point, candidate: Point, comparison) -> Headline:
    rows = {row.name: row for row in comparison.factors}
    held = [
        (str(FACTOR_LABELS[name]),
         "" if name in HIDDEN_FACTOR_VALUES else _factor_value(name, row.baseline))
        for name, row in rows.items() if row.status == "match"
    ]
    differing = [
        (str(FACTOR_LABELS[name]),
         *(("", "") if name in HIDDEN_FACTOR_VALUES
           else (_factor_value(name, row.baseline), _factor_value(name, row.candidate))))
        for name, row in rows.items() if row.status == "differ"
    ]
    not_recorded = [str(FACTOR_LABELS[n]) for n, row in rows.items() if row.status == "unknown"]
    if comparison.latency_change_pct < 0:
        latency = _("Median request latency fell from %(before)s to %(after)s.")
    else:
        latency = _("Median request latency rose from %(before)s to %(after)s.")
    return Headline(
        baseline=_side(baseline, _("Before")),
        candidate=_side(candidate, _("After")),
        ratio_text=ratio(comparison.ratio),
        improvement_text=pct(comparison.improvement_pct),
        latency_sentence=latency % {
            "before": seconds(comparison.baseline_median_e2el_ms),
            "after": seconds(comparison.candidate_median_e2el_ms),
        },
        controlled=comparison.controlled,
        held_fixed=held,
        differing=differing,
        not_recorded=not_recorded,
    )


def _queue_value(point: Point, name: str) -> float | None:
    value = (point.queue or {}).get(name)
    return None if value is None else float(value)


def _kv_text(point: Point) -> str:
    value = _queue_value(point, "peak_kv_usage")
    return "-" if value is None else f"{num(value * 100)}%"


def _table(baseline: Point, candidate: Point, comparison) -> list[TableRow]:
    cpu = cpu_label(facts.is_cpu_engine(baseline) or facts.is_cpu_engine(candidate))
    if comparison.controlled:
        shows = _("Only the engine settings changed (%(before)s to %(after)s); every fixed "
                  "factor was recorded on both sides and matched.")
    else:
        shows = _("Engine settings changed (%(before)s to %(after)s), but the comparison is not "
                  "controlled: see what differs or was not recorded.")
    rows = [
        TableRow(
            comparison=_("Output tokens/s") + cpu,
            baseline=num(comparison.baseline_throughput),
            result=num(comparison.candidate_throughput),
            shows=shows % {"before": baseline.engine_label, "after": candidate.engine_label}
            + " " + _("Ratio %(ratio)s (%(change)s).") % {
                "ratio": ratio(comparison.ratio), "change": pct(comparison.improvement_pct)},
        ),
        TableRow(
            comparison=_("Median request latency") + cpu,
            baseline=seconds(comparison.baseline_median_e2el_ms),
            result=seconds(comparison.candidate_median_e2el_ms),
            shows=_("Change %(change)s: more throughput did not come from making requests "
                    "wait longer.") % {"change": pct(comparison.latency_change_pct)}
            if comparison.latency_change_pct <= 0
            else _("Change %(change)s: the extra throughput costs request latency.")
            % {"change": pct(comparison.latency_change_pct)},
        ),
    ]
    b_run, c_run = _queue_value(baseline, "mean_running"), _queue_value(candidate, "mean_running")
    b_wait, c_wait = _queue_value(baseline, "mean_waiting"), _queue_value(candidate, "mean_waiting")
    if b_run is not None and c_run is not None:
        rows.append(TableRow(
            comparison=_("Requests running (engine mean)"),
            baseline=num(b_run, 1),
            result=num(c_run, 1),
            shows=_("How many of the queued requests the engine admitted at once."),
        ))
    if b_wait is not None and c_wait is not None:
        rows.append(TableRow(
            comparison=_("Requests waiting (engine mean)"),
            baseline=num(b_wait, 1),
            result=num(c_wait, 1),
            shows=_("The load that arrived but was not admitted."),
        ))
    if _queue_value(baseline, "peak_kv_usage") is not None:
        rows.append(TableRow(
            comparison=_("Peak KV cache use"),
            baseline=_kv_text(baseline),
            result=_kv_text(candidate),
            shows=_("How close the engine came to its memory limit."),
        ))
    return rows


def _benchmark_points(report: Report) -> list[Point]:
    """The sweep's single-replica points (a node run is its own section, not a load level)."""
    return list(report.benchmark.points.filter(replicas=1).defer("provenance", "per_replica"))


def _curve(content: ReportContent, report: Report) -> None:
    points = _benchmark_points(report)
    by_key = {p.key: p for p in points}
    selected = report.candidate_point if report.candidate_point.key in by_key else None
    stored = (OperatingPoint.objects.filter(benchmark=report.benchmark, is_current=True)
              .select_related("point").first())
    if stored is not None and stored.point.key in by_key:
        selected, method = by_key[stored.point.key], stored.method
        evidence = {**stored.evidence, **stored.params}
        reason = stored.reason
    else:
        # The knee of the candidate's own engine config: its load levels, repeats collapsed.
        same_config = [p for p in points if p.engine_label == report.candidate_point.engine_label]
        try:
            selection = knee(lowest_repeats([facts.figures(p) for p in same_config]))
        except AnalysisError:
            selection = None
        method, evidence, reason = None, {}, ""
        if selection is not None:
            selected, method, evidence = by_key[selection.chosen_key], "knee", selection.evidence
    content.curve_sentence = _tradeoff_sentence(method, evidence, reason, by_key)
    figure = charts.throughput_figure(points)
    traces = []
    for trace in figure["traces"]:
        traces.append({
            "name": trace["name"],
            "x": [None if v is None else v / 1000 for v in trace["x"]["median_e2el_ms"]],
            "y": trace["y"],
            "valid": trace["valid"],
        })
    content.figures["curve"] = {"traces": traces, "selected": None}
    if selected is not None:
        content.curve_selected = _(
            "%(config)s at %(load)s: %(tps)s output tokens/s, median latency %(lat)s"
        ) % {"config": selected.engine_label, "load": selected.load_label,
             "tps": num(selected.output_throughput), "lat": seconds(selected.median_e2el_ms)}
        content.curve_selected += cpu_label(facts.is_cpu_engine(report.candidate_point))
        content.figures["curve"]["selected"] = {
            "x": None if selected.median_e2el_ms is None else selected.median_e2el_ms / 1000,
            "y": selected.output_throughput,
            "name": selected.engine_label,
        }


def _tradeoff_sentence(method: str | None, evidence: dict, reason: str,
                       by_key: dict[str, Point]) -> str:
    """The trade-off at the operating point, built from the selection's numbers."""
    if method == "knee" and evidence.get("knee_found") and evidence.get("to_key") in by_key:
        return _(
            "The operating point is the last load level before the knee: going on to "
            "%(load)s added %(gain)s output tokens/s while median latency rose %(growth)s."
        ) % {"load": by_key[evidence["to_key"]].load_label,
             "gain": pct(evidence["throughput_gain_pct"]),
             "growth": pct(evidence["latency_growth_pct"])}
    if method == "knee":
        return _("No knee within the measured load levels: the highest-throughput point is "
                 "shown as the operating point.")
    if method == "slo":
        return _("The operating point is the highest throughput within the latency limits "
                 "(%(limits)s).") % {"limits": ", ".join(
                     f"{name} <= {num(value)} ms"
                     for name, value in (evidence.get("limits") or {}).items()) or "-"}
    if method == "pareto":
        return _("The operating point is the highest throughput per GPU on the Pareto frontier "
                 "at the per-user speed target.")
    if method == "override":
        return _("The operating point was chosen by an engineer: %(reason)s") % {"reason": reason}
    return _("Too few load levels to find a knee; the point marked is the result shown in the "
             "headline.")


def _queue_sentence(point: Point) -> tuple[str, str]:
    try:
        kind = verdict(facts.figures(point)).kind
        name = str(VERDICT_NAMES[kind])
    except AnalysisError:
        name = _("not determined (no engine samples)")
    sentence = _(
        "On average %(running)s requests ran while %(waiting)s waited (peak %(peak_waiting)s "
        "waiting); peak KV cache use %(kv)s."
    ) % {
        "running": num(_queue_value(point, "mean_running"), 1),
        "waiting": num(_queue_value(point, "mean_waiting"), 1),
        "peak_waiting": num(_queue_value(point, "peak_waiting")),
        "kv": _kv_text(point),
    }
    return name, sentence


def _queue(content: ReportContent, baseline: Point, candidate: Point) -> None:
    blobs = dict(PointData.objects.filter(point__in=[baseline, candidate])
                 .values_list("point_id", "samples"))
    sides, figures = [], []
    for point, label in ((baseline, _("Before")), (candidate, _("After"))):
        title = f"{label}: {point.engine_label}{cpu_label(facts.is_cpu_engine(point))}"
        name, sentence = _queue_sentence(point)
        sides.append(QueueSide(title=title, verdict=name, sentence=sentence))
        blob = blobs.get(point.pk)
        figures.append({"title": title,
                        "replicas": charts.samples_figure(blob)["replicas"] if blob else []})
    content.queue = sides
    content.figures["queue"] = figures


def scaling_result(node: Point, reference: Point):
    """scaling() on stored rows: the runner's node throughput over the one common window."""
    result = facts.light_result(node)
    if node.window_start is None or node.window_end is None:
        raise AnalysisError("the node run has no common window recorded")
    return scaling(
        node_throughput=node.output_throughput,
        n_replicas=node.replicas,
        gpus_per_replica=result.engine_config.tensor_parallel_size,
        window_seconds=node.window_end - node.window_start,
        workload=WorkloadShape(
            input_tokens_min=result.workload.input_tokens_min,
            input_tokens_max=result.workload.input_tokens_max,
            output_tokens=result.workload.output_tokens,
        ),
        per_replica=replica_figures_from_point_result(result),
        reference=facts.figures(reference),
    )


def scaling_problem(node: Point, reference: Point) -> str | None:
    """Why these two points cannot make a scaling section (for the build form), or None."""
    if node.replicas < 2:
        return "The node run must have at least two replicas."
    try:
        scaling_result(node, reference)
    except AnalysisError as exc:
        return str(exc)
    return None


def _scaling(content: ReportContent, report: Report) -> None:
    node, reference = report.scaling_point, report.scaling_reference
    if node is None or reference is None:
        content.scaling_missing = _("No node run was chosen for this report.")
        return
    try:
        outcome = scaling_result(node, reference)
    except AnalysisError:
        content.scaling_missing = _("The chosen node run cannot be compared with its reference.")
        return
    cpu = cpu_label(facts.is_cpu_engine(node))
    content.scaling_sentence = _(
        "%(n)s replicas on %(gpus)s devices: %(node)s output tokens/s over one common window "
        "of %(window)s s (first request sent to last completion), %(per_gpu)s per device; "
        "%(eff)s of %(n)s x the single-replica reference (%(ref)s).%(cpu)s"
    ) % {"n": outcome.n_replicas, "gpus": outcome.total_gpus,
         "node": num(outcome.node_throughput), "window": num(outcome.window_seconds, 1),
         "per_gpu": num(outcome.throughput_per_gpu), "eff": f"{num(outcome.efficiency * 100, 1)}%",
         "ref": num(outcome.reference_throughput), "cpu": cpu}
    valid = outcome.all_replicas_valid
    content.scaling_facts = [
        (_("Node output tokens/s"), num(outcome.node_throughput)),
        (_("Common window"), _("%(value)s s") % {"value": num(outcome.window_seconds, 1)}),
        (_("Ideal (N x reference)"), num(outcome.ideal_throughput)),
        (_("Scaling efficiency"), f"{num(outcome.efficiency * 100, 1)}%"),
        (_("Every replica completed every request"),
         _("yes") if valid else (_("no") if valid is False else _("not recorded"))),
    ]
    content.figures["scaling"] = {
        "replicas": [r.replica for r in outcome.per_replica],
        "throughput": [r.output_throughput for r in outcome.per_replica],
        "reference": outcome.reference_throughput,
        "node": outcome.node_throughput,
    }


SPEC_RE = re.compile(r"^\s*(\d+)(?:\s*-\s*(\d+))?\s*in\s*/\s*(\d+)\s*out\s*$", re.IGNORECASE)


def reference_from_row(row: ExternalReference) -> Reference | None:
    """An ExternalReference as the analysis input; None when its unit cannot be compared."""
    if row.unit not in REFERENCE_UNITS:
        return None
    match = SPEC_RE.match(row.workload_spec)
    shape = None
    if match:
        low, high, out = match.groups()
        shape = WorkloadShape(input_tokens_min=int(low), input_tokens_max=int(high or low),
                              output_tokens=int(out))
    return Reference(
        name=row.source, value=row.value, unit=row.unit, recorded_on=row.recorded_on,
        no_longer_listed_on=row.no_longer_listed_on, gpu_sku=row.gpu_name,
        gpu_count=row.gpu_count, runtime=row.runtime or None,
        runtime_version=row.runtime_version or None, workload=shape, source_url=row.url,
    )


def _references(report: Report, candidate: Point) -> list[ReferenceRow]:
    local = Measured(facts=facts.run_facts(candidate), figures=facts.figures(candidate))
    rows = []
    for row in report.references.all():
        reference = reference_from_row(row)
        if reference is None:
            continue
        result = compare_reference(local, reference)
        labels = {status: [str(FACTOR_LABELS[f.name]) for f in result.factors
                           if f.status == status] for status in ("match", "differ", "unknown")}
        unit = (_("output tokens/s per GPU") if row.unit == UNIT_OUTPUT_TPS_PER_GPU
                else _("output tokens/s"))
        rows.append(ReferenceRow(
            source=row.source, url=row.url, recorded_on=day(row.recorded_on),
            no_longer_listed_on=day(row.no_longer_listed_on) if row.no_longer_listed_on else None,
            reference_value=num(result.reference_value), local_value=num(result.local_value),
            unit=unit, ratio_text=ratio(result.ratio), matching=labels["match"],
            differing=labels["differ"], not_recorded=labels["unknown"],
            cpu_engine=facts.is_cpu_engine(candidate),
        ))
    return rows


def _hardware_text(prov: dict[str, Any], cpu: bool) -> str:
    if prov["gpu_name"]:
        text = f"{prov['gpu_count']} x {prov['gpu_name']}"
        if prov["gpu_memory_mib"]:
            text += _(", %(gib)s GiB each") % {"gib": num(prov["gpu_memory_mib"] / 1024)}
        if prov["driver_version"] or prov["cuda_version"]:
            text += _(", driver %(driver)s, CUDA %(cuda)s") % {
                "driver": prov["driver_version"] or "-", "cuda": prov["cuda_version"] or "-"}
    else:
        text = _("CPU only") + (f" ({prov['cpu_model']})" if prov["cpu_model"] else "")
    if cpu:
        text += " - " + _("a CPU engine stands in for the customer's GPU: the shape of the "
                          "results is real, the absolute numbers are not GPU numbers")
    return text


def _methodology(content: ReportContent, report: Report) -> None:
    candidate = report.candidate_point
    prov = facts.public_provenance(candidate)
    cpu = facts.is_cpu_engine(candidate)
    workload = candidate.workload or {}
    load = candidate.load or {}
    runtime = report.benchmark.runtime
    software = _("vLLM %(version)s") % {"version": prov["engine_version"] or "-"}
    image = prov["image"] or (runtime.image if runtime else "")
    if image:
        software += _(", image %(image)s") % {"image": image}
    if runtime and runtime.digest:
        software += f" ({runtime.digest})"
    model = prov["model"] or "-"
    if prov["model_is_local"]:
        model += " " + _("(local directory)")
    spec = _("%(min)s-%(max)s input tokens, %(out)s output tokens, temperature %(temp)s") % {
        "min": workload.get("input_tokens_min"), "max": workload.get("input_tokens_max"),
        "out": workload.get("output_tokens"), "temp": num(workload.get("temperature", 0), 1)}
    if workload.get("ignore_eos"):
        spec += _("; every response must reach the output limit (ignore_eos)")
    revision = prov["revision"] or _("no revision (local)")
    if not prov["recorded"]:
        content.methodology.append((_("Provenance"), _("not recorded (imported result)")))
    content.methodology += [
        (_("Hardware"), _hardware_text(prov, cpu)),
        (_("Software"), software),
        (_("Model and revision"), f"{model} @ {revision}"),
        (_("Precision"), prov["precision"] or _("not recorded")),
        (_("KV cache dtype"), prov["kv_dtype"] or _("auto (model dtype)")),
        (_("Requests per point"), _("%(count)s, load %(load)s") % {
            "count": num(load.get("num_requests")), "load": candidate.load_label}),
        (_("Input/output spec"), spec),
        (_("Repeats"), _repeats_text(candidate)),
    ]
    content.metric_definitions = [
        (_("Output tokens/s"), _("as vllm bench serve computes it: completed output tokens "
                                 "divided by the benchmark window (its start to the last "
                                 "request's end); output tokens come from the server's usage "
                                 "report, failed requests count in the window but not in the "
                                 "tokens.")),
        (_("Request latency"), _("as vllm bench serve computes it: last streamed chunk minus the "
                                 "moment the request was sent (E2EL), median over the requests "
                                 "of a point.")),
        (_("Running / waiting"), _("the engine's own gauges (vllm:num_requests_running and "
                                   "vllm:num_requests_waiting) sampled during the point.")),
        (_("KV cache use"), _("vllm:kv_cache_usage_perc sampled during the point.")),
    ]
    content.limits = [
        _("A local improvement over an initial configuration is not a claim of superiority over "
          "a tuned baseline."),
        _("A fixed output length validates generation work, not answer quality."),
        _("p95/p99 latency, network overhead, failures and domain quality remain production "
          "acceptance criteria; longer contexts or interactive latency targets need their own "
          "evaluation."),
    ]


def _repeats_text(point: Point) -> str:
    repeats = list(
        Point.objects.filter(benchmark_id=point.benchmark_id, engine_label=point.engine_label,
                             offered_concurrency=point.offered_concurrency,
                             replicas=point.replicas, valid=True)
        .order_by("repeat").values_list("output_throughput", flat=True)
    )
    if not repeats:
        return _("this point is not a valid run; no capacity estimate rests on it")
    estimate = capacity_estimate(repeats)
    text = ngettext(
        "%(count)s valid repeat of this setting",
        "%(count)s valid repeats of this setting",
        estimate.repeats,
    ) % {"count": estimate.repeats}
    return text + _("; the capacity estimate uses the lowest: %(value)s output tokens/s "
                    "(spread %(spread)s)") % {
        "value": num(estimate.capacity), "spread": f"{num(estimate.relative_spread_pct, 1)}%"}
