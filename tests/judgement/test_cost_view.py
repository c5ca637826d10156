"""Cost per million output tokens on the run page, and what a tuning is worth on the comparison
page, from stored points on a priced node (hand-computed figures in each test)."""

from __future__ import annotations

import datetime
import html
from decimal import Decimal
from typing import Any

import pytest

from analysis import cost
from benchmarks.models import Benchmark, Comparison, Node, Point
from runner.schema.engine_config import Checkpoint
from runner.schema.result import EngineInfo, Hardware, Provenance
from tests.rows import make_benchmark, make_node

from .helpers import store, sweep

pytestmark = pytest.mark.django_db

AS_OF = datetime.date(2026, 11, 1)


def priced_node(queue: str = "gpu-a", amount: str = "2.50", currency: str = "USD",
                **fields: Any) -> Node:
    """An 8-GPU node (the factory's) priced per GPU-hour as of AS_OF."""
    return make_node(queue, gpu_hour_price=Decimal(amount), price_currency=currency,
                     price_as_of=AS_OF, **fields)


def gpu_provenance() -> Provenance:
    """vLLM served on a host with one H200 (not the CPU engine)."""
    return Provenance(
        hardware=Hardware(host="gpu-a.lab", gpu_name="NVIDIA H200", gpu_count=1),
        engine=EngineInfo(launch_style="serve", version="0.32.0"),
        checkpoint=Checkpoint(model="/models/tiny"),
        client_version="headroom-runner 0.1.0",
        started_at="2026-11-30T15:00:00Z",
    )


def gpu_point(benchmark: Benchmark, seqs: int, throughput: float, repeat: int = 0) -> Point:
    return store(benchmark, max_num_seqs=seqs, num_requests=2000, throughput=throughput,
                 median_e2el_ms=4000.0, repeat=repeat, update={"provenance": gpu_provenance()})


def gpu_run(node: Node) -> Benchmark:
    return make_benchmark(node=node, state="succeeded", points_total=20)


def compare_page(client: Any, baseline: Point, candidate: Point) -> Any:
    comparison = Comparison.objects.create(name="tuning", baseline_point=baseline,
                                           candidate_point=candidate)
    return client.get(f"/comparisons/{comparison.code}/")


def page_text(response: Any) -> str:
    return html.unescape(response.content.decode())


# --- run page ----------------------------------------------------------------------------------


def test_the_run_page_shows_each_points_cost_with_the_price_and_its_date(owner_client):
    benchmark = gpu_run(priced_node())
    slow, fast = gpu_point(benchmark, 256, 18_000.0), gpu_point(benchmark, 512, 42_000.0)
    response = owner_client.get(f"/runs/{benchmark.code}/")
    rows = {r.point.key: r for r in response.context["judgement"].rows}
    # 2.50 USD x 1 GPU / (18,000 x 3600) x 1e6 = 0.038580; at 42,000: 0.016534.
    assert rows[slow.key].cost.per_million == pytest.approx(2.5e6 / (18_000 * 3600))
    assert rows[slow.key].cost.text == "0.0386 USD"
    assert rows[fast.key].cost.text == "0.0165 USD"
    body = page_text(response)
    assert ">0.0386 USD</span>" in body and ">0.0165 USD</span>" in body
    assert "at 2.50 USD per GPU per hour on gpu-a, as of 2026-11-01." in body


def test_a_cpu_sweep_has_no_cost_and_says_why_once(owner_client):
    benchmark = sweep(node=priced_node())
    response = owner_client.get(f"/runs/{benchmark.code}/")
    costs = [r.cost for r in response.context["judgement"].rows]
    assert costs and all(c.per_million is None for c in costs)
    assert {c.reason for c in costs} == {cost.CPU_ENGINE}
    body = page_text(response)
    assert body.count("Points without a figure: " + cost.CPU_ENGINE + ".") == 1


