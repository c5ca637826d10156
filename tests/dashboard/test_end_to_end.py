"""The whole path: form -> Redis -> a real Celery worker -> a real CPU vLLM sweep -> run page.

Run under `flock /tmp/headroom-engine.lock`; takes a minute or two (one engine start).
"""

from __future__ import annotations

import pytest
from django.test import Client

from benchmarks.models import Benchmark, Checkpoint, EngineStart, Node, PointData, Runtime
from tests.workers import wait_until_final

pytestmark = [pytest.mark.engine, pytest.mark.django_db(transaction=True)]

RUN_TIMEOUT_S = 900


def tiny_rows(queue: str, model_dir: object) -> tuple[Node, Checkpoint, Runtime]:
    """The worker's node, with an approved tiny-model checkpoint and vLLM runtime to launch."""
    node = Node.objects.get(queue=queue)
    checkpoint = Checkpoint.objects.create(repo=str(model_dir), approved=True)
    runtime = Runtime.objects.create(engine="vllm", version="0.32.0", approved=True)
    return node, checkpoint, runtime


def tiny_form(node: Node, checkpoint: Checkpoint, runtime: Runtime) -> dict[str, object]:
    """One engine config, two burst levels of a small workload the tiny model serves quickly.

    The larger burst queues 64 requests behind max_num_seqs 8: 8 waves of 256 tokens, a few
    seconds even on a fast CPU, long enough for the engine sampler to see requests running and
    waiting (at 64 tokens the point took under a second here and its samples saw an empty
    engine; such a point gets the sparse-queue-samples caveat).
    """
    return {
        "name": "e2e tiny sweep",
        "node": node.pk,
        "checkpoint": checkpoint.pk,
        "runtime": runtime.pk,
        "workload_preset": "custom",
        "prompt_source": "case_study",
        "input_tokens_min": 20,
        "input_tokens_max": 24,
        "output_tokens": 256,
        "request_count": 16,
        "temperature": 0,
        "ignore_eos": "on",
        "endpoint": "completions",
        "stream": "on",
        "load_shape": "burst",
        "max_num_seqs": "8",
        "load_levels": "8 64",
        "repeats": 1,
        "replicas": 1,
        "confirm": "1",  # as the confirmation page's Launch posts it
    }


def test_a_launched_sweep_runs_on_a_real_worker_and_its_page_shows_the_points(
    celery_worker_queue, tiny_model_dir, owner
):
    node = Node.objects.get(queue=celery_worker_queue)
    assert node.launch_style == "cpu" and node.hostname
    checkpoint = Checkpoint.objects.create(repo=str(tiny_model_dir), approved=True)
    runtime = Runtime.objects.create(engine="vllm", version="0.32.0", approved=True)
    client = Client()
    client.force_login(owner)

    response = client.post("/runs/new/", tiny_form(node, checkpoint, runtime))
    assert response.status_code == 302, response.content.decode()[-2000:]
    benchmark = wait_until_final(Benchmark.objects.get(), RUN_TIMEOUT_S)

    assert benchmark.state == "succeeded", (benchmark.error_type, benchmark.error_message)
    assert (benchmark.points_done, benchmark.progress) == (2, 1.0)
    points = list(benchmark.points.order_by("offered_concurrency"))
    assert [p.load_label for p in points] == ["burst 8", "burst 64"]
    assert all(p.valid and p.completed == int(p.offered_concurrency) for p in points)
    assert all(p.output_throughput > 0 for p in points)
    data = PointData.objects.get(point=points[1])
    assert data.request_count == 64 and data.sample_count > 0
    assert set(points[0].caveats.values_list("code", flat=True)) >= {"cpu-engine"}
    assert not points[1].caveats.filter(code="sparse-queue-samples").exists()

    page = client.get(f"/runs/{benchmark.code}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "burst 64" in html and "CPU engine stands in for a GPU" in html
    # No earlier run of the tiny model here: the default estimate, beside what the run took.
    assert benchmark.estimated_wall_s > 0 and benchmark.estimated_gpu_hours is None
    assert benchmark.estimate_basis.startswith("No earlier run of ")
    # Its one engine start is kept for the next launch's estimate on this node.
    (start,) = EngineStart.objects.of(node, checkpoint)
    assert 0 < start.seconds < (benchmark.finished_at - benchmark.started_at).total_seconds()
    assert "GPU-hours none: a CPU node holds no GPUs" in html and " - took " in html
    assert client.get(f"/runs/{benchmark.code}/progress.json").json()["final"] is True
    samples = client.get(f"/runs/{benchmark.code}/points/{points[1].pk}/samples.json").json()
    series = samples["replicas"][0]
    assert len(series["t"]) == data.sample_count
    # The queue evidence the chart draws: the engine admitted some requests, others waited.
    assert max(v for v in series["running"] if v is not None) > 0
    assert max(v for v in series["waiting"] if v is not None) > 0
