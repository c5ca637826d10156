"""The quality set: a small evaluation file scored beside each point (SweepPlan.quality).

A throughput setting is worth nothing if it changes the answers, and a fixed output length
validates generation work, not quality. A quality set is a JSONL file of at most
QUALITY_MAX_ITEMS items, one a line:

    {"prompt": "The capital of France is", "expected": "Paris", "rule": "contains"}
    {"prompt": "2 + 2 =", "expected": "4", "rule": "exact", "max_tokens": 4}

Rules (judge), both case-sensitive and with no other normalization, so a file says exactly what
it accepts:
- exact: the answer with surrounding whitespace stripped equals `expected` stripped;
- contains: `expected` stripped occurs in the answer.
`expected` must hold something besides whitespace: an empty text is in every answer.

How it is sent (score_quality): after the point's measurement window has closed, so the eval
never shares the window it would distort; to replica 0 only (every replica of a point runs the
same engine config and checkpoint); on the workload's endpoint (completions: the prompt text;
chat: one user message, with the workload's chat_template_kwargs, so a thinking switch holds
here too); non-streamed, temperature 0, without ignore_eos (an answer ends where the model ends
it), max_tokens the item's or the spec's. Items go one at a time: each answer is the model's
greedy output for a batch of one, so a score compares between points whatever their batch
sizes (vLLM is not batch-invariant: the same prompt in another batch may decode otherwise).

A request that fails (no connection, a timeout, an HTTP error, a body without an answer)
becomes a row with its error, counted as not passed; it never loses the point. The file is read
before any engine starts (load_quality); a bad line is refused as DatasetError naming file:line.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import pydantic
from pydantic import ConfigDict, Field, StrictInt, StrictStr, field_validator

from runner.engine.bounded_read import COMPLETION_MAX_BYTES, DeadlineTransport, read_bounded
from runner.engine.endpoint import NO_CREDENTIALS, Credentials, redact
from runner.schema.base import Schema
from runner.schema.plan import (
    QUALITY_EXCERPT_CHARS,
    QUALITY_MAX_ITEMS,
    QualityRule,
    QualitySpec,
    WorkloadSpec,
)
from runner.schema.result import QualityResult, QualityRow
from runner.workloads.prompts import DatasetError, dataset_file, read_file_lines

# What an error row keeps of a server's answer: enough to read its message.
ERROR_BODY_CHARS = 200


class QualityLine(Schema):
    """One line of a quality file as written. Strict: "expected": 4 is refused, not read as
    "4", since the file's author meant something else by it."""

    model_config = ConfigDict(extra="forbid", strict=True)

    prompt: StrictStr = Field(min_length=1)
    expected: StrictStr
    rule: QualityRule = "exact"
    max_tokens: StrictInt | None = Field(default=None, gt=0)

    @field_validator("expected")
    @classmethod
    def _not_blank(cls, expected: str) -> str:
        if not expected.strip():
            raise ValueError("expected must hold more than whitespace (every answer contains '')")
        return expected


@dataclass(frozen=True)
class QualityItem:
    line: int
    prompt: str
    expected: str
    rule: QualityRule
    max_tokens: int


@dataclass(frozen=True)
class QualitySet:
    """A quality file as read: its name as the plan gives it, and its items in file order."""

    name: str
    items: list[QualityItem]


def judge(rule: QualityRule, expected: str, answer: str) -> bool:
    """Whether the answer passes: see the module docstring for each rule."""
    if rule == "exact":
        return answer.strip() == expected.strip()
    return expected.strip() in answer


def load_quality(spec: QualitySpec | None, data_dir: Path | None) -> QualitySet | None:
    """The spec's file read and checked (DatasetError naming file:line); None without a spec.

    The file follows a dataset's rule (runner.workloads.prompts.dataset_file): with a data
    directory, a name inside it; without one, a path the operator gave.
    """
    if spec is None:
        return None
    path = dataset_file(spec.path, data_dir)
    return QualitySet(spec.path, parse_items(read_file_lines(path), path, spec.max_tokens))


def parse_items(lines: list[bytes], path: Path, max_tokens: int) -> list[QualityItem]:
    """Every non-blank line as an item; DatasetError names the first bad line."""
    items: list[QualityItem] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        if len(items) == QUALITY_MAX_ITEMS:
            raise DatasetError(f"{path}:{number}: a quality set holds at most "
                               f"{QUALITY_MAX_ITEMS} items; it is a check beside a point, not "
                               "an evaluation of its own")
        items.append(_item(raw, f"{path}:{number}", number, max_tokens))
    if not items:
        raise DatasetError(f"{path}: the quality set has no items")
    return items


