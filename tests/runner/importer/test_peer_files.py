"""Files the real AIPerf 0.13, GuideLLM 0.8.1 and inference-perf 0.7 wrote against the CPU
engine (peer_files/, recorded by peer_tools.py): what each import keeps, under which names, and
the clear refusal of a bad or mixed file; AIPerf's GPU telemetry (peer_files/aiperf_telemetry/)."""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

import pytest

from analysis.caveats import automatic_caveats
from runner.importer.files import load_result_file
from runner.importer.vllm_document import ImportFileError
from runner.schema.result import Metrics
from tests.rows import make_point_result

FILES = Path(__file__).parent / "peer_files"
AIPERF_SUMMARY = FILES / "profile_export_aiperf.json"
AIPERF_RECORDS = FILES / "profile_export.jsonl"
GUIDELLM = FILES / "guidellm_benchmarks.json"
STAGE_0 = FILES / "stage_0_lifecycle_metrics.json"
VLLM_LATENCY_FIELDS = [
    name for name in Metrics.model_fields if name.endswith("_ms") and "_sched_" not in name
]


def test_an_aiperf_summary_keeps_aiperf_figures_and_no_vllm_latency():
    summary = json.loads(AIPERF_SUMMARY.read_text())
    [point] = load_result_file(AIPERF_SUMMARY)
    assert point.peer is not None
    assert point.peer.figures["time_to_first_token.p99"] == summary["time_to_first_token"]["p99"]
    assert point.peer.units["time_to_first_token.p99"] == "ms"
    assert point.peer.figures["inter_token_latency.avg"] == summary["inter_token_latency"]["avg"]
    # None of AIPerf's latency statistics takes a vLLM name: the summary has no requests.
    assert all(getattr(point.metrics, name) is None for name in VLLM_LATENCY_FIELDS)
    assert point.metrics.duration == summary["benchmark_duration"]["avg"]
    assert point.metrics.output_throughput == pytest.approx(
        summary["total_usage_completion_tokens"]["avg"] / summary["benchmark_duration"]["avg"]
    )
    assert point.load.shape == "concurrency" and point.load.concurrency == 4


def test_aiperf_records_give_vllm_figures_equal_to_aiperf_where_defined_alike():
    summary = json.loads(AIPERF_SUMMARY.read_text())
    [point] = load_result_file(AIPERF_RECORDS)
    assert len(point.requests) == summary["completed_request_count"]["avg"]
    assert point.metrics.median_ttft_ms == pytest.approx(summary["time_to_first_token"]["p50"])
    assert point.metrics.p99_ttft_ms == pytest.approx(summary["time_to_first_token"]["p99"])
    assert point.metrics.p99_e2el_ms == pytest.approx(summary["request_latency"]["p99"])
    assert point.metrics.total_output_tokens == summary["total_usage_completion_tokens"]["avg"]
    # Headroom's own figures need what AIPerf does not record: left empty, not copied.
    assert point.metrics.p99_sched_ttft_ms is None and point.metrics.mean_token_itl_ms is None
    # Four in flight at most, as AIPerf's --concurrency 4 allowed.
    assert point.load.concurrency == 4


def test_aiperf_warmup_records_are_left_out(tmp_path):
    lines = AIPERF_RECORDS.read_text().splitlines()
    warm = json.loads(lines[0])
    warm["metadata"]["benchmark_phase"] = "warmup"
    edited = tmp_path / "profile_export.jsonl"
    edited.write_text("\n".join([json.dumps(warm), *lines[1:]]) + "\n")
    [point] = load_result_file(edited)
    assert point.metrics.completed == len(lines) - 1


def test_an_aiperf_error_record_is_a_failed_request(tmp_path):
    lines = AIPERF_RECORDS.read_text().splitlines()
    failed = json.loads(lines[3])
    failed["error"] = {"code": 500, "type": "HTTPError", "message": "Internal Server Error"}
    edited = tmp_path / "profile_export.jsonl"
    edited.write_text("\n".join([*lines[:3], json.dumps(failed), *lines[4:]]) + "\n")
    [point] = load_result_file(edited)
    assert (point.metrics.completed, point.metrics.failed) == (len(lines) - 1, 1)
    assert "Internal Server Error" in {r.error for r in point.requests}
    assert not point.metrics.valid


