"""Multi-turn conversations: the file, the counting, the messages each turn sends, and the
schedule, against a real local HTTP server (tests/runner/fakeserver.py), whose reply to every
request is " tok" repeated max_tokens times and whose prompt tokens are the words of every
message sent."""

from __future__ import annotations

import json
import random
import time
from itertools import pairwise
from pathlib import Path

import pytest

from runner.cli.commands import EXIT_BAD_INPUT, plan_from_bench_args
from runner.cli.parser import build_parser, main
from runner.client.schedule import Target, plan_jobs, send_offsets
from runner.client.workers import run_load
from runner.measure.summary import print_summary
from runner.schema.engine_config import Checkpoint, EngineConfig
from runner.schema.plan import ClientSpec, LoadSpec, SweepPlan, WorkloadSpec
from runner.schema.records import RequestRecord
from runner.schema.result import PointResult
from runner.workloads import conversations
from runner.workloads.prompts import (
    DatasetError,
    Prompt,
    WorkloadError,
    build_prompts,
)
from tests.factories import metrics
from tests.runner.fakeserver import FakeVllm

FAST_CLIENT = ClientSpec(request_timeout_s=10, stall_timeout_s=0.5)
OUTPUT_TOKENS = 3
REPLY = {"role": "assistant", "content": " tok" * OUTPUT_TOKENS}


def sharegpt(*users: str, system: str | None = None) -> dict:
    """A ShareGPT line: each user message followed by a recorded reply the replay leaves out."""
    turns = [{"from": "system", "value": system}] if system else []
    for number, text in enumerate(users):
        turns += [{"from": "human", "value": text}, {"from": "gpt", "value": f"recorded {number}"}]
    return {"conversations": turns}


def write(path: Path, rows: list) -> Path:
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n"
                            for row in rows))
    return path


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def workload(path: Path, **fields) -> WorkloadSpec:
    return WorkloadSpec(kind="conversation", dataset_path=str(path), endpoint="chat",
                        output_tokens=OUTPUT_TOKENS, **fields)


def run(server: FakeVllm, spec: WorkloadSpec, load: LoadSpec, processes: int = 1):
    prompts = build_prompts(spec, load.num_requests)
    client = FAST_CLIENT.model_copy(update={"processes": processes})
    return run_load([Target(0, server.base_url, "m")], spec, load, client, prompts)


def by_conversation(records: list[RequestRecord]) -> dict[int, list[RequestRecord]]:
    talks: dict[int, list[RequestRecord]] = {}
    for record in sorted(records, key=lambda r: r.index):
        assert record.conversation is not None
        talks.setdefault(record.conversation, []).append(record)
    return talks


# ---------------------------------------------------------------------------------------------
# The file
# ---------------------------------------------------------------------------------------------


def test_it_reads_user_turns_of_both_styles_and_leaves_the_recorded_replies_out(tmp_path):
    openai = {"messages": [{"role": "system", "content": "be brief"}, user("hi"),
                           {"role": "assistant", "content": "recorded"}, user("more"),
                           {"role": "assistant", "content": "recorded"}]}
    path = write(tmp_path / "c.jsonl", [sharegpt("one", "two", "three"), "", openai,
                                        sharegpt("alone")])
    read = conversations.read_conversations(path)
    assert [c.line for c in read] == [1, 3, 4]
    assert read[0].turns == ((user("one"),), (user("two"),), (user("three"),))
    # The system prompt goes with the first user turn, so every later turn carries it too.
    assert read[1].turns == (({"role": "system", "content": "be brief"}, user("hi")),
                             (user("more"),))
    assert read[2].turns == ((user("alone"),),)


def test_a_system_message_between_turns_goes_with_the_next_user_turn(tmp_path):
    row = {"conversations": [{"from": "human", "value": "a"}, {"from": "gpt", "value": "x"},
                             {"from": "system", "value": "now in French"},
                             {"from": "human", "value": "b"}]}
    (read,) = conversations.read_conversations(write(tmp_path / "c.jsonl", [row]))
    assert read.turns == ((user("a"),), ({"role": "system", "content": "now in French"},
                                         user("b")))


