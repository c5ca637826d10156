"""The launch form's adaptive sweep: the plan records the search, and a bad one gets an error on
its field."""

from __future__ import annotations

import uuid

import pytest

from benchmarks.models import Benchmark
from dashboard.plan_files import plan_on_form
from runner.schema.plan import SweepPlan
from tests.rows import launch_form_data, make_node

pytestmark = pytest.mark.django_db

SWEEP = {"max_num_seqs": "64, 128, 256", "max_num_batched_tokens": "8192",
         "load_levels": "250 500 1000 2000", "repeats": "2"}


@pytest.fixture
def node():
    return make_node(f"test-{uuid.uuid4().hex[:8]}", gpu_count=2)


def test_an_slo_search_goes_into_the_plan_with_its_settings(owner_client, node, launches):
    data = launch_form_data(node, **SWEEP, search="slo", search_tolerance_pct="3",
                            search_point_budget="10", search_time_budget_s="5400",
                            search_limits="p99_ttft_ms:500")
    response = owner_client.post("/runs/new/", data)
    assert response.status_code == 302, response.content.decode()[-3000:]

    benchmark = Benchmark.objects.get()
    assert benchmark.plan["search"] == {
        "objective": "slo", "tolerance_pct": 3.0, "point_budget": 10, "time_budget_s": 5400.0,
        "method": "bracket-value-per-cost-walk/2", "limits": {"p99_ttft_ms": 500.0},
        "throughput_gain_pct": 2.0, "latency_growth_pct": 20.0,
    }
    assert benchmark.points_total == 10  # at most its budget, not the grid's 24
    assert benchmark.estimate_basis.startswith(
        "An adaptive sweep with a time budget: about its 1 h 30 min, less than the full grid's")
    assert benchmark.estimated_wall_s == 5400.0
    # Run again: the form comes back with the same search.
    on_form = plan_on_form(SweepPlan.model_validate(benchmark.plan))
    assert (on_form.initial["search"], on_form.initial["search_limits"]) == (
        "slo", "p99_ttft_ms:500")
    assert on_form.initial["search_time_budget_s"] == 5400.0
    assert on_form.left_out == []


def test_a_search_stored_with_the_halving_method_says_the_form_would_change_it(
    owner_client, node, launches
):
    data = launch_form_data(node, **SWEEP, search="knee")
    assert owner_client.post("/runs/new/", data).status_code == 302
    plan = SweepPlan.model_validate(Benchmark.objects.get().plan)
    assert plan.search is not None
    halving = plan.search.model_copy(update={"method": "bracket-bisect-walk/1"})

    left_out = plan_on_form(plan.model_copy(update={"search": halving})).left_out
    assert any(item.startswith("search.method: not on the form") for item in left_out)


def test_a_grid_stays_a_grid(owner_client, node, launches):
    assert owner_client.post("/runs/new/", launch_form_data(node, **SWEEP)).status_code == 302
    benchmark = Benchmark.objects.get()
    assert benchmark.plan["search"] is None
    assert "adaptive" not in benchmark.estimate_basis


@pytest.mark.parametrize(
    "overrides, field, message",
    [
        ({"search": "slo"}, "search_limits", "An SLO search needs at least one limit"),
        ({"search": "knee", "search_limits": "p99_ttft_ms:500"}, "search_limits",
         "Latency limits are for the SLO search"),
        ({"search": "slo", "search_limits": "p42_ttft_ms:500"}, "search_limits",
         "'p42_ttft_ms' is not a latency the search can limit"),
        ({"search": "slo", "search_limits": "p99_ttft_ms:-5"}, "search_limits",
         "must be a number of ms > 0"),
        ({"search": "slo", "search_limits": "p99_ttft_ms=5"}, "search_limits",
         "'p99_ttft_ms=5' is not a latency"),
        ({"search_point_budget": "10"}, "search_point_budget", "This is for an adaptive sweep"),
        ({"search_time_budget_s": "600"}, "search_time_budget_s",
         "This is for an adaptive sweep"),
        ({"search": "knee", "search_time_budget_s": "0"}, "search_time_budget_s",
         "greater than or equal to 1"),
        ({"search": "knee", "search_tolerance_pct": "0"}, "search_tolerance_pct",
         "greater than or equal to 0.1"),
    ],
)
def test_a_bad_search_gets_an_error_on_its_field_and_creates_nothing(
    owner_client, node, overrides, field, message
):
    response = owner_client.post("/runs/new/", launch_form_data(node, **SWEEP, **overrides))
    assert response.status_code == 400
    assert message in " ".join(response.context["form"].errors.get(field, []))
    assert not Benchmark.objects.exists()
