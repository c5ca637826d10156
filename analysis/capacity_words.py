"""Every sentence a capacity plan writes (analysis.capacity_plan, analysis.capacity_verify).

Templates with their values, as analysis.sentences.Sentence: the plan page shows the English, a
report looks each template up in locale/ko and fills in the same values. CAPACITY_TEMPLATES
lists every one, so the Korean catalog is held to all of them (tests/reports/
test_translations.py). The builders take numbers and names, never points.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from analysis import cost
from analysis.capacity_types import ConfigPlan, DemandKind
from analysis.sentences import Sentence, num, percent, with_unit

# --- the demand -------------------------------------------------------------------------------

DEMAND_RATE = "Demand: %(rate)s requests/s at peak."
DEMAND_TRACE = (
    "Demand: the trace %(trace)s at its %(statistic)s %(window)s s window, %(rate)s requests/s "
    "(%(mean)s requests/s on average over %(windows)s windows).")
DEMAND_BATCH = (
    "Demand: %(requests)s requests within %(hours)s hours, %(rate)s requests/s on average.")
MARGIN = "With a %(margin)s headroom margin the fleet is sized for %(sized)s requests/s."
SPEC_ASSUMED = (
    "The demand is taken to send what the run measured (%(spec)s): the plan holds for that "
    "workload, not for another.")
NO_SLO_INTERACTIVE = (
    "No latency targets were given: each config is sized at its throughput operating point, "
    "whose queue suits batch work more than interactive traffic.")
NO_INTERVAL = (
    "Nothing measured the noise of these runs (no repeat, no control point), so the capacities "
    "carry no interval.")

# --- one replica's capacity ---------------------------------------------------------------------

CAPACITY_SLO = (
    "One replica sustains %(rate)s within %(limits)s, at %(load)s, its lowest "
    "repeat.")
CAPACITY_KNEE = (
    "One replica's throughput operating point is %(rate)s (%(throughput)s output "
    "tokens/s at %(latency)s ms median latency), at %(load)s, its lowest repeat: the last level "
    "before the knee.")
CAPACITY_HIGHEST = (
    "One replica's throughput operating point is %(rate)s (%(throughput)s output "
    "tokens/s at %(latency)s ms median latency), at %(load)s, its lowest repeat: the highest "
    "throughput measured, with no knee among its %(levels)s load level(s).")
NEXT_MISSED = (
    "The next level measured, %(rate)s requests/s (%(load)s), reached %(broken)s: the capacity "
    "lies between the two levels, and the plan counts the lower.")
NOT_ABOVE = (
    "Not measured above %(rate)s requests/s: the plan counts no more, though one replica may "
    "sustain more.")
SLO_UNMET = (
    "No measured level met %(limits)s: the lowest, %(rate)s requests/s (%(load)s), reached "
    "%(reached)s. Not measured below %(rate)s requests/s, so this config gets no plan.")
SCATTER_ALLOWED = (
    "A level counts only when each figure, raised by one draw's scatter, stays within its "
    "limit: near capacity a percentile turns on a few requests. At %(load)s one draw scatters "
    "by %(bands)s (95%%, the wider of the level's own draws and the typical level within the "
    "limit).")
SCATTER_UNMEASURED = (
    "No level was measured twice, so nothing measured how far a latency percentile scatters "
    "between draws: a capacity close to a limit may miss it when loaded again.")
NEXT_WITHIN_SCATTER = (
    "The next level measured, %(rate)s requests/s (%(load)s), reached %(reached)s, inside the "
    "limits by less than one draw's scatter (%(bands)s): the capacity lies between the two "
    "levels, and the plan counts the lower.")
SLO_WITHIN_SCATTER = (
    "No measured level met %(limits)s by more than one draw's scatter: the fastest within them, "
    "%(rate)s requests/s (%(load)s), reached %(reached)s, and one draw there scatters by "
    "%(bands)s. This config gets no plan; more draws of its levels would say whether it holds.")
SLO_MISSED_BELOW = (
    "No level below %(rate)s requests/s (%(load)s) met %(limits)s by more than one draw's "
    "scatter, and a draw there missed them (it reached %(reached)s): the plan counts no level "
    "above one where a draw missed, since a latency grows with the load. This config gets no "
    "plan; more draws of its levels would say whether it holds.")
ABOVE_UNCOUNTED = (
    "A faster level, %(rate)s requests/s (%(load)s), met the limits by more than one draw's "
    "scatter (it reached %(reached)s), but the plan counts no level above one where a draw "
    "missed them: a latency grows with the load, so that level's draws read low.")
NO_LEVELS = "No valid load level of one replica was measured, so this config gets no plan."
SPEC_DIFFERS = (
    "No plan across different specs: the demand %(demand)s, this config measured %(measured)s.")

# --- the fleet ----------------------------------------------------------------------------------

FLEET = (
    "%(sized)s requests/s needs %(replicas)s replica(s), %(gpus)s %(unit)s in all "
    "(%(per_replica)s per replica), each replica taking %(share)s requests/s.")
SIZED_LOW = (
    "Each replica is counted at %(low)s requests/s, the low end of the capacity's 95%% "
    "interval, so that a draw slower than the ones measured still keeps the targets.")
FLEET_RANGE = (
    "Within the capacity's 95%% interval the same demand needs %(low)s to %(high)s %(unit)s.")
SCALING_MEASURED = (
    "The node run's scaling efficiency, %(efficiency)s over %(replicas)s replicas at %(load)s, "
    "is applied to the replicas.")
SCALING_ABOVE_ONE = (
    "The node run's scaling efficiency, %(efficiency)s over %(replicas)s replicas at %(load)s, "
    "is above 100%%: the plan takes 100%%, never more than linear.")
SCALING_ASSUMED = (
    "No node run of this config gives a scaling efficiency: its replicas are assumed to scale "
    "linearly, which was not measured.")
AT_LEVEL = (
    "Each replica's %(share)s requests/s is a measured level (%(load)s): %(values)s.")
BETWEEN = (
    "Each replica's %(share)s requests/s lies between two measured levels, %(low)s and "
    "%(high)s requests/s (%(low_load)s and %(high_load)s); interpolated linearly: %(values)s.")
BELOW = (
    "Each replica's %(share)s requests/s is below the lowest measured level, %(low)s "
    "requests/s (%(low_load)s), and was not measured; that level reached %(values)s.")
BATCH = (
    "Done in %(hours)s hours on %(gpus)s %(unit)s: %(replicas)s replica(s) at %(rate)s "
    "requests/s each.")
LITTLE = (
    "To stay saturated each replica needs about %(in_system)s requests in the system (Little's "
    "law: %(rate)s requests/s x %(latency)s s median latency): a queue of at least %(fleet)s "
    "across the fleet.")
COST_MONTH = (
    "About %(cost)s per month: %(gpus)s GPUs x %(price)s per GPU-hour as of %(as_of)s x "
    "%(hours)s hours.")
COST_JOB = (
    "About %(cost)s for the job: %(gpus)s GPUs x %(hours)s hours x %(price)s per GPU-hour as of "
    "%(as_of)s.")
NO_COST_PRICE = "No cost: no GPU-hour price is set."
NO_COST_CPU = "No cost: a CPU engine stood in for the GPU, so there are no GPU-hours to price."
UNIT_GPUS = "GPUs"
UNIT_CPU_ENGINES = "CPU engines"

# --- the headline -------------------------------------------------------------------------------

HEADLINE_FIRST_TRAFFIC = "At %(config)s this traffic needs %(gpus)s %(unit)s"
HEADLINE_NEXT_TRAFFIC = "at %(config)s, %(gpus)s"
HEADLINE_FIRST_JOB = "At %(config)s this job is done in %(hours)s hours on %(gpus)s %(unit)s"
HEADLINE_NEXT_JOB = "at %(config)s, in %(hours)s hours on %(gpus)s"
HEADLINE_FIRST_NONE = "At %(config)s there is no plan within what was measured"
HEADLINE_NEXT_NONE = "at %(config)s, none within what was measured"
HEADLINE_NOTHING_MET = "No engine config meets this demand within what was measured."

# --- the check against the engine (analysis.capacity_verify) ------------------------------------

VERIFY_HELD = (
    "Loaded at %(rate)s requests/s (%(load)s), the targets held in %(held)s of %(draws)s "
    "draw(s): %(values)s.")
VERIFY_MISSED = (
    "Loaded at %(rate)s requests/s (%(load)s), the targets held in only %(held)s of %(draws)s "
    "draw(s): %(values)s.")
VERIFY_NO_SLO = (
    "Loaded at %(rate)s requests/s (%(load)s): %(throughput)s output tokens/s at %(latency)s ms "
    "median latency in its lowest draw of %(draws)s; no latency target to hold.")
VERIFY_INVALID = (
    "Loaded at %(rate)s requests/s (%(load)s): %(invalid)s of %(draws)s draw(s) failed or came "
    "back short, so the targets did not hold.")

VERIFY_SPEED_SAME = (
    "The capacity level (%(load)s), loaded again in this check, ran at the speed the plan "
    "measured: median TPOT %(now)s ms against %(then)s ms, within the draws' scatter "
    "(+/-%(band)s).")
VERIFY_SPEED_SLOWER = (
    "The capacity level (%(load)s), loaded again in this check, ran each output token "
    "%(change)s slower than when the plan measured it (median TPOT %(now)s ms against %(then)s "
    "ms), beyond the draws' scatter (+/-%(band)s): a target missed here may be the host's "
    "speed, not the plan's.")
VERIFY_SPEED_FASTER = (
    "The capacity level (%(load)s), loaded again in this check, ran each output token "
    "%(change)s faster than when the plan measured it (median TPOT %(now)s ms against %(then)s "
    "ms), beyond the draws' scatter (+/-%(band)s): a target held here may be the host's speed, "
    "not the plan's.")
VERIFY_SPEED_UNJUDGED = (
    "The capacity level (%(load)s), loaded again in this check, read median TPOT %(now)s ms "
    "against %(then)s ms when the plan measured it; no level was drawn twice, so nothing says "
    "whether that is beyond the host's noise.")

# --- a plan's table: one row per config ---------------------------------------------------------

CELL_RATE = "%(rate)s requests/s"
CELL_RANGE = "%(value)s (%(low)s-%(high)s)"
CELL_HOURS = "%(hours)s hours"
CELL_MONTH = "%(cost)s per month"
CELL_JOB = "%(cost)s for the job"
CELL_NO_PLAN = "no plan"

CAPACITY_TEMPLATES = (
    DEMAND_RATE, DEMAND_TRACE, DEMAND_BATCH, MARGIN, SPEC_ASSUMED, NO_SLO_INTERACTIVE,
    NO_INTERVAL, CAPACITY_SLO, CAPACITY_KNEE, CAPACITY_HIGHEST, NEXT_MISSED, NOT_ABOVE, SLO_UNMET,
    SCATTER_ALLOWED, SCATTER_UNMEASURED, NEXT_WITHIN_SCATTER, SLO_WITHIN_SCATTER,
    SLO_MISSED_BELOW, ABOVE_UNCOUNTED, NO_LEVELS,
    SPEC_DIFFERS, FLEET, SIZED_LOW, FLEET_RANGE, SCALING_MEASURED, SCALING_ABOVE_ONE,
    SCALING_ASSUMED, AT_LEVEL, BETWEEN, BELOW, BATCH, LITTLE, COST_MONTH, COST_JOB,
    NO_COST_PRICE, NO_COST_CPU, UNIT_GPUS, UNIT_CPU_ENGINES, HEADLINE_FIRST_TRAFFIC,
    HEADLINE_NEXT_TRAFFIC, HEADLINE_FIRST_JOB, HEADLINE_NEXT_JOB, HEADLINE_FIRST_NONE,
    HEADLINE_NEXT_NONE, HEADLINE_NOTHING_MET, VERIFY_HELD, VERIFY_MISSED, VERIFY_NO_SLO,
    VERIFY_INVALID, VERIFY_SPEED_SAME, VERIFY_SPEED_SLOWER, VERIFY_SPEED_FASTER,
    VERIFY_SPEED_UNJUDGED, CELL_RATE, CELL_RANGE, CELL_HOURS, CELL_MONTH, CELL_JOB, CELL_NO_PLAN,
)


def rate_text(value: float) -> str:
    """Requests/s for prose: two decimals below 10 (0.45, 8.00), else as num()."""
    return f"{value:.2f}" if abs(value) < 10 else num(value)


def count_text(value: float) -> str:
    """A whole count with thousands separators: 10,000,000."""
    return f"{round(value):,}"


def limits_text(limits: Mapping[str, float]) -> str:
    """'p95_ttft_ms <= 2,000 ms, p99_tpot_ms <= 50.0 ms' (the figures' own names, as the
    operating point's SLO sentence names them)."""
    return ", ".join(f"{name} <= {with_unit(name, limit)}" for name, limit in limits.items())


def values_text(values: Mapping[str, float | None]) -> str:
    """'p95_ttft_ms 1,480 ms, median_e2el_ms 5,200 ms'; a figure not recorded is said so."""
    return ", ".join(
        f"{name} {with_unit(name, value) if value is not None else 'not recorded'}"
        for name, value in values.items())


def unit(cpu_engine: bool) -> Sentence:
    return Sentence(UNIT_CPU_ENGINES if cpu_engine else UNIT_GPUS, {})


def efficiency_text(efficiency: float) -> str:
    return percent(efficiency * 100)


def joined(parts: Sequence[Sentence]) -> Sentence:
    """Clauses joined by '; ' and closed by a full stop; each clause is translated alone."""
    names = [f"p{index}" for index in range(len(parts))]
    template = "; ".join(f"%({name})s" for name in names) + "."
    return Sentence(template, dict(zip(names, parts, strict=True)), translatable=False)


# --- a plan's table ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Cells:
    """One config's row of a plan's table: each cell a Sentence, None where the plan has no
    such figure (a batch job's hours on traffic, a cost without a price)."""

    capacity: Sentence
    gpus: Sentence
    hours: Sentence | None
    cost: Sentence | None


def cells(config: ConfigPlan, price: cost.GpuHourPrice | None, kind: DemandKind) -> Cells:
    none = Sentence(CELL_NO_PLAN, {})
    if not config.sized or config.capacity is None:
        return Cells(capacity=none, gpus=none, hours=None, cost=None)
    rate = Sentence(CELL_RATE, {"rate": rate_text(config.capacity.rate)})
    if config.capacity_low is not None and config.capacity_high is not None:
        rate = Sentence(CELL_RANGE, {"value": rate,
                                           "low": rate_text(config.capacity_low),
                                           "high": rate_text(config.capacity_high)})
    gpus: Sentence = Sentence("%(gpus)s", {"gpus": str(config.gpus)}, translatable=False)
    if config.gpus_low is not None and config.gpus_low != config.gpus_high:
        gpus = Sentence(CELL_RANGE, {"value": str(config.gpus),
                                           "low": str(config.gpus_low),
                                           "high": str(config.gpus_high)})
    hours = (Sentence(CELL_HOURS, {"hours": num(config.hours)})
             if config.hours is not None else None)
    money = None
    if config.cost is not None and price is not None:
        text = f"{cost.figure(float(config.cost))} {price.currency}"
        money = Sentence(CELL_JOB if kind == "batch" else CELL_MONTH, {"cost": text})
    return Cells(capacity=rate, gpus=gpus, hours=hours, cost=money)
