"""Capacity from repeats: the lowest, with the spread beside it."""

from __future__ import annotations

import pytest

from analysis.errors import AnalysisError
from analysis.repeats import (
    capacity_by_setting,
    capacity_estimate,
    lowest_repeats,
    setting_of,
)
from analysis.types import WorkloadShape
from tests.analysis.helpers import CASE_STUDY_SPEC, point

CONFIG = "seqs=1024,tokens=8192"
LONG_SPEC = WorkloadShape(input_tokens_min=1000, input_tokens_max=1000, output_tokens=1000)


def test_capacity_is_the_lowest_repeat_with_its_spread():
    est = capacity_estimate([46_200.0, 45_800.0])
    assert est.capacity == 45_800
    assert (est.minimum, est.maximum, est.mean) == (45_800, 46_200, 46_000)
    assert est.spread == 400
    assert est.relative_spread_pct == pytest.approx(400 / 46_000 * 100)  # 0.87%
    assert est.repeats == 2
    assert est.values == (46_200, 45_800)


def test_one_repeat_has_no_spread():
    est = capacity_estimate([100.0])
    assert (est.capacity, est.spread, est.relative_spread_pct, est.repeats) == (100, 0, 0, 1)


def test_capacity_refuses_no_repeats_and_non_finite_values():
    with pytest.raises(AnalysisError, match="at least one repeat"):
        capacity_estimate([])
    with pytest.raises(AnalysisError, match="finite"):
        capacity_estimate([1.0, float("nan")])


def test_capacity_by_setting_groups_repeats_and_skips_invalid_ones():
    points = [
        point("a|r0", 2000, 46_200, repeat=0),
        point("a|r1", 2000, 45_800, repeat=1),
        point("a|r2", 2000, 10_000, repeat=2, valid=False),
        point("b|r0", 500, 30_000, repeat=0),
        point("c|r0", 8000, 1, repeat=0, valid=False),
    ]
    out = capacity_by_setting(points)
    assert out[(CONFIG, 2000, 1, CASE_STUDY_SPEC, "")].capacity == 45_800
    assert out[(CONFIG, 2000, 1, CASE_STUDY_SPEC, "")].repeats == 2
    assert out[(CONFIG, 500, 1, CASE_STUDY_SPEC, "")].capacity == 30_000
    assert (CONFIG, 8000, 1, CASE_STUDY_SPEC, "") not in out


def test_lowest_repeats_keeps_one_point_per_setting():
    points = [
        point("a|r0", 2000, 46_200, repeat=0),
        point("a|r1", 2000, 45_800, repeat=1),
        point("a|r2", 2000, 10_000, repeat=2, valid=False),
        point("b|r0", 500, 30_000, repeat=0),
    ]
    assert sorted(p.key for p in lowest_repeats(points)) == ["a|r1", "b|r0"]


def test_a_setting_is_config_load_replica_count_and_workload_spec():
    p = point("a", 2000, 46_000, replicas=8, gpu_count=8, load_label="burst 2000")
    assert setting_of(p) == (CONFIG, 2000, 8, CASE_STUDY_SPEC, "burst 2000")


def test_two_rates_of_one_request_count_are_two_levels_not_repeats():
    # A rate load offers its request count as its concurrency: 2/s and 4/s x 100 share 100.
    slow = point("slow", 100, 512, load_label="rate 2.0/s x 100", offered_rate=2.0)
    fast = point("fast", 100, 1024, load_label="rate 4.0/s x 100", offered_rate=4.0)
    assert sorted(p.key for p in lowest_repeats([slow, fast])) == ["fast", "slow"]


def test_a_node_run_is_not_a_repeat_of_a_single_replica_point():
    # The case that showed a 123% "spread": one GPU at 46,000 tok/s beside an 8-replica node at
    # 330,000, same config and load. Two settings, each its own capacity, neither a spread.
    points = [
        point("single", 2000, 46_000),
        point("node|r0", 2000, 330_000, replicas=8, gpu_count=8),
        point("node|r1", 2000, 329_000, replicas=8, gpu_count=8, repeat=1),
    ]
    out = capacity_by_setting(points)
    assert out[(CONFIG, 2000, 1, CASE_STUDY_SPEC, "")].repeats == 1
    node = out[(CONFIG, 2000, 8, CASE_STUDY_SPEC, "")]
    assert (node.capacity, node.repeats, node.spread) == (329_000, 2, 1_000)
    assert sorted(p.key for p in lowest_repeats(points)) == ["node|r1", "single"]


def test_a_point_at_another_workload_spec_is_not_a_repeat():
    points = [point("short", 2000, 46_000), point("long", 2000, 9_000, workload=LONG_SPEC)]
    out = capacity_by_setting(points)
    assert out[(CONFIG, 2000, 1, CASE_STUDY_SPEC, "")].capacity == 46_000
    assert out[(CONFIG, 2000, 1, LONG_SPEC, "")].capacity == 9_000
    assert len(lowest_repeats(points)) == 2
