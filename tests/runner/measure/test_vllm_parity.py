"""Headroom's vLLM-named figures equal what vLLM's own client computes for the same streams.

The same recorded SSE streams, with the same arrival times, go through vLLM 0.32's request
functions (`vllm/benchmarks/lib/endpoint_request_func.py`) and `calculate_metrics`
(`vllm/benchmarks/serve.py`) from the installed package, and through Headroom's
ResponseCollector and `runner.measure.metrics.aggregate`. Both clocks are scripted, so nothing here
depends on timing: every shared key must come out equal.
"""

from __future__ import annotations

import asyncio
import contextlib
import types
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

import orjson
import pytest

pytest.importorskip("vllm.benchmarks.serve")

from vllm.benchmarks import serve as vllm_serve
from vllm.benchmarks.lib import endpoint_request_func as vllm_requests

from runner.client import httpstream
from runner.client.responses import ResponseCollector
from runner.measure.metrics import aggregate
from runner.schema.plan import WorkloadSpec
from runner.schema.records import RequestRecord

# Keys both write; each must be equal.
SHARED_COUNTS = ("completed", "failed")
SHARED_RATES = ("request_throughput", "output_throughput", "total_token_throughput")
STATS = ("mean", "median", "std")
PERCENTILES = (90, 95, 99)
FAMILIES = ("ttft", "tpot", "itl", "e2el")


# ---------------------------------------------------------------------------------------------
# Recorded streams
# ---------------------------------------------------------------------------------------------


@dataclass
class Stream:
    """One response as it arrived: each network read's time and bytes."""

    send: float
    reads: list[tuple[float, bytes]] = field(default_factory=list)
    status: int = 200
    broken: bool = False  # the connection dies after the last read
    prompt_len: int = 7

    @property
    def end(self) -> float:
        return self.reads[-1][0] if self.reads else self.send


def sse(*events: object) -> bytes:
    out = b""
    for event in events:
        payload = event if isinstance(event, bytes) else orjson.dumps(event)
        out += b"data: " + payload + b"\n\n"
    return out


def completion_chunk(text: str, finish: str | None = None) -> dict:
    return {"object": "text_completion", "choices": [{"index": 0, "text": text,
                                                      "finish_reason": finish}]}


