"""One request's wire format: the JSON body sent, and the SSE events read back into a record.

Split from runner/loadgen.py (which schedules requests and processes) so the per-request rules
(what counts as a content chunk, how tokens are assigned to chunks) read in one place.
"""

from __future__ import annotations

import time
from itertools import pairwise
from typing import Any

import orjson

from runner import httpstream
from runner.schema import RequestRecord, WorkloadSpec
from runner.workloads import Prompt


def request_body(workload: WorkloadSpec, model: str, prompt: Prompt) -> bytes:
    """The JSON body; extra_body is merged last so a plan can override any field. A prompt of
    token ids (trace and lengths workloads) goes as the completions API's list of ids, with its
    own max_tokens."""
    body: dict[str, Any] = {
        "model": model,
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


class ResponseCollector:
    """Turns one response's SSE events into a RequestRecord (hot path: keep it lean).

    A chunk is any event with non-empty `choices`, as `vllm bench serve` 0.32 counts them: the
    chat role chunk (empty content) too, and chunks whose text is empty (vLLM holds back text
    for incomplete characters while the tokens were generated). The role chunk carries no
    token, so its `chunk_tokens` entry is 0. The usage chunk (choices == []) only supplies the
    token counts. An error event does not end the read: vLLM's client reads on and counts the
    request by its chunks, so the event is kept as the reason the response is incomplete.
    """

    def __init__(
        self, index: int, replica: int, t0: float, chat: bool, prompt_tokens: int | None = None
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
        return RequestRecord(
            index=self.index,
            replica=self.replica,
            intended_send=self.intended,
            actual_send=actual,
            connect_s=result.connect_s if result else None,
            ttft=times[0] - actual if times and actual is not None else None,
            e2el=times[-1] - actual if times and actual is not None else None,
            completed_at=end - self.t0 if actual is not None else None,
            chunk_times=times,
            chunk_tokens=self._chunk_tokens(output) if output is not None else [],
            prompt_tokens=prompt if prompt is not None else self.expected_prompt_tokens,
            output_tokens=output,
            finish_reason=self.finish_reason,
            status=status,
            error=error,
            incomplete=None if error else self._incomplete(),
        )

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
