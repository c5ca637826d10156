"""A recorded grid, and the search replayed on it: every point the search asks for is answered
by the recorded point, with its real noise, and every engine start by the recorded start.

A recorded grid is a full sweep's figures (bench/adaptive.py records them): what a search
reads of each point, so a search can be judged against the answer the whole grid gives.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from runner.schema.base import Schema
from runner.schema.plan import SweepPlan
from runner.schema.result import PointResult
from runner.schema.search_record import SearchRecord, SearchSpec
from runner.search.levels import Levels
from runner.search.observation import Observation, observe
from runner.search.state import Request, Search, ladder

GRID_FORMAT = "headroom.recorded-grid/1"


class RecordedPoint(Schema):
    config_label: str
    load_label: str
    repeat: int
    output_throughput: float
    valid: bool
    wall_s: float
    latencies: dict[str, float | None] = Field(default_factory=dict)
    preemptions: float | None = None

    def observation(self) -> Observation:
        return Observation(self.output_throughput, self.valid, self.wall_s, self.latencies,
                           self.preemptions)

    @classmethod
    def of(cls, point: PointResult) -> RecordedPoint:
        seen = observe(point)
        return cls(config_label=point.engine_config.label(), load_label=point.load.label(),
                   repeat=point.repeat, output_throughput=seen.output_throughput,
                   valid=seen.valid, wall_s=seen.wall_s, latencies=dict(seen.latencies),
                   preemptions=seen.preemptions)


class RecordedGrid(Schema):
    format: str = GRID_FORMAT
    name: str
    recorded_at: str
    host: str
    plan: SweepPlan  # the grid: its configs, loads and repeats, without a search
    engine_start_s: dict[str, float]  # per config label
    points: list[RecordedPoint]
    notes: list[str] = Field(default_factory=list)

    def point(self, config_label: str, load_label: str, repeat: int) -> RecordedPoint:
        for point in self.points:
            if (point.config_label, point.load_label, point.repeat) == (
                config_label, load_label, repeat
            ):
                return point
        raise KeyError(f"the grid {self.name} has no point {config_label} | {load_label} | "
                       f"repeat {repeat}")

    def cost_s(self) -> float:
        return sum(self.engine_start_s.values()) + sum(p.wall_s for p in self.points)


@dataclass(frozen=True)
class Replay:
    record: SearchRecord
    requests: list[Request]
    answer: float | None  # the search's answer, output tokens/s
    answer_config: str | None
    answer_level: str | None
    capacity_values: tuple[float, ...]  # the answer point's valid repeats
    # The next measured level above the answer on its config: its label and valid repeats.
    step_level: str | None
    step_values: tuple[float, ...]
    spent_s: float  # recorded engine starts plus recorded point times


def replay(
    grid: RecordedGrid,
    spec: SearchSpec,
    *,
    repeats: int | None = None,
    start_prior_s: float | None = None,
) -> Replay:
    """Run the search on the recorded grid; repeats: the most per point (the grid's);
    start_prior_s: the node's engine start before this run measured one, as the dashboard's."""
    plan = grid.plan.model_copy(update={"search": spec,
                                        "repeats": repeats or grid.plan.repeats})
    search = Search(plan, start_prior_s=start_prior_s)
    requests: list[Request] = []
    while (step := search.next_config()) is not None:
        config = plan.engine_configs[step[0]]
        search.config_started(grid.engine_start_s[config.label()])
        while (request := search.next_point()) is not None:
            load = search.loads[request.level]
            recorded = grid.point(config.label(), load.label(), request.repeat)
            search.observe(request, recorded.observation())
            requests.append(request)
    search.finish()
    record = search.record()
    best = max(range(len(plan.engine_configs)), key=lambda c: search.answer(c) or -1.0)
    value = search.answer(best)
    levels = search.states[best].levels
    level = levels.answer()
    chosen = levels.seen.get(level, []) if level is not None else []
    above = min((m for m in levels.seen if level is not None and m > level), default=None)
    return Replay(
        record=record,
        requests=requests,
        answer=value,
        answer_config=plan.engine_configs[best].label() if value is not None else None,
        answer_level=search.loads[level].label() if level is not None else None,
        capacity_values=tuple(o.output_throughput for o in chosen if o.valid),
        step_level=search.loads[above].label() if above is not None else None,
        step_values=tuple(o.output_throughput for o in levels.seen.get(above, []) if o.valid)
        if above is not None else (),
        spent_s=record.spent_s,
    )


@dataclass(frozen=True)
class GridAnswer:
    value: float | None
    config: str | None
    level: str | None
    capacity_values: tuple[float, ...]  # the answer point's repeats


def grid_answer(grid: RecordedGrid, spec: SearchSpec) -> GridAnswer:
    """The answer of the whole grid by the same rules: every point of every config."""
    loads = ladder(grid.plan.loads)
    labels = [load.label() for load in loads]
    best: tuple[float, int, Levels] | None = None
    for n, config in enumerate(grid.plan.engine_configs):
        levels = Levels(spec, labels)
        for point in grid.points:
            if point.config_label == config.label():
                levels.add(labels.index(point.load_label), point.observation())
        value = levels.answer_value()
        # Strictly more: the config listed first wins a tie, as analysis.selection.knee.
        if value is not None and (best is None or value > best[0]):
            best = (value, n, levels)
    if best is None:
        return GridAnswer(None, None, None, ())
    value, n, levels = best
    level = levels.answer()
    assert level is not None
    repeats = tuple(o.output_throughput for o in levels.seen[level] if o.valid)
    return GridAnswer(value, grid.plan.engine_configs[n].label(), labels[level], repeats)
