"""The plain inputs and results of the analysis layer.

Inputs mirror the field names of `runner.schema` (Metrics, QueueSummary) so a stored point or
a database row converts with a few attribute reads (`analysis.convert` does it for a
`PointResult`). Results keep every number a sentence quotes as its own field, so templates can
format and translate without parsing text.

All dataclasses are frozen and keyword-only: a figure passed in the wrong position would be a
silent wrong number, and keyword construction makes that impossible.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date
from typing import Any, Literal

from analysis.errors import AnalysisError
from analysis.hardware import HardwareUse
from analysis.sentences import Sentence
from runner.fixed_factors import SPEC_FACTOR, FactorStatus

# ---------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class WorkloadShape:
    """The input/output spec that decides whether two results are comparable.

    Structural (numbers, not a label) so "1000 in / 1000 out" from a vendor page and a local
    1000-1000 range compare equal.
    """

    input_tokens_min: int
    input_tokens_max: int
    output_tokens: int
    # The file a trace or length-log workload draws its lengths from ("trace customer.jsonl"):
    # two such runs share a spec only with the same file, and never a synthetic one's (None).
    source: str | None = None

    def __post_init__(self) -> None:
        if self.input_tokens_min <= 0 or self.output_tokens <= 0:
            raise AnalysisError("a workload spec needs positive input and output token counts")
        if self.input_tokens_max < self.input_tokens_min:
            raise AnalysisError("a workload spec's input_tokens_max must be >= input_tokens_min")

    def label(self) -> str:
        """As runner.schema.plan.WorkloadSpec.spec_label for a range; one number if fixed."""
        if self.source is not None:
            return self.source
        if self.input_tokens_min == self.input_tokens_max:
            return f"{self.input_tokens_min} in / {self.output_tokens} out"
        return f"{self.input_tokens_min}-{self.input_tokens_max} in / {self.output_tokens} out"


def _check_finite(owner: str, name: str, value: float | None, *, minimum: float = 0.0) -> None:
    if value is None:
        return
    if not math.isfinite(value) or value < minimum:
        raise AnalysisError(f"{owner}: {name} must be a finite number >= {minimum}, got {value!r}")


# The latency fields a point carries, with their labels; SLO limits name one of these (or a p50_
# alias of median_). Fields under vLLM's names mean what `vllm bench serve` computes (from the
# moment the request was sent); `sched_` ones are Headroom's, from the moment it was due, so a
# client that fell behind its schedule cannot hide queueing. goodput_miss_pct is the share of
# requests that missed the point's goodput SLOs (`--goodput`), a limit like the latencies.
LATENCY_LABELS: dict[str, str] = {
    "median_ttft_ms": "Median TTFT (ms, vllm bench serve)",
    "p95_ttft_ms": "p95 TTFT (ms, vllm bench serve)",
    "p99_ttft_ms": "p99 TTFT (ms, vllm bench serve)",
    "median_tpot_ms": "Median TPOT (ms, vllm bench serve)",
    "p95_tpot_ms": "p95 TPOT (ms, vllm bench serve)",
    "p99_tpot_ms": "p99 TPOT (ms, vllm bench serve)",
    "median_itl_ms": "Median ITL (ms, vllm bench serve)",
    "p95_itl_ms": "p95 ITL (ms, vllm bench serve)",
    "p99_itl_ms": "p99 ITL (ms, vllm bench serve)",
    "median_e2el_ms": "Median request latency (ms, vllm bench serve E2EL)",
    "p95_e2el_ms": "p95 request latency (ms, vllm bench serve E2EL)",
    "p99_e2el_ms": "p99 request latency (ms, vllm bench serve E2EL)",
    "median_sched_ttft_ms": "Median TTFT from the schedule (ms, Headroom)",
    "p99_sched_ttft_ms": "p99 TTFT from the schedule (ms, Headroom)",
    "median_sched_e2el_ms": "Median request latency from the schedule (ms, Headroom)",
    "p99_sched_e2el_ms": "p99 request latency from the schedule (ms, Headroom)",
    "goodput_miss_pct": "Requests missing the goodput SLOs (%)",
}
LATENCY_FIELDS = tuple(LATENCY_LABELS)

# The name PointFigures.other_settings gives a config's extra engine flags (joined by spaces).
EXTRA_FLAGS = "extra engine flags"

# QueueSummary's numbers, under the same names.
QUEUE_FIELDS = (
    "mean_running",
    "mean_waiting",
    "peak_running",
    "peak_waiting",
    "peak_kv_usage",
    "mean_kv_usage",
    "preemptions",
    "mean_waiting_capacity",
    "mean_waiting_deferred",
    "mean_queue_time_s",
    "queue_time_p50_s",
    "queue_time_p90_s",
    "queue_time_p99_s",
)


@dataclass(frozen=True, kw_only=True)
class PointFigures:
    """One measured point: an engine config under one load level, one repeat.

    gpu_count is the number of devices the point used (replicas x tensor parallel size); on a
    machine without GPUs one CPU engine counts as one, so per-device figures stay defined.
    mean_tokens_per_step (prompt + generation tokens scheduled per engine step) comes from the
    queue summary; when it is None a token-budget verdict says its evidence is partial.
    """

    key: str
    config_label: str
    offered_concurrency: float
    output_throughput: float
    # As the load names itself (runner.schema.plan.LoadSpec.label), for sentences: "burst 64".
    load_label: str = ""
    # Completed requests over the window (vLLM's request_throughput); None: not recorded.
    request_throughput: float | None = None
    # A rate load's requests/s as scheduled (LoadSpec.rate); None for a burst, a closed loop
    # or a trace replay, whose arrival rate the load does not name.
    offered_rate: float | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    # The two limits as the engine ran: the config's (the default here), else vLLM's own
    # default for the point's hardware and version (named in limits_from_defaults); None when
    # neither is known.
    seqs_limit: int | None = None
    token_budget: int | None = None
    limits_from_defaults: tuple[str, ...] = ()
    # The share (0-1) of the time requests waited during which running was at seqs_limit, from
    # QueueSummary.running_while_waiting_s; None without that record, a limit or a wait.
    at_cap_share: float | None = None
    # Every other engine setting of the point's config, (name, value) in EngineConfig's order,
    # the extra flags as EXTRA_FLAGS: what a sweep of several axes varies besides the two above.
    other_settings: tuple[tuple[str, Any], ...] = ()
    workload: WorkloadShape | None = None
    gpu_count: int = 1
    replicas: int = 1
    repeat: int = 0
    # Whether the point may take part in capacity and operating-point choices: a valid run
    # (every request completed, none short) whose stored aggregates pass every check.
    valid: bool = True
    # The run's own validity (Metrics.valid), before the checks: False when requests failed or
    # came back short. An engineer may override with a point that is invalid only because its
    # checks failed, never with one whose run is invalid (its throughput counts missing work).
    run_valid: bool = True
    # One sentence, with the numbers, for each check of the stored aggregates that failed
    # (analysis.checks); any of them makes `valid` False.
    failed_checks: tuple[str, ...] = ()
    client_saturated: bool = False
    total_output_tokens: int | None = None
    # Client latency summaries (Metrics names).
    median_ttft_ms: float | None = None
    p95_ttft_ms: float | None = None
    p99_ttft_ms: float | None = None
    median_tpot_ms: float | None = None
    p95_tpot_ms: float | None = None
    p99_tpot_ms: float | None = None
    median_itl_ms: float | None = None
    p95_itl_ms: float | None = None
    p99_itl_ms: float | None = None
    median_e2el_ms: float | None = None
    p95_e2el_ms: float | None = None
    p99_e2el_ms: float | None = None
    median_sched_ttft_ms: float | None = None
    p99_sched_ttft_ms: float | None = None
    median_sched_e2el_ms: float | None = None
    p99_sched_e2el_ms: float | None = None
    goodput_miss_pct: float | None = None
    # Engine queue summary (QueueSummary names; `samples` renamed to say whose samples).
    queue_samples: int = 0
    # An imported point's queue came from the tool's scrape of the server (ServerEvidence):
    # what it was ("inference-perf's Prometheus report"), and what it did not hold ("running
    # requests"); None: Headroom's own /metrics samples, or none.
    queue_source: str | None = None
    queue_lacks: tuple[str, ...] = ()
    # The longest unsampled stretch of the point as a fraction of its window (QueueSummary
    # max_gap_s / duration); None when not recorded (older results, imports).
    queue_gap_fraction: float | None = None
    mean_running: float | None = None
    mean_waiting: float | None = None
    peak_running: float | None = None
    peak_waiting: float | None = None
    peak_kv_usage: float | None = None
    mean_kv_usage: float | None = None
    preemptions: float | None = None
    mean_tokens_per_step: float | None = None
    # Waiting split by vLLM's reason, and the time requests waited in the engine's queue
    # (bucket-resolution percentiles; QueueSummary says how they are read).
    mean_waiting_capacity: float | None = None
    mean_waiting_deferred: float | None = None
    mean_queue_time_s: float | None = None
    queue_time_p50_s: float | None = None
    queue_time_p90_s: float | None = None
    queue_time_p99_s: float | None = None
    # Prompt tokens the prefix cache held over those looked up in the window (0-1); None when
    # the engine reported no lookups.
    prefix_cache_hit_rate: float | None = None
    # Per-GPU work against the GPU's peaks (analysis.hardware); None when not judged.
    hardware: HardwareUse | None = None
    # Cores other processes and the hypervisor took from the host during the load
    # (runner.schema HostCpu.taken_cores); None when not measured. Above DISTURBED_CORES the
    # point is disturbed: its change against a neighbour is not read as the engine's.
    taken_cores: float | None = None
    disturbed: bool = False
    # The config's first load level measured again after its last (PointResult.control).
    control: bool = False
    # The first config's first load level again after the last config, on a fresh engine start
    # (PointResult.end_control).
    end_control: bool = False

    def __post_init__(self) -> None:
        owner = f"point {self.key}"
        if self.seqs_limit is None:
            object.__setattr__(self, "seqs_limit", self.max_num_seqs)
        if self.token_budget is None:
            object.__setattr__(self, "token_budget", self.max_num_batched_tokens)
        _check_finite(owner, "output_throughput", self.output_throughput)
        if not math.isfinite(self.offered_concurrency) or self.offered_concurrency <= 0:
            raise AnalysisError(f"{owner}: offered_concurrency must be > 0")
        if self.gpu_count < 1 or self.replicas < 1:
            raise AnalysisError(f"{owner}: gpu_count and replicas must be >= 1")
        for name in (*LATENCY_FIELDS, *QUEUE_FIELDS, "mean_tokens_per_step", "queue_gap_fraction",
                     "prefix_cache_hit_rate", "at_cap_share", "taken_cores",
                     "request_throughput", "offered_rate"):
            _check_finite(owner, name, getattr(self, name))

    @property
    def throughput_per_gpu(self) -> float:
        return self.output_throughput / self.gpu_count

    def settings(self) -> tuple[tuple[str, Any], ...]:
        """Every engine setting of the point's config, max_num_seqs and the token budget first."""
        return (
            ("max_num_seqs", self.max_num_seqs),
            ("max_num_batched_tokens", self.max_num_batched_tokens),
            *self.other_settings,
        )


