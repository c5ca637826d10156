"""From a runner PointResult to the analysis inputs."""

from __future__ import annotations

import pytest

from analysis.convert import (
    from_point_result,
    replica_figures_from_point_result,
    run_facts_from_point_result,
)
from analysis.types import WorkloadShape
from runner.schema.engine_config import Checkpoint, EngineConfig
from runner.schema.plan import LoadSpec, WorkloadSpec
from runner.schema.result import (
    ClientHealth,
    EngineInfo,
    Hardware,
    Metrics,
    PointResult,
    Provenance,
    ReplicaResult,
    SendSchedule,
    Window,
)
from runner.schema.samples import QueueSummary
from tests import factories

# 64 requests of 128 output tokens (64 input) in 10 s: 8,192 / 10 = 819.2 tok/s, 6.4 req/s and
# (4,096 + 8,192) / 10 = 1,228.8 tok/s, as the factory derives them.
COUNTS = dict(completed=64, total_output_tokens=8192)
LATENCIES_MS = dict(
    median_ttft_ms=50.0,
    p95_ttft_ms=90.0,
    p99_ttft_ms=99.0,
    median_tpot_ms=5.0,
    p95_tpot_ms=7.0,
    p99_tpot_ms=8.0,
    median_e2el_ms=700.0,
    p95_e2el_ms=900.0,
    p99_e2el_ms=990.0,
)


def metrics(**overrides) -> Metrics:
    return factories.metrics(**{**COUNTS, **LATENCIES_MS, **overrides})


def result(provenance=True, **overrides) -> PointResult:
    values = dict(
        engine_config=EngineConfig(
            max_num_seqs=8, max_num_batched_tokens=2048, kv_cache_dtype="auto"
        ),
        load=LoadSpec(shape="concurrency", num_requests=64, concurrency=16),
        workload=WorkloadSpec(output_tokens=128),
        repeat=1,
        metrics=metrics(),
        queue=QueueSummary(
            samples=20,
            mean_running=7.5,
            mean_waiting=8.0,
            peak_running=8,
            peak_waiting=15,
            peak_kv_usage=0.3,
            mean_kv_usage=0.2,
            preemptions=0,
            generation_tokens=8192,
        ),
        client=ClientHealth(saturated=True, reasons=["loop lag"]),
    )
    if provenance:
        values["provenance"] = Provenance(
            hardware=Hardware(host="box", gpu_count=0, cpu_model="Xeon"),
            engine=EngineInfo(launch_style="cpu", version="0.32.0", cache_dtype="auto"),
            checkpoint=Checkpoint(model="/tiny-model", precision="bf16"),
            client_version="0.1",
            started_at="2026-11-30T00:00:00Z",
        )
    values.update(overrides)
    return factories.point_result(**values)


def test_point_figures_mirror_the_metrics_and_queue_summary():
    f = from_point_result(result())
    assert f.key == "seqs=8,tokens=2048,kv=auto|concurrency 16 x 64|r1"
    assert f.config_label == "seqs=8,tokens=2048,kv=auto"
    assert (f.max_num_seqs, f.max_num_batched_tokens) == (8, 2048)
    assert f.offered_concurrency == 16
    assert f.output_throughput == 819.2
    assert (f.median_e2el_ms, f.p99_ttft_ms, f.median_tpot_ms) == (700.0, 99.0, 5.0)
    assert (f.queue_samples, f.mean_running, f.peak_waiting, f.peak_kv_usage) == (20, 7.5, 15, 0.3)
    assert f.workload == WorkloadShape(input_tokens_min=63, input_tokens_max=66, output_tokens=128)
    assert (f.gpu_count, f.replicas, f.repeat) == (1, 1, 1)
    assert f.valid is True and f.client_saturated is True
    assert f.mean_tokens_per_step is None


def test_a_point_whose_aggregates_disagree_is_invalid_but_keeps_its_runs_own_validity():
    # 8,192 output tokens / 10 s = 819.2 tok/s; 900 claimed is +9.9%.
    f = from_point_result(result(metrics=metrics(output_throughput=900.0)))
    assert (f.valid, f.run_valid) == (False, True)
    assert f.failed_checks == (
        "output_throughput is 900.00/s but 8,192 output tokens over the 10 s window make "
        "819.20/s (+9.9%); they must agree within 0.5%.",
    )


