"""Conversation workloads on the dashboard: the launch form makes their plans from a file in the
data directory (refusing one it cannot replay), a point keeps its per-turn and per-conversation
figures and each request's conversation and turn, and the run page shows them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.convert import workload_shape
from benchmarks.models import Benchmark, Point
from benchmarks.storage import columnar, points
from runner.schema.engine_config import Checkpoint, EngineConfig
from runner.schema.plan import LoadSpec, SweepPlan, WorkloadSpec
from runner.schema.result import ConversationSummary, PointResult, TurnSummary
from tests.rows import (
    make_benchmark,
    make_checkpoint,
    make_node,
    make_point_result,
    make_runtime,
)

pytestmark = pytest.mark.django_db

TWO_TURNS = {"conversations": [{"from": "human", "value": "hello"}, {"from": "gpt", "value": "hi"},
                               {"from": "human", "value": "and then?"}]}


@pytest.fixture
def data_dir(settings, tmp_path) -> Path:
    root = tmp_path / "datasets"
    (root / "chats").mkdir(parents=True)
    (root / "chats" / "two.jsonl").write_text(json.dumps(TWO_TURNS) + "\n" * 2 + json.dumps(
        {"messages": [{"role": "user", "content": "one turn"}]}) + "\n")
    (root / "no_user.jsonl").write_text(
        json.dumps(TWO_TURNS) + "\n" + json.dumps({"conversations": [{"from": "gpt",
                                                                      "value": "x"}]}) + "\n")
    settings.HEADROOM_DATA_DIR = root
    return root


def conversation_form(**fields: str) -> dict[str, str]:
    node = make_node("gpu-a", gpu_count=1)
    return {
        "node": str(node.pk), "checkpoint": str(make_checkpoint().pk),
        "runtime": str(make_runtime().pk), "workload_preset": "custom",
        "prompt_source": "conversation", "dataset_path": "chats/two.jsonl",
        "input_tokens_min": "63", "input_tokens_max": "66", "output_tokens": "32",
        "request_count": "3", "temperature": "0", "ignore_eos": "on",
        "endpoint": "chat", "stream": "on", "load_shape": "concurrency",
        "load_levels": "1, 2", "max_num_seqs": "8", "repeats": "1", "replicas": "1",
        "confirm": "1", **fields,
    }


def test_the_form_launches_a_conversation_replay_at_each_concurrency(
    engineer, launches, data_dir
):
    response = engineer.post("/runs/new/", conversation_form())
    assert response.status_code == 302, response.context["form"].errors
    plan = SweepPlan.model_validate(Benchmark.objects.get().plan)
    assert [(load.shape, load.concurrency, load.num_requests) for load in plan.loads] == [
        ("concurrency", 1, 3), ("concurrency", 2, 3)]
    assert (plan.workload.kind, plan.workload.dataset_path, plan.workload.endpoint) == (
        "conversation", "chats/two.jsonl", "chat")
    assert len(launches) == 1


@pytest.mark.parametrize(("fields", "field", "message"), [
    ({"dataset_path": ""}, "dataset_path", "A conversation workload needs its JSONL file"),
    ({"endpoint": "completions"}, "endpoint", "use /v1/chat/completions"),
    ({"dataset_path": "no_user.jsonl"}, "dataset_path",
     "no_user.jsonl:2: the conversation has no user turn"),
    ({"request_count": "4"}, "dataset_path", "4 requests (turns), but chats/two.jsonl holds 3 "
                                             "turns in 2 conversations"),
    ({"load_shape": "trace"}, "load_shape", "choose a trace as the prompt source"),
])
def test_the_form_refuses_a_conversation_workload_that_cannot_run_on_its_field(
    engineer, launches, data_dir, fields, field, message
):
    response = engineer.post("/runs/new/", conversation_form(**fields))
    assert response.status_code == 400 and not launches
    assert field in response.context["form"].errors
    assert message in " ".join(response.context["form"].errors[field])


def conversation_point() -> PointResult:
    base = make_point_result(requests=4)
    requests = [r.model_copy(update={"conversation": i // 2, "turn": i % 2 + 1})
                for i, r in enumerate(base.requests)]
    summary = ConversationSummary(
        file="chats/two.jsonl", conversations=2, completed_conversations=2, turns=4,
        mean_turns_completed=2.0, median_duration_ms=1234.0, p99_duration_ms=1500.0,
        max_duration_ms=1510.0,
        by_turn=[
            TurnSummary(turn=1, requests=2, completed=2, mean_prompt_tokens=20.0,
                               mean_output_tokens=32.0, median_ttft_ms=11.0, p99_ttft_ms=12.0,
                               median_e2el_ms=400.0, p99_e2el_ms=410.0),
            TurnSummary(turn=2, requests=2, completed=2, mean_prompt_tokens=61.0,
                               mean_output_tokens=32.0, median_ttft_ms=17.0, p99_ttft_ms=19.0,
                               median_e2el_ms=430.0, p99_e2el_ms=440.0),
        ],
    )
    workload = WorkloadSpec(kind="conversation", dataset_path="chats/two.jsonl",
                                   endpoint="chat")
    return base.model_copy(update={"requests": requests, "conversations": summary,
                                   "workload": workload})


def test_a_point_keeps_its_conversation_figures_and_each_requests_turn():
    stored = points.store_point(make_benchmark(state="succeeded"), conversation_point())
    back = points.point_to_result(Point.objects.get(pk=stored.pk))
    assert back.conversations == conversation_point().conversations
    assert [(r.conversation, r.turn) for r in back.requests] == [(0, 1), (0, 2), (1, 1), (1, 2)]


def test_requests_stored_before_conversations_existed_read_back_without_them():
    arrays = columnar._unpack(columnar.encode_requests(conversation_point().requests))
    del arrays["conversation"], arrays["turn"]
    old = columnar.decode_requests(columnar._pack(arrays))
    assert all(r.conversation is None and r.turn is None for r in old)


def test_the_run_page_shows_latency_by_turn_and_by_conversation(engineer):
    benchmark = make_benchmark(state="succeeded")
    stored = points.store_point(benchmark, conversation_point())
    page = engineer.get(f"/runs/{benchmark.code}/").content.decode()
    assert 'id="conversations"' in page
    summary = page.split(f'id="point-{stored.pk}-conversations">')[1].split("</p>")[0]
    assert "2 of 2 conversations" in summary and "median 1234 ms" in summary
    turns = page.split(f'id="point-{stored.pk}-turns">')[1].split("</table>")[0]
    rows = [row.split("</tr>")[0] for row in turns.split("<tr>")[2:]]
    assert len(rows) == 2
    assert "<td>2</td>" in rows[1] and ">61</td>" in rows[1] and ">17</td>" in rows[1]


def test_a_run_of_another_workload_has_no_conversation_section(engineer):
    benchmark = make_benchmark(state="succeeded")
    points.store_point(benchmark, make_point_result(requests=2))
    page = engineer.get(f"/runs/{benchmark.code}/").content.decode()
    assert 'id="conversations"' not in page


def test_a_conversation_workload_compares_by_its_file_never_by_its_unused_token_range():
    spec = WorkloadSpec(kind="conversation", dataset_path="chats/two.jsonl",
                               endpoint="chat")
    shape = workload_shape(spec)
    assert shape.label() == "conversations chats/two.jsonl / 256 out"
    assert shape != workload_shape(WorkloadSpec())  # the same 63-66 / 256 bounds


def test_the_form_caps_each_conversations_turns_and_checks_the_file_with_the_cap(
    engineer, launches, data_dir
):
    # Capped at one turn, the file holds 2 turns (one per conversation): 2 requests fit.
    form = conversation_form(conversation_turns_max="1", request_count="2")
    response = engineer.post("/runs/new/", form)
    assert response.status_code == 302, response.context["form"].errors
    benchmark = Benchmark.objects.get()
    plan = SweepPlan.model_validate(benchmark.plan)
    assert plan.workload.conversation_turns_max == 1
    assert benchmark.workload.conversation_turns_max == 1
    assert "at most 1 turns a conversation" in str(benchmark.workload)

    # 3 requests would need a turn the cap leaves out: refused, as the runner would refuse it.
    response = engineer.post("/runs/new/", {**form, "request_count": "3"})
    assert response.status_code == 400 and len(launches) == 1
    assert ("holds 2 turns in 2 conversations at 1 turn each at most (conversation_turns_max)"
            in " ".join(response.context["form"].errors["dataset_path"]))


@pytest.mark.parametrize(("fields", "message"), [
    ({"conversation_turns_max": "0"}, "greater than or equal to 1"),
    ({"conversation_turns_max": "2", "prompt_source": "random", "endpoint": "completions"},
     "Turns are capped only in a conversation workload"),
])
def test_the_form_refuses_a_turn_cap_that_means_nothing(
    engineer, launches, data_dir, fields, message
):
    response = engineer.post("/runs/new/", conversation_form(**fields))
    assert response.status_code == 400 and not launches
    assert message in " ".join(response.context["form"].errors["conversation_turns_max"])


def test_an_uploaded_plan_with_a_turn_cap_fills_the_form_with_nothing_left_out(data_dir):
    from dashboard.plan_files import plan_on_form

    plan = SweepPlan(
        name="talks", checkpoint=Checkpoint(model="m"),
        engine_configs=[EngineConfig(max_num_seqs=8)],
        workload=WorkloadSpec(kind="conversation", dataset_path="chats/two.jsonl",
                                     endpoint="chat", output_tokens=32,
                                     conversation_turns_max=1),
        loads=[LoadSpec(shape="concurrency", concurrency=1, num_requests=2)],
    )
    on_form = plan_on_form(plan)
    assert on_form.initial["conversation_turns_max"] == 1
    assert not [line for line in on_form.left_out if "conversation_turns_max" in line]


def test_a_turn_cap_on_another_workload_is_refused_by_the_database():
    from django.db import IntegrityError, transaction

    from benchmarks.models import Workload

    with transaction.atomic(), pytest.raises(IntegrityError):
        Workload.objects.create(prompt_source="random", conversation_turns_max=2)
    with transaction.atomic(), pytest.raises(IntegrityError):
        Workload.objects.create(prompt_source="conversation", dataset_path="c.jsonl",
                                endpoint="chat", conversation_turns_max=0)
