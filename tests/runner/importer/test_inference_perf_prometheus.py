"""inference-perf 0.5 and 0.6 with their Prometheus reports, written by the real tools against the
CPU engine scraped by a real Prometheus (tests/data/peers/inference-perf/README.md): each stage's
stage_N_prometheus_metrics.json is that stage's queue evidence, with the file or in the folder,
labelled as inference-perf's report in the format its keys date."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.importer.detect import detect
from runner.importer.files import load_result_file
from runner.importer.inference_perf_server import SOURCE

INFERENCE_PERF = Path(__file__).parents[2] / "data" / "peers" / "inference-perf"
RELEASES = ["0.5.0", "0.6.0"]
FORMAT = "Prometheus report (0.4.1 or later format)"


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


def _files(release: str, stage: int) -> tuple[Path, Path]:
    folder = INFERENCE_PERF / f"{release}-prometheus"
    return (folder / f"stage_{stage}_lifecycle_metrics.json",
            folder / f"stage_{stage}_prometheus_metrics.json")  # fmt: skip


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("stage", [0, 1])
def test_a_stages_prometheus_report_is_its_queue(release, stage):
    lifecycle, prometheus = _files(release, stage)
    server = _json(prometheus)["successes"]
    assert detect(_json(prometheus), prometheus.name).version == FORMAT
    [point] = load_result_file(lifecycle, companion=prometheus)
    # Means over the stage as Prometheus computed them; the engine kept up (nothing waited).
    assert point.queue.mean_waiting == server["queue_len"]["mean"] == 0
    assert point.queue.mean_running == server["num_requests_running"]["mean"] > 0
    assert point.queue.mean_kv_usage == server["kv_cache_usage_percentage"]["mean"] > 0
    assert point.queue.preemptions == server["num_preemptions_total"]["mean"] == 0
    assert point.queue.mean_queue_time_s == server["request_queue_time"]["mean"]
    assert point.queue.mean_tokens_per_step == server["iteration_tokens"]["mean"]
    assert point.peer is not None and point.peer.server is not None
    assert point.peer.server.tool == SOURCE and point.peer.server.lacks == []
    assert any(f"{SOURCE} (0.4.1 or later format) in {prometheus.name}" in note
               for note in point.notes)  # fmt: skip
    assert point.metrics.duration == _json(lifecycle)["benchmark_time_seconds"]


@pytest.mark.parametrize("release", RELEASES)
def test_the_run_folder_pairs_each_stage_with_its_prometheus_report(release):
    points = load_result_file(INFERENCE_PERF / f"{release}-prometheus")
    assert [p.load.rate for p in points] == [4.0, 8.0]
    for stage, point in enumerate(points):
        server = _json(_files(release, stage)[1])["successes"]
        assert point.queue.mean_running == server["num_requests_running"]["mean"]
        assert point.peer is not None and point.peer.server is not None
        assert point.peer.server.file == (
            f"{release}-prometheus/stage_{stage}_prometheus_metrics.json")
