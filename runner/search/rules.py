"""The tests an operating point is chosen by, defined once: the search steers by them and
analysis.selection chooses by them, so the search measures where the run page's answer lies."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def knee_step(
    throughput_gain_pct: float,
    latency_growth_pct: float,
    *,
    max_gain_pct: float,
    min_growth_pct: float,
) -> bool:
    """Whether one step up the load levels is the saturation knee: it adds less than
    max_gain_pct output throughput while median end-to-end latency grows more than
    min_growth_pct."""
    return throughput_gain_pct < max_gain_pct and latency_growth_pct > min_growth_pct


def pct_change(before: float, after: float) -> float:
    return (after - before) / before * 100


def first_knee(
    throughputs: Sequence[float],
    latencies: Sequence[float],
    *,
    max_gain_pct: float,
    min_growth_pct: float,
) -> int | None:
    """Index i of the first knee step (levels i -> i + 1) of levels in ascending load order, or
    None; every throughput and latency must be > 0."""
    for i in range(len(throughputs) - 1):
        gain = pct_change(throughputs[i], throughputs[i + 1])
        growth = pct_change(latencies[i], latencies[i + 1])
        if knee_step(gain, growth, max_gain_pct=max_gain_pct, min_growth_pct=min_growth_pct):
            return i
    return None


def within_limits(values: Mapping[str, float], limits: Mapping[str, float]) -> bool:
    """Whether every limited latency (ms) stays within its limit; a limit is met at equality."""
    return all(values[name] <= limit for name, limit in limits.items())
