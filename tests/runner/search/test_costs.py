"""The search's cost model: an engine start from this run's starts or the node's prior, never
invented, and a point from the measured wall time at its level or the nearest one, scaled."""

from __future__ import annotations

import pytest

from runner.schema.plan import LoadSpec
from runner.search.costs import Costs, expected_s


def closed(concurrency: int, num_requests: int = 64) -> LoadSpec:
    return LoadSpec(shape="concurrency", concurrency=concurrency, num_requests=num_requests)


LADDER = [closed(1), closed(2), closed(4), closed(8), closed(16)]


def test_an_engine_start_is_unknown_with_no_prior_and_none_measured():
    assert Costs(LADDER).start_s() is None


def test_the_prior_stands_until_this_run_measures_a_start():
    costs = Costs(LADDER, start_prior_s=300.0)
    assert costs.start_s() == 300.0 and costs.measured_start_s() is None

    for seconds in (40.0, 100.0, 45.0):
        costs.started(seconds)
    assert costs.start_s() == 45.0, "the median of this run's starts, not the prior"


def test_levels_cost_the_same_until_a_point_is_measured():
    assert Costs(LADDER).point_s(0) is None


def test_a_measured_level_costs_the_mean_of_its_points_across_configs():
    costs = Costs(LADDER)
    costs.measured(4, 10.0)
    costs.measured(4, 14.0)
    assert costs.point_s(4) == 12.0


def test_an_unmeasured_level_scales_the_nearest_measured_ones_wall_by_their_schedules():
    costs = Costs(LADDER)
    costs.measured(4, 10.0)  # 16 in flight x 64 requests: 4 rounds
    assert costs.point_s(3) == pytest.approx(20.0)  # 8 in flight: 8 rounds
    assert costs.point_s(0) == pytest.approx(160.0)  # 1 in flight: 64 rounds

    costs.measured(1, 50.0)
    assert costs.point_s(0) == pytest.approx(100.0), "level 1 is nearer than level 4"


def test_an_open_loop_is_scaled_by_its_arrival_schedule():
    rates = [LoadSpec(shape="rate", rate=r, num_requests=100) for r in (1.0, 4.0)]
    assert expected_s(rates[0]) == 100.0
    costs = Costs(rates)
    costs.measured(1, 30.0)
    assert costs.point_s(0) == pytest.approx(120.0)


def test_levels_of_different_shapes_are_not_scaled_against_each_other():
    mixed = [LoadSpec(shape="rate", rate=1.0, num_requests=100), closed(8)]
    costs = Costs(mixed)
    costs.measured(1, 30.0)
    assert costs.point_s(0) == 30.0
