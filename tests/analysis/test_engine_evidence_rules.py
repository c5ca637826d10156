"""What the judgement layer makes of vLLM 0.32's engine evidence: the memory-bound clause of a
verdict at its threshold, the evidence beside a verdict, prefix caching in a comparison, and a
stored point's distance to its GPU's peaks."""

from __future__ import annotations

import pytest

from analysis.compare import compare
from analysis.convert import from_point_result, hardware_use_of
from analysis.hardware import hardware_use
from analysis.types import Measured
from analysis.verdicts import MEMORY_BOUND_PCT, verdict
from runner.schema.engine_config import Checkpoint, EngineConfig, LaunchStyle
from runner.schema.plan import LoadSpec, WorkloadSpec
from runner.schema.result import EngineInfo, Hardware, Metrics, PointResult, Provenance
from runner.schema.samples import QueueSummary
from tests.analysis.helpers import facts, point
from tests.analysis.test_verdicts import PINNED, engine

H200 = dict(gpu_name="NVIDIA H200", precision="bf16", cpu_engine=False, flops_per_s=None)
PEAK_BYTES = 4.8e12  # the H200 SXM's 4.8 TB/s


def at_bandwidth(pct: float, **kwargs):
    """A pinned scheduler-cap point whose GPU moved pct% of its bandwidth peak."""
    hw = hardware_use(bytes_per_s=PEAK_BYTES * pct / 100, **H200)
    return engine(hardware=hw, **{**PINNED, **kwargs})


CLAUSE = "further scheduler tuning cannot add much; a smaller KV dtype or more GPUs can"


def test_at_the_threshold_the_verdict_says_scheduler_tuning_cannot_add_much():
    assert MEMORY_BOUND_PCT == 80.0
    v = verdict(at_bandwidth(80.0))
    assert v.kind == "scheduler_cap"  # the binding limit is still named first
    assert v.evidence.memory_bound is True
    assert v.evidence.memory_bandwidth_pct == pytest.approx(80.0)
    assert v.sentence.endswith(f"; at 80.0% of memory-bandwidth peak per GPU: {CLAUSE}")


def test_just_below_the_threshold_the_verdict_says_nothing_of_bandwidth():
    v = verdict(at_bandwidth(79.9))
    assert v.evidence.memory_bound is False
    assert "memory-bandwidth" not in v.sentence


def test_a_node_verdict_says_whose_bandwidth_share_it_is():
    v = verdict(at_bandwidth(88.0, replicas=8, gpu_count=8, mean_running=8 * 240.0,
                            mean_waiting=8 * 1500.0))
    assert "at 88.0% of memory-bandwidth peak per GPU (mean of the 8 replicas)" in v.sentence


def test_a_client_bound_point_never_gets_the_bandwidth_clause():
    # Its timings may be wrong: nothing is concluded about the engine beside it.
    v = verdict(at_bandwidth(95.0, client_saturated=True))
    assert v.kind == "client_bound"
    assert v.evidence.memory_bound is False and "memory-bandwidth" not in v.sentence


def test_no_peak_means_no_clause_however_busy_the_engine():
    hw = hardware_use(bytes_per_s=10e12, gpu_name="NVIDIA H200 NVL", precision="bf16",
                      cpu_engine=False, flops_per_s=None)
    v = verdict(engine(hardware=hw, **PINNED))
    assert v.evidence.memory_bandwidth_pct is None and v.evidence.memory_bound is False


def test_the_verdict_evidence_carries_waiting_by_reason_queue_times_and_prefix_hits():
    v = verdict(engine(mean_waiting_capacity=1_400.0, mean_waiting_deferred=100.0,
                       mean_queue_time_s=4.2, queue_time_p50_s=5.0, queue_time_p90_s=10.0,
                       queue_time_p99_s=15.0, prefix_cache_hit_rate=0.9, **PINNED))
    ev = v.evidence
    assert (ev.mean_waiting_capacity, ev.mean_waiting_deferred) == (1_400.0, 100.0)
    assert (ev.queue_time_p50_s, ev.queue_time_p90_s, ev.queue_time_p99_s) == (
        5.0, 10.0, 15.0)
    assert (ev.mean_queue_time_s, ev.prefix_cache_hit_rate) == (4.2, 0.9)


