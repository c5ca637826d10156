"""The run page's LoRA section: per adapter of a point whose workload spread its requests over
adapters, figures read from the stored requests."""

from __future__ import annotations

import pytest

from benchmarks.models import Benchmark
from runner.schema.plan import LoraShare, WorkloadSpec
from tests.rows import make_benchmark, make_requests

from .helpers import store

pytestmark = pytest.mark.django_db


def lora_run(adapters: list[str | None], weights: dict[str, float]) -> Benchmark:
    """One point of len(adapters) requests, request i naming adapters[i]; every request
    completes with 4 output tokens, TTFT 49.9 ms and E2EL 79.9 ms (tests.rows.make_requests:
    first chunk 50 ms and last 80 ms after the intended send, sent 0.1 ms after it)."""
    benchmark = make_benchmark(state="running", points_total=1)
    requests = [r.model_copy(update={"adapter": name})
                for r, name in zip(make_requests(len(adapters)), adapters, strict=True)]
    workload = WorkloadSpec(lora_split=[LoraShare(name=n, weight=w) for n, w in weights.items()]
                            ) if weights else WorkloadSpec()
    store(benchmark, max_num_seqs=8, num_requests=len(adapters), throughput=100.0,
          median_e2el_ms=80.0, update={"requests": requests, "workload": workload})
    Benchmark.objects.filter(pk=benchmark.pk).update(state="succeeded")
    return benchmark


def test_each_adapter_has_its_request_share_output_share_and_medians(owner_client):
    # 8 requests: 6 to alpha, 2 to beta (weights 3:1); 4 tokens each.
    benchmark = lora_run(["alpha", "beta", "alpha", "alpha", "beta", "alpha", "alpha", "alpha"],
                         {"alpha": 3, "beta": 1})
    response = owner_client.get(f"/runs/{benchmark.code}/")
    (section,) = response.context["judgement"].lora
    alpha, beta = (row.figures for row in section.rows)
    assert [row.weight for row in section.rows] == [3.0, 1.0]
    assert (alpha.requests, alpha.request_share, alpha.output_tokens) == (6, 0.75, 24)
    assert (beta.requests, beta.request_share, beta.output_share) == (2, 0.25, 0.25)
    assert alpha.median_ttft_ms == pytest.approx(49.9)
    assert alpha.median_e2el_ms == pytest.approx(79.9)
    duration = section.point.duration
    assert alpha.output_throughput == pytest.approx(24 / duration)
    html = response.content.decode()
    assert '<section id="lora-adapters" class="judgement">' in html
    assert '<tr class="lora-adapter"><td>alpha</td><td class="num">3</td>' in html
    assert "6 <small>(75.0%)</small>" in html and "2 <small>(25.0%)</small>" in html


def test_a_run_without_a_split_has_no_lora_section(owner_client):
    benchmark = lora_run([None, None], {})
    response = owner_client.get(f"/runs/{benchmark.code}/")
    assert response.context["judgement"].lora == []
    assert "lora-adapters" not in response.content.decode()
