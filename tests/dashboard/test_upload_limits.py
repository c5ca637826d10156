"""An upload cannot exhaust the web server: its size limit holds while the body arrives, the file
is parsed by a worker (never in the request), deep nesting is refused before parsing, a failed
import stores nothing, and the stored file is gone when the import ends."""

from __future__ import annotations

import io
import json
import resource
import signal
import threading
import time
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.handlers.wsgi import LimitedStream
from django.test import Client, RequestFactory
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart
from kombu.exceptions import OperationalError as BrokerError

from benchmarks.models import AuditEvent, Benchmark, Point, ResultImport
from benchmarks.storage import imports
from benchmarks.storage.imports import ImportFileError, import_points
from benchmarks.worker import import_jobs, tasks
from benchmarks.worker.cpu_limit import cpu_time_limit
from benchmarks.worker.import_jobs import ImportProgress
from dashboard import views_imports
from runner.importer.files import MAX_JSON_DEPTH
from tests.benchmarks.storage.test_import import VLLM_BENCH, results_jsonl, status_page
from tests.personas import grant_role
from tests.rows import make_point_result

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("run_imports_inline")]

LIMIT = 100_000
SEND_TO_BROKER = tasks.enqueue_import  # before run_imports_inline replaces it
IMPORT_FILE = imports.import_file


@pytest.fixture
def small_limit(settings):
    settings.HEADROOM_MAX_UPLOAD_BYTES = LIMIT
    return LIMIT


def post_file(client: Client, file_name: str, content: bytes, **fields: str):
    return client.post("/runs/import/", {"file": SimpleUploadedFile(file_name, content), **fields})


def stored_files(directory: Path) -> list[Path]:
    """What is left in the import folder (a refusal may never have created it)."""
    return list(directory.iterdir()) if directory.exists() else []


# ---------------------------------------------------------------------------------------------
# The size limit, while the body arrives
# ---------------------------------------------------------------------------------------------


class CountingStream(io.BytesIO):
    """A request body that counts what the server read of it."""

    bytes_read = 0

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        self.bytes_read += len(data)
        return data


def post_raw(user, body: bytes):
    """POST the body to the import view the way a WSGI server hands it over, counting reads."""
    request = RequestFactory().generic("POST", "/runs/import/", body, MULTIPART_CONTENT)
    stream = CountingStream(body)
    request._stream = LimitedStream(stream, len(body))
    request.user = user
    request._dont_enforce_csrf_checks = True  # as the test client does
    return views_imports.run_import(request), stream


def test_a_body_over_the_limit_is_refused_before_its_file_is_read(owner, small_limit, settings):
    body = encode_multipart(BOUNDARY, {
        "name": "huge", "file": SimpleUploadedFile("huge.jsonl", b"x" * (20 * LIMIT)),
    })  # fmt: skip
    response, stream = post_raw(owner, body)
    assert response.status_code == 400
    assert "larger than the upload limit of 97.7\xa0KB" in response.content.decode()
    # Django reads the body 64 KB at a time: one chunk, to reach the file's part, and no more.
    assert stream.bytes_read <= 64 * 1024 < LIMIT
    assert not ResultImport.objects.exists()
    assert stored_files(settings.HEADROOM_IMPORT_DIR) == []


def test_a_file_that_passes_the_limit_as_it_arrives_is_dropped_and_deleted(
    owner_client, small_limit, settings
):
    # Within the Content-Length allowance for the form's fields, so only the count catches it.
    response = post_file(owner_client, "big.jsonl", b"x" * (LIMIT + 1), name="kept")
    assert response.status_code == 400
    form = response.context["form"]
    assert form.errors["file"] == [
        "This file is larger than the upload limit of 97.7\xa0KB: nothing was stored."
    ]
    assert form["name"].value() == "kept"  # the fields after the file were still read
    assert not ResultImport.objects.exists()
    assert stored_files(settings.HEADROOM_IMPORT_DIR) == []


def test_a_file_of_exactly_the_limit_is_taken(owner_client, small_limit):
    response = post_file(owner_client, "edge.jsonl", b"x" * LIMIT)
    assert response.status_code == 302
    assert ResultImport.objects.get().size == LIMIT


