"""One request's wire format: the JSON body sent, and the SSE events read back into a record.

Apart from the schedule and the worker processes (runner/client/) so the per-request rules
(what counts as a content chunk, how tokens are assigned to chunks) read in one place.
"""

from __future__ import annotations

import hashlib
import time
from itertools import pairwise
from typing import Any

import orjson

from runner.client import httpstream
from runner.schema.plan import OUTPUT_TEXT_MAX_CHARS, WorkloadSpec
from runner.schema.records import Float64Array, Int32Array, RequestRecord
from runner.workloads.prompts import Prompt


def request_body(workload: WorkloadSpec, model: str, prompt: Prompt) -> bytes:
    """The JSON body; extra_body is merged last so a plan can override any field. A prompt of
    token ids (trace and lengths workloads) goes as the completions API's list of ids, with its
    own max_tokens. A prompt that names a LoRA adapter asks for it as the model, as vLLM's
    OpenAI server routes adapters."""
    body: dict[str, Any] = {
        "model": prompt.adapter or model,
        "max_tokens": prompt.max_tokens or workload.output_tokens,
        "temperature": workload.temperature,
        "stream": workload.stream,
        "ignore_eos": workload.ignore_eos,
    }
    if workload.endpoint == "chat":
        body["messages"] = prompt.messages or [{"role": "user", "content": prompt.text or ""}]
    elif prompt.tokens is not None:
        body["prompt"] = prompt.tokens.ids()
    else:
        body["prompt"] = prompt.text if prompt.text is not None else _joined(prompt.messages)
    if workload.keep_outputs:
        # vLLM (0.10.2 and later) then puts each chunk's token ids in its choice, and the
        # prompt's in the first chunk: what output parity compares.
        body["return_token_ids"] = True
    body.update(workload.extra_body)
    if workload.stream:
        # Output tokens come only from usage, so include_usage stays on whatever extra_body says
        # (it may add continuous_usage_stats).
        body["stream_options"] = {**(body.get("stream_options") or {}), "include_usage": True}
    return orjson.dumps(body)


def _joined(messages: list[dict[str, str]] | None) -> str:
    return "\n".join(m.get("content", "") for m in messages or [])


def endpoint_path(workload: WorkloadSpec) -> str:
    return "/v1/chat/completions" if workload.endpoint == "chat" else "/v1/completions"


def chunk_token_counts(chunks: int, cumulative: list[int] | None, total: int) -> list[int]:
    """Tokens carried by each content chunk, summing to `total` (usage.completion_tokens).

    - The server sent cumulative usage per chunk (continuous_usage_stats): use the deltas.
    - Otherwise: the first chunk carries 1 token (vLLM streams the first token alone) and the
      other total-1 tokens are spread evenly over the remaining chunks, one extra token on the
      earlier ones. With --stream-interval k vLLM sends [1, k, ..., k, rest]; the rule gives that
      exactly when rest is k or k-1 (e.g. 256 tokens at k=4) and an even spread otherwise. The
      mean ITL does not depend on the split, since a chunk's k ITLs always add up to its gap.
    - More chunks than tokens: 1 token each on the first `total` chunks, 0 on the rest.
    """
    if chunks == 0:
        return []
    if cumulative is not None and len(cumulative) == chunks and cumulative[-1] == total:
        deltas = [cumulative[0]] + [b - a for a, b in pairwise(cumulative)]
        if all(d >= 0 for d in deltas):
            return deltas
    if total <= chunks:
        return [1] * total + [0] * (chunks - total)
    if chunks == 1:
        return [total]
    base, extra = divmod(total - 1, chunks - 1)
    return [1] + [base + (1 if i < extra else 0) for i in range(chunks - 1)]


def token_digest(ids: list[int]) -> str:
    """BLAKE2b-64 of token ids as little-endian int32: equal ids, equal digest, on any host."""
    data = b"".join(int(t).to_bytes(4, "little", signed=True) for t in ids)
    return hashlib.blake2b(data, digest_size=8).hexdigest()