@dataclass(frozen=True, kw_only=True)
class RunFacts:
    """The fixed factors of a controlled comparison (docs/vllm.md). None = not recorded."""

    gpu_sku: str | None = None
    gpu_count: int | None = None
    runtime: str | None = None
    runtime_version: str | None = None
    checkpoint: str | None = None
    checkpoint_revision: str | None = None
    precision: str | None = None
    kv_dtype: str | None = None
    request_count: int | None = None
    workload: WorkloadShape | None = None
    host: str | None = None


@dataclass(frozen=True, kw_only=True)
class Measured:
    """One side of a comparison: what was fixed (facts) and what was measured (figures)."""

    facts: RunFacts
    figures: PointFigures


@dataclass(frozen=True, kw_only=True)
class ReplicaFigures:
    """One replica of a synchronized node run, shown beside the node figures."""

    replica: int
    output_throughput: float | None = None
    total_output_tokens: int | None = None
    completed: int | None = None
    failed: int | None = None
    valid: bool | None = None
    window_seconds: float | None = None
    gpu: str | None = None


# Units a reference figure may be given in; the local value is computed in the same unit.
UNIT_OUTPUT_TPS = "output tokens/s"
UNIT_OUTPUT_TPS_PER_GPU = "output tokens/s per GPU"
REFERENCE_UNITS = (UNIT_OUTPUT_TPS, UNIT_OUTPUT_TPS_PER_GPU)

