"""An AIPerf artifact folder through manage.py import_results, and a .zip of it through the upload
page: one stored point with its requests, its GPU readings and its server metrics queue."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from benchmarks.models import Benchmark
from benchmarks.storage.points import point_to_result
from tests.benchmarks.storage.test_import import status_page

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("run_imports_inline")]

# AIPerf 0.13's artifact folder (tests/data/peers/aiperf/README.md).
FOLDER = Path(__file__).parents[2] / "data" / "peers" / "aiperf" / "0.13-folder"


def _check(benchmark: Benchmark) -> None:
    summary = json.loads((FOLDER / "profile_export_aiperf.json").read_text())
    stored = point_to_result(benchmark.points.get())
    assert len(stored.requests) == summary["completed_request_count"]["avg"] == 16
    assert stored.peer is not None and stored.peer.version == "0.13.0"
    assert stored.peer.server is not None
    assert stored.peer.server.tool == "AIPerf's server metrics scrape"
    assert stored.telemetry.source == "aiperf-dcgm" and stored.telemetry_samples


def test_the_command_imports_an_aiperf_folder_as_one_point(capsys):
    call_command("import_results", str(FOLDER))
    assert "1 point(s)" in capsys.readouterr().out
    _check(Benchmark.objects.get())


def test_the_page_imports_a_zip_of_an_aiperf_folder_as_one_point(owner_client):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(FOLDER.iterdir()):
            archive.write(path, f"artifacts/tiny-openai-completions-concurrency8/{path.name}")
    upload = SimpleUploadedFile("aiperf.zip", buffer.getvalue())
    result_import, _ = status_page(owner_client, owner_client.post("/runs/import/",
                                                                   {"file": upload}))
    assert result_import.state == "succeeded", result_import.error_message
    _check(result_import.benchmark)
