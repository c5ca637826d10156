"""The run page beside each point's throughput: % of memory-bandwidth and compute peak per GPU,
the prefix-cache hit rate, and the queue evidence of vLLM 0.32 beside the verdicts."""

from __future__ import annotations

import re
from typing import Any

import pytest

from benchmarks.models import Benchmark
from judgement.engine_work import engine_work
from runner.schema.engine_config import Checkpoint
from runner.schema.result import EngineInfo, Hardware, Provenance
from runner.schema.samples import QueueSummary
from tests.rows import make_benchmark

from .helpers import store

pytestmark = pytest.mark.django_db


def gpu_provenance(gpu_name: str, precision: str = "bf16") -> Provenance:
    return Provenance(
        hardware=Hardware(host="gpu-host", gpu_name=gpu_name, gpu_count=1),
        engine=EngineInfo(launch_style="serve", version="0.32.0"),
        checkpoint=Checkpoint(model="org/model", precision=precision),
        client_version="headroom-runner 0.1.0",
        started_at="2026-11-30T15:00:00Z",
    )


# A pinned scheduler cap: 256 of 256 running while 3,000 wait.
PINNED: dict[str, Any] = dict(samples=20, mean_running=256.0, mean_waiting=3000.0, peak_running=256.0,
              peak_waiting=3500.0, peak_kv_usage=0.5, preemptions=0.0,
              running_while_waiting_s={"256": 10.0})


def stored_run(bytes_per_s: float, *, gpu_name: str = "NVIDIA H200") -> Benchmark:
    benchmark = make_benchmark(state="running", points_total=1)
    queue = QueueSummary(
        **PINNED, mean_waiting_capacity=2900.0, mean_waiting_deferred=100.0,
        prefix_cache_queries=8000.0, prefix_cache_hits=6000.0,
        read_bytes_per_gpu_s=bytes_per_s, write_bytes_per_gpu_s=0.0,
        flops_per_gpu_s=98.95e12, queue_time_requests=1000.0, mean_queue_time_s=3.5,
        queue_time_p50_s=5.0, queue_time_p90_s=10.0, queue_time_p99_s=None)
    store(benchmark, max_num_seqs=256, num_requests=4000, throughput=2600.0,
          median_e2el_ms=8000.0, update={"queue": queue, "provenance": gpu_provenance(gpu_name)})
    Benchmark.objects.filter(pk=benchmark.pk).update(state="succeeded")
    return benchmark


def page(client, benchmark: Benchmark) -> tuple[dict, str]:
    response = client.get(f"/runs/{benchmark.code}/")
    assert response.status_code == 200
    (row,) = response.context["judgement"].rows
    return row, response.content.decode()


def test_the_shares_of_peak_stand_beside_the_throughput_with_their_source(owner_client):
    row, html = page(owner_client, stored_run(4.32e12))
    work = row.engine_work
    # 4.32 of the H200 SXM's 4.8 TB/s; 98.95 of 989.5 dense BF16 TFLOPS.
    assert work.bandwidth.pct == pytest.approx(90.0)
    assert work.compute.pct == pytest.approx(10.0)
    cell = re.search(r'<td class="num peak-bandwidth"><span title="([^"]+)">90.0%</span>', html)
    assert cell, "the bandwidth share is in its cell"
    assert "4.32 TB/s per GPU of the H200 SXM&#x27;s 4.8 TB/s" in cell.group(1)
    assert "NVIDIA H200 Tensor Core GPU datasheet" in cell.group(1)
    assert '<td class="num peak-compute"><span title="' in html and ">10.0%</span>" in html
    assert '<td class="num prefix-cache">75.0%</td>' in html  # 6,000 of 8,000 tokens


def test_the_verdict_at_90_percent_of_bandwidth_says_scheduler_tuning_cannot_add_much(
    owner_client
):
    row, _html = page(owner_client, stored_run(4.32e12))
    assert row.verdict.kind == "scheduler_cap"
    assert row.verdict.sentence.endswith(
        "at 90.0% of memory-bandwidth peak per GPU: further scheduler tuning cannot add much; "
        "a smaller KV dtype or more GPUs can")


def test_below_the_threshold_the_verdict_does_not_say_it(owner_client):
    row, _html = page(owner_client, stored_run(3.0e12))  # 62.5%
    assert "memory-bandwidth" not in row.verdict.sentence


def test_queue_evidence_beside_the_verdict_has_waiting_by_reason_and_queue_times(owner_client):
    row, html = page(owner_client, stored_run(3.0e12))
    items = {e.label: (e.value, e.kind) for e in row.evidence}
    assert items["waiting for capacity"] == (2900.0, "number")
    assert items["waiting deferred"] == (100.0, "number")
    assert items["mean queue time"] == (3.5, "seconds")
    assert items["p50 queue time"] == (5.0, "at_most_seconds")
    assert "p99 queue time" not in items  # above the highest bound: no number is shown
    assert items["prefix-cache hits"] == (75.0, "percent")
    assert items["memory-bandwidth peak used"] == (pytest.approx(62.5), "percent")
    assert "p50 queue time &le; 5 s" in html and "mean queue time 3.50 s" in html


def test_an_unknown_gpu_or_cpu_engine_says_there_is_no_peak_instead_of_a_number(owner_client):
    unknown = stored_run(4.32e12, gpu_name="NVIDIA H200 NVL")
    row, html = page(owner_client, unknown)
    assert row.engine_work.bandwidth.pct is None
    assert row.engine_work.bandwidth.short == "no peak"
    # The engine's own estimate stays visible beside the reason there is no share.
    assert ('<small class="achieved">4.32 TB/s per GPU</small><br><span class="hint" '
            'title="no peak: NVIDIA H200 NVL is not in the peak table') in html
    assert "Points without a share: no peak: NVIDIA H200 NVL is not in the peak table" in html

    cpu = make_benchmark(node=unknown.node, state="running", points_total=1)
    store(cpu, max_num_seqs=4, num_requests=16, throughput=400.0, median_e2el_ms=900.0)
    Benchmark.objects.filter(pk=cpu.pk).update(state="succeeded")
    row, html = page(owner_client, cpu)
    # The factory's CPU point has no work estimates: "not reported" comes first.
    assert row.engine_work.bandwidth.short == "not reported"
    # Two columns empty in every row fold into the note below the table.
    assert 'class="num peak-bandwidth"' not in html and "Compute peak <small>" not in html
    assert "Memory-bandwidth and compute peak (no column in the table: no point has a share" in html


def test_a_cpu_engines_own_estimates_never_read_per_gpu(owner_client):
    benchmark = make_benchmark(state="running", points_total=1)
    queue = QueueSummary(**PINNED, read_bytes_per_gpu_s=3.2e10, flops_per_gpu_s=5e10)
    provenance = gpu_provenance("").model_copy(update={
        "hardware": Hardware(host="cpu-host"),
        "engine": EngineInfo(launch_style="cpu", version="0.32.0")})
    store(benchmark, max_num_seqs=4, num_requests=16, throughput=400.0, median_e2el_ms=900.0,
          update={"queue": queue, "provenance": provenance})
    Benchmark.objects.filter(pk=benchmark.pk).update(state="succeeded")
    row, html = page(owner_client, benchmark)
    assert row.engine_work.bandwidth.achieved == "32 GB/s on the CPU"
    assert not row.engine_work.has_gpu_figure
    assert "per GPU" not in re.sub(r"<script.*?</script>", "", html, flags=re.S)
    assert 'class="num peak-bandwidth"' not in html


def test_engine_work_of_an_unreadable_point_is_none():
    assert engine_work(None) is None
