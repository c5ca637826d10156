"""Choosing the operating point: saturation knee, SLO, Pareto frontier, or an engineer's override.

Only valid points (every request completed, none short) take part: an invalid point's
throughput counts work that did not happen. Excluded keys are listed in the evidence (typed per
method in analysis.types) so the page can say why a point is missing from the choice.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from itertools import pairwise
from typing import Any

from analysis import sentences
from analysis.errors import AnalysisError
from analysis.types import (
    LATENCY_FIELDS,
    KneeEvidence,
    KneeFound,
    KneeStep,
    OverrideEvidence,
    ParetoEvidence,
    ParetoPoint,
    PointFigures,
    Selection,
    SelectionEvidence,
    SelectionMethod,
    SloEvidence,
)

# The knee rule and the SLO test are the adaptive search's too (runner.search.rules), so the
# search measures where this choice lies.
from runner.schema.search_record import DEFAULT_LATENCY_GROWTH_PCT, DEFAULT_THROUGHPUT_GAIN_PCT
from runner.search.levels import MIN_KNEE_LEVELS
from runner.search.rules import knee_step, pct_change, within_limits


def _chosen(
    method: SelectionMethod,
    params: dict[str, Any],
    chosen_key: str,
    reason: str,
    evidence: SelectionEvidence,
) -> Selection:
    """A Selection with its sentence written from what it stores, by the same function the
    run page and the report rebuild it with (sentences.operating_point_sentence)."""
    sentence = sentences.operating_point_sentence(method, params, evidence, reason)
    return Selection(method=method, params=params, chosen_key=chosen_key, reason=reason,
                     sentence=str(sentence), evidence=evidence)


def split_valid(points: Sequence[PointFigures]) -> tuple[list[PointFigures], list[str]]:
    """(valid points, keys of the invalid ones)."""
    valid = [p for p in points if p.valid]
    return valid, [p.key for p in points if not p.valid]


def _seqs_order(point: PointFigures) -> float:
    # None is the engine default, which depends on the GPU: order it last rather than guess.
    return math.inf if point.max_num_seqs is None else float(point.max_num_seqs)


def order_load_levels(points: Sequence[PointFigures]) -> list[PointFigures]:
    """Points ordered by offered concurrency, ties (one load, several configs) by max_num_seqs.

    Two points at the same place in that order are repeats or unrelated configs, and a walk
    through them would compare noise: collapse repeats first (repeats.lowest_repeats).
    """
    ordered = sorted(points, key=lambda p: (p.offered_concurrency, _seqs_order(p)))
    for before, after in pairwise(ordered):
        if (before.offered_concurrency, _seqs_order(before)) == (
            after.offered_concurrency,
            _seqs_order(after),
        ):
            raise AnalysisError(
                f"points {before.key} and {after.key} sit at the same load level "
                f"(offered concurrency {before.offered_concurrency:g}, max_num_seqs "
                f"{before.max_num_seqs}); collapse repeats to one point per level first"
            )
    return ordered


def _pct_change(before: float, after: float, what: str, key: str) -> float:
    if before <= 0:
        raise AnalysisError(
            f"point {key} has {what} {before:g}; a change relative to it is undefined"
        )
    return pct_change(before, after)


def _require_latency(point: PointFigures, name: str) -> float:
    value = getattr(point, name)
    if value is None:
        raise AnalysisError(f"point {point.key} has no {name}: latency data is missing")
    return float(value)


def knee(
    points: Sequence[PointFigures],
    throughput_gain_pct: float = DEFAULT_THROUGHPUT_GAIN_PCT,
    latency_growth_pct: float = DEFAULT_LATENCY_GROWTH_PCT,
    noise_band_pct: float | None = None,
) -> Selection:
    """Walk up the load levels; stop at the first step that adds < X% output throughput while
    median end-to-end latency grows > Y%. The point before that step is the operating point.

    The points of one engine config are walked in order of offered concurrency. A step never
    goes from one config to another: with several configs, each is walked on its own and the
    config whose operating point delivers the most output tokens/s is chosen (the evidence's
    per_config keeps every config's choice); when no config has enough valid load levels,
    there is no knee in the sweep and the error says how many each config has.

    Without such a step the highest-throughput point is chosen, with reason "no knee within
    the sweep". noise_band_pct: the run's +/- band for a change between two draws
    (analysis.noise); a knee step inside it is said to be within noise, never a loss.
    """
    valid, excluded = split_valid(points)
    configs: dict[str, list[PointFigures]] = {}
    for point in valid:
        configs.setdefault(point.config_label, []).append(point)
    stepped_over, kept = [], []
    for label, group in configs.items():
        walked, over = undisturbed_walk(group)
        configs[label] = walked
        stepped_over += over
        kept += [p.key for p in walked if p.disturbed]
    if len(configs) > 1:
        selection = _knee_per_config(configs, excluded, throughput_gain_pct, latency_growth_pct)
    else:
        selection = _knee_walk(next(iter(configs.values()), []), excluded, throughput_gain_pct,
                               latency_growth_pct)
    assert isinstance(selection.evidence, KneeEvidence)
    evidence = replace(selection.evidence, excluded_disturbed=tuple(stepped_over),
                       disturbed_walked=tuple(kept), noise_band_pct=noise_band_pct)
    return _chosen(selection.method, selection.params, selection.chosen_key, selection.reason,
                   evidence)


def undisturbed_walk(group: list[PointFigures]) -> tuple[list[PointFigures], list[str]]:
    """One config's levels to walk, and the keys stepped over. A disturbed point's change from
    its neighbours is the neighbour process's, not the engine's, so the walk steps over it,
    unless that leaves too few levels for a knee: on a host busy throughout, the walk takes
    them all rather than choose nothing (the page names every disturbed point)."""
    calm = [p for p in group if not p.disturbed]
    if len(calm) == len(group) or len(calm) < MIN_KNEE_LEVELS:
        return group, []
    return calm, [p.key for p in group if p.disturbed]


def _knee_per_config(
    configs: dict[str, list[PointFigures]],
    excluded: list[str],
    throughput_gain_pct: float,
    latency_growth_pct: float,
) -> Selection:
    choices: list[tuple[float, Selection]] = []
    too_short = []
    for label, group in configs.items():
        if len(group) < MIN_KNEE_LEVELS:
            too_short.append(f"{label} ({len(group)})")
            continue
        selection = _knee_walk(group, [], throughput_gain_pct, latency_growth_pct)
        chosen = next(p for p in group if p.key == selection.chosen_key)
        choices.append((chosen.output_throughput, selection))
    if not choices:
        raise AnalysisError(
            f"no knee in this sweep: a knee needs at least {MIN_KNEE_LEVELS} valid load levels "
            f"of one engine config, and a step never goes from one config to another; valid "
            f"levels per config: {', '.join(too_short)}"
            + (f" ({len(excluded)} invalid point(s) left out)" if excluded else "")
        )
    # max() keeps the first of equals: the config listed first (the smaller one) wins a tie.
    _, best = max(choices, key=lambda choice: choice[0])
    assert isinstance(best.evidence, KneeEvidence)
    evidence = replace(
        best.evidence,
        excluded_invalid=tuple(excluded),
        per_config={selection.chosen_key: throughput for throughput, selection in choices},
        configs_too_short=tuple(too_short),
    )
    return Selection(
        method=best.method,
        params=best.params,
        chosen_key=best.chosen_key,
        reason=best.reason + "; the engine config whose operating point delivers the most",
        sentence=best.sentence,
        evidence=evidence,
    )


def _knee_walk(
    valid: list[PointFigures],
    excluded: list[str],
    throughput_gain_pct: float,
    latency_growth_pct: float,
) -> Selection:
    if len(valid) < MIN_KNEE_LEVELS:
        raise AnalysisError(
            f"a knee needs at least {MIN_KNEE_LEVELS} load levels; got {len(valid)} valid point(s)"
            + (f" ({len(excluded)} invalid excluded)" if excluded else "")
        )
    ordered = order_load_levels(valid)
    latencies = [_require_latency(p, "median_e2el_ms") for p in ordered]
    params = {"throughput_gain_pct": throughput_gain_pct, "latency_growth_pct": latency_growth_pct}

    steps = []
    for i in range(len(ordered) - 1):
        before, after = ordered[i], ordered[i + 1]
        gain = _pct_change(
            before.output_throughput, after.output_throughput, "throughput", before.key
        )
        growth = _pct_change(latencies[i], latencies[i + 1], "median_e2el_ms", before.key)
        steps.append(KneeStep(from_key=before.key, to_key=after.key,
                              throughput_gain_pct=gain, latency_growth_pct=growth))
        if knee_step(gain, growth, max_gain_pct=throughput_gain_pct,
                     min_growth_pct=latency_growth_pct):
            found = KneeFound(
                from_key=before.key,
                to_key=after.key,
                to_load=after.load_label or after.key,
                throughput_before=before.output_throughput,
                throughput_after=after.output_throughput,
                median_e2el_before_ms=latencies[i],
                median_e2el_after_ms=latencies[i + 1],
                throughput_gain_pct=gain,
                latency_growth_pct=growth,
            )
            evidence = KneeEvidence(found=found, chosen_throughput=None, steps=tuple(steps),
                                    excluded_invalid=tuple(excluded))
            return _chosen("knee", params, before.key, "the point before the saturation knee",
                           evidence)

    # max() keeps the first of equals: a tie goes to the lower load level, which queues less.
    best = max(ordered, key=lambda p: p.output_throughput)
    return _chosen(
        "knee",
        params,
        best.key,
        "no knee within the sweep",
        KneeEvidence(found=None, chosen_throughput=best.output_throughput, steps=tuple(steps),
                     excluded_invalid=tuple(excluded)),
    )


def latency_field(metric: str) -> str:
    """The PointFigures field a limit names; 'p50_' is accepted for 'median_'."""
    name = "median_" + metric[4:] if metric.startswith("p50_") else metric
    if name not in LATENCY_FIELDS:
        raise AnalysisError(
            f"unknown latency metric {metric!r}; use one of {', '.join(LATENCY_FIELDS)} "
            "(p50_ works for median_)"
        )
    return name


def slo(points: Sequence[PointFigures], limits: Mapping[str, float]) -> Selection:
    """The highest-throughput valid point whose latencies all stay within limits (ms).

    Which limit binds: binding_metric excludes the next faster point (the most exceeded one
    when several do); closest_metric has the least headroom at the chosen point. Without a
    faster point in the sweep, binding_metric is the closest one.
    """
    if not limits:
        raise AnalysisError("an SLO selection needs at least one latency limit")
    fields = {}
    for metric, limit in limits.items():
        if not math.isfinite(limit) or limit <= 0:
            raise AnalysisError(
                f"limit for {metric} must be a positive number of ms, got {limit!r}"
            )
        fields[metric] = latency_field(metric)

    valid, excluded = split_valid(points)
    if not valid:
        raise AnalysisError("no valid point to select from")
    values = {
        p.key: {metric: _require_latency(p, name) for metric, name in fields.items()} for p in valid
    }
    within = [p for p in valid if within_limits(values[p.key], limits)]
    if not within:
        best = join_best(values, limits)
        raise AnalysisError(f"no point meets the limits: {best}")

    # Equal throughput: the lower load level wins, as in knee().
    chosen = max(within, key=lambda p: (p.output_throughput, -p.offered_concurrency))
    at_chosen = values[chosen.key]
    utilisation = {m: at_chosen[m] / limits[m] for m in limits}
    closest = max(utilisation, key=lambda m: utilisation[m])

    faster = [p for p in valid if p.output_throughput > chosen.output_throughput]
    next_point = (
        min(faster, key=lambda p: (p.output_throughput, p.offered_concurrency)) if faster else None
    )
    next_violations: dict[str, float] = {}
    binding = closest
    if next_point is not None:
        at_next = values[next_point.key]
        broken = sorted(
            (m for m in limits if at_next[m] > limits[m]),
            key=lambda m: at_next[m] / limits[m],
            reverse=True,
        )
        next_violations = {m: at_next[m] for m in broken}
        binding = broken[0]

    return _chosen(
        "slo",
        {"limits": dict(limits)},
        chosen.key,
        f"highest throughput within the limits; {binding} binds",
        SloEvidence(
            chosen_throughput=chosen.output_throughput,
            values=at_chosen,
            utilisation=utilisation,
            closest_metric=closest,
            binding_metric=binding,
            next_key=next_point.key if next_point else None,
            next_throughput=next_point.output_throughput if next_point else None,
            next_violations=next_violations,
            excluded_invalid=tuple(excluded),
        ),
    )


def join_best(values: Mapping[str, Mapping[str, float]], limits: Mapping[str, float]) -> str:
    """For a failed SLO: the best value reached for each limit, so the user sees how far off."""
    parts = []
    for metric, limit in limits.items():
        lowest = min(v[metric] for v in values.values())
        parts.append(
            f"lowest {metric} is {sentences.num(lowest)} ms (limit {sentences.num(limit)})"
        )
    return "; ".join(parts)


def _pareto_coordinates(point: PointFigures) -> ParetoPoint:
    tpot = _require_latency(point, "median_tpot_ms")
    if tpot <= 0:
        raise AnalysisError(
            f"point {point.key} has median_tpot_ms {tpot:g}; tokens/s per user is undefined"
        )
    return ParetoPoint(
        key=point.key,
        output_throughput_per_gpu=point.throughput_per_gpu,
        tokens_per_user=1000.0 / tpot,
    )


def _dominates(a: ParetoPoint, b: ParetoPoint) -> bool:
    return (
        a.output_throughput_per_gpu >= b.output_throughput_per_gpu
        and a.tokens_per_user >= b.tokens_per_user
        and (
            a.output_throughput_per_gpu > b.output_throughput_per_gpu
            or a.tokens_per_user > b.tokens_per_user
        )
    )


def pareto_points(points: Sequence[PointFigures]) -> tuple[ParetoPoint, ...]:
    """Every valid point on the Pareto axes: output tokens/s per GPU and tokens/s per user
    (1000 / median TPOT ms), in the order given. Invalid points take no part."""
    valid, _ = split_valid(points)
    if not valid:
        raise AnalysisError("no valid point to draw a Pareto frontier from")
    return tuple(_pareto_coordinates(p) for p in valid)


def pareto_frontier(points: Sequence[PointFigures]) -> tuple[ParetoPoint, ...]:
    """Valid points no other valid point beats on both output tokens/s per GPU and tokens/s per
    user (1000 / median TPOT ms), ordered by throughput per GPU ascending (so per-user
    descending), the order a chart draws the line in. Sweeps are tens of points: O(n^2) is fine.
    """
    coords = pareto_points(points)
    frontier = [c for c in coords if not any(_dominates(o, c) for o in coords)]
    return tuple(
        sorted(frontier, key=lambda c: (c.output_throughput_per_gpu, -c.tokens_per_user, c.key))
    )


def pareto_choice(points: Sequence[PointFigures], min_tokens_per_user: float) -> Selection:
    """The frontier point with the most output tokens/s per GPU that still gives every user at
    least min_tokens_per_user tokens/s: the interactivity target picks the place on the curve.
    """
    if not math.isfinite(min_tokens_per_user) or min_tokens_per_user <= 0:
        raise AnalysisError("min_tokens_per_user must be a positive number")
    frontier = pareto_frontier(points)
    eligible = [c for c in frontier if c.tokens_per_user >= min_tokens_per_user]
    if not eligible:
        fastest = max(c.tokens_per_user for c in frontier)
        raise AnalysisError(
            f"no frontier point gives {sentences.num(min_tokens_per_user)} tokens/s per user; "
            f"the most is {sentences.num(fastest)}"
        )
    chosen = max(eligible, key=lambda c: c.output_throughput_per_gpu)
    return _chosen(
        "pareto",
        {"min_tokens_per_user": min_tokens_per_user},
        chosen.key,
        "most throughput per GPU on the Pareto frontier at the per-user target",
        ParetoEvidence(output_throughput_per_gpu=chosen.output_throughput_per_gpu,
                       tokens_per_user=chosen.tokens_per_user, frontier=frontier),
    )


def override(
    points: Sequence[PointFigures],
    chosen_key: str,
    reason: str,
    previous: Selection | None = None,
) -> Selection:
    """An engineer's choice, kept with the written reason and what it replaced.

    Refuses a blank reason (an unexplained override is what this tool exists to prevent), an
    unknown key, and an invalid point (its throughput counts work that did not happen).
    """
    reason = reason.strip()
    if not reason:
        raise AnalysisError("an override needs a written reason")
    by_key = {p.key: p for p in points}
    if chosen_key not in by_key:
        raise AnalysisError(f"point {chosen_key} is not part of this benchmark")
    chosen = by_key[chosen_key]
    # A point left out only because its stored aggregates failed a check may be taken with a
    # reason; a run with failed or short responses never.
    if not chosen.valid and not (chosen.run_valid and chosen.failed_checks):
        raise AnalysisError(
            f"point {chosen_key} is not a valid run (failed or short responses); "
            "an operating point must be valid"
        )
    params: dict[str, object] = {"reason": reason}
    if previous is not None:
        params["replaces_method"] = previous.method
        params["replaces_key"] = previous.chosen_key
    return _chosen("override", params, chosen_key, reason,
                   OverrideEvidence(chosen_throughput=chosen.output_throughput))