def test_a_point_whose_aggregates_agree_keeps_its_validity():
    f = from_point_result(result())
    assert (f.valid, f.run_valid, f.failed_checks) == (True, True, ())


def test_an_invalid_run_that_also_fails_a_check_is_invalid_on_both_counts():
    f = from_point_result(result(metrics=metrics(failed=2, valid=False)))
    assert (f.valid, f.run_valid) == (False, False)
    assert f.failed_checks == ("64 completed + 2 failed = 66 requests, but the load sent 64.",)


def test_gpu_count_is_replicas_times_tensor_parallel_size():
    config = EngineConfig(max_num_seqs=8, tensor_parallel_size=2)
    assert from_point_result(result(engine_config=config, replicas=4)).gpu_count == 8


def test_run_facts_read_the_provenance():
    facts = run_facts_from_point_result(result())
    assert facts.gpu_sku == "CPU only (Xeon)"
    assert (facts.runtime, facts.runtime_version) == ("vllm", "0.32.0")
    assert (facts.checkpoint, facts.checkpoint_revision, facts.precision) == (
        "/tiny-model",
        None,
        "bf16",
    )
    assert (facts.kv_dtype, facts.request_count, facts.host, facts.gpu_count) == (
        "auto",
        64,
        "box",
        1,
    )


def test_run_facts_without_provenance_leave_the_unrecorded_factors_unknown():
    facts = run_facts_from_point_result(result(provenance=False))
    assert facts.host is None and facts.runtime_version is None and facts.gpu_sku is None
    assert facts.request_count == 64


def test_replica_figures_carry_each_replicas_window_and_metrics():
    replicas = [
        ReplicaResult(
            replica=1, base_url="http://b", window=Window(start=1.0, end=11.5), metrics=metrics()
        ),
        ReplicaResult(replica=0, base_url="http://a"),
    ]
    figures = replica_figures_from_point_result(result(per_replica=replicas, replicas=2))
    assert figures[0].window_seconds == 10.5 and figures[0].output_throughput == 819.2
    assert figures[1].output_throughput is None and figures[1].valid is None


def _client(load: LoadSpec, running: float, waiting: float, *, cpu: float = 0.03,
            schedule: SendSchedule | None = None, duration: float | None = None) -> PointResult:
    queue = QueueSummary(samples=20, mean_running=running, mean_waiting=waiting)
    client = ClientHealth(cpu_fraction=cpu, loop_lag_p99_ms=46, saturated=True,
                          schedule=schedule)
    extra = {"metrics": metrics(duration=duration)} if duration is not None else {}
    return result(load=load, queue=queue, client=client, **extra)


CLOSED_16 = LoadSpec(shape="concurrency", num_requests=64, concurrency=16)


def test_a_starved_client_whose_load_arrived_does_not_decide_the_bottleneck():
    from analysis.convert import client_limited

    # 16 in flight, as the closed loop means to keep: the lag distorts timings, not the load.
    assert client_limited(_client(CLOSED_16, 8.0, 8.0)) is False
    assert client_limited(_client(CLOSED_16, 8.0, 8.0, cpu=0.97)) is True  # its own CPU busy
    assert client_limited(result(client=ClientHealth(saturated=False))) is False


def test_a_starved_client_that_kept_too_few_requests_in_flight_held_the_load_back():
    from analysis.convert import client_limited

    # The rule is running + waiting < 0.9 x 16 = 14.4: 14.4 is enough, 14.3 is not.
    assert client_limited(_client(CLOSED_16, 8.0, 6.4)) is False
    assert client_limited(_client(CLOSED_16, 8.0, 6.3)) is True
    # Not without the lag: a healthy client's shortfall is the load's own turnaround.
    healthy = result(load=CLOSED_16, client=ClientHealth(saturated=False),
                     queue=QueueSummary(samples=20, mean_running=2.0, mean_waiting=0.0))
    assert client_limited(healthy) is False


