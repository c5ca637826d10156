"""Import from the upload page and from manage.py import_results."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from benchmarks.models import Benchmark

from .factories import make_point_result

pytestmark = pytest.mark.django_db


def results_jsonl(*points) -> bytes:
    return "".join(p.model_dump_json() + "\n" for p in points).encode()


VLLM_BENCH = {
    "date": "20260105-101500", "backend": "vllm", "model_id": "Qwen/Qwen3-30B-A3B",
    "num_prompts": 100, "request_rate": "inf", "max_concurrency": None, "duration": 12.5,
    "completed": 100, "failed": 0, "total_input_tokens": 6400, "total_output_tokens": 25600,
    "request_throughput": 8.0, "output_throughput": 2048.0, "total_token_throughput": 2560.0,
    "mean_ttft_ms": 150.0, "median_ttft_ms": 140.0, "p99_ttft_ms": 400.0,
    "mean_tpot_ms": 20.0, "median_tpot_ms": 19.0, "p99_tpot_ms": 30.0,
    "mean_itl_ms": 20.0, "median_itl_ms": 19.0, "p99_itl_ms": 35.0,
}


def test_uploading_a_results_file_creates_an_imported_run(owner_client):
    data = results_jsonl(make_point_result(max_num_seqs=8), make_point_result(max_num_seqs=64))
    upload = SimpleUploadedFile("sweep.jsonl", data)
    response = owner_client.post("/runs/import/", {"file": upload})
    benchmark = Benchmark.objects.get()
    assert response.status_code == 302
    assert (benchmark.source, benchmark.state, benchmark.points_done) == ("imported", "succeeded", 2)
    assert benchmark.points_total == 2


def test_uploading_a_vllm_bench_file_creates_a_run_with_its_caveat(owner_client):
    upload = SimpleUploadedFile("bench.json", json.dumps(VLLM_BENCH).encode())
    assert owner_client.post("/runs/import/", {"file": upload}).status_code == 302
    point = Benchmark.objects.get().points.get()
    assert point.output_throughput == 2048.0
    assert "vllm-bench-import" in set(point.caveats.values_list("code", flat=True))


def test_a_bad_upload_gets_a_clear_message_and_creates_nothing(owner_client):
    upload = SimpleUploadedFile("notes.json", b'{"hello": "world"}')
    response = owner_client.post("/runs/import/", {"file": upload})
    assert response.status_code == 400
    error = response.context["form"].errors["file"][0]
    assert error.startswith("Cannot import notes.json:")
    assert not Benchmark.objects.exists()


def test_the_command_imports_every_file(tmp_path, capsys):
    first, second = tmp_path / "a.jsonl", tmp_path / "b.json"
    first.write_bytes(results_jsonl(make_point_result()))
    second.write_text(json.dumps(VLLM_BENCH))
    call_command("import_results", str(first), str(second))
    assert Benchmark.objects.count() == 2
    assert capsys.readouterr().out.count("/runs/") == 2


def test_the_command_stores_nothing_when_one_file_is_bad(tmp_path):
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    good.write_bytes(results_jsonl(make_point_result()))
    bad.write_text("this is not json\n")
    with pytest.raises(CommandError, match="bad.jsonl"):
        call_command("import_results", str(good), str(bad))
    assert not Benchmark.objects.exists()


def test_the_command_names_a_missing_file(tmp_path):
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_results", str(tmp_path / "missing.jsonl"))
