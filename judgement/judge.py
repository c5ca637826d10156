"""The judgement layer's one entry point: stored rows in, judgements out.

Run page, comparison, reference and scaling pages, reports and exports call this module; none
of them reads figures off a row or calls analysis itself (import-linter holds reports
and the page views to it). The names a caller needs from the analysis (AnalysisError, the
result types, unit constants) are re-exported here so that holds without exceptions.

The logic (knee, SLO, Pareto, verdicts, comparisons, scaling) lives in analysis as
pure functions. This module only turns Point / ExternalReference rows into the analysis inputs
(through analysis.convert, so the conversion is the one the unit tests cover), calls those
functions, and turns an AnalysisError into a message the page shows instead of a number.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, cast

from django.conf import settings as django_settings
from django.db import transaction
from django.utils import timezone

from analysis import (
    AnalysisError,
    cost,
    hardware,
    repeats,
    scaling,
    selection,
    sentences,
    verdicts,
)
from analysis import compare as compare_mod
from analysis import parity as parity_mod
from analysis import types as analysis_types
from analysis.convert import (
    from_point_result,
    replica_figures_from_point_result,
    run_facts_from_point_result,
)
from analysis.cost import PRICE_MAX_AGE_DAYS, GpuHourPrice, PointCost, Worth
from analysis.types import (
    UNIT_OUTPUT_TPS_PER_GPU,
    CapacityEstimate,
    LatencyStatistic,
    Measured,
    ParetoPoint,
    PointFigures,
    Reference,
    ReferenceComparison,
    ScalingResult,
    Selection,
    SweepSummary,
    Verdict,
    WorkloadShape,
)
from analysis.types import (
    Comparison as ComparisonResult,
)
from benchmarks import storage
from benchmarks.models import (
    Benchmark,
    Comparison,
    ExternalReference,
    Node,
    OperatingPoint,
    Point,
    PointData,
)
from benchmarks.points import point_to_result, stored_requests
from runner.schema.records import RequestRecord
from runner.schema.result import PointResult
from runner.schema.samples import QueueSummary

# How the run page and reports write a percentage: one rule for every one of them (the
# sentences use it too), so a +0.38% step never reads as "+0%".
pct = sentences.pct
percent = sentences.percent
pct_decimals = sentences.pct_decimals

# The selection form's defaults and the latency vocabulary, as the rules define them.
DEFAULT_LATENCY_GROWTH_PCT = selection.DEFAULT_LATENCY_GROWTH_PCT
DEFAULT_THROUGHPUT_GAIN_PCT = selection.DEFAULT_THROUGHPUT_GAIN_PCT
LATENCY_FIELDS = analysis_types.LATENCY_FIELDS
LATENCY_LABELS = analysis_types.LATENCY_LABELS
REFERENCE_UNITS = analysis_types.REFERENCE_UNITS

# --------------------------------------------------------------------------------------------
# Rows -> analysis inputs
# --------------------------------------------------------------------------------------------


def point_result(point: Point) -> PointResult:
    """The point as runner.schema.result.PointResult without its per-request records and samples.

    The judgement layer reads only aggregates, so the compressed arrays in PointData stay on
    disk; everything else is the stored row, validated by the same schema the runner wrote.
    """
    return point_to_result(point, records=False)


def figures(point: Point) -> PointFigures:
    return from_point_result(point_result(point))


def measured(point: Point) -> Measured:
    result = point_result(point)
    return Measured(facts=run_facts_from_point_result(result), figures=from_point_result(result))


SPEC_RE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+))?\s*in\s*/\s*(\d+)\s*out\s*$", re.IGNORECASE)


def parse_spec(text: str) -> WorkloadShape | None:
    """'1000 in / 1000 out' or '63-66 in / 256 out' (WorkloadShape.label's own format)."""
    match = SPEC_RE.match(text or "")
    if not match:
        return None
    low, high, out = match.groups()
    try:
        return WorkloadShape(
            input_tokens_min=int(low), input_tokens_max=int(high or low), output_tokens=int(out)
        )
    except AnalysisError:
        return None


def reference(ref: ExternalReference) -> Reference:
    """An ExternalReference row as the analysis input; what the row does not state is None."""
    return Reference(
        name=ref.source,
        value=ref.value,
        unit=ref.unit,
        recorded_on=ref.recorded_on,
        no_longer_listed_on=ref.no_longer_listed_on,
        gpu_sku=ref.gpu_name or None,
        gpu_count=ref.gpu_count or None,
        runtime=ref.runtime or None,
        runtime_version=ref.runtime_version or None,
        checkpoint=ref.checkpoint or None,
        checkpoint_revision=ref.checkpoint_revision or None,
        precision=ref.precision or None,
        kv_dtype=ref.kv_dtype or None,
        request_count=ref.request_count,
        workload=parse_spec(ref.workload_spec),
        host=ref.host or None,
        latency_ms=ref.latency_ms,
        # The row's constraint and Reference itself hold it to LATENCY_STATISTICS.
        latency_statistic=cast(LatencyStatistic | None, ref.latency_statistic or None),
        source_url=ref.url or None,
    )


def load_points(benchmark: Benchmark) -> list[Point]:
    return list(benchmark.points.all())


def figures_by_key(points: Sequence[Point]) -> tuple[dict[str, PointFigures], dict[str, str]]:
    """Analysis inputs of the points, and the points that cannot be one (key -> why)."""
    figs, problems = {}, {}
    for p in points:
        try:
            figs[p.key] = figures(p)
        except (AnalysisError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
            problems[p.key] = str(exc)
    return figs, problems


def replica_figures(point: Point) -> tuple[Any, ...]:
    return replica_figures_from_point_result(point_result(point))


# --------------------------------------------------------------------------------------------
# Operating point
# --------------------------------------------------------------------------------------------


def candidates(figs: Sequence[PointFigures]) -> list[PointFigures]:
    """What knee / SLO / Pareto choose among: one point per setting, the lowest valid repeat,
    on the sweep's own ladder (the fewest replicas). A node run beside it is scaled against a
    reference in its own section; as a load level of the same curve it would be a 1-GPU
    throughput set against an 8-GPU one."""
    if not figs:
        return []
    fewest = min(f.replicas for f in figs)
    return repeats.lowest_repeats([f for f in figs if f.replicas == fewest])


def select(method: str, params: Mapping[str, Any], figs: Sequence[PointFigures]) -> Selection:
    """Run one selection method; raises AnalysisError with the reason when it cannot."""
    if method == OperatingPoint.Method.KNEE:
        return selection.knee(
            candidates(figs),
            throughput_gain_pct=params.get(
                "throughput_gain_pct", selection.DEFAULT_THROUGHPUT_GAIN_PCT
            ),
            latency_growth_pct=params.get(
                "latency_growth_pct", selection.DEFAULT_LATENCY_GROWTH_PCT
            ),
        )
    if method == OperatingPoint.Method.SLO:
        return selection.slo(candidates(figs), params.get("limits", {}))
    if method == OperatingPoint.Method.PARETO:
        return selection.pareto_choice(candidates(figs), params["min_tokens_per_user"])
    if method == OperatingPoint.Method.OVERRIDE:
        return selection.override(figs, params["chosen_key"], params.get("reason", ""))
    raise AnalysisError(f"unknown selection method {method!r}")


def current_operating_point(benchmark: Benchmark) -> OperatingPoint | None:
    return (
        OperatingPoint.objects.filter(benchmark=benchmark, is_current=True)
        .select_related("point", "chosen_by")
        .first()
    )


@transaction.atomic
def save_operating_point(
    benchmark: Benchmark, chosen: Selection, points: Sequence[Point], user: Any = None
) -> OperatingPoint:
    """Store a selection as the benchmark's current one; earlier ones stay as history."""
    point = next(p for p in points if p.key == chosen.chosen_key)
    previous = current_operating_point(benchmark)
    params = dict(chosen.params)
    if chosen.method == "override" and previous is not None:
        params.setdefault("replaces_method", previous.method)
        params.setdefault("replaces_key", previous.point.key)
    OperatingPoint.objects.filter(benchmark=benchmark, is_current=True).update(is_current=False)
    return OperatingPoint.objects.create(
        benchmark=benchmark,
        method=chosen.method,
        params=params,
        point=point,
        sentence=chosen.sentence,
        evidence=chosen.evidence,
        reason=chosen.reason,
        chosen_by=user if getattr(user, "is_authenticated", False) else None,
    )


@dataclass(frozen=True)
class Shown:
    """What the run page shows as the operating point: stored, or computed by default."""

    key: str | None
    method: str
    sentence: str
    reason: str
    params: dict[str, Any]
    evidence: dict[str, Any]
    stored: OperatingPoint | None
    error: str | None


def _stored_sentence(stored: OperatingPoint) -> sentences.Sentence:
    """A saved choice's sentence, rebuilt from its stored params and evidence so it reads as a
    fresh one does; a row whose evidence predates a field the sentence needs keeps its text."""
    try:
        return sentences.operating_point_sentence(
            stored.method, stored.params, stored.evidence, stored.reason)
    except KeyError:
        return sentences.Sentence("%(text)s", {"text": stored.sentence}, translatable=False)


def operating_point_sentence(shown: Shown) -> sentences.Sentence:
    """The sentence the run page shows for this operating point, as template and values, so a
    report can translate the template and say the same thing. Only for a shown point
    (shown.error is None)."""
    if shown.stored is not None:
        return _stored_sentence(shown.stored)
    return sentences.operating_point_sentence(shown.method, shown.params, shown.evidence,
                                              shown.reason)


def shown_operating_point(benchmark: Benchmark, figs: Sequence[PointFigures]) -> Shown:
    stored = current_operating_point(benchmark)
    if stored is not None:
        return Shown(
            key=stored.point.key,
            method=stored.method,
            sentence=str(_stored_sentence(stored)),
            reason=stored.reason,
            params=stored.params,
            evidence=stored.evidence,
            stored=stored,
            error=None,
        )
    try:
        chosen = select(OperatingPoint.Method.KNEE, {}, figs)
    except AnalysisError as exc:
        return Shown(None, "knee", "", "", {}, {}, None, str(exc))
    return Shown(
        chosen.chosen_key,
        chosen.method,
        chosen.sentence,
        chosen.reason,
        chosen.params,
        chosen.evidence,
        None,
        None,
    )


# --------------------------------------------------------------------------------------------
# Verdicts, sweep change, repeats, frontier
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VerdictRows:
    by_key: dict[str, Verdict]
    missing: dict[str, str]  # key -> why no verdict
    error: str | None


def _has_samples(f: PointFigures) -> bool:
    return f.client_saturated or (f.queue_samples > 0 and f.mean_running is not None)


def verdict_rows(figs: Sequence[PointFigures]) -> VerdictRows:
    """A verdict per point. Points without engine samples (an imported file) get none and say
    why; the others are judged ladder by ladder (verdicts.ladder_of: config, replica count,
    workload spec, repeat), each point against the lower load level of its own ladder.

    A ladder that cannot be judged (two of its points at one load level) loses only its own
    verdicts, with the reason, so one odd pair never blanks the whole page.
    """
    judged = [f for f in figs if _has_samples(f)]
    missing = {
        f.key: "no engine samples (running/waiting from /metrics); a verdict needs them"
        for f in figs
        if not _has_samples(f)
    }
    ladders: dict[Any, list[PointFigures]] = {}
    for f in judged:
        ladders.setdefault(verdicts.ladder_of(f), []).append(f)
    by_key: dict[str, Verdict] = {}
    errors = []
    for ladder in ladders.values():
        try:
            by_key.update(verdicts.verdicts_for_sweep(ladder))
        except AnalysisError as exc:
            missing.update({f.key: str(exc) for f in ladder})
            errors.append(str(exc))
    return VerdictRows(by_key, missing, "; ".join(errors) or None)


def sweep_change(
    found: VerdictRows, figs: Sequence[PointFigures]
) -> tuple[SweepSummary | None, str | None]:
    """What the sweep changed, or why it cannot be said: the page never shows an empty section.

    A config none of whose points has a verdict is named with the reason (its first point's),
    so a sweep of two configs, one of them imported without engine samples, does not read as a
    one-config sweep.
    """
    missing: dict[str, str] = {}
    for f in figs:
        if f.key in found.missing:
            missing.setdefault(f.config_label, found.missing[f.key])
    try:
        return verdicts.summarize_sweep_change(list(found.by_key.values()), missing), None
    except AnalysisError as exc:
        return None, str(exc)


def cause(verdict: Verdict) -> sentences.Sentence:
    """A point's cause in a clause, with its figure (verdicts.cause): a report's binding limit."""
    return verdicts.cause(verdict)


def step_story(before: Verdict, after: Verdict) -> sentences.Sentence:
    """The step from one judged point to another, told as the sweep's story tells its steps:
    what a report's queue evidence says of its before and after."""
    return verdicts.step_between(before, after).story


def ladder_diagnoses(found: VerdictRows) -> tuple[str, ...]:
    """Each engine config's diagnosis over its load ladder (verdicts.diagnose_ladders)."""
    return verdicts.diagnose_ladders(list(found.by_key.values()))


@dataclass(frozen=True)
class EvidenceItem:
    """One number beside a verdict. kind: "number", "percent" (a level), "change" (signed),
    "seconds", or "at_most_seconds" (a histogram bucket's bound: the value is at most this),
    for the template's formatting filter."""

    label: str
    value: float
    kind: str


# Evidence shown next to a verdict, in reading order: (evidence key, label, kind, the
# QueueSummary field whose node rule says whose figure it is on a node run, or None for a
# per-replica engine setting, or "" for a figure of the whole point).
EVIDENCE_ITEMS: tuple[tuple[str, str, str, str | None], ...] = (
    ("mean_running", "mean running", "number", "mean_running"),
    ("peak_running", "peak running", "number", "peak_running"),
    ("max_num_seqs", "max_num_seqs", "number", None),
    ("at_cap_share", "at max_num_seqs while requests waited", "percent",
     "running_while_waiting_s"),
    ("mean_waiting", "mean waiting", "number", "mean_waiting"),
    ("peak_waiting", "peak waiting", "number", "peak_waiting"),
    ("peak_kv_usage", "peak KV", "percent", "peak_kv_usage"),
    ("mean_waiting_capacity", "waiting for capacity", "number", "mean_waiting_capacity"),
    ("mean_waiting_deferred", "waiting deferred", "number", "mean_waiting_deferred"),
    ("mean_queue_time_s", "mean queue time", "seconds", "mean_queue_time_s"),
    ("queue_time_p50_s", "p50 queue time", "at_most_seconds", "queue_time_p50_s"),
    ("queue_time_p90_s", "p90 queue time", "at_most_seconds", "queue_time_p90_s"),
    ("queue_time_p99_s", "p99 queue time", "at_most_seconds", "queue_time_p99_s"),
    ("preemptions", "preemptions", "number", "preemptions"),
    ("mean_tokens_per_step", "tokens/step", "number", "mean_tokens_per_step"),
    ("max_num_batched_tokens", "token budget", "number", None),
    ("throughput_gain_pct", "gain vs previous level", "change", ""),
    ("running_growth_pct", "running growth vs previous level", "change", ""),
    ("output_elasticity", "output elasticity vs running", "number", ""),
    ("latency_growth_pct", "median latency growth", "change", ""),
    ("queue_samples", "samples", "number", "samples"),
    ("queue_gap_fraction", "longest unsampled stretch", "percent", "max_gap_s"),
    ("prefix_cache_hit_rate", "prefix-cache hits", "percent", "prefix_cache_hits"),
    ("memory_bandwidth_pct", "memory-bandwidth peak used", "percent", "read_bytes_per_gpu_s"),
    ("compute_pct", "compute peak used", "percent", "flops_per_gpu_s"),
)

# Fractions (0-1) in the evidence that the page reads in percent.
EVIDENCE_FRACTIONS = frozenset({"peak_kv_usage", "queue_gap_fraction", "prefix_cache_hit_rate",
                                "at_cap_share"})

# Whose figure a node run's evidence is, by QueueSummary's node rule.
NODE_SCOPES = {"sum": "all {n} replicas", "max": "highest replica", "mean": "mean of replicas",
               "histogram": "all {n} replicas, each at its own cap"}


def _evidence_label(label: str, field: str | None, replicas: int) -> str:
    if replicas <= 1 or field == "":
        return label
    if field is None:
        return f"{label} (per replica)"
    return f"{label} ({NODE_SCOPES[QueueSummary.node_rule(field)].format(n=replicas)})"


def evidence_items(verdict: Verdict | None) -> list[EvidenceItem]:
    """The verdict's evidence numbers, labelled; a node run's labels say whose figure each is
    (the sum over its replicas, the highest replica's, or per replica)."""
    if verdict is None:
        return []
    ev = verdict.evidence
    replicas = int(ev.get("replicas") or 1)
    return [
        EvidenceItem(
            label=_evidence_label(label, field, replicas),
            value=ev[name] * (100.0 if name in EVIDENCE_FRACTIONS else 1.0),
            kind=kind,
        )
        for name, label, kind, field in EVIDENCE_ITEMS
        if ev.get(name) is not None
    ]


@dataclass(frozen=True)
class Share:
    """One "% of peak" cell: the share (None when there is none), the achieved rate as text,
    a short word for the cell when there is no share, and the full why or the peak's source."""

    pct: float | None
    achieved: str | None
    short: str | None
    detail: str


@dataclass(frozen=True)
class EngineWork:
    """What the run page shows beside a point's throughput: its GPUs' distance to their peaks
    (per GPU) and the share of prompt tokens the prefix cache held."""

    bandwidth: Share
    compute: Share
    prefix_cache_hit_rate: float | None
    prefix_cache_note: str | None
    cpu_engine: bool = False

    @property
    def has_gpu_figure(self) -> bool:
        """A share of a peak, or a GPU's own estimate: what the two % of peak columns show. A
        CPU engine has neither a GPU peak nor a GPU."""
        return any(share.pct is not None or (share.achieved is not None and not self.cpu_engine)
                   for share in (self.bandwidth, self.compute))


def _rate_text(value: float | None, unit: str, cpu_engine: bool) -> str | None:
    """1.23e12 B/s -> "1.23 TB/s per GPU"; smaller rates in G, as a CPU engine's are, which
    are the engine's own (it has no GPU)."""
    if value is None:
        return None
    scale, prefix = (1e12, "T") if value >= 1e12 else (1e9, "G")
    return f"{value / scale:.3g} {prefix}{unit} {'on the CPU' if cpu_engine else 'per GPU'}"


def _share(pct: float | None, achieved: str | None, peak: hardware.Peak | None, peak_unit: str,
           note: str | None, sku: str | None) -> Share:
    if pct is not None and peak is not None:
        return Share(pct=pct, achieved=achieved, short=None,
                     detail=f"{achieved} of the {sku}'s {peak.value:,g} {peak_unit}: "
                            f"{peak.source.text()}")
    why = note or "no peak: not judged"
    # Every note reads "<what is missing>: <why>" (analysis.hardware).
    return Share(pct=None, achieved=achieved, short=why.split(":", 1)[0], detail=why)


def engine_work(fig: PointFigures | None) -> EngineWork | None:
    """The point's % of memory-bandwidth and compute peak and its prefix-cache hit rate, each
    with what it rests on; None for a point whose figures could not be read."""
    if fig is None or fig.hardware is None:
        return None
    hw = fig.hardware
    precision = f"{hw.precision} " if hw.precision else ""
    return EngineWork(
        bandwidth=_share(hw.bandwidth_pct, _rate_text(hw.bytes_per_s, "B/s", hw.cpu_engine),
                         hw.bandwidth_peak, "TB/s", hw.bandwidth_note, hw.sku),
        compute=_share(hw.compute_pct, _rate_text(hw.flops_per_s, "FLOP/s", hw.cpu_engine),
                       hw.compute_peak, f"dense {precision}TFLOPS", hw.compute_note, hw.sku),
        prefix_cache_hit_rate=fig.prefix_cache_hit_rate,
        prefix_cache_note=None if fig.prefix_cache_hit_rate is not None else (
            "the engine reported no prefix-cache lookups for this point"),
        cpu_engine=hw.cpu_engine,
    )


def capacity_rows(figs: Sequence[PointFigures]) -> list[dict[str, Any]]:
    """Settings with more than one repeat: capacity (the lowest) with the spread beside it.

    A setting is one config, load level, replica count and workload spec (repeats.Setting), so
    a node run never counts as a repeat of a single-replica point; each row names all four.
    """
    groups = repeats.group_by_setting(figs)
    rows = []
    for setting, estimate in repeats.capacity_by_setting(figs).items():
        count = len(groups[setting])
        if count > 1:
            rows.append(
                {
                    "config": setting.config_label,
                    "offered_concurrency": setting.offered_concurrency,
                    "replicas": setting.replicas,
                    "spec": setting.workload.label() if setting.workload else None,
                    "estimate": estimate,
                    "invalid_repeats": count - estimate.repeats,
                }
            )
    return rows


def capacity_of(point: PointFigures, figs: Sequence[PointFigures]) -> CapacityEstimate | None:
    """The capacity estimate of the point's setting among figs (as capacity_rows groups them),
    or None when none of its repeats is valid."""
    return repeats.capacity_by_setting(figs).get(repeats.setting_of(point))


@dataclass(frozen=True)
class Frontier:
    """The Pareto axes of the run: every candidate point (valid, lowest repeat per setting,
    single-replica ladder) and the frontier among them, or why there is none."""

    points: tuple[ParetoPoint, ...]
    keys: tuple[str, ...]  # the frontier, in drawing order (per GPU ascending)
    error: str | None


def frontier(figs: Sequence[PointFigures]) -> Frontier:
    chosen = candidates(figs)
    try:
        points = selection.pareto_points(chosen)
        keys = tuple(c.key for c in selection.pareto_frontier(chosen))
    except AnalysisError as exc:
        return Frontier(points=(), keys=(), error=str(exc))
    return Frontier(points=points, keys=keys, error=None)


# --------------------------------------------------------------------------------------------
# Comparisons
# --------------------------------------------------------------------------------------------


def compare_points(baseline: Point, candidate: Point) -> ComparisonResult:
    """Raises AnalysisError (e.g. missing latency data) with the reason."""
    return compare_mod.compare(measured(baseline), measured(candidate))


# Output parity: what the pages need of it, re-exported (reports and views reach the analysis
# only through this module).
Parity = parity_mod.Parity
PARITY_TEMPLATES = parity_mod.PARITY_TEMPLATES


@dataclass(frozen=True)
class OutputSample:
    """One of the first few requests' texts on both sides, for a reader to look at."""

    index: int
    baseline: str | None
    candidate: str | None
    identical: bool  # False: diverged, or not compared (the parity sentence says which)


@dataclass(frozen=True)
class OutputParity:
    parity: parity_mod.Parity
    samples: list[OutputSample]


def _kept(point: Point) -> tuple[parity_mod.PointOutputs, dict[int, str]]:
    """The point's kept outputs by request index (completed requests with token ids) and the
    texts kept of its first requests, read once from its stored records; nothing is read when
    its workload did not keep outputs."""
    if not (point.workload or {}).get("keep_outputs"):
        return parity_mod.PointOutputs(point.key, kept=False, outputs={}), {}
    blob = stored_requests(point)
    if blob is None:
        return parity_mod.PointOutputs(point.key, kept=True, outputs={}), {}
    # The few fields parity reads, never the records: at 100,000 requests x 1,000 chunks the
    # records are 1.4 GB, these columns (chunk times only counted) a small part of it.
    columns = storage.request_columns(blob, _PARITY_FIELDS)
    index, error, status, digest, ids, text = (columns.values[f] for f in _PARITY_FIELDS)
    outputs: dict[int, parity_mod.KeptOutput] = {}
    texts: dict[int, str] = {}
    without = 0
    chunks = columns.lengths["chunk_times"].tolist()
    for at in range(len(index)):
        if RequestRecord.completed(error[at], status[at], chunks[at]):
            if ids[at]:
                outputs[index[at]] = parity_mod.KeptOutput(digest[at], ids[at])
            else:
                without += 1
        if text[at] is not None:
            texts[index[at]] = text[at]
    return parity_mod.PointOutputs(point.key, kept=True, outputs=outputs,
                                   completed_without_ids=without), texts


# What _kept reads of each request (RequestRecord fields).
_PARITY_FIELDS = ("index", "error", "status", "prompt_digest", "output_ids", "output_text")


def output_parity(baseline: Point, candidate: Point) -> OutputParity:
    """Request-by-request output parity of two points (analysis.parity), with the
    texts of their first requests side by side when both kept them."""
    (before, before_texts), (after, after_texts) = _kept(baseline), _kept(candidate)
    parity = parity_mod.compare_outputs(
        before, after, django_settings.HEADROOM_OUTPUT_PARITY_TOLERANCE_PCT)
    diverged = {d.index for d in parity.diverged}

    def identical(index: int) -> bool:
        a, b = before.outputs.get(index), after.outputs.get(index)
        return (parity.measured and a is not None and b is not None and index not in diverged
                and a.prompt_digest == b.prompt_digest)

    samples = [
        OutputSample(index, before_texts[index], after_texts[index], identical(index))
        for index in sorted(before_texts.keys() & after_texts.keys())
    ]
    return OutputParity(parity, samples)


def compare_saved(comparison: Comparison) -> tuple[ComparisonResult | None, str | None]:
    try:
        return compare_points(comparison.baseline_point, comparison.candidate_point), None
    except AnalysisError as exc:
        return None, str(exc)


def compare_with_reference(
    point: Point, ref: ExternalReference
) -> tuple[ReferenceComparison | None, str | None]:
    try:
        return compare_mod.compare_reference(measured(point), reference(ref)), None
    except AnalysisError as exc:
        return None, str(exc)


def save_demo_comparison(benchmark: Benchmark) -> Comparison | None:
    """After the demo sweep: save baseline = the smallest max_num_seqs, candidate = the best one.

    Each setting is represented at its capacity (lowest repeat) under the highest load level it
    ran, where a larger max_num_seqs can show what it recovers; the best setting is the one with
    the most output throughput there. The controlled / not controlled label is whatever
    analysis.compare says about the two points: it is recomputed on the comparison page, never
    stored. Returns None when the sweep has fewer than two max_num_seqs settings with valid
    points, or when the two cannot be compared (e.g. no latency data).
    """
    points = load_points(benchmark)
    figs, _ = figures_by_key(points)
    # The analysis's validity: also False when a point's stored aggregates fail their checks.
    figs = {key: f for key, f in figs.items() if f.valid and f.replicas == 1}
    by_key = {p.key: p for p in points}
    seqs = {f.max_num_seqs for f in figs.values() if f.max_num_seqs is not None}
    if len(seqs) < 2:
        return None
    top_load = max(f.offered_concurrency for f in figs.values())

    def capacity_point(max_num_seqs: int) -> PointFigures | None:
        at_top = [
            f for f in figs.values()
            if f.max_num_seqs == max_num_seqs and f.offered_concurrency == top_load
        ]
        return min(at_top, key=lambda f: (f.output_throughput, f.repeat)) if at_top else None

    at_top_load = {s: capacity_point(s) for s in sorted(seqs)}
    settings = {s: f for s, f in at_top_load.items() if f is not None}
    if len(settings) < 2:
        return None
    smallest = min(settings)
    best = max(settings, key=lambda s: (settings[s].output_throughput, -s))
    if best == smallest:
        return None
    baseline, candidate = by_key[settings[smallest].key], by_key[settings[best].key]
    try:
        compare_points(baseline, candidate)
    except AnalysisError:
        return None
    return Comparison.objects.create(
        name=f"{benchmark.name}: max_num_seqs {smallest} -> {best}",
        baseline_point=baseline,
        candidate_point=candidate,
        notes=(
            f"Saved by the demo: the smallest max_num_seqs ({smallest}) against the setting "
            f"with the most output throughput ({best}) at the highest load level."
        ),
        created_by=benchmark.created_by,
    )


# --------------------------------------------------------------------------------------------
# Cost: per million output tokens, and what a tuning is worth
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Node scaling
# --------------------------------------------------------------------------------------------


def scaling_for(node_point: Point, reference_point: Point) -> ScalingResult:
    """Node figures of a replica run against an explicitly chosen single-replica reference.

    Raises AnalysisError with the reason when the node point's stored aggregates fail a check,
    when the reference does not fit (another workload spec, several replicas, another GPU
    count, a failed check, invalid) or the run has no common window.
    """
    result = point_result(node_point)
    if result.window is None:
        raise AnalysisError(f"point {node_point.key} has no common window recorded")
    fig = from_point_result(result)
    scaling.check_node_point(fig)
    if fig.workload is None:
        raise AnalysisError(f"point {node_point.key} has no workload spec")
    return scaling.scaling(
        node_throughput=fig.output_throughput,
        n_replicas=result.replicas,
        gpus_per_replica=result.engine_config.tensor_parallel_size,
        window_seconds=result.window.seconds,
        workload=fig.workload,
        per_replica=replica_figures_from_point_result(result),
        reference=figures(reference_point),
    )


def node_scaling_refusal(node_point: Point) -> str | None:
    """Why no reference can make this node point's scaling (a failed check), or None."""
    try:
        scaling.check_node_point(figures(node_point))
    except (AnalysisError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        return str(exc)
    return None


def scaling_reference_choices(node_point: Point, limit: int = 200) -> list[Point]:
    """Single-replica valid points with the same workload spec, newest first."""
    spec = node_point.workload
    return list(
        Point.objects.filter(
            replicas=1,
            valid=True,
            workload__input_tokens_min=spec.get("input_tokens_min"),
            workload__input_tokens_max=spec.get("input_tokens_max"),
            workload__output_tokens=spec.get("output_tokens"),
        )
        .select_related("benchmark")
        .order_by("-id")[:limit]
    )


# --------------------------------------------------------------------------------------------
# Chart additions
# --------------------------------------------------------------------------------------------


def chart_overlay(
    points: Sequence[Point],
    figs: Mapping[str, PointFigures],
    selected_key: str | None,
    refs: Sequence[ExternalReference],
    latency_fields: Sequence[str],
) -> dict[str, Any]:
    """The selected point and dated reference lines, in the curve chart's axes (output tokens/s
    against each latency metric). The Pareto frontier has its own axes (charts.pareto_figure):
    joined here, in throughput-against-latency order, it zigzags."""
    by_key = {p.key: p for p in points}

    def xy(keys: Sequence[str]) -> dict[str, Any]:
        chosen = [by_key[k] for k in keys if k in by_key]
        return {
            "keys": [p.key for p in chosen],
            "y": [p.output_throughput for p in chosen],
            "x": {f: [getattr(p, f) for p in chosen] for f in latency_fields},
        }

    devices = {f.gpu_count for f in figs.values()}
    lines = []
    for ref in refs:
        value, label = ref.value, f"{ref.source} ({ref.recorded_on.isoformat()})"
        if ref.unit == UNIT_OUTPUT_TPS_PER_GPU:
            if len(devices) != 1:
                continue  # points on different device counts: no single line is right
            (count,) = devices
            value *= count
            label += f": {ref.value:g} per GPU x {count}"
        if ref.no_longer_listed_on:
            label += f", no longer listed since {ref.no_longer_listed_on.isoformat()}"
        lines.append({"y": value, "label": label})
    return {
        "selected": xy([selected_key] if selected_key else []),
        "references": lines,
    }


def references_for_chart(benchmark_spec: WorkloadShape | None) -> list[ExternalReference]:
    """References recorded for the same workload spec as the run (others share no axis)."""
    if benchmark_spec is None:
        return []
    return [
        r for r in ExternalReference.objects.all() if parse_spec(r.workload_spec) == benchmark_spec
    ]


# --------------------------------------------------------------------------------------------
# Queue charts
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueCharts:
    """Which points get a queue chart (stored engine samples to draw), and why the others
    do not, grouped by reason in the order the points come: never an empty plot."""

    drawn: list[Point]
    missing: list[tuple[str, list[Point]]]


def queue_charts(points: Sequence[Point], figs: Mapping[str, PointFigures]) -> QueueCharts:
    """A point's chart is drawn from its stored samples (PointData), so that is what decides;
    the reason for a point without them reads its source and its queue summary."""
    stored = set(
        PointData.objects.filter(point__in=list(points), sample_count__gt=0).values_list(
            "point_id", flat=True
        )
    )
    drawn: list[Point] = []
    missing: dict[str, list[Point]] = {}
    for p in points:
        if p.pk in stored:
            drawn.append(p)
            continue
        fig = figs.get(p.key)
        summarized = fig.queue_samples if fig is not None else int(p.queue.get("samples") or 0)
        why = sentences.no_queue_chart_sentence(
            imported=p.source == "vllm-bench-import", summary_samples=summarized
        )
        missing.setdefault(why, []).append(p)
    return QueueCharts(drawn=drawn, missing=list(missing.items()))
