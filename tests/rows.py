"""Rows and runner results for dashboard tests.

The PointResults here stand in for the runner only inside tests; their figures come from
tests/factories.py, the one builder of runner.schema results, so they agree with their counts.
"""

from __future__ import annotations

from typing import Any

from benchmarks.launch import plans
from benchmarks.models import Benchmark, Checkpoint, Node, Runtime, Workload
from runner.schema.engine_config import Checkpoint as CheckpointSpec
from runner.schema.engine_config import EngineConfig
from runner.schema.plan import LoadSpec
from runner.schema.records import EngineSample, RequestRecord
from runner.schema.result import ClientHealth, EngineInfo, Hardware, PointResult, Provenance, Window
from runner.schema.samples import QueueSummary
from tests import factories

REVISION = "0123456789abcdef0123456789abcdef01234567"


def make_node(queue: str = "gpu-a", **fields: Any) -> Node:
    defaults = {"hostname": "gpu-a.lab", "gpu_name": "NVIDIA H200", "gpu_count": 8,
                "launch_style": "serve"}
    return Node.objects.create(queue=queue, **{**defaults, **fields})


def make_runtime(**fields: Any) -> Runtime:
    """An approved (launchable) runtime unless the test says approved=False."""
    defaults = {"engine": "vllm", "version": "0.11.0", "approved": True}
    return Runtime.objects.get_or_create(**{**defaults, **fields})[0]


def make_checkpoint(**fields: Any) -> Checkpoint:
    """An approved (launchable), untrusted checkpoint unless the test says otherwise."""
    defaults = {"repo": "nvidia/Qwen3-30B-A3B-FP4", "revision": REVISION, "precision": "NVFP4",
                "kv_cache_dtype": "fp8", "approved": True}
    return Checkpoint.objects.get_or_create(**{**defaults, **fields})[0]


def launch_form_data(node: Node, /, *, confirmed: bool = True, **fields: Any) -> dict[str, Any]:
    """The launch form as a browser posts it: the case-study preset at max_num_seqs 256 and a
    burst of 1000 on the node, with a new approved checkpoint and runtime. confirmed: as the
    confirmation page's Launch posts it (False: the first post, which shows that page)."""
    data = {"node": node.pk, "checkpoint": make_checkpoint().pk, "runtime": make_runtime().pk,
            "workload_preset": "case-study", "max_num_seqs": "256", "load_levels": "1000",
            "repeats": "1", "replicas": "1", **({"confirm": "1"} if confirmed else {})}
    return {**data, **fields}


def make_workload(**fields: Any) -> Workload:
    return Workload.objects.get_or_create(**{"name": "case-study", **fields})[0]


def make_benchmark(node: Node | None = None, state: str = "queued", **fields: Any) -> Benchmark:
    node = node or make_node()
    runtime = fields.pop("runtime", None) or make_runtime()
    checkpoint = fields.pop("checkpoint", None) or make_checkpoint()
    workload = fields.pop("workload", None) or make_workload()
    plan = plans.build_plan(plans.LaunchRequest(
        name="test sweep",
        node=node,
        runtime=runtime,
        checkpoint=checkpoint,
        workload=workload,
        engine_configs=[EngineConfig(max_num_seqs=256), EngineConfig(max_num_seqs=512)],
        load_levels=[1000, 2000],
        repeats=1,
        replicas=1,
    ))
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


def make_requests(count: int, *, output_tokens: int = 4, failed: int = 0) -> list[RequestRecord]:
    records = []
    for i in range(count):
        send = i * 0.001
        chunks = [send + 0.05 + 0.01 * k for k in range(output_tokens)]
        if i < failed:
            records.append(RequestRecord(index=i, intended_send=send, status=500,
                                                error="HTTP 500: engine overloaded"))
            continue
        records.append(
            RequestRecord(
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


def make_samples(count: int) -> list[EngineSample]:
    return [
        EngineSample(
            t=i * 0.5,
            running=float(min(i, 8)),
            waiting=float(max(0, 50 - i)),
            kv_usage=None if i == 0 else min(1.0, i / 40),
            preemptions_total=0.0,
            generation_tokens_total=float(i * 100),
        )
        for i in range(count)
    ]


def make_point_result(
    *,
    max_num_seqs: int = 256,
    num_requests: int = 1000,
    repeat: int = 0,
    requests: int = 10,
    samples: int = 20,
    launch_style: str = "cpu",
    saturated: bool = False,
    output_throughput: float | None = None,
    **metric_fields: Any,
) -> PointResult:
    """A measured point with provenance, engine samples and request records, as stored.

    metric_fields set Metrics figures; the rest follow from them (tests/factories.py), with
    BURST_LATENCIES_MS inside the 10 s window. Every request the load sent is accounted for:
    completed is num_requests less the failed ones unless a test names it. A test that names
    output_throughput gets the output tokens that make it (factories.metrics_at).
    """
    load = LoadSpec(shape="burst", num_requests=num_requests)
    counts = {"completed": num_requests - metric_fields.get("failed", 0),
              **factories.BURST_LATENCIES_MS, **metric_fields}
    if output_throughput is None:
        point_metrics = factories.metrics(**counts)
    else:
        point_metrics = factories.metrics_at(output_throughput, **counts)
    provenance = Provenance(
        hardware=Hardware(host="test-host", cpu_model="Test CPU", cpu_count=2),
        engine=EngineInfo(launch_style=launch_style, version="0.32.0"),
        checkpoint=CheckpointSpec(model="/models/tiny"),
        client_version="headroom-runner 0.1.0",
        started_at="2026-11-30T15:00:00Z",
    )
    return factories.point_result(
        engine_config=EngineConfig(max_num_seqs=max_num_seqs),
        load=load,
        repeat=repeat,
        window=Window(start=0.0, end=factories.WINDOW_S),
        metrics=point_metrics,
        queue=QueueSummary(samples=samples, mean_running=7.5, mean_waiting=30.0,
                                  peak_running=8, peak_waiting=50, peak_kv_usage=0.93),
        client=ClientHealth(saturated=saturated,
                                   reasons=["event-loop lag p99 80 ms"] if saturated else []),
        provenance=provenance,
        samples=make_samples(samples),
        requests=make_requests(requests),
    )


def format_1_blob(arrays: dict) -> bytes:
    """What encode_* wrote before format 2: zlib over an .npz of byte-shuffled arrays."""
    import io
    import zlib

    import numpy as np

    stored, dtypes = {}, []
    for name, array in arrays.items():
        if array.dtype.kind in "fiu":
            stored[name] = array.view(np.uint8).reshape(-1, array.itemsize).T.copy()
            dtypes.append(f"{name}={array.dtype.str}")
        else:
            stored[name] = array
    stored["__dtypes__"] = np.array(dtypes, dtype=np.str_)
    buffer = io.BytesIO()
    np.savez(buffer, **stored)
    return zlib.compress(buffer.getvalue(), 1)