class OutputCapture:
    """What output parity keeps of one response (WorkloadSpec.keep_outputs): its token ids, the
    digest of the prompt ids the server saw, and, when asked, its text. Off the hot path unless
    a workload asks for it: the collector calls it only when it has one."""

    def __init__(self, keep_text: bool) -> None:
        self.ids: list[int] = []
        self.prompt_digest: str | None = None
        self.text: list[str] | None = [] if keep_text else None

    def on_choice(self, chunk: dict[str, Any], choice: dict[str, Any]) -> None:
        """A streamed chunk's choice, or a whole response's (non-streamed)."""
        if self.prompt_digest is None:
            # Completions put the prompt's ids in the choice, chat at the top of the chunk.
            prompt = choice.get("prompt_token_ids") or chunk.get("prompt_token_ids")
            if prompt:
                self.prompt_digest = token_digest(prompt)
        ids = choice.get("token_ids")
        if ids:
            self.ids.extend(ids)
        if self.text is not None:
            piece = choice_text(choice)
            if piece:
                self.text.append(piece)

    def joined_text(self) -> str | None:
        if self.text is None:
            return None
        return "".join(self.text)[:OUTPUT_TEXT_MAX_CHARS]


def choice_text(choice: dict[str, Any]) -> str | None:
    """The text one choice carries: a streamed chat chunk's delta, a whole chat message, or
    the completions API's text."""
    for part in ("delta", "message"):
        holder = choice.get(part)
        if isinstance(holder, dict):
            content = holder.get("content")
            return content if isinstance(content, str) else None
    text = choice.get("text")
    return text if isinstance(text, str) else None


