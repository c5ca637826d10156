"""A capacity plan's check against the engine: the plan it writes for the chosen config, and the
verdict on the draws that plan measured."""

from __future__ import annotations

from datetime import date

from analysis.capacity_plan import plan_capacity
from analysis.capacity_types import Demand, PlanInputs
from analysis.capacity_verify import check_points, verify_plan
from analysis.convert import from_point_result
from runner.schema.engine_config import EngineConfig
from runner.schema.plan import LoadSpec, WorkloadSpec
from tests import factories
from tests.analysis.test_capacity_cli import REQUESTS, rate_point, sweep_plan


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