def _item(raw: bytes, where: str, number: int, max_tokens: int) -> QualityItem:
    try:
        row = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise DatasetError(f"{where}: not JSON: {exc}") from None
    if not isinstance(row, dict):
        raise DatasetError(f'{where}: expected an object {{"prompt": ..., "expected": ...}}')
    try:
        line = QualityLine.model_validate(row)
    except pydantic.ValidationError as exc:
        raise DatasetError(f"{where}: {_problems(exc)}") from None
    return QualityItem(number, line.prompt, line.expected, line.rule,
                       line.max_tokens or max_tokens)


def _problems(exc: pydantic.ValidationError) -> str:
    parts = []
    for error in exc.errors():
        field = ".".join(str(part) for part in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        parts.append(f"{field}: {message}" if field else message)
    return "; ".join(parts)


# ---------------------------------------------------------------------------------------------
# Scoring
# ---------------------------------------------------------------------------------------------


def score_quality(
    quality: QualitySet,
    base_url: str,
    model: str,
    workload: WorkloadSpec,
    *,
    timeout_s: float,
    credentials: Credentials = NO_CREDENTIALS,
    cancel: threading.Event | None = None,
) -> QualityResult:
    """Every item sent to the server at base_url, one at a time, and judged.

    Once cancel is set, the items not yet sent become error rows: the point keeps its score on
    the items that were sent, and the run stops after it.
    """
    rows: list[QualityRow] = []
    with httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout_s,
                      headers=credentials.http_headers(),
                      transport=DeadlineTransport()) as client:
        for index, item in enumerate(quality.items):
            if cancel is not None and cancel.is_set():
                rows.append(_row(index, item, error="not sent: the run was cancelled"))
                continue
            rows.append(_ask(client, index, item, model, workload, credentials, timeout_s))
    return QualityResult.of(quality.name, rows)


def request_body(item: QualityItem, model: str, workload: WorkloadSpec) -> dict[str, Any]:
    """One item's request on the workload's endpoint (see the module docstring)."""
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": item.max_tokens,
        "temperature": 0.0,
        "stream": False,
    }
    if workload.endpoint == "chat":
        body["messages"] = [{"role": "user", "content": item.prompt}]
        kwargs = workload.extra_body.get("chat_template_kwargs")
        if kwargs:
            body["chat_template_kwargs"] = kwargs
    else:
        body["prompt"] = item.prompt
    return body


def _ask(
    client: httpx.Client,
    index: int,
    item: QualityItem,
    model: str,
    workload: WorkloadSpec,
    credentials: Credentials,
    timeout_s: float,
) -> QualityRow:
    chat = workload.endpoint == "chat"
    path = "/v1/chat/completions" if chat else "/v1/completions"
    try:
        # A question's whole answer within the request timeout and COMPLETION_MAX_BYTES.
        response = read_bounded(client, path, json_body=request_body(item, model, workload),
                                max_bytes=COMPLETION_MAX_BYTES, total_s=timeout_s)
    except httpx.HTTPError as exc:
        return _row(index, item, error=redact(f"request failed: {exc!r}", credentials))
    if response.status_code != 200:
        text = redact(response.text[:ERROR_BODY_CHARS], credentials)
        return _row(index, item, error=f"HTTP {response.status_code}: {text}")
    try:
        answer, finish_reason = _answer(response.json(), chat)
    except (ValueError, LookupError, TypeError):
        text = redact(response.text[:ERROR_BODY_CHARS], credentials)
        return _row(index, item, error=f"no answer in the response: {text}")
    return _row(index, item, answer=answer, finish_reason=finish_reason)


def _answer(body: Any, chat: bool) -> tuple[str, str | None]:
    """(text, finish_reason) of the first choice; a chat message without content (the model
    said nothing outside a reasoning block) is the empty answer."""
    choice = body["choices"][0]
    text = (choice["message"].get("content") or "") if chat else choice["text"]
    if not isinstance(text, str):
        raise TypeError("the answer is not text")
    reason = choice.get("finish_reason")
    return text, reason if isinstance(reason, str) else None


def _row(
    index: int,
    item: QualityItem,
    *,
    answer: str | None = None,
    finish_reason: str | None = None,
    error: str | None = None,
) -> QualityRow:
    return QualityRow(
        index=index,
        line=item.line,
        rule=item.rule,
        expected=item.expected[:QUALITY_EXCERPT_CHARS],
        answer=None if answer is None else answer[:QUALITY_EXCERPT_CHARS],
        finish_reason=finish_reason,
        passed=answer is not None and judge(item.rule, item.expected, answer),
        error=error,
    )