def test_the_limit_holds_for_a_file_and_its_telemetry_file_together(
    owner_client, small_limit, settings
):
    half = LIMIT // 2
    files = {"file": SimpleUploadedFile("profile_export.jsonl", b"x" * half),
             "companion": SimpleUploadedFile("gpu.jsonl", b"y" * (LIMIT - half + 1))}
    response = owner_client.post("/runs/import/", files)
    assert response.status_code == 400
    assert response.context["form"].errors["file"] == [
        "The files together are larger than the upload limit of 97.7\xa0KB: nothing was stored."
    ]
    assert not ResultImport.objects.exists()
    assert stored_files(settings.HEADROOM_IMPORT_DIR) == []
    # One byte less, and both are taken: the limit is the sum, exactly.
    files = {"file": SimpleUploadedFile("profile_export.jsonl", b"x" * half),
             "companion": SimpleUploadedFile("gpu.jsonl", b"y" * (LIMIT - half))}
    assert owner_client.post("/runs/import/", files).status_code == 302
    assert ResultImport.objects.get().size == LIMIT


def test_the_page_tells_its_script_the_limit(owner_client, small_limit):
    page = owner_client.get("/runs/import/").content.decode()
    assert f'data-max-bytes="{LIMIT}"' in page
    assert 'src="/static/js/import.js"' in page


# ---------------------------------------------------------------------------------------------
# Parsed by the task, with bounded nesting and a separate cap on whole documents
# ---------------------------------------------------------------------------------------------


def test_a_file_of_brackets_gets_a_clear_error_on_the_status_page(owner_client):
    response = post_file(owner_client, "brackets.json", b"[" * 400_000)
    result_import, page = status_page(owner_client, response)
    assert result_import.state == "failed"
    assert result_import.error_message == (
        "Cannot import brackets.json: JSON nested too deeply to be a result file "
        f"(over {MAX_JSON_DEPTH} levels)"
    )
    assert "nested too deeply" in page
    assert not Benchmark.objects.exists()


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_nesting_is_refused_past_the_limit_before_the_json_is_parsed(owner_client):
    # Far below Python's recursion limit: only the check refuses it, the parser would not.
    deep = {**VLLM_BENCH, "extra": nested(MAX_JSON_DEPTH)}  # one level more, with the object
    result_import, _ = status_page(
        owner_client, post_file(owner_client, "deep.json", json.dumps(deep).encode())
    )
    assert "nested too deeply" in result_import.error_message
    ResultImport.objects.all().delete()
    at_limit = {**VLLM_BENCH, "extra": nested(MAX_JSON_DEPTH - 1)}
    result_import, _ = status_page(
        owner_client, post_file(owner_client, "ok.json", json.dumps(at_limit).encode())
    )
    assert result_import.state == "succeeded", result_import.error_message


def test_a_vllm_bench_file_over_the_document_cap_is_refused_unread(owner_client, settings):
    settings.HEADROOM_MAX_IMPORT_DOCUMENT_BYTES = 2**20
    document = json.dumps({**VLLM_BENCH, "padding": "x" * (2**19 * 3)}).encode()
    result_import, _ = status_page(owner_client, post_file(owner_client, "big.json", document))
    assert result_import.error_message == (
        "Cannot import big.json: a result document is read whole, and this one (1.5 MB) is over "
        "the 1.0 MB limit for that"
    )


def test_a_telemetry_file_over_the_document_cap_is_refused_unread(owner_client, settings):
    settings.HEADROOM_MAX_IMPORT_DOCUMENT_BYTES = 2**20
    files = {"file": SimpleUploadedFile("profile_export.jsonl", b"{}"),
             "companion": SimpleUploadedFile("gpu.jsonl", b"x" * (2**19 * 3))}
    result_import, _ = status_page(owner_client, owner_client.post("/runs/import/", files))
    assert result_import.error_message == (
        "Cannot import profile_export.jsonl: gpu.jsonl: a file that comes with a result file "
        "is read whole, and this one (1.5 MB) is over the 1.0 MB limit for that"
    )


def test_a_headroom_file_over_the_document_cap_is_read_line_by_line_each_line_within_it(
    owner_client, settings
):
    data = results_jsonl(make_point_result(max_num_seqs=8), make_point_result(max_num_seqs=64))
    longest = max(len(line) for line in data.splitlines(keepends=True))
    settings.HEADROOM_MAX_IMPORT_DOCUMENT_BYTES = longest  # the file is twice that
    result_import, _ = status_page(owner_client, post_file(owner_client, "sweep.jsonl", data))
    assert (result_import.state, result_import.progress) == ("succeeded", 2)

    ResultImport.objects.all().delete()
    settings.HEADROOM_MAX_IMPORT_DOCUMENT_BYTES = longest - 2  # each line is parsed whole
    result_import, _ = status_page(owner_client, post_file(owner_client, "sweep.jsonl", data))
    assert result_import.state == "failed"
    assert result_import.error_message.startswith("Cannot import sweep.jsonl: sweep.jsonl:")
    assert "a line over 0.0 MB, the limit for one document read whole" in (
        result_import.error_message)