# What a published request latency is. The local figure shown beside it is the same statistic
# of vLLM's E2EL, never the other one: a mean beside a median reads as a difference that the
# two runs may not have.
LatencyStatistic = Literal["median", "mean"]
LATENCY_STATISTICS: tuple[LatencyStatistic, ...] = ("median", "mean")


@dataclass(frozen=True, kw_only=True)
class Reference:
    """An external, dated figure (e.g. a vendor's published per-GPU throughput).

    Every fixed factor the source does not state stays None, so a comparison with it is not
    controlled. latency_ms is one published request latency, latency_statistic says whether it
    is a median or a mean.
    """

    name: str
    value: float
    unit: str
    recorded_on: date
    no_longer_listed_on: date | None = None
    gpu_sku: str | None = None
    gpu_count: int | None = None
    runtime: str | None = None
    runtime_version: str | None = None
    checkpoint: str | None = None
    checkpoint_revision: str | None = None
    precision: str | None = None
    kv_dtype: str | None = None
    request_count: int | None = None
    workload: WorkloadShape | None = None
    host: str | None = None
    latency_ms: float | None = None
    latency_statistic: LatencyStatistic | None = None
    source_url: str | None = None

    def __post_init__(self) -> None:
        if not math.isfinite(self.value) or self.value <= 0:
            raise AnalysisError(f"reference {self.name}: value must be > 0, got {self.value!r}")
        if self.latency_ms is not None and (
            not math.isfinite(self.latency_ms) or self.latency_ms <= 0
        ):
            raise AnalysisError(
                f"reference {self.name}: latency_ms must be > 0, got {self.latency_ms!r}"
            )
        if (self.latency_ms is None) != (self.latency_statistic is None):
            raise AnalysisError(
                f"reference {self.name}: a latency needs its statistic (median or mean), "
                "and a statistic needs a latency"
            )
        if self.latency_statistic is not None and self.latency_statistic not in LATENCY_STATISTICS:
            raise AnalysisError(
                f"reference {self.name}: latency statistic {self.latency_statistic!r} is not one "
                f"of {', '.join(LATENCY_STATISTICS)}"
            )
        if self.unit not in REFERENCE_UNITS:
            raise AnalysisError(
                f"reference {self.name}: unit {self.unit!r} is not one of "
                f"{', '.join(REFERENCE_UNITS)}"
            )
        if self.no_longer_listed_on is not None and self.no_longer_listed_on < self.recorded_on:
            raise AnalysisError(
                f"reference {self.name}: no longer listed on {self.no_longer_listed_on} "
                f"is before it was recorded on {self.recorded_on}"
            )

    def facts(self) -> RunFacts:
        """The reference's factors in the shape a comparison reads; None where it states none."""
        return RunFacts(
            gpu_sku=self.gpu_sku,
            gpu_count=self.gpu_count,
            runtime=self.runtime,
            runtime_version=self.runtime_version,
            checkpoint=self.checkpoint,
            checkpoint_revision=self.checkpoint_revision,
            precision=self.precision,
            kv_dtype=self.kv_dtype,
            request_count=self.request_count,
            workload=self.workload,
            host=self.host,
        )


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------

