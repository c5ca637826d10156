"""Figure data for the run page. Plain dicts and lists: json_script / JsonResponse carry them,
static/js/run.js turns them into Plotly traces."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from benchmarks import storage
from judgement.analysis.types import LATENCY_LABELS
from benchmarks.models import Point

# Every latency a curve can be drawn against, labelled with its family (analysis.types).
LATENCY_METRICS: tuple[tuple[str, str], ...] = tuple(
    (field, title) for field, title in LATENCY_LABELS.items() if field.endswith("_ms")
)


def throughput_figure(points: Iterable[Point]) -> dict[str, Any]:
    """Output tokens/s against each latency metric, one trace per engine config.

    Traces keep the order in which their configs were measured; within a trace, points go by
    offered load, so each line reads left to right as load rises.
    """
    traces: dict[str, dict[str, Any]] = {}
    for point in sorted(points, key=lambda p: (p.offered_concurrency, p.repeat)):
        trace = traces.setdefault(
            point.engine_label,
            {"name": point.engine_label, "y": [], "text": [], "valid": [], "x": {}},
        )
        trace["y"].append(point.output_throughput)
        trace["text"].append(f"{point.load_label}, repeat {point.repeat}")
        trace["valid"].append(point.valid and not point.client_saturated)
        for field, _ in LATENCY_METRICS:
            trace["x"].setdefault(field, []).append(getattr(point, field))
    return {
        "metrics": [{"field": field, "title": title} for field, title in LATENCY_METRICS],
        "traces": list(traces.values()),
    }


def _json_list(values: np.ndarray) -> list[float | None]:
    """NaN is not JSON: missing gauge readings become null (a gap in the line)."""
    return [None if math.isnan(v) else v for v in values.tolist()]


def samples_figure(blob: bytes | memoryview) -> dict[str, Any]:
    """Engine running vs waiting (and KV use) over time, one group of traces per replica."""
    columns = storage.sample_columns(blob)
    replicas = []
    for replica in np.unique(columns["replica"]).tolist():
        mask = columns["replica"] == replica
        replicas.append(
            {
                "replica": replica,
                "t": _json_list(columns["t"][mask]),
                "running": _json_list(columns["running"][mask]),
                "waiting": _json_list(columns["waiting"][mask]),
                "kv_usage": _json_list(columns["kv_usage"][mask]),
            }
        )
    return {"replicas": replicas}
