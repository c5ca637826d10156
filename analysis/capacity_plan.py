"""A capacity plan: how many replicas and GPUs a demand needs at each engine config, from the
configs' own measured levels and never beyond them.

One function, plan_capacity, for the plan page, the report and `python -m analysis capacity`, so
all three give the same numbers from the same points. Per engine config:

- its levels are its single-replica points, one per load level: the lowest repeat
  (analysis.repeats.lowest_repeats), valid ones only;
- one replica's capacity is the level the SLO selection chooses (analysis.selection.slo: the
  most output within every limit) among the levels that meet each limit by one draw's scatter
  (a percentile near capacity turns on a few requests, and a level a few percent inside a
  limit misses it when loaded again; the scatter is the wider of the level's own draws and the
  median of the levels' within the limit, level_scatter), below the slowest level where a
  draw missed a limit (counted_levels: a faster level that met them above it read low on its
  draws, and is named), or, without limits, the throughput
  operating point (selection.knee; with too few levels for a knee, the highest throughput
  measured). Its rate is a rate load's scheduled requests/s, else the completed requests over
  the window; its interval is the run's noise (analysis.noise.value_interval) over the level's
  draws;
- nothing is scaled: a capacity at the highest level measured is said to be "not measured
  above", the faster level that missed a limit is named, and a config whose every level
  missed a limit gets no plan;
- each replica is counted at the low end of the capacity's interval (ConfigPlan.promised_rate):
  the engine sustained the capacity on draws as fast as the ones measured, and a replica sized
  at it misses its targets on a slower draw; without the run's noise, at the capacity itself;
- replicas = ceil(demand x (1 + margin) / (that rate x efficiency)), the efficiency a node run
  of the config measured (analysis.scaling.node_efficiency, at most 1) or, without one, 1 said
  as an assumption; GPUs = replicas x the GPUs of one replica (tensor parallel);
- each replica's share of the demand lies at a measured level, between two (figures
  interpolated linearly, naming both) or below the lowest (said not measured);
- a batch job is done in requests / (replicas x that rate x efficiency) seconds, and each replica
  keeps capacity x median latency requests in the system (Little's law);
- cost: GPUs x price x 730 hours a month, or x the job's hours, with the price's date;
- a demand whose workload differs from a config's is not planned on it: the controlled
  comparison guard's statement names both specs instead.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from decimal import Decimal
from typing import Any

from analysis import capacity_words as words
from analysis import cost, noise, repeats, scaling, selection
from analysis.capacity_types import (
    HOURS_PER_MONTH,
    SAME_RATE,
    SECONDS_PER_HOUR,
    CapacityPlan,
    ConfigPlan,
    Demand,
    DemandKind,
    Level,
    PlanInputs,
    Position,
    promised_rate,
)
from analysis.errors import AnalysisError
from analysis.sentences import FIGURE_INTERVAL, Sentence, num, percent, setting_value_text
from analysis.types import EXTRA_FLAGS, KneeEvidence, PointFigures
from runner.convergence import Z, pooled_log_sd
from runner.fixed_factors import factor_status

# --- levels --------------------------------------------------------------------------------------


def level_rate(point: PointFigures) -> float:
    """A level's requests/s: a rate load's scheduled rate, else the completed requests over the
    window; a point that recorded neither has none (AnalysisError)."""
    rate = point.offered_rate if point.offered_rate is not None else point.request_throughput
    if rate is None or rate <= 0:
        raise AnalysisError(f"point {point.key} recorded no request rate")
    return rate


def _figures(point: PointFigures, names: Sequence[str]) -> dict[str, float | None]:
    return {name: getattr(point, selection.latency_field(name)) for name in names}


def _level(point: PointFigures, names: Sequence[str], draws: int) -> Level:
    return Level(key=point.key, load_label=point.load_label or point.key, rate=level_rate(point),
                 output_throughput=point.output_throughput, median_e2el_ms=point.median_e2el_ms,
                 values=_figures(point, names), draws=draws)


def _judged_draws(point: PointFigures, points: Sequence[PointFigures]) -> int:
    group = repeats.group_by_setting(points).get(repeats.setting_of(point), [point])
    return len(repeats.judged_repeats(group)) or 1


def _configs(points: Sequence[PointFigures]) -> dict[str, list[PointFigures]]:
    """Each config's points, configs in order of max_num_seqs (the engine default last), then
    as first measured."""
    groups: dict[str, list[PointFigures]] = {}
    for point in points:
        groups.setdefault(point.config_label, []).append(point)
    order = {label: index for index, label in enumerate(groups)}

    def seqs(label: str) -> float:
        value = groups[label][0].max_num_seqs
        return math.inf if value is None else float(value)

    return {label: groups[label] for label in sorted(groups, key=lambda c: (seqs(c), order[c]))}


def config_names(configs: dict[str, list[PointFigures]]) -> dict[str, tuple[str, str]]:
    """(name, short name) per config: the settings that vary between the configs ("max_num_seqs
    4"; short "4" when only that one varies); a config alone is named by the settings it sets,
    or by its label when it sets none."""
    settings = {label: dict(group[0].settings()) for label, group in configs.items()}
    names = list(dict.fromkeys(name for values in settings.values() for name in values))
    varying = [n for n in names if len({repr(s.get(n)) for s in settings.values()}) > 1]
    out = {}
    for label, values in settings.items():
        shown = varying or [n for n in names if values.get(n) is not None]
        if not shown:
            out[label] = (label, label)
            continue
        name = ", ".join(f"{n} {_value_text(n, values.get(n))}" for n in shown)
        short = _value_text(shown[0], values.get(shown[0])) if len(shown) == 1 else name
        out[label] = (name, short)
    return out


def _value_text(name: str, value: Any) -> str:
    """A setting's value in a config's name; extra flags by name only, "(set)" where a value
    was given: a value can be a local path, and a plan's headline goes into customer reports."""
    if name != EXTRA_FLAGS or not isinstance(value, str):
        return setting_value_text(value)
    shown: list[str] = []
    for token in value.split():
        if token.startswith("-"):
            flag, equals, _ = token.partition("=")
            shown.append(flag + (" (set)" if equals else ""))
        elif shown and not shown[-1].endswith(" (set)"):
            shown[-1] += " (set)"
    return " ".join(shown)


# --- one config ----------------------------------------------------------------------------------


@dataclass
class _Config:
    """What plan_config works from, and what it has found so far."""

    label: str
    name: str
    short: str
    levels: list[PointFigures]
    singles: list[PointFigures]
    nodes: list[PointFigures]
    all_points: Sequence[PointFigures]
    inputs: PlanInputs
    noise: noise.RunNoise
    names: tuple[str, ...]
    # Levels that meet every limit by their scatter (None: no limits), and each level's scatter
    # per limit as a log-scale sd (a limit absent: nothing measured it).
    qualified: frozenset[str] | None = None
    scatter: dict[str, dict[str, float]] = field(default_factory=dict)
    out: list[Sentence] = field(default_factory=list)


def _choose(c: _Config) -> tuple[PointFigures | None, list[Sentence]]:
    """The capacity level and its sentences; (None, why) when no level qualifies."""
    limits = c.inputs.slos
    if not limits:
        chosen, said = _operating_point(c)
        return chosen, [said]
    try:
        plain_key = selection.slo(c.levels, limits).chosen_key
    except AnalysisError:
        lowest = min(c.levels, key=level_rate)
        return None, [Sentence(words.SLO_UNMET, {
            "limits": words.limits_text(limits), "rate": words.rate_text(level_rate(lowest)),
            "load": lowest.load_label or lowest.key,
            "reached": words.values_text(_figures(lowest, list(limits)))})]
    plain = next(p for p in c.levels if p.key == plain_key)
    c.scatter = level_scatter(c.levels, c.all_points, limits)
    missed = first_missed(c.levels, c.all_points, limits)
    c.qualified = counted_levels(c.levels, missed, limits, c.scatter)
    if not c.qualified:
        if missed is not None and any(_within_scatter(p, limits, c.scatter) for p in c.levels):
            return None, [Sentence(words.SLO_MISSED_BELOW, {
                "limits": words.limits_text(limits), "rate": words.rate_text(level_rate(missed)),
                "load": missed.load_label or missed.key,
                "reached": words.values_text(_worst_draws(missed, c.all_points, limits))})]
        return None, [Sentence(words.SLO_WITHIN_SCATTER, {
            "limits": words.limits_text(limits), "rate": words.rate_text(level_rate(plain)),
            "load": plain.load_label or plain.key,
            "reached": words.values_text(_figures(plain, list(limits))),
            "bands": _bands_text(c.scatter.get(plain.key, {}))})]
    chosen_key = selection.slo([p for p in c.levels if p.key in c.qualified], limits).chosen_key
    chosen = next(p for p in c.levels if p.key == chosen_key)
    draws = _judged_draws(chosen, c.all_points)
    out = [Sentence(words.CAPACITY_SLO, {
        "rate": _rate_with_interval(level_rate(chosen), c.noise, draws),
        "limits": words.limits_text(limits), "load": chosen.load_label or chosen.key})]
    bands = c.scatter.get(chosen.key, {})
    if bands:
        out.append(Sentence(words.SCATTER_ALLOWED, {
            "bands": _bands_text(bands), "load": chosen.load_label or chosen.key}))
    return chosen, out


# --- a limit's scatter ---------------------------------------------------------------------------


def _draw_values(point: PointFigures, groups: dict[repeats.Setting, list[PointFigures]],
                 field_name: str) -> list[float]:
    """A figure over every judged draw of the point's setting."""
    group = groups.get(repeats.setting_of(point), [point])
    return [v for p in repeats.judged_repeats(group)
            if (v := getattr(p, field_name)) is not None]


# The median of chi-square at 1 to 5 degrees of freedom: a sample sd over df degrees has median
# sigma * sqrt(median / df), which _robust_log_sd divides out.
CHI_SQUARE_MEDIANS = (0.454936, 1.386294, 2.365974, 3.356694, 4.351460)


def _sd_median_ratio(freedom: int) -> float:
    """Median of a sample sd over `freedom` degrees, in units of the true sd."""
    if freedom <= len(CHI_SQUARE_MEDIANS):
        return math.sqrt(CHI_SQUARE_MEDIANS[freedom - 1] / freedom)
    return (1 - 2 / (9 * freedom)) ** 1.5  # Wilson-Hilferty


def _robust_log_sd(groups: Sequence[Sequence[float]]) -> float | None:
    """The median of the groups' own log-scale sds, each scaled to the true sd by its median
    ratio: one wide pair moves it by one rank, where it would widen a pooled sd for every
    level. None when no group has two draws."""
    scaled = []
    for values in groups:
        sd, draws = pooled_log_sd([values])
        if sd is not None:
            scaled.append(sd / _sd_median_ratio(draws - 1))
    return statistics.median(scaled) if scaled else None


def level_scatter(levels: Sequence[PointFigures], points: Sequence[PointFigures],
                  limits: dict[str, float]) -> dict[str, dict[str, float]]:
    """Per level and limit, how far one draw of the limit's figure scatters (log-scale sd): the
    wider of the level's own draws' and the typical scatter of the config's levels whose figure
    meets the limit (the median of their own, _robust_log_sd). Near capacity a percentile turns
    on a few requests, so the level's own draws count where they scatter more than the others;
    a limit nothing measured is absent."""
    out: dict[str, dict[str, float]] = {p.key: {} for p in levels}
    groups = repeats.group_by_setting(points)
    for name, limit in limits.items():
        field_name = selection.latency_field(name)
        admitted = [p for p in levels
                    if (v := getattr(p, field_name)) is not None and v <= limit]
        typical = _robust_log_sd([_draw_values(p, groups, field_name) for p in admitted])
        for p in levels:
            own, _ = pooled_log_sd([_draw_values(p, groups, field_name)])
            found = [sd for sd in (typical, own) if sd is not None]
            if found:
                out[p.key][name] = max(found)
    return out


def counted_levels(levels: Sequence[PointFigures], missed: PointFigures | None,
                   limits: dict[str, float],
                   scatter: dict[str, dict[str, float]]) -> frozenset[str]:
    """The levels a plan may promise: those meeting every limit by their scatter, below the
    slowest level where a draw missed a limit (`missed`, first_missed). A latency grows with the
    load, so a faster level that met the limits above one that missed them read low on its
    draws."""
    below = [p for p in levels if missed is None or level_rate(p) < level_rate(missed)]
    return frozenset(p.key for p in below if _within_scatter(p, limits, scatter))


def first_missed(levels: Sequence[PointFigures], points: Sequence[PointFigures],
                 limits: dict[str, float]) -> PointFigures | None:
    """The slowest level where some judged draw's figure is past its limit."""
    groups = repeats.group_by_setting(points)
    for point in sorted(levels, key=level_rate):
        for name, limit in limits.items():
            if any(v > limit for v in _draw_values(point, groups, selection.latency_field(name))):
                return point
    return None


def _worst_draws(point: PointFigures, points: Sequence[PointFigures],
                 limits: dict[str, float]) -> dict[str, float | None]:
    """Each limit's figure in the level's slowest judged draw."""
    groups = repeats.group_by_setting(points)
    return {name: max(_draw_values(point, groups, selection.latency_field(name)), default=None)
            for name in limits}


def _uncounted_above(c: _Config, chosen: PointFigures) -> Sentence | None:
    """The fastest level that met every limit by its scatter but lies above a level where a
    draw missed one, said so that the plan's engineer sees why it is not the capacity."""
    if not c.inputs.slos or c.qualified is None:
        return None
    skipped = [p for p in c.levels if p.key not in c.qualified
               and level_rate(p) > level_rate(chosen)
               and _within_scatter(p, c.inputs.slos, c.scatter)]
    if not skipped:
        return None
    fastest = max(skipped, key=level_rate)
    return Sentence(words.ABOVE_UNCOUNTED, {
        "rate": words.rate_text(level_rate(fastest)), "load": fastest.load_label or fastest.key,
        "reached": words.values_text(_figures(fastest, list(c.inputs.slos)))})


def _within_scatter(point: PointFigures, limits: dict[str, float],
                    scatter: dict[str, dict[str, float]]) -> bool:
    """Every figure, raised by its one-draw 95% band, stays within its limit."""
    for name, limit in limits.items():
        value = getattr(point, selection.latency_field(name))
        sd = scatter.get(point.key, {}).get(name, 0.0)
        if value is None or value * math.exp(Z * sd) > limit:
            return False
    return True


def _bands_text(bands: dict[str, float]) -> str:
    """'p95_e2el_ms +/-12.3%' per limit: one draw's 95% band."""
    return ", ".join(f"{name} +/-{percent(math.expm1(Z * sd) * 100)}"
                     for name, sd in bands.items())


def _operating_point(c: _Config) -> tuple[PointFigures, Sentence]:
    template = words.CAPACITY_KNEE
    # The knee walks levels by offered concurrency, which a rate load gives as its request
    # count: levels of one count at several rates would be one level to it. Walked by rate.
    by_rate = [replace(p, offered_concurrency=level_rate(p)) for p in c.levels]
    try:
        knee = selection.knee(by_rate)
        chosen = next(p for p in c.levels if p.key == knee.chosen_key)
        if not (isinstance(knee.evidence, KneeEvidence) and knee.evidence.knee_found):
            template = words.CAPACITY_HIGHEST
    except AnalysisError:  # too few levels for a knee, or a level without its latency
        chosen = max(c.levels, key=lambda p: (p.output_throughput, -level_rate(p)))
        template = words.CAPACITY_HIGHEST
    draws = _judged_draws(chosen, c.all_points)
    latency = chosen.median_e2el_ms
    return chosen, Sentence(template, {
        "rate": _rate_with_interval(level_rate(chosen), c.noise, draws),
        "throughput": num(chosen.output_throughput),
        "latency": num(latency) if latency is not None else "?",
        "load": chosen.load_label or chosen.key, "levels": str(len(c.levels))})


def _rate_with_interval(rate: float, found: noise.RunNoise, draws: int) -> Sentence:
    interval = noise.value_interval(rate, found.throughput_sd, draws, "")
    value = Sentence(words.CELL_RATE, {"rate": words.rate_text(rate)})
    if interval is None:
        return value
    return Sentence(FIGURE_INTERVAL, {
        "value": value, "low": words.rate_text(interval.low),
        "high": words.rate_text(interval.high), "draws": str(interval.repeats)})


def _above(c: _Config, chosen: PointFigures) -> tuple[Level | None, Sentence | None]:
    """The next faster level that missed a limit or met it by less than its scatter (the
    capacity lies between), or, when the capacity is the fastest level measured, that nothing
    above it was measured."""
    rate = level_rate(chosen)
    limits = c.inputs.slos
    faster = [p for p in c.levels if level_rate(p) > rate * (1 + SAME_RATE)]
    if not faster:
        return None, Sentence(words.NOT_ABOVE, {"rate": words.rate_text(rate)})
    qualified = c.qualified if c.qualified is not None else frozenset()
    missed = [p for p in faster if p.key not in qualified]
    if not limits or not missed:
        return None, None
    following = min(missed, key=level_rate)
    values = _figures(following, list(limits))
    reached = {n: v for n, v in values.items() if v is None or v > limits[n]}
    level = _level(following, c.names, _judged_draws(following, c.all_points))
    common = {"rate": words.rate_text(level.rate), "load": level.load_label}
    if not reached:
        return level, Sentence(words.NEXT_WITHIN_SCATTER, {
            **common, "reached": words.values_text(values),
            "bands": _bands_text(c.scatter.get(following.key, {}))})
    return level, Sentence(words.NEXT_MISSED, {**common, "broken": words.values_text(reached)})


def _efficiency(c: _Config) -> tuple[float | None, Sentence]:
    """The lowest efficiency a node run of the config measured against its own single-replica
    level of the same load, or None with the assumption said."""
    found: list[tuple[float, PointFigures]] = []
    for node in repeats.lowest_repeats(c.nodes):
        reference = next((p for p in c.levels if p.load_label == node.load_label), None)
        if reference is None or not node.valid:
            continue
        try:
            found.append((scaling.node_efficiency(node, reference), node))
        except AnalysisError:
            continue
    if not found:
        return None, Sentence(words.SCALING_ASSUMED, {})
    efficiency, node = min(found, key=lambda pair: pair[0])
    template = words.SCALING_ABOVE_ONE if efficiency > 1 else words.SCALING_MEASURED
    return efficiency, Sentence(template, {
        "efficiency": words.efficiency_text(efficiency), "replicas": str(node.replicas),
        "load": node.load_label or node.key})


def _ceil(value: float) -> int:
    # 40 / 8 is 5 replicas, not 6 for a float's last digit.
    return max(1, math.ceil(value * (1 - SAME_RATE)))


def _replicas(sized_rate: float, capacity: float, efficiency: float | None) -> int:
    """One replica needs no scaling; more are counted at the measured efficiency (at most 1)."""
    alone = _ceil(sized_rate / capacity)
    if alone == 1:
        return 1
    applied = min(efficiency, 1.0) if efficiency is not None else 1.0
    return _ceil(sized_rate / (capacity * applied))


def _position(c: _Config, share: float) -> tuple[Position, dict[str, float | None], Sentence]:
    """Where one replica's share lies among the measured levels, and its figures there."""
    ordered = sorted(c.levels, key=level_rate)
    figures_named = c.names or ("median_e2el_ms",)
    at = next((p for p in ordered if math.isclose(level_rate(p), share, rel_tol=SAME_RATE)),
              None)
    if at is not None:
        values = _figures(at, figures_named)
        return "at", values, Sentence(words.AT_LEVEL, {
            "share": words.rate_text(share), "load": at.load_label or at.key,
            "values": words.values_text(values)})
    below = [p for p in ordered if level_rate(p) < share]
    if not below:
        lowest = ordered[0]
        values = _figures(lowest, figures_named)
        return "below", values, Sentence(words.BELOW, {
            "share": words.rate_text(share), "low": words.rate_text(level_rate(lowest)),
            "low_load": lowest.load_label or lowest.key, "values": words.values_text(values)})
    low = below[-1]
    high = next(p for p in ordered if level_rate(p) > share)
    values = _interpolated(low, high, share, figures_named)
    return "between", values, Sentence(words.BETWEEN, {
        "share": words.rate_text(share), "low": words.rate_text(level_rate(low)),
        "high": words.rate_text(level_rate(high)), "low_load": low.load_label or low.key,
        "high_load": high.load_label or high.key, "values": words.values_text(values)})


def _interpolated(low: PointFigures, high: PointFigures, rate: float,
                  names: Sequence[str]) -> dict[str, float | None]:
    """Each figure on the straight line between the two levels at `rate`."""
    weight = (rate - level_rate(low)) / (level_rate(high) - level_rate(low))
    out: dict[str, float | None] = {}
    for name, a in _figures(low, names).items():
        b = getattr(high, selection.latency_field(name))
        out[name] = None if a is None or b is None else a + (b - a) * weight
    return out


def _cost(c: _Config, plan: dict[str, Any], cpu_engine: bool,
          today: date) -> tuple[Decimal | None, list[Sentence]]:
    price = c.inputs.price
    if cpu_engine:
        return None, [Sentence(words.NO_COST_CPU, {})]
    if price is None:
        return None, [Sentence(words.NO_COST_PRICE, {})]
    gpus = plan["gpus"]
    stale = cost.stale_price_sentence(price, today, cost.PRICE_MAX_AGE_DAYS)
    common = {"gpus": str(gpus), "price": price.text, "as_of": price.as_of.isoformat()}
    if c.inputs.demand.kind == "batch":
        hours = Decimal(str(round(plan["hours"], 4)))
        amount = price.amount * gpus * hours
        money = f"{cost.figure(float(amount))} {price.currency}"
        said = Sentence(words.COST_JOB, {**common, "hours": num(plan["hours"]), "cost": money})
    else:
        amount = price.amount * gpus * HOURS_PER_MONTH
        money = f"{cost.figure(float(amount))} {price.currency}"
        said = Sentence(words.COST_MONTH, {**common, "hours": str(HOURS_PER_MONTH),
                                           "cost": money})
    return amount, [said] + ([stale] if stale is not None else [])


def _spec_refusal(c: _Config) -> Sentence | None:
    demand = c.inputs.demand.workload
    measured = c.levels[0].workload if c.levels else None
    # Compared by label: a trace is its file, whatever token bounds its spec kept beside it.
    if demand is None or factor_status(demand.label(),
                                       measured.label() if measured else None) == "match":
        return None
    return Sentence(words.SPEC_DIFFERS, {
        "demand": demand.label(),
        "measured": measured.label() if measured is not None else "(spec not recorded)"})


def plan_config(c: _Config, today: date) -> ConfigPlan:
    sample = (c.levels or c.singles or c.nodes)[0]
    head = ConfigPlan(config_label=c.label, name=c.name, short_name=c.short, status="no_levels",
                      gpus_per_replica=max(1, sample.gpu_count // sample.replicas),
                      cpu_engine=sample.hardware is not None and sample.hardware.cpu_engine)
    refusal = _spec_refusal(c)
    if refusal is not None:
        return replace(head, status="spec_differs", sentences=(refusal,))
    if not c.levels:
        return replace(head, sentences=(Sentence(words.NO_LEVELS, {}),))
    chosen, said = _choose(c)
    if chosen is None:
        return replace(head, status="slo_unmet", sentences=tuple(said))
    draws = _judged_draws(chosen, c.all_points)
    capacity = _level(chosen, c.names, draws)
    interval = noise.value_interval(capacity.rate, c.noise.throughput_sd, draws, "")
    next_level, above = _above(c, chosen)
    efficiency, scaled = _efficiency(c)
    sized_rate = c.inputs.sized_rate
    promised = promised_rate(capacity.rate, interval.low if interval is not None else None)
    replicas = _replicas(sized_rate, promised, efficiency)
    per_replica = head.gpus_per_replica
    share = sized_rate / replicas
    position, expected, where = _position(c, share)
    unit = words.unit(head.cpu_engine)
    skipped = _uncounted_above(c, chosen)
    sentences = said + [s for s in (above, skipped) if s is not None]
    sentences.append(Sentence(words.FLEET, {
        "sized": words.rate_text(sized_rate), "replicas": str(replicas),
        "per_replica": str(per_replica), "unit": unit, "gpus": str(replicas * per_replica),
        "share": words.rate_text(share)}))
    plan: dict[str, Any] = {"replicas": replicas, "gpus": replicas * per_replica}
    if interval is not None:
        low = _replicas(sized_rate, interval.high, efficiency) * per_replica
        high = replicas * per_replica
        plan |= {"gpus_low": low, "gpus_high": high, "capacity_low": interval.low,
                 "capacity_high": interval.high}
        sentences.append(Sentence(words.SIZED_LOW, {"low": words.rate_text(interval.low)}))
        if low != high:
            sentences.append(Sentence(words.FLEET_RANGE, {"low": str(low), "high": str(high),
                                                          "unit": unit}))
    if replicas > 1:
        sentences.append(scaled)
    sentences.append(where)
    if c.inputs.demand.kind == "batch":
        sentences += _batch(c, capacity, promised, replicas, efficiency, plan, unit)
    amount, priced = _cost(c, plan, head.cpu_engine, today)
    sentences += priced
    if c.inputs.slos and not c.scatter.get(chosen.key):
        sentences.append(Sentence(words.SCATTER_UNMEASURED, {}))
    return replace(
        head, status="sized", capacity=capacity, next_level=next_level,
        at_top=above is not None and above.template == words.NOT_ABOVE, efficiency=efficiency,
        share=share, position=position, expected=expected, cost=amount,
        scatter_pct={n: math.expm1(Z * sd) * 100
                     for n, sd in c.scatter.get(chosen.key, {}).items()},
        sentences=tuple(sentences), **plan)


def _batch(c: _Config, capacity: Level, promised: float, replicas: int,
           efficiency: float | None, plan: dict[str, Any], unit: Sentence) -> list[Sentence]:
    """Hours to finish the job at the rate each replica is counted at, and the queue that keeps
    each replica saturated at the level measured."""
    assert c.inputs.demand.requests is not None
    applied = min(efficiency, 1.0) if efficiency is not None and replicas > 1 else 1.0
    hours = c.inputs.demand.requests / (replicas * promised * applied) / SECONDS_PER_HOUR
    plan["hours"] = hours
    out = [Sentence(words.BATCH, {"hours": num(hours), "gpus": str(plan["gpus"]), "unit": unit,
                                  "replicas": str(replicas),
                                  "rate": words.rate_text(promised)})]
    if capacity.median_e2el_ms is not None:
        in_system = capacity.rate * capacity.median_e2el_ms / 1000
        plan["in_system"] = in_system
        out.append(Sentence(words.LITTLE, {
            "in_system": num(in_system), "rate": words.rate_text(capacity.rate),
            "latency": num(capacity.median_e2el_ms / 1000),
            "fleet": words.count_text(math.ceil(in_system * replicas))}))
    return out


def runs_together(runs: Sequence[tuple[str, Sequence[PointFigures]]]) -> list[PointFigures]:
    """The points of several runs (result files, the runs of one plan) as one plan reads them:
    a point's key is its run's own ("seqs=4|burst 64|r0" in each), so with more than one run
    each key is prefixed with its run's name; the repeats of a setting across runs stay its
    draws."""
    if len(runs) == 1:
        return list(runs[0][1])
    return [replace(p, key=f"{name}: {p.key}") for name, points in runs for p in points]


# --- the plan ------------------------------------------------------------------------------------


def plan_capacity(points: Sequence[PointFigures], inputs: PlanInputs, *,
                  today: date) -> CapacityPlan:
    """The plan for `inputs` over the points of one or more runs (module docstring)."""
    if not points:
        raise AnalysisError("a capacity plan needs measured points")
    found = noise.run_noise(points)
    configs = _configs(points)
    names = config_names(configs)
    limits = tuple(inputs.slos)
    plans = []
    for label, group in configs.items():
        singles = [p for p in group if p.replicas == 1]
        levels = [p for p in repeats.lowest_repeats(singles) if p.valid]
        state = _Config(label=label, name=names[label][0], short=names[label][1],
                        levels=levels, singles=singles,
                        nodes=[p for p in group if p.replicas > 1], all_points=points,
                        inputs=inputs, noise=found, names=limits)
        plans.append(plan_config(state, today))
    return CapacityPlan(inputs=inputs, configs=tuple(plans),
                        headline=headline(plans, inputs.demand.kind),
                        notes=tuple(_notes(inputs, points, found)))


def headline(plans: Sequence[ConfigPlan], kind: DemandKind) -> Sentence:
    """'At max_num_seqs 4 this traffic needs 12 GPUs; at 64, 3.'"""
    if not any(p.sized for p in plans):
        return Sentence(words.HEADLINE_NOTHING_MET, {})
    parts = []
    for index, plan in enumerate(plans):
        first = index == 0
        config = plan.name if first else plan.short_name
        values: dict[str, str | Sentence] = {"config": config}
        if not plan.sized:
            parts.append(Sentence(words.HEADLINE_FIRST_NONE if first else words.HEADLINE_NEXT_NONE,
                                  values))
            continue
        values |= {"gpus": str(plan.gpus), "unit": words.unit(plan.cpu_engine)}
        if kind == "batch":
            values["hours"] = num(plan.hours or 0.0)
            parts.append(Sentence(words.HEADLINE_FIRST_JOB if first else words.HEADLINE_NEXT_JOB,
                                  values))
        else:
            parts.append(Sentence(
                words.HEADLINE_FIRST_TRAFFIC if first else words.HEADLINE_NEXT_TRAFFIC, values))
    return words.joined(parts)


def _notes(inputs: PlanInputs, points: Sequence[PointFigures],
           found: noise.RunNoise) -> list[Sentence]:
    demand = inputs.demand
    out = [_demand_sentence(demand)]
    if inputs.margin_pct:
        out.append(Sentence(words.MARGIN, {"margin": percent(inputs.margin_pct),
                                           "sized": words.rate_text(inputs.sized_rate)}))
    spec = next((p.workload for p in points if p.workload is not None), None)
    if demand.workload is None and spec is not None:
        out.append(Sentence(words.SPEC_ASSUMED, {"spec": spec.label()}))
    if not inputs.slos and demand.kind != "batch":
        out.append(Sentence(words.NO_SLO_INTERACTIVE, {}))
    if found.throughput_sd is None:
        out.append(Sentence(words.NO_INTERVAL, {}))
    return out


def _demand_sentence(demand: Demand) -> Sentence:
    if demand.kind == "batch":
        return Sentence(words.DEMAND_BATCH, {
            "requests": words.count_text(demand.requests or 0), "hours": num(demand.hours or 0),
            "rate": words.rate_text(demand.fleet_rate)})
    if demand.kind == "trace":
        return Sentence(words.DEMAND_TRACE, {
            "trace": demand.trace or "", "statistic": demand.trace_statistic or "peak",
            "window": num(demand.trace_window_s or 0), "rate": words.rate_text(demand.fleet_rate),
            "mean": words.rate_text(demand.trace_mean_rate or 0),
            "windows": str(demand.trace_windows or 0)})
    return Sentence(words.DEMAND_RATE, {"rate": words.rate_text(demand.fleet_rate)})
