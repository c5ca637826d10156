"""Figure data for the run page and a report's charts. Plain dicts and lists of the values as
typed: the chart_data template filter escapes them for Plotly (plotly_data) as it writes them
into the page, and static/js/run.js (or report.js) turns them into Plotly traces. Every title and
line shape is set here, so the scripts only draw."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from analysis.types import (
    LATENCY_LABELS,
    UNIT_OUTPUT_TPS_PER_GPU,
    ParetoPoint,
    PointFigures,
    WorkloadShape,
)
from benchmarks.models import ExternalReference, Point
from benchmarks.storage import columnar
from judgement.figures import parse_spec
from judgement.rows import references
from runner.schema.result import HostCpu, LengthComparison, LengthHistogram

# Every latency a curve can be drawn against, labelled with its family (analysis.types).
LATENCY_METRICS: tuple[tuple[str, str], ...] = tuple(
    (field, title) for field, title in LATENCY_LABELS.items() if field.endswith("_ms")
)


def plotly_text(text: str) -> str:
    """Text for a Plotly label, trace name or hover text, shown as typed.

    Plotly reads a small HTML subset in those strings (<a href>, <b>, <br>) and renders it; a
    reference's source or an engine label is user input, so its <, > and & go in as entities,
    which Plotly turns back into the characters themselves.
    """
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def plotly_data(data: Any) -> Any:
    """Chart data with every string in it as plotly_text shows it (dict keys, which Plotly
    never shows, as they are).

    The one place chart text is escaped (the chart_data template filter calls it), so a field
    added later is covered too and nothing is escaped twice; our own line breaks live in the
    scripts' hovertemplates, never in the data.
    """
    if isinstance(data, str):
        return plotly_text(data)
    if isinstance(data, Mapping):
        return {key: plotly_data(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [plotly_data(value) for value in data]
    return data


def trace_name(engine_label: str, replicas: int) -> str:
    """One line per engine config and replica count: a node run is not a load level of its
    single-replica config (its throughput is the node's)."""
    return engine_label if replicas == 1 else f"{engine_label}, {replicas} replicas"


def throughput_figure(points: Iterable[Point]) -> dict[str, Any]:
    """Output tokens/s against each latency metric, one trace per engine config and replica
    count.

    Traces keep the order in which their configs first appear by load; within a trace, points
    go by offered load, so each line reads left to right as load rises.
    """
    traces: dict[tuple[str, int], dict[str, Any]] = {}
    for point in sorted(points, key=lambda p: (p.offered_concurrency, p.repeat)):
        trace = traces.setdefault(
            (point.engine_label, point.replicas),
            {"name": trace_name(point.engine_label, point.replicas),
             "y": [], "text": [], "valid": [], "x": {}},
        )
        disturbed = disturbed_by(point)
        trace["y"].append(point.output_throughput)
        trace["text"].append(f"{point.load_label}, repeat {point.repeat}"
                             + (f" (disturbed: others took {disturbed:.2f} cores)"
                                if disturbed is not None else ""))
        # Hollow: a point whose figures are not the engine's alone.
        trace["valid"].append(point.valid and not point.client_saturated and disturbed is None)
        for field, _ in LATENCY_METRICS:
            trace["x"].setdefault(field, []).append(getattr(point, field))
    return {
        "metrics": [{"field": field, "title": title} for field, title in LATENCY_METRICS],
        "traces": list(traces.values()),
    }


def disturbed_by(point: Point) -> float | None:
    """The cores other processes took during a disturbed point (HostCpu.disturbed); None when
    it was not disturbed or not measured."""
    if not point.host:
        return None
    host = HostCpu.model_validate(point.host)
    return host.taken_cores if host.disturbed else None


def _json_list(values: np.ndarray) -> list[float | None]:
    """NaN is not JSON: missing gauge readings become null (a gap in the line)."""
    return [None if math.isnan(v) else v for v in values.tolist()]


# The engine's gauges hold their value until the next scrape: between two samples the queue was
# last seen at the earlier one, so each reading is drawn as a step to the next ("hv"), never a
# slope that invents values nobody sampled. runner.measure.sampler.summarize holds them the same
# way.
GAUGE_LINE_SHAPE = "hv"


def samples_figure(blob: bytes | memoryview) -> dict[str, Any]:
    """Engine running vs waiting (and KV use) over time, one group of traces per replica."""
    columns = columnar.sample_columns(blob)
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
    return {"replicas": replicas, "line_shape": GAUGE_LINE_SHAPE}


# The Pareto chart's axes, with their units and the statistic they rest on.
PARETO_X_TITLE = "Output tokens/s per user (1000 / median TPOT in ms, vllm bench serve)"
PARETO_Y_TITLE = "Output tokens/s per {unit} (the point's / {unit}s it used)"


def pareto_figure(
    points: Sequence[ParetoPoint], frontier_keys: Sequence[str], labels: Mapping[str, str],
    unit: str = "GPU",
) -> dict[str, Any]:
    """Output tokens/s per GPU (unit: "CPU engine" for a CPU sweep) against tokens/s per user:
    the frontier joined in its drawing order, the points it beats apart (the page draws them
    faint). labels: key -> point label."""
    by_key = {p.key: p for p in points}
    on_frontier = set(frontier_keys)

    def series(keys: Sequence[str]) -> dict[str, list[Any]]:
        return {
            "keys": list(keys),
            "x": [by_key[k].tokens_per_user for k in keys],
            "y": [by_key[k].output_throughput_per_gpu for k in keys],
            "text": [labels.get(k, k) for k in keys],
        }

    return {
        "x_title": PARETO_X_TITLE,
        "y_title": PARETO_Y_TITLE.format(unit=unit),
        "frontier": series([k for k in frontier_keys if k in by_key]),
        "others": series([p.key for p in points if p.key not in on_frontier]),
    }


def _length_panel(title: str, histogram: LengthHistogram) -> dict[str, Any]:
    """One histogram as bars on their bins' centres, each side as a share of its requests (the
    file and the point hold different numbers of them)."""
    edges = histogram.edges

    def shares(counts: Sequence[int]) -> list[float]:
        total = sum(counts)
        return [100.0 * c / total if total else 0.0 for c in counts]

    return {
        "title": title,
        "x": [(low + high) / 2 for low, high in itertools.pairwise(edges)],
        "width": [high - low for low, high in itertools.pairwise(edges)],
        "bins": [f"{low:.0f}-{high - 1:.0f}" for low, high in itertools.pairwise(edges)],
        "source": shares(histogram.source),
        "sent": shares(histogram.sent),
    }


def lengths_figure(points: Iterable[Point]) -> dict[str, Any] | None:
    """A trace or length-log workload's request lengths beside what the run sent; None when no
    point has them. Every point of a run draws from one file with one seed, so the point that
    sent the most requests stands for the run."""
    measured = [p for p in points if p.lengths]
    if not measured:
        return None
    comparisons = [(LengthComparison.model_validate(p.lengths), p) for p in measured]
    comparison, point = max(comparisons, key=lambda pair: pair[0].sent_requests)
    return {
        # Shown in the page's own text (the template escapes it), not in Plotly.
        "point": f"{point.load_label}, {point.engine_label}, repeat {point.repeat}",
        "source_label": f"{comparison.file} ({comparison.source_requests:,} requests)",
        "sent_label": f"sent ({comparison.sent_requests:,} requests)",
        "panels": [
            _length_panel("Input tokens (as the server counted them)", comparison.input_tokens),
            _length_panel("Output tokens (max_tokens sent)", comparison.output_tokens),
        ],
    }


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
        r for r in references() if parse_spec(r.workload_spec) == benchmark_spec
    ]
