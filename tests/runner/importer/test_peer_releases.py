"""Files the real AIPerf 0.3, 0.8 and 0.13 and GuideLLM 0.4, 0.5 and 0.6 wrote against the CPU engine
(tests/data/peers/*/README.md): each imports with the tool and the version or format it has,
its figures under the tool's names equal to the file's, a figure the release does not state
absent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.importer.files import load_result_file
from runner.importer.peers import flat_figures

PEERS = Path(__file__).parents[2] / "data" / "peers"
AIPERF = PEERS / "aiperf"
GUIDELLM = PEERS / "guidellm"
SUMMARY = "profile_export_aiperf.json"


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


# ---------------------------------------------------------------------------------------------
# AIPerf 0.3 and 0.8 (0.13: test_peer_files.py, the first releases: test_peer_versions.py)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("release", "label", "version"), [
    ("0.3", "NVIDIA AIPerf summary before 0.8 (the file does not name its version) "
     "(version not recorded in the file)", None),
    ("0.8", "NVIDIA AIPerf 0.8.0", "0.8.0"),
])  # fmt: skip
def test_an_aiperf_summary_of_a_release_keeps_its_figures_under_aiperfs_names(
    release, label, version
):
    summary = _json(AIPERF / release / SUMMARY)
    [point] = load_result_file(AIPERF / release / SUMMARY)
    assert point.provenance is not None and point.provenance.client_version == label
    assert point.peer is not None and point.peer.version == version
    for name in ("time_to_first_token", "request_latency", "inter_token_latency"):
        for statistic, value in flat_figures(summary[name]).items():
            assert point.peer.figures[f"{name}.{statistic}"] == value
    assert point.metrics.completed == summary["request_count"]["avg"]
    assert point.metrics.duration == summary["benchmark_duration"]["avg"]
    assert point.load.concurrency == 8
    # No per-request data in a summary: vLLM's latency statistics stay absent.
    assert point.metrics.p99_ttft_ms is None and point.metrics.mean_tpot_ms is None


def test_aiperf_0_3_counts_tokens_with_its_own_tokenizer_and_says_so():
    summary = _json(AIPERF / "0.3" / SUMMARY)
    [point] = load_result_file(AIPERF / "0.3" / SUMMARY)
    assert "total_usage_completion_tokens" not in summary
    assert point.metrics.total_output_tokens == summary["total_osl"]["avg"]
    assert point.metrics.total_input_tokens == summary["total_isl"]["avg"]
    assert any("AIPerf's own tokenizer's counts" in note for note in point.notes)


def test_aiperf_0_8_totals_are_the_servers_usage():
    summary = _json(AIPERF / "0.8" / SUMMARY)
    [point] = load_result_file(AIPERF / "0.8" / SUMMARY)
    usage = summary["total_usage_completion_tokens"]["avg"]
    assert point.metrics.total_output_tokens == usage == 96 * 64


@pytest.mark.parametrize("release", ["0.3", "0.8"])
def test_aiperf_records_of_a_release_give_vllm_figures(release):
    lines = [json.loads(line) for line in (AIPERF / release / "profile_export.jsonl").open()]
    [point] = load_result_file(AIPERF / release / "profile_export.jsonl")
    assert len(point.requests) == len(lines) == 8
    ttfts = sorted(line["metrics"]["time_to_first_token"]["value"] for line in lines)
    assert sorted(r.ttft * 1e3 for r in point.requests if r.ttft) == pytest.approx(ttfts)
    assert point.metrics.completed == 8 and point.metrics.median_ttft_ms is not None


# ---------------------------------------------------------------------------------------------
# GuideLLM 0.4, 0.5 and 0.6 (0.3: test_peer_versions.py, 0.8: test_peer_files.py)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("release", "label", "version"), [
    ("0.4", "GuideLLM 0.4 report format (version not recorded in the file)", None),
    ("0.5", "GuideLLM 0.5.4", "0.5.4"),
    ("0.6", "GuideLLM 0.6.1", "0.6.1"),
])  # fmt: skip
def test_a_guidellm_report_of_a_release_keeps_its_figures_under_guidellms_names(
    release, label, version
):
    report = _json(GUIDELLM / release / "benchmarks.json")
    [point] = load_result_file(GUIDELLM / release / "benchmarks.json")
    assert point.provenance is not None and point.provenance.client_version == label
    assert point.peer is not None and point.peer.version == version
    metrics = report["benchmarks"][0]["metrics"]
    for name in ("time_to_first_token_ms", "request_latency", "inter_token_latency_ms"):
        for statistic, value in flat_figures(metrics[name]["successful"]).items():
            assert point.peer.figures[f"{name}.successful.{statistic}"] == value
    assert point.metrics.completed == metrics["request_totals"]["successful"] == 12
    assert point.load.concurrency == 4
    # Its requests are all in the report: vLLM's figures are Headroom's, from them.
    assert point.metrics.mean_ttft_ms == pytest.approx(
        metrics["time_to_first_token_ms"]["successful"]["mean"])
