"""The server-side evidence in an llm-d-benchmark report, as an imported point's engine queue.

llm-d-benchmark scrapes each engine pod's /metrics during the run. From 0.2.1 (its change
"embed per-timestamp engine and router metrics in the report") it keeps the scrapes, downsampled
to at most 256 points, as results.observability.components[].time_series, one component per
pod: num_requests_running, num_requests_waiting, kv_cache_usage (vllm:kv_cache_usage_perc, a
fraction, or percent), num_preemptions (the cumulative counter), generation_tokens and the
prefix-cache counters, each a list of {ts, value}. Those become EngineSamples, a replica a pod,
on the point's clock (0 at run.time.start), and Headroom summarises them over the point's window
with the sampler's own function (runner.measure.sampler.summarize), as it does its own samples.

Without time series, a component's aggregate (running_requests, waiting_requests and
kv_cache_usage statistics) is the queue: means add up over the pods, peaks are the highest
pod's maximum, KV use is the pods' mean (QueueSummary's node rules). A 0.1 report has
metrics.service batch_size and queue_size, read as running and waiting. Either way the evidence
is labelled as llm-d's scrape (ServerEvidence), with what it lacks.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from runner.importer.peers import number
from runner.measure.sampler import summarize
from runner.schema.records import EngineSample
from runner.schema.result import ServerEvidence
from runner.schema.samples import QueueSummary

SCRAPE = "llm-d-benchmark's scrape of the engines' /metrics"
# Time series name -> EngineSample field.
SERIES_FIELDS = {
    "num_requests_running": "running",
    "num_requests_waiting": "waiting",
    "kv_cache_usage": "kv_usage",
    "num_preemptions": "preemptions_total",
    "generation_tokens": "generation_tokens_total",
    "prompt_tokens": "prompt_tokens_total",
    "prefix_cache_queries": "prefix_cache_queries_total",
    "prefix_cache_hits": "prefix_cache_hits_total",
}

# The queue, its samples, and the label: what a report's evidence gives its point.
Evidence = tuple[QueueSummary | None, list[EngineSample], ServerEvidence | None]
NONE: Evidence = (None, [], None)


def engine_queue(
    components: list[dict[str, Any]], start: float | None, duration: float, *, own: bool = False
) -> Evidence:
    """0.2's engine components: their time series summarised, else their aggregates. own: the
    report is Headroom's export (runner.llm_d_export), whose aggregates are Headroom's own
    summary over the point's window: they are kept as they are, the samples beside them."""
    if not components:
        return NONE
    samples = series_samples(components, start)
    if own:
        return _own_queue(components, samples, duration)
    # Series of KV use or GPU load alone (0.2's) hold no queue: the aggregates then decide.
    if any(sample.waiting is not None for sample in samples):
        summary = summarize(samples, 0.0, duration)
        where = ("from run.time.start" if start is not None
                 else "from the first scrape (the report has no run.time.start)")
        evidence = ServerEvidence(
            tool=SCRAPE, file="results.observability time series", kind="samples",
            lacks=lacks(summary),
            notes=[f"engine queue evidence: {SCRAPE} ({len(samples)} samples of "
                   f"{len(components)} engine pods), summarised by Headroom over the point's "
                   f"window, timed {where}"],
        )  # fmt: skip
        return summary, samples, evidence
    aggregate = aggregate_queue(components)
    if aggregate is None:
        return NONE
    evidence = ServerEvidence(
        tool=SCRAPE, file="results.observability aggregates", kind="summary",
        lacks=lacks(aggregate),
        notes=[f"engine queue evidence: {SCRAPE}, as the report's aggregates over the point "
               f"(means and maxima of {len(components)} engine components), not Headroom's "
               "samples"],
    )  # fmt: skip
    return aggregate, [], evidence


def _own_queue(
    components: list[dict[str, Any]], samples: list[EngineSample], duration: float
) -> Evidence:
    summary = aggregate_queue(components)
    if summary is None:
        return NONE
    if samples:
        counted = summarize(samples, 0.0, duration)
        summary.preemptions = counted.preemptions
        summary.generation_tokens = counted.generation_tokens
        summary.samples, summary.max_gap_s = counted.samples, counted.max_gap_s
    evidence = ServerEvidence(
        tool="Headroom's own /metrics samples, exported as an llm-d report",
        file="results.observability", kind="summary", lacks=lacks(summary),
        notes=["engine queue evidence: Headroom's own summary, as its llm-d export carried it"],
    )  # fmt: skip
    return summary, samples, evidence


