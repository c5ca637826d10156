"""What one build of a report reads: each benchmark's points, figures and verdicts, once, so
a report reaches its rows only through this layer (reports/ never queries them itself)."""

from __future__ import annotations

from analysis.types import PointFigures
from benchmarks.models import Benchmark, Point
from judgement.figures import figures_by_key
from judgement.rows import load_points
from judgement.verdict_rows import VerdictRows, verdict_rows


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
