"""What the search reads of a measured point: its throughput, latencies, validity and cost."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from runner.schema.result import PointResult
from runner.schema.search_record import SEARCH_LATENCY_FIELDS


@dataclass(frozen=True)
class Observation:
    output_throughput: float
    valid: bool
    wall_s: float  # what the point cost on the node, start to finish
    latencies: Mapping[str, float | None] = field(default_factory=dict)
    preemptions: float | None = None  # vLLM's preemptions during the point; None: not read

    def latency(self, name: str) -> float | None:
        return self.latencies.get(name)


def observe(point: PointResult) -> Observation:
    """A point as the search reads it: Metrics' throughput, validity and latencies, and its
    wall time from the provenance (its window when it has none)."""
    metrics = point.metrics
    return Observation(
        output_throughput=metrics.output_throughput,
        valid=metrics.valid,
        wall_s=_wall_s(point),
        latencies={name: getattr(metrics, name) for name in SEARCH_LATENCY_FIELDS},
        preemptions=point.queue.preemptions,
    )


def _wall_s(point: PointResult) -> float:
    provenance = point.provenance
    if provenance is not None and provenance.started_at and provenance.finished_at:
        started = datetime.fromisoformat(provenance.started_at)
        finished = datetime.fromisoformat(provenance.finished_at)
        return max((finished - started).total_seconds(), 0.0)
    return point.window.end - point.window.start if point.window else point.metrics.duration
