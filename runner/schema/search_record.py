"""An adaptive sweep's settings and its record: what it measured, in which order, what it skipped.

A plan with `search` set measures only the points where its answer can still change
(runner.search): its engine configs and load levels are the candidates, `repeats` the most any
one point gets. The spec is stored with the plan, so a run can be run again with the same search
and its result explained later; the record is what the run page shows beside the answer.
"""

from __future__ import annotations

import math
from typing import Final, Literal

from pydantic import Field, field_validator, model_validator

from runner.schema.base import Schema

SearchObjective = Literal["knee", "slo"]
# The algorithm's name and version: a run records it, so a changed search is a new name. /1
# refines by halving the levels' interval; /2 by the levels ruled out per expected second
# (runner.search.costs), which is /1 while the levels cost the same. A plan keeps its method,
# so a stored /1 plan run again searches as it did.
SearchMethod = Literal["bracket-bisect-walk/1", "bracket-value-per-cost-walk/2"]
SEARCH_METHOD: Final = "bracket-value-per-cost-walk/2"
DEFAULT_TOLERANCE_PCT: Final = 2.0
# The knee rule's defaults: the case study's knee added under 1% throughput for about +50%
# median latency, so 2% / 20% catches it with margin and ignores run-to-run noise.
DEFAULT_THROUGHPUT_GAIN_PCT: Final = 2.0
DEFAULT_LATENCY_GROWTH_PCT: Final = 20.0
# The latencies a search's SLO may limit: Metrics fields, vLLM's names and Headroom's sched_.
SEARCH_LATENCY_FIELDS: Final = (
    "median_ttft_ms", "p95_ttft_ms", "p99_ttft_ms",
    "median_tpot_ms", "p95_tpot_ms", "p99_tpot_ms",
    "median_e2el_ms", "p95_e2el_ms", "p99_e2el_ms",
    "median_sched_ttft_ms", "p99_sched_ttft_ms", "median_sched_e2el_ms", "p99_sched_e2el_ms",
)  # fmt: skip


class SearchSpec(Schema):
    """How an adaptive sweep searches: for which answer, how precisely, with how many points.

    objective "knee": the point before the saturation knee of the best engine config (the knee
    rule's throughput_gain_pct / latency_growth_pct, as the run page's knee). "slo": the highest
    output throughput whose latencies all stay within `limits` (ms, Metrics field names).
    tolerance_pct: the answer is located to within this share of its throughput, and a config
    is given up once even its best load falls short of the best config by more than it.
    point_budget: at most this many points in all; None: the search stops on its own.
    time_budget_s: at most this many seconds on the node, engine starts included: a config is
    not started when its estimated start and points (runner.search.costs) do not fit in what
    is left, and no point is taken once it is spent; None: no limit.
    """

    objective: SearchObjective = "knee"
    tolerance_pct: float = Field(default=DEFAULT_TOLERANCE_PCT, gt=0, le=50)
    point_budget: int | None = Field(default=None, gt=0)
    time_budget_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    method: SearchMethod = SEARCH_METHOD
    limits: dict[str, float] = Field(default_factory=dict)
    throughput_gain_pct: float = Field(default=DEFAULT_THROUGHPUT_GAIN_PCT, ge=0)
    latency_growth_pct: float = Field(default=DEFAULT_LATENCY_GROWTH_PCT, ge=0)

    @field_validator("limits")
    @classmethod
    def _known_limits(cls, limits: dict[str, float]) -> dict[str, float]:
        for name, value in limits.items():
            if name not in SEARCH_LATENCY_FIELDS:
                raise ValueError(
                    f"unknown latency {name!r}: use one of {', '.join(SEARCH_LATENCY_FIELDS)}"
                )
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"the limit for {name} must be a number of ms > 0, got {value!r}")
        return limits

    @model_validator(mode="after")
    def _limits_for_slo(self) -> SearchSpec:
        if self.objective == "slo" and not self.limits:
            raise ValueError("an SLO search needs at least one latency limit, e.g. "
                             "p99_ttft_ms: 500")
        if self.objective == "knee" and self.limits:
            raise ValueError("latency limits are for an SLO search (objective 'slo'); a knee "
                             "search has none")
        return self

    @property
    def tolerance(self) -> float:
        return self.tolerance_pct / 100

    def describe(self) -> str:
        """e.g. 'knee within 2%, at most 40 points'; for lists and the plan text."""
        what = ("saturation knee" if self.objective == "knee" else "highest throughput within "
                + ", ".join(f"{name} <= {value:g} ms" for name, value in self.limits.items()))
        budget = f", at most {self.point_budget} points" if self.point_budget else ""
        if self.time_budget_s:
            budget += f", a budget of {self.time_budget_s:g} s on the node"
        return f"{what}, to within {self.tolerance_pct:g}%{budget}"


# Why a point was measured: the highest load first (its throughput bounds the lower ones'),
# then levels that halve the interval holding the answer, then repeats of deciding points; last,
# with StabilitySpec.end_control, the answer point again on a fresh engine start (its drift).
SearchPhase = Literal["probe", "refine", "repeat", "control"]


class SearchStep(Schema):
    """Why the search measured a point, and when: stored on the point."""

    order: int = Field(gt=0, description="1 for the first point the search measured")
    phase: SearchPhase
    reason: str


# searched: its levels were searched to the answer; pruned: given up once its bound fell short;
# not_started: its engine never started (the walk or the budget left it); failed: its engine
# did not start or died.
CellStatus = Literal["searched", "pruned", "not_started", "failed"]


class SearchCell(Schema):
    """One engine config of the plan, and what the search did with it."""

    label: str
    status: CellStatus
    reason: str
    points: int = 0
    engine_start_s: float | None = None
    answer: float | None = Field(default=None, description="its answer, output tokens/s")


class SearchRecord(Schema):
    """The whole search, written on the run as it goes: its cells in plan order and its costs.

    The costs are seconds on this node: engine starts and points as measured; the full grid's
    from runner.search.costs (each config at its engine start, each point at the mean time of
    the points measured at its load level, or the nearest measured level's scaled to its own).
    """

    spec: SearchSpec
    cells: list[SearchCell]
    points_measured: int = 0
    engine_start_s: float = 0.0
    point_s: float = 0.0
    grid_points: int = 0
    grid_estimate_s: float = 0.0
    noise_pct: float | None = Field(
        default=None, description="the repeats' pooled relative spread; None: none repeated"
    )
    budget_spent: bool = False
    finished: bool = False
    # The end control's engine start and point (runner.search.state.Search.end_control), counted
    # in the search's engine time; 0: none measured. points_measured counts its point.
    end_control_s: float = 0.0
    end_control_note: str = ""  # why a budget left the end control out; "": it did not
    # The cost model's engine start (runner.search.costs): the prior it was given, the node's
    # last starts of the checkpoint, and the median of this run's; None: not known.
    start_prior_s: float | None = None
    start_measured_s: float | None = None

    @property
    def spent_s(self) -> float:
        return self.engine_start_s + self.point_s + self.end_control_s
