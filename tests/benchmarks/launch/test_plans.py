"""A launch request (benchmarks.launch.plans.LaunchRequest) becomes its plan field by field, and the
launch form builds its plan from the one request it checked."""

from __future__ import annotations

import pytest

from benchmarks.launch import plans
from dashboard.forms_launch import LaunchForm
from runner.schema.engine_config import EngineConfig
from runner.schema.plan import StabilitySpec
from tests.rows import launch_form_data, make_checkpoint, make_node, make_runtime, make_workload

pytestmark = pytest.mark.django_db


def test_a_launch_request_becomes_its_plan_field_by_field():
    request = plans.LaunchRequest(
        name="request", node=make_node(), runtime=make_runtime(), checkpoint=make_checkpoint(),
        workload=make_workload(), engine_configs=[EngineConfig(max_num_seqs=7)],
        load_levels=[11, 13], repeats=3, replicas=1, goodput={"ttft": 50.0},
        stability=StabilitySpec(control_point=True, max_repeats=5), quality_path="set.jsonl")
    plan = plans.build_plan(request)
    assert (plan.name, plan.repeats, plan.replicas) == ("request", 3, 1)
    assert [c.max_num_seqs for c in plan.engine_configs] == [7]
    assert [load.num_requests for load in plan.loads] == [11, 13]
    assert plan.goodput == {"ttft": 50.0}
    assert plan.stability == request.stability and plan.search is None
    assert plan.quality is not None and plan.quality.path == "set.jsonl"
    assert plans.build_plan(plans.LaunchRequest(**{
        **request.__dict__, "quality_path": None})).quality is None


def test_the_launch_form_builds_its_plan_from_its_one_checked_request():
    form = LaunchForm(launch_form_data(make_node(), repeats="2", load_levels="1000, 2000",
                                       name="from the form"))
    assert form.is_valid(), form.errors
    request = form.cleaned_data["launch"]
    assert isinstance(request, plans.LaunchRequest)
    assert (request.name, request.repeats, request.load_levels) == (
        "from the form", 2, [1000.0, 2000.0])
    assert plans.build_plan(request) == form.cleaned_data["plan"]
