"""What a capacity plan takes and what it answers (analysis.capacity_plan computes it): the
demand, the inputs, one config's plan and the whole plan, as frozen dataclasses that read back
from their JSON (a plan's row keeps both)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal

from analysis import cost, selection
from analysis.convert import workload_shape
from analysis.errors import AnalysisError
from analysis.sentences import Sentence
from analysis.types import WorkloadShape
from runner.schema.plan import WorkloadSpec
from runner.workloads.traces import TraceRate

# 8,760 hours a year over 12 months: what a GPU held all month is billed.
HOURS_PER_MONTH = 730
SECONDS_PER_HOUR = 3600
# A margin beyond this is a typo, not headroom.
MARGIN_MAX_PCT = 1000.0
# Rates this close are one level (a float's last digits, not a measurement).
SAME_RATE = 1e-9

DemandKind = Literal["rate", "trace", "batch"]
Status = Literal["sized", "slo_unmet", "no_levels", "spec_differs"]
Position = Literal["at", "between", "below"]


@dataclass(frozen=True, kw_only=True)
class Demand:
    """What the customer's traffic asks for.

    rate: requests/s at peak (kind "rate"), or the trace's rate at its statistic (kind "trace",
    runner.workloads.traces.trace_rate). A batch job is `requests` within `hours`. workload:
    what the demand sends, where it is known (a trace's file); None: the run's own workload,
    said as an assumption.
    """

    kind: DemandKind
    rate: float | None = None
    trace: str | None = None
    trace_statistic: str | None = None
    trace_window_s: float | None = None
    trace_mean_rate: float | None = None
    trace_windows: int | None = None
    requests: int | None = None
    hours: float | None = None
    workload: WorkloadShape | None = None

    def __post_init__(self) -> None:
        if self.kind == "batch":
            if not self.requests or self.requests < 1:
                raise AnalysisError("a batch job needs its number of requests (at least 1)")
            if self.hours is None or not math.isfinite(self.hours) or self.hours <= 0:
                raise AnalysisError("a batch job needs its deadline in hours (above 0)")
            return
        if self.rate is None or not math.isfinite(self.rate) or self.rate <= 0:
            raise AnalysisError("a demand needs its requests/s at peak (above 0)")
        if self.kind == "trace" and not self.trace:
            raise AnalysisError("a trace demand names its trace")

    @property
    def fleet_rate(self) -> float:
        """Requests/s the fleet must serve: the peak, or the batch's average to its deadline."""
        if self.kind == "batch":
            assert self.requests is not None and self.hours is not None
            return self.requests / (self.hours * SECONDS_PER_HOUR)
        assert self.rate is not None
        return self.rate


def trace_demand(found: TraceRate, name: str) -> Demand:
    """A demand sized from a trace the runner replays (runner.workloads.traces.trace_rate):
    its rate at the statistic, its workload the trace's own (named as a run replaying it is)."""
    spec = WorkloadSpec(kind="trace", dataset_path=name)
    return Demand(kind="trace", rate=found.rate, trace=name, trace_statistic=found.statistic,
                  trace_window_s=found.window_s, trace_mean_rate=found.mean_rate,
                  trace_windows=found.windows, workload=workload_shape(spec))


@dataclass(frozen=True, kw_only=True)
class PlanInputs:
    """A plan's inputs: the demand, latency limits (point figure -> ms, as
    runner.schema.flags.parse_slos reads them), a headroom margin and the GPU-hour price."""

    demand: Demand
    slos: dict[str, float] = field(default_factory=dict)
    margin_pct: float = 0.0
    price: cost.GpuHourPrice | None = None

    def __post_init__(self) -> None:
        if not math.isfinite(self.margin_pct) or not 0 <= self.margin_pct <= MARGIN_MAX_PCT:
            raise AnalysisError(f"a headroom margin is 0 to {MARGIN_MAX_PCT:g}%, "
                                f"got {self.margin_pct!r}")
        for name, limit in self.slos.items():
            selection.latency_field(name)
            if not math.isfinite(limit) or limit <= 0:
                raise AnalysisError(f"the limit for {name} must be a number of ms above 0")

    @property
    def sized_rate(self) -> float:
        """Requests/s the fleet is sized for: the demand with the margin on top."""
        return self.demand.fleet_rate * (1 + self.margin_pct / 100)


@dataclass(frozen=True, kw_only=True)
class Level:
    """One config's load level as the plan reads it: its lowest repeat."""

    key: str
    load_label: str
    rate: float
    output_throughput: float
    median_e2el_ms: float | None
    values: dict[str, float | None]
    draws: int


@dataclass(frozen=True, kw_only=True)
class ConfigPlan:
    """The plan at one engine config. Figures are None where its status gives none."""

    config_label: str
    name: str
    short_name: str
    status: Status
    gpus_per_replica: int
    cpu_engine: bool
    capacity: Level | None = None
    capacity_low: float | None = None
    capacity_high: float | None = None
    # The next faster level, which missed a limit or met it by less than its scatter; at_top:
    # the capacity is the fastest level measured, so nothing above it was.
    next_level: Level | None = None
    at_top: bool = False
    efficiency: float | None = None
    replicas: int | None = None
    gpus: int | None = None
    gpus_low: int | None = None
    gpus_high: int | None = None
    share: float | None = None
    position: Position | None = None
    expected: dict[str, float | None] = field(default_factory=dict)
    hours: float | None = None
    in_system: float | None = None
    cost: Decimal | None = None
    # Per limit, the +/- percent one draw of its figure scatters by at the capacity (95%), which
    # the capacity meets the limit by; a limit absent: nothing measured it.
    scatter_pct: dict[str, float] = field(default_factory=dict)
    sentences: tuple[Sentence, ...] = ()

    @property
    def sized(self) -> bool:
        return self.status == "sized"

    @property
    def promised_rate(self) -> float | None:
        """Requests/s each replica is counted at: the low end of the capacity's interval, or
        the capacity itself where nothing measured the run's noise."""
        if self.capacity is None:
            return None
        return promised_rate(self.capacity.rate, self.capacity_low)


def promised_rate(capacity_rate: float, capacity_low: float | None) -> float:
    """The one rule for what a replica is counted at, for a plan being made and a stored one."""
    return capacity_low if capacity_low is not None else capacity_rate


@dataclass(frozen=True, kw_only=True)
class CapacityPlan:
    inputs: PlanInputs
    configs: tuple[ConfigPlan, ...]
    headline: Sentence
    notes: tuple[Sentence, ...]

    @property
    def met(self) -> bool:
        """Whether some config meets the demand within what was measured."""
        return any(c.sized for c in self.configs)

    @property
    def best(self) -> ConfigPlan | None:
        """The sized config needing the fewest GPUs (the first listed of equals)."""
        sized = [c for c in self.configs if c.sized]
        return min(sized, key=lambda c: c.gpus or 0) if sized else None
