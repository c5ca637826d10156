"""inference-perf's Prometheus report of a stage (stage_N_prometheus_metrics.json) as the
point's engine queue evidence, labelled as inference-perf's scrape.

inference-perf asks Prometheus for each figure once, over the stage's window (its start to its
end plus a scrape interval and a buffer): a gauge's mean is avg_over_time of the gauge, a
histogram's mean is rate(_sum) / rate(_count), its percentiles histogram_quantile. It keeps the
first series Prometheus answers with, and writes 0 for a query that found no series. So:

- queue_len.mean (vllm:num_requests_waiting) is the mean waiting; num_requests_running.mean
  (from 0.4.1) the mean running; kv_cache_usage_percentage.mean (vllm:gpu_cache_usage_perc,
  0-1, from 0.2; vllm:kv_cache_usage_perc later) the mean KV use; request_queue_time.mean and
  iteration_tokens.mean (sum over count, as Headroom's) the mean queue time and tokens per step.
  Each is a mean over the window, as Headroom's time-weighted means are; there are no peaks.
- A KV mean of exactly 0 while requests ran is read as not reported: it is what inference-perf
  writes when the gauge was not found (vLLM renamed vllm:gpu_cache_usage_perc to
  vllm:kv_cache_usage_perc), and a 0 there would call a full cache empty. A running mean of 0
  while requests waited is read alike.
- num_preemptions_total.mean is the mean of vLLM's cumulative counter, not its increase over the
  stage: 0 means none happened (the counter never left 0); anything else is kept only under
  inference-perf's name.
- Percentiles are histogram_quantile's, interpolated inside a bucket, which Headroom's bucket
  bounds are not: kept only under inference-perf's names ("server.request_queue_time.p99").
- A report whose request count is 0 found no series at all: it is kept as figures, with no
  queue evidence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runner.importer.detect import prometheus_format
from runner.importer.peers import flat_figures, number
from runner.schema.result import PointResult, ServerEvidence
from runner.schema.samples import QueueSummary

SOURCE = "inference-perf's Prometheus report"
FIGURE_PREFIX = "server"


@dataclass
class ServerReport:
    """What a Prometheus report gives a point: its queue, the label and lacks, its figures."""

    queue: QueueSummary | None
    evidence: ServerEvidence
    figures: dict[str, float] = field(default_factory=dict)

    def attach(self, point: PointResult) -> None:
        if self.queue is not None:
            point.queue = self.queue
        if point.peer is not None:
            point.peer.server = self.evidence
        point.notes.extend(self.evidence.notes)


def _mean(successes: dict[str, Any], name: str) -> float | None:
    block = successes.get(name)
    return number(block.get("mean")) if isinstance(block, dict) else None


def read_server_report(document: dict[str, Any], *, name: str, completed: int) -> ServerReport:
    """The report's queue evidence and figures; completed: the stage's successful requests."""
    successes = document.get("successes") or {}
    figures = flat_figures(successes, f"{FIGURE_PREFIX}")
    label = f"{SOURCE} ({prometheus_format(successes)}) in {name}"
    if not number(successes.get("count")):
        evidence = ServerEvidence(
            tool=SOURCE, file=name, kind="summary", lacks=["every server figure"],
            notes=[f"{label} counted no requests over the stage: Prometheus found none of "
                   "vLLM's series there, so the point has no engine queue evidence"],
        )  # fmt: skip
        return ServerReport(queue=None, evidence=evidence, figures=figures)
    waiting = _mean(successes, "queue_len")
    running = _mean(successes, "num_requests_running")
    kv = _mean(successes, "kv_cache_usage_percentage")
    notes = [f"engine queue evidence from {label}: means over the stage's window as Prometheus "
             "computed them (avg_over_time), not Headroom's samples; no peaks"]  # fmt: skip
    if kv == 0 and completed:
        kv = None
        notes.append("its KV cache mean of 0 while requests ran is inference-perf's 0 for a "
                     "gauge Prometheus did not find: read as not reported")  # fmt: skip
    elif kv is not None and kv > 1:
        kv = None
        notes.append("its KV cache figure is not a 0-1 share: not read as KV use")
    if running == 0 and waiting:
        running = None
        notes.append("its running mean of 0 while requests waited is inference-perf's 0 for a "
                     "gauge Prometheus did not find: read as not reported")  # fmt: skip
    preemption_mean = _mean(successes, "num_preemptions_total")
    queue = QueueSummary(
        mean_waiting=waiting,
        mean_running=running,
        mean_kv_usage=kv,
        preemptions=0.0 if preemption_mean == 0 else None,
        mean_queue_time_s=_mean(successes, "request_queue_time"),
        mean_tokens_per_step=_mean(successes, "iteration_tokens"),
    )
    lacks = [
        what
        for what, value in (("waiting requests", waiting), ("running requests", running),
                            ("KV cache use", kv), ("preemptions", queue.preemptions))
        if value is None
    ]  # fmt: skip
    evidence = ServerEvidence(tool=SOURCE, file=name, kind="summary", lacks=lacks, notes=notes)
    return ServerReport(queue=queue, evidence=evidence, figures=figures)
