"""What one build of a report works on: its points, and the judgements later sections reuse."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

from judgement.report_rows import Sweeps
from judgement.rows import Point
from reports.models import Item, Report


@dataclass
class Build:
    """One build's inputs and the results later sections reuse (the table quotes the headline
    comparison and the scaling rather than computing them again)."""

    report: Report
    sweeps: Sweeps
    # The report's points (node scaling only when shown), in the order a reference prefers them.
    points: list[tuple[str, Point]]
    # judgement's Comparison and ScalingResult; read through reports.wording, which copes with
    # either shape of comparison (with or without its own spec guard).
    comparison: Any = None
    scaling: Any = None
    # Parity of the two headline points (output parity), for the headline and the
    # acceptance checklist.
    parity: Any = None


def report_points(report: Report) -> list[tuple[str, Point]]:
    chosen: list[tuple[str, Point | None]] = [
        (_("After"), report.candidate_point), (_("Before"), report.baseline_point)
    ]
    if report.shows(Item.NODE_SCALING) and report.scaling_point is not None:
        chosen += [(_("Single-replica reference"), report.scaling_reference),
                   (_("Node run"), report.scaling_point)]
    seen: set[int] = set()
    out = []
    for label, point in chosen:
        if point is not None and point.pk not in seen:
            seen.add(point.pk)
            out.append((label, point))
    return out
