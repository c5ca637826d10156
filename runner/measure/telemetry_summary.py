"""A point's telemetry summary: energy, power and utilization over its window."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from runner.measure.telemetry import NO_GPU_TELEMETRY, TelemetrySampler
from runner.schema.result import PointResult, Window
from runner.schema.samples import (
    CpuTelemetry,
    EnergyMethod,
    GpuTelemetry,
    TelemetrySample,
    TelemetrySource,
    TelemetrySummary,
)


def record_telemetry(point: PointResult, sampler: TelemetrySampler,
                     raw: Sequence[TelemetrySample], t0: float) -> None:
    """Rebase the readings on the point's t0 and put them and their summary on the point."""
    samples = [s.model_copy(update={"t": s.t - t0}) for s in raw]
    point.telemetry_samples = samples
    point.telemetry = summarize_telemetry(
        samples, point.window, point.metrics.total_output_tokens,
        source=sampler.source_name, note=sampler.note(),
    )


# ---------------------------------------------------------------------------------------------
# The summary over the window
# ---------------------------------------------------------------------------------------------

Series = list[tuple[float, float]]


def summarize_telemetry(
    samples: Sequence[TelemetrySample],
    window: Window | None,
    output_tokens: int,
    *,
    source: TelemetrySource | None,
    note: str | None = None,
) -> TelemetrySummary:
    """Per GPU and per CPU engine over [window.start, window.end], and the point's energy.

    The point's energy is all its GPUs' (None unless every sampled GPU has a figure);
    joules per output token is that energy over the point's output tokens.
    """
    summary = TelemetrySummary(source=source, samples=len(samples))
    if note:
        summary.notes.append(note)
    if not samples:
        return summary
    if window is None or window.end <= window.start:
        summary.notes.append("the point has no client window, so no telemetry figures")
        return summary
    start, end = window.start, window.end
    summary.window_s = end - start
    gpus = sorted({s.gpu for s in samples if s.gpu is not None})
    summary.gpus = [
        _gpu_summary([s for s in samples if s.gpu == gpu], start, end) for gpu in gpus
    ]
    cpu_rows = [s for s in samples if s.gpu is None and s.cpu_seconds is not None]
    for replica in sorted({s.replica for s in cpu_rows}):
        cpu, problem = _cpu_summary(replica, [s for s in cpu_rows if s.replica == replica],
                                    start, end)
        summary.cpu.append(cpu)
        if problem:
            summary.notes.append(f"no CPU-seconds figure for replica {replica}: {problem}")
    if summary.cpu and not summary.gpus:
        summary.notes.append(
            f"CPU engine: these are its processes' CPU use, and {NO_GPU_TELEMETRY} "
            "(it uses no GPU)"
        )
    _gpu_totals(summary, output_tokens)
    _cpu_totals(summary)
    return summary


def _gpu_summary(rows: list[TelemetrySample], start: float, end: float) -> GpuTelemetry:
    first = rows[0]
    gpu = GpuTelemetry(
        gpu=first.gpu or 0,
        replica=first.replica,
        samples=sum(1 for s in rows if start <= s.t <= end),
    )
    series = {name: _series(rows, name) for name in
              ("utilization_pct", "memory_used_mib", "power_w", "sm_clock_mhz", "energy_j")}
    gpu.mean_utilization_pct = _mean(series["utilization_pct"], start, end)
    gpu.mean_memory_used_mib = _mean(series["memory_used_mib"], start, end)
    gpu.peak_memory_used_mib = _peak(series["memory_used_mib"], start, end)
    gpu.mean_power_w = _mean(series["power_w"], start, end)
    gpu.peak_power_w = _peak(series["power_w"], start, end)
    gpu.mean_sm_clock_mhz = _mean(series["sm_clock_mhz"], start, end)
    method: EnergyMethod
    if series["energy_j"]:
        method = "counter"
        energy, problem = _counter_increase(series["energy_j"], start, end, "energy counter")
    elif series["power_w"]:
        method = "power-integral"
        energy, problem = _covering_integral(series["power_w"], start, end, "power readings")
    else:
        energy, problem = None, "the GPU reported neither an energy counter nor power"
    if energy is not None and energy <= 0:
        energy, problem = None, f"its {method} shows no energy used over the window"
    if energy is None:
        gpu.energy_note = f"no energy figure for GPU {gpu.gpu}: {problem}"
    else:
        gpu.energy_j, gpu.energy_method = energy, method
    return gpu


def _cpu_summary(
    replica: int, rows: list[TelemetrySample], start: float, end: float
) -> tuple[CpuTelemetry, str | None]:
    cpu = CpuTelemetry(replica=replica, samples=sum(1 for s in rows if start <= s.t <= end))
    seconds, problem = _counter_increase(_series(rows, "cpu_seconds"), start, end, "CPU time")
    if seconds is not None:
        cpu.cpu_seconds = seconds
        cpu.mean_cores_busy = seconds / (end - start)
    return cpu, problem