@pytest.mark.parametrize(("line", "message"), [
    ("{not json", ":2: not JSON"),
    (json.dumps({"prompt": "hi"}), ":2: expected {'conversations'"),
    (json.dumps({"conversations": [{"value": "no role"}]}), ":2: message 1 has no 'from'"),
    (json.dumps({"messages": [user("a"), {"role": "user", "content": ""}]}),
     ":2: message 2 (user) has no text"),
    (json.dumps({"conversations": [{"from": "human", "value": 7}]}),
     ":2: message 1 (human) has no text"),
    (json.dumps({"conversations": [{"from": "gpt", "value": "only a reply"}]}),
     ":2: the conversation has no user turn"),
    (json.dumps({"messages": []}), ":2: the conversation has no user turn"),
])
def test_a_bad_line_is_refused_with_its_file_and_line(tmp_path, line, message):
    path = write(tmp_path / "bad.jsonl", [sharegpt("fine"), line])
    with pytest.raises(DatasetError) as raised:
        conversations.read_conversations(path)
    assert f"{path}{message}" in str(raised.value)


def test_an_empty_file_is_refused(tmp_path):
    with pytest.raises(DatasetError, match="has no conversations"):
        conversations.read_conversations(write(tmp_path / "empty.jsonl", ["", ""]))


# ---------------------------------------------------------------------------------------------
# Counting: turns are requests; conversations whole in the seed's order, the last one cut
# ---------------------------------------------------------------------------------------------


def sized_file(tmp_path: Path, sizes: list[int]) -> Path:
    return write(tmp_path / "sized.jsonl",
                 [sharegpt(*(f"c{c} t{t}" for t in range(1, size + 1)))
                  for c, size in enumerate(sizes)])


def test_conversations_are_taken_whole_in_the_seeds_order_and_the_last_one_is_cut(tmp_path):
    sizes = [3, 2, 4, 1]
    spec = workload(sized_file(tmp_path, sizes), seed=1)
    order = list(range(len(sizes)))
    random.Random(1).shuffle(order)
    assert order == [3, 0, 2, 1]  # the seed's order, as a dataset's lines are shuffled
    prompts = build_prompts(spec, 6)
    expected = [(0, 1, "c3 t1"), (1, 1, "c0 t1"), (1, 2, "c0 t2"), (1, 3, "c0 t3"),
                (2, 1, "c2 t1"), (2, 2, "c2 t2")]
    assert [(p.conversation, p.turn, p.messages[-1]["content"]) for p in prompts] == expected
    assert [p.index for p in prompts] == list(range(6))
    file = conversations.conversation_file(spec, None)
    assert conversations.conversation_notes(file, 6, seed=1) == [
        f"3 of the 4 conversations in {spec.dataset_path} (6 turns), taken whole in the order "
        "of seed 1",
        "the last one (conversation 2) cut to its first 2 of 4 turns to fit the load's 6 "
        "requests",
    ]
    # A load that ends on a conversation's last turn cuts none.
    assert conversations.conversation_notes(file, 4, seed=1) == [
        f"2 of the 4 conversations in {spec.dataset_path} (4 turns), taken whole in the order "
        "of seed 1"]


def test_conversation_turns_max_caps_every_conversation(tmp_path):
    spec = workload(sized_file(tmp_path, [3, 2, 4, 1]), seed=1, conversation_turns_max=2)
    prompts = build_prompts(spec, 7)  # file conversations 3, 0, 2, 1: 1 + 2 + 2 + 2 turns
    assert [(p.conversation, p.turn, p.messages[-1]["content"]) for p in prompts] == [
        (0, 1, "c3 t1"), (1, 1, "c0 t1"), (1, 2, "c0 t2"), (2, 1, "c2 t1"), (2, 2, "c2 t2"),
        (3, 1, "c1 t1"), (3, 2, "c1 t2")]
    file = conversations.conversation_file(spec, None)
    assert file.capped == 2 and file.turns == 7
    assert conversations.conversation_notes(file, 7, seed=1)[-1] == (
        "2 conversation(s) of the file cut to their first 2 turns (conversation_turns_max)")


