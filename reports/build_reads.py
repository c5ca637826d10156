"""What one build of a report reads: each benchmark's points, figures and verdicts, once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

from benchmarks.models import Benchmark, Point
from judgement.figures import figures_by_key
from judgement.rows import load_points
from judgement.verdict_rows import VerdictRows, verdict_rows
from judgement.vocabulary import PointFigures
from reports.models import Item, Report


class Sweeps:
    """Each benchmark's points, their figures and verdicts, read once per build."""

    def __init__(self) -> None:
        self._cache: dict[int, tuple[list[Point], dict[str, PointFigures]]] = {}
        self._verdicts: dict[int, VerdictRows] = {}

    def of(self, benchmark: Benchmark) -> tuple[list[Point], dict[str, PointFigures]]:
        if benchmark.pk not in self._cache:
            points = load_points(benchmark)
            self._cache[benchmark.pk] = (points, figures_by_key(points)[0])
        return self._cache[benchmark.pk]

    def single_replica(self, benchmark: Benchmark) -> tuple[list[Point], list[PointFigures]]:
        """The sweep's load levels: a node run is its own section, not a level of the curve."""
        points, figs = self.of(benchmark)
        single = [p for p in points if p.replicas == 1]
        return single, [figs[p.key] for p in single if p.key in figs]

    def figures(self, point: Point) -> PointFigures | None:
        return self.of(point.benchmark)[1].get(point.key)

    def verdicts(self, benchmark: Benchmark) -> VerdictRows:
        """As the run page judges them: every readable point of the benchmark together."""
        if benchmark.pk not in self._verdicts:
            figs = list(self.of(benchmark)[1].values())
            self._verdicts[benchmark.pk] = verdict_rows(figs)
        return self._verdicts[benchmark.pk]


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
