"""Verdicts for the run page and reports: one per point, judged ladder by ladder, what the sweep
changed, each config's diagnosis, and the evidence numbers shown beside a verdict."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from analysis import AnalysisError, diagnosis, noise, sentences, sweep_story, verdicts
from analysis.types import PointFigures, SweepSummary, Verdict
from runner.schema.samples import QueueSummary


@dataclass(frozen=True)
class VerdictRows:
    by_key: dict[str, Verdict]
    missing: dict[str, str]  # key -> why no verdict
    error: str | None


def _has_samples(f: PointFigures) -> bool:
    """Headroom's own samples, or an imported scrape with a waiting count (the verdict then
    says what that scrape lacked: analysis.verdicts.lacked_evidence)."""
    if f.client_saturated:
        return True
    if f.queue_source is not None:
        return f.mean_waiting is not None
    return f.queue_samples > 0 and f.mean_running is not None


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
        if f.queue_source is None
        else f"{f.queue_source} has no count of waiting requests; a verdict needs it"
        for f in figs
        if not _has_samples(f)
    }
    ladders: dict[Any, list[PointFigures]] = {}
    for f in judged:
        ladders.setdefault(verdicts.ladder_of(f), []).append(f)
    by_key: dict[str, Verdict] = {}
    errors = []
    band = noise.run_noise(figs).step_band_pct()
    for ladder in ladders.values():
        try:
            by_key |= verdicts.verdicts_for_sweep(ladder, band)
        except AnalysisError as exc:
            missing |= {f.key: str(exc) for f in ladder}
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
        return sweep_story.summarize_sweep_change(list(found.by_key.values()), missing), None
    except AnalysisError as exc:
        return None, str(exc)


def cause(verdict: Verdict) -> sentences.Sentence:
    """A point's cause in a clause, with its figure (sweep_story.cause): a report's binding
    limit."""
    return sweep_story.cause(verdict)


def step_story(before: Verdict, after: Verdict) -> sentences.Sentence:
    """The step from one judged point to another, told as the sweep's story tells its steps:
    what a report's queue evidence says of its before and after."""
    return sweep_story.step_between(before, after).story


def ladder_diagnoses(found: VerdictRows) -> tuple[str, ...]:
    """Each engine config's diagnosis over its load ladder (diagnosis.diagnose_ladders)."""
    return diagnosis.diagnose_ladders(list(found.by_key.values()))


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
    ("mean_kv_usage", "mean KV", "percent", "mean_kv_usage"),
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
EVIDENCE_FRACTIONS = frozenset({"peak_kv_usage", "mean_kv_usage", "queue_gap_fraction",
                                "prefix_cache_hit_rate", "at_cap_share"})

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
    replicas = ev.replicas
    return [
        EvidenceItem(
            label=_evidence_label(label, field, replicas),
            value=getattr(ev, name) * (100.0 if name in EVIDENCE_FRACTIONS else 1.0),
            kind=kind,
        )
        for name, label, kind, field in EVIDENCE_ITEMS
        if getattr(ev, name) is not None
    ]