def test_a_load_needing_more_turns_than_the_file_holds_is_refused_before_any_engine(tmp_path):
    spec = workload(sized_file(tmp_path, [3, 2]))
    loads = [LoadSpec(num_requests=5), LoadSpec(num_requests=6)]
    with pytest.raises(WorkloadError, match=r"burst 6: 6 requests \(turns\), but .* holds 5 "
                                            r"turns in 2 conversations; a conversation is sent "
                                            r"once, never repeated"):
        conversations.check_conversations(spec, None, loads)
    assert conversations.check_conversations(spec, None, loads[:1]).turns == 5
    with pytest.raises(WorkloadError, match="6 warm-up requests"):
        conversations.check_conversations(spec, None, loads[:1], warmup=6)
    assert conversations.check_conversations(WorkloadSpec(), None, loads) is None


def test_the_file_is_read_from_inside_the_data_directory(tmp_path):
    sized_file(tmp_path, [2])
    spec = workload(tmp_path / "x").model_copy(update={"dataset_path": "sized.jsonl"})
    assert conversations.conversation_file(spec, tmp_path).turns == 2
    outside = spec.model_copy(update={"dataset_path": "../sized.jsonl"})
    with pytest.raises(DatasetError, match="not inside the data directory"):
        conversations.conversation_file(outside, tmp_path / "sub")


def test_the_schema_asks_for_a_file_and_the_chat_endpoint():
    with pytest.raises(ValueError, match="needs dataset_path"):
        WorkloadSpec(kind="conversation", endpoint="chat")
    with pytest.raises(ValueError, match="use the chat endpoint"):
        WorkloadSpec(kind="conversation", dataset_path="c.jsonl")
    with pytest.raises(ValueError, match="conversation_turns_max only applies"):
        WorkloadSpec(kind="dataset", dataset_path="c.jsonl", conversation_turns_max=2)
    spec = WorkloadSpec(kind="conversation", dataset_path="c.jsonl", endpoint="chat",
                        conversation_turns_max=2, output_tokens=64)
    assert spec.spec_label() == "conversations c.jsonl, at most 2 turns / 64 out"
    with pytest.raises(ValueError, match="a trace load replays a trace workload"):
        SweepPlan(checkpoint=Checkpoint(model="org/m"), engine_configs=[{}], workload=spec,
                  loads=[LoadSpec(shape="trace", num_requests=4)])


# ---------------------------------------------------------------------------------------------
# Messages: each turn carries the conversation so far, with the model's own replies
# ---------------------------------------------------------------------------------------------


def test_a_turn_sends_the_history_then_its_own_messages():
    history = [user("u1"), {"role": "assistant", "content": "r1"}]
    prompt = Prompt(index=1, messages=[user("u2")], conversation=0, turn=2)
    sent = conversations.turn_messages(history, prompt)
    assert sent == [user("u1"), {"role": "assistant", "content": "r1"}, user("u2")]
    assert conversations.with_reply(sent, "r2")[-1] == {"role": "assistant", "content": "r2"}
    assert len(history) == 2  # the history is never changed in place


def test_turn_two_carries_user_one_the_models_own_reply_and_user_two(fake_vllm, tmp_path):
    path = write(tmp_path / "c.jsonl", [sharegpt("u1", "u2", "u3", system="sys")])
    outcome = run(fake_vllm, workload(path), LoadSpec(num_requests=3))
    assert all(r.ok for r in outcome.records)
    sent = [body["messages"] for body in fake_vllm.requests]
    system = {"role": "system", "content": "sys"}
    assert sent == [
        [system, user("u1")],
        [system, user("u1"), REPLY, user("u2")],
        [system, user("u1"), REPLY, user("u2"), REPLY, user("u3")],
    ]
    # The server counts every word sent: the history makes each turn's prompt longer.
    assert [r.prompt_tokens for r in outcome.records] == [2, 6, 10]
    assert [(r.conversation, r.turn) for r in outcome.records] == [(0, 1), (0, 2), (0, 3)]


