"""Multi-turn conversations: the file behind the "conversation" workload, and what a point says
about its conversations.

The file is JSONL, one conversation a line, in either style vLLM's and OpenAI's tools write:

- ShareGPT: {"conversations": [{"from": "human", "value": ...}, {"from": "gpt", ...}, ...]}
- OpenAI messages: {"messages": [{"role": "user", "content": ...}, ...]}

Every message from "human" or "user" is one user turn, replayed in order. A "system" (or
OpenAI "developer") message is kept where it stands: it goes with the next user turn, so a
leading one is the conversation's system prompt on every turn. Every other message (the
recorded replies: "gpt", "assistant", tool results) is left out, because each turn carries the
model's OWN replies from this run, as a production client sends back what it was told. So turn
t's prompt is the conversation so far (its earlier turns and the model's replies to them) and
then its own messages: the engine's prefix cache sees the reuse it sees in production.

Counting: a request is one turn, so num_requests stays a fixed factor of a comparison. The
conversations are shuffled with the workload's seed (as a dataset's lines are), each cut to
WorkloadSpec.conversation_turns_max turns when set, and taken whole in that order; the last one
is cut to fit num_requests (a point note says so). A file holding fewer turns than a load needs
is refused before any engine starts: a repeated conversation would find its turns in the prefix
cache and measure less work than the file describes.

A bad line is refused with its file and line number (DatasetError).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from runner.measure.metrics import e2els, summary_ms, ttfts
from runner.schema.plan import LoadSpec, WorkloadSpec
from runner.schema.records import RequestRecord
from runner.schema.result import ConversationSummary, PointResult, TurnSummary
from runner.workloads.prompts import (
    DatasetError,
    Prompt,
    WorkloadError,
    dataset_file,
    read_file_lines,
)

Message = dict[str, str]

# (list key, role key, text key) of each style; roles as the style names them.
STYLES = (("conversations", "from", "value"), ("messages", "role", "content"))
USER_ROLES = frozenset({"human", "user"})
SYSTEM_ROLES = frozenset({"system", "developer"})
EXPECTED = (
    "expected {'conversations': [{'from': 'human', 'value': ...}, ...]} or "
    "{'messages': [{'role': 'user', 'content': ...}, ...]}"
)
# The error of a turn left unsent because an earlier turn of its conversation failed.
NOT_SENT_PREFIX = "not sent: turn "


@dataclass(frozen=True)
class Conversation:
    """One line of the file: each user turn's own messages (the system messages before it,
    then the user message), in order."""

    line: int
    turns: tuple[tuple[Message, ...], ...]


@dataclass(frozen=True)
class ConversationFile:
    """A conversation file as a plan replays it: in the seed's order, each conversation cut to
    conversation_turns_max (turns_max); `capped` counts those that had more turns."""

    name: str
    conversations: list[Conversation]
    turns_max: int | None = None
    capped: int = 0

    @property
    def turns(self) -> int:
        return sum(len(c.turns) for c in self.conversations)


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------


def read_conversations(path: Path) -> list[Conversation]:
    """Every conversation of a JSONL file, in file order; DatasetError names file:line."""
    conversations = []
    for number, raw in enumerate(read_file_lines(path), start=1):
        if not raw.strip():
            continue
        try:
            row = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise DatasetError(f"{path}:{number}: not JSON: {exc}") from None
        conversations.append(Conversation(number, _turns(row, f"{path}:{number}")))
    if not conversations:
        raise DatasetError(f"{path}: the file has no conversations")
    return conversations


def _turns(row: Any, where: str) -> tuple[tuple[Message, ...], ...]:
    style = next((s for s in STYLES if isinstance(row, dict) and isinstance(row.get(s[0]), list)),
                 None)
    if style is None:
        raise DatasetError(f"{where}: {EXPECTED}")
    key, role_key, text_key = style
    turns: list[tuple[Message, ...]] = []
    pending: list[Message] = []  # system messages waiting for the next user turn
    for position, message in enumerate(row[key], start=1):
        role = message.get(role_key) if isinstance(message, dict) else None
        if not isinstance(role, str):
            raise DatasetError(f"{where}: message {position} has no {role_key!r}: {EXPECTED}")
        if role not in USER_ROLES and role not in SYSTEM_ROLES:
            continue  # a recorded reply: the model's own replaces it
        text = message.get(text_key)
        if not isinstance(text, str) or not text:
            raise DatasetError(
                f"{where}: message {position} ({role}) has no text: its {text_key!r} must be a "
                "non-empty string"
            )
        if role in SYSTEM_ROLES:
            pending.append({"role": "system", "content": text})
        else:
            turns.append((*pending, {"role": "user", "content": text}))
            pending = []
    if not turns:
        raise DatasetError(f"{where}: the conversation has no user turn (no message from "
                           f"{' or '.join(sorted(USER_ROLES))})")
    return tuple(turns)


def conversation_file(workload: WorkloadSpec, data_dir: Path | None) -> ConversationFile:
    """The workload's conversations, read from inside data_dir, in the seed's order and cut to
    conversation_turns_max."""
    assert workload.dataset_path is not None  # the schema guarantees it for this kind
    conversations = read_conversations(dataset_file(workload.dataset_path, data_dir))
    random.Random(workload.seed).shuffle(conversations)
    cap = workload.conversation_turns_max
    capped = 0
    if cap is not None:
        capped = sum(1 for c in conversations if len(c.turns) > cap)
        conversations = [replace(c, turns=c.turns[:cap]) for c in conversations]
    # Notes name the file as the plan does (relative to the data directory), not where it is.
    return ConversationFile(workload.dataset_path, conversations, cap, capped)


def check_conversations(
    workload: WorkloadSpec, data_dir: Path | None, loads: Sequence[LoadSpec], warmup: int = 0
) -> ConversationFile | None:
    """The workload's file read and held against the plan's loads, before any engine starts;
    None for another kind. WorkloadError names the load that needs more turns than it holds."""
    if workload.kind != "conversation":
        return None
    file = conversation_file(workload, data_dir)
    held = (f"{file.name} holds {_count(file.turns, 'turn')} in "
            f"{_count(len(file.conversations), 'conversation')}")
    if file.turns_max is not None:
        held += f" at {_count(file.turns_max, 'turn')} each at most (conversation_turns_max)"
    for load in loads:
        if load.num_requests > file.turns:
            raise WorkloadError(
                f"{load.label()}: {load.num_requests} requests (turns), but {held}; a "
                "conversation is sent once, never repeated (a repeat would find its turns in "
                "the prefix cache)"
            )
    if warmup > file.turns:
        raise WorkloadError(f"{warmup} warm-up requests (turns), but {held}")
    return file


# ---------------------------------------------------------------------------------------------
# Prompts and messages
# ---------------------------------------------------------------------------------------------


def _all_turns(file: ConversationFile) -> Iterator[Prompt]:
    index = 0
    for number, conversation in enumerate(file.conversations):
        for turn, messages in enumerate(conversation.turns, start=1):
            yield Prompt(index=index, messages=list(messages), conversation=number, turn=turn)
            index += 1


def conversation_prompts(
    workload: WorkloadSpec, n: int, data_dir: Path | None
) -> list[Prompt]:
    """The first n turns, conversation after conversation in the seed's order: each prompt is
    one turn's own messages (turn_messages adds the history when it is sent)."""
    file = conversation_file(workload, data_dir)
    prompts = list(islice(_all_turns(file), n))
    if len(prompts) < n:
        raise WorkloadError(f"{n} requests (turns), but {file.name} holds {file.turns}")
    return prompts


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def turn_messages(history: Sequence[Message], prompt: Prompt) -> list[Message]:
    """What a turn sends: the conversation so far, then the turn's own messages."""
    return [*history, *(prompt.messages or ())]


