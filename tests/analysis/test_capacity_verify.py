"""A capacity plan's check against the engine: the plan it writes for the chosen config, and the
verdict on the draws that plan measured."""

from __future__ import annotations

import math
from datetime import date

import pytest

from analysis import capacity_words as words
from analysis.capacity_plan import plan_capacity
from analysis.capacity_types import ConfigPlan, Demand, PlanInputs
from analysis.capacity_verify import (
    Check,
    check_points,
    promise_check,
    speed_check,
    verify_plan,
)
from analysis.convert import from_point_result
from analysis.sentences import Sentence
from analysis.types import PointFigures
from runner.convergence import pooled_log_sd
from runner.schema.engine_config import EngineConfig
from runner.schema.plan import LoadSpec, SweepPlan, WorkloadSpec
from tests import factories
from tests.analysis.test_capacity_cli import REQUESTS, rate_point, sweep_plan
from tests.analysis.test_capacity_plan import level


def test_a_trace_demand_is_checked_with_the_trace_replayed_at_the_share():
    source = sweep_plan().model_copy(update={
        "workload": WorkloadSpec(kind="trace", dataset_path="t.csv"),
        "loads": [LoadSpec(shape="trace", num_requests=REQUESTS)]})
    points = [from_point_result(rate_point(64, 16.0, 1800.0))]
    plan = plan_capacity(points, PlanInputs(demand=Demand(kind="rate", rate=8.0)),
                         today=date.today())
    check = verify_plan(source, plan.configs[0], [8.0], trace_rate=2.0)
    assert (check.loads[0].shape, check.loads[0].speed) == ("trace", 4.0)


def test_a_check_draw_that_failed_requests_is_a_miss():
    failed = factories.metrics(duration=8.5, completed=99, failed=1, p95_ttft_ms=100.0)
    point = factories.point_result(engine_config=EngineConfig(max_num_seqs=64),
                                   load=LoadSpec(shape="rate", rate=13.0, num_requests=100),
                                   metrics=failed)
    (found,) = check_points([from_point_result(point)], {"p95_ttft_ms": 2000.0})
    assert not found.held and found.invalid_draws == 1
    assert "failed or came back short" in str(found.sentence)


def tpot_level(rate: float, *tpots: float, p95_ttft_ms: float = 1000.0) -> list[PointFigures]:
    """Draws of one max_num_seqs 4 rate level with these median TPOTs (ms)."""
    return [level(4, rate, p95_ttft_ms, repeat=r, median_tpot_ms=tpot)
            for r, tpot in enumerate(tpots)]


# The plan read 2 and 4 requests/s twice each; p95 TTFT 1 s meets 2 s by more than its scatter,
# so the capacity is 4 requests/s.
MEASURED = [*tpot_level(2.0, 18.0, 18.5), *tpot_level(4.0, 20.0, 21.0),
            *tpot_level(8.0, 25.0, p95_ttft_ms=5000.0)]


def planned() -> ConfigPlan:
    plan = plan_capacity(MEASURED, PlanInputs(demand=Demand(kind="rate", rate=4.0),
                                              slos={"p95_ttft_ms": 2000.0}), today=date.today())
    assert plan.configs[0].capacity.rate == 4.0
    return plan.configs[0]


def two_rate_levels(demand_rate: float) -> tuple[SweepPlan, ConfigPlan]:
    """A max_num_seqs 4 run of 2 and 4 requests/s, 100 requests each, and its plan for a demand:
    4 requests/s meets p95 TTFT 2 s, so the capacity is 4."""
    source = sweep_plan().model_copy(update={
        "engine_configs": [EngineConfig(max_num_seqs=4)],
        "loads": [LoadSpec(shape="rate", rate=r, num_requests=REQUESTS) for r in (2.0, 4.0)]})
    points = [from_point_result(rate_point(4, 2.0, 300.0)),
              from_point_result(rate_point(4, 4.0, 900.0))]
    config = plan_capacity(points, PlanInputs(demand=Demand(kind="rate", rate=demand_rate),
                                              slos={"p95_ttft_ms": 2000.0}),
                           today=date.today()).configs[0]
    assert config.capacity is not None and config.capacity.rate == 4.0
    return source, config


