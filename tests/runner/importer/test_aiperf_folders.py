"""An AIPerf artifact folder (and a .zip of it) imports as one point a run: the requests from
profile_export.jsonl, the version, load and model from profile_export_aiperf.json with its
figures cross-checked against the records, the GPU readings of gpu_telemetry_export.jsonl and
the queue of server_metrics_export.json; a file that does not fit is named."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from runner.importer.aiperf_server import SOURCE
from runner.importer.files import load_result_file
from runner.importer.peers import flat_figures
from runner.importer.vllm_document import ImportFileError

PEERS = Path(__file__).parents[2] / "data" / "peers" / "aiperf"
# AIPerf 0.13 with --gpu-telemetry (tests/runner/importer/peer_files/, peer_tools.py): its
# summary, its 24 records whole, and its GPU readings, as it wrote them.
TELEMETRY = Path(__file__).parent / "peer_files" / "aiperf_telemetry"
SUMMARY = "profile_export_aiperf.json"
RECORDS = "profile_export.jsonl"
SERVER = "server_metrics_export.json"
READINGS = "gpu_telemetry_export.jsonl"


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


def test_an_aiperf_folder_is_one_point_with_its_requests_and_its_summary():
    summary = _json(TELEMETRY / SUMMARY)
    [point] = load_result_file(TELEMETRY)
    [alone] = load_result_file(TELEMETRY / RECORDS, companion=TELEMETRY / READINGS)
    # The requests and vLLM's figures are the records'; the GPU readings are summarised over them.
    assert len(point.requests) == summary["completed_request_count"]["avg"] == 24
    assert point.metrics == alone.metrics
    assert point.telemetry.gpus == alone.telemetry.gpus and point.telemetry.source == "aiperf-dcgm"
    assert f"(aiperf_telemetry/{READINGS})" in point.telemetry.notes[-1]
    assert point.metrics.p99_ttft_ms == pytest.approx(summary["time_to_first_token"]["p99"])
    # What only the summary holds: the version, the load AIPerf ran, the model, its figures.
    assert point.provenance is not None
    assert point.provenance.client_version == "NVIDIA AIPerf 0.13.0"
    assert point.provenance.checkpoint.model == "tiny"
    assert point.provenance.started_at == summary["start_time"]
    assert (point.load.shape, point.load.concurrency, point.load.num_requests) == (
        "concurrency", 4, 24)
    assert point.peer is not None and point.peer.version == "0.13.0"
    assert point.peer.file == "aiperf_telemetry"
    for name in ("time_to_first_token", "request_latency", "output_token_throughput"):
        for statistic, value in flat_figures(summary[name]).items():
            assert point.peer.figures[f"{name}.{statistic}"] == value
    assert point.peer.figures["usage_completion_tokens.sum"] == (
        summary["total_usage_completion_tokens"]["avg"])
    # Neither file's "not in this file" notes: the other file had it.
    assert not any("not in the per-request file" in note or "no per-request data" in note
                   for note in point.notes)  # fmt: skip
    assert any(note.startswith("read as one run: aiperf_telemetry/profile_export_aiperf.json")
               for note in point.notes)  # fmt: skip


def test_a_zip_of_an_aiperf_folder_imports_as_the_folder(tmp_path):
    archive = tmp_path / "aiperf.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for path in sorted(TELEMETRY.iterdir()):
            zipped.write(path, f"artifacts/tiny-openai-completions-concurrency4/{path.name}")
    [point] = load_result_file(archive)
    [folder] = load_result_file(TELEMETRY)
    assert point.peer is not None
    assert point.peer.file == "aiperf.zip/artifacts/tiny-openai-completions-concurrency4"
    assert point.metrics == folder.metrics and point.load == folder.load
    assert len(point.requests) == 24 and point.telemetry.source == "aiperf-dcgm"


def test_a_whole_aiperf_folder_gives_requests_queue_and_gpu_telemetry_in_one_point():
    # AIPerf 0.13's folder as it wrote it (README.md): the four files Headroom reads beside
    # inputs.json, the CSV copy and .aiperf_results_ready.json, which are not read.
    folder = PEERS / "0.13-folder"
    summary, export = _json(folder / SUMMARY), _json(folder / SERVER)
    [point] = load_result_file(folder)
    assert point.provenance is not None
    assert point.provenance.client_version == "NVIDIA AIPerf 0.13.0"
    assert len(point.requests) == summary["completed_request_count"]["avg"] == 16
    assert point.load.concurrency == 8
    assert point.metrics.median_ttft_ms == pytest.approx(summary["time_to_first_token"]["p50"])
    readings = (folder / READINGS).read_text().splitlines()
    assert len(point.telemetry_samples) == len(readings) and point.telemetry.source == "aiperf-dcgm"
    assert point.telemetry.gpus and point.telemetry.energy_j is not None
    waiting = export["metrics"]["vllm:num_requests_waiting"]["series"][0]["stats"]
    assert (point.queue.mean_waiting, point.queue.peak_waiting) == (waiting["avg"], waiting["max"])
    assert point.peer is not None and point.peer.server is not None
    assert point.peer.server.file == f"0.13-folder/{SERVER}" and point.peer.server.lacks == []
    assert point.peer.figures["server.vllm:num_requests_running.max"] == (
        export["metrics"]["vllm:num_requests_running"]["series"][0]["stats"]["max"])
    # AIPerf's own GPU statistics stay under its names beside Headroom's from the readings.
    [endpoint] = summary["telemetry_data"]["endpoints"].values()
    power = endpoint["gpus"]["gpu_0"]["metrics"]["nvidia_power_usage"]
    assert point.peer.figures["gpu_telemetry.gpu_0.nvidia_power_usage.max"] == power["max"]


def test_records_that_do_not_match_the_summary_are_refused_naming_both():
    # The 0.8 folder keeps 8 of its 96 records (tests/data/peers/aiperf/README.md).
    with pytest.raises(ImportFileError, match=(
        r"^0\.8/profile_export_aiperf\.json counts 96 completed requests, "
        r"0\.8/profile_export\.jsonl holds 8 in AIPerf's profiling phase: they are not of the "
        r"same run \(or the records were cut short\); import each file alone$")):
        load_result_file(PEERS / "0.8")


def test_token_totals_that_do_not_match_are_refused(tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(TELEMETRY, folder)
    summary = _json(folder / SUMMARY)
    summary["total_isl"]["avg"] += 1
    (folder / SUMMARY).write_text(json.dumps(summary))
    with pytest.raises(ImportFileError, match=(
        r"run/profile_export_aiperf\.json counts 1537 prompt tokens \(AIPerf's count\), "
        r"run/profile_export\.jsonl holds 1536")):
        load_result_file(folder)


def test_a_broken_file_of_the_folder_is_named(tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(TELEMETRY, folder)
    lines = (folder / READINGS).read_text().splitlines()
    (folder / READINGS).write_text("\n".join([*lines[:2], lines[2][:40]]) + "\n")
    with pytest.raises(ImportFileError, match=r"^run/gpu_telemetry_export\.jsonl:3: not valid JSON"):
        load_result_file(folder)
    shutil.copy(TELEMETRY / READINGS, folder / READINGS)
    lines = (folder / RECORDS).read_text().splitlines()
    (folder / RECORDS).write_text("\n".join([*lines[:5], lines[5][:60]]) + "\n")
    with pytest.raises(ImportFileError, match=r"^run/profile_export\.jsonl:6: not valid JSON"):
        load_result_file(folder)


def test_a_folder_with_records_and_server_metrics_but_no_summary_has_the_queue(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    shutil.copy(TELEMETRY / RECORDS, folder / RECORDS)
    shutil.copy(PEERS / "0.13-server-metrics" / SERVER, folder / SERVER)
    export = _json(folder / SERVER)
    [point] = load_result_file(folder)
    waiting = export["metrics"]["vllm:num_requests_waiting"]["series"][0]["stats"]
    assert point.queue.mean_waiting == waiting["avg"]
    assert point.peer is not None and point.peer.server is not None
    assert point.peer.server.tool == SOURCE and point.peer.server.file == f"run/{SERVER}"
    assert len(point.requests) == 24


def test_a_folder_of_several_aiperf_runs_is_a_point_a_run(tmp_path):
    for run in ("run_0001", "run_0002"):
        shutil.copytree(TELEMETRY, tmp_path / "profile_runs" / run)
    points = load_result_file(tmp_path / "profile_runs")
    assert [p.peer.file for p in points if p.peer] == [
        "profile_runs/run_0001", "profile_runs/run_0002"]


def test_another_tools_file_under_aiperfs_name_is_refused(tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(TELEMETRY, folder)
    vllm = Path(__file__).parents[2] / "data" / "peers" / "vllm" / "0.9.2" / "append.json"
    shutil.copy(vllm, folder / RECORDS)
    (folder / READINGS).unlink()  # else the readings are refused first, with that file
    with pytest.raises(ImportFileError, match=(
            r"^run/profile_export\.jsonl: not AIPerf's file, though it has AIPerf's name$")):
        load_result_file(folder)