SelectionMethod = Literal["knee", "slo", "pareto", "override"]


@dataclass(frozen=True, kw_only=True)
class ParetoPoint:
    key: str
    output_throughput_per_gpu: float
    tokens_per_user: float  # 1000 / median TPOT in ms


@dataclass(frozen=True, kw_only=True)
class KneeStep:
    """One step of a knee walk, from a load level to the next of the same config."""

    from_key: str
    to_key: str
    throughput_gain_pct: float
    latency_growth_pct: float


@dataclass(frozen=True, kw_only=True)
class KneeFound:
    """The step that made the knee; the operating point is its from_key."""

    from_key: str
    to_key: str
    to_load: str
    throughput_before: float
    throughput_after: float
    median_e2el_before_ms: float
    median_e2el_after_ms: float
    throughput_gain_pct: float
    latency_growth_pct: float


@dataclass(frozen=True, kw_only=True)
class KneeEvidence:
    """A knee walk: its steps, and the knee's step or (no knee) the chosen throughput."""

    found: KneeFound | None
    chosen_throughput: float | None
    steps: tuple[KneeStep, ...]
    excluded_invalid: tuple[str, ...]
    # With several configs: each config's chosen key and its throughput, and the configs with
    # too few valid levels for a knee ("label (count)"). None with one config.
    per_config: dict[str, float] | None = None
    configs_too_short: tuple[str, ...] | None = None
    # Disturbed points the walk stepped over, and those it walked because too few were quiet.
    excluded_disturbed: tuple[str, ...] = ()
    disturbed_walked: tuple[str, ...] = ()
    # The run's +/- band for a change between two draws (analysis.noise), if it measured one.
    noise_band_pct: float | None = None

    @property
    def knee_found(self) -> bool:
        return self.found is not None