def test_an_unpriced_node_names_itself_as_the_reason(owner_client):
    benchmark = gpu_run(make_node("gpu-z"))
    gpu_point(benchmark, 256, 18_000.0)
    body = page_text(owner_client.get(f"/runs/{benchmark.code}/"))
    assert "node gpu-z has no GPU-hour price" in body


def test_an_invalid_point_gets_no_cost(owner_client):
    benchmark = gpu_run(priced_node())
    broken = store(benchmark, max_num_seqs=256, num_requests=2000, throughput=18_000.0,
                   median_e2el_ms=4000.0, failed=5, update={"provenance": gpu_provenance()})
    assert broken.valid is False
    rows = owner_client.get(f"/runs/{benchmark.code}/").context["judgement"].rows
    assert rows[0].cost.reason == cost.INVALID_RUN


# --- comparison page ---------------------------------------------------------------------------


def test_the_comparison_states_what_the_tuning_is_worth_on_the_8_gpu_node(owner_client):
    benchmark = gpu_run(priced_node())
    baseline, candidate = gpu_point(benchmark, 256, 18_000.0), gpu_point(benchmark, 512, 42_000.0)
    response = compare_page(owner_client, baseline, candidate)
    worth = response.context["worth"]
    # 8 x (42,000 / 18,000 - 1) = 10.67 GPUs.
    assert worth.gpu_equivalent == pytest.approx(8 * (42 / 18 - 1))
    body = page_text(response)
    assert ("The tuned setting serves this queue at 0.0165 USD per million output tokens "
            "instead of 0.0386 USD; on this 8-GPU node that is the capacity of 10.7 additional "
            "GPUs.") in body
    assert "GPU-hour price: 2.50 USD, as of 2026-11-01." in body


def test_the_worth_rests_on_each_settings_capacity_and_says_so(owner_client):
    benchmark = gpu_run(priced_node())
    baseline = gpu_point(benchmark, 256, 18_000.0)
    candidate = gpu_point(benchmark, 512, 42_000.0)
    gpu_point(benchmark, 512, 40_500.0, repeat=1)  # the lower repeat is the capacity
    body = page_text(compare_page(owner_client, baseline, candidate))
    # 2.5 / (40,500 x 3600) x 1e6 = 0.017147 -> 0.0171 USD; 8 x (40,500 / 18,000 - 1) = 10.0.
    assert ("at 0.0171 USD per million output tokens instead of 0.0386 USD; on this 8-GPU "
            "node that is the capacity of 10.0 additional GPUs.") in body
    assert ("Each side's capacity is the lowest of its setting's valid repeats (1 for the "
            "baseline, 2 for the candidate).") in body


def test_two_currencies_on_the_two_sides_give_no_money_figure(owner_client):
    baseline = gpu_point(gpu_run(priced_node()), 256, 18_000.0)
    candidate = gpu_point(gpu_run(priced_node("gpu-b", "2.30", "EUR")), 512, 42_000.0)
    body = page_text(compare_page(owner_client, baseline, candidate))
    assert ("No money figure: the two sides are priced in different currencies (USD and "
            "EUR).") in body
    assert "per million output tokens instead of" not in body
    assert "On this 8-GPU node the tuned setting has the capacity of 10.7 additional GPUs." in body


def test_measured_energy_stands_beside_the_money(owner_client):
    benchmark = gpu_run(priced_node())
    baseline, candidate = gpu_point(benchmark, 256, 18_000.0), gpu_point(benchmark, 512, 42_000.0)
    Point.objects.filter(pk=baseline.pk).update(telemetry={"joules_per_output_token": 0.8})
    Point.objects.filter(pk=candidate.pk).update(telemetry={"joules_per_output_token": 0.4})
    body = page_text(compare_page(owner_client, baseline, candidate))
    # 1 / 0.4 = 2.5 and 1 / 0.8 = 1.25 output tokens per joule.
    assert "Energy: 2.50 output tokens per joule instead of 1.25." in body
