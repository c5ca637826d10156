"""A capacity plan checked against the engine: the plan that loads one config at the rate the
plan promises each replica, and what the points it measured say about the promise.

The check is a run of its own (runner.sweep.run_plan through the dashboard's launch path, or
`python -m runner sweep` on the plan `python -m analysis capacity --verify-plan` writes): the
chosen engine config on one replica, an open-loop rate load at each replica's share of the
demand on Headroom's schedule (runner.client.schedule), or, for a demand sized from a trace,
the trace itself replayed at the speed that brings its sized rate to that share. A rate load
sends for as long as the level that measured the capacity, and at least as many requests: past
capacity an open-loop queue grows for as long as arrivals last, so 1.3x the rate over fewer
seconds would ask an easier question than the plan's level answered, and the percentiles rest
on at least as many requests as the promise did. A trace sends as many requests as that level.

A target held when every draw was valid and met every limit: a draw that failed or came back
short is a miss, since its latencies leave out the requests that never finished.

The check also loads the level that measured the capacity, as it was measured, in every round:
at the same load, its median TPOT against the plan's own draws of it says whether the engine ran
at the speed the plan saw (speed_check). A host that slowed between the plan's run and the check
misses targets the plan would have kept, and the page says so beside the verdict.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from analysis import capacity_words as words
from analysis import repeats, selection
from analysis.capacity_plan import level_rate
from analysis.capacity_types import ConfigPlan
from analysis.errors import AnalysisError
from analysis.noise import band_pct
from analysis.sentences import Sentence, num, percent, within_band
from analysis.types import PointFigures
from runner.convergence import pooled_log_sd
from runner.schema.plan import LoadSpec, StabilitySpec, SweepPlan


def verify_plan(source: SweepPlan, config: ConfigPlan, rates: Sequence[float], *,
                repeats_each: int = 2, trace_rate: float | None = None) -> SweepPlan:
    """The source run's plan cut to the config's check: its engine config, one replica, a load
    per rate (requests/s per replica) and `repeats_each` draws of each.

    trace_rate: the sized rate of a trace demand at replay speed 1; given, and the source plan
    replays that trace, each load replays it at speed rate / trace_rate instead.
    """
    if config.capacity is None:
        raise AnalysisError(f"{config.name} has no plan to check")
    engine = next((e for e in source.engine_configs if e.label() == config.config_label), None)
    if engine is None:
        raise AnalysisError(f"the run's plan has no engine config {config.config_label}")
    measured = next((load for load in source.loads
                     if load.label() == config.capacity.load_label), None)
    count = measured.num_requests if measured is not None else source.loads[0].num_requests
    loads = [_load(rate, count, measured, source, trace_rate) for rate in rates]
    if measured is not None and measured.label() not in {load.label() for load in loads}:
        loads.append(measured)  # the capacity level again, for speed_check
    return source.model_copy(update={
        "name": f"{source.name}: check of {config.name}",
        "engine_configs": [engine], "loads": loads, "repeats": repeats_each, "replicas": 1,
        "search": None,
        # Each load is its own promise: no first level to measure again for drift.
        "stability": StabilitySpec(redraw_disturbed=source.stability.redraw_disturbed,
                                   control_point=False, end_control=False)})


def _load(rate: float, count: int, measured: LoadSpec | None, source: SweepPlan,
          trace_rate: float | None) -> LoadSpec:
    if not (math.isfinite(rate) and rate > 0):
        raise AnalysisError(f"a check loads a rate above 0 requests/s, got {rate!r}")
    if trace_rate is not None and source.workload.kind == "trace":
        return LoadSpec(shape="trace", num_requests=count,
                        speed=_significant(rate / trace_rate))
    # As a person would type it: a load's label (and so its point key) shows the number as
    # given, and 1.3 x 13.32 is 17.316000000000003; four figures move it by under 0.05%.
    rate = _significant(rate)
    if measured is None or measured.shape != "rate" or measured.rate is None:
        return LoadSpec(shape="rate", num_requests=count, rate=rate)
    # The measured level's seconds of arrivals (module docstring), never fewer requests.
    sent = max(count, round(count * rate / measured.rate))
    return LoadSpec(shape="rate", num_requests=sent, rate=rate, burstiness=measured.burstiness)


@dataclass(frozen=True, kw_only=True)
class Check:
    """One loaded rate: its draws and whether the targets held in each."""

    load_label: str
    rate: float
    draws: int
    held_draws: int
    invalid_draws: int
    values: dict[str, tuple[float, float]]  # limit -> (lowest, highest) over the valid draws
    held: bool
    sentence: Sentence


def check_points(points: Sequence[PointFigures], slos: Mapping[str, float]) -> tuple[Check, ...]:
    """Each loaded rate of a check run, in rate order, against the plan's limits."""
    checks = []
    groups = repeats.group_by_setting([p for p in points if p.replicas == 1])
    for group in sorted(groups.values(), key=lambda g: level_rate(g[0])):
        checks.append(_check(group, slos))
    return tuple(checks)