def test_a_non_streamed_turns_reply_goes_into_the_next_turn(fake_vllm, tmp_path):
    path = write(tmp_path / "c.jsonl", [sharegpt("u1", "u2")])
    outcome = run(fake_vllm, workload(path, stream=False), LoadSpec(num_requests=2))
    assert all(r.ok for r in outcome.records)
    assert fake_vllm.requests[1]["messages"] == [user("u1"), REPLY, user("u2")]


def test_a_failed_turn_ends_its_conversation_and_the_rest_are_recorded_not_lost(
    fake_vllm, tmp_path
):
    path = write(tmp_path / "c.jsonl", [sharegpt("a1", "a2 mode=http_500", "a3", "a4"),
                                        sharegpt("b1", "b2")])
    spec = workload(path)
    prompts = build_prompts(spec, 6)
    first = prompts[0].messages[-1]["content"][0]  # which file conversation the seed put first
    started = time.monotonic()
    outcome = run(fake_vllm, spec, LoadSpec(num_requests=6))
    assert time.monotonic() - started < 5
    assert len(outcome.records) == 6 and len(fake_vllm.requests) == 4  # a3, a4 never sent
    talks = by_conversation(outcome.records)
    failing = talks[0 if first == "a" else 1]
    assert [r.ok for r in failing] == [True, False, False, False]
    assert failing[1].status == 500
    assert [r.error for r in failing[2:]] == ["not sent: turn 2 failed"] * 2
    assert all(r.actual_send is None for r in failing[2:])
    assert [r.turn for r in failing] == [1, 2, 3, 4]
    assert all(r.ok for r in talks[1 if first == "a" else 0])
    point = point_of(spec, outcome.records, LoadSpec(num_requests=6))
    conversations.annotate_point(point, conversations.conversation_file(spec, None))
    assert "1 conversation(s) ended early: a turn failed, and the turns after it were not " \
           "sent (recorded as failed)" in point.notes
    assert point.conversations is not None
    assert (point.conversations.conversations, point.conversations.completed_conversations) == (
        2, 1)


# ---------------------------------------------------------------------------------------------
# The schedule: a turn is due when the previous one ended
# ---------------------------------------------------------------------------------------------


def test_a_later_turn_is_due_when_the_turn_before_it_ended(fake_vllm, tmp_path):
    fake_vllm.interval_s = 0.01
    path = write(tmp_path / "c.jsonl", [sharegpt("a1", "a2", "a3"), sharegpt("b1", "b2")])
    outcome = run(fake_vllm, workload(path), LoadSpec(num_requests=5))
    for turns in by_conversation(outcome.records).values():
        assert turns[0].intended_send == 0.0  # a burst starts every conversation at t0
        for before, after in pairwise(turns):
            assert after.intended_send == before.completed_at
            assert before.completed_at <= after.actual_send < before.completed_at + 0.2
    schedule = outcome.health.schedule
    assert schedule is not None and schedule.requests == 5 and schedule.sent == 5


def test_a_closed_loop_keeps_c_conversations_in_flight(fake_vllm, tmp_path):
    fake_vllm.interval_s = 0.01
    path = write(tmp_path / "c.jsonl", [sharegpt(f"{c}1", f"{c}2") for c in "abcde"])
    outcome = run(fake_vllm, workload(path), LoadSpec(shape="concurrency", num_requests=10,
                                                      concurrency=2))
    talks = by_conversation(outcome.records)
    spans = sorted((turns[0].actual_send, turns[-1].completed_at) for turns in talks.values())
    assert all(r.ok for r in outcome.records)

    def in_flight(at: float) -> int:
        return sum(start <= at < end for start, end in spans)

    assert max(in_flight(start) for start, _ in spans) == 2
    # The first two start at once; each later one starts when an earlier one ended.
    ends = sorted(end for _, end in spans)
    assert spans[1][0] < spans[0][1]
    for (start, _), end in zip(spans[2:], ends, strict=False):
        assert start >= end - 1e-9


def test_a_rate_starts_conversations_on_the_rate_schedule_of_their_count(fake_vllm, tmp_path):
    path = write(tmp_path / "c.jsonl", [sharegpt(f"{c}1", f"{c}2") for c in "abc"])
    load = LoadSpec(shape="rate", num_requests=6, rate=20.0)
    outcome = run(fake_vllm, workload(path, seed=3), load)
    firsts = [turns[0].intended_send for turns in by_conversation(outcome.records).values()]
    expected = send_offsets(LoadSpec(shape="rate", num_requests=3, rate=20.0), seed=3)
    assert firsts == pytest.approx(expected)