def service_queue(service: dict[str, Any]) -> Evidence:
    """0.1's metrics.service: batch_size as running, queue_size as waiting."""
    running, waiting = _mean(service.get("batch_size")), _mean(service.get("queue_size"))
    if running is None and waiting is None:
        return NONE
    summary = QueueSummary(
        mean_running=running, mean_waiting=waiting,
        peak_running=number((service.get("batch_size") or {}).get("max")),
        peak_waiting=number((service.get("queue_size") or {}).get("max")),
    )  # fmt: skip
    evidence = ServerEvidence(
        tool=SCRAPE, file="metrics.service", kind="summary", lacks=lacks(summary),
        notes=["engine queue evidence: the report's metrics.service batch_size (read as "
               "running) and queue_size (waiting), not Headroom's samples; kv_cache_size is a "
               "size, not a share of the cache, and is kept under its name"],
    )  # fmt: skip
    return summary, [], evidence


def _mean(block: Any) -> float | None:
    return number(block.get("mean")) if isinstance(block, dict) else number(block)


def instant(value: Any) -> float | None:
    """Epoch seconds of an ISO 8601 instant (YAML reads one as a datetime); None if none."""
    if isinstance(value, datetime):
        return value.timestamp()
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def series_samples(components: list[dict[str, Any]], start: float | None) -> list[EngineSample]:
    """Each engine pod's time series as samples, one replica a pod, on the point's clock."""
    by_time: dict[tuple[int, float], dict[str, float]] = {}
    for replica, component in enumerate(components):
        series = component.get("time_series") or {}
        for name, field in SERIES_FIELDS.items():
            block = series.get(name)
            if not isinstance(block, dict):
                continue
            scale = 0.01 if name == "kv_cache_usage" and block.get("units") == "percent" else 1.0
            for entry in block.get("series") or []:
                if not isinstance(entry, dict):
                    continue
                moment = instant(entry.get("ts"))
                value = number(entry.get("value", entry.get("mean")))
                if moment is None or value is None:
                    continue
                by_time.setdefault((replica, moment), {})[field] = value * scale
    if not by_time:
        return []
    origin = start if start is not None else min(moment for _, moment in by_time)
    return [
        EngineSample.model_validate({"t": moment - origin, "replica": replica, **values})
        for (replica, moment), values in sorted(by_time.items(), key=lambda item: item[0][1])
    ]


def aggregate_queue(components: list[dict[str, Any]]) -> QueueSummary | None:
    """The engine components' aggregates (module docstring)."""
    def stats(name: str) -> list[dict[str, Any]]:
        return [block for c in components
                if isinstance(block := (c.get("aggregate") or {}).get(name), dict)]  # fmt: skip

    running, waiting = stats("running_requests"), stats("waiting_requests")
    kv = stats("kv_cache_usage")
    if not running and not waiting:
        return None
    kv_scale = 0.01 if kv and kv[0].get("units") == "percent" else 1.0
    kv_means = [v * kv_scale for b in kv if (v := number(b.get("mean"))) is not None]
    return QueueSummary(
        mean_running=_total(running, "mean"), mean_waiting=_total(waiting, "mean"),
        peak_running=_highest(running, "max"), peak_waiting=_highest(waiting, "max"),
        mean_kv_usage=sum(kv_means) / len(kv_means) if kv_means else None,
        peak_kv_usage=_highest(kv, "max", kv_scale),
    )  # fmt: skip


def _total(blocks: list[dict[str, Any]], key: str) -> float | None:
    values = [v for b in blocks if (v := number(b.get(key))) is not None]
    return sum(values) if values else None


def _highest(blocks: list[dict[str, Any]], key: str, scale: float = 1.0) -> float | None:
    values = [v * scale for b in blocks if (v := number(b.get(key))) is not None]
    return max(values) if values else None


def lacks(summary: QueueSummary) -> list[str]:
    """What a verdict reads that the summary does not hold."""
    return [what for what, value in (
        ("waiting requests", summary.mean_waiting), ("running requests", summary.mean_running),
        ("KV cache use", summary.mean_kv_usage), ("preemptions", summary.preemptions),
    ) if value is None]  # fmt: skip
