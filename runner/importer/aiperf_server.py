"""AIPerf's server metrics export (server_metrics_export.json) as the point's engine queue
evidence, labelled as AIPerf's scrape.

AIPerf scrapes the server's Prometheus /metrics while it runs (on by default from 0.4; every
AIPERF_SERVER_METRICS_COLLECTION_INTERVAL, 333 ms) and writes each metric's statistics over
the profiling phase (checked against AIPerf 0.13's aiperf/server_metrics/export_stats.py):

- a gauge's `stats.avg` is the plain mean of its scrapes inside the phase (np.mean, not
  weighted by time, as Headroom's means are) and `stats.max` the highest scrape: vLLM's
  num_requests_waiting and num_requests_running become the mean and peak waiting and running,
  kv_cache_usage_perc (0-1; gpu_cache_usage_perc before vLLM renamed it) the mean and peak KV
  use;
- a counter's `stats.total` is its increase over the phase (from the last scrape before it):
  num_preemptions is the point's preemptions, generation_tokens its generated tokens;
- a histogram's `stats.avg` is its sum's increase over its count's: request_queue_time_seconds
  the mean queue time, iteration_tokens_total the mean tokens per engine step. Its percentiles
  are bucket estimates, kept only under AIPerf's names.

Each metric has a series per endpoint and label set. A vLLM engine labels its queue gauges with
engine; several series are several engines behind the scrape, whose waiting and running add up
(the mean of each summed, the peak the highest one's, as QueueSummary combines replicas) and
whose KV use is averaged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runner.importer.peers import flat_figures, number
from runner.schema.result import PointResult, ServerEvidence
from runner.schema.samples import QueueSummary

SOURCE = "AIPerf's server metrics scrape"
FIGURE_PREFIX = "server"
# vLLM's names as AIPerf keys them (Prometheus family names: a counter without _total).
WAITING = ("vllm:num_requests_waiting",)
RUNNING = ("vllm:num_requests_running",)
KV_USAGE = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
PREEMPTIONS = ("vllm:num_preemptions", "vllm:num_preemptions_total")
GENERATION_TOKENS = ("vllm:generation_tokens", "vllm:generation_tokens_total")
QUEUE_TIME = ("vllm:request_queue_time_seconds",)
TOKENS_PER_STEP = ("vllm:iteration_tokens_total",)


def is_server_metrics(document: Any) -> bool:
    """AIPerf's server_metrics_export.json: metrics keyed by name, each with its series, and a
    summary of the endpoints scraped."""
    if not isinstance(document, dict):
        return False
    summary, metrics = document.get("summary"), document.get("metrics")
    return (
        isinstance(summary, dict)
        and "endpoints_configured" in summary
        and isinstance(metrics, dict)
        and all(isinstance(value, dict) and "series" in value for value in metrics.values())
    )


@dataclass
class ServerScrape:
    """What AIPerf's export gives a point: its queue, the label and lacks, its figures."""

    queue: QueueSummary | None
    evidence: ServerEvidence
    figures: dict[str, float]

    def attach(self, point: PointResult) -> None:
        if self.queue is not None:
            point.queue = self.queue
        if point.peer is not None:
            point.peer.server = self.evidence
            point.peer.figures.update(self.figures)
        point.notes.extend(self.evidence.notes)


def _series_stats(metrics: dict[str, Any], names: tuple[str, ...]) -> list[dict[str, Any]]:
    """The stats of every series of the first of the names the export has."""
    for name in names:
        metric = metrics.get(name)
        if isinstance(metric, dict) and isinstance(metric.get("series"), list):
            return [s["stats"] for s in metric["series"]
                    if isinstance(s, dict) and isinstance(s.get("stats"), dict)]  # fmt: skip
    return []


def _summed(stats: list[dict[str, Any]], key: str) -> float | None:
    values = [number(s.get(key)) for s in stats]
    return sum(v for v in values if v is not None) if any(v is not None for v in values) else None


def _highest(stats: list[dict[str, Any]], key: str) -> float | None:
    values = [v for s in stats if (v := number(s.get(key))) is not None]
    return max(values) if values else None


def _averaged(stats: list[dict[str, Any]], key: str) -> float | None:
    values = [v for s in stats if (v := number(s.get(key))) is not None]
    return sum(values) / len(values) if values else None


def read_server_metrics(document: dict[str, Any], *, name: str) -> ServerScrape:
    """The export's queue evidence and AIPerf's figures for the point it came with."""
    metrics = document.get("metrics") or {}
    version = str(document.get("aiperf_version") or "") or "(version not in the file)"
    label = f"{SOURCE} (AIPerf {version}, schema {document.get('schema_version', '?')}) in {name}"
    waiting, running = _series_stats(metrics, WAITING), _series_stats(metrics, RUNNING)
    kv = _series_stats(metrics, KV_USAGE)
    mean_kv, peak_kv = _averaged(kv, "avg"), _highest(kv, "max")
    notes = [f"engine queue evidence from {label}: means are plain means of AIPerf's scrapes "
             "over the profiling phase (not weighted by time), peaks the highest scrape"]
    if (mean_kv is not None and mean_kv > 1) or (peak_kv is not None and peak_kv > 1):
        mean_kv = peak_kv = None
        notes.append("its KV cache figure is not a 0-1 share: not read as KV use")
    if len(waiting) > 1 or len(running) > 1:
        notes.append("the scrape holds several engines' series: their waiting and running "
                     "are added up, their KV use averaged")  # fmt: skip
    queue = QueueSummary(
        mean_waiting=_summed(waiting, "avg"),
        peak_waiting=_highest(waiting, "max"),
        mean_running=_summed(running, "avg"),
        peak_running=_highest(running, "max"),
        mean_kv_usage=mean_kv,
        peak_kv_usage=peak_kv,
        preemptions=_summed(_series_stats(metrics, PREEMPTIONS), "total"),
        generation_tokens=_summed(_series_stats(metrics, GENERATION_TOKENS), "total"),
        mean_queue_time_s=_averaged(_series_stats(metrics, QUEUE_TIME), "avg"),
        mean_tokens_per_step=_averaged(_series_stats(metrics, TOKENS_PER_STEP), "avg"),
    )
    lacks = [
        what
        for what, value in (("waiting requests", queue.mean_waiting),
                            ("running requests", queue.mean_running),
                            ("KV cache use", queue.mean_kv_usage),
                            ("preemptions", queue.preemptions))
        if value is None
    ]  # fmt: skip
    if len(lacks) == 4:
        notes = [f"{label} holds none of vLLM's queue metrics (was the server vLLM?): the point "
                 "has no engine queue evidence"]
    evidence = ServerEvidence(tool=SOURCE, file=name, kind="summary", lacks=lacks, notes=notes)
    return ServerScrape(
        queue=None if len(lacks) == 4 else queue, evidence=evidence, figures=_figures(metrics)
    )


def _figures(metrics: dict[str, Any]) -> dict[str, float]:
    """vLLM's metrics' statistics under AIPerf's names ("server.vllm:num_requests_waiting.max"),
    the first series of each; other servers' metrics are left in the file."""
    figures: dict[str, float] = {}
    for name, metric in metrics.items():
        if not str(name).startswith("vllm:") or not isinstance(metric, dict):
            continue
        series = metric.get("series") or []
        if series and isinstance(series[0], dict):
            figures |= flat_figures(series[0].get("stats"), f"{FIGURE_PREFIX}.{name}")
    return figures
