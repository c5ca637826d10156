"""What the search's next measurement costs on this node, in seconds: an engine start, and a
point at a load level.

An engine start is the median of the starts this run measured (a start of the same checkpoint
on the same node takes about as long each time, bar a cold page cache), before any the prior the
caller passes (the node's last starts of the checkpoint), and with neither unknown: the search
never invents a start, since one takes seconds for a small model and many minutes for a large
one. A point is the mean wall time of the points measured at its level, across configs; a level
not measured yet takes the nearest measured level's, scaled by how long each level should take
when the engine keeps up (on a closed loop with a fixed num_requests, one in flight takes eight
times as long as eight). With no point measured the levels cost the same.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from runner.schema.plan import LoadSpec


def expected_s(load: LoadSpec) -> float | None:
    """How long the load should take when the engine keeps up, in units that compare levels of
    one shape: a closed loop's rounds of requests, an open loop's schedule in seconds, a burst's
    waves of max_concurrency. None for a trace: its span is in the trace, not the plan."""
    if load.shape == "rate":
        assert load.rate is not None  # LoadSpec requires it for a rate load
        return load.num_requests / load.rate
    if load.shape == "trace":
        return None
    return load.num_requests / load.offered_concurrency()


@dataclass
class Costs:
    """Seconds per engine start and per point, from what this run measured so far."""

    loads: Sequence[LoadSpec]  # the ladder, ascending (runner.search.state.ladder)
    start_prior_s: float | None = None  # the node's last starts of this checkpoint; None: none
    starts: list[float] = field(default_factory=list)
    walls: dict[int, list[float]] = field(default_factory=dict)  # level -> measured wall_s

    def started(self, seconds: float) -> None:
        self.starts.append(seconds)

    def measured(self, level: int, wall_s: float) -> None:
        self.walls.setdefault(level, []).append(wall_s)

    def measured_start_s(self) -> float | None:
        return statistics.median(self.starts) if self.starts else None

    def start_s(self) -> float | None:
        """An engine start: measured here first, else the prior, else unknown (None)."""
        measured = self.measured_start_s()
        return measured if measured is not None else self.start_prior_s

    def point_s(self, level: int) -> float | None:
        """A point at this level, or None while no point was measured (the levels then cost
        the same to whoever compares them)."""
        if not self.walls:
            return None
        if level in self.walls:
            return statistics.fmean(self.walls[level])
        # The nearer measured level; of two as near, the higher (its wall holds less queueing).
        nearest = min(self.walls, key=lambda measured: (abs(measured - level), -measured))
        return statistics.fmean(self.walls[nearest]) * self._scale(nearest, level)

    def _scale(self, measured: int, level: int) -> float:
        """How much longer `level` should take than `measured`; 1 when the two cannot be set
        against each other (different shapes, a trace, a zero schedule)."""
        here, there = self.loads[measured], self.loads[level]
        if here.shape != there.shape:
            return 1.0
        here_s, there_s = expected_s(here), expected_s(there)
        if not here_s or not there_s:
            return 1.0
        return there_s / here_s