# ---------------------------------------------------------------------------------------------
# Good files through the task: progress, the run, the audit event, the file removed
# ---------------------------------------------------------------------------------------------


def test_a_results_file_is_imported_by_the_task_and_its_file_removed(
    owner, owner_client, run_imports_inline
):
    data = results_jsonl(make_point_result(max_num_seqs=8), make_point_result(max_num_seqs=64))
    response = post_file(owner_client, "sweep.jsonl", data, name="From the lab")
    result_import, page = status_page(owner_client, response)
    benchmark = Benchmark.objects.get()
    assert (result_import.state, result_import.progress, result_import.benchmark) == (
        "succeeded", 2, benchmark)
    assert (benchmark.name, benchmark.points.count()) == ("From the lab", 2)
    assert "2 points read" in page and f'href="/runs/{benchmark.code}/"' in page
    assert (result_import.file_name, result_import.size) == ("sweep.jsonl", len(data))
    assert result_import.started_at <= result_import.finished_at
    event = AuditEvent.objects.get()
    assert (event.action, event.actor, event.target) == ("imported", owner, benchmark)
    assert event.detail == "from sweep.jsonl"
    assert stored_files(run_imports_inline) == []


def test_a_vllm_bench_file_is_imported_by_the_task(owner_client, run_imports_inline):
    response = post_file(owner_client, "bench.json", json.dumps(VLLM_BENCH).encode(),
                         gpu_name="NVIDIA H200")  # fmt: skip
    result_import, _ = status_page(owner_client, response)
    assert (result_import.state, result_import.progress) == ("succeeded", 1)
    point = result_import.benchmark.points.get()
    assert point.output_throughput == 2048.0
    assert point.key == "import:bench.json:20260105-101500"  # the name given, not the stored one
    assert point.provenance["hardware"]["gpu_name"] == "NVIDIA H200"  # stated at upload
    assert stored_files(run_imports_inline) == []


def test_the_progress_json_says_state_progress_and_where_the_run_is(owner_client):
    data = results_jsonl(make_point_result())
    result_import, _ = status_page(owner_client, post_file(owner_client, "one.jsonl", data))
    status = owner_client.get(f"/runs/imports/{result_import.code}/progress.json").json()
    assert status == {
        "state": "succeeded", "final": True, "progress": 1, "error_message": "",
        "run_url": f"/runs/{result_import.benchmark.code}/",
    }


def test_a_queued_import_page_polls_until_it_ends(owner, owner_client):
    queued = ResultImport.objects.create(created_by=owner, file_name="wait.jsonl", size=10)
    page = owner_client.get(f"/runs/imports/{queued.code}/").content.decode()
    assert 'data-final="false"' in page and 'id="import-state">queued<' in page
    assert f'data-progress-url="/runs/imports/{queued.code}/progress.json"' in page
    assert 'src="/static/js/import.js"' in page and "<script>" not in page


# ---------------------------------------------------------------------------------------------
# Nothing half-imported
# ---------------------------------------------------------------------------------------------


def test_a_bad_line_after_good_ones_stores_nothing_and_removes_the_file(
    owner_client, run_imports_inline
):
    data = results_jsonl(make_point_result(max_num_seqs=8)) + b'{"hello": "world"}\n'
    data += results_jsonl(make_point_result(max_num_seqs=64))
    result_import, page = status_page(owner_client, post_file(owner_client, "mixed.jsonl", data))
    assert result_import.state == "failed"
    assert result_import.error_message.startswith(
        "Cannot import mixed.jsonl: mixed.jsonl:2: not a Headroom point"
    )
    assert result_import.progress == 1  # read and stored, then rolled back with the rest
    assert (Benchmark.objects.count(), Point.objects.count(), AuditEvent.objects.count()) == (0,) * 3
    assert result_import.benchmark is None and "Nothing was stored." in page
    assert stored_files(run_imports_inline) == []


def test_only_a_last_line_cut_short_is_skipped_a_cut_line_before_it_refuses_the_file(
    owner_client,
):
    whole = make_point_result(max_num_seqs=64).model_dump_json()
    first = results_jsonl(make_point_result(max_num_seqs=8))
    result_import, _ = status_page(
        owner_client, post_file(owner_client, "killed.jsonl", first + whole[:300].encode())
    )
    assert (result_import.state, result_import.progress) == ("succeeded", 1)  # as --resume reads it
    ResultImport.objects.all().delete()
    cut_inside = first + whole[:300].encode() + b"\n" + first
    result_import, _ = status_page(
        owner_client, post_file(owner_client, "cut.jsonl", cut_inside)
    )
    assert result_import.state == "failed"
    assert "cut.jsonl:2: not a Headroom point" in result_import.error_message