def promise_check(checks: Sequence[Check], config: ConfigPlan) -> Check:
    """The check of the plan's promise: the loaded rate nearest each replica's share, the
    capacity level loaded again for speed_check left out unless it is the only one."""
    assert config.share is not None and checks
    share = config.share
    again = config.capacity.load_label if config.capacity is not None else None
    candidates = [c for c in checks if c.load_label != again] or list(checks)
    return min(candidates, key=lambda c: abs(c.rate - share))


def _check(group: Sequence[PointFigures], slos: Mapping[str, float]) -> Check:
    first = group[0]
    rate, load = level_rate(first), first.load_label or first.key
    valid = [p for p in group if p.valid]
    values: dict[str, tuple[float, float]] = {}
    for name in slos:
        seen = [v for p in valid if (v := getattr(p, selection.latency_field(name))) is not None]
        if seen:
            values[name] = (min(seen), max(seen))
    held = sum(1 for p in valid if all(
        (v := getattr(p, selection.latency_field(n))) is not None and v <= limit
        for n, limit in slos.items()))
    common = {"rate": words.rate_text(rate), "load": load, "draws": str(len(group))}
    if len(valid) < len(group):
        sentence = Sentence(words.VERIFY_INVALID, {**common,
                                                   "invalid": str(len(group) - len(valid))})
    elif not slos:
        lowest = min(valid, key=lambda p: p.output_throughput)
        latency = lowest.median_e2el_ms
        sentence = Sentence(words.VERIFY_NO_SLO, {
            **common, "throughput": num(lowest.output_throughput),
            "latency": num(latency) if latency is not None else "?"})
    else:
        template = words.VERIFY_HELD if held == len(group) else words.VERIFY_MISSED
        sentence = Sentence(template, {**common, "held": str(held),
                                       "values": _ranges_text(values, slos)})
    return Check(load_label=load, rate=rate, draws=len(group), held_draws=held,
                 invalid_draws=len(group) - len(valid), values=values,
                 held=len(valid) == len(group) and held == len(group), sentence=sentence)


@dataclass(frozen=True, kw_only=True)
class SpeedCheck:
    """The capacity level in the check against the plan's draws of it: geometric means of the
    draws' median TPOT (ms), the change in percent (positive: slower now) and the +/- percent
    inside which the change is the draws' own scatter (None: no setting was drawn twice)."""

    load_label: str
    then_ms: float
    now_ms: float
    change_pct: float
    band_pct: float | None
    sentence: Sentence


def speed_check(plan_points: Sequence[PointFigures], checked: Sequence[PointFigures],
                config: ConfigPlan) -> SpeedCheck | None:
    """The engine's per-token speed at the capacity level, when the plan measured it and in the
    check (module docstring); None when either has no judged draw of it with a median TPOT."""
    if config.capacity is None:
        return None
    label = config.capacity.load_label
    then_groups, now_groups = _tpot_groups(plan_points, config), _tpot_groups(checked, config)
    then, now = then_groups.get(label, []), now_groups.get(label, [])
    if not then or not now:
        return None
    sd, _ = pooled_log_sd([*then_groups.values(), *now_groups.values()])
    then_ms, now_ms = _geometric_mean(then), _geometric_mean(now)
    change = (now_ms / then_ms - 1) * 100
    band = None if sd is None else band_pct(sd, math.sqrt(1 / len(then) + 1 / len(now)))
    values = {"load": label, "then": num(then_ms), "now": num(now_ms),
              "change": percent(abs(change)), "band": percent(band) if band is not None else ""}
    if band is None:
        template = words.VERIFY_SPEED_UNJUDGED
    elif within_band(change, band):
        template = words.VERIFY_SPEED_SAME
    else:
        template = words.VERIFY_SPEED_SLOWER if change > 0 else words.VERIFY_SPEED_FASTER
    return SpeedCheck(load_label=label, then_ms=then_ms, now_ms=now_ms, change_pct=change,
                      band_pct=band, sentence=Sentence(template, values))


def _tpot_groups(points: Sequence[PointFigures], config: ConfigPlan) -> dict[str, list[float]]:
    """The config's one-replica levels, by load label: their judged draws' median TPOT."""
    ours = [p for p in points if p.config_label == config.config_label and p.replicas == 1]
    out: dict[str, list[float]] = {}
    for group in repeats.group_by_setting(ours).values():
        values = [p.median_tpot_ms for p in repeats.judged_repeats(group)
                  if p.median_tpot_ms is not None and p.median_tpot_ms > 0]
        if values:
            out.setdefault(group[0].load_label or group[0].key, []).extend(values)
    return out


def _geometric_mean(values: Sequence[float]) -> float:
    return math.exp(math.fsum(math.log(v) for v in values) / len(values))


def _ranges_text(values: Mapping[str, tuple[float, float]], slos: Mapping[str, float]) -> str:
    """'p95_ttft_ms 1,480-1,720 ms (<= 2,000 ms)': the figure over the draws, its target."""
    parts = []
    for name, limit in slos.items():
        if name not in values:
            parts.append(f"{name} - (<= {num(limit)} ms)")
            continue
        low, high = values[name]
        shown = num(low) if num(low) == num(high) else f"{num(low)}-{num(high)}"
        parts.append(f"{name} {shown} ms (<= {num(limit)} ms)")
    return ", ".join(parts)


def _significant(value: float) -> float:
    """value to four significant figures."""
    return float(f"{value:.4g}")

