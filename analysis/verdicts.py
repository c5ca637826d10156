"""Bottleneck verdicts: which engine limit binds at a point, from the engine samples and config.

A verdict names a cause. Order of precedence (the first that holds is the verdict; the others
that also hold are listed in evidence.also):

1. client_bound: the client-honesty flag is set. The timings themselves may be wrong, so no
   engine conclusion is safe until the client is fixed.
2. kv_capacity: peak KV usage near full, or preemptions. Memory is the hard limit: when it
   binds, running falls below max_num_seqs for a reason no scheduler setting removes, and a
   pinned scheduler cap on a full KV cache could not be raised usefully.
3. deferred: most of the waiting requests wait for a reason other than capacity (vLLM's
   waiting-by-reason "deferred": a LoRA slot, a grammar still compiling), so no batch limit is
   what holds them.
4. scheduler_cap: running pinned at max_num_seqs while requests wait (at the cap for more
   than PINNED_SHARE of the time they waited). The headroom case: the engine admits too few
   of the queued requests.
5. token_budget (full evidence): running below the cap, requests wait, KV not full, and steps
   average near max_num_batched_tokens.
6. step_time: against the previous load level of the same ladder (`ladder_of`), the engine
   admitted clearly more requests at once but output grew by less than the square root of
   that (STEP_TIME_ELASTICITY): each step got slower nearly as much as it got wider, so the
   engine's own step time is the limit.
7. token_budget (partial evidence): as 5, but without per-step token counts, so the step
   condition could not be checked; marked partial.
8. underloaded: nothing waits (every request is admitted; the load may just fill the cap) and
   the KV cache is not full.
9. unclear: none of the above holds; evidence.why says what is missing or odd. Also the
   verdict, before any condition is checked, when the engine samples leave more than
   QUEUE_GAP_MAX_FRACTION of the point uncovered: too few samples to judge the queue.

Saturation is a symptom, not a cause: evidence.saturated says that, against the previous
load level of the same ladder, more load added under SATURATION_GAIN_PCT output and only
waiting or latency. It stands beside the cause in the verdict's sentence, never instead of it.

Beside any engine verdict (not client_bound, whose timings may be wrong), a point whose GPUs
moved at least MEMORY_BOUND_PCT of their memory-bandwidth peak is marked memory_bound: the
sentence then adds that scheduler settings cannot add much there, fewer bytes per token (a
smaller KV dtype) or more GPUs can.

The limits are those the engine ran with (PointFigures.seqs_limit, token_budget): the
config's, else vLLM's own default for the point's hardware and version
(runner.engine.vllm_defaults).

A node run's queue summary holds the sum of its replicas' mean running and waiting and the
highest replica's peaks (runner.schema.samples.QueueSummary says why), while max_num_seqs and
max_num_batched_tokens bound each replica: the mean is compared with replicas x the cap, the
peak and the per-step tokens with one replica's cap and budget.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from analysis import sentences
from analysis.errors import AnalysisError
from analysis.selection import DEFAULT_THROUGHPUT_GAIN_PCT
from analysis.types import (
    PointFigures,
    Verdict,
    VerdictEvidence,
    VerdictKind,
    WorkloadShape,
)

# KV usage (0-1) at or above which the cache counts as full: vLLM preempts when a step finds no
# free block, and 5% of blocks is less than one more request's worth on a busy engine.
KV_FULL = 0.95

# Running at max_num_seqs for more than this share of the time requests waited counts as
# pinned. A binding cap holds running there whenever anything waits, except for the moments a
# finished request's slot is refilled; ramp-up and drain, which pull a mean below the cap,
# pass with nothing waiting or not at all, so they do not count against it.
PINNED_SHARE = 0.5
# Only for a point that kept no engine samples to find that record in (analysis.convert):
# mean running >= this fraction of max_num_seqs counts as pinned. Where requests waited, mean
# running / cap sits at 0.8-1 when the cap binds and under 0.2 when the token budget or KV holds
# the queue: 0.5 is mid-gap.
PINNED_FRACTION = 0.5

# Requests wait when on average at least one is waiting. The peak alone would call every burst
# point queued: a burst makes a momentary queue at its start even on an idle engine.
WAITING_MEAN_MIN = 1.0

# Steps averaging >= this fraction of max_num_batched_tokens fill the token budget (steps
# during ramp-up and drain are smaller, as for PINNED_FRACTION).
TOKEN_BUDGET_FRACTION = 0.9

# A point whose longest stretch without an engine sample is more than this fraction of its
# window has too little queue evidence for any engine verdict: a burst can rise and drain
# between two samples, and the means would then read as an idle engine.
QUEUE_GAP_MAX_FRACTION = 0.5

# At or above this share of the GPU's memory-bandwidth peak (per GPU, vLLM's own byte estimate
# against the datasheet figure, analysis.hardware) the GPU moves about all the bytes it
# can: decoding reads the weights and every running request's KV cache each step, so admitting
# more requests adds reads the memory cannot serve any faster. Measured memory kernels reach
# about 80-90% of the datasheet bandwidth, so 80% is already near the practical ceiling.
MEMORY_BOUND_PCT = 80.0

# Saturated: the step from the previous load level added less than this much throughput ...
SATURATION_GAIN_PCT = DEFAULT_THROUGHPUT_GAIN_PCT
# ... while median end-to-end latency grew at least this much (or more requests waited).
# Lower than the knee's 20%: the symptom says "more load only adds waiting", not "where to stop".
SATURATION_LATENCY_GROWTH_PCT = 5.0

# Step time: mean running grew at least this much over the previous load level ...
STEP_TIME_RUNNING_GROWTH_PCT = 20.0
# ... and output grew with an elasticity below this: log(output ratio) / log(running ratio),
# 1 when output grows in step with the batch (a decode step costs little more for one more
# request), 0 when it does not grow at all (each step slows as much as it widens). The midpoint:
# output grew by less than the square root of the running growth (+41% for a doubled batch).
# In log space so that two steps compose; a ratio, not a fixed gain, so a noisy +6% on a
# doubled batch reads as the step time and +60% on it as room to grow.
STEP_TIME_ELASTICITY = 0.5

# Deferred admission: at least this share of the mean waiting count waits "deferred".
DEFERRED_SHARE = 0.5


def _evidence(point: PointFigures, **judged: Any) -> VerdictEvidence:
    """The point's own figures as a verdict's evidence, with what the rules judged (judged:
    the step from the previous level and the conclusions, VerdictEvidence's later fields)."""
    return VerdictEvidence(
        # The limits the engine ran with (PointFigures.seqs_limit): a verdict judges those.
        max_num_seqs=point.seqs_limit,
        max_num_batched_tokens=point.token_budget,
        limits_from_defaults=point.limits_from_defaults,
        at_cap_share=point.at_cap_share,
        queue_samples=point.queue_samples,
        queue_gap_fraction=point.queue_gap_fraction,
        mean_running=point.mean_running,
        peak_running=point.peak_running,
        mean_waiting=point.mean_waiting,
        peak_waiting=point.peak_waiting,
        mean_kv_usage=point.mean_kv_usage,
        peak_kv_usage=point.peak_kv_usage,
        preemptions=point.preemptions,
        mean_tokens_per_step=point.mean_tokens_per_step,
        mean_waiting_capacity=point.mean_waiting_capacity,
        mean_waiting_deferred=point.mean_waiting_deferred,
        mean_queue_time_s=point.mean_queue_time_s,
        queue_time_p50_s=point.queue_time_p50_s,
        queue_time_p90_s=point.queue_time_p90_s,
        queue_time_p99_s=point.queue_time_p99_s,
        prefix_cache_hit_rate=point.prefix_cache_hit_rate,
        memory_bandwidth_pct=point.hardware.bandwidth_pct if point.hardware else None,
        compute_pct=point.hardware.compute_pct if point.hardware else None,
        client_saturated=point.client_saturated,
        replicas=point.replicas,
        disturbed=point.disturbed,
        taken_cores=point.taken_cores,
        queue_source=point.queue_source,
        **judged,
    )


@dataclass(frozen=True, kw_only=True)
class _Step:
    """Against the previous load level of the same ladder: VerdictEvidence's fields of it."""

    previous_key: str
    throughput_gain_pct: float
    latency_growth_pct: float | None
    running_growth_pct: float | None
    output_elasticity: float | None
    previous_mean_waiting: float | None


def memory_bound(bandwidth_pct: float | None) -> bool:
    """Whether a point's GPUs moved at least MEMORY_BOUND_PCT of their bandwidth peak."""
    return bandwidth_pct is not None and bandwidth_pct >= MEMORY_BOUND_PCT


def _has_engine_data(point: PointFigures) -> bool:
    """Headroom's own samples of running and waiting, or an imported point's scrape by its
    tool (queue_source) with at least the waiting count: the verdict then judges only what
    that scrape holds (_conditions) and names what it lacked (lacked_evidence)."""
    if point.queue_source is not None:
        return point.mean_waiting is not None
    return (
        point.queue_samples > 0
        and point.mean_running is not None
        and point.peak_running is not None
        and point.mean_waiting is not None
    )


def lacked_evidence(point: PointFigures) -> list[str]:
    """What an imported point's evidence did not hold that a verdict reads: its scrape's lacks
    and the engine's limits; empty for Headroom's own points (their limits are known or
    vLLM's defaults, and their samples hold every gauge)."""
    if point.queue_source is None:
        return []
    lacked = list(point.queue_lacks)
    if point.seqs_limit is None:
        lacked.append("max_num_seqs")
    if point.token_budget is None:
        lacked.append("max_num_batched_tokens")
    return lacked


def ladder_of(point: PointFigures) -> tuple[str, int, WorkloadShape | None, int]:
    """The load ladder a point stands on: its engine config, replica count, workload spec and
    repeat. Saturation compares a point with the next lower load level of its own ladder: a
    node run or another spec beside it is another measurement, not a lower load level."""
    return (point.config_label, point.replicas, point.workload, point.repeat)


def _saturation(point: PointFigures, previous: PointFigures) -> _Step:
    """Throughput gain and latency growth from the previous load level of the same ladder."""
    if previous.config_label != point.config_label:
        raise AnalysisError(
            f"previous point {previous.key} is another engine config than {point.key}; "
            "saturation compares load levels of one config"
        )
    if (previous.replicas, previous.workload) != (point.replicas, point.workload):
        raise AnalysisError(
            f"previous point {previous.key} ran another replica count or workload spec than "
            f"{point.key}; saturation compares load levels of one measurement"
        )
    if previous.offered_concurrency >= point.offered_concurrency:
        raise AnalysisError(
            f"previous point {previous.key} is not at a lower load level than {point.key}"
        )
    if previous.output_throughput <= 0:
        raise AnalysisError(f"previous point {previous.key} has zero throughput")
    gain = (point.output_throughput - previous.output_throughput) / previous.output_throughput * 100
    growth = None
    if point.median_e2el_ms is not None and previous.median_e2el_ms:
        growth = (point.median_e2el_ms - previous.median_e2el_ms) / previous.median_e2el_ms * 100
    running_growth = None
    if point.mean_running is not None and previous.mean_running:
        running_growth = (point.mean_running - previous.mean_running) / previous.mean_running * 100
    return _Step(
        previous_key=previous.key,
        throughput_gain_pct=gain,
        latency_growth_pct=growth,
        running_growth_pct=running_growth,
        output_elasticity=(output_elasticity(running_growth, gain)
                           if running_growth is not None and running_growth > 0 else None),
        previous_mean_waiting=previous.mean_waiting,
    )


def _conditions(point: PointFigures, step: _Step | None) -> dict[str, bool]:
    """Which verdicts hold (True) at this point; token_budget_partial is the unchecked-step form.

    An imported scrape may hold means without peaks, or no running count (queue_source): a
    mean at or past a limit stands for the peak there (a peak is never below its mean); a
    condition that needs what the scrape lacks does not hold, and the verdict says what was
    lacking (lacked_evidence)."""
    assert point.mean_waiting is not None
    cap, budget = point.seqs_limit, point.token_budget
    waits = point.mean_waiting >= WAITING_MEAN_MIN
    kv_peak = point.peak_kv_usage if point.peak_kv_usage is not None else point.mean_kv_usage
    kv_full = (kv_peak is not None and kv_peak >= KV_FULL) or (
        point.preemptions is not None and point.preemptions > 0
    )
    running = point.mean_running
    peak = point.peak_running if point.peak_running is not None else running
    # The peak is one replica's, the mean the node's sum (module docstring).
    pinned = cap is not None and running is not None and peak is not None and peak >= cap and (
        point.at_cap_share > PINNED_SHARE if point.at_cap_share is not None
        else running >= PINNED_FRACTION * cap * point.replicas
    )
    budget_suspect = (cap is not None and running is not None and not pinned and waits
                      and not kv_full)  # fmt: skip
    steps_known = point.mean_tokens_per_step is not None and budget is not None
    steps_full = steps_known and point.mean_tokens_per_step >= TOKEN_BUDGET_FRACTION * budget  # type: ignore[operator]
    deferred = point.mean_waiting_deferred is not None and waits and (
        point.mean_waiting_deferred >= DEFERRED_SHARE * point.mean_waiting)
    return {
        "kv_capacity": kv_full,
        "deferred": deferred,
        "scheduler_cap": pinned and waits,
        "token_budget": budget_suspect and steps_full,
        "step_time": not kv_full and _step_time(step),
        "token_budget_partial": budget_suspect and not steps_known,
        # Nothing waits: every request is admitted, even where the load just fills the cap.
        "underloaded": not waits and not kv_full,
    }


def output_elasticity(running_growth_pct: float, throughput_gain_pct: float) -> float:
    """log(output ratio) / log(running ratio) between two load levels (running grew)."""
    if throughput_gain_pct <= -100:
        return -math.inf
    return math.log1p(throughput_gain_pct / 100) / math.log1p(running_growth_pct / 100)


def _step_time(step: _Step | None) -> bool:
    """More admitted requests (mean running up STEP_TIME_RUNNING_GROWTH_PCT or more) turned into
    little more output (elasticity under STEP_TIME_ELASTICITY)."""
    if step is None:
        return False
    growth, elasticity = step.running_growth_pct, step.output_elasticity
    if growth is None or elasticity is None or growth < STEP_TIME_RUNNING_GROWTH_PCT:
        return False
    return bool(elasticity < STEP_TIME_ELASTICITY)


def saturated(point: PointFigures, step: _Step | None) -> bool:
    """The ladder's symptom at this point: against the previous load level, under
    SATURATION_GAIN_PCT more output while latency grew or more requests waited."""
    if step is None:
        return False
    previous_waiting = step.previous_mean_waiting
    growth = step.latency_growth_pct
    return bool(step.throughput_gain_pct < SATURATION_GAIN_PCT and (
        (growth is not None and growth >= SATURATION_LATENCY_GROWTH_PCT)
        or (previous_waiting is not None and point.mean_waiting is not None
            and point.mean_waiting > previous_waiting)
    ))


def _unclear_why(point: PointFigures) -> str:
    assert point.mean_waiting is not None
    waits = point.mean_waiting >= WAITING_MEAN_MIN
    if waits and point.mean_running is None:
        limits = "" if point.seqs_limit is not None else " and max_num_seqs is not recorded"
        return (
            f"requests wait (mean {sentences.num(point.mean_waiting)}) but "
            f"{point.queue_source or 'the evidence'} has no count of running requests{limits}, "
            "so the scheduler cap and the token budget cannot be told apart"
        )
    if waits and point.seqs_limit is None:
        return (
            "requests wait but max_num_seqs is not recorded, so the scheduler cap and "
            "token budget cannot be judged"
        )
    return (
        "requests wait with running below max_num_seqs and KV not full, and "
        f"{_steps_text(point)}; compare with the next load level"
    )


def _steps_text(point: PointFigures) -> str:
    """What rules the token budget out: the steps against the budget, with the figures."""
    steps, budget = point.mean_tokens_per_step, point.token_budget
    if steps is None or budget is None:
        return "steps below the token budget"
    share = sentences.percent(steps / budget * 100)
    default = (" (vLLM's default)" if "max_num_batched_tokens" in point.limits_from_defaults
               else "")
    return (f"steps averaged {sentences.num(steps)} tokens, {share} of the {budget:,}-token "
            f"budget{default}: not the token budget")


# The order in which holding conditions decide the verdict (module docstring).
PRECEDENCE: tuple[str, ...] = (
    "kv_capacity",
    "deferred",
    "scheduler_cap",
    "token_budget",
    "step_time",
    "token_budget_partial",
    "underloaded",
)


def sparse_queue_samples(gap_fraction: float | None) -> bool:
    """True when the engine samples leave too much of a point uncovered to judge its queue."""
    return gap_fraction is not None and gap_fraction > QUEUE_GAP_MAX_FRACTION


def verdict(
    point: PointFigures, previous: PointFigures | None = None,
    noise_band_pct: float | None = None,
) -> Verdict:
    """The binding limit at one point, with the evidence numbers next to it.

    previous: the point at the next lower load level of the same ladder (`ladder_of`), needed
    for the step-time cause and the saturation symptom. Raises AnalysisError when the point has
    no engine samples (unless the client flag already decides), or when previous is not a lower
    level of the same config, replica count and workload spec. noise_band_pct: the run's +/-
    band for a change between two draws (analysis.noise), so a change inside it is said so.
    """
    kind: VerdictKind
    partial = False
    step: _Step | None = None
    also: tuple[VerdictKind, ...] = ()
    why: str | None = None
    if point.client_saturated:
        # The client's timings may be wrong, so no engine condition is evaluated beside it.
        kind = "client_bound"
    elif not _has_engine_data(point):
        raise AnalysisError(
            f"point {point.key} has no engine samples (running/waiting from /metrics); "
            "a bottleneck verdict needs them"
            if point.queue_source is None
            else f"point {point.key}: {point.queue_source} has no waiting count, which a "
            "bottleneck verdict needs"
        )
    elif sparse_queue_samples(point.queue_gap_fraction):
        assert point.queue_gap_fraction is not None  # sparse_queue_samples says so
        kind = "unclear"
        why = (
            "the engine's /metrics was sampled too sparsely: "
            f"{sentences.percent(point.queue_gap_fraction * 100)} "
            "of the point passed without a sample, so the queue may have filled and drained "
            "unseen; run a longer point"
        )
    else:
        if previous is not None:
            step = _saturation(point, previous)
        holds = _conditions(point, step)
        first = next((name for name in PRECEDENCE if holds[name]), None)
        # Other verdicts that hold too, by kind (the unchecked token budget as token_budget).
        also = tuple(
            "token_budget" if name == "token_budget_partial" else name  # type: ignore[misc]
            for name in PRECEDENCE
            if holds[name] and name != first
        )
        if first is None:
            kind = "unclear"
            why = _unclear_why(point)
        elif first == "token_budget_partial":
            kind, partial = "token_budget", True
        else:
            kind = first  # type: ignore[assignment]
    engine = kind != "client_bound"
    evidence = _evidence(
        point, noise_band_pct=noise_band_pct,
        **(dataclasses.asdict(step) if step is not None else {}),
        also=also, why=why,
        lacked=tuple(lacked_evidence(point)) if engine else (),
        saturated=engine and saturated(point, step),
        memory_bound=engine and memory_bound(
            point.hardware.bandwidth_pct if point.hardware else None),
    )
    return Verdict(
        key=point.key,
        config_label=point.config_label,
        max_num_seqs=point.max_num_seqs,
        max_num_batched_tokens=point.max_num_batched_tokens,
        settings=point.settings(),
        offered_concurrency=point.offered_concurrency,
        output_throughput=point.output_throughput,
        kind=kind,
        evidence=evidence,
        partial=partial,
        sentence=sentences.verdict_sentence(kind, evidence, partial),
        load_label=point.load_label,
    )


def verdicts_for_sweep(
    points: Sequence[PointFigures], noise_band_pct: float | None = None
) -> dict[str, Verdict]:
    """A verdict for every point, each compared with the previous load level of its own ladder
    (config, replica count, workload spec, repeat). Points without engine samples raise, as in
    verdict()."""
    groups: dict[tuple[str, int, WorkloadShape | None, int], list[PointFigures]] = {}
    for point in points:
        groups.setdefault(ladder_of(point), []).append(point)
    out: dict[str, Verdict] = {}
    for group in groups.values():
        ordered = sorted(group, key=lambda p: p.offered_concurrency)
        for before, after in pairwise(ordered):
            if before.offered_concurrency == after.offered_concurrency:
                raise AnalysisError(
                    f"points {before.key} and {after.key} share config, replica count, "
                    "workload spec, repeat and load level"
                )
        # A disturbed point is neither compared with the level below it nor the level the next
        # one is compared with: its change is the neighbour process's, not the engine's.
        previous = None
        for point in ordered:
            out[point.key] = verdict(point, None if point.disturbed else previous,
                                     noise_band_pct)
            if not point.disturbed:
                previous = point
    return out
