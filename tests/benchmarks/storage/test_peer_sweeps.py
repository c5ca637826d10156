"""A peer tool's sweep with its server-side evidence, through the command and the upload page,
judged on the run page; a run exported as llm-d-benchmark's report and imported back."""

from __future__ import annotations

import io
import json
import zipfile

import jsonschema
import pytest
import yaml
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from benchmarks.models import Benchmark
from benchmarks.storage.imports import import_points
from benchmarks.storage.points import point_to_result
from tests.benchmarks.storage.test_import import status_page
from tests.runner.importer.test_peer_versions import KUBECON
from tests.runner.test_llm_d_export import QUEUE_FIGURES, point, schema

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("run_imports_inline")]

DIAGNOSIS = ("no limit (underloaded) from rate 1.0/s x 60 to rate 74.94/s x 4496 (nothing "
             "waits); an unclear limit from rate 111.92/s x 6715 on; saturated from rate "
             "148.89/s x 8933 on")  # fmt: skip


def _zip_of_folder() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(KUBECON.iterdir()):
            archive.write(path, f"results/{path.name}")
    return buffer.getvalue()


def test_the_command_imports_an_inference_perf_folder_as_one_judged_sweep(owner_client, capsys):
    call_command("import_results", str(KUBECON))
    benchmark = Benchmark.objects.get()
    points = list(benchmark.points.order_by("id"))
    assert len(points) == 7 and "7 point(s)" in capsys.readouterr().out
    assert points[4].queue["mean_waiting"] == 155
    assert points[4].peer["server"]["tool"] == "inference-perf's Prometheus report"
    page = owner_client.get(f"/runs/{benchmark.code}/").content.decode()
    assert DIAGNOSIS in page
    assert ("which lacks running requests, KV cache use, max_num_seqs and "
            "max_num_batched_tokens") in page


def test_the_page_imports_a_zip_of_the_folder_as_the_same_sweep(owner_client):
    upload = SimpleUploadedFile("kubecon.zip", _zip_of_folder())
    result_import, _ = status_page(owner_client, owner_client.post("/runs/import/",
                                                                   {"file": upload}))
    assert result_import.state == "succeeded", result_import.error_message
    points = list(result_import.benchmark.points.order_by("id"))
    assert points[0].key == (
        "import:kubecon.zip/results/stage_0_lifecycle_metrics.json")
    page = owner_client.get(f"/runs/{result_import.benchmark.code}/").content.decode()
    assert DIAGNOSIS in page


def test_a_zip_member_leading_out_of_the_folder_is_refused(owner_client):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("../stage_0_lifecycle_metrics.json", "{}")
    upload = SimpleUploadedFile("evil.zip", buffer.getvalue())
    result_import, _ = status_page(owner_client, owner_client.post("/runs/import/",
                                                                   {"file": upload}))
    assert result_import.error_message == (
        "Cannot import evil.zip: ../stage_0_lifecycle_metrics.json leads out of the folder")
    assert not Benchmark.objects.exists()


def test_the_page_takes_a_stage_with_its_prometheus_report(owner_client):
    stage = KUBECON / "stage_5_lifecycle_metrics.json"
    server = KUBECON / "stage_5_prometheus_metrics.json"
    files = {"file": SimpleUploadedFile(stage.name, stage.read_bytes()),
             "companion": SimpleUploadedFile(server.name, server.read_bytes())}
    result_import, _ = status_page(owner_client, owner_client.post("/runs/import/", files))
    assert result_import.state == "succeeded", result_import.error_message
    stored = point_to_result(result_import.benchmark.points.get())
    assert stored.queue.mean_waiting == 208
    assert stored.peer is not None and stored.peer.server is not None


def test_the_command_refuses_a_companion_with_a_folder():
    with pytest.raises(CommandError, match="a folder pairs the files that came with its "
                       "results itself"):  # fmt: skip
        call_command("import_results", str(KUBECON), "--companion",
                     str(KUBECON / "stage_0_prometheus_metrics.json"))
    assert not Benchmark.objects.exists()


# ---------------------------------------------------------------------------------------------
# llm-d-benchmark's report, out and in
# ---------------------------------------------------------------------------------------------


def _stored_run() -> Benchmark:
    original = point()
    return import_points([(original, None)], name="exported", source_file="run.jsonl")


def test_the_run_page_downloads_the_run_as_valid_llm_d_reports(owner_client):
    benchmark = _stored_run()
    page = owner_client.get(f"/runs/{benchmark.code}/").content.decode()
    assert f'href="/runs/{benchmark.code}.llm-d.yaml"' in page
    response = owner_client.get(f"/runs/{benchmark.code}.llm-d.yaml")
    assert response["Content-Type"] == "application/yaml"
    [document] = yaml.safe_load_all(b"".join(response.streaming_content).decode())
    jsonschema.validate(json.loads(json.dumps(document, default=str)), schema("0.2.1"))
    assert document["run"]["eid"] == str(benchmark.code)


def test_export_results_writes_reports_that_import_back_with_their_figures(tmp_path):
    benchmark = _stored_run()
    stored = point_to_result(benchmark.points.get())
    out = tmp_path / "run.llm-d.yaml"
    call_command("export_results", str(benchmark.code), "--format", "llm-d", "--out", str(out))
    call_command("import_results", str(out))
    back = point_to_result(Benchmark.objects.exclude(pk=benchmark.pk).get().points.get())
    for name in ("duration", "completed", "failed", "total_input_tokens", "total_output_tokens",
                 "request_throughput", "output_throughput", "median_ttft_ms", "p99_e2el_ms",
                 "std_ttft_ms", "other_percentiles"):  # fmt: skip
        assert getattr(back.metrics, name) == getattr(stored.metrics, name), name
    for name in QUEUE_FIGURES:
        assert getattr(back.queue, name) == getattr(stored.queue, name), name
    assert back.engine_config == stored.engine_config and back.load == stored.load


def test_export_results_names_a_run_that_does_not_exist():
    with pytest.raises(CommandError, match="nope: no such run"):
        call_command("export_results", "nope")