def test_import_points_rolls_back_what_it_stored_when_the_reader_fails():
    def points():
        yield make_point_result(max_num_seqs=8), None
        raise ImportFileError("sweep.jsonl:2: not a Headroom point")

    with pytest.raises(ImportFileError):
        import_points(points(), name="sweep", source_file="sweep.jsonl")
    assert (Benchmark.objects.count(), Point.objects.count()) == (0, 0)


def test_an_unexpected_error_fails_the_import_without_saying_more_than_its_type(
    owner_client, monkeypatch, run_imports_inline
):
    def broken(benchmark, point, **kwargs):
        raise ValueError("/secret/path/on/the/worker")

    monkeypatch.setattr("benchmarks.storage.imports.store_point", broken)
    data = results_jsonl(make_point_result())
    result_import, _ = status_page(owner_client, post_file(owner_client, "one.jsonl", data))
    assert result_import.state == "failed"
    assert "unexpected error (ValueError)" in result_import.error_message
    assert "/secret/" not in result_import.error_message
    assert not Benchmark.objects.exists() and stored_files(run_imports_inline) == []


def test_an_upload_the_broker_refused_leaves_neither_row_nor_file(
    owner_client, monkeypatch, run_imports_inline
):
    def refuse(result_import):
        raise BrokerError("connection refused")

    monkeypatch.setattr(tasks, "enqueue_import", refuse)
    response = post_file(owner_client, "one.jsonl", results_jsonl(make_point_result()))
    assert response.status_code == 400
    assert "broker) is unreachable, so nothing was imported" in response.content.decode()
    assert not ResultImport.objects.exists() and stored_files(run_imports_inline) == []


def test_a_second_delivery_of_an_import_does_nothing(owner):
    done = ResultImport.objects.create(created_by=owner, file_name="a.jsonl", size=1,
                                       state="failed", error_message="refused")  # fmt: skip
    tasks.import_result_file.apply(args=[done.pk], throw=True)
    tasks.import_result_file.apply(args=[done.pk + 1000], throw=True)  # a row that is gone
    done.refresh_from_db()
    assert (done.state, done.error_message) == ("failed", "refused")


# ---------------------------------------------------------------------------------------------
# A limit on the CPU time of each import
# ---------------------------------------------------------------------------------------------


SPUN_CPU_S: list[float] = []


def import_then_spin(path: Path, **kwargs):
    """The import as it is, then reading on until the CPU limit stops it (or half a minute, so
    a limit that never comes fails the test rather than hanging it). SPUN_CPU_S gets the CPU
    the spin's own thread used: the upload and the page around it are not the limit's to bound,
    nor are threads earlier tests left running in this process (the limit counts them too, so
    they can only make it stop the spin sooner)."""
    IMPORT_FILE(path, **kwargs)
    spun_from = time.thread_time()
    deadline = time.process_time() + 30
    try:
        while time.process_time() < deadline:
            pass
    finally:
        SPUN_CPU_S.append(time.thread_time() - spun_from)
    raise AssertionError("the CPU limit never stopped the import")


def test_an_import_past_its_cpu_limit_is_stopped_with_the_reason_and_stores_nothing(
    owner_client, settings, monkeypatch, run_imports_inline
):
    settings.HEADROOM_IMPORT_CPU_LIMIT_S = 1
    monkeypatch.setattr(import_jobs, "import_file", import_then_spin)
    data = results_jsonl(make_point_result())
    SPUN_CPU_S.clear()
    result_import, page = status_page(owner_client, post_file(owner_client, "slow.jsonl", data))
    assert SPUN_CPU_S and SPUN_CPU_S[0] < 2.5  # the limit, and up to the next whole second
    assert (result_import.state, result_import.error_message) == (
        "failed",
        "Cannot import slow.jsonl: the import took more than 1 s of CPU and was stopped",
    )
    assert "took more than 1 s of CPU" in page and "Nothing was stored." in page
    assert (Benchmark.objects.count(), Point.objects.count(), AuditEvent.objects.count()) == (0,) * 3
    assert stored_files(run_imports_inline) == []