def test_worker_processes_each_get_whole_conversations(tmp_path):
    spec = workload(sized_file(tmp_path, [2, 1, 3, 2, 1]), seed=1)
    prompts = build_prompts(spec, 9)
    load = LoadSpec(shape="concurrency", num_requests=9, concurrency=3)
    jobs = plan_jobs([Target(0, "http://a:1", "m")], load, ClientSpec(processes=2), prompts, 1)
    assert [job.concurrency for job in jobs] == [2, 1]
    for w, job in enumerate(jobs):
        assert job.conversations is not None
        assert [turns[0].prompt.conversation for turns in job.conversations] == list(
            range(w, 5, 2))
        for turns in job.conversations:
            assert len({item.prompt.conversation for item in turns}) == 1
            assert [item.prompt.turn for item in turns] == list(range(1, len(turns) + 1))
        assert job.items == [item for turns in job.conversations for item in turns]
    # A burst: every conversation's first turn at t0; a later turn's time is its previous
    # turn's end, known only when it comes.
    (burst,) = plan_jobs([Target(0, "http://a:1", "m")], LoadSpec(num_requests=9),
                         ClientSpec(), prompts, 1)
    assert burst.conversations is not None and len(burst.conversations) == 5
    for turns in burst.conversations:
        assert [item.offset for item in turns] == [0.0] + [None] * (len(turns) - 1)


def test_a_conversation_run_in_worker_processes_keeps_its_turns(fake_vllm, tmp_path):
    path = write(tmp_path / "c.jsonl", [sharegpt(f"{c}1", f"{c}2") for c in "abc"])
    outcome = run(fake_vllm, workload(path), LoadSpec(num_requests=6), processes=2)
    assert [(r.conversation, r.turn, r.ok) for r in outcome.records] == [
        (c, t, True) for c in range(3) for t in (1, 2)]


def test_a_trace_load_of_conversations_is_refused(tmp_path):
    spec = workload(sized_file(tmp_path, [2]))
    with pytest.raises(ValueError, match="a conversation's turns go when the turn before"):
        plan_jobs([Target(0, "http://a:1", "m")], LoadSpec(shape="trace", num_requests=2),
                  ClientSpec(), build_prompts(spec, 2), 0)


# ---------------------------------------------------------------------------------------------
# Per-turn and per-conversation figures
# ---------------------------------------------------------------------------------------------


def record(conversation: int, turn: int, sent: float, ttft: float, e2el: float, prompt: int,
           replica: int = 0, ok: bool = True) -> RequestRecord:
    return RequestRecord.model_validate(dict(
        index=conversation * 10 + turn, replica=replica, intended_send=sent, actual_send=sent,
        ttft=ttft, e2el=e2el, completed_at=sent + e2el, chunk_times=[sent + ttft, sent + e2el],
        chunk_tokens=[1, 1], prompt_tokens=prompt, output_tokens=2, status=200 if ok else 500,
        error=None if ok else "HTTP 500", conversation=conversation, turn=turn,
    ))


def point_of(spec: WorkloadSpec, records: list[RequestRecord], load: LoadSpec) -> PointResult:
    return PointResult(key="k", engine_config=EngineConfig(), load=load, workload=spec,
                       metrics=metrics(completed=len(records)), requests=records)