def with_reply(messages: Sequence[Message], reply: str) -> list[Message]:
    """The conversation after a turn: what it sent, then the model's reply as it streamed."""
    return [*messages, {"role": "assistant", "content": reply}]


def not_sent_error(turn: int) -> str:
    """The error of the turns after `turn` of a conversation, which failed."""
    return f"{NOT_SENT_PREFIX}{turn} failed"


# ---------------------------------------------------------------------------------------------
# What the point says about its conversations
# ---------------------------------------------------------------------------------------------


def _ms(seconds: Sequence[float], name: str) -> tuple[float | None, float | None]:
    """(median, p99) in ms, as the point's own figures are computed (metrics.summary_ms)."""
    stats = summary_ms(name, seconds)
    return stats[f"median_{name}_ms"], stats[f"p99_{name}_ms"]


def _mean(values: Sequence[int | None]) -> float | None:
    known = [v for v in values if v is not None]
    return float(np.mean(known)) if known else None


def turn_summary(turn: int, records: Sequence[RequestRecord]) -> TurnSummary:
    completed = [r for r in records if r.ok]
    median_ttft, p99_ttft = _ms(ttfts(completed), "ttft")
    median_e2el, p99_e2el = _ms(e2els(completed), "e2el")
    return TurnSummary(
        turn=turn,
        requests=len(records),
        completed=len(completed),
        mean_prompt_tokens=_mean([r.prompt_tokens for r in completed]),
        mean_output_tokens=_mean([r.output_tokens for r in completed]),
        median_ttft_ms=median_ttft,
        p99_ttft_ms=p99_ttft,
        median_e2el_ms=median_e2el,
        p99_e2el_ms=p99_e2el,
    )