def chat_chunk(content: str | None, role: bool = False, finish: str | None = None) -> dict:
    delta: dict = {"content": content}
    if role:
        delta["role"] = "assistant"
    return {"object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def usage(prompt: int, completion: int) -> dict:
    return {"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                                     "total_tokens": prompt + completion}}


def completion_stream(send: float, gaps: list[float], tokens_per_chunk: int = 1) -> Stream:
    """n chunks after the given gaps; with tokens_per_chunk k, usage says k tokens per chunk
    (the first chunk one token, as vLLM streams the first token alone)."""
    stream = Stream(send=send)
    t = send
    for i, gap in enumerate(gaps):
        t += gap
        finish = "length" if i == len(gaps) - 1 else None
        stream.reads.append((t, sse(completion_chunk(f"w{i} ", finish))))
    total = 1 + (len(gaps) - 1) * tokens_per_chunk
    t += 0.0005
    stream.reads.append((t, sse(usage(7, total), b"[DONE]")))
    return stream


def recorded_streams() -> list[Stream]:
    streams = [
        completion_stream(0.000, [0.050, 0.010, 0.012, 0.009]),
        completion_stream(0.003, [0.080, 0.020, 0.020]),
        # --stream-interval 4: multi-token chunks
        completion_stream(0.010, [0.120, 0.040, 0.041, 0.039], tokens_per_chunk=4),
    ]
    # Several events in one read: they share the read's arrival time.
    packed = Stream(send=0.020)
    packed.reads.append((0.200, sse(completion_chunk("a"), completion_chunk("b"))))
    packed.reads.append((0.230, sse(completion_chunk("c", "length"), usage(7, 3), b"[DONE]")))
    streams.append(packed)
    # A mid-stream error event: vLLM's client reads on and counts the request by its chunks.
    errored = Stream(send=0.030)
    errored.reads.append((0.100, sse(completion_chunk("x"))))
    errored.reads.append((0.150, sse({"error": {"message": "engine died", "code": 500}})))
    errored.reads.append((0.151, sse(usage(7, 1), b"[DONE]")))
    streams.append(errored)
    # No [DONE]: vLLM counts it completed; Headroom too, and calls it incomplete.
    no_done = Stream(send=0.040)
    no_done.reads.append((0.140, sse(completion_chunk("y"))))
    no_done.reads.append((0.170, sse(completion_chunk("z", "length"), usage(7, 2))))
    streams.append(no_done)
    # An HTTP 500: failed for both.
    failed = Stream(send=0.050, status=500)
    failed.reads.append((0.060, b'{"error": "overloaded"}'))
    streams.append(failed)
    # The connection breaks mid-stream: failed for both.
    broken = Stream(send=0.060, broken=True)
    broken.reads.append((0.160, sse(completion_chunk("q"))))
    streams.append(broken)
    # A 200 with only [DONE]: no chunk with choices, failed for both.
    empty = Stream(send=0.070)
    empty.reads.append((0.090, sse(b"[DONE]")))
    streams.append(empty)
    return streams


def chat_streams() -> list[Stream]:
    """Chat: the role chunk with empty content comes first and counts as vLLM's first chunk."""
    streams = []
    for n, send in enumerate((0.0, 0.004, 0.011)):
        stream = Stream(send=send)
        t = send + 0.040 + 0.01 * n
        stream.reads.append((t, sse(chat_chunk("", role=True))))
        for i in range(3 + n):
            t += 0.015 + 0.001 * i
            finish = "length" if i == 2 + n else None
            stream.reads.append((t, sse(chat_chunk(f"t{i}", finish=finish))))
        stream.reads.append((t + 0.0004, sse(usage(9, 3 + n), b"[DONE]")))
        stream.prompt_len = 9
        streams.append(stream)
    return streams


# ---------------------------------------------------------------------------------------------
# vLLM's side: its request function on a scripted session and clock
# ---------------------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now


class FakeResponse:
    def __init__(self, stream: Stream, clock: Clock) -> None:
        self.stream = stream
        self.clock = clock
        self.status = stream.status
        self.reason = "Internal Server Error" if stream.status != 200 else "OK"
        self.content = types.SimpleNamespace(iter_any=self._iter_any)

    async def _iter_any(self) -> AsyncIterator[bytes]:
        import aiohttp

        for at, data in self.stream.reads:
            self.clock.now = at
            yield data
        if self.stream.broken:
            raise aiohttp.ClientPayloadError("Response payload is not completed")


class FakeSession:
    def __init__(self, streams: Iterator[Stream], clock: Clock) -> None:
        self.streams = streams
        self.clock = clock

    @contextlib.asynccontextmanager
    async def post(self, **kwargs: object) -> AsyncIterator[FakeResponse]:
        yield FakeResponse(next(self.streams), self.clock)


def vllm_outputs(streams: list[Stream], chat: bool, monkeypatch) -> list:
    clock = Clock()
    monkeypatch.setattr(vllm_requests, "time", types.SimpleNamespace(perf_counter=clock.perf_counter))
    function = (
        vllm_requests.async_request_openai_chat_completions
        if chat
        else vllm_requests.async_request_openai_completions
    )
    url = "http://x/v1/chat/completions" if chat else "http://x/v1/completions"
    outputs = []
    for stream in streams:
        clock.now = stream.send  # the moment just before the request is sent
        request = vllm_requests.RequestFuncInput(
            prompt="hello", api_url=url, prompt_len=stream.prompt_len, output_len=16, model="m"
        )
        session = FakeSession(iter([stream]), clock)
        outputs.append(asyncio.run(function(request, session)))
    return outputs


class WordTokenizer:
    """vLLM re-tokenizes a response without usage; this stands in for its tokenizer."""

    def __call__(self, text: str, add_special_tokens: bool = False) -> types.SimpleNamespace:
        return types.SimpleNamespace(input_ids=text.split())


def vllm_metrics(streams: list[Stream], chat: bool, monkeypatch, goodput: dict | None = None):
    outputs = vllm_outputs(streams, chat, monkeypatch)
    duration = max(s.end for s in streams)  # the benchmark started at 0
    metrics, _ = vllm_serve.calculate_metrics(
        input_requests=[],
        outputs=outputs,
        dur_s=duration,
        tokenizer=WordTokenizer(),
        selected_percentiles=list(PERCENTILES),
        goodput_config_dict=goodput or {},
    )
    return metrics


# ---------------------------------------------------------------------------------------------
# Headroom's side: its collector fed the same reads, its aggregates
# ---------------------------------------------------------------------------------------------


def headroom_record(index: int, stream: Stream, chat: bool) -> RequestRecord:
    collector = ResponseCollector(index, 0, 0.0, chat, prompt_tokens=stream.prompt_len)
    collector.intended = 0.0  # a burst: every request was due at the benchmark's start
    collector.actual = stream.send
    result = httpstream.HttpResult(status=stream.status, sent_at=stream.send, ended_at=stream.end)
    if stream.status != 200:
        result.error = f"HTTP {stream.status}: " + b"".join(d for _, d in stream.reads).decode()
        return collector.record(result, None)
    error = None
    pending = b""
    try:
        for at, data in stream.reads:  # the protocol's split: each `data:` line at its read's time
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.startswith(b"data:"):
                    collector.on_event(line[5:].strip(), at)
    except httpstream.StreamAbort as exc:
        error = str(exc)
    if stream.broken:
        result.error = "connection closed before the response ended"
    return collector.record(result, error)


def headroom_metrics(streams: list[Stream], chat: bool, goodput: dict | None = None):
    records = [headroom_record(i, s, chat) for i, s in enumerate(streams)]
    return aggregate(records, WorkloadSpec(output_tokens=16, ignore_eos=False), goodput), records


def assert_shared_keys_equal(ours, theirs, *, skip_tokens: bool = False) -> None:
    for key in SHARED_COUNTS:
        assert getattr(ours, key) == getattr(theirs, key), key
    if not skip_tokens:
        assert ours.total_input_tokens == theirs.total_input
        assert ours.total_output_tokens == theirs.total_output
        for key in SHARED_RATES:
            assert getattr(ours, key) == pytest.approx(getattr(theirs, key), rel=1e-12), key
    assert ours.duration > 0
    # Without usage, vLLM's TPOT divides by its re-tokenized count: it differs with the tokens.
    for family in (f for f in FAMILIES if not (skip_tokens and f == "tpot")):
        for stat in STATS:
            key = f"{stat}_{family}_ms"
            assert getattr(ours, key) == pytest.approx(getattr(theirs, key), rel=1e-9), key
        for p, value in getattr(theirs, f"percentiles_{family}_ms"):
            key = f"p{p}_{family}_ms"
            assert getattr(ours, key) == pytest.approx(value, rel=1e-9), key


# ---------------------------------------------------------------------------------------------
# The checks
# ---------------------------------------------------------------------------------------------


def test_it_equals_vllm_on_completion_streams_with_faults_and_multi_token_chunks(monkeypatch):
    streams = recorded_streams()
    theirs = vllm_metrics(streams, chat=False, monkeypatch=monkeypatch)
    ours, _ = headroom_metrics(streams, chat=False)
    assert_shared_keys_equal(ours, theirs)
    # The case is not trivial: failures of each kind and an incomplete response are in it.
    assert (ours.completed, ours.failed) == (6, 3)
    assert ours.incomplete_responses == 2  # the error event and the missing [DONE]


def test_it_equals_vllm_on_chat_streams_where_the_role_chunk_comes_first(monkeypatch):
    streams = chat_streams()
    theirs = vllm_metrics(streams, chat=True, monkeypatch=monkeypatch)
    ours, records = headroom_metrics(streams, chat=True)
    assert_shared_keys_equal(ours, theirs)
    # Headroom's own TTFT waits for the first token, after the role chunk.
    assert ours.median_sched_ttft_ms > ours.median_ttft_ms
    assert all(r.chunk_tokens[0] == 0 for r in records)


def test_it_equals_vllm_goodput_for_the_same_slos(monkeypatch):
    streams = recorded_streams()
    slos = {"ttft": 90.0, "tpot": 12.0, "e2el": 200.0}
    theirs = vllm_metrics(streams, chat=False, monkeypatch=monkeypatch, goodput=slos)
    ours, _ = headroom_metrics(streams, chat=False, goodput=slos)
    assert ours.request_goodput == pytest.approx(theirs.request_goodput, rel=1e-12)
    assert 0 < ours.request_goodput < ours.request_throughput


def test_it_differs_from_vllm_only_in_the_tokens_of_a_response_without_usage(monkeypatch):
    streams = recorded_streams()[:2]
    no_usage = Stream(send=0.005)
    no_usage.reads.append((0.100, sse(completion_chunk("one two "))))
    no_usage.reads.append((0.130, sse(completion_chunk("three", "length"), b"[DONE]")))
    streams.append(no_usage)
    theirs = vllm_metrics(streams, chat=False, monkeypatch=monkeypatch)
    ours, records = headroom_metrics(streams, chat=False)
    assert_shared_keys_equal(ours, theirs, skip_tokens=True)
    # vLLM re-tokenizes the text ("one two three": 3 tokens); Headroom adds none and says why.
    assert theirs.total_output == ours.total_output_tokens + 3
    assert theirs.total_input == ours.total_input_tokens  # the prompt's own count, as vLLM's
    # vLLM's TPOT has the no-usage request at (130 - 100) ms / 2 tokens; Headroom leaves it out.
    assert theirs.median_tpot_ms != ours.median_tpot_ms
    assert ours.incomplete_responses == 1
    assert records[2].incomplete == "response has no usage block (include_usage)"
