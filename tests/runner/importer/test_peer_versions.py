"""Every format version of the peers' result files that users keep, read from files the tools
wrote (tests/data/peers/, each folder's README.md says where each came from): the figures equal
the tool's own summary, the provenance names the tool and the format, the server-side evidence
that came with a file is the point's queue, and a file that cannot be read says precisely why."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from analysis import diagnosis, verdicts
from analysis.convert import from_point_result
from runner.importer.files import load_result_file
from runner.importer.vllm_document import ImportFileError

PEERS = Path(__file__).parents[2] / "data" / "peers"
INFERENCE_PERF = PEERS / "inference-perf"
KUBECON = INFERENCE_PERF / "0.2-0.4" / "kubecon-na-2025"
AIPERF_EARLY = PEERS / "aiperf" / "0.1-0.2"
GUIDELLM_03 = PEERS / "guidellm" / "0.3" / "benchmarks_stripped.json"
LLM_D = PEERS / "llm-d-benchmark"


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


# ---------------------------------------------------------------------------------------------
# inference-perf: 0.1.0, 0.1.1 and 0.2 to 0.4 stage reports (0.5 to 0.7: test_peer_files.py)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("version", "stage", "label"), [
    ("0.1.0", 0, "0.1.0 format"), ("0.1.0", 1, "0.1.0 format"),
    ("0.1.1", 0, "0.1.1 format"), ("0.1.1", 1, "0.1.1 format"),
])  # fmt: skip
def test_an_early_inference_perf_stage_has_the_duration_its_own_rate_and_count_state(
    version, stage, label
):
    path = INFERENCE_PERF / version / f"stage_{stage}_lifecycle_metrics.json"
    report = _json(path)
    throughput = report["successes"]["throughput"]
    [point] = load_result_file(path)
    # No benchmark_time_seconds before 0.5: the stage's time is its count over its own rate.
    assert point.metrics.duration == report["successes"]["count"] / throughput["requests_per_sec"]
    assert point.metrics.request_throughput == pytest.approx(throughput["requests_per_sec"])
    assert point.metrics.output_throughput == pytest.approx(
        throughput["output_tokens_per_sec"], rel=1e-3)
    assert point.metrics.completed == report["successes"]["count"]
    assert point.metrics.failed == report["failures"]["count"]
    assert any("derived from the report's own figures" in note for note in point.notes)
    assert point.provenance is not None
    assert point.provenance.client_version == (
        f"inference-perf stage report ({label}) (version not recorded in the file)")
    assert point.peer is not None and point.peer.version is None
    assert point.peer.figures["successes.throughput.requests_per_sec"] == (
        throughput["requests_per_sec"])


def test_an_inference_perf_0_1_0_stage_names_no_rate_and_is_shown_as_a_burst():
    [point] = load_result_file(INFERENCE_PERF / "0.1.0" / "stage_1_lifecycle_metrics.json")
    assert point.load.shape == "burst" and point.load.num_requests == 16
    assert any("requested rate is not in an inference-perf 0.1.0" in note for note in point.notes)


def test_an_inference_perf_0_1_1_stage_keeps_its_requested_rate():
    report = _json(INFERENCE_PERF / "0.1.1" / "stage_1_lifecycle_metrics.json")
    [point] = load_result_file(INFERENCE_PERF / "0.1.1" / "stage_1_lifecycle_metrics.json")
    assert point.load.rate == report["load_summary"]["requested_rate"] == 4.0


def test_the_conference_sweeps_stages_equal_inference_perfs_own_throughput():
    for stage in range(7):
        path = KUBECON / f"stage_{stage}_lifecycle_metrics.json"
        report = _json(path)
        [point] = load_result_file(path)
        throughput = report["successes"]["throughput"]
        assert point.metrics.request_throughput == pytest.approx(throughput["requests_per_sec"])
        assert point.metrics.output_throughput == pytest.approx(
            throughput["output_tokens_per_sec"], rel=1e-6)
        assert point.metrics.total_token_throughput == pytest.approx(
            throughput["total_tokens_per_sec"], rel=1e-6)
        assert point.load.rate == report["load_summary"]["requested_rate"]
        assert point.provenance is not None
        assert "stage report (0.2 to 0.4 format)" in point.provenance.client_version


def test_a_stage_with_its_prometheus_report_has_inference_perfs_scrape_as_its_queue():
    server = _json(KUBECON / "stage_4_prometheus_metrics.json")["successes"]
    [point] = load_result_file(KUBECON / "stage_4_lifecycle_metrics.json",
                               companion=KUBECON / "stage_4_prometheus_metrics.json")  # fmt: skip
    assert point.queue.mean_waiting == server["queue_len"]["mean"] == 155
    # This format has no running count; its KV mean of 0 under a queue of 155 is the 0
    # inference-perf writes for a gauge Prometheus did not find, not an empty cache.
    assert point.queue.mean_running is None and point.queue.mean_kv_usage is None
    assert point.queue.preemptions == 0.0
    assert point.peer is not None and point.peer.server is not None
    assert point.peer.server.tool == "inference-perf's Prometheus report"
    assert point.peer.server.lacks == ["running requests", "KV cache use"]
    assert point.peer.figures["server.queue_len.mean"] == 155
    assert any("read as not reported" in note for note in point.notes)


def test_the_conference_sweep_folder_is_diagnosed_from_its_prometheus_reports():
    points = load_result_file(KUBECON)
    assert [p.load.rate for p in points] == [1.0, 37.97, 74.94, 111.92, 148.89, 185.86, 222.83]
    found = verdicts.verdicts_for_sweep([from_point_result(p) for p in points])
    kinds = [found[p.key].kind for p in points]
    # Nothing waits up to 75 req/s; from 112 req/s requests wait and, with no running count
    # and no max_num_seqs, no limit can be named: the verdict says what the evidence lacked.
    assert kinds == ["underloaded"] * 3 + ["unclear"] * 4
    stage_4 = found[points[4].key]
    assert stage_4.evidence.saturated and not found[points[3].key].evidence.saturated
    assert stage_4.evidence.lacked == (
        "running requests", "KV cache use", "max_num_seqs", "max_num_batched_tokens")
    assert "has no count of running requests" in stage_4.sentence
    assert ("evidence: inference-perf's Prometheus report, which lacks running requests, KV "
            "cache use, max_num_seqs and max_num_batched_tokens") in stage_4.sentence
    [sentence] = diagnosis.diagnose_ladders(list(found.values()))
    assert "no limit (underloaded) from rate 1.0/s x 60 to rate 74.94/s x 4496" in sentence
    assert "saturated from rate 148.89/s x 8933 on" in sentence


def test_without_its_prometheus_reports_the_sweep_has_no_verdicts(tmp_path):
    for path in KUBECON.glob("stage_*_lifecycle_metrics.json"):
        shutil.copy(path, tmp_path / path.name)
    points = load_result_file(tmp_path)
    assert all(p.peer and p.peer.server is None for p in points)
    assert all(from_point_result(p).queue_source is None for p in points)


def test_a_prometheus_report_of_another_stage_is_refused():
    with pytest.raises(ImportFileError, match="is the Prometheus report of stage 3, not of "
                       "stage 4"):  # fmt: skip
        load_result_file(KUBECON / "stage_4_lifecycle_metrics.json",
                         companion=KUBECON / "stage_3_prometheus_metrics.json")  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Refusals that name the tool, the format and what is missing
# ---------------------------------------------------------------------------------------------


def test_a_stage_report_without_benchmark_time_or_throughput_names_both(tmp_path):
    report = _json(KUBECON / "stage_0_lifecycle_metrics.json")
    del report["successes"]["throughput"]
    path = tmp_path / "stage_0_lifecycle_metrics.json"
    path.write_text(json.dumps(report))
    with pytest.raises(ImportFileError) as refused:
        load_result_file(path)
    assert str(refused.value) == (
        "stage_0_lifecycle_metrics.json: inference-perf stage report (format from before 0.1): "
        "without benchmark_time_seconds and without a throughput block")


def test_a_stage_where_every_request_failed_cannot_derive_its_duration():
    path = INFERENCE_PERF / "0.1.0" / "all-failed" / "stage_1_lifecycle_metrics.json"
    with pytest.raises(ImportFileError) as refused:
        load_result_file(path)
    assert str(refused.value) == (
        "stage_1_lifecycle_metrics.json: inference-perf stage report (0.1.0 format): without "
        "benchmark_time_seconds, and without a successful request to derive the stage's "
        "duration from (successes.count / throughput.requests_per_sec)")


@pytest.mark.parametrize(("path", "message"), [
    (INFERENCE_PERF / "0.1.0" / "summary_lifecycle_metrics.json",
     "summary_lifecycle_metrics.json: inference-perf summary report (0.1.0 format): a summary "
     "report mixes every stage's load into one figure"),
    (INFERENCE_PERF / "0.1.1" / "summary_lifecycle_metrics.json",
     "summary_lifecycle_metrics.json: inference-perf summary report (0.1.1 format)"),
    (KUBECON / "summary_lifecycle_metrics.json",
     "summary_lifecycle_metrics.json: inference-perf summary report (0.2 to 0.4 format)"),
    (KUBECON / "stage_2_prometheus_metrics.json",
     "stage_2_prometheus_metrics.json: inference-perf Prometheus report (0.2 to 0.4.0 format): "
     "it holds the server's metrics over a stage, not a point: import it with that stage's "
     "stage_N_lifecycle_metrics.json"),
    (KUBECON / "summary_prometheus_metrics.json",
     "summary_prometheus_metrics.json: inference-perf Prometheus report (0.2 to 0.4.0 format): "
     "it holds the server's metrics over the whole run"),
])  # fmt: skip
def test_an_inference_perf_file_that_is_no_point_is_refused_naming_what_it_is(path, message):
    with pytest.raises(ImportFileError) as refused:
        load_result_file(path)
    assert str(refused.value).startswith(message)


# ---------------------------------------------------------------------------------------------
# AIPerf's first releases, GuideLLM 0.3
# ---------------------------------------------------------------------------------------------


def test_an_early_aiperf_summary_keeps_its_records_map_figures():
    records = _json(AIPERF_EARLY / "profile_export_aiperf.json")["records"]
    [point] = load_result_file(AIPERF_EARLY / "profile_export_aiperf.json")
    assert point.metrics.completed == records["request_count"]["avg"] == 89
    assert point.metrics.failed == records["error_request_count"]["avg"] == 11
    assert point.metrics.duration == records["benchmark_duration"]["avg"]
    assert point.metrics.request_throughput == pytest.approx(records["request_throughput"]["avg"])
    assert point.metrics.output_throughput == pytest.approx(
        records["output_token_throughput"]["avg"])
    assert point.load.shape == "concurrency" and point.load.concurrency == 100
    assert point.provenance is not None
    assert point.provenance.checkpoint.model == "openai/gpt-oss-20b"
    assert "0.1 to 0.2 summary format (records map" in point.provenance.client_version
    assert point.peer is not None
    assert point.peer.figures["ttft.p99"] == records["ttft"]["p99"]


def test_early_aiperf_records_give_vllm_figures_from_their_own_timings():
    lines = [json.loads(line) for line in
             (AIPERF_EARLY / "profile_export.jsonl").read_text().splitlines()]  # fmt: skip
    [point] = load_result_file(AIPERF_EARLY / "profile_export.jsonl")
    ok = [line for line in lines if not line.get("error")]
    assert (point.metrics.completed, point.metrics.failed) == (len(ok), len(lines) - len(ok))
    ttfts = sorted(line["metrics"]["ttft"]["value"] for line in ok)
    assert point.metrics.mean_ttft_ms == pytest.approx(sum(ttfts) / len(ttfts))
    # Every generated token, the reasoning ones too (output_token_count leaves those out).
    assert point.metrics.total_output_tokens == sum(
        line["metrics"]["output_sequence_length"]["value"] for line in ok)


def test_a_guidellm_0_3_report_keeps_its_counts_and_says_its_format():
    benchmark = _json(GUIDELLM_03)["benchmarks"][0]
    [point] = load_result_file(GUIDELLM_03)
    totals = benchmark["request_totals"]
    assert point.metrics.completed == totals["successful"] == 46
    assert point.metrics.failed == totals["errored"] + totals["incomplete"]
    assert point.metrics.duration == benchmark["duration"]
    prompt = benchmark["metrics"]["prompt_token_count"]["successful"]["total_sum"]
    assert point.metrics.total_input_tokens == prompt
    assert point.load.shape == "concurrency" and point.load.concurrency == 1  # synchronous
    assert point.provenance is not None
    assert point.provenance.client_version == (
        "GuideLLM 0.3 report format (version not recorded in the file)")
    # The report kept one request of 46: too few for vLLM's statistics.
    assert point.metrics.median_ttft_ms is None
    assert any("a sample of its requests" in note for note in point.notes)


# ---------------------------------------------------------------------------------------------
# llm-d-benchmark's benchmark report, 0.1, 0.2 and 0.2.1
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["0.1", "0.2", "0.2.1"])
def test_an_llm_d_report_of_the_conference_stage_has_inference_perfs_figures(version):
    """llm-d-benchmark's own converter wrote these from the conference sweep's stage 4."""
    path = LLM_D / version / "kubecon_stage_4.yaml"
    document = yaml.safe_load(path.read_text())
    stage = _json(KUBECON / "stage_4_lifecycle_metrics.json")["successes"]
    [point] = load_result_file(path)
    assert point.metrics.completed == stage["count"] == 8933
    assert point.metrics.request_throughput == stage["throughput"]["requests_per_sec"]
    assert point.metrics.output_throughput == stage["throughput"]["output_tokens_per_sec"]
    # Converted from inference-perf: its latencies keep the report's names, never vLLM's.
    assert point.metrics.median_ttft_ms is None
    assert point.peer is not None and point.peer.tool == "llm-d-benchmark"
    assert point.peer.version == version
    latency = (document["metrics"] if version == "0.1"
               else document["results"]["request_performance"]["aggregate"])["latency"]
    assert point.peer.figures["latency.time_to_first_token.p99"] == (
        latency["time_to_first_token"]["p99"])
    assert point.peer.units["latency.time_to_first_token.p99"] == "s"
    assert point.provenance is not None
    assert point.provenance.client_version.startswith(
        f"llm-d-benchmark report {version} (load: inference-perf")


def test_the_llm_d_0_2_example_report_brings_its_stack_and_queue():
    [point] = load_result_file(LLM_D / "0.2" / "br_v0_2_example.yaml")
    assert point.provenance is not None
    assert point.provenance.checkpoint.model == "Qwen/Qwen3-0.6B"
    assert point.provenance.hardware.gpu_name == "NVIDIA-H100-80GB-HBM3"
    assert point.provenance.hardware.gpu_count == 8
    assert point.engine_config.max_model_len == 1024 and point.engine_config.block_size == 1024
    assert point.engine_config.tensor_parallel_size == 8
    assert any(note.startswith("stack: vllm-svc-0: inference_engine llm-d "
                               "ghcr.io/llm-d/llm-d-cuda:0.3.1, decode x2") for note in point.notes)
    assert any(note.startswith("stack: epp-0: generic llm-d-inference-scheduler")
               for note in point.notes)  # fmt: skip
    # The engine component's aggregates: running and waiting means, KV in percent.
    assert (point.queue.mean_running, point.queue.mean_waiting) == (24.6, 3.2)
    assert point.queue.mean_kv_usage == pytest.approx(0.425)
    assert point.peer is not None and point.peer.server is not None
    assert point.peer.server.kind == "summary" and point.peer.server.lacks == ["preemptions"]
    assert point.metrics.duration == pytest.approx(49.97206788184121)


def test_the_llm_d_0_1_example_reads_its_service_figures_as_the_queue():
    [point] = load_result_file(LLM_D / "0.1" / "br_v0_1_example.yaml")
    assert (point.metrics.completed, point.metrics.failed) == (31, 1)  # one incomplete
    assert point.queue.mean_running == 234.23049 and point.queue.mean_waiting == 234.12451
    assert point.queue.mean_kv_usage is None
    assert point.provenance is not None
    assert point.provenance.engine.name == "vllm" and point.provenance.engine.version == "0.9.0.1"


@pytest.mark.parametrize(("change", "message"), [
    ({"version": "0.3"}, "llm-d-benchmark report 0.3: Headroom reads benchmark report versions "
     "0.1, 0.2 and 0.2.1"),
    ({"run": {"uid": "x"}}, "llm-d-benchmark report 0.2: without a duration (run.time.duration) "
     "and without a request rate to derive it from"),
])  # fmt: skip
def test_an_llm_d_report_that_cannot_be_read_says_which_and_why(tmp_path, change, message):
    document = yaml.safe_load((LLM_D / "0.2" / "br_v0_2_example.yaml").read_text())
    document |= change
    if "run" in change:
        del document["results"]["request_performance"]["aggregate"]["throughput"]
    path = tmp_path / "report.yaml"
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(ImportFileError) as refused:
        load_result_file(path)
    assert str(refused.value) == f"report.yaml: {message}"


def test_yaml_aliases_are_refused_in_a_report(tmp_path):
    path = tmp_path / "report.yaml"
    path.write_text("version: '0.2'\nrun: &r {uid: a}\nresults: *r\n")
    with pytest.raises(ImportFileError, match="may not use YAML aliases"):
        load_result_file(path)