def test_a_cut_aiperf_record_line_is_named(tmp_path):
    lines = AIPERF_RECORDS.read_text().splitlines()
    cut = tmp_path / "profile_export.jsonl"
    cut.write_text("\n".join([*lines[:5], lines[5][:40]]) + "\n")
    with pytest.raises(ImportFileError, match=r"profile_export\.jsonl:6: not valid JSON"):
        load_result_file(cut)


def test_a_guidellm_sweep_is_a_point_per_benchmark_with_guidellm_percentiles_apart():
    report = json.loads(GUIDELLM.read_text())
    points = load_result_file(GUIDELLM)
    assert [p.load.concurrency for p in points] == [1, 4]
    second = report["benchmarks"][1]["metrics"]["time_to_first_token_ms"]["successful"]
    figures = points[1].peer.figures if points[1].peer else {}
    assert figures["time_to_first_token_ms.successful.percentiles.p99"] == (
        second["percentiles"]["p99"]
    )
    # GuideLLM's p99 of 12 requests is its largest; numpy's (vLLM's) interpolates below it.
    assert points[1].metrics.p99_ttft_ms is not None
    assert points[1].metrics.p99_ttft_ms < second["percentiles"]["p99"]
    assert points[1].metrics.mean_ttft_ms == pytest.approx(second["mean"])
    assert points[1].provenance is not None
    assert points[1].provenance.client_version == "GuideLLM 0.8.1"


def test_a_sampled_guidellm_report_keeps_only_its_counts(tmp_path):
    report = json.loads(GUIDELLM.read_text())
    report["benchmarks"][0]["requests"]["successful"] = report["benchmarks"][0]["requests"][
        "successful"
    ][:5]
    sampled = tmp_path / "benchmarks.json"
    sampled.write_text(json.dumps(report))
    first = load_result_file(sampled)[0]
    assert first.metrics.completed == 12 and first.metrics.median_ttft_ms is None
    assert any("a sample of its requests" in note for note in first.notes)


def test_an_inference_perf_stage_counts_the_servers_tokens_not_retokenized_text():
    stage = json.loads(STAGE_0.read_text())
    [point] = load_result_file(STAGE_0)
    successes = stage["successes"]
    assert point.load.rate == stage["load_summary"]["requested_rate"]
    assert point.metrics.total_output_tokens == successes["output_tokens"]["total"]
    # inference-perf's own throughput counts re-tokenized text: here more tokens than served.
    own = successes["throughput"]["output_tokens_per_sec"]
    assert own > point.metrics.output_throughput * 1.2
    assert point.peer is not None
    assert point.peer.figures["successes.throughput.output_tokens_per_sec"] == own
    assert point.peer.version is None
    assert all(getattr(point.metrics, name) is None for name in VLLM_LATENCY_FIELDS)


def test_the_inference_perf_summary_of_all_stages_is_refused():
    with pytest.raises(ImportFileError, match="import the per-stage reports"):
        load_result_file(FILES / "summary_lifecycle_metrics.json")


def test_an_aiperf_summary_without_its_duration_is_refused(tmp_path):
    summary = json.loads(AIPERF_SUMMARY.read_text())
    del summary["benchmark_duration"]
    broken = tmp_path / "profile_export_aiperf.json"
    broken.write_text(json.dumps(summary))
    with pytest.raises(ImportFileError, match="has no benchmark_duration"):
        load_result_file(broken)


def test_every_recorded_file_imports(tmp_path):
    for path in [*FILES.iterdir(), TELEMETRY_SUMMARY, TELEMETRY_RECORDS]:
        if path.name.startswith("summary_") or path.is_dir():
            continue
        copy = tmp_path / path.name
        shutil.copy(path, copy)
        assert load_result_file(copy), path.name


# AIPerf with --gpu-telemetry, scraping the hand-written dcgm-exporter page of dcgm_page.py
# (two H200s; no GPU here): its summary, per-request records and telemetry readings.
TELEMETRY = FILES / "aiperf_telemetry"
TELEMETRY_SUMMARY = TELEMETRY / "profile_export_aiperf.json"
TELEMETRY_RECORDS = TELEMETRY / "profile_export.jsonl"
TELEMETRY_READINGS = TELEMETRY / "gpu_telemetry_export.jsonl"