# --- prefix caching in a comparison ----------------------------------------------------------


def side(key: str, prefix_caching: bool | None, hit_rate: float | None) -> Measured:
    figures = point(key, 2000, 18_000, median_e2el_ms=16_000.0, prefix_cache_hit_rate=hit_rate,
                    other_settings=(("enable_prefix_caching", prefix_caching),))
    return Measured(facts=facts(), figures=figures)


def test_prefix_caching_on_against_off_is_named_by_the_comparison_guard():
    result = compare(side("base", False, None), side("cand", True, 0.971))
    (difference,) = result.engine_differences
    assert difference == (
        "prefix caching differs (baseline off, no lookups reported; candidate on, 97.1% of "
        "prompt tokens from the cache): the engines did not do the same prompt work, so the "
        "change is not the scheduler's alone")
    assert result.sentence.endswith(difference)
    # Named, not a fixed factor: every factor of the measurement still matches.
    assert result.controlled is True
    assert (result.baseline_prefix_cache_hit_rate, result.candidate_prefix_cache_hit_rate) == (
        None, 0.971)


def test_the_engine_default_against_an_explicit_setting_is_named_too():
    # What the default was is not recorded, so the two cannot be called the same.
    result = compare(side("base", None, 0.5), side("cand", False, None))
    assert result.engine_differences and "baseline the engine default" in result.sentence


def test_the_same_prefix_caching_setting_is_not_mentioned():
    result = compare(side("base", True, 0.2), side("cand", True, 0.9))
    assert result.engine_differences == () and "prefix caching" not in result.sentence


# --- a stored point's distance to its GPU's peaks --------------------------------------------


def point_result(launch_style: LaunchStyle, gpu_name: str | None, **queue) -> PointResult:
    provenance = Provenance(
        hardware=Hardware(host="h", gpu_name=gpu_name, gpu_count=1 if gpu_name else 0),
        engine=EngineInfo(launch_style=launch_style),
        checkpoint=Checkpoint(model="org/m", precision="FP8"),
        client_version="0", started_at="2025-01-01T00:00:00Z",
    )
    metrics = Metrics(duration=10.0, completed=1, failed=0, total_input_tokens=1,
                             total_output_tokens=1, request_throughput=0.1, output_throughput=0.1,
                             total_token_throughput=0.2, short_responses=0, valid=True)
    return PointResult(
        key="k", engine_config=EngineConfig(), load=LoadSpec(num_requests=1),
        workload=WorkloadSpec(), metrics=metrics, provenance=provenance,
        queue=QueueSummary(**queue))


def test_a_stored_gpu_point_is_set_against_its_sku_at_its_checkpoint_precision():
    p = point_result("serve", "NVIDIA H100 80GB HBM3", read_bytes_per_gpu_s=2.0e12,
                     write_bytes_per_gpu_s=0.68e12, flops_per_gpu_s=197.9e12,
                     prefix_cache_queries=1000.0, prefix_cache_hits=250.0)
    figures = from_point_result(p)
    # (2.0 + 0.68) of 3.35 TB/s; 197.9 of 1,979 dense FP8 TFLOPS.
    assert figures.hardware.bandwidth_pct == pytest.approx(80.0)
    assert figures.hardware.compute_pct == pytest.approx(10.0)
    assert figures.prefix_cache_hit_rate == 0.25


def test_a_stored_cpu_engine_point_or_attached_server_has_no_peak():
    cpu = hardware_use_of(point_result("cpu", None, read_bytes_per_gpu_s=1e9))
    assert cpu.bandwidth_note.startswith("no peak: a CPU engine") and cpu.bytes_per_s == 1e9
    attached = hardware_use_of(point_result("attach", None, read_bytes_per_gpu_s=1e12))
    assert attached.bandwidth_note.startswith("no peak: an attached server")
    # A GPU host whose engine reported no estimates.
    quiet = hardware_use_of(point_result("docker", "NVIDIA H200"))
    assert quiet.bandwidth_note.startswith("not reported")