def test_the_worker_takes_its_next_import_as_it_was_after_one_is_stopped(
    owner_client, settings, monkeypatch
):
    settings.HEADROOM_IMPORT_CPU_LIMIT_S = 1
    limit, handler = resource.getrlimit(resource.RLIMIT_CPU), signal.getsignal(signal.SIGXCPU)
    monkeypatch.setattr(import_jobs, "import_file", import_then_spin)
    data = results_jsonl(make_point_result())
    stopped, _ = status_page(owner_client, post_file(owner_client, "slow.jsonl", data))
    assert "took more than 1 s of CPU" in stopped.error_message
    assert (resource.getrlimit(resource.RLIMIT_CPU), signal.getsignal(signal.SIGXCPU)) == (
        limit, handler)
    monkeypatch.setattr(import_jobs, "import_file", IMPORT_FILE)
    # RLIMIT_CPU counts every thread of the process: in a full suite, threads earlier tests
    # left running can use a second on their own, so the next import gets room to finish.
    settings.HEADROOM_IMPORT_CPU_LIMIT_S = 30
    ResultImport.objects.all().delete()
    result_import, _ = status_page(owner_client, post_file(owner_client, "next.jsonl", data))
    assert (result_import.state, result_import.progress) == ("succeeded", 1)


def test_outside_the_main_thread_a_cpu_limit_refuses_to_start_rather_than_not_limit():
    refused: list[str] = []

    def import_in_a_thread() -> None:
        try:
            with cpu_time_limit(1):
                pass
        except RuntimeError as exc:
            refused.append(str(exc))

    thread = threading.Thread(target=import_in_a_thread)
    thread.start()
    thread.join()
    assert refused == ["a CPU time limit needs the main thread: run the worker with the prefork "
                       "or solo pool"]


# ---------------------------------------------------------------------------------------------
# Who sees an import: its uploader, or whoever may view every import
# ---------------------------------------------------------------------------------------------


def test_only_the_uploader_or_a_viewer_of_every_import_sees_it(owner, teammate):
    result_import = ResultImport.objects.create(created_by=owner, file_name="a.jsonl", size=1)
    urls = (f"/runs/imports/{result_import.code}/",
            f"/runs/imports/{result_import.code}/progress.json")  # fmt: skip
    client = Client()
    client.force_login(teammate)
    assert [client.get(url).status_code for url in urls] == [404, 404]
    teammate.user_permissions.add(Permission.objects.get(codename="view_resultimport"))
    client.force_login(type(teammate).objects.get(pk=teammate.pk))  # permissions are cached
    assert [client.get(url).status_code for url in urls] == [200, 200]


# ---------------------------------------------------------------------------------------------
# The progress thread and the real worker
# ---------------------------------------------------------------------------------------------


def wait_for(condition, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


@pytest.mark.django_db(transaction=True)
def test_the_progress_thread_commits_the_count_while_the_import_runs(owner, settings):
    settings.HEADROOM_HEARTBEAT_S = 1
    running = ResultImport.objects.create(created_by=owner, file_name="a.jsonl", size=1,
                                          state="running")  # fmt: skip
    with ImportProgress(running.pk) as progress:
        progress.report(3)
        assert wait_for(lambda: ResultImport.objects.get(pk=running.pk).progress == 3, 10)
    ResultImport.objects.filter(pk=running.pk).update(state="failed")
    progress.report(5)
    progress.beat_once()  # an ended import keeps the count it ended with
    assert ResultImport.objects.get(pk=running.pk).progress == 3


@pytest.mark.django_db(transaction=True)
def test_an_upload_is_imported_by_the_real_worker(celery_worker_queue, settings, tmp_path,
                                                  monkeypatch):  # fmt: skip
    # The worker's own HEADROOM_WORK_DIR (conftest) holds the import folder: the web writes there.
    settings.HEADROOM_IMPORT_DIR = tmp_path / "work" / "imports"
    monkeypatch.setattr(tasks, "enqueue_import", SEND_TO_BROKER)  # to the queue it consumes
    uploader = grant_role(get_user_model().objects.create_user("uploader"))
    client = Client()
    client.force_login(uploader)
    data = results_jsonl(make_point_result(max_num_seqs=8), make_point_result(max_num_seqs=64))
    response = post_file(client, "sweep.jsonl", data)
    assert response.status_code == 302
    progress_url = response["Location"] + "progress.json"
    assert wait_for(lambda: client.get(progress_url).json()["final"], 60)
    status = client.get(progress_url).json()
    assert (status["state"], status["progress"]) == ("succeeded", 2), status
    assert Benchmark.objects.get().points.count() == 2
    assert stored_files(settings.HEADROOM_IMPORT_DIR) == []