@dataclass(frozen=True, kw_only=True)
class SloEvidence:
    """The chosen point's values and utilisation (value / limit) per limit; the next faster
    point and the limits it broke (most exceeded first); which limit is closest and which binds."""

    chosen_throughput: float
    values: dict[str, float]
    utilisation: dict[str, float]
    closest_metric: str
    binding_metric: str
    next_key: str | None
    next_throughput: float | None
    next_violations: dict[str, float]
    excluded_invalid: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class ParetoEvidence:
    output_throughput_per_gpu: float
    tokens_per_user: float
    frontier: tuple[ParetoPoint, ...]


@dataclass(frozen=True, kw_only=True)
class OverrideEvidence:
    chosen_throughput: float | None


SelectionEvidence = KneeEvidence | SloEvidence | ParetoEvidence | OverrideEvidence


@dataclass(frozen=True, kw_only=True)
class Selection:
    """An operating point and how it was chosen; stored with its parameters.

    params: what the method was given (thresholds, limits), a JSON-ready dict; evidence: the
    numbers that justify the choice, typed by method (stored through analysis.selection_json).
    """

    method: SelectionMethod
    params: dict[str, Any]
    chosen_key: str
    reason: str
    sentence: str
    evidence: SelectionEvidence




@dataclass(frozen=True, kw_only=True)
class FactorRow:
    """One fixed factor side by side. unknown: at least one side did not record it."""

    name: str
    label: str
    baseline: str | None
    candidate: str | None
    status: FactorStatus




def spec_row(factors: tuple[FactorRow, ...]) -> FactorRow:
    """The input/output spec row of a comparison: which spec each side has."""
    return next(row for row in factors if row.name == SPEC_FACTOR)


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """Baseline -> candidate on the same axes, with the comparison guard.

    improvement_pct, ratio and latency_change_pct are None unless both sides recorded the same
    input/output spec: across specs there is no percentage (docs/vllm.md), only the
    statement that they differ. spec_differs: both recorded it and they differ.
    """

    baseline_key: str
    candidate_key: str
    baseline_throughput: float
    candidate_throughput: float
    improvement_pct: float | None
    ratio: float | None
    baseline_median_e2el_ms: float
    candidate_median_e2el_ms: float
    latency_change_pct: float | None
    factors: tuple[FactorRow, ...]
    controlled: bool
    spec_differs: bool
    matching: tuple[str, ...]
    differing: tuple[str, ...]
    unknown: tuple[str, ...]
    sentence: str
    # Engine settings that change the work itself, not only how it is scheduled, named when
    # they differ (compare.engine_differences): prefix caching on one side and off on the other.
    engine_differences: tuple[str, ...] = ()
    baseline_prefix_cache_hit_rate: float | None = None
    candidate_prefix_cache_hit_rate: float | None = None

    @property
    def spec(self) -> FactorRow:
        return spec_row(self.factors)


@dataclass(frozen=True, kw_only=True)
class ReferenceComparison:
    """A local point against a dated reference, with the same guard as Comparison.

    ratio, difference_pct and latency_difference_pct are None unless both sides recorded the
    same input/output spec. The latency pair is the reference's published statistic and the
    local point's same statistic of E2EL (None when either side lacks it).
    """

    reference_name: str
    unit: str
    local_key: str
    local_value: float
    reference_value: float
    ratio: float | None  # local / reference
    difference_pct: float | None  # (local - reference) / reference * 100
    recorded_on: date
    no_longer_listed_on: date | None
    factors: tuple[FactorRow, ...]
    controlled: bool
    spec_differs: bool
    matching: tuple[str, ...]
    differing: tuple[str, ...]
    unknown: tuple[str, ...]
    latency_statistic: LatencyStatistic | None
    # 'Median request latency (ms, E2EL)': the statistic is named wherever the pair is shown.
    latency_label: str | None
    reference_latency_ms: float | None
    local_latency_ms: float | None
    latency_difference_pct: float | None  # (local - reference) / reference * 100
    sentence: str

    @property
    def spec(self) -> FactorRow:
        return spec_row(self.factors)


@dataclass(frozen=True, kw_only=True)
class CapacityEstimate:
    """The capacity of a setting: the lowest of its repeats, with the spread beside it."""

    capacity: float
    repeats: int
    minimum: float
    maximum: float
    mean: float
    spread: float  # maximum - minimum
    relative_spread_pct: float  # spread / mean * 100
    values: tuple[float, ...]


