"""A two-turn conversation replayed on a real vLLM CPU engine.

Turn 2 sends turn 1's prompt, the model's own reply and the second user message, so the server
counts more prompt tokens than turn 1's prompt and reply together, and the engine's prefix
cache finds turn 1's prompt (whole KV blocks of it) when turn 2 arrives. The user messages are
random words drawn here, so no other test's prompt shares them: every prefix-cache hit of the
point is a turn 2 reusing its own turn 1.

One engine (the config tests/runner/workloads/test_traces_engine.py uses, so a session starts it once),
an attach sweep against it. Its KV blocks hold 128 tokens and the cache keeps full blocks only.
"""

from __future__ import annotations

import json
import random

import pytest

from runner.schema.engine_config import Checkpoint, EngineConfig, EngineLaunch
from runner.schema.plan import ClientSpec, LoadSpec, SweepPlan, WorkloadSpec
from runner.schema.result import PointResult
from runner.sweep import run_plan
from runner.workloads.conversations import conversation_file
from runner.workloads.prompts import RANDOM_WORDS, server_token_counter
from tests.runner.workloads.test_traces_engine import SHARED_CONFIG, prefix_cache

pytestmark = pytest.mark.engine

CONVERSATIONS = 2
OUTPUT_TOKENS = 16
BLOCK_TOKENS = 128  # the CPU engine's KV block


@pytest.fixture(scope="module")
def engine(cpu_engine):
    return cpu_engine(SHARED_CONFIG)


def words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(RANDOM_WORDS) for _ in range(count))


@pytest.fixture(scope="module")
def replayed(engine, tmp_path_factory) -> tuple[PointResult, float, float, list[int]]:
    """The point, the prefix-cache queries and hits (prompt tokens) the engine counted while it
    ran, and each conversation's second user message alone as the server counts it (one user
    message with the generation prompt)."""
    data_dir = tmp_path_factory.mktemp("conversations")
    rng = random.Random()  # fresh words every session: nothing cached them before
    rows = [{"conversations": [{"from": "human", "value": words(rng, 80)},
                               {"from": "gpt", "value": "a recorded reply, never sent"},
                               {"from": "human", "value": words(rng, 30)}]}
            for _ in range(CONVERSATIONS)]
    (data_dir / "chats.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    plan = SweepPlan(
        name="conversations",
        checkpoint=Checkpoint(model="tiny", served_model_name="tiny"),
        launch=EngineLaunch(style="attach", base_url=engine.base_url),
        engine_configs=[EngineConfig()],
        loads=[LoadSpec(shape="concurrency", num_requests=2 * CONVERSATIONS,
                        concurrency=CONVERSATIONS)],
        workload=WorkloadSpec(kind="conversation", dataset_path="chats.jsonl", endpoint="chat",
                              output_tokens=OUTPUT_TOKENS),
        client=ClientSpec(request_timeout_s=120, stall_timeout_s=60),
        sample_interval_s=0.2,
    )
    before = prefix_cache(engine)
    (point,) = run_plan(plan, data_dir / "work", data_dir=data_dir)
    after = prefix_cache(engine)
    assert point.metrics.valid, point.notes
    count = server_token_counter(engine.base_url, engine.served_model, "chat")
    talks = conversation_file(plan.workload, data_dir).conversations
    alone = [count(talk.turns[1][-1]["content"]) for talk in talks]
    return point, after[0] - before[0], after[1] - before[1], alone


def test_turn_two_carries_turn_one_and_the_models_reply(replayed):
    point, _, _, alone = replayed
    talks: dict[int, list] = {}
    for record in sorted(point.requests, key=lambda r: r.index):
        talks.setdefault(record.conversation, []).append(record)
    assert len(talks) == CONVERSATIONS
    for first, second in talks.values():
        assert (first.turn, second.turn) == (1, 2)
        assert first.output_tokens == second.output_tokens == OUTPUT_TOKENS
        assert first.prompt_tokens > BLOCK_TOKENS
        # The history (turn 1's prompt and the reply) plus the second user message.
        assert second.prompt_tokens > first.prompt_tokens + first.output_tokens
        # Less turn 1's prompt and the second user message alone, what is left is the reply
        # (its text re-tokenized) and the end of the assistant turn (<|im_end|> and a newline).
        reply = second.prompt_tokens - first.prompt_tokens - alone[first.conversation]
        assert OUTPUT_TOKENS // 2 <= reply <= 2 * OUTPUT_TOKENS
        assert second.intended_send == first.completed_at
        assert second.actual_send >= first.completed_at


def test_turn_two_finds_turn_one_in_the_prefix_cache(replayed):
    point, queries, hits, _ = replayed
    turns = sorted(point.requests, key=lambda r: r.index)
    firsts = [r.prompt_tokens for r in turns if r.turn == 1]
    seconds = [r.prompt_tokens for r in turns if r.turn == 2]
    assert queries == pytest.approx(sum(firsts) + sum(seconds))
    # Each turn 2 finds at least the whole blocks of its turn 1 prompt (but its last token,
    # which the reply's first text may merge with), and nothing else hits.
    whole_blocks = sum((tokens - 1) // BLOCK_TOKENS * BLOCK_TOKENS for tokens in firsts)
    assert whole_blocks >= CONVERSATIONS * BLOCK_TOKENS
    assert whole_blocks <= hits <= sum(seconds)
    if point.queue.prefix_cache_hit_rate is not None:  # the sampler's window agrees
        assert point.queue.prefix_cache_hit_rate > 0


def test_the_point_has_per_turn_and_per_conversation_figures(replayed):
    point, _, _, _ = replayed
    summary = point.conversations
    assert summary is not None and summary.file == "chats.jsonl"
    assert (summary.conversations, summary.completed_conversations, summary.turns) == (
        CONVERSATIONS, CONVERSATIONS, 2 * CONVERSATIONS)
    first, second = summary.by_turn
    assert (first.turn, first.completed, second.turn, second.completed) == (
        1, CONVERSATIONS, 2, CONVERSATIONS)
    assert second.mean_prompt_tokens > first.mean_prompt_tokens + OUTPUT_TOKENS
    for turn in (first, second):
        assert turn.median_ttft_ms > 0 and turn.p99_e2el_ms >= turn.median_e2el_ms > 0
    assert summary.median_duration_ms > max(t.median_e2el_ms for t in (first, second))
    assert any(note.startswith(f"{CONVERSATIONS} of the {CONVERSATIONS} conversations in "
                               "chats.jsonl") for note in point.notes)
