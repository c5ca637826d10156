"""Files the real AIPerf 0.3, 0.8 and 0.13, GuideLLM 0.4, 0.5, 0.6 and 0.7 and inference-perf 0.5
and 0.6 wrote against the CPU engine
(tests/data/peers/*/README.md): each imports with the tool and the version or format it has,
its figures under the tool's names equal to the file's, a figure the release does not state
absent; and AIPerf's server metrics export is the point's queue, labelled as AIPerf's scrape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis import verdicts
from analysis.convert import from_point_result
from runner.importer.aiperf_server import SOURCE
from runner.importer.detect import detect
from runner.importer.files import load_result_file
from runner.importer.peers import flat_figures
from runner.importer.vllm_document import ImportFileError
from tests.runner.importer.test_peer_versions import KUBECON

PEERS = Path(__file__).parents[2] / "data" / "peers"
AIPERF = PEERS / "aiperf"
GUIDELLM = PEERS / "guidellm"
INFERENCE_PERF = PEERS / "inference-perf"
SUMMARY = "profile_export_aiperf.json"
SERVER = "server_metrics_export.json"


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


# ---------------------------------------------------------------------------------------------
# AIPerf 0.3 and 0.8 (0.13: test_peer_files.py, the first releases: test_peer_versions.py)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("release", "label", "version"), [
    ("0.3", "NVIDIA AIPerf summary before 0.4 (the file does not name its version) "
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
# AIPerf's server metrics export: 0.8 (schema 1.0) and 0.13 (schema 1.1)
# ---------------------------------------------------------------------------------------------


def _series(export: dict, name: str) -> dict:
    [series] = export["metrics"][name]["series"]
    return series["stats"]


@pytest.mark.parametrize(("folder", "schema"), [("0.8", "1.0"), ("0.13-server-metrics", "1.1")])
def test_aiperfs_server_metrics_export_is_the_points_queue(folder, schema):
    export = _json(AIPERF / folder / SERVER)
    assert export["schema_version"] == schema
    [point] = load_result_file(AIPERF / folder / SUMMARY, companion=AIPERF / folder / SERVER)
    waiting = _series(export, "vllm:num_requests_waiting")
    running = _series(export, "vllm:num_requests_running")
    kv = _series(export, "vllm:kv_cache_usage_perc")
    assert (point.queue.mean_waiting, point.queue.peak_waiting) == (waiting["avg"], waiting["max"])
    assert (point.queue.mean_running, point.queue.peak_running) == (running["avg"], running["max"])
    assert (point.queue.mean_kv_usage, point.queue.peak_kv_usage) == (kv["avg"], kv["max"])
    assert point.queue.preemptions == _series(export, "vllm:num_preemptions")["total"] == 0
    assert point.queue.generation_tokens == _series(export, "vllm:generation_tokens")["total"]
    assert point.queue.mean_queue_time_s == (
        _series(export, "vllm:request_queue_time_seconds")["avg"])
    assert point.queue.mean_tokens_per_step == (
        _series(export, "vllm:iteration_tokens_total")["avg"])
    # The engine queued: requests waited with its 4 seats full.
    assert point.queue.peak_running == 4 and point.queue.mean_waiting > 0
    assert point.peer is not None and point.peer.server is not None
    assert point.peer.server.tool == SOURCE == "AIPerf's server metrics scrape"
    assert point.peer.server.file == SERVER and point.peer.server.lacks == []
    assert point.peer.figures["server.vllm:num_requests_waiting.p99"] == waiting["p99"]
    assert any(f"schema {schema}) in {SERVER}: means are plain means of AIPerf's scrapes" in note
               for note in point.notes)  # fmt: skip


def test_a_point_with_aiperfs_scrape_gets_the_verdict_its_evidence_allows():
    folder = AIPERF / "0.13-server-metrics"
    [point] = load_result_file(folder / SUMMARY, companion=folder / SERVER)
    found = verdicts.verdicts_for_sweep([from_point_result(point)])[point.key]
    # Requests waited with 4 running, but the file does not record max_num_seqs: the scrape
    # shows the queue, and the verdict says which limit it cannot name and why.
    assert found.kind == "unclear"
    assert found.evidence.queue_source == SOURCE
    assert found.evidence.lacked == ("max_num_seqs", "max_num_batched_tokens")
    assert found.evidence.mean_waiting == point.queue.mean_waiting > 0
    assert found.sentence.startswith("unclear: requests wait but max_num_seqs is not recorded")
    assert found.sentence.endswith("evidence: AIPerf's server metrics scrape, which lacks "
                                   "max_num_seqs and max_num_batched_tokens")


def test_an_export_without_vllms_metrics_gives_no_queue(tmp_path):
    export = _json(AIPERF / "0.13-server-metrics" / SERVER)
    export["metrics"] = {k: v for k, v in export["metrics"].items() if not k.startswith("vllm:")}
    (tmp_path / SERVER).write_text(json.dumps(export))
    [point] = load_result_file(AIPERF / "0.13-server-metrics" / SUMMARY,
                               companion=tmp_path / SERVER)  # fmt: skip
    assert point.queue.mean_waiting is None and point.queue.samples == 0
    assert point.peer is not None and point.peer.server is not None
    assert point.peer.server.lacks == [
        "waiting requests", "running requests", "KV cache use", "preemptions"]
    assert any("holds none of vLLM's queue metrics" in note for note in point.notes)


def test_the_server_metrics_export_is_recognised_and_refused_alone():
    found = detect(_json(AIPERF / "0.8" / SERVER), SERVER)
    assert (found.kind, found.label) == (
        "aiperf-server-metrics", "NVIDIA AIPerf 0.8.0 server metrics export")
    with pytest.raises(ImportFileError, match=(
        r"^server_metrics_export\.json: NVIDIA AIPerf 0\.8\.0 server metrics export: "
        r"server_metrics_export\.json is read with the run's profile_export_aiperf\.json")):
        load_result_file(AIPERF / "0.8" / SERVER)


@pytest.mark.parametrize(("result", "found"), [
    (AIPERF / "0.8" / "profile_export.jsonl", "AIPerf's per-request file"),
    (KUBECON / "stage_4_lifecycle_metrics.json", "an inference-perf stage report"),
])  # fmt: skip
def test_the_server_metrics_export_goes_only_with_aiperfs_summary(result, found):
    with pytest.raises(ImportFileError, match=(
        "server metrics export server_metrics_export.json is read only with AIPerf's summary "
        f"of the same run, profile_export_aiperf.json, not with {found}")):
        load_result_file(result, companion=AIPERF / "0.8" / SERVER)


# ---------------------------------------------------------------------------------------------
# GuideLLM 0.4, 0.5, 0.6 and 0.7 (0.3: test_peer_versions.py, 0.8: test_peer_files.py)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("release", "label", "version"), [
    ("0.4", "GuideLLM 0.4 report format (version not recorded in the file)", None),
    ("0.5", "GuideLLM 0.5.4", "0.5.4"),
    ("0.6", "GuideLLM 0.6.1", "0.6.1"),
    ("0.7", "GuideLLM 0.7.4", "0.7.4"),
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
    # Every statistic the release states of its successful requests, those it added included
    # (0.7's time_to_first_output_token_ms), is kept as the file states it.
    stated = {f"{name}.successful.{statistic}": value
              for name, tree in metrics.items() if isinstance(tree.get("successful"), dict)
              for statistic, value in flat_figures(tree["successful"]).items()}  # fmt: skip
    assert {key: point.peer.figures[key] for key in stated} == stated
    assert point.metrics.completed == metrics["request_totals"]["successful"] == 12
    assert point.load.concurrency == 4
    # Its requests are all in the report: vLLM's figures are Headroom's, from them.
    assert point.metrics.mean_ttft_ms == pytest.approx(
        metrics["time_to_first_token_ms"]["successful"]["mean"])


# ---------------------------------------------------------------------------------------------
# inference-perf 0.5 and 0.6 (0.1 to 0.4: test_peer_versions.py, 0.7: test_peer_files.py)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("release", ["0.5.0", "0.6.0"])
@pytest.mark.parametrize(("stage", "rate"), [(0, 4.0), (1, 8.0)])
def test_an_inference_perf_stage_of_a_release_has_its_own_time_and_throughput(release, stage, rate):
    path = INFERENCE_PERF / release / f"stage_{stage}_lifecycle_metrics.json"
    report = _json(path)
    throughput = report["successes"]["throughput"]
    [point] = load_result_file(path)
    assert point.provenance is not None
    assert point.provenance.client_version == (
        "inference-perf stage report (0.5 or later format) (version not recorded in the file)")
    assert point.metrics.duration == report["benchmark_time_seconds"]
    assert point.metrics.completed == report["successes"]["count"]
    assert point.metrics.failed == report["failures"]["count"] == 0
    assert point.metrics.request_throughput == pytest.approx(throughput["requests_per_sec"])
    assert point.load.rate == report["load_summary"]["requested_rate"] == rate
    assert point.peer is not None
    assert point.peer.figures["successes.latency.time_to_first_token.p99"] == (
        report["successes"]["latency"]["time_to_first_token"]["p99"])
    # A stage report has no per-request entries: vLLM's latency statistics stay absent.
    assert point.metrics.p99_ttft_ms is None


def test_inference_perf_0_5_states_no_server_token_count_and_says_whose_count_it_uses():
    report = _json(INFERENCE_PERF / "0.5.0" / "stage_0_lifecycle_metrics.json")
    [point] = load_result_file(INFERENCE_PERF / "0.5.0" / "stage_0_lifecycle_metrics.json")
    assert "output_tokens" not in report["successes"]
    assert point.metrics.output_throughput == pytest.approx(
        report["successes"]["throughput"]["output_tokens_per_sec"], rel=1e-3)
    assert any("token totals are the report's throughput" in note for note in point.notes)


def test_inference_perf_0_6_counts_the_servers_output_tokens():
    report = _json(INFERENCE_PERF / "0.6.0" / "stage_1_lifecycle_metrics.json")
    [point] = load_result_file(INFERENCE_PERF / "0.6.0" / "stage_1_lifecycle_metrics.json")
    assert point.metrics.total_output_tokens == report["successes"]["output_tokens"]["total"]
    assert point.metrics.total_output_tokens == 32 * report["successes"]["count"]


@pytest.mark.parametrize("release", ["0.5.0", "0.6.0"])
def test_an_inference_perf_run_folder_of_a_release_is_its_stages(release):
    points = load_result_file(INFERENCE_PERF / release)
    assert [p.load.rate for p in points] == [4.0, 8.0]