def test_the_summary_gives_latency_by_turn_and_by_conversation():
    records = [
        record(0, 1, 0.0, 0.1, 0.5, 10), record(0, 2, 0.6, 0.2, 1.0, 30),
        record(1, 1, 0.0, 0.3, 0.7, 20), record(1, 2, 0.8, 0.4, 1.2, 50),
        # The same conversation on a second replica is a conversation of its own; its second
        # turn failed, so its duration is left out (it would read as a fast conversation).
        record(0, 1, 0.0, 0.5, 0.9, 10, replica=1), record(0, 2, 1.0, 0.0, 0.1, 0, replica=1,
                                                           ok=False),
    ]
    summary = conversations.conversation_summary(records, "c.jsonl")
    assert summary is not None
    assert (summary.conversations, summary.completed_conversations, summary.turns) == (3, 2, 6)
    assert summary.mean_turns_completed == pytest.approx(5 / 3)
    # Durations: 0.0 -> 1.6 s and 0.0 -> 2.0 s.
    assert summary.median_duration_ms == pytest.approx(1800.0)
    assert summary.max_duration_ms == pytest.approx(2000.0)
    assert summary.p99_duration_ms == pytest.approx(1600 + 0.99 * 400)
    first, second = summary.by_turn
    assert (first.turn, first.requests, first.completed) == (1, 3, 3)
    assert (second.turn, second.requests, second.completed) == (2, 3, 2)
    assert first.mean_prompt_tokens == pytest.approx(40 / 3)
    assert second.mean_prompt_tokens == pytest.approx(40.0)  # the failed one not counted
    assert first.median_ttft_ms == pytest.approx(300.0)
    assert second.median_ttft_ms == pytest.approx(300.0)
    assert second.median_e2el_ms == pytest.approx(1100.0)
    assert first.p99_e2el_ms == pytest.approx(700 + 0.98 * 200)


def test_a_point_of_another_workload_has_no_conversation_summary():
    plain = RequestRecord(index=0, intended_send=0.0)
    assert conversations.conversation_summary([plain], "x") is None
    point = point_of(WorkloadSpec(), [plain], LoadSpec(num_requests=1))
    conversations.annotate_point(point, None)
    assert point.conversations is None and point.notes == []


# ---------------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------------


def test_the_command_line_makes_a_conversation_replay(tmp_path):
    args = build_parser().parse_args([
        "bench", "--model", "org/m", "--out", str(tmp_path / "x.jsonl"),
        "--workload", "conversation", "--dataset", "c.jsonl", "--endpoint", "chat",
        "--conversation-turns-max", "3", "--shape", "concurrency", "--concurrency", "4",
        "--num-requests", "40"])
    plan = SweepPlan.model_validate(plan_from_bench_args(args))
    assert (plan.workload.kind, plan.workload.dataset_path, plan.workload.endpoint,
            plan.workload.conversation_turns_max) == ("conversation", "c.jsonl", "chat", 3)
    assert plan.loads[0] == LoadSpec(shape="concurrency", num_requests=40, concurrency=4)


def test_the_command_line_refuses_a_file_too_short_before_any_engine(tmp_path, capsys):
    path = sized_file(tmp_path, [2, 1])
    code = main(["bench", "--model", "org/m", "--out", str(tmp_path / "x.jsonl"),
                 "--workload", "conversation", "--dataset", str(path), "--endpoint", "chat",
                 "--num-requests", "4"])
    assert code == EXIT_BAD_INPUT
    assert "4 requests (turns), but" in capsys.readouterr().err


def test_the_cli_summary_prints_a_conversation_point_by_turn(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    records = [
        record(0, 1, 0.0, 0.1, 0.5, 10), record(0, 2, 0.6, 0.2, 1.0, 30),
        record(1, 1, 0.0, 0.3, 0.7, 20), record(1, 2, 0.8, 0.4, 1.2, 50, ok=False),
    ]
    spec = WorkloadSpec(kind="conversation", dataset_path="c.jsonl", endpoint="chat")
    point = point_of(spec, records, LoadSpec(shape="concurrency", concurrency=2, num_requests=4))
    point.conversations = conversations.conversation_summary(records, "c.jsonl")

    print_summary([point])

    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= 80
    rows = {line.split()[0]: line.split() for line in lines
            if line.split() and line.split()[0] in ("1", "2") and "of" not in line}
    # turn, requests, completed, mean prompt tokens, TTFT p50 and p99, E2EL p50 and p99 (ms).
    assert rows["1"][:5] == ["1", "2", "2", "15.0", "200"]
    assert rows["2"][:5] == ["2", "2", "1", "30.0", "200"]
    assert "1 of 2 conversations completed every turn" in " ".join(lines)
