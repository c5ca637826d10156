"""Repeats where they decide the answer: a config's deciding load levels measured again until
their interval is narrower than the plan's tolerance (StabilitySpec.converge_pct), or the cap.

The deciding levels are the config's operating point by the knee rule the run page chooses by
(runner.search.rules) and its neighbours below and above: the knee moves when any of the three
does. Their interval is the one analysis.noise puts on a figure: Z pooled standard deviations of
log(output tokens/s) over the square root of the draws of the level that has fewest. Only valid
draws other processes left undisturbed count, as in the run page's figures.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from runner.schema.result import PointResult
from runner.schema.search_record import DEFAULT_LATENCY_GROWTH_PCT, DEFAULT_THROUGHPUT_GAIN_PCT
from runner.search.rules import first_knee

# Two standard deviations each side: about 19 draws in 20 when the scatter is normal.
Z = 1.96


def pooled_log_sd(groups: Sequence[Sequence[float]]) -> tuple[float | None, int]:
    """(pooled standard deviation of log(value), draws) over groups of two or more positive
    draws; (None, 0) when no group has two."""
    squares, freedom, draws = 0.0, 0, 0
    for values in groups:
        logs = [math.log(v) for v in values if v > 0 and math.isfinite(v)]
        if len(logs) < 2:
            continue
        mean = math.fsum(logs) / len(logs)
        squares += math.fsum((x - mean) ** 2 for x in logs)
        freedom += len(logs) - 1
        draws += len(logs)
    return (math.sqrt(squares / freedom), draws) if freedom else (None, 0)


def judged(draws: Sequence[PointResult]) -> list[PointResult]:
    return [p for p in draws if p.metrics.valid and not (p.host is not None and p.host.disturbed)]


def deciding_levels(by_level: Sequence[Sequence[PointResult]]) -> list[int]:
    """The operating level by the knee rule (lowest judged draw per level, as the run page) and
    its neighbours, among levels with a judged draw; every level when the knee cannot be
    walked (a latency missing or zero)."""
    usable = [i for i, draws in enumerate(by_level) if judged(draws)]
    lowest = [min(judged(by_level[i]), key=lambda p: p.metrics.output_throughput)
              for i in usable]
    throughputs = [p.metrics.output_throughput for p in lowest]
    latencies = [p.metrics.median_e2el_ms or 0.0 for p in lowest]
    if not usable or min(throughputs) <= 0 or min(latencies) <= 0:
        return usable
    knee = first_knee(throughputs, latencies, max_gain_pct=DEFAULT_THROUGHPUT_GAIN_PCT,
                      min_growth_pct=DEFAULT_LATENCY_GROWTH_PCT)
    at = knee if knee is not None else max(range(len(usable)), key=lambda i: throughputs[i])
    return [usable[i] for i in range(max(0, at - 1), min(len(usable), at + 2))]


def half_width_pct(groups: Sequence[Sequence[float]]) -> float | None:
    """The 95% interval's half width in percent for the level with fewest draws; None until two
    draws of one level measured the spread."""
    sd, _ = pooled_log_sd(groups)
    if sd is None:
        return None
    fewest = min(len(group) for group in groups)
    return math.expm1(Z * sd / math.sqrt(fewest)) * 100


@dataclass(frozen=True)
class Round:
    """The levels to measure once more, and why."""

    levels: list[int]
    reason: str


def next_round(by_level: Sequence[Sequence[PointResult]], converge_pct: float,
               max_repeats: int) -> Round | None:
    """The deciding levels below the cap, while their interval is wider than converge_pct (or
    not yet measured); None once it is narrow enough or every deciding level is at the cap."""
    deciding = deciding_levels(by_level)
    groups = [[p.metrics.output_throughput for p in judged(by_level[i])] for i in deciding]
    half = half_width_pct(groups) if groups else None
    if half is not None and half <= converge_pct:
        return None
    below_cap = [i for i in deciding if len(by_level[i]) < max_repeats]
    if not below_cap:
        return None
    now = "not yet measured" if half is None else f"±{half:.1f}%"
    return Round(below_cap, f"the deciding levels' interval is {now}, wider than the plan's "
                            f"±{converge_pct:g}%")