class ResponseCollector:
    """Turns one response's SSE events into a RequestRecord (hot path: keep it lean).

    A chunk is any event with non-empty `choices`, as `vllm bench serve` 0.32 counts them: the
    chat role chunk (empty content) too, and chunks whose text is empty (vLLM holds back text
    for incomplete characters while the tokens were generated). The role chunk carries no
    token, so its `chunk_tokens` entry is 0. The usage chunk (choices == []) only supplies the
    token counts. An error event does not end the read: vLLM's client reads on and counts the
    request by its chunks, so the event is kept as the reason the response is incomplete.

    reply: a list that collects the response's text pieces (a conversation turn, whose reply
    goes into the next turn's messages); None, as for every other workload, keeps no text.
    """

    def __init__(
        self,
        index: int,
        replica: int,
        t0: float,
        chat: bool,
        prompt_tokens: int | None = None,
        capture: OutputCapture | None = None,
        reply: list[str] | None = None,
    ) -> None:
        self.index = index
        self.replica = replica
        self.t0 = t0
        self.chat = chat
        # The prompt's own count, used when usage does not say (vLLM's prompt_len fallback).
        self.expected_prompt_tokens = prompt_tokens
        self.intended = 0.0
        self.actual: float | None = None
        self.chunk_times: list[float] = []
        self.cumulative: list[int] = []
        self.leading_role_chunk = False
        self.usage: dict[str, Any] | None = None
        self.finish_reason: str | None = None
        self.done_seen = False
        self.error_event: bytes | None = None
        self.capture = capture
        self.reply = reply

    def on_event(self, data: bytes, stamp: float) -> None:
        if data == b"[DONE]":
            self.done_seen = True
            return
        try:
            chunk = orjson.loads(data)
        except orjson.JSONDecodeError:
            raise httpstream.StreamAbort(f"malformed SSE data: {data[:120]!r}") from None
        if not isinstance(chunk, dict):
            raise httpstream.StreamAbort(f"malformed SSE data: {data[:120]!r}")
        if self.error_event is None and ("error" in chunk or chunk.get("object") == "error"):
            self.error_event = data[:300]
        usage = chunk.get("usage")
        choices = chunk.get("choices")
        if choices:
            if not self.chunk_times and self.chat and _is_role_chunk(choices[0]):
                self.leading_role_chunk = True
            elif usage and "completion_tokens" in usage:
                self.cumulative.append(usage["completion_tokens"])
            self.chunk_times.append(stamp - self.t0)
            if self.capture is not None:
                self.capture.on_choice(chunk, choices[0])
            if self.reply is not None:
                self._keep_reply(choices[0])
            reason = choices[0].get("finish_reason")
            if reason:
                self.finish_reason = reason
        if usage:
            self.usage = usage

    def on_json_body(self, body: bytes, stamp: float) -> None:
        """A non-streamed response: one 'chunk' at arrival, so TTFT equals E2EL."""
        try:
            response = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise httpstream.StreamAbort(f"malformed JSON response: {body[:120]!r}") from None
        if not isinstance(response, dict):
            raise httpstream.StreamAbort(f"malformed JSON response: {body[:120]!r}")
        self.usage = response.get("usage")
        choices = response.get("choices") or [{}]
        self.finish_reason = choices[0].get("finish_reason")
        if self.capture is not None:
            self.capture.on_choice(response, choices[0])
        if self.reply is not None:
            self._keep_reply(choices[0])
        self.chunk_times = [stamp - self.t0]
        self.done_seen = True

    def record(self, result: httpstream.HttpResult | None, error: str | None) -> RequestRecord:
        status = result.status if result else None
        end = result.ended_at if result and result.ended_at else time.monotonic()
        error = error or (result.error if result else None)
        times = self.chunk_times
        if error is None and status == 200 and not times:
            error = "no chunk with choices: vLLM's client counts this request as failed"
        output = self.usage.get("completion_tokens") if self.usage else None
        prompt = self.usage.get("prompt_tokens") if self.usage else None
        actual = self.actual
        capture = self.capture
        return RequestRecord(
            index=self.index,
            replica=self.replica,
            intended_send=self.intended,
            actual_send=actual,
            connect_s=result.connect_s if result else None,
            ttft=times[0] - actual if times and actual is not None else None,
            e2el=times[-1] - actual if times and actual is not None else None,
            completed_at=end - self.t0 if actual is not None else None,
            # Collected as a list (an append costs a third of an array's on the hot path), kept
            # as a compact array from here on.
            chunk_times=Float64Array(times),
            chunk_tokens=Int32Array(self._chunk_tokens(output) if output is not None else ()),
            prompt_tokens=prompt if prompt is not None else self.expected_prompt_tokens,
            output_tokens=output,
            finish_reason=self.finish_reason,
            status=status,
            error=error,
            incomplete=None if error else self._incomplete(),
            prompt_digest=capture.prompt_digest if capture else None,
            output_ids=Int32Array(capture.ids if capture else ()),
            output_text=capture.joined_text() if capture else None,
        )

    def _keep_reply(self, choice: dict[str, Any]) -> None:
        piece = choice_text(choice)
        if piece and self.reply is not None:
            self.reply.append(piece)

    def _chunk_tokens(self, total: int) -> list[int]:
        """Tokens per chunk: 0 for a leading chat role chunk, the usage total over the rest."""
        role = 1 if self.leading_role_chunk else 0
        content = len(self.chunk_times) - role
        cumulative = self.cumulative if len(self.cumulative) == content else None
        return [0] * role + chunk_token_counts(content, cumulative, total)

    def _incomplete(self) -> str | None:
        """Why Headroom's strict completion refuses a response vLLM's client counts as done."""
        if self.error_event is not None:
            return f"server error in stream: {self.error_event!r}"
        if not self.done_seen:
            return "stream ended without data: [DONE]"
        if self.usage is None or self.usage.get("completion_tokens") is None:
            return "response has no usage block (include_usage)"
        return None


def _is_role_chunk(choice: dict[str, Any]) -> bool:
    """The first chat chunk announces the role with empty content: it carries no token."""
    delta = choice.get("delta") or {}
    return "role" in delta and not (
        delta.get("content") or delta.get("reasoning_content") or delta.get("tool_calls")
    )
