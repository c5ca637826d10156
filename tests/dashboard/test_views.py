"""Pages and JSON views: login, list filters, run page, progress, downloads, cancel."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from benchmarks.models import Benchmark
from benchmarks.storage.points import store_point
from runner.schema.result import PointResult
from tests.benchmarks.storage.test_import import VLLM_BENCH
from tests.rows import make_benchmark, make_node, make_point_result

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished_run():
    benchmark = make_benchmark(state="running")
    for seqs in (256, 512):
        for level in (1000, 2000):
            store_point(benchmark, make_point_result(max_num_seqs=seqs, num_requests=level,
                                                     output_throughput=seqs * level / 100))
    Benchmark.objects.filter(pk=benchmark.pk).update(state="succeeded")
    benchmark.refresh_from_db()
    return benchmark


@pytest.mark.parametrize("suffix", ["", "progress.json", "cancel/"])
def test_an_outsider_is_sent_to_log_in(suffix, finished_run):
    for url in ("/runs/", "/runs/new/", "/runs/import/", f"/runs/{finished_run.code}/{suffix}",
                f"/runs/{finished_run.code}.json", f"/runs/{finished_run.code}.csv"):
        response = Client().get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/accounts/login/"), url


def test_a_teammate_sees_a_run_someone_else_launched(teammate, finished_run):
    client = Client()
    client.force_login(teammate)
    assert client.get(f"/runs/{finished_run.code}/").status_code == 200


def test_the_run_list_filters_by_state_and_hardware(owner_client, finished_run):
    queued = make_benchmark(node=make_node("gpu-z", gpu_name="RTX PRO 6000", gpu_count=1))
    by_state = owner_client.get("/runs/?state=queued")
    assert [b.pk for b in by_state.context["page"]] == [queued.pk]
    by_hardware = owner_client.get("/runs/", {"hardware": "8 x NVIDIA H200"})
    assert [b.pk for b in by_hardware.context["page"]] == [finished_run.pk]


def test_the_run_list_is_paginated(owner_client, settings):
    node = make_node()
    for _ in range(51):
        make_benchmark(node=node)
    response = owner_client.get("/runs/?page=2")
    assert len(response.context["page"]) == 1
    assert b"page 2 of 2" in response.content


def test_the_run_page_shows_points_caveats_and_chart_data(owner_client, finished_run):
    response = owner_client.get(f"/runs/{finished_run.code}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="throughput-data"' in html and "plotly.min.js" in html
    figure = response.context["throughput_figure"]
    assert [t["name"] for t in figure["traces"]] == ["seqs=256", "seqs=512"]
    assert figure["traces"][1]["y"] == [5120.0, 10240.0]  # ordered by load
    assert "CPU engine stands in for a GPU" in html
    assert len(response.context["points"]) == 4


def test_the_samples_view_returns_the_chosen_point_series(owner_client, finished_run):
    point = finished_run.points.first()
    data = owner_client.get(f"/runs/{finished_run.code}/points/{point.pk}/samples.json").json()
    series = data["replicas"][0]
    assert len(series["t"]) == 20
    assert series["kv_usage"][0] is None  # a missing reading is a gap, not a zero


def test_the_samples_view_refuses_a_point_of_another_run(owner_client, finished_run):
    other = make_benchmark(node=finished_run.node, state="running")
    point = store_point(other, make_point_result())
    url = f"/runs/{finished_run.code}/points/{point.pk}/samples.json"
    assert owner_client.get(url).status_code == 404


def test_progress_json_reports_state_and_counts(owner_client):
    benchmark = make_benchmark(state="running", progress=0.25, progress_note="measuring")
    data = owner_client.get(f"/runs/{benchmark.code}/progress.json").json()
    assert data["state"] == "running" and data["final"] is False
    # Two configs at two load levels, each config with its control point: 2 x 2 + 2.
    assert (data["progress"], data["progress_note"], data["points_total"]) == (0.25, "measuring", 6)


def test_the_json_download_holds_every_point_in_the_result_schema(owner_client, finished_run):
    response = owner_client.get(f"/runs/{finished_run.code}.json")
    body = json.loads(b"".join(response.streaming_content))
    assert body["benchmark"]["code"] == str(finished_run.code)
    points = [PointResult.model_validate(p) for p in body["points"]]
    assert len(points) == 4 and len(points[0].requests) == 10


def test_the_csv_download_has_one_row_per_point_with_its_caveats(owner_client, finished_run):
    response = owner_client.get(f"/runs/{finished_run.code}.csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows) == 4
    assert {r["caveats"] for r in rows} == {"cpu-engine"}
    assert float(rows[0]["output_throughput"]) > 0


def test_csv_text_cells_never_start_a_spreadsheet_formula(owner_client, finished_run):
    finished_run.points.filter(repeat=0).update(engine_label="=HYPERLINK(\"http://x\")")
    finished_run.points.exclude(repeat=0).update(engine_label="--enable-prefix-caching")
    response = owner_client.get(f"/runs/{finished_run.code}.csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert {r["engine_label"] for r in rows} <= {
        "'=HYPERLINK(\"http://x\")", "'--enable-prefix-caching"}
    assert all(not r["key"].startswith(("=", "+", "-", "@")) for r in rows)


def test_cancelling_a_running_run_asks_its_worker_to_stop(owner, owner_client):
    benchmark = make_benchmark(state="running", created_by=owner)
    response = owner_client.post(f"/runs/{benchmark.code}/cancel/")
    assert response.status_code == 302
    benchmark.refresh_from_db()
    assert benchmark.cancel_requested and benchmark.state == "running"


def test_cancel_only_accepts_post(owner_client):
    benchmark = make_benchmark()
    assert owner_client.get(f"/runs/{benchmark.code}/cancel/").status_code == 405


def test_an_unknown_run_is_a_404(owner_client):
    assert owner_client.get("/runs/00000000-0000-0000-0000-000000000000/").status_code == 404


@pytest.mark.parametrize(
    "model", ["node", "runtime", "checkpoint", "workload", "benchmark", "point", "caveat",
              "externalreference"],
)
def test_every_model_has_a_working_admin_page(admin_client, finished_run, model):
    assert admin_client.get(f"/admin/benchmarks/{model}/").status_code == 200


def test_a_point_admin_page_shows_its_record_counts(admin_client, finished_run):
    point = finished_run.points.first()
    response = admin_client.get(f"/admin/benchmarks/point/{point.pk}/change/")
    assert response.status_code == 200 and b"Request count" in response.content


@pytest.mark.usefixtures("run_imports_inline")
def test_a_vllm_bench_summary_with_goodput_slos_shows_its_run_page(owner_client):
    # A summary file (no per-request arrays) with its SLOs as the import guide advises: the
    # SLOs are known, their attainment is not, so "Met all SLOs" has nothing to show.
    summary = {**VLLM_BENCH, "request_goodput": 7.5, "goodput": "ttft:500,tpot:50"}
    upload = SimpleUploadedFile("bench.json", json.dumps(summary).encode())
    assert owner_client.post("/runs/import/", {"file": upload}).status_code == 302
    point = Benchmark.objects.get().points.get()
    assert (point.goodput_slos, point.slo_attainment) == ({"ttft": 500.0, "tpot": 50.0}, {})
    response = owner_client.get(f"/runs/{point.benchmark.code}/")
    assert response.status_code == 200
    assert "Met all SLOs" in response.content.decode()


def test_a_headroom_point_whose_attainment_lacks_all_shows_its_run_page(owner_client):
    benchmark = make_benchmark(state="succeeded")
    result = make_point_result()
    result.metrics.goodput_slos = {"ttft": 500.0}
    result.metrics.slo_attainment = {"ttft": 0.9}
    store_point(benchmark, result)
    assert owner_client.get(f"/runs/{benchmark.code}/").status_code == 200


def test_a_run_over_several_pages_lists_its_decisions_first(owner_client, finished_run,
                                                            monkeypatch):
    monkeypatch.setattr("dashboard.views.POINTS_PER_PAGE", 3)
    first = owner_client.get(f"/runs/{finished_run.code}/")
    rows = first.context["judgement"].rows
    decisions = {r.point.pk for r in rows if r.selected or r.on_frontier}
    listed = [p.pk for p in first.context["listed_points"]]
    assert len(listed) == 3 and 0 < len(decisions) <= 3
    assert set(listed[:len(decisions)]) == decisions
    assert "Points 1-3 of 4 (the operating point and the Pareto frontier first" in (
        first.content.decode())
    second = owner_client.get(f"/runs/{finished_run.code}/?page=2")
    assert {p.pk for p in second.context["listed_points"]} == (
        set(finished_run.points.values_list("pk", flat=True)) - set(listed))


def test_a_run_beyond_the_judged_size_is_summarised_a_page_at_a_time(owner_client, finished_run,
                                                                    monkeypatch):
    monkeypatch.setattr("dashboard.views.POINTS_PER_PAGE", 3)
    monkeypatch.setattr("dashboard.views.MAX_JUDGED_POINTS", 3)
    response = owner_client.get(f"/runs/{finished_run.code}/")
    html = response.content.decode()
    assert response.context["judgement"] is None and response.context["throughput_figure"] is None
    assert len(response.context["listed_points"]) == 3 and 'id="run-summarised"' in html
    assert "This run has 4 points, more than the 3 a page judges at once" in html
    assert "CPU engine stands in for a GPU" in html  # every point's caveats, once
