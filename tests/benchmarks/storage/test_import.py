"""Import from the upload page and from manage.py import_results."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.utils.html import escape

from analysis.caveats import HEADROOM_IMPORT, HEADROOM_IMPORT_TEXT
from benchmarks.models import Benchmark, ResultImport
from tests.rows import make_point_result

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("run_imports_inline")]


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


def test_the_import_page_names_the_three_kinds_of_file_it_takes(owner_client):
    page = owner_client.get("/runs/import/").content.decode()
    assert "Headroom result lines: the JSONL that <code>python -m runner</code> writes" in page
    assert "a run's JSON download (<em>Download JSON</em> on a run's page" in page
    assert "a <code>vllm bench serve</code> result" in page


def status_page(client, response) -> tuple[ResultImport, str]:
    """The import an upload redirected to, and its status page as the uploader sees it."""
    assert response.status_code == 302
    result_import = ResultImport.objects.get()
    assert response["Location"] == f"/runs/imports/{result_import.code}/"
    return result_import, client.get(response["Location"]).content.decode()


def test_a_bad_upload_gets_a_clear_message_and_creates_nothing(owner_client):
    upload = SimpleUploadedFile("notes.json", b'{"hello": "world"}')
    response = owner_client.post("/runs/import/", {"file": upload})
    result_import, page = status_page(owner_client, response)
    assert result_import.state == "failed"
    assert result_import.error_message.startswith("Cannot import notes.json:")
    assert ("not a result file Headroom reads (a JSON object with keys hello)"
            in result_import.error_message)
    assert escape(result_import.error_message) in page and "Nothing was stored." in page
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
    with pytest.raises(CommandError, match=r"bad\.jsonl"):
        call_command("import_results", str(good), str(bad))
    assert not Benchmark.objects.exists()


def test_the_command_reads_each_file_a_point_at_a_time_as_the_upload_does(
    tmp_path, capsys, monkeypatch, settings
):
    import runner.importer.files

    # The command no longer loads files whole (a 100,000 x 1,000 point's records are 1.4 GB):
    # each file goes through import_file, its points' records encoded batch by batch.
    def whole(*args, **kwargs):
        raise AssertionError("a file's records were read whole")

    monkeypatch.setattr(runner.importer.files, "iter_result_file", whole)
    # The upload's document limit is the web's; an operator's own file is not refused by it.
    settings.HEADROOM_MAX_IMPORT_DOCUMENT_BYTES = 100
    first, second = tmp_path / "a.jsonl", tmp_path / "b.json"
    first.write_bytes(results_jsonl(make_point_result(), make_point_result(max_num_seqs=128)))
    second.write_text(json.dumps(VLLM_BENCH))
    call_command("import_results", str(first), str(second))
    out = capsys.readouterr().out
    assert "a.jsonl: 2 point(s) -> /runs/" in out and "b.json: 1 point(s) -> /runs/" in out
    assert sorted(b.points.count() for b in Benchmark.objects.all()) == [1, 2]


def test_the_command_names_a_missing_file(tmp_path):
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_results", str(tmp_path / "missing.jsonl"))


def test_an_imported_file_whose_throughput_disagrees_with_its_tokens_gets_a_caveat(owner_client):
    # 25,600 output tokens / 12.5 s = 2,048 tok/s; the file claims 2,200 (+7.4%).
    upload = SimpleUploadedFile(
        "bench.json", json.dumps({**VLLM_BENCH, "output_throughput": 2200.0}).encode()
    )
    assert owner_client.post("/runs/import/", {"file": upload}).status_code == 302
    caveat = Benchmark.objects.get().points.get().caveats.get(code="inconsistent-aggregates")
    assert caveat.kind == "method"
    assert (
        "output_throughput is 2,200.00/s but 25,600 output tokens over the 12.5 s window make "
        "2,048.00/s (+7.4%)" in caveat.text
    )


def test_an_imported_burst_whose_median_latency_exceeds_its_window_gets_the_caveat(owner_client):
    # request_rate inf without max_concurrency is a burst; 13,000 ms > the 12.5 s window.
    upload = SimpleUploadedFile(
        "bench.json", json.dumps({**VLLM_BENCH, "median_e2el_ms": 13000.0}).encode()
    )
    assert owner_client.post("/runs/import/", {"file": upload}).status_code == 302
    caveat = Benchmark.objects.get().points.get().caveats.get(code="inconsistent-aggregates")
    assert "median_e2el_ms is 13,000.0 ms, longer than the burst's whole 12.5 s window" in (
        caveat.text
    )


def test_an_imported_file_whose_figures_agree_gets_no_inconsistency_caveat(owner_client):
    # 25,600 / 12.5 = 2,048 tok/s, 100 / 12.5 = 8 req/s, 32,000 / 12.5 = 2,560 tok/s: all agree.
    upload = SimpleUploadedFile("bench.json", json.dumps(VLLM_BENCH).encode())
    assert owner_client.post("/runs/import/", {"file": upload}).status_code == 302
    point = Benchmark.objects.get().points.get()
    assert not point.caveats.filter(code="inconsistent-aggregates").exists()


def test_an_imported_results_file_is_checked_like_a_measured_point(owner_client):
    # 25,600 output tokens over the factory's 10 s window: 2,560 tok/s, not 3,000.
    data = results_jsonl(make_point_result(num_requests=100, completed=100,
                                           total_output_tokens=25600, output_throughput=3000.0))
    upload = SimpleUploadedFile("sweep.jsonl", data)
    assert owner_client.post("/runs/import/", {"file": upload}).status_code == 302
    caveat = Benchmark.objects.get().points.get().caveats.get(code="inconsistent-aggregates")
    assert "output_throughput is 3,000.00/s" in caveat.text


# ---------------------------------------------------------------------------------------------
# The runtime as what ran, and facts the engineer states where the file is silent
# ---------------------------------------------------------------------------------------------

REVISION = "0123456789abcdef0123456789abcdef01234567"
# vllm bench against a TensorRT-LLM server: an OpenAI request format, the GPU in --metadata.
TRTLLM_BENCH = {**VLLM_BENCH, "backend": "openai-chat", "endpoint_type": "openai-chat",
                "gpu": "NVIDIA H200"}


def upload(client, document, **stated):
    file = SimpleUploadedFile("bench.json", json.dumps(document).encode())
    return client.post("/runs/import/", {"file": file, **stated})


def test_a_file_that_does_not_name_its_engine_is_not_recorded_as_a_vllm_run(owner_client):
    assert upload(owner_client, {**TRTLLM_BENCH, "version": "0.18.0"}).status_code == 302
    benchmark = Benchmark.objects.get()
    assert benchmark.runtime is None
    assert benchmark.points.get().provenance["engine"]["name"] is None


def test_a_file_whose_metadata_names_the_engine_gets_that_runtime(owner_client):
    document = {**TRTLLM_BENCH, "engine": "TensorRT-LLM", "version": "0.18.0"}
    assert upload(owner_client, document).status_code == 302
    runtime = Benchmark.objects.get().runtime
    assert (runtime.engine, runtime.version, str(runtime)) == (
        "tensorrt-llm", "0.18.0", "tensorrt-llm 0.18.0"
    )


def test_stated_facts_fill_only_what_the_file_does_not_record(owner_client):
    stated = {
        "gpu_name": "NVIDIA H100", "gpu_count": "8", "engine": "tensorrt-llm",
        "engine_version": "0.18.0", "engine_image": "nvcr.io/nvidia/tritonserver:25.01",
        "checkpoint": "someone/else", "revision": REVISION, "precision": "NVFP4",
    }
    assert upload(owner_client, TRTLLM_BENCH, **stated).status_code == 302
    benchmark = Benchmark.objects.get()
    provenance = benchmark.points.get().provenance
    # The file's own GPU and model id are kept; the rest is filled in as stated.
    assert provenance["hardware"]["gpu_name"] == "NVIDIA H200"
    assert provenance["checkpoint"]["model"] == "Qwen/Qwen3-30B-A3B"
    assert provenance["hardware"]["gpu_count"] == 8
    engine = provenance["engine"]
    assert (engine["name"], engine["version"], engine["image"]) == (
        "tensorrt-llm", "0.18.0", "nvcr.io/nvidia/tritonserver:25.01"
    )
    assert (provenance["checkpoint"]["revision"], provenance["checkpoint"]["precision"]) == (
        REVISION, "NVFP4"
    )
    assert (benchmark.runtime.engine, benchmark.runtime.version) == ("tensorrt-llm", "0.18.0")
    assert benchmark.checkpoint.revision == REVISION


def test_the_run_page_says_who_stated_what_and_what_the_file_kept(owner_client):
    upload(owner_client, TRTLLM_BENCH, gpu_name="NVIDIA H100", gpu_count="8", engine="sglang",
           engine_version="0.4.1")
    benchmark = Benchmark.objects.get()
    caveat = benchmark.caveats.get(code="stated-at-import")
    assert caveat.text == (
        "Stated at import by owner, not recorded in the file: GPU count 8; runtime sglang; "
        "runtime version 0.4.1. Stated at import by owner but not used, the file records "
        "otherwise: GPU NVIDIA H200 (stated NVIDIA H100)."
    )
    assert caveat.text in owner_client.get(f"/runs/{benchmark.code}/").content.decode()
    assert caveat.text.split(". ")[0] + "." in benchmark.points.get().notes


def test_another_named_engine_is_stored_as_other_with_its_name(owner_client):
    upload(owner_client, TRTLLM_BENCH, engine="other", other_engine="LMDeploy",
           engine_version="0.6.0")
    runtime = Benchmark.objects.get().runtime
    assert (runtime.engine, runtime.other_engine, str(runtime)) == ("other", "LMDeploy",
                                                                     "LMDeploy 0.6.0")


def test_an_import_that_states_nothing_records_no_statement(owner_client):
    assert upload(owner_client, TRTLLM_BENCH).status_code == 302
    benchmark = Benchmark.objects.get()
    assert not benchmark.caveats.filter(code="stated-at-import").exists()
    assert not any("Stated at import" in note for note in benchmark.points.get().notes)


def test_a_measured_points_hardware_is_never_replaced_by_a_stated_one(owner_client):
    # The runner measured this CPU host: no GPU there is a record, not a gap to fill.
    data = results_jsonl(make_point_result())
    response = owner_client.post("/runs/import/", {
        "file": SimpleUploadedFile("sweep.jsonl", data), "gpu_name": "NVIDIA H200",
    })
    assert response.status_code == 302
    point = Benchmark.objects.get().points.get()
    assert point.provenance["hardware"]["gpu_name"] is None
    assert "GPU none (stated NVIDIA H200)" in point.notes[-1]


@pytest.mark.parametrize(
    "stated, field, message",
    [
        ({"revision": "main"}, "revision", "A revision is a 40-hex commit id"),
        ({"revision": REVISION[:39]}, "revision", "A revision is a 40-hex commit id"),
        ({"gpu_count": "0"}, "gpu_count", "greater than or equal to 1"),
        ({"gpu_count": "eight"}, "gpu_count", "whole number"),
        ({"engine": "other"}, "other_engine", "Name the engine"),
        ({"engine": "vllm", "other_engine": "tgi"}, "other_engine", "Only for another engine"),
        ({"engine": "tgi"}, "engine", "Select a valid choice"),
    ],
)
def test_a_bad_stated_value_gets_an_error_on_its_field_and_imports_nothing(
    owner_client, stated, field, message
):
    response = upload(owner_client, TRTLLM_BENCH, **stated)
    assert response.status_code == 400
    assert message in " ".join(response.context["form"].errors[field])
    assert not Benchmark.objects.exists()


def test_the_command_states_facts_for_every_file(tmp_path):
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(TRTLLM_BENCH))
    call_command("import_results", str(path), "--runtime", "SGLang", "--runtime-version", "0.4.1",
                 "--gpu-count", "8")
    benchmark = Benchmark.objects.get()
    assert (benchmark.runtime.engine, benchmark.runtime.version) == ("sglang", "0.4.1")
    assert benchmark.caveats.get(code="stated-at-import").text.startswith(
        "Stated at import by an unnamed user (command line), not recorded in the file: "
        "GPU count 8; runtime sglang"
    )


def test_the_command_names_the_flag_of_a_bad_stated_value(tmp_path):
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(TRTLLM_BENCH))
    with pytest.raises(CommandError, match="--revision: a revision is a 40-hex commit id"):
        call_command("import_results", str(path), "--revision", "main")
    assert not Benchmark.objects.exists()


# ---------------------------------------------------------------------------------------------
# An import names what ran elsewhere; it never makes a checkpoint or runtime launchable
# ---------------------------------------------------------------------------------------------


def test_an_imported_checkpoint_and_runtime_are_records_the_launch_form_does_not_offer(
    owner_client
):
    from benchmarks.models import Checkpoint, Runtime
    from dashboard.forms_launch import LaunchForm

    document = {**VLLM_BENCH, "model_id": "attacker-org/evil-remote-code-model",
                "engine": "vllm", "version": "0.32.0"}
    assert upload(owner_client, document, engine_image="attacker/evil:latest").status_code == 302
    benchmark = Benchmark.objects.get()
    checkpoint, runtime = benchmark.checkpoint, benchmark.runtime
    assert (checkpoint.repo, checkpoint.approved, checkpoint.trusted) == (
        "attacker-org/evil-remote-code-model", False, False)
    assert (runtime.image, runtime.approved) == ("attacker/evil:latest", False)
    form = LaunchForm()
    assert checkpoint not in form.fields["checkpoint"].queryset
    assert runtime not in form.fields["runtime"].queryset
    assert not Checkpoint.objects.filter(approved=True).exists()
    assert not Runtime.objects.filter(approved=True).exists()


def test_an_import_reuses_an_approved_row_without_changing_it(owner_client):
    from tests.rows import make_checkpoint

    approved = make_checkpoint(repo="Qwen/Qwen3-30B-A3B", revision="", precision="",
                               kv_cache_dtype="")
    assert upload(owner_client, VLLM_BENCH).status_code == 302
    assert Benchmark.objects.get().checkpoint == approved
    approved.refresh_from_db()
    assert approved.approved and not approved.trusted


def test_a_file_whose_model_id_vllm_would_read_as_a_flag_is_refused(owner_client):
    response = upload(owner_client, {**VLLM_BENCH, "model_id": "--trust-remote-code"})
    result_import, _ = status_page(owner_client, response)
    assert result_import.state == "failed"
    assert "starts with '-'" in result_import.error_message
    assert not Benchmark.objects.exists()


# ---------------------------------------------------------------------------------------------
# A run's JSON download imports back as the same run
# ---------------------------------------------------------------------------------------------


def download(client, benchmark) -> bytes:
    response = client.get(f"/runs/{benchmark.code}.json")
    assert response.status_code == 200
    return b"".join(response.streaming_content)


def a_judged_run():
    """A launched run of one ladder (three load levels, so each has a verdict), one point
    whose client fell behind and one whose throughput disagrees with its tokens (caveats)."""
    from benchmarks.storage.points import store_point
    from tests.rows import make_benchmark

    benchmark = make_benchmark(state="succeeded")
    store_point(benchmark, make_point_result(num_requests=100, requests=25))
    store_point(benchmark, make_point_result(num_requests=200, requests=25, saturated=True))
    store_point(benchmark, make_point_result(num_requests=400, requests=25,
                                             output_throughput=70000.0,
                                             total_output_tokens=650000))
    return benchmark


def what_the_run_page_shows(benchmark):
    """Each point in full, its figures, its verdict (or why it has none) and its caveats."""
    from benchmarks.storage.points import METRIC_FIELDS, point_to_result
    from judgement.figures import figures_by_key
    from judgement.verdict_rows import verdict_rows

    points = list(benchmark.points.all())
    found = verdict_rows(list(figures_by_key(points)[0].values()))
    return {
        p.key: {
            "point": point_to_result(p),
            "figures": {name: getattr(p, name) for name in METRIC_FIELDS},
            "verdict": found.by_key.get(p.key) or found.missing[p.key],
            "caveats": sorted(p.caveats.values_list("kind", "code", "text")),
        }
        for p in points
    }


def test_a_runs_json_download_imports_back_with_the_same_points_verdicts_and_caveats(
    owner_client, tmp_path
):
    original = a_judged_run()
    shown = what_the_run_page_shows(original)
    assert [type(row["verdict"]).__name__ for row in shown.values()] == ["Verdict"] * 3
    assert {code for row in shown.values() for _, code, _ in row["caveats"]} >= {
        "cpu-engine", "client-saturated", "inconsistent-aggregates"}
    data = download(owner_client, original)

    file = SimpleUploadedFile(f"headroom-{original.code}.json", data)
    assert owner_client.post("/runs/import/", {"file": file}).status_code == 302
    uploaded = Benchmark.objects.get(source="imported")
    path = tmp_path / "run.json"
    path.write_bytes(data)
    call_command("import_results", str(path))
    commanded = Benchmark.objects.exclude(pk__in=[original.pk, uploaded.pk]).get()

    # The same, and each point says it came through an import (issue 41, finding 8).
    said = ("scope", HEADROOM_IMPORT, HEADROOM_IMPORT_TEXT)
    for row in shown.values():
        row["caveats"] = sorted([*row["caveats"], said])
    for imported in (uploaded, commanded):
        assert (imported.source, imported.state, imported.points_total) == ("imported",
                                                                            "succeeded", 3)
        assert what_the_run_page_shows(imported) == shown
        # And its own download is the one it came from, point for point.
        assert json.loads(download(owner_client, imported))["points"] == (
            json.loads(data)["points"])


@pytest.mark.parametrize(
    "spoil, named",
    [
        (lambda doc: doc["points"][1]["metrics"].pop("duration"),
         "points.1: not a Headroom point: metrics.duration: Field required"),
        (lambda doc: doc["points"][0]["requests"][3].update(chunk_times=["soon"]),
         "points.0.requests.3: not a Headroom request: chunk_times"),
        (lambda doc: doc["points"].append("a point"),
         "points.3: not a Headroom point: expected an object, got a string"),
        (lambda doc: doc.update(points={}), 'expected a "points" list, got an object'),
    ],
)
def test_a_download_with_a_bad_point_is_refused_naming_it_and_imports_nothing(
    owner_client, tmp_path, spoil, named
):
    document = json.loads(download(owner_client, a_judged_run()))
    spoil(document)
    data = json.dumps(document).encode()
    file = SimpleUploadedFile("run.json", data)
    result_import, page = status_page(owner_client,
                                      owner_client.post("/runs/import/", {"file": file}))
    assert result_import.state == "failed"
    assert result_import.error_message.startswith(f"Cannot import run.json: {named}")
    assert escape(result_import.error_message) in page
    path = tmp_path / "run.json"
    path.write_bytes(data)
    with pytest.raises(CommandError, match=re.escape(named)):
        call_command("import_results", str(path))
    assert Benchmark.objects.filter(source="imported").count() == 0


@pytest.mark.parametrize("where", ["between values", "inside a string"])
def test_a_download_cut_short_is_refused_as_cut_short_and_imports_nothing(owner_client, where):
    data = download(owner_client, a_judged_run())
    half = len(data) // 2
    # The first comma after the middle ends a value; the first quote opens (or ends) a string.
    cut = data.index(b",", half) + 1 if where == "between values" else data.index(b'"', half) + 2
    file = SimpleUploadedFile("run.json", data[:cut])
    result_import, page = status_page(owner_client,
                                      owner_client.post("/runs/import/", {"file": file}))
    assert result_import.state == "failed"
    assert result_import.error_message.startswith("Cannot import run.json: points.")
    assert "(the file is cut short: was the download interrupted?)" in (
        result_import.error_message)
    assert result_import.error_message in page
    assert not Benchmark.objects.filter(source="imported").exists()


def test_a_figure_that_is_not_finite_is_refused_naming_the_file_and_field(owner_client):
    # Stored, an Infinity would reach the run page's chart JSON, which has no such number.
    document = make_point_result().model_dump(mode="json")
    document["metrics"]["output_throughput"] = float("inf")
    document["queue"]["mean_running"] = float("nan")
    upload = SimpleUploadedFile("sweep.jsonl", (json.dumps(document) + "\n").encode())
    result_import, page = status_page(owner_client,
                                      owner_client.post("/runs/import/", {"file": upload}))
    assert result_import.state == "failed"
    assert result_import.error_message == (
        "Cannot import sweep.jsonl: point 'seqs=256|burst 1000|r0': not a finite number: "
        "metrics.output_throughput = inf; queue.mean_running = nan")
    assert result_import.error_message in html.unescape(page)
    assert not Benchmark.objects.exists()


def test_an_infinite_burstiness_is_the_one_infinite_figure_an_import_keeps(owner_client):
    point = make_point_result()
    point.load = point.load.model_copy(update={"shape": "rate", "rate": 10.0,
                                               "burstiness": float("inf")})
    upload = SimpleUploadedFile("sweep.jsonl", results_jsonl(point))
    assert owner_client.post("/runs/import/", {"file": upload}).status_code == 302
    assert Benchmark.objects.get().points.get().load["burstiness"] == "inf"