def test_aiperf_telemetry_summary_keeps_aiperf_gpu_figures_under_its_names():
    summary = json.loads(TELEMETRY_SUMMARY.read_text())
    [point] = load_result_file(TELEMETRY_SUMMARY)
    [endpoint] = summary["telemetry_data"]["endpoints"].values()
    assert point.peer is not None
    for gpu_key, gpu in endpoint["gpus"].items():
        for metric, stats in gpu["metrics"].items():
            for statistic, value in stats.items():
                if statistic != "unit":
                    name = f"gpu_telemetry.{gpu_key}.{metric}.{statistic}"
                    assert point.peer.figures[name] == value
                    assert point.peer.units[name] == stats["unit"]
    # AIPerf's plain means and its energy from the scrape before the phase are not Headroom's
    # time-weighted means and window energy: no Headroom figure, and the source is named.
    assert point.telemetry.source == "aiperf-dcgm"
    assert point.telemetry.gpus == [] and point.telemetry.energy_j is None
    readings = sum(gpu["metrics"]["nvidia_power_usage"]["count"] for gpu in endpoint["gpus"].values())
    assert point.telemetry.samples == 0 and point.telemetry_samples == []  # none in the file
    assert f"({readings} GPU readings in its profiling phase)" in point.telemetry.notes[0]
    assert "dcgm-exporter" in point.telemetry.notes[0]
    assert point.peer.figures["nvidia_total_gpu_energy.avg"] == (
        summary["nvidia_total_gpu_energy"]["avg"]
    )


def test_aiperf_readings_with_the_records_give_headroom_telemetry_over_the_window():
    summary = json.loads(TELEMETRY_SUMMARY.read_text())
    [point] = load_result_file(TELEMETRY_RECORDS, companion=TELEMETRY_READINGS)
    telemetry = point.telemetry
    assert telemetry.source == "aiperf-dcgm"
    assert len(point.telemetry_samples) == len(TELEMETRY_READINGS.read_text().splitlines())
    # Hand-checked against the page (dcgm_page.py): GPU 0's FB_USED is 130412 MiB, which AIPerf
    # wrote as 136.746893312 GB; its first scrape was the page's second refresh (455.25 W, 93 %).
    first = point.telemetry_samples[0]
    assert (first.gpu, first.power_w, first.utilization_pct) == (0, 455.25, 93.0)
    assert first.memory_used_mib == pytest.approx(130412)
    assert first.energy_j == pytest.approx(31_035_687_828 / 1000)  # mJ on the page, J here
    assert first.sm_clock_mhz is None  # AIPerf does not read DCGM_FI_DEV_SM_CLOCK
    gpus = summary["telemetry_data"]["endpoints"]["127.0.0.1:43973"]["gpus"]
    for gpu in telemetry.gpus:
        aiperf = gpus[f"gpu_{gpu.gpu}"]["metrics"]
        # Constant while serving: Headroom's time-weighted mean is AIPerf's plain mean.
        assert gpu.mean_memory_used_mib == pytest.approx(
            aiperf["nvidia_memory_used"]["avg"] / 1.048576e-3
        )
        assert gpu.peak_power_w == aiperf["nvidia_power_usage"]["max"]
        assert gpu.energy_method == "counter" and gpu.energy_j is not None
        # Over the window only, so less than AIPerf's energy from the scrape before the phase.
        aiperf_j = aiperf["nvidia_energy_consumption"]["avg"] * 1e6
        assert 0.9 * aiperf_j < gpu.energy_j < aiperf_j
    assert telemetry.window_s == pytest.approx(point.metrics.duration)
    assert telemetry.joules_per_output_token == pytest.approx(
        telemetry.energy_j / point.metrics.total_output_tokens
    )


