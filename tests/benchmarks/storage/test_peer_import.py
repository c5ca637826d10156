"""Other clients' files through the upload page and manage.py import_results, and what the run
page then says: the tool's figures under its names, vLLM's only where Headroom computed them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from benchmarks.models import Benchmark
from benchmarks.storage.points import point_to_result
from runner.importer.files import load_result_file
from tests.benchmarks.storage.test_import import status_page
from tests.runner.importer.test_peer_files import (
    AIPERF_RECORDS,
    GUIDELLM,
    STAGE_0,
    TELEMETRY,
    TELEMETRY_READINGS,
    TELEMETRY_RECORDS,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("run_imports_inline")]


def _upload(client, path):
    upload = SimpleUploadedFile(path.name, path.read_bytes())
    assert client.post("/runs/import/", {"file": upload}).status_code == 302
    return Benchmark.objects.get()


def test_a_guidellm_sweep_uploads_as_one_run_of_two_points_with_its_figures(owner_client):
    benchmark = _upload(owner_client, GUIDELLM)
    points = list(benchmark.points.order_by("id"))
    assert [p.source for p in points] == ["guidellm-import", "guidellm-import"]
    report = json.loads(GUIDELLM.read_text())
    p99 = report["benchmarks"][1]["metrics"]["time_to_first_token_ms"]["successful"][
        "percentiles"
    ]["p99"]
    assert points[1].peer["figures"]["time_to_first_token_ms.successful.percentiles.p99"] == p99
    assert points[1].caveats.filter(code="peer-import").exists()

    page = owner_client.get(f"/runs/{benchmark.code}/").content.decode()
    assert "GuideLLM&#x27;s own figures" in page
    assert "<code>time_to_first_token_ms.successful.percentiles.p99</code>" in page
    assert f"{p99:.3f}".rstrip("0") in page
    assert "imported from GuideLLM, whose result file holds the client&#x27;s figures" in page


def test_an_inference_perf_stage_shows_no_vllm_latency_it_does_not_have(owner_client):
    benchmark = _upload(owner_client, STAGE_0)
    point = benchmark.points.get()
    assert point.source == "inference-perf-import"
    assert point.p99_ttft_ms is None and point.median_tpot_ms is None
    page = owner_client.get(f"/runs/{benchmark.code}/").content.decode()
    assert "inference-perf&#x27;s own figures" in page
    assert "version not recorded" in page


def test_the_command_imports_aiperf_records_with_their_requests(tmp_path, capsys):
    call_command("import_results", str(AIPERF_RECORDS))
    point = Benchmark.objects.get().points.get()
    assert point.source == "aiperf-import"
    assert point.data.request_count == len(AIPERF_RECORDS.read_text().splitlines())
    assert point.p99_ttft_ms is not None
    assert "/runs/" in capsys.readouterr().out


# AIPerf's GPU telemetry file, sent with the per-request records of the same run.


def test_aiperf_records_upload_with_their_telemetry_file_as_headroom_telemetry(
    owner_client, run_imports_inline
):
    records = SimpleUploadedFile(TELEMETRY_RECORDS.name, TELEMETRY_RECORDS.read_bytes())
    readings = SimpleUploadedFile(TELEMETRY_READINGS.name, TELEMETRY_READINGS.read_bytes())
    response = owner_client.post("/runs/import/", {"file": records, "companion": readings})
    result_import, status = status_page(owner_client, response)
    assert result_import.state == "succeeded", result_import.error_message
    assert result_import.telemetry_file_name == "gpu_telemetry_export.jsonl"
    assert result_import.size == (TELEMETRY_RECORDS.stat().st_size
                                  + TELEMETRY_READINGS.stat().st_size)
    assert "Import of profile_export.jsonl with gpu_telemetry_export.jsonl" in status
    assert list(run_imports_inline.iterdir()) == []  # both stored files are gone

    # The same point the runner's loader makes from the two files.
    [expected] = load_result_file(TELEMETRY_RECORDS, companion=TELEMETRY_READINGS)
    point = result_import.benchmark.points.get()
    stored = point_to_result(point)
    assert stored.telemetry == expected.telemetry and stored.telemetry.source == "aiperf-dcgm"
    assert stored.telemetry_samples == expected.telemetry_samples
    assert len(stored.telemetry_samples) == len(TELEMETRY_READINGS.read_text().splitlines())
    assert "dcgm-exporter" in point.caveats.get(code="peer-import").text
    page = owner_client.get(f"/runs/{result_import.benchmark.code}/").content.decode()
    assert "J/output token" in page


def test_a_telemetry_file_with_any_other_file_is_refused_by_name(owner_client):
    report = SimpleUploadedFile(GUIDELLM.name, GUIDELLM.read_bytes())
    readings = SimpleUploadedFile(TELEMETRY_READINGS.name, TELEMETRY_READINGS.read_bytes())
    response = owner_client.post("/runs/import/", {"file": report, "companion": readings})
    result_import, status = status_page(owner_client, response)
    assert result_import.state == "failed"
    assert (f"Cannot import {GUIDELLM.name}: NVIDIA AIPerf&#x27;s GPU telemetry "
            "gpu_telemetry_export.jsonl is read only with AIPerf&#x27;s per-request file, "
            "profile_export.jsonl, not with GuideLLM 0.8.1") in status
    assert not Benchmark.objects.exists()


def test_a_broken_telemetry_file_fails_the_import_naming_its_line(owner_client, tmp_path):
    lines = TELEMETRY_READINGS.read_text().splitlines()
    broken = "\n".join([*lines[:2], "{not json", *lines[3:]]).encode()
    records = SimpleUploadedFile(TELEMETRY_RECORDS.name, TELEMETRY_RECORDS.read_bytes())
    readings = SimpleUploadedFile("gpu.jsonl", broken)
    response = owner_client.post("/runs/import/", {"file": records, "companion": readings})
    result_import, status = status_page(owner_client, response)
    assert result_import.state == "failed"
    assert "gpu.jsonl:3: not valid JSON" in status
    assert not Benchmark.objects.exists()


def test_the_command_takes_aiperf_telemetry_with_one_records_file(capsys):
    call_command("import_results", str(TELEMETRY_RECORDS),
                 "--aiperf-telemetry", str(TELEMETRY_READINGS))  # fmt: skip
    stored = point_to_result(Benchmark.objects.get().points.get())
    assert stored.telemetry.source == "aiperf-dcgm"
    assert len(stored.telemetry_samples) == len(TELEMETRY_READINGS.read_text().splitlines())


@pytest.mark.parametrize(
    ("files", "telemetry", "message"),
    [
        ([TELEMETRY_RECORDS, AIPERF_RECORDS], TELEMETRY_READINGS,
         "--companion goes with one file, the result it came with (AIPerf's "
         "profile_export.jsonl, an inference-perf stage report); 2 were given"),
        ([TELEMETRY_RECORDS], TELEMETRY.parent / "missing.jsonl", "missing.jsonl: no such file"),
        ([STAGE_0], TELEMETRY_READINGS, "is read only with AIPerf's per-request file"),
    ],
)
def test_the_command_refuses_telemetry_it_cannot_use(files, telemetry, message):
    with pytest.raises(CommandError, match=re.escape(message)):
        call_command("import_results", *map(str, files), "--aiperf-telemetry", str(telemetry))
    assert not Benchmark.objects.exists()


def test_the_command_takes_aiperfs_server_metrics_with_its_summary():
    folder = Path(__file__).parents[2] / "data" / "peers" / "aiperf" / "0.13-server-metrics"
    export = json.loads((folder / "server_metrics_export.json").read_text())
    waiting = export["metrics"]["vllm:num_requests_waiting"]["series"][0]["stats"]
    call_command("import_results", str(folder / "profile_export_aiperf.json"),
                 "--companion", str(folder / "server_metrics_export.json"))  # fmt: skip
    stored = point_to_result(Benchmark.objects.get().points.get())
    assert stored.queue.mean_waiting == waiting["avg"]
    assert stored.queue.peak_waiting == waiting["max"]
    assert stored.peer is not None and stored.peer.server is not None
    assert stored.peer.server.tool == "AIPerf's server metrics scrape"
