"""The adaptive sweep's state: which config to start, which point to measure, when to stop.

runner.sweep drives it: next_config() names the engine config to start (or None: done), then
next_point() names its points one at a time until None, each observed as it is measured. A
config's points all run on one engine start, because a start costs minutes on a GPU and a point
seconds: the search finishes the running config before it starts another.

Three rules decide what is measured:
- per config, the levels of runner.search.levels: highest load first, then narrowing the
  interval that holds the answer, the most per expected second (runner.search.costs), until
  it is located to within the tolerance;
- across configs, a config is given up (pruned) once its bound, the most any of its levels
  can deliver, falls short of the best config's answer by more than the tolerance, and the walk
  of runner.search.walk leaves unstarted the configs its neighbours bound;
- repeats go to the points that decide the answer: the best config's answer point (its
  capacity needs a measured spread), a deciding point inside the noise of its rule, and a knee
  step's higher load that fell below the lower one beyond the noise on one draw.

After the last point, with StabilitySpec.end_control, runner.sweep measures end_control(): the
answer point once more on a fresh engine start. Its repeats were taken seconds apart and bound
a point's scatter; the control, minutes later, shows how far the host's speed moved meanwhile,
and the answer's interval (analysis.search_interval) widens by it.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from runner.schema.plan import LoadSpec, SweepPlan
from runner.schema.search_record import CellStatus, SearchCell, SearchPhase, SearchRecord
from runner.search.costs import Costs
from runner.search.levels import LevelChoice, Levels
from runner.search.observation import Observation
from runner.search.walk import RISING_SETTINGS, Walk


def ladder(loads: list[LoadSpec]) -> list[LoadSpec]:
    """The load levels in ascending order, as a grid sweep runs them."""
    return sorted(loads, key=lambda load: (load.offered_concurrency(), load.num_requests))


@dataclass(frozen=True)
class Request:
    config: int  # index into plan.engine_configs
    level: int  # index into ladder(plan.loads)
    repeat: int
    order: int
    phase: SearchPhase
    reason: str


@dataclass
class ConfigState:
    """One engine config's place in the search: its load levels as measured, where it stands,
    why, and what its engine start took."""

    levels: Levels
    status: CellStatus = "not_started"
    # Why it was started, then how its search ended ("; answer ... at ..."), or why it failed
    # or was pruned.
    reason: str = ""
    start_s: float | None = None  # its engine start; None before it or when not measured


class Search:
    """start_prior_s: what an engine start of the plan's checkpoint took on this node lately
    (None: not known); it prices the first start against a time budget."""

    def __init__(self, plan: SweepPlan, *, start_prior_s: float | None = None) -> None:
        if plan.search is None:
            raise ValueError("this plan has no search: it runs as a grid")
        self.spec = plan.search
        self.configs = plan.engine_configs
        self.loads = ladder(plan.loads)
        self.max_repeats = plan.repeats
        self.costs = Costs(self.loads, start_prior_s=start_prior_s)
        labels = [load.label() for load in self.loads]
        by_cost = self.spec.method != "bracket-bisect-walk/1"
        self.states = [ConfigState(Levels(self.spec, labels, cost=self.costs.point_s) if by_cost
                                   else Levels(self.spec, labels)) for _ in self.configs]
        queue_bound = all("ttft" in name or "e2el" in name for name in self.spec.limits)
        rising = RISING_SETTINGS if queue_bound else ()
        self.walk = Walk(self.configs, self.spec.tolerance, rising=rising,
                         preempted=self._preempted)
        self.current: int | None = None
        self.budget_spent = False
        self.budget_note = ""  # why the unstarted configs were left once a budget ran out
        self.finished = False
        self.end_control_s: float | None = None  # its start and point; None: not measured
        self.end_control_note = ""  # why a budget left it out

    # -- what the walk and the pruning read -----------------------------------------------

    def answer(self, config: int) -> float | None:
        """A config's answer once it was searched to one (pruned or failed: None)."""
        state = self.states[config]
        return state.levels.answer_value() if state.status == "searched" else None

    def best_other(self, config: int) -> float | None:
        answers = [self.answer(c) for c in range(len(self.configs)) if c != config]
        values = [a for a in answers if a is not None]
        return max(values) if values else None

    def _preempted(self, config: int) -> bool:
        return any((o.preemptions or 0) > 0
                   for repeats in self.states[config].levels.seen.values() for o in repeats)

    def points_measured(self) -> int:
        return sum(state.levels.points() for state in self.states)

    def noise(self) -> tuple[float, float]:
        """(throughput, latency): the repeats' pooled relative spread, the median over the
        levels measured more than once; the tolerance until any was."""
        throughput, latency = [], []
        names = ("median_e2el_ms", *self.spec.limits)
        for state in self.states:
            for repeats in state.levels.seen.values():
                valid = [o for o in repeats if o.valid]
                if len(valid) < 2:
                    continue
                throughput.append(relative_spread([o.output_throughput for o in valid]))
                spreads = [relative_spread([o.latency(n) or 0.0 for o in valid]) for n in names]
                latency.append(max(spreads))
        prior = self.spec.tolerance
        return (statistics.median(throughput) if throughput else prior,
                statistics.median(latency) if latency else prior)

    # -- the driver's calls -----------------------------------------------------------------

    def next_config(self) -> tuple[int, str] | None:
        """The next engine config to start and why, or None: the search is over."""
        self._close_current()
        spent = self._budget_spent()
        if spent is not None:
            self.budget_spent = any(state.status == "not_started" for state in self.states)
            self.budget_note = f"the {spent} budget was spent before it"
            return None
        step = self.walk.next(self.answer)
        if step is None:
            return None
        too_dear = self._too_dear()
        if too_dear is not None:
            self.budget_spent = True
            self.budget_note = too_dear
            return None
        self.current = step.config
        self.states[step.config].reason = step.reason
        return step.config, step.reason

    def config_started(self, seconds: float | None) -> None:
        assert self.current is not None
        self.states[self.current].start_s = seconds
        if seconds is not None:
            self.costs.started(seconds)

    def config_failed(self, message: str) -> None:
        """The running config's engine did not start or died: the walk treats it as short."""
        assert self.current is not None
        self.states[self.current].status = "failed"
        self.states[self.current].reason = message
        self.current = None

    def next_point(self) -> Request | None:
        """The running config's next point, or None: its answer is located, or it is pruned."""
        config = self.current
        assert config is not None
        state = self.states[config]
        levels = state.levels
        spent = self._budget_spent()
        if spent is not None:
            self.budget_spent = True
            state.reason += f"; the {spent} budget ran out during its search"
            return None
        throughput_noise, latency_noise = self.noise()
        best = self.best_other(config)
        bound = levels.bound(throughput_noise)
        if best is not None and bound is not None and bound < best * (1 - self.spec.tolerance):
            state.status = "pruned"
            state.reason = (
                f"its best load delivered {levels.peak():.1f} tok/s; even with the noise "
                f"({throughput_noise:.1%}) that is short of the best config's {best:.1f} by more "
                f"than the {self.spec.tolerance_pct:g}% tolerance, and no lower load delivers more"
            )
            self.current = None
            return None
        choice = levels.next() or self._repeat(config, throughput_noise, latency_noise)
        if choice is None:
            return None
        return Request(config, choice.level, levels.count(choice.level),
                       self.points_measured() + 1, choice.phase, choice.reason)

    def observe(self, request: Request, observation: Observation) -> None:
        self.states[request.config].levels.add(request.level, observation)
        self.costs.measured(request.level, observation.wall_s)

    def finish(self) -> None:
        self._close_current()
        self.finished = True

    def end_control(self) -> Request | None:
        """The answer point once more, after the search (module docstring): the best config's
        answer level, numbered past any repeat the search takes. None: no config has an answer."""
        best = self.walk.best(self.answer)
        level = None if best is None else self.states[best].levels.answer()
        if best is None or level is None:
            return None
        spent = self._budget_spent()
        if spent is not None:
            self.end_control_note = f"no end control: the {spent} budget was spent"
            return None
        budget = self.spec.time_budget_s
        if budget is not None:
            needed = (self.costs.start_s() or 0.0) + (self.costs.point_s(level) or 0.0)
            left = budget - self.spent_s()
            if needed > left:
                self.end_control_note = (
                    f"no end control: an engine start and its point need about {needed:.0f} s, "
                    f"and the time budget had {left:.0f} s left")
                return None
        return Request(best, level, self.max_repeats + 1, self.points_measured() + 1, "control",
                       "the answer point again on a fresh engine start after the search: how "
                       "far the host's speed moved since its first draw")

    def end_control_measured(self, start_s: float | None, wall_s: float) -> None:
        self.end_control_s = (start_s or 0.0) + wall_s

    # -- inside -----------------------------------------------------------------------------

    def _repeat(
        self, config: int, throughput_noise: float, latency_noise: float
    ) -> LevelChoice | None:
        levels = self.states[config].levels
        for call in levels.close_calls(throughput_noise, latency_noise):
            if levels.count(call.level) < self.max_repeats:
                return call
        level = levels.answer()
        if level is None or levels.count(level) >= self.max_repeats:
            return None
        value = levels.value(level) or 0.0
        best = self.best_other(config)
        margin = self.spec.tolerance + throughput_noise
        if best is not None and value < best * (1 - margin):
            return None  # it cannot be the answer: its capacity needs no spread
        repeats = [o.output_throughput for o in levels.seen[level] if o.valid]
        if len(repeats) >= 2 and relative_spread(repeats) <= self.spec.tolerance:
            return None
        why = ("the answer point of the best config so far: a repeat gives its capacity a "
               "measured spread" if len(repeats) < 2 else
               f"its repeats disagree by {relative_spread(repeats):.1%}, more than the tolerance")
        return LevelChoice(level, "repeat", why)

    def spent_s(self) -> float:
        """Seconds this search used on the node: its engine starts and its points, and its end
        control's."""
        return (sum(self.costs.starts) + sum(sum(walls) for walls in self.costs.walls.values())
                + (self.end_control_s or 0.0))

    def _budget_spent(self) -> str | None:
        """Which budget is spent ("point" or "time"), or None while both have room."""
        if self.spec.point_budget is not None and self.points_measured() >= self.spec.point_budget:
            return "point"
        if self.spec.time_budget_s is not None and self.spent_s() >= self.spec.time_budget_s:
            return "time"
        return None

    def config_estimate(self) -> tuple[float, str]:
        """What starting another config should cost, in seconds, and its figures in words: the
        engine start, then the probe and the refinements a ladder needs, ceil(log2(levels)),
        at the cost model's seconds. What the model does not know yet counts as 0, so a config
        is refused only on figures this node measured; so do repeats, which the search takes
        only where a config's own spread calls for them."""
        top = len(self.loads) - 1
        refinements = min(math.ceil(math.log2(len(self.loads))), top)
        start = self.costs.start_s()
        if start is None:
            start_text = "engine start unknown"
        else:
            where = "measured here" if self.costs.starts else "from this node's last starts"
            start_text = f"engine start ~{start:.0f} s {where}"
        probe = self.costs.point_s(top)
        points = 1 + refinements
        if probe is None:
            return start or 0.0, f"{start_text} + {points} point(s) of unknown length"
        below = [self.costs.point_s(level) or 0.0 for level in range(top)]
        points_s = probe + refinements * (statistics.fmean(below) if below else 0.0)
        return (start or 0.0) + points_s, f"{start_text} + {points} point(s) ~{points_s:.0f} s"

    def _too_dear(self) -> str | None:
        """Why the next config is not started under the time budget, or None: it fits."""
        budget = self.spec.time_budget_s
        if budget is None:
            return None
        estimate, figures = self.config_estimate()
        left = budget - self.spent_s()
        if estimate <= left:
            return None
        return (f"the time budget had {left:.0f} s of {budget:.0f} s left, and a config "
                f"needs about {estimate:.0f} s ({figures})")

    def _close_current(self) -> None:
        config = self.current
        if config is None:
            return
        self.current = None
        state = self.states[config]
        state.status = "searched"
        levels = state.levels
        level = levels.answer()
        if level is None:
            what = ("no measured level met the limits" if self.spec.objective == "slo"
                    else "too few valid levels for the knee rule")
            state.reason += f"; searched, {what}"
        else:
            state.reason += (f"; answer {levels.value(level):.1f} tok/s at "
                                     f"{levels.labels[level]}")

    def record(self) -> SearchRecord:
        """What the run page shows: every config in plan order, and the costs so far."""
        cells = []
        for config, (engine, state) in enumerate(zip(self.configs, self.states, strict=True)):
            status, reason = state.status, state.reason
            if config == self.current:
                reason = reason or "being searched"
            elif status == "not_started":
                reason = (self.budget_note if self.budget_spent
                          else self.walk.why_not_started(config, self.answer))
            cells.append(SearchCell(
                label=engine.label(), status=status, reason=reason,
                points=state.levels.points(), engine_start_s=state.start_s,
                answer=self.answer(config),
            ))
        observations = [o for state in self.states for r in state.levels.seen.values()
                        for o in r]
        starts = [state.start_s for state in self.states if state.start_s is not None]
        noise = self.noise()[0] if self._repeated() else None
        return SearchRecord(
            spec=self.spec,
            cells=cells,
            points_measured=len(observations) + int(self.end_control_s is not None),
            engine_start_s=sum(starts),
            point_s=sum(o.wall_s for o in observations),
            grid_points=len(self.configs) * len(self.loads) * self.max_repeats,
            grid_estimate_s=self._grid_estimate_s(),
            noise_pct=None if noise is None else noise * 100,
            budget_spent=self.budget_spent,
            finished=self.finished,
            end_control_s=self.end_control_s or 0.0,
            end_control_note=self.end_control_note,
            start_prior_s=self.costs.start_prior_s,
            start_measured_s=self.costs.measured_start_s(),
        )

    def _repeated(self) -> bool:
        return any(len(r) > 1 for state in self.states for r in state.levels.seen.values())

    def _grid_estimate_s(self) -> float:
        """The full grid at the cost model's figures: every config at an engine start (0 while
        none is known) and every point at its level's cost (0 while none was measured)."""
        if not self.costs.walls:
            return 0.0
        per_level = [self.costs.point_s(level) or 0.0 for level in range(len(self.loads))]
        configs = len(self.configs)
        start = self.costs.start_s() or 0.0
        return configs * start + configs * self.max_repeats * sum(per_level)


def relative_spread(values: list[float]) -> float:
    """(max - min) / mean; 0 for values that are all 0."""
    mean = statistics.fmean(values)
    return (max(values) - min(values)) / mean if mean > 0 else 0.0
