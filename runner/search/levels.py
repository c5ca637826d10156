"""One engine config's load levels: the highest first, then the level that narrows the interval
holding the answer most per expected second, until the answer is located to within the
tolerance.

The highest load goes first because its throughput bounds every lower level's (throughput
rises with load and then flattens), which is what lets the search give up on a config after one
point. A level's figures are those of its lowest valid repeat, the repeat analysis.repeats
chooses by (a capacity must hold on the bad run too), so the search and the run page read the
same point.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from runner.schema.search_record import SearchPhase, SearchSpec
from runner.search.observation import Observation
from runner.search.rules import first_knee, pct_change, within_limits

# The knee rule compares two steps at least: a step that pays off before one that does not.
MIN_KNEE_LEVELS = 3


@dataclass(frozen=True)
class LevelChoice:
    level: int
    phase: SearchPhase
    reason: str


@dataclass
class Levels:
    """The levels of one config measured so far, and where its answer can still move."""

    spec: SearchSpec
    labels: Sequence[str]  # the load levels, ascending
    seen: dict[int, list[Observation]] = field(default_factory=dict)
    # Seconds a point at a level should take (runner.search.costs); None: levels cost the same.
    cost: Callable[[int], float | None] = lambda level: None

    @property
    def top(self) -> int:
        return len(self.labels) - 1

    def add(self, level: int, observation: Observation) -> None:
        self.seen.setdefault(level, []).append(observation)

    def count(self, level: int) -> int:
        return len(self.seen.get(level, []))

    def points(self) -> int:
        return sum(len(repeats) for repeats in self.seen.values())

    def representative(self, level: int) -> Observation | None:
        """The lowest valid repeat (the first of equals), or None when none is valid."""
        valid = [o for o in self.seen.get(level, []) if o.valid]
        return min(valid, key=lambda o: o.output_throughput) if valid else None

    def value(self, level: int) -> float | None:
        point = self.representative(level)
        return point.output_throughput if point else None

    def peak(self) -> float | None:
        values = [v for v in (self.value(level) for level in self.seen) if v is not None]
        return max(values) if values else None

    def bound(self, noise: float) -> float | None:
        """The most any level of this config can deliver: its best measured level, widened by
        the noise, once the highest load is measured (None before, or with no valid level)."""
        peak = self.peak()
        if self.top not in self.seen or peak is None:
            return None
        return peak * (1 + noise)

    # -- the answer -----------------------------------------------------------------------

    def answer(self) -> int | None:
        """The level of this config's answer by the objective's rule, or None (no level meets
        the limits, or too few levels for the knee rule)."""
        if self.spec.objective == "slo":
            within = [level for level in sorted(self.seen) if self.within(level)]
            best: int | None = None
            for level in within:  # ascending, strictly more: a tie goes to the lower load
                if best is None or self._value(level) > self._value(best):
                    best = level
            return best
        levels = self.knee_levels()
        if len(levels) < MIN_KNEE_LEVELS:
            return None
        knee = self._first_knee(levels)
        if knee is not None:
            return levels[knee]
        return max(levels, key=lambda level: (self._value(level), -level))

    def answer_value(self) -> float | None:
        level = self.answer()
        return None if level is None else self.value(level)

    def knee_levels(self) -> list[int]:
        """Measured levels the knee rule can walk: a valid repeat with positive figures."""
        out = []
        for level in sorted(self.seen):
            point = self.representative(level)
            latency = point.latency("median_e2el_ms") if point else None
            if point and point.output_throughput > 0 and latency:
                out.append(level)
        return out

    def knee_step(self) -> tuple[int, int] | None:
        """The measured levels (before, after) of the first knee step, or None."""
        levels = self.knee_levels()
        knee = self._first_knee(levels)
        return None if knee is None else (levels[knee], levels[knee + 1])

    def within(self, level: int) -> bool:
        point = self.representative(level)
        if point is None:
            return False
        values = {name: point.latency(name) for name in self.spec.limits}
        present = {name: value for name, value in values.items() if value is not None}
        return len(present) == len(values) and within_limits(present, self.spec.limits)

    # -- where to measure next ------------------------------------------------------------

    def next(self) -> LevelChoice | None:
        """The level that can still move this config's answer, or None once it is located."""
        if self.top not in self.seen:
            return LevelChoice(self.top, "probe", f"{self.labels[self.top]} first: the highest "
                               "load's throughput bounds every lower level's")
        interval = (self._slo_interval() if self.spec.objective == "slo"
                    else self._knee_interval())
        if interval is not None:
            lo, hi, what = interval
            between = [level for level in range(lo + 1, hi) if level not in self.seen]
            if between:
                return self._refine(lo, hi, what, between)
        if self.spec.objective == "knee":
            return self._third_level()
        return None

    def _refine(self, lo: int, hi: int, what: str, between: list[int]) -> LevelChoice:
        """The level that rules out the most levels whatever it shows, per expected second.
        The middle one wins ties, so with equal costs this is plain bisection."""
        mid = between[len(between) // 2]
        below = self.labels[lo] if lo >= 0 else "the lowest load"
        where = f"{what} lies between {below} and {self.labels[hi]}"
        costs = [self.cost(level) for level in between]
        seconds = {level: c for level, c in zip(between, costs, strict=True) if c and c > 0}
        if len(seconds) < len(between) or len(set(seconds.values())) == 1:
            return LevelChoice(mid, "refine", f"{where}: {self.labels[mid]} halves that")

        def narrowing(m: int) -> int:
            return (hi - lo) - max(m - lo, hi - m)

        def per_second(m: int) -> float:
            return narrowing(m) / seconds[m]

        best = max(between, key=lambda m: (per_second(m), m == mid))
        if per_second(best) <= per_second(mid):
            return LevelChoice(mid, "refine", f"{where}: {self.labels[mid]} halves that at "
                               f"{seconds[mid]:.0f} s")
        chosen, middle = self.labels[best], self.labels[mid]
        if narrowing(best) == narrowing(mid):
            why = (f"{chosen} narrows it as well as {middle} at {seconds[best]:.0f} s instead "
                   f"of {seconds[mid]:.0f} s")
        else:
            why = (f"{chosen} rules out {narrowing(best)} level(s) at {seconds[best]:.0f} s, "
                   f"more per second than {middle}'s {narrowing(mid)} at {seconds[mid]:.0f} s")
        return LevelChoice(best, "refine", f"{where}: {why}")

    def _knee_interval(self) -> tuple[int, int, str] | None:
        """(lo, hi): the highest level known short of the plateau (-1: none) and the lowest on
        it, where the plateau is within the knee rule's gain of the best level."""
        peak = self.peak()
        if peak is None:  # every measured level was invalid: look lower
            return (-1, min(self.seen), "a valid level")
        gain = self.spec.throughput_gain_pct / 100
        on = [level for level in self.seen if self._on_plateau(level, peak, gain)]
        hi = min(on)
        below = [level for level in self.seen
                 if level < hi and self.value(level) is not None and level not in on]
        lo = max(below, default=-1)
        if lo >= 0 and self._value(hi) <= self._value(lo) * (1 + self.spec.tolerance):
            return None
        return (lo, hi, "the knee")

    def _on_plateau(self, level: int, peak: float, gain: float) -> bool:
        value = self.value(level)
        return value is not None and value * (1 + gain) >= peak

    def _slo_interval(self) -> tuple[int, int, str] | None:
        """(lo, hi): the highest level within the limits (-1: none) and the lowest above it
        that is not."""
        if self.within(self.top):
            return None
        lo = max((level for level in self.seen if self.within(level)), default=-1)
        hi = min(level for level in self.seen if level > lo and not self.within(level))
        hi_value, lo_value = self.value(hi), self.value(lo) if lo >= 0 else None
        if lo_value is not None and hi_value is not None and (
            hi_value <= lo_value * (1 + self.spec.tolerance)
        ):
            return None
        return (lo, hi, "the SLO limit")

    def _third_level(self) -> LevelChoice | None:
        """The knee rule walks steps: with fewer than three valid levels it has no answer, so
        the widest gap between measured levels gets one more."""
        levels = self.knee_levels()
        if len(levels) >= MIN_KNEE_LEVELS:
            return None
        free = [level for level in range(len(self.labels)) if level not in self.seen]
        if not free:
            return None
        # The free level farthest from every measured one halves the widest gap.
        level = max(free, key=lambda f: min(abs(f - m) for m in self.seen))
        return LevelChoice(level, "refine", f"the knee rule walks at least {MIN_KNEE_LEVELS} "
                           f"load levels: {self.labels[level]} adds one")

    # -- repeats --------------------------------------------------------------------------

    def close_calls(self, throughput_noise: float, latency_noise: float) -> list[LevelChoice]:
        """Deciding levels whose figures sit within the noise of the rule that decided them:
        another repeat could change the answer. Levels at max repeats are the caller's to
        leave out."""
        if self.spec.objective == "slo":
            return self._slo_close_calls(latency_noise)
        step = self.knee_step()
        if step is None:
            return []
        before, after = step
        low, high = self.representative(before), self.representative(after)
        assert low is not None and high is not None  # knee levels have a valid repeat
        gain = pct_change(low.output_throughput, high.output_throughput)
        growth = pct_change(low.latency("median_e2el_ms") or 0.0,
                            high.latency("median_e2el_ms") or 0.0)
        gain_margin = abs(gain - self.spec.throughput_gain_pct) / 100
        growth_margin = (abs(growth - self.spec.latency_growth_pct)
                         / (100 + self.spec.latency_growth_pct))
        if gain_margin >= throughput_noise and growth_margin >= latency_noise:
            return self._fall_call(before, after, gain, throughput_noise)
        level = before if self.count(before) <= self.count(after) else after
        return [LevelChoice(level, "repeat", f"the knee step {self.labels[before]} -> "
                            f"{self.labels[after]} ({gain:+.1f}% throughput, {growth:+.0f}% "
                            "latency) is within the noise of the knee rule")]

    def _fall_call(
        self, before: int, after: int, gain: float, noise: float
    ) -> list[LevelChoice]:
        """A knee step whose higher load delivered less than the lower one by more than the
        noise, on one draw: an engine that loses throughput under more load is a claim, and one
        slow draw makes it as well. The repeat does not lift the level (its figures stay those
        of its lowest draw) but measures how far its draws disagree, which the answer's
        interval (analysis.search_interval) widens by."""
        if self.count(after) != 1 or -gain / 100 <= noise:
            return []
        return [LevelChoice(after, "repeat", f"{self.labels[after]} delivered {gain:+.1f}% "
                            f"against {self.labels[before]} on one draw, a fall beyond the "
                            f"noise ({noise:.1%}): a repeat shows how far its draws disagree")]

    def _slo_close_calls(self, noise: float) -> list[LevelChoice]:
        calls = []
        answer = self.answer()
        if answer is not None:
            margin = self._slo_margin(answer)
            if margin < noise:
                calls.append(LevelChoice(answer, "repeat", f"{self.labels[answer]} is within "
                                         f"{margin:.1%} of a latency limit, inside the noise"))
        above = [level for level in self.seen if level > (answer if answer is not None else -1)]
        if above:
            first_over = min(above)
            margin = self._slo_margin(first_over)
            if margin < noise:
                calls.append(LevelChoice(first_over, "repeat", f"{self.labels[first_over]} "
                                         f"misses a latency limit by {margin:.1%}, inside the "
                                         "noise"))
        return calls

    def _slo_margin(self, level: int) -> float:
        """How far a level's decisive latency sits from its limit, as a share of the limit:
        the tightest one for a level within, the most exceeded one for a level over."""
        point = self.representative(level)
        if point is None:
            return float("inf")  # invalid: no repeat makes its throughput count
        shares = [((point.latency(name) or float("inf")) - limit) / limit
                  for name, limit in self.spec.limits.items()]
        over = [share for share in shares if share > 0]
        return max(over) if over else min(-share for share in shares)

    def _value(self, level: int) -> float:
        value = self.value(level)
        assert value is not None
        return value

    def _first_knee(self, levels: list[int]) -> int | None:
        points = [self.representative(level) for level in levels]
        return first_knee(
            [p.output_throughput for p in points if p],
            [p.latency("median_e2el_ms") or 0.0 for p in points if p],
            max_gain_pct=self.spec.throughput_gain_pct,
            min_growth_pct=self.spec.latency_growth_pct,
        )
