"""Capacity from repeats: the lowest, with the spread beside it."""

from __future__ import annotations

import pytest

from benchmarks.analysis.errors import AnalysisError
from benchmarks.analysis.repeats import capacity_by_setting, capacity_estimate, lowest_repeats
from tests.analysis.helpers import point


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
    assert out[("seqs=1024,tokens=8192", 2000)].capacity == 45_800
    assert out[("seqs=1024,tokens=8192", 2000)].repeats == 2
    assert out[("seqs=1024,tokens=8192", 500)].capacity == 30_000
    assert ("seqs=1024,tokens=8192", 8000) not in out


def test_lowest_repeats_keeps_one_point_per_setting():
    points = [
        point("a|r0", 2000, 46_200, repeat=0),
        point("a|r1", 2000, 45_800, repeat=1),
        point("a|r2", 2000, 10_000, repeat=2, valid=False),
        point("b|r0", 500, 30_000, repeat=0),
    ]
    assert sorted(p.key for p in lowest_repeats(points)) == ["a|r1", "b|r0"]
