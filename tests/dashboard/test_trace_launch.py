"""Trace replay and request-length logs on the dashboard: the launch form makes their plans from
files in the data directory (refusing a trace that cannot serve the loads), a plan file of one
comes back onto the form unchanged, and the run page draws the file's lengths beside the sent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.models import Benchmark, Point
from benchmarks.storage import columnar, points
from judgement import charts
from runner.schema.plan import SweepPlan
from runner.schema.result import LengthComparison, LengthHistogram, PointResult
from tests.dashboard.test_plan_files import download, form_post, upload
from tests.rows import (
    make_benchmark,
    make_checkpoint,
    make_node,
    make_point_result,
    make_runtime,
)

pytestmark = pytest.mark.django_db

TRACE_ROWS = [{"timestamp": 250 * i, "input_length": 600, "output_length": 8 + i,
               "hash_ids": [1, 100 + i]} for i in range(6)]


@pytest.fixture
def data_dir(settings, tmp_path) -> Path:
    root = tmp_path / "datasets"
    (root / "traces").mkdir(parents=True)
    (root / "traces" / "mooncake.jsonl").write_text(
        "".join(json.dumps(row) + "\n" for row in TRACE_ROWS))
    (root / "log.csv").write_text("input_tokens,output_tokens\n10,4\n20,8\n")
    (root / "bad.jsonl").write_text(json.dumps(TRACE_ROWS[0]) + "\n{\"timestamp\": 1}\n")
    settings.HEADROOM_DATA_DIR = root
    return root


def trace_form(**fields: str) -> dict[str, str]:
    node = make_node("gpu-a", gpu_count=1)
    return {
        "node": str(node.pk), "checkpoint": str(make_checkpoint().pk),
        "runtime": str(make_runtime().pk), "workload_preset": "custom",
        "prompt_source": "trace", "dataset_path": "traces/mooncake.jsonl",
        "input_tokens_min": "63", "input_tokens_max": "66", "output_tokens": "256",
        "request_count": "6", "temperature": "0", "ignore_eos": "on",
        "endpoint": "completions", "stream": "on", "load_shape": "trace",
        "load_levels": "1, 2.5", "max_num_seqs": "8", "repeats": "1", "replicas": "1",
        "confirm": "1", **fields,
    }


def test_the_form_launches_a_trace_replay_at_each_speed(engineer, launches, data_dir):
    response = engineer.post("/runs/new/", trace_form())
    assert response.status_code == 302, response.context["form"].errors
    plan = SweepPlan.model_validate(Benchmark.objects.get().plan)
    assert [(load.shape, load.speed, load.num_requests) for load in plan.loads] == [
        ("trace", 1.0, 6), ("trace", 2.5, 6)]
    assert (plan.workload.kind, plan.workload.dataset_path) == ("trace", "traces/mooncake.jsonl")


def test_the_form_launches_a_length_log_workload_under_any_shape(engineer, launches, data_dir):
    form = trace_form(prompt_source="lengths", dataset_path="log.csv", load_shape="burst",
                      load_levels="50", ignore_eos="")
    assert engineer.post("/runs/new/", form).status_code == 302
    plan = SweepPlan.model_validate(Benchmark.objects.get().plan)
    assert (plan.workload.kind, plan.workload.ignore_eos, plan.loads[0].shape) == (
        "lengths", False, "burst")


@pytest.mark.parametrize(("fields", "field", "message"), [
    ({"request_count": "7"}, "dataset_path", "7 requests, but the trace traces/mooncake.jsonl "
                                             "holds 6"),
    ({"dataset_path": "bad.jsonl"}, "dataset_path", "bad.jsonl:2: no &#x27;input_length&#x27;"),
    ({"dataset_path": ""}, "dataset_path", "needs its file from the data directory"),
    ({"endpoint": "chat"}, "endpoint", "use /v1/completions"),
    ({"prompt_source": "random"}, "load_shape", "choose a trace as the prompt source"),
])
def test_the_form_refuses_a_trace_that_cannot_run_on_its_field(
    engineer, launches, data_dir, fields, field, message
):
    response = engineer.post("/runs/new/", trace_form(**fields))
    assert response.status_code == 400 and not launches
    assert field in response.context["form"].errors
    assert message in response.content.decode()


def test_a_trace_plan_comes_back_onto_the_form_and_launches_the_same_plan(
    engineer, launches, data_dir, tmp_path
):
    assert engineer.post("/runs/new/", trace_form()).status_code == 302
    first = Benchmark.objects.get()
    response = upload(engineer, download(engineer, first, tmp_path).read_bytes())
    assert response.context["plan_left_out"] == []
    assert response.context["form"].initial["load_levels"] == "1, 2.5"
    again = {**form_post(response.context["form"]), "confirm": "1"}
    assert engineer.post("/runs/new/", again).status_code == 302
    assert Benchmark.objects.exclude(pk=first.pk).get().plan == first.plan


def test_the_form_carries_a_traces_span_and_names_the_settings_it_cannot(engineer, data_dir):
    plan = {
        "name": "replay", "checkpoint": {"model": "org/m"}, "engine_configs": [{}],
        "loads": [{"shape": "trace", "speed": 2, "num_requests": 3}],
        "workload": {"kind": "trace", "dataset_path": "traces/mooncake.jsonl",
                     "trace_span_s": 1.0, "trace_longer": "refuse", "trace_block_tokens": 16},
    }
    response = upload(engineer, json.dumps(plan).encode(), name="plan.json")
    initial = response.context["form"].initial
    assert (initial["trace_span_s"], initial["trace_longer"]) == (1.0, "refuse")
    assert [line for line in response.context["plan_left_out"] if "workload" in line] == [
        "workload.trace_block_tokens 16: the form sends 512"]


def test_the_form_replays_a_traces_first_seconds_or_refuses_to_leave_requests_out(
    engineer, launches, data_dir
):
    # The first 1.0 s of the trace holds the rows at 0, 250, 500 and 750 ms (the one at 1,000
    # is past it): 4 requests.
    form = trace_form(trace_span_s="1.0", request_count="4")
    response = engineer.post("/runs/new/", form)
    assert response.status_code == 302, response.context["form"].errors
    benchmark = Benchmark.objects.get()
    plan = SweepPlan.model_validate(benchmark.plan)
    assert (plan.workload.trace_span_s, plan.workload.trace_longer) == (1.0, "truncate")
    assert benchmark.workload.trace_span_s == 1.0
    assert "the trace's first 1 s" in str(benchmark.workload)

    response = engineer.post("/runs/new/", {**form, "request_count": "5"})
    assert response.status_code == 400
    assert "holds 4" in " ".join(response.context["form"].errors["dataset_path"])

    form = {**form, "request_count": "3", "trace_longer": "refuse"}
    response = engineer.post("/runs/new/", form)
    assert response.status_code == 400 and len(launches) == 1
    assert "would leave out 1 of the 4 in the first 1 s of the trace" in " ".join(
        response.context["form"].errors["dataset_path"])


@pytest.mark.parametrize(("fields", "field", "message"), [
    ({"trace_span_s": "0"}, "trace_span_s", "greater than or equal to 0.001"),
    ({"trace_span_s": "inf"}, "trace_span_s", "Enter a number"),
    ({"prompt_source": "random", "load_shape": "burst", "trace_span_s": "2"}, "trace_span_s",
     "A span is of a trace's time"),
    ({"prompt_source": "random", "load_shape": "burst", "trace_longer": "refuse"},
     "trace_longer", "Only a trace workload can be longer than a load"),
])
def test_the_form_refuses_trace_options_that_mean_nothing(
    engineer, launches, data_dir, fields, field, message
):
    response = engineer.post("/runs/new/", trace_form(**fields))
    assert response.status_code == 400 and not launches
    assert message in " ".join(response.context["form"].errors[field])


def lengths_point() -> PointResult:
    requests = [r.model_copy(update={"prompt_tokens": 10 + i, "max_tokens": 4})
                for i, r in enumerate(make_point_result(requests=4).requests)]
    comparison = LengthComparison(
        file="log.csv", source_requests=8, sent_requests=4,
        input_tokens=LengthHistogram(edges=[10, 12, 14], source=[6, 2], sent=[2, 2]),
        output_tokens=LengthHistogram(edges=[4, 5], source=[8], sent=[4]),
    )
    return make_point_result(requests=4).model_copy(
        update={"lengths": comparison, "requests": requests})


def test_a_point_keeps_its_length_comparison_and_each_requests_max_tokens():
    benchmark = make_benchmark(state="succeeded")
    stored = points.store_point(benchmark, lengths_point())
    back = points.point_to_result(Point.objects.get(pk=stored.pk))
    assert back.lengths == lengths_point().lengths
    assert [r.max_tokens for r in back.requests] == [4, 4, 4, 4]


def test_requests_stored_before_max_tokens_existed_read_back_without_it():
    arrays = columnar._unpack(columnar.encode_requests(lengths_point().requests))
    del arrays["max_tokens"]
    assert all(r.max_tokens is None for r in columnar.decode_requests(columnar._pack(arrays)))


def test_the_run_page_draws_the_files_lengths_beside_the_sent(engineer):
    benchmark = make_benchmark(state="succeeded")
    points.store_point(benchmark, lengths_point())
    points.store_point(benchmark, make_point_result(num_requests=2000, requests=2))
    page = engineer.get(f"/runs/{benchmark.code}/").content.decode()
    assert 'id="lengths-data"' in page and "js/lengths.js" in page
    figure = charts.lengths_figure(Point.objects.filter(benchmark=benchmark))
    assert figure is not None
    inputs, outputs = figure["panels"]
    assert (inputs["x"], inputs["width"], inputs["bins"]) == ([11, 13], [2, 2], ["10-11", "12-13"])
    assert (inputs["source"], inputs["sent"]) == ([75.0, 25.0], [50.0, 50.0])
    assert outputs["sent"] == [100.0]
    assert figure["source_label"] == "log.csv (8 requests)"


def test_a_run_without_a_length_workload_has_no_length_chart(engineer):
    benchmark = make_benchmark(state="succeeded")
    points.store_point(benchmark, make_point_result(requests=2))
    page = engineer.get(f"/runs/{benchmark.code}/").content.decode()
    assert "lengths-data" not in page


@pytest.mark.parametrize("fields", [
    {"prompt_source": "random", "trace_span_s": 2.0},
    {"prompt_source": "random", "trace_longer": "refuse"},
    {"prompt_source": "trace", "dataset_path": "t.jsonl", "trace_span_s": 0.0},
    {"prompt_source": "trace", "dataset_path": "t.jsonl", "trace_span_s": float("nan")},
    {"prompt_source": "trace", "dataset_path": "t.jsonl", "trace_span_s": float("inf")},
])
def test_the_database_refuses_trace_options_that_mean_nothing(fields):
    from django.db import IntegrityError, transaction

    from benchmarks.models import Workload

    with transaction.atomic(), pytest.raises(IntegrityError):
        Workload.objects.create(**fields)
