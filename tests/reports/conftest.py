"""A stored sweep with provenance full of things a customer must never see.

The hostname, IP, user name, log tail, local path and notes below are planted on purpose: the
leak tests assert that none of them reaches the public page.
"""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.models import Benchmark, Point
from benchmarks.storage.points import store_point
from runner.schema.engine_config import Checkpoint, EngineConfig
from runner.schema.plan import LoadSpec, WorkloadSpec
from runner.schema.result import (
    EngineInfo,
    Hardware,
    Metrics,
    PointResult,
    Provenance,
    ReplicaResult,
    Window,
    point_key,
)
from runner.schema.samples import QueueSummary
from tests import factories as test_factories
from tests import rows as factories

SECRET_HOST = "gpu-node-7.corp.example"
SECRET_IP = "10.1.2.3"
SECRET_USER = "alice-engineer"
SECRET_PATH = "/home/alice-engineer/models/tiny-qwen3"
SECRET_LOG = "engine log line nobody outside may read"
SECRET_NOTE = "internal note: the customer's own config was wrong"
SECRETS = (SECRET_HOST, SECRET_IP, SECRET_USER, "/home/", SECRET_LOG, SECRET_NOTE)

# (max_num_seqs, num_requests): (output tok/s, median e2el ms, mean running, mean waiting)
SWEEP = {
    (8, 16): (9000.5, 3000.0, 8.0, 8.0),
    (8, 32): (18012.4, 5000.0, 8.0, 24.0),
    (8, 64): (18100.0, 9000.0, 8.0, 56.0),
    (64, 16): (30000.0, 1800.0, 16.0, 0.0),
    (64, 32): (41873.6, 2500.0, 32.0, 0.2),
    (64, 64): (42100.0, 4000.0, 60.0, 4.0),
}


def provenance(launch_style: str = "cpu", host_gpus: int = 1,
               revision: str | None = None) -> Provenance:
    gpu = launch_style != "cpu"
    return Provenance(
        hardware=Hardware(
            host=SECRET_HOST,
            gpu_name="NVIDIA H200" if gpu else None,
            gpu_count=host_gpus if gpu else 0,
            cpu_model="Test CPU",
            cpu_count=2,
        ),
        engine=EngineInfo(
            launch_style=launch_style,
            version="0.32.0",
            command=["python", "-m", "vllm.entrypoints.openai.api_server", "--host", SECRET_IP],
            log_path=f"/home/{SECRET_USER}/var/work/engine.log",
            log_tail=SECRET_LOG,
            cache_dtype="auto",
        ),
        checkpoint=Checkpoint(model=SECRET_PATH, precision="bf16", revision=revision),
        client_version="headroom-runner 0.1.0",
        started_at="2026-11-30T15:00:00Z",
    )


# Every point's window (the factory's); latencies of a burst must fit inside it.
WINDOW_S = test_factories.WINDOW_S
SPEC_63_66_256 = WorkloadSpec(input_tokens_min=63, input_tokens_max=66, output_tokens=256)


def metrics(tps: float, completed: int, **extra: Any) -> Metrics:
    """Aggregates that agree with their own counts (the stored-point checks hold them to it):
    `tps` output tokens/s over the factory's window, 64 input tokens per completed request."""
    return test_factories.metrics_at(
        tps, completed=completed, **{**test_factories.BURST_LATENCIES_MS, **extra}
    )


def point_result(seqs: int, requests: int, *, repeat: int = 0, replicas: int = 1,
                 launch_style: str = "cpu", throughput: float | None = None,
                 median_e2el_ms: float | None = None,
                 workload: WorkloadSpec = SPEC_63_66_256,
                 tensor_parallel_size: int = 1, host_gpus: int = 1,
                 revision: str | None = None, **extra: Any) -> PointResult:
    tps, e2el, running, waiting = SWEEP.get((seqs, requests), (1000.0, 1000.0, 1.0, 0.0))
    tps = throughput if throughput is not None else tps
    e2el = median_e2el_ms if median_e2el_ms is not None else e2el
    config = EngineConfig(max_num_seqs=seqs, tensor_parallel_size=tensor_parallel_size)
    load = LoadSpec(shape="burst", num_requests=requests)
    per_replica = [
        ReplicaResult(
            replica=i, base_url=f"http://{SECRET_IP}:{8001 + i}", gpu=str(i),
            window=Window(start=0.0, end=WINDOW_S),
            metrics=metrics(tps / replicas, requests),
        )
        for i in range(replicas)
    ] if replicas > 1 else []
    # A burst's latencies lie inside its window: p95/p99 between the median and the window.
    tail = {"p95_e2el_ms": max(e2el, min(WINDOW_S * 1000, e2el * 1.1)),
            "p99_e2el_ms": max(e2el, min(WINDOW_S * 1000, e2el * 1.2))}
    return test_factories.point_result(
        key=point_key(config, load, repeat) + (f"|x{replicas}" if replicas > 1 else ""),
        engine_config=config,
        load=load,
        workload=workload,
        repeat=repeat,
        replicas=replicas,
        window=Window(start=0.0, end=WINDOW_S),
        metrics=metrics(tps, requests * replicas, median_e2el_ms=e2el, **{**tail, **extra}),
        # While requests waited, running sat at its mean (the record a recorder keeps beside
        # the means; without it the factory's samples, which describe another queue, decide).
        queue=QueueSummary(samples=20, mean_running=running, mean_waiting=waiting,
                                  peak_running=seqs, peak_waiting=requests, peak_kv_usage=0.42,
                                  mean_kv_usage=0.3, preemptions=0,
                                  running_while_waiting_s={f"{running:g}": WINDOW_S}
                                  if waiting >= 1 else {}),
        provenance=provenance(launch_style, host_gpus, revision),
        per_replica=per_replica,
        samples=factories.make_samples(20),
        requests=factories.make_requests(4),
        notes=[SECRET_NOTE],
    )


@pytest.fixture
def owner_username() -> str:
    # The owner's name is one of the planted secrets: a report must never show who built it.
    return SECRET_USER


def make_sweep(owner, launch_style: str = "cpu", *, node_run: bool = True,
               revision: str | None = None) -> Benchmark:
    node = factories.make_node(queue=f"node-{launch_style}", hostname=SECRET_HOST)
    # Room for the points below and a few a test adds.
    benchmark = factories.make_benchmark(node=node, state="succeeded", created_by=owner,
                                         points_total=len(SWEEP) + 10, error_message=SECRET_NOTE)
    for seqs, requests in SWEEP:
        store_point(benchmark, point_result(seqs, requests, launch_style=launch_style,
                                            revision=revision))
    # A second repeat of the tuned setting, a little lower: the capacity estimate uses it.
    store_point(benchmark, point_result(64, 32, repeat=1, launch_style=launch_style,
                                        throughput=41600.0, revision=revision))
    if node_run:
        # A node run: 2 replicas over one common window.
        store_point(benchmark, point_result(64, 32, replicas=2, launch_style=launch_style,
                                            throughput=80000.0, revision=revision))
    return benchmark


@pytest.fixture
def sweep(owner) -> Benchmark:
    return make_sweep(owner)


def point(benchmark: Benchmark, seqs: int, requests: int, repeat: int = 0,
          replicas: int = 1) -> Point:
    return Point.objects.get(benchmark=benchmark, engine_label=f"seqs={seqs}",
                             load_label=f"burst {requests}", repeat=repeat, replicas=replicas)
