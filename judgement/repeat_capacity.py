"""Capacity from repeats: each setting's lowest valid repeat, with the spread beside it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from analysis import repeats
from analysis.types import CapacityEstimate, PointFigures


def capacity_rows(figs: Sequence[PointFigures]) -> list[dict[str, Any]]:
    """Settings with more than one repeat: capacity (the lowest) with the spread beside it.

    A setting is one config, load level, replica count and workload spec (repeats.Setting), so
    a node run never counts as a repeat of a single-replica point; each row names all four.
    """
    groups = repeats.group_by_setting(figs)
    rows = []
    for setting, estimate in repeats.capacity_by_setting(figs).items():
        count = len(groups[setting])
        if count > 1:
            rows.append(
                {
                    "config": setting.config_label,
                    "offered_concurrency": setting.offered_concurrency,
                    "replicas": setting.replicas,
                    "spec": setting.workload.label() if setting.workload else None,
                    "estimate": estimate,
                    "invalid_repeats": count - estimate.repeats,
                }
            )
    return rows


def capacity_of(point: PointFigures, figs: Sequence[PointFigures]) -> CapacityEstimate | None:
    """The capacity estimate of the point's setting among figs (as capacity_rows groups them),
    or None when none of its repeats is valid."""
    return repeats.capacity_by_setting(figs).get(repeats.setting_of(point))