def _gpu_totals(summary: TelemetrySummary, output_tokens: int) -> None:
    gpus = summary.gpus
    if not gpus:
        return
    utilizations = [g.mean_utilization_pct for g in gpus if g.mean_utilization_pct is not None]
    if utilizations:
        summary.mean_utilization_pct = sum(utilizations) / len(utilizations)
    powers = [g.mean_power_w for g in gpus]
    if all(p is not None for p in powers):
        summary.mean_power_w = sum(p for p in powers if p is not None)
    peaks = [g.peak_power_w for g in gpus if g.peak_power_w is not None]
    summary.peak_power_w = max(peaks) if peaks else None
    summary.notes += [g.energy_note for g in gpus if g.energy_note]
    energies = [g.energy_j for g in gpus]
    if any(e is None for e in energies):
        return  # a node's energy without one of its GPUs would be too low
    summary.energy_j = sum(e for e in energies if e is not None)
    methods = {g.energy_method for g in gpus}
    summary.energy_method = methods.pop() if len(methods) == 1 else "mixed"
    if output_tokens > 0:
        summary.joules_per_output_token = summary.energy_j / output_tokens
        summary.output_tokens_per_joule = output_tokens / summary.energy_j
    else:
        summary.notes.append("no output tokens, so no joules per output token")


def _cpu_totals(summary: TelemetrySummary) -> None:
    seconds = [c.cpu_seconds for c in summary.cpu]
    if summary.cpu and all(s is not None for s in seconds) and summary.window_s:
        summary.cpu_seconds = sum(s for s in seconds if s is not None)
        summary.mean_cores_busy = summary.cpu_seconds / summary.window_s


def _series(rows: list[TelemetrySample], field: str) -> Series:
    return [(s.t, value) for s in rows if (value := getattr(s, field)) is not None]


def _at(series: Series, t: float) -> float | None:
    """The value at t on the straight line between the readings on either side; a reading at
    t is its own value; None outside the readings."""
    for (t1, v1), (t2, v2) in pairwise(series):
        if t1 <= t <= t2:
            return v1 if t2 == t1 else v1 + (v2 - v1) * (t - t1) / (t2 - t1)
    if series and series[-1][0] == t:  # a single reading, or t on the last one
        return series[-1][1]
    return None


def _integral(series: Series, start: float, end: float) -> float:
    """Trapezoid integral over [start, end], which the readings must cover."""
    points = [(start, _at(series, start))]
    points += [(t, v) for t, v in series if start < t < end]
    points.append((end, _at(series, end)))
    total = 0.0
    for (t1, v1), (t2, v2) in pairwise(points):
        assert v1 is not None and v2 is not None
        total += (t2 - t1) * (v1 + v2) / 2
    return total


def _mean(series: Series, start: float, end: float) -> float | None:
    """Time-weighted mean over the part of the window the readings cover.

    A window the readings cover only in part is averaged over that part (what was observed);
    one reading alone inside the window is the mean; none at all: None.
    """
    if not series:
        return None
    left, right = max(start, series[0][0]), min(end, series[-1][0])
    if right > left:
        return _integral(series, left, right) / (right - left)
    inside = [v for t, v in series if start <= t <= end]
    return sum(inside) / len(inside) if inside else None


def _peak(series: Series, start: float, end: float) -> float | None:
    """The highest reading taken inside the window."""
    inside = [v for t, v in series if start <= t <= end]
    return max(inside) if inside else None


def _covers(series: Series, start: float, end: float, what: str) -> str | None:
    """Why the readings cannot give a figure for the whole window; None when they can."""
    if not series:
        return f"no {what}"
    first, last = series[0][0], series[-1][0]
    if first > start or last < end:
        return (
            f"the {what} cover {first:.2f}-{last:.2f} s, not the whole window "
            f"{start:.2f}-{end:.2f} s"
        )
    return None


def _covering_integral(
    series: Series, start: float, end: float, what: str
) -> tuple[float | None, str | None]:
    problem = _covers(series, start, end, what)
    return (None, problem) if problem else (_integral(series, start, end), None)


def _counter_increase(
    series: Series, start: float, end: float, what: str
) -> tuple[float | None, str | None]:
    """A running total's increase over [start, end], interpolated at both edges.

    Refused when the readings do not reach both edges, or when the total went backwards
    between the readings that bracket the window (a reset or a wrap: the increase is unknown),
    after two readings stamped out of order are put back in order (_in_order).
    """
    series = _in_order(series)
    problem = _covers(series, start, end, f"{what} readings")
    if problem:
        return None, problem
    lo = max(i for i, (t, _) in enumerate(series) if t <= start)
    hi = min(i for i, (t, _) in enumerate(series) if t >= end)
    for (t1, v1), (_t2, v2) in pairwise(series[lo : hi + 1]):
        if v2 < v1:
            return None, (
                f"the {what} went backwards ({v1:g} to {v2:g}) after {t1:.2f} s: a reset or a "
                "wrap, so its increase is unknown"
            )
    at_start, at_end = _at(series, start), _at(series, end)
    assert at_start is not None and at_end is not None
    return at_end - at_start, None


def _in_order(series: Series) -> Series:
    """A running total with each pair of neighbouring readings that went backwards swapped, where
    the swap makes the total rise through the readings either side. A scraper with two fetches
    in flight stamps each when it parses it (AIPerf's DCGM collector), so the later reading can
    carry the earlier stamp; a reset or a wrap stays below the reading before it and is kept."""
    values = [v for _, v in series]
    for i in range(1, len(values) - 2):
        before, first, second, after = values[i - 1 : i + 3]
        if second < first and before <= second and after >= first:
            values[i], values[i + 1] = second, first
    return [(t, v) for (t, _), v in zip(series, values, strict=True)]