def test_a_starved_client_behind_its_schedule_held_the_load_back():
    from analysis.convert import client_limited

    rate = LoadSpec(shape="rate", num_requests=64, rate=10.0)
    def behind(achieved):
        return SendSchedule(requests=64, sent=64, scheduled_span_s=6.3, scheduled_rate=10.0,
                            achieved_rate=achieved)
    assert client_limited(_client(rate, 4.0, 0.0, schedule=behind(9.0))) is False
    assert client_limited(_client(rate, 4.0, 0.0, schedule=behind(8.9))) is True
    # A burst: its sends spread over more than a tenth of the 10 s point.
    burst = LoadSpec(shape="burst", num_requests=64)
    def spread(max_lag_ms):
        return SendSchedule(requests=64, sent=64, scheduled_span_s=0.0, max_send_lag_ms=max_lag_ms)
    assert client_limited(_client(burst, 4.0, 30.0, schedule=spread(1_000), duration=10.0)) is False
    assert client_limited(_client(burst, 4.0, 30.0, schedule=spread(1_001), duration=10.0)) is True


def served_by(engine: EngineInfo, source: str = "headroom", **hardware: object) -> PointResult:
    """The test point as served by this engine on an H200 host (or the given hardware)."""
    prov = Provenance(
        hardware=Hardware(**{"host": "box", "gpu_count": 1, "gpu_name": "NVIDIA H200", **hardware}),
        engine=engine,
        checkpoint=Checkpoint(model="nvidia/Qwen3-30B-A3B-NVFP4"),
        packages={"vllm": "0.32.0"},
        client_version="0.1",
        started_at="2026-11-30T00:00:00Z",
    )
    return result(provenance=False).model_copy(update={"provenance": prov, "source": source})


def test_run_facts_name_the_engine_that_served_the_point_not_its_image():
    engine = EngineInfo(
        launch_style="attach", name="tensorrt-llm", version="0.18.0",
        image="nvcr.io/nvidia/tritonserver:25.01-trtllm-python-py3",
    )
    facts = run_facts_from_point_result(served_by(engine))
    assert (facts.runtime, facts.runtime_version) == ("tensorrt-llm", "0.18.0")


def test_a_vllm_image_is_still_the_vllm_runtime():
    engine = EngineInfo(launch_style="docker", version="0.11.0", image="vllm/vllm-openai:v0.11.0")
    assert run_facts_from_point_result(served_by(engine)).runtime == "vllm"


def test_a_vllm_point_whose_server_gave_no_version_takes_the_installed_packages():
    facts = run_facts_from_point_result(served_by(EngineInfo(launch_style="serve")))
    assert (facts.runtime, facts.runtime_version) == ("vllm", "0.32.0")


def test_an_unknown_engine_takes_no_version_from_the_vllm_package():
    # The client host's vllm package says nothing about the engine another host served with.
    facts = run_facts_from_point_result(served_by(EngineInfo(launch_style="attach", name=None)))
    assert (facts.runtime, facts.runtime_version) == (None, None)


def test_an_import_that_records_no_gpu_host_or_checkpoint_leaves_them_unknown():
    from runner.importer.vllm_document import UNKNOWN_HOST, UNKNOWN_MODEL

    point = served_by(
        EngineInfo(launch_style="attach", name=None), source="vllm-bench-import",
        host=UNKNOWN_HOST, gpu_name=None, gpu_count=0,
    )
    point.provenance.checkpoint.model = UNKNOWN_MODEL
    facts = run_facts_from_point_result(point)
    # Not "CPU only", not a shared "unknown" host or checkpoint that two imports would match on.
    assert (facts.gpu_sku, facts.host, facts.checkpoint) == (None, None, None)


def test_a_headroom_point_on_a_host_without_gpus_is_cpu_only():
    point = served_by(EngineInfo(launch_style="cpu"), gpu_name=None, gpu_count=0, cpu_model="Xeon")
    assert run_facts_from_point_result(point).gpu_sku == "CPU only (Xeon)"


