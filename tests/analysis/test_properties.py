"""Property tests: invariants that must hold for any sweep, not only the hand-built ones."""

from __future__ import annotations

import math
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from analysis.compare import compare
from analysis.errors import AnalysisError
from analysis.repeats import capacity_estimate
from analysis.scaling import scaling
from analysis.selection import knee, pareto_frontier, slo
from analysis.types import Measured
from analysis.verdicts import verdict
from tests.analysis.helpers import CASE_STUDY_SPEC, facts, point

throughputs = st.floats(min_value=1.0, max_value=1e6, allow_nan=False)
latencies = st.floats(min_value=1.0, max_value=1e6, allow_nan=False)


@st.composite
def sweeps(draw, min_size=3, max_size=10):
    """Points at distinct load levels with positive throughput and latencies."""
    levels = draw(
        st.lists(st.integers(1, 10_000), min_size=min_size, max_size=max_size, unique=True)
    )
    return [
        point(
            f"p{level}",
            level,
            draw(throughputs),
            median_e2el_ms=draw(latencies),
            p99_e2el_ms=draw(latencies),
            median_tpot_ms=draw(st.floats(min_value=0.5, max_value=500)),
            gpu_count=draw(st.integers(1, 8)),
        )
        for level in levels
    ]


def dominates(a, b):
    return (
        a.output_throughput_per_gpu >= b.output_throughput_per_gpu
        and a.tokens_per_user >= b.tokens_per_user
        and (
            a.output_throughput_per_gpu > b.output_throughput_per_gpu
            or a.tokens_per_user > b.tokens_per_user
        )
    )


@given(sweeps(min_size=1))
def test_the_pareto_frontier_is_exactly_the_undominated_points_in_order(points):
    frontier = pareto_frontier(points)
    keys = {f.key for f in frontier}
    coords = {p.key: (p.output_throughput / p.gpu_count, 1000 / p.median_tpot_ms) for p in points}
    for key, (x, y) in coords.items():
        beaten = any(ox >= x and oy >= y and (ox > x or oy > y) for ox, oy in coords.values())
        assert (key in keys) == (not beaten)
    for a, b in pairwise(frontier):
        assert a.output_throughput_per_gpu <= b.output_throughput_per_gpu
        assert a.tokens_per_user >= b.tokens_per_user
        assert not dominates(a, b) and not dominates(b, a)


@given(sweeps(), st.randoms())
def test_the_knee_is_the_first_qualifying_step_whatever_the_input_order(points, rnd):
    shuffled = list(points)
    rnd.shuffle(shuffled)
    sel = knee(shuffled)
    assert sel == knee(points)
    ordered = sorted(points, key=lambda p: p.offered_concurrency)
    steps = sel.evidence.steps
    qualifying = [s.throughput_gain_pct < 2.0 and s.latency_growth_pct > 20.0 for s in steps]
    if sel.evidence.knee_found:
        assert qualifying[-1] and not any(qualifying[:-1])
        assert sel.chosen_key == steps[-1].from_key
    else:
        assert not any(qualifying) and len(steps) == len(ordered) - 1
        # Ties go to the lowest load level: the same throughput for less queueing.
        assert sel.chosen_key == max(ordered, key=lambda p: p.output_throughput).key


@given(sweeps(min_size=1), latencies, st.floats(min_value=1.0, max_value=10.0))
def test_slo_picks_the_fastest_point_within_the_limit_and_a_looser_limit_never_picks_slower(
    points, limit, looser
):
    try:
        sel = slo(points, {"p99_e2el_ms": limit})
    except AnalysisError:
        assert all(p.p99_e2el_ms > limit for p in points)
        return
    by_key = {p.key: p for p in points}
    chosen = by_key[sel.chosen_key]
    assert chosen.p99_e2el_ms <= limit
    assert all(
        p.output_throughput <= chosen.output_throughput for p in points if p.p99_e2el_ms <= limit
    )
    wider = slo(points, {"p99_e2el_ms": limit * looser})
    assert by_key[wider.chosen_key].output_throughput >= chosen.output_throughput


@given(st.lists(throughputs, min_size=1, max_size=8), st.randoms())
def test_capacity_is_the_minimum_and_ignores_repeat_order(values, rnd):
    est = capacity_estimate(values)
    assert est.capacity == min(values)
    assert est.minimum <= est.mean * (1 + 1e-12) and est.mean <= est.maximum * (1 + 1e-12)
    assert est.spread >= 0 and est.relative_spread_pct >= 0
    shuffled = list(values)
    rnd.shuffle(shuffled)
    again = capacity_estimate(shuffled)
    assert (again.capacity, again.maximum, again.spread) == (est.capacity, est.maximum, est.spread)


@given(throughputs, throughputs, latencies, latencies)
def test_improvement_and_ratio_agree_and_swapping_sides_inverts_the_ratio(b, c, lb, lc):
    before = Measured(facts=facts(), figures=point("b", 1, b, median_e2el_ms=lb))
    after = Measured(facts=facts(), figures=point("c", 1, c, median_e2el_ms=lc))
    forward, backward = compare(before, after), compare(after, before)
    assert 1 + forward.improvement_pct / 100 == pytest.approx(forward.ratio)
    assert forward.ratio * backward.ratio == pytest.approx(1.0)
    assert forward.controlled and backward.controlled


@given(
    throughputs,
    throughputs,
    st.integers(1, 16),
    st.integers(1, 8),
    st.floats(min_value=0.1, max_value=1e4),
)
def test_scaling_efficiency_times_the_ideal_is_the_node_throughput(node, ref, n, gpus, window):
    s = scaling(
        node_throughput=node,
        n_replicas=n,
        gpus_per_replica=gpus,
        window_seconds=window,
        workload=CASE_STUDY_SPEC,
        per_replica=[],
        reference=point("ref", 1, ref, gpu_count=gpus),
    )
    assert s.efficiency * s.ideal_throughput == pytest.approx(node)
    assert s.throughput_per_gpu * s.total_gpus == pytest.approx(node)


queue_numbers = st.floats(min_value=0, max_value=5000, allow_nan=False)


@given(
    st.booleans(),
    queue_numbers,
    queue_numbers,
    queue_numbers,
    st.floats(min_value=0, max_value=1),
    st.one_of(st.none(), st.floats(min_value=0, max_value=10_000)),
    st.sampled_from([None, 8, 256, 1024]),
)
def test_every_point_with_engine_samples_gets_exactly_one_known_verdict(
    client_saturated, running, extra_peak, waiting, kv, steps, cap
):
    p = point(
        "p",
        100,
        1000.0,
        client_saturated=client_saturated,
        max_num_seqs=cap,
        queue_samples=10,
        mean_running=running,
        peak_running=running + extra_peak,
        mean_waiting=waiting,
        peak_kv_usage=kv,
        preemptions=0.0,
        mean_tokens_per_step=steps,
    )
    v = verdict(p)
    assert v.kind in {
        "client_bound",
        "kv_capacity",
        "scheduler_cap",
        "token_budget",
        "deferred",
        "step_time",
        "underloaded",
        "unclear",
    }
    assert v.sentence
    if client_saturated:
        assert v.kind == "client_bound"
    elif kv >= 0.95:
        assert v.kind == "kv_capacity"
    assert not math.isnan(v.output_throughput)
