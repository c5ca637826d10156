"""Other clients' files through the upload page and manage.py import_results, and what the run
page then says: the tool's figures under its names, vLLM's only where Headroom computed them."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from benchmarks.models import Benchmark
from tests.runner.importer.test_peer_files import AIPERF_RECORDS, GUIDELLM, STAGE_0

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