def test_the_check_loads_the_capacity_level_again_unless_a_rate_already_is_it():
    source, config = two_rate_levels(3.0)
    check = verify_plan(source, config, [3.0])
    assert [(load.rate, load.num_requests) for load in check.loads] == [
        (3.0, REQUESTS), (4.0, REQUESTS)]
    assert [load.rate for load in verify_plan(source, config, [4.0]).loads] == [4.0]


def test_a_faster_check_rate_sends_for_as_long_as_the_capacity_level_and_a_slower_no_fewer():
    source, config = two_rate_levels(4.0)
    # 100 requests at 4/s are 25 s of arrivals: 1.3x sends 130 in those 25 s, 5.0/s 125, and
    # 3.1/s keeps the 100.
    check = verify_plan(source, config, [3.1, 4.0, 5.2, 5.0])
    assert [(load.rate, load.num_requests) for load in check.loads] == [
        (3.1, REQUESTS), (4.0, REQUESTS), (5.2, 130), (5.0, 125)]


def test_a_check_whose_engine_ran_slower_per_token_says_so():
    checked = [*tpot_level(4.0, 30.0, 31.0, 29.0)]
    found = speed_check(MEASURED, checked, planned())
    then, now = math.sqrt(20.0 * 21.0), (30.0 * 31.0 * 29.0) ** (1 / 3)
    # The scatter pools every setting drawn twice: 2 and 4 requests/s then, 4 now.
    sd, _ = pooled_log_sd([[18.0, 18.5], [20.0, 21.0], [30.0, 31.0, 29.0]])
    assert found.change_pct == pytest.approx((now / then - 1) * 100)
    assert found.band_pct == pytest.approx(math.expm1(1.96 * sd * math.sqrt(1 / 2 + 1 / 3)) * 100)
    assert str(found.sentence) == (
        "The capacity level (rate 4.0/s x 100), loaded again in this check, ran each output "
        "token 46.3% slower than when the plan measured it (median TPOT 30.0 ms against 20.5 ms), "
        f"beyond the draws' scatter (+/-{found.band_pct:.1f}%): a target missed here may be the "
        "host's speed, not the plan's.")


def test_a_check_at_the_plans_speed_and_one_faster_are_told_apart():
    same = speed_check(MEASURED, tpot_level(4.0, 21.0, 20.5), planned())
    assert same.sentence.template == words.VERIFY_SPEED_SAME
    faster = speed_check(MEASURED, tpot_level(4.0, 14.0, 14.5), planned())
    assert faster.change_pct < 0 and faster.sentence.template == words.VERIFY_SPEED_FASTER
    assert "token 30.5% faster" in str(faster.sentence)


def test_with_no_setting_drawn_twice_the_speed_is_said_and_not_judged():
    once = [*tpot_level(2.0, 18.0), *tpot_level(4.0, 20.0)]
    config = plan_capacity(once, PlanInputs(demand=Demand(kind="rate", rate=4.0),
                                            slos={"p95_ttft_ms": 2000.0}),
                           today=date.today()).configs[0]
    found = speed_check(once, tpot_level(4.0, 30.0), config)
    assert found.band_pct is None and found.sentence.template == words.VERIFY_SPEED_UNJUDGED
    # A check without the capacity level (one made before it was loaded again) says nothing.
    assert speed_check(once, tpot_level(3.0, 30.0), config) is None


def test_the_promise_is_judged_on_the_share_not_on_the_capacity_level_loaded_again():
    def check(label: str, rate: float, held: bool) -> Check:
        return Check(load_label=label, rate=rate, draws=2, held_draws=2 if held else 0,
                     invalid_draws=0, values={}, held=held, sentence=Sentence("", {}))

    config = planned()  # capacity and share both 4 requests/s
    again = check("rate 4.0/s x 100", 4.0, held=False)
    share = check("rate 4.001/s x 100", 4.001, held=True)
    assert promise_check([again, share], config) is share
    assert promise_check([again], config) is again