@dataclass(frozen=True, kw_only=True)
class ScalingResult:
    node_throughput: float
    n_replicas: int
    gpus_per_replica: int
    total_gpus: int
    throughput_per_gpu: float
    window_seconds: float
    reference_key: str
    reference_throughput: float
    ideal_throughput: float  # n_replicas x reference_throughput
    efficiency: float  # node_throughput / ideal_throughput (1.0 = linear)
    per_replica: tuple[ReplicaFigures, ...]
    all_replicas_valid: bool | None
    sentence: str


VerdictKind = Literal[
    "client_bound",
    "kv_capacity",
    "scheduler_cap",
    "token_budget",
    "deferred",
    "step_time",
    "underloaded",
    "unclear",
]


@dataclass(frozen=True, kw_only=True)
class VerdictEvidence:
    """The numbers a verdict rests on (analysis.verdicts.verdict): the point's engine limits and
    queue figures as judged, the step from the previous load level of its ladder, and what the
    rules concluded beside the verdict. A node run's means are its replicas' sums and its peaks
    the highest replica's (runner.schema.samples.QueueSummary)."""

    # The limits the engine ran with (PointFigures.seqs_limit, token_budget), and which of them
    # are vLLM's own defaults rather than configured.
    max_num_seqs: int | None
    max_num_batched_tokens: int | None
    limits_from_defaults: tuple[str, ...]
    at_cap_share: float | None
    queue_samples: int
    queue_gap_fraction: float | None
    mean_running: float | None
    peak_running: float | None
    mean_waiting: float | None
    peak_waiting: float | None
    mean_kv_usage: float | None
    peak_kv_usage: float | None
    preemptions: float | None
    mean_tokens_per_step: float | None
    mean_waiting_capacity: float | None
    mean_waiting_deferred: float | None
    mean_queue_time_s: float | None
    queue_time_p50_s: float | None
    queue_time_p90_s: float | None
    queue_time_p99_s: float | None
    prefix_cache_hit_rate: float | None
    # Per-GPU work against the GPU's peaks (analysis.hardware); None when not judged.
    memory_bandwidth_pct: float | None
    compute_pct: float | None
    client_saturated: bool
    replicas: int
    disturbed: bool
    taken_cores: float | None
    # The run's +/- band for a change between two draws (analysis.noise); None: not known.
    noise_band_pct: float | None
    # Against the previous load level of the same ladder; all None without one.
    previous_key: str | None = None
    throughput_gain_pct: float | None = None
    latency_growth_pct: float | None = None
    running_growth_pct: float | None = None
    output_elasticity: float | None = None
    previous_mean_waiting: float | None = None
    # Other verdicts that hold too, in precedence order.
    also: tuple[VerdictKind, ...] = ()
    # An unclear verdict's reason; None for every other kind.
    why: str | None = None
    # An imported point's scrape (PointFigures.queue_source) and what it did not hold.
    queue_source: str | None = None
    lacked: tuple[str, ...] = ()
    # The ladder's symptom: more load added only waiting (analysis.verdicts.saturated).
    saturated: bool = False
    # At or past MEMORY_BOUND_PCT of the GPUs' memory-bandwidth peak.
    memory_bound: bool = False


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """Which limit binds at one point, with the numbers that show it.

    partial: the verdict rests on incomplete evidence (e.g. no per-step token counts).
    """

    key: str
    config_label: str
    max_num_seqs: int | None
    max_num_batched_tokens: int | None
    # Every engine setting of the config, (name, value) in EngineConfig's order (None: the
    # engine's default): PointFigures.settings().
    settings: tuple[tuple[str, Any], ...]
    offered_concurrency: float
    output_throughput: float
    kind: VerdictKind
    evidence: VerdictEvidence
    partial: bool
    sentence: str
    # As the load names itself ("burst 128"), for the sweep's story.
    load_label: str = ""


@dataclass(frozen=True, kw_only=True)
class SettingChange:
    setting: str
    before: Any
    after: Any


@dataclass(frozen=True, kw_only=True)
class SweepStep:
    from_key: str
    to_key: str
    from_config: str
    to_config: str
    changes: tuple[SettingChange, ...]
    from_kind: VerdictKind
    to_kind: VerdictKind
    from_throughput: float
    to_throughput: float
    sentence: str
    # What the step did to output at the loads compared, with each side's cause ("At burst 128,
    # raising max_num_seqs from 4 to 64 raised output 1.98x ..."): the run page and a report
    # both say this.
    story: Sentence


@dataclass(frozen=True, kw_only=True)
class SweepSummary:
    """What the sweep changed: each step between consecutive configs, and first to last."""

    steps: tuple[SweepStep, ...]
    overall: SweepStep
    sentence: str