def test_a_trace_or_length_log_workload_is_its_file_not_its_token_bounds():
    from analysis.convert import workload_shape
    from runner.schema.plan import WorkloadSpec

    for kind, label in (("trace", "trace t.jsonl"), ("lengths", "lengths of t.jsonl")):
        spec = WorkloadSpec(kind=kind, dataset_path="t.jsonl", endpoint="completions")
        assert workload_shape(spec).source == label
        assert workload_shape(spec).label() == label
    assert workload_shape(WorkloadSpec()).source is None


# --- the limits the engine ran with ----------------------------------------------------------


def unset_limits(point: PointResult, **config: object) -> PointResult:
    """The point with neither limit set, as the demo's blank token budget leaves vLLM to pick."""
    return point.model_copy(update={"engine_config": EngineConfig(**config)})


def test_a_blank_token_budget_is_vllms_cpu_default_as_the_engine_ran():
    fig = from_point_result(unset_limits(result(), max_num_seqs=64))
    assert (fig.max_num_seqs, fig.max_num_batched_tokens) == (64, None)  # the config, as set
    assert (fig.seqs_limit, fig.token_budget) == (64, 2048)
    assert fig.limits_from_defaults == ("max_num_batched_tokens",)


def test_a_cpu_engines_defaults_grow_with_its_tensor_parallel_size():
    fig = from_point_result(unset_limits(result(), tensor_parallel_size=2))
    assert (fig.seqs_limit, fig.token_budget) == (256, 4096)
    assert fig.limits_from_defaults == ("max_num_seqs", "max_num_batched_tokens")


@pytest.mark.parametrize("gpu_name, memory_mib, limits", [
    ("NVIDIA H200", 143_771, (1024, 8192)),  # 140.4 GiB: at least 70, under 160
    ("NVIDIA B200", 183_359, (1024, 16384)),  # 179 GiB
    ("NVIDIA A100-SXM4-80GB", 81_920, (256, 2048)),  # 80 GiB, but an A100
    ("NVIDIA L40S", 71_679, (256, 2048)),  # one MiB under 70 GiB
    ("NVIDIA H100 PCIe", 71_680, (1024, 8192)),  # exactly 70 GiB
])
def test_a_gpus_defaults_follow_its_memory_as_vllm_032_picks_them(gpu_name, memory_mib, limits):
    point = served_by(EngineInfo(launch_style="serve", version="0.32.0"), gpu_name=gpu_name,
                      gpu_memory_mib=memory_mib)
    fig = from_point_result(unset_limits(point))
    assert (fig.seqs_limit, fig.token_budget) == limits


@pytest.mark.parametrize("engine", [
    EngineInfo(launch_style="serve", version="0.31.1"),  # a rule Headroom has not read
    EngineInfo(launch_style="attach", version="0.32.0"),  # its flags are not known
    EngineInfo(launch_style="serve", name="sglang", version="0.32.0"),
    EngineInfo(launch_style="serve", version=None),
])
def test_limits_stay_unknown_where_vllms_defaults_cannot_be_told(engine):
    point = served_by(engine, gpu_memory_mib=143_771)
    fig = from_point_result(unset_limits(point))
    assert (fig.seqs_limit, fig.token_budget, fig.limits_from_defaults) == (None, None, ())


def test_a_gpu_whose_memory_is_not_recorded_has_no_default():
    fig = from_point_result(unset_limits(served_by(EngineInfo(launch_style="serve",
                                                              version="0.32.0"))))
    assert (fig.seqs_limit, fig.token_budget) == (None, None)


def test_the_share_at_the_cap_reads_the_time_requests_waited_at_each_running_count():
    queue = result().queue.model_copy(update={"running_while_waiting_s": {"8": 9.0, "7": 1.0}})
    fig = from_point_result(result(queue=queue))  # max_num_seqs 8
    assert fig.at_cap_share == pytest.approx(0.9)


@pytest.mark.parametrize("record", [None, {}, {"8": 0.0}])
def test_no_share_without_time_spent_waiting(record):
    queue = result().queue.model_copy(update={"running_while_waiting_s": record})
    assert from_point_result(result(queue=queue)).at_cap_share is None