def conversation_summary(
    records: Sequence[RequestRecord], file: str
) -> ConversationSummary | None:
    """Per conversation (first send to last end, turns completed) and per turn number; None
    when no record is a conversation turn. Durations are of the conversations whose every
    turn completed: one that a failed turn ended early would read as a fast one."""
    conversations: dict[tuple[int, int], list[RequestRecord]] = defaultdict(list)
    by_turn: dict[int, list[RequestRecord]] = defaultdict(list)
    for record in records:
        if record.conversation is not None and record.turn is not None:
            conversations[(record.replica, record.conversation)].append(record)
            by_turn[record.turn].append(record)
    if not conversations:
        return None
    durations: list[float] = []
    completed_turns: list[int] = []
    for turns in conversations.values():
        completed_turns.append(sum(r.ok for r in turns))
        if completed_turns[-1] == len(turns):
            start = min(r.actual_send for r in turns if r.actual_send is not None)
            durations.append(max(r.completed_at or start for r in turns) - start)
    median, p99 = _ms(durations, "duration")
    return ConversationSummary(
        file=file,
        conversations=len(conversations),
        completed_conversations=len(durations),
        turns=sum(len(turns) for turns in conversations.values()),
        mean_turns_completed=float(np.mean(completed_turns)),
        median_duration_ms=median,
        p99_duration_ms=p99,
        max_duration_ms=max(durations) * 1000.0 if durations else None,
        by_turn=[turn_summary(turn, by_turn[turn]) for turn in sorted(by_turn)],
    )


def conversation_notes(file: ConversationFile, requests: int, seed: int) -> list[str]:
    """Which conversations a load of `requests` turns sends, and where the last one is cut."""
    whole, left = 0, requests
    for conversation in file.conversations:
        if left < len(conversation.turns):
            break
        whole, left = whole + 1, left - len(conversation.turns)
    sent = whole + (1 if left else 0)
    notes = [f"{sent} of the {len(file.conversations)} conversations in {file.name} "
             f"({requests} turns), taken whole in the order of seed {seed}"]
    if left:
        total = len(file.conversations[whole].turns)
        notes.append(f"the last one (conversation {whole}) cut to its first {left} of {total} "
                     f"turns to fit the load's {requests} requests")
    if file.capped:
        notes.append(f"{file.capped} conversation(s) of the file cut to their first "
                     f"{file.turns_max} turns (conversation_turns_max)")
    return notes


def annotate_point(point: PointResult, file: ConversationFile | None) -> None:
    """Add the conversation notes and summary to a point of a conversation plan."""
    if file is None:
        return
    point.notes.extend(conversation_notes(file, point.load.num_requests, point.workload.seed))
    ended = {(r.replica, r.conversation) for r in point.requests
             if r.error is not None and r.error.startswith(NOT_SENT_PREFIX)}
    if ended:
        point.notes.append(f"{len(ended)} conversation(s) ended early: a turn failed, and the "
                           "turns after it were not sent (recorded as failed)")
    point.conversations = conversation_summary(point.requests, file.name)
