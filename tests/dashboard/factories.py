"""Rows and runner results for dashboard tests.

PointResult objects are built here directly from runner.schema, the shared contract; they stand
in for the runner only inside tests.
"""

from __future__ import annotations

from typing import Any

from benchmarks.models import Benchmark, Checkpoint, Node, Runtime, Workload
from benchmarks import plans
from runner import schema

REVISION = "0123456789abcdef0123456789abcdef01234567"


def make_node(queue: str = "gpu-a", **fields: Any) -> Node:
    defaults = {"hostname": "gpu-a.lab", "gpu_name": "NVIDIA H200", "gpu_count": 8,
                "launch_style": "serve"}
    return Node.objects.create(queue=queue, **{**defaults, **fields})


def make_runtime(**fields: Any) -> Runtime:
    return Runtime.objects.get_or_create(**{"engine": "vllm", "version": "0.11.0", **fields})[0]


def make_checkpoint(**fields: Any) -> Checkpoint:
    defaults = {"repo": "nvidia/Qwen3-30B-A3B-FP4", "revision": REVISION, "precision": "NVFP4",
                "kv_cache_dtype": "fp8"}
    return Checkpoint.objects.get_or_create(**{**defaults, **fields})[0]


def make_workload(**fields: Any) -> Workload:
    return Workload.objects.get_or_create(**{"name": "case-study", **fields})[0]


def make_benchmark(node: Node | None = None, state: str = "queued", **fields: Any) -> Benchmark:
    node = node or make_node()
    runtime = fields.pop("runtime", None) or make_runtime()
    checkpoint = fields.pop("checkpoint", None) or make_checkpoint()
    workload = fields.pop("workload", None) or make_workload()
    plan = plans.build_plan(
        name="test sweep",
        node=node,
        runtime=runtime,
        checkpoint=checkpoint,
        workload=workload,
        engine_configs=[schema.EngineConfig(max_num_seqs=256), schema.EngineConfig(max_num_seqs=512)],
        load_levels=[1000, 2000],
        repeats=1,
        replicas=1,
    )
    defaults: dict[str, Any] = {
        "name": "test sweep",
        "node": node,
        "hardware": node.hardware_label(),
        "runtime": runtime,
        "checkpoint": checkpoint,
        "workload": workload,
        "plan": plan.model_dump(mode="json"),
        "points_total": plans.points_total(plan),
        "state": state,
    }
    return Benchmark.objects.create(**{**defaults, **fields})


def make_requests(count: int, *, output_tokens: int = 4, failed: int = 0) -> list[schema.RequestRecord]:
    records = []
    for i in range(count):
        send = i * 0.001
        chunks = [send + 0.05 + 0.01 * k for k in range(output_tokens)]
        if i < failed:
            records.append(schema.RequestRecord(index=i, intended_send=send, status=500,
                                                error="HTTP 500: engine overloaded"))
            continue
        records.append(
            schema.RequestRecord(
                index=i,
                intended_send=send,
                actual_send=send + 0.0001,
                ttft=chunks[0] - (send + 0.0001),  # vLLM's: from the actual send
                e2el=chunks[-1] - (send + 0.0001),
                completed_at=chunks[-1],
                chunk_times=chunks,
                chunk_tokens=[1] * output_tokens,
                prompt_tokens=64,
                output_tokens=output_tokens,
                finish_reason="length",
                status=200,
            )
        )
    return records


def make_samples(count: int) -> list[schema.EngineSample]:
    return [
        schema.EngineSample(
            t=i * 0.5,
            running=float(min(i, 8)),
            waiting=float(max(0, 50 - i)),
            kv_usage=None if i == 0 else min(1.0, i / 40),
            preemptions_total=0.0,
            generation_tokens_total=float(i * 100),
        )
        for i in range(count)
    ]


def make_metrics(**fields: Any) -> schema.Metrics:
    """Metrics whose rates agree with their counts over the window, as a real point's do.

    A test that names a throughput gets the output tokens that make it over the window; the
    other rates follow from the counts unless the test names them too (to make them disagree).
    """
    duration = fields.get("duration", 10.0)
    completed = fields.get("completed", 100)
    if "output_throughput" in fields and "total_output_tokens" not in fields:
        fields["total_output_tokens"] = round(fields["output_throughput"] * duration)
    total_in = fields.get("total_input_tokens", 64 * completed)
    total_out = fields.get("total_output_tokens", 256 * completed)
    defaults: dict[str, Any] = dict(
        duration=duration, completed=completed, failed=0, short_responses=0, valid=True,
        total_input_tokens=total_in, total_output_tokens=total_out,
        request_throughput=completed / duration, output_throughput=total_out / duration,
        total_token_throughput=(total_in + total_out) / duration,
        median_ttft_ms=120.0, p95_ttft_ms=300.0, p99_ttft_ms=350.0,
        median_tpot_ms=20.0, p95_tpot_ms=25.0, p99_tpot_ms=30.0,
        median_itl_ms=20.0, median_e2el_ms=5200.0, p95_e2el_ms=6000.0, p99_e2el_ms=6500.0,
    )
    return schema.Metrics(**{**defaults, **fields})


def make_point_result(
    *,
    max_num_seqs: int = 256,
    num_requests: int = 1000,
    repeat: int = 0,
    requests: int = 10,
    samples: int = 20,
    launch_style: str = "cpu",
    saturated: bool = False,
    **metric_fields: Any,
) -> schema.PointResult:
    config = schema.EngineConfig(max_num_seqs=max_num_seqs)
    load = schema.LoadSpec(shape="burst", num_requests=num_requests)
    provenance = schema.Provenance(
        hardware=schema.Hardware(host="test-host", cpu_model="Test CPU", cpu_count=2),
        engine=schema.EngineInfo(launch_style=launch_style, version="0.32.0"),
        checkpoint=schema.Checkpoint(model="/models/tiny"),
        client_version="headroom-runner 0.1.0",
        started_at="2026-11-30T15:00:00Z",
    )
    return schema.PointResult(
        key=schema.point_key(config, load, repeat),
        engine_config=config,
        load=load,
        workload=schema.WorkloadSpec(),
        repeat=repeat,
        window=schema.Window(start=0.0, end=10.0),
        # Every request the load sent is accounted for, as in a point the runner measured.
        metrics=make_metrics(**{
            "completed": num_requests - metric_fields.get("failed", 0), **metric_fields}),
        queue=schema.QueueSummary(samples=samples, mean_running=7.5, mean_waiting=30.0,
                                  peak_running=8, peak_waiting=50, peak_kv_usage=0.93),
        client=schema.ClientHealth(saturated=saturated,
                                   reasons=["event-loop lag p99 80 ms"] if saturated else []),
        provenance=provenance,
        samples=make_samples(samples),
        requests=make_requests(requests),
    )