def test_aiperf_records_with_chunk_gaps_give_aiperfs_itl_and_tpot():
    # AIPerf's inter_chunk_latency gaps are vLLM's ITL, and its per-request
    # inter_token_latency is vLLM's TPOT ((latency - TTFT) / (tokens - 1)). The main
    # fixture's chunks all came at once (every gap 0 ms); these records have real gaps.
    documents = [json.loads(line) for line in TELEMETRY_RECORDS.read_text().splitlines()]
    gaps = [gap for d in documents for gap in d["metrics"]["inter_chunk_latency"]["value"]]
    tpots = [d["metrics"]["inter_token_latency"]["value"] for d in documents]
    assert sum(gap > 0 for gap in gaps) > len(gaps) // 2
    [point] = load_result_file(TELEMETRY_RECORDS)
    assert point.metrics.completed == len(documents)
    assert point.metrics.mean_itl_ms == pytest.approx(statistics.fmean(gaps))
    assert point.metrics.median_itl_ms == pytest.approx(statistics.median(gaps))
    assert point.metrics.mean_tpot_ms == pytest.approx(statistics.fmean(tpots))
    assert point.metrics.median_tpot_ms == pytest.approx(statistics.median(tpots))


def test_an_aiperf_export_without_telemetry_has_none():
    [summary] = load_result_file(AIPERF_SUMMARY)
    [records] = load_result_file(AIPERF_RECORDS)
    for point in (summary, records):
        assert point.telemetry.source is None and point.telemetry_samples == []
        assert point.peer is not None
        assert not any(name.startswith("gpu_telemetry.") for name in point.peer.figures)


def test_a_malformed_aiperf_telemetry_file_is_named_and_refused_whole(tmp_path):
    lines = TELEMETRY_READINGS.read_text().splitlines()
    reading = json.loads(lines[2])
    reading["telemetry_data"]["nvidia_power_usage"] = "high"
    broken = tmp_path / "gpu_telemetry_export.jsonl"
    broken.write_text("\n".join([*lines[:2], json.dumps(reading), *lines[3:]]) + "\n")
    with pytest.raises(ImportFileError, match=r"gpu_telemetry_export\.jsonl:3: .*nvidia_power_usage"):
        load_result_file(TELEMETRY_RECORDS, companion=broken)
    broken.write_text("\n".join([*lines[:4], lines[4][:50]]) + "\n")
    with pytest.raises(ImportFileError, match=r"gpu_telemetry_export\.jsonl:5: not valid JSON"):
        load_result_file(TELEMETRY_RECORDS, companion=broken)
    # -1 is storage's marker of a missing GPU (a CPU reading): it would read back as none.
    reading = {**json.loads(lines[2]), "gpu_index": -1}
    broken.write_text("\n".join([*lines[:2], json.dumps(reading), *lines[3:]]) + "\n")
    with pytest.raises(ImportFileError, match=r"jsonl:3: gpu_index must be an integer >= 0, got -1"):
        load_result_file(TELEMETRY_RECORDS, companion=broken)
    # The records themselves are untouched: they still import whole without the telemetry file.
    [point] = load_result_file(TELEMETRY_RECORDS)
    assert point.metrics.completed == json.loads(TELEMETRY_SUMMARY.read_text())[
        "completed_request_count"
    ]["avg"]


def test_aiperf_telemetry_goes_only_with_the_per_request_file():
    with pytest.raises(ImportFileError, match="only with AIPerf's per-request file"):
        load_result_file(TELEMETRY_SUMMARY, companion=TELEMETRY_READINGS)


def test_the_caveat_says_the_gpu_figures_are_aiperfs_dcgm_scrape():
    [with_telemetry] = load_result_file(TELEMETRY_RECORDS, companion=TELEMETRY_READINGS)
    [without] = load_result_file(AIPERF_RECORDS)
    said = {code: text for code, _, text in automatic_caveats(with_telemetry, imported=True)}
    assert "AIPerf's scrape of a dcgm-exporter" in said["peer-import"]
    assert "dcgm-exporter" not in dict((c, t) for c, _, t in automatic_caveats(without, imported=True))["peer-import"]


def test_telemetry_with_a_headroom_file_is_refused_before_it_is_read(tmp_path):
    results = tmp_path / "sweep.jsonl"
    results.write_text(make_point_result().model_dump_json() + "\n")
    missing = tmp_path / "gpu_telemetry_export.jsonl"  # never opened: the refusal comes first
    with pytest.raises(ImportFileError, match="a Headroom results file has none"):
        load_result_file(results, companion=missing)
