"""The engine configs of a grid as cells on its axes, and the walk that leaves most unstarted.

An engine start is the dearest thing a sweep buys, so the walk starts one config, then only the
neighbours of the best config so far, one step along one setting at a time. It rests on what
these settings do: along max_num_seqs or the token budget, throughput rises and then flattens
(or falls), so each setting's best lies at its largest values or at one peak. The walk
therefore starts with every numeric setting at its largest value and stops along a setting at
the first neighbour that does not beat the best. A setting that is not a number (on/off, extra
flags) has no order: every value of it is a slice of its own, each started at its corner.

For the knee, and for limits on TTFT or request latency (which count the wait in the queue),
max_num_seqs is a rising setting: under a long queue fewer sequences at once cannot deliver
more, nor sooner, so the walk never steps down it from the best config, unless that config
preempted requests (its KV cache ran out, and fewer sequences may then do better). A limit on
TPOT is another matter: fewer sequences make each step shorter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from runner.schema.engine_config import EngineConfig

EXTRA_FLAGS = "extra_args"
# The settings along which a config's capacity only rises (the knee objective).
RISING_SETTINGS = ("max_num_seqs",)


@dataclass(frozen=True)
class Axis:
    name: str
    values: tuple[Any, ...]
    ordered: bool  # numbers, ascending; otherwise in the plan's order

    def show(self, value: Any) -> str:
        if self.name == EXTRA_FLAGS:
            return " ".join(value) or "no extra flags"
        return f"{self.name}={value}"


def _value(config: EngineConfig, name: str) -> Any:
    value = getattr(config, name)
    return tuple(value) if name == EXTRA_FLAGS else value


def grid_axes(configs: Sequence[EngineConfig]) -> list[Axis]:
    """The settings whose values differ between the configs, as axes."""
    axes = []
    for name in [setting.name for setting in EngineConfig.settings()] + [EXTRA_FLAGS]:
        values: list[Any] = []
        for config in configs:
            value = _value(config, name)
            if value not in values:
                values.append(value)
        if len(values) < 2:
            continue
        numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
        axes.append(Axis(name, tuple(sorted(values) if numeric else values), numeric))
    return axes


Cell = tuple[int, ...]


@dataclass(frozen=True)
class WalkStep:
    config: int
    reason: str


class Walk:
    """Which config to start next, given what the started ones answered.

    answer(i): config i's answer (output tokens/s), or None when it has none (not searched,
    pruned, failed, no level met the limits): such a config never beats the best.
    rising: the settings the walk never steps down from the best config, unless
    preempted(config) says that config ran out of KV cache.
    """

    def __init__(
        self,
        configs: Sequence[EngineConfig],
        tolerance: float,
        *,
        rising: Sequence[str] = (),
        preempted: Callable[[int], bool] = lambda config: False,
    ) -> None:
        self.axes = grid_axes(configs)
        self.tolerance = tolerance
        self.rising = set(rising)
        self.preempted = preempted
        self.cells: list[Cell] = [
            tuple(axis.values.index(_value(config, axis.name)) for axis in self.axes)
            for config in configs
        ]
        self.index = {cell: i for i, cell in enumerate(self.cells)}
        self.started: list[int] = []

    def describe(self, config: int) -> str:
        cell = self.cells[config]
        return ", ".join(axis.show(axis.values[i]) for axis, i in zip(self.axes, cell,
                                                                      strict=True))

    def _slice(self, config: int) -> tuple[int, ...]:
        return tuple(i for axis, i in zip(self.axes, self.cells[config], strict=True)
                     if not axis.ordered)

    def _corners(self) -> list[int]:
        """Per slice, the config with every numeric setting largest (its sum of positions
        the highest, where the grid lost that corner to a config vLLM refuses)."""
        corners: dict[tuple[int, ...], int] = {}
        for config in range(len(self.cells)):
            key = self._slice(config)
            best = corners.get(key)
            if best is None or self._height(config) > self._height(best):
                corners[key] = config
        return list(corners.values())

    def _height(self, config: int) -> int:
        return sum(i for axis, i in zip(self.axes, self.cells[config], strict=True)
                   if axis.ordered)

    def next(self, answer: Callable[[int], float | None]) -> WalkStep | None:
        for corner in self._corners():
            if corner not in self.started:
                return self._start(corner, "every numeric setting at its largest value: "
                                   "throughput rises and then flattens along each")
        best = self.best(answer)
        # Until some config answers (none met the limits yet), the walk goes on from each.
        bases = self._slice_bests(answer) if best is not None else list(self.started)
        top = (answer(best) or 0.0) if best is not None else 0.0
        for base in bases:
            value = answer(base)
            if best is not None and base != best and (
                value is None or value < top * (1 - self.tolerance)
            ):
                continue  # a slice whose best cell falls short cannot hold the best one
            for neighbour, axis in self._neighbours(base):
                down = self.cells[neighbour] < self.cells[base]
                if down and axis.name in self.rising and not self.preempted(base):
                    continue
                if neighbour not in self.started:
                    what = "the best config so far" if best is not None else "a config"
                    return self._start(neighbour, f"one step {'down' if down else 'up'} "
                                       f"{axis.name} from {what} ({self.describe(base)})"
                                       + ("" if best is not None else
                                          ", since none has met the limits yet"))
        return None

    def _start(self, config: int, reason: str) -> WalkStep:
        self.started.append(config)
        return WalkStep(config, reason)

    def best(self, answer: Callable[[int], float | None]) -> int | None:
        """The started config with the highest answer; the one started first wins a tie."""
        scored = [(answer(c), -n, c) for n, c in enumerate(self.started) if answer(c) is not None]
        return max(scored)[2] if scored else None

    def _slice_bests(self, answer: Callable[[int], float | None]) -> list[int]:
        bests: dict[tuple[int, ...], int] = {}
        for config in self.started:
            value = answer(config)
            if value is None:
                continue
            key = self._slice(config)
            held = bests.get(key)
            if held is None or value > (answer(held) or 0.0):
                bests[key] = config
        return list(bests.values())

    def _neighbours(self, config: int) -> list[tuple[int, Axis]]:
        """The configs one position away along one numeric setting, smaller values first."""
        out = []
        cell = self.cells[config]
        for position, axis in enumerate(self.axes):
            if not axis.ordered:
                continue
            for step in (-1, 1):
                moved = list(cell)
                moved[position] += step
                neighbour = self.index.get(tuple(moved))
                if neighbour is not None:
                    out.append((neighbour, axis))
        return out

    def why_not_started(self, config: int, answer: Callable[[int], float | None]) -> str:
        """Which started config bounds an unstarted one: one of its slice with at least its
        value on every numeric setting that fell short of the best (throughput rises and then
        flattens along each, so the smaller config cannot deliver more)."""
        best = self.best(answer)
        if best is None:
            return "no config was searched to an answer"
        if self._slice(config) != self._slice(best) and not any(
            self._slice(c) == self._slice(config) and answer(c) is not None for c in self.started
        ):
            return "its slice's largest config fell short of the best by more than the tolerance"
        bounding = [c for c in self.started if c != best and self._dominates(c, config)]
        below = [axis.name for axis, mine, its in zip(self.axes, self.cells[config],
                                                      self.cells[best], strict=True)
                 if axis.name in self.rising and mine < its]
        if not bounding and below and self._dominates(best, config):
            return (f"a smaller {below[0]} than the best config ({self.describe(best)}) at no "
                    "larger setting: with fewer sequences at once under the same queue it "
                    "cannot deliver more, and the best config never preempted")
        if bounding:
            # The nearest one: the fewest steps away.
            near = min(bounding, key=lambda c: self._height(c) - self._height(config))
            shown = answer(near)
            figure = f" ({shown:.1f} tok/s)" if shown is not None else ""
            return (f"each of its settings is at most that of {self.describe(near)}{figure}, "
                    f"which did not beat the best ({self.describe(best)}): with smaller "
                    "settings it cannot either")
        return ("the walk from the best config stopped before it: every neighbour of the best "
                "was measured and none beat it")

    def _dominates(self, bigger: int, smaller: int) -> bool:
        """Same slice, and at least as large on every numeric setting."""
        return self._slice(bigger) == self._slice(smaller) and all(
            b >= s for axis, b, s in zip(self.axes, self.cells[bigger], self.cells[smaller],
                                         strict=True) if axis.ordered
        )
