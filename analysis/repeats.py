"""Repeats: a setting's capacity is the LOWEST of its repeats (docs/vllm.md), shown with its spread.

The lowest, not the mean, because a capacity promised to a customer must hold on the bad run
too; the spread beside it says how much the runs disagreed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from analysis.errors import AnalysisError
from analysis.types import CapacityEstimate, PointFigures, WorkloadShape


def capacity_estimate(values: Sequence[float]) -> CapacityEstimate:
    """Lowest of the repeats, with min, max, mean, max - min and (max - min) / mean in percent."""
    if not values:
        raise AnalysisError("a capacity estimate needs at least one repeat")
    for value in values:
        if not math.isfinite(value) or value < 0:
            raise AnalysisError(
                f"a repeat's throughput must be a finite number >= 0, got {value!r}"
            )
    low, high = min(values), max(values)
    mean = math.fsum(values) / len(values)
    spread = high - low
    return CapacityEstimate(
        capacity=low,
        repeats=len(values),
        minimum=low,
        maximum=high,
        mean=mean,
        spread=spread,
        # All repeats at zero throughput agree perfectly; avoid 0/0.
        relative_spread_pct=spread / mean * 100 if mean > 0 else 0.0,
        values=tuple(values),
    )


class Setting(NamedTuple):
    """What repeats of one measurement share: an engine config under one load level, on one
    number of replicas, with one input/output spec.

    The load is its label as well as its offered concurrency: two rate loads of 100 requests
    at 2 and at 4 requests/s offer the same concurrency but are two levels, not two repeats.

    The replica count and the spec belong here because a node run or another spec is another
    measurement, not a repeat: grouping an 8-replica run with a single-GPU point of the same
    config and load would show their difference as a "spread" and call the single GPU's figure
    the capacity of both.
    """

    config_label: str
    offered_concurrency: float
    replicas: int
    workload: WorkloadShape | None
    load_label: str = ""


def setting_of(point: PointFigures) -> Setting:
    """The setting a point repeats; its repeats are the points with the same one."""
    return Setting(point.config_label, point.offered_concurrency, point.replicas, point.workload,
                   point.load_label)


def group_by_setting(points: Sequence[PointFigures]) -> dict[Setting, list[PointFigures]]:
    """The points of each setting, in input order."""
    groups: dict[Setting, list[PointFigures]] = {}
    for point in points:
        groups.setdefault(setting_of(point), []).append(point)
    return groups


def judged_repeats(group: Sequence[PointFigures]) -> list[PointFigures]:
    """The repeats of one setting a figure rests on: the valid ones other processes left
    undisturbed, or, when every valid one was disturbed, those (the caveat says so): the lowest
    of a disturbed draw is the neighbour's, not the engine's."""
    valid = [p for p in group if p.valid]
    return [p for p in valid if not p.disturbed] or valid


def capacity_by_setting(points: Sequence[PointFigures]) -> dict[Setting, CapacityEstimate]:
    """Capacity estimate of each setting, over its judged repeats (valid, undisturbed first).

    A setting whose repeats are all invalid gets no estimate: no capacity can rest on them.
    """
    out = {}
    for setting, group in group_by_setting(points).items():
        judged = judged_repeats(sorted(group, key=lambda p: p.repeat))
        if judged:
            out[setting] = capacity_estimate([p.output_throughput for p in judged])
    return out


def lowest_repeats(points: Sequence[PointFigures]) -> list[PointFigures]:
    """One point per setting: the judged repeat with the lowest throughput (or, when none is
    valid, the first invalid one, so the setting still shows up as excluded downstream).

    Feed this to knee / slo / pareto so repeats do not look like extra load levels.
    """
    chosen = []
    for group in group_by_setting(points).values():
        judged = judged_repeats(group)
        if judged:
            chosen.append(min(judged, key=lambda p: (p.output_throughput, p.repeat)))
        else:
            chosen.append(min(group, key=lambda p: p.repeat))
    return chosen
