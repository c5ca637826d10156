"""The real AIPerf, GuideLLM and inference-perf run against the CPU engine; their files imported
give back the tool's own summary under the tool's names, and vLLM's figures equal the tool's
where the two tools define a figure alike (AIPerf's TTFT percentiles, GuideLLM's mean TTFT), and
AIPerf's GPU telemetry from its scrape of a dcgm-exporter page."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from runner.engine.process import RunningEngine
from runner.importer.files import load_result_file
from runner.importer.peers import flat_figures
from runner.schema.engine_config import EngineConfig
from tests.runner.conftest import TINY_SERVED_NAME
from tests.runner.importer import peer_tools
from tests.runner.importer.dcgm_page import DcgmExporter

pytestmark = [
    pytest.mark.engine,
    pytest.mark.skipif(peer_tools.peers_dir() is None, reason="HEADROOM_PEERS not set"),
]

SHARED_CONFIG = EngineConfig(max_num_seqs=4, max_model_len=1024)


@pytest.fixture(scope="module")
def engine(cpu_engine: Callable[[EngineConfig], RunningEngine]) -> RunningEngine:
    return cpu_engine(SHARED_CONFIG)


def test_aiperf_files_import_as_aiperf_computed_them(
    engine: RunningEngine, tiny_model: Path, tmp_path: Path
) -> None:
    summary_file, records_file = peer_tools.run_aiperf(
        engine.base_url, TINY_SERVED_NAME, tiny_model, tmp_path
    )
    summary = json.loads(summary_file.read_text())
    [from_summary] = load_result_file(summary_file)
    [from_records] = load_result_file(records_file)

    assert from_summary.source == from_records.source == "aiperf-import"
    assert from_summary.peer is not None and from_summary.peer.version == "0.13.0"
    assert from_summary.provenance is not None
    assert from_summary.provenance.client_version == "NVIDIA AIPerf 0.13.0"
    for name in ("time_to_first_token", "request_latency", "output_token_throughput"):
        for statistic, value in flat_figures(summary[name]).items():
            assert from_summary.peer.figures[f"{name}.{statistic}"] == value
    completed = summary["completed_request_count"]["avg"]
    output = summary["total_usage_completion_tokens"]["avg"]
    assert from_summary.metrics.completed == from_records.metrics.completed == completed
    assert from_summary.metrics.total_output_tokens == output == peer_tools.AIPERF_REQUESTS * 32
    assert from_records.metrics.total_output_tokens == output
    assert from_summary.metrics.p99_ttft_ms is None  # no per-request data in the summary
    assert from_summary.load.concurrency == 4

    # AIPerf's TTFT and request latency are vLLM's TTFT and E2EL of the same stream, and both
    # interpolate percentiles as numpy does; its ITL is vLLM's TPOT with the server's counts.
    ttft, latency = summary["time_to_first_token"], summary["request_latency"]
    assert from_records.metrics.median_ttft_ms == pytest.approx(ttft["p50"], rel=1e-9)
    assert from_records.metrics.p99_ttft_ms == pytest.approx(ttft["p99"], rel=1e-9)
    assert from_records.metrics.mean_e2el_ms == pytest.approx(latency["avg"], rel=1e-9)
    assert from_records.metrics.mean_tpot_ms == pytest.approx(
        summary["inter_token_latency"]["avg"], rel=1e-6, abs=1e-9
    )
    assert len(from_records.requests) == completed


def test_guidellm_report_imports_a_point_per_benchmark(
    engine: RunningEngine, tiny_model: Path, tmp_path: Path
) -> None:
    report_file = peer_tools.run_guidellm(engine.base_url, tiny_model, tmp_path)
    report = json.loads(report_file.read_text())
    points = load_result_file(report_file)

    assert [p.load.concurrency for p in points] == list(peer_tools.GUIDELLM_STREAMS)
    for point, benchmark in zip(points, report["benchmarks"], strict=True):
        stats = benchmark["metrics"]
        assert point.source == "guidellm-import"
        assert point.peer is not None and point.peer.version == report["metadata"][
            "guidellm_version"
        ]
        ttft = stats["time_to_first_token_ms"]["successful"]
        assert point.peer.figures["time_to_first_token_ms.successful.percentiles.p99"] == (
            ttft["percentiles"]["p99"]
        )
        assert point.metrics.completed == stats["request_totals"]["successful"]
        assert point.metrics.total_output_tokens == (
            stats["output_token_count"]["successful"]["total_sum"]
        )
        # A mean is defined alike in both tools; GuideLLM's percentiles are not numpy's.
        assert point.metrics.mean_ttft_ms == pytest.approx(ttft["mean"], rel=1e-9)


def test_inference_perf_stage_reports_import_a_point_per_stage(
    engine: RunningEngine, tiny_model: Path, tmp_path: Path
) -> None:
    stage_files = peer_tools.run_inference_perf(
        engine.base_url, TINY_SERVED_NAME, tiny_model, tmp_path
    )
    for stage_file, rate in zip(stage_files, peer_tools.INFERENCE_PERF_RATES, strict=True):
        stage = json.loads(stage_file.read_text())
        [point] = load_result_file(stage_file)
        successes = stage["successes"]
        assert point.source == "inference-perf-import"
        assert point.load.rate == rate
        assert point.metrics.completed == successes["count"]
        assert point.metrics.total_output_tokens == successes["output_tokens"]["total"]
        assert point.metrics.output_throughput == pytest.approx(
            successes["output_tokens"]["total"] / stage["benchmark_time_seconds"]
        )
        assert point.peer is not None
        assert point.peer.figures["successes.latency.time_to_first_token.p99"] == (
            successes["latency"]["time_to_first_token"]["p99"]
        )
        assert point.peer.figures["successes.throughput.output_tokens_per_sec"] == (
            successes["throughput"]["output_tokens_per_sec"]
        )


def test_aiperf_gpu_telemetry_imports_from_its_dcgm_scrape(
    engine: RunningEngine, tiny_model: Path, tmp_path: Path
) -> None:
    # No GPU here: AIPerf scrapes the hand-written dcgm-exporter page of dcgm_page.py.
    with DcgmExporter() as page_url:
        summary_file, records_file = peer_tools.run_aiperf(
            engine.base_url, TINY_SERVED_NAME, tiny_model, tmp_path, gpu_telemetry=page_url
        )
    summary = json.loads(summary_file.read_text())
    [from_summary] = load_result_file(summary_file)
    [point] = load_result_file(
        records_file, companion=peer_tools.aiperf_telemetry_file(tmp_path)
    )

    [endpoint] = summary["telemetry_data"]["endpoints"].values()
    assert from_summary.peer is not None and from_summary.telemetry.source == "aiperf-dcgm"
    for gpu_key, gpu in endpoint["gpus"].items():
        power = gpu["metrics"]["nvidia_power_usage"]
        assert from_summary.peer.figures[f"gpu_telemetry.{gpu_key}.nvidia_power_usage.max"] == (
            power["max"]
        )
    assert point.telemetry.source == "aiperf-dcgm"
    assert {g.gpu for g in point.telemetry.gpus} == {0, 1}
    for gpu in point.telemetry.gpus:
        aiperf = endpoint["gpus"][f"gpu_{gpu.gpu}"]["metrics"]
        assert gpu.samples > 0 and gpu.energy_j is not None and gpu.energy_j > 0
        assert gpu.mean_memory_used_mib == pytest.approx(
            aiperf["nvidia_memory_used"]["avg"] / 1.048576e-3
        )
        assert gpu.peak_power_w is not None
        assert gpu.peak_power_w <= aiperf["nvidia_power_usage"]["max"]
    assert point.telemetry.joules_per_output_token is not None
