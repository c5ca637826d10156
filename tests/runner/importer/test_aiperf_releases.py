"""Every AIPerf release from 0.4 to 0.12, each run against the CPU engine (tests/data/peers/aiperf/
README.md): its summary imports under its version with its figures, its records give vLLM's
figures equal to AIPerf's own summary, and its artifact folder is one point whose queue is its
server metrics export. (0.3, 0.8 and 0.13: test_peer_releases.py and test_peer_files.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.importer.aiperf_server import SOURCE
from runner.importer.files import load_result_file
from runner.importer.peers import flat_figures

AIPERF = Path(__file__).parents[2] / "data" / "peers" / "aiperf"
SUMMARY = "profile_export_aiperf.json"
RECORDS = "profile_export.jsonl"
SERVER = "server_metrics_export.json"
REQUESTS, OUTPUT_TOKENS, CONCURRENCY = 16, 32, 8
# Folder, the version AIPerf wrote in its files, its server metrics export's schema.
RELEASES = [
    ("0.4", "0.4.0", "1.0"),
    ("0.5", "0.5.0", "1.0"),
    ("0.6", "0.6.0.post1", "1.0"),
    ("0.7", "0.7.0", "1.0"),
    ("0.9", "0.9.0", "1.0"),
    ("0.10", "0.10.0", "1.0"),
    ("0.11", "0.11.0", "1.0"),
    ("0.12", "0.12.0", "1.1"),
]
FOLDERS = [folder for folder, _, _ in RELEASES]


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


def _avg(summary: dict, *names: str) -> float:
    return next(summary[name]["avg"] for name in names if name in summary)


@pytest.mark.parametrize(("folder", "version", "schema"), RELEASES)
def test_an_aiperf_summary_names_its_release_and_keeps_its_figures(folder, version, schema):
    summary = _json(AIPERF / folder / SUMMARY)
    assert summary["aiperf_version"] == version
    [point] = load_result_file(AIPERF / folder / SUMMARY)
    assert point.provenance is not None
    assert point.provenance.client_version == f"NVIDIA AIPerf {version}"
    assert point.provenance.checkpoint.model == "tiny"
    assert point.peer is not None and point.peer.version == version
    for name in ("time_to_first_token", "request_latency", "inter_token_latency",
                 "output_token_throughput"):  # fmt: skip
        for statistic, value in flat_figures(summary[name]).items():
            assert point.peer.figures[f"{name}.{statistic}"] == value
    assert point.metrics.completed == _avg(summary, "completed_request_count", "request_count")
    assert point.metrics.completed == REQUESTS and point.metrics.failed == 0
    assert point.metrics.duration == summary["benchmark_duration"]["avg"]
    assert point.metrics.total_output_tokens == _avg(
        summary, "total_usage_completion_tokens", "total_osl")
    assert (point.load.shape, point.load.concurrency, point.load.num_requests) == (
        "concurrency", CONCURRENCY, REQUESTS)
    assert point.metrics.p99_ttft_ms is None  # no per-request data in a summary


@pytest.mark.parametrize("folder", FOLDERS)
def test_aiperf_records_of_a_release_give_aiperfs_own_latencies(folder):
    summary = _json(AIPERF / folder / SUMMARY)
    [point] = load_result_file(AIPERF / folder / RECORDS)
    assert len(point.requests) == point.metrics.completed == REQUESTS
    # AIPerf's TTFT and request latency are vLLM's TTFT and E2EL of the same stream, its
    # percentiles numpy's as Headroom's are; its inter_token_latency is vLLM's TPOT.
    ttft = summary["time_to_first_token"]
    assert point.metrics.median_ttft_ms == pytest.approx(ttft["p50"], rel=1e-9)
    assert point.metrics.p99_ttft_ms == pytest.approx(ttft["p99"], rel=1e-9)
    assert point.metrics.mean_e2el_ms == pytest.approx(summary["request_latency"]["avg"], rel=1e-9)
    assert point.metrics.mean_tpot_ms == pytest.approx(
        summary["inter_token_latency"]["avg"], rel=1e-6)
    assert point.metrics.total_output_tokens == _avg(
        summary, "total_usage_completion_tokens", "total_osl")


def test_aiperf_0_4_counts_output_tokens_with_its_own_tokenizer_and_says_so():
    # 0.4 has no --use-server-token-count: its totals re-tokenize the text on the client.
    summary = _json(AIPERF / "0.4" / SUMMARY)
    [point] = load_result_file(AIPERF / "0.4" / SUMMARY)
    [records] = load_result_file(AIPERF / "0.4" / RECORDS)
    assert "total_usage_completion_tokens" not in summary
    assert point.metrics.total_output_tokens == records.metrics.total_output_tokens == (
        summary["total_osl"]["avg"])
    assert point.metrics.total_output_tokens != REQUESTS * OUTPUT_TOKENS  # not the server's
    assert any("AIPerf's own tokenizer's counts" in note for note in point.notes)
    assert any("AIPerf's client-side counts" in note for note in records.notes)


@pytest.mark.parametrize("folder", FOLDERS[1:])
def test_aiperf_from_0_5_counts_the_servers_output_tokens(folder):
    [point] = load_result_file(AIPERF / folder / SUMMARY)
    [records] = load_result_file(AIPERF / folder / RECORDS)
    assert point.metrics.total_output_tokens == records.metrics.total_output_tokens == (
        REQUESTS * OUTPUT_TOKENS)  # ignore_eos: the server generated each request's 32


@pytest.mark.parametrize(("folder", "version", "schema"), RELEASES)
def test_an_aiperf_artifact_folder_of_a_release_is_one_point_with_its_queue(folder, version,
                                                                            schema):  # fmt: skip
    export = _json(AIPERF / folder / SERVER)
    assert (export["aiperf_version"], export["schema_version"]) == (version, schema)
    [point] = load_result_file(AIPERF / folder)
    assert point.provenance is not None
    assert point.provenance.client_version == f"NVIDIA AIPerf {version}"
    assert len(point.requests) == REQUESTS and point.load.concurrency == CONCURRENCY
    stats = {name: export["metrics"][name]["series"][0]["stats"]
             for name in ("vllm:num_requests_waiting", "vllm:num_requests_running")}  # fmt: skip
    waiting, running = stats["vllm:num_requests_waiting"], stats["vllm:num_requests_running"]
    assert (point.queue.mean_waiting, point.queue.peak_waiting) == (waiting["avg"], waiting["max"])
    assert (point.queue.mean_running, point.queue.peak_running) == (running["avg"], running["max"])
    # Eight in flight on an engine of four seats: requests waited (AIPerf's scrapes, about
    # three a second, need not catch the moment all four seats were busy).
    assert 0 < point.queue.peak_running <= 4 and point.queue.peak_waiting > 0
    assert point.peer is not None and point.peer.server is not None
    assert point.peer.server.tool == SOURCE and point.peer.server.file == f"{folder}/{SERVER}"
    assert any(f"(AIPerf {version}, schema {schema}) in {folder}/{SERVER}" in note
               for note in point.notes)  # fmt: skip
