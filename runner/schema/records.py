"""What was measured per request and per engine sample, held compactly."""

from __future__ import annotations

import array
import contextlib
import sys
from typing import Any, ClassVar

from pydantic import (
    BaseModel,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
)
from pydantic_core import core_schema

from runner.schema.base import Schema


class CompactArray(array.array):
    """A typed run of numbers held as one C array: the type of the ragged per-request fields.

    A point of 32,768 requests with 256 chunks each holds 8.4 million chunk times; as Python
    lists of floats that is about 32 bytes a value, as this 8 (4 for the int32 counts). The
    values pickle as raw bytes (client workers send records to the parent), numpy reads them
    without a copy (`np.frombuffer`), and result files and stored blobs keep them as flat
    little-endian arrays. Validation accepts a list, tuple, array or numpy array (files and
    tests write lists) and refuses anything that is not a number of the type; a record already
    holding the type keeps it as is, uncopied. It compares equal to a list or tuple of the same
    values, as a list does. JSON output is a plain list of numbers.

    A field annotated with a subclass is ragged: one array per request, of any length
    (`ragged_fields`), stored flat with per-request lengths by runner.results and
    benchmarks.storage.columnar without naming it.
    """

    TYPECODE: ClassVar[str]
    # numpy's little-endian dtype string for the values, as files and blobs store them.
    DTYPE: ClassVar[str]
    JSON_ITEMS: ClassVar[str]

    def __new__(cls, *args: Any) -> CompactArray:
        # array's own pickle reconstructor calls cls(typecode, data); everyone else, cls(values).
        if len(args) == 2 and args[0] == cls.TYPECODE:
            return super().__new__(cls, cls.TYPECODE, args[1])
        return super().__new__(cls, cls.TYPECODE, *args)

    @classmethod
    def coerce(cls, value: Any) -> CompactArray:
        """The value as this type; ValueError naming what is wrong with it."""
        if type(value) is cls:
            return value
        if isinstance(value, (str, bytes, bytearray)):
            raise ValueError(f"expected a list of {cls.JSON_ITEMS}s, got {type(value).__name__}")
        view = None
        if not isinstance(value, (list, tuple)):
            with contextlib.suppress(TypeError):  # not a buffer: any iterable of numbers
                view = memoryview(value)
        try:
            if view is not None and view.format == cls.TYPECODE and view.c_contiguous:
                return cls.from_native_bytes(view.cast("B"))  # numpy's or array's layout: one copy
            return cls(value)
        except (TypeError, OverflowError, ValueError) as exc:
            raise ValueError(f"expected a list of {cls.JSON_ITEMS}s: {exc}") from None

    @classmethod
    def from_native_bytes(cls, data: bytes | memoryview) -> CompactArray:
        """Values from a buffer in this host's own layout, copied once."""
        values = cls()
        values.frombytes(data)
        return values

    @classmethod
    def from_le_bytes(cls, data: bytes | memoryview) -> CompactArray:
        """Values from their little-endian bytes (the layout of files and blobs)."""
        values = cls.from_native_bytes(data)
        if sys.byteorder == "big":
            values.byteswap()
        return values

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple)):
            return len(self) == len(other) and self.tolist() == list(other)
        return super().__eq__(other)

    __hash__ = None  # mutable, as a list

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.tolist()!r})"

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            cls.coerce,
            serialization=core_schema.plain_serializer_function_ser_schema(
                _compact_serialized, info_arg=True
            ),
        )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        return {"type": "array", "items": {"type": cls.JSON_ITEMS}}


def _compact_serialized(value: CompactArray, info: Any) -> object:
    """JSON: a list of numbers; Python (model_dump): the array itself, compact."""
    return value.tolist() if info.mode_is_json() else value


class Float64Array(CompactArray):
    TYPECODE = "d"
    DTYPE = "<f8"
    JSON_ITEMS = "number"


class Int32Array(CompactArray):
    TYPECODE = "i"
    DTYPE = "<i4"
    JSON_ITEMS = "integer"


assert array.array("d").itemsize == 8 and array.array("i").itemsize == 4


def ragged_fields(model: type[BaseModel]) -> dict[str, type[CompactArray]]:
    """The model's ragged per-request fields and their array types, from the annotations."""
    return {
        name: field.annotation
        for name, field in model.model_fields.items()
        if isinstance(field.annotation, type) and issubclass(field.annotation, CompactArray)
    }


class RequestRecord(Schema):
    """One request as the client saw it. Times: seconds since the point's t0 (monotonic).

    Two readings of one stream, kept apart (docs/result-schema.md):
    - vLLM's (`vllm bench serve` 0.32, `endpoint_request_func.py`): `ttft` and `e2el` count from
      `actual_send`, the moment just before the request went out; every chunk with non-empty
      `choices` is a chunk (the chat role chunk too); a request failed (`error`) only when it got
      no HTTP 200, no such chunk, or broke off.
    - Headroom's: latency from `intended_send` (the schedule), tokens per chunk, and the strict
      completion (`incomplete` says why a response vLLM counts as completed was not whole).
    """

    index: int
    replica: int = 0
    intended_send: float
    actual_send: float | None = None
    connect_s: float | None = Field(
        default=None, description="actual send until a connection was in hand (pool or new)"
    )
    ttft: float | None = Field(default=None, description="first chunk - actual send (vLLM)")
    e2el: float | None = Field(default=None, description="last chunk - actual send (vLLM)")
    completed_at: float | None = None
    chunk_times: Float64Array = Field(
        default_factory=Float64Array, description="arrivals of chunks with non-empty choices"
    )
    chunk_tokens: Int32Array = Field(
        default_factory=Int32Array, description="tokens in each chunk (0 for the chat role chunk)"
    )
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    max_tokens: int | None = Field(
        default=None, description="this request's own max_tokens; None: the workload's"
    )
    # A conversation workload's turn: which conversation (0.., in the point's order) and its
    # turn number (1..); None for every other workload.
    conversation: int | None = None
    turn: int | None = None
    # The LoRA adapter the request named as its model (WorkloadSpec.lora_split); None: the
    # served model itself.
    adapter: str | None = None
    finish_reason: str | None = None
    status: int | None = None
    error: str | None = None
    incomplete: str | None = Field(
        default=None,
        description="completed as vLLM counts it, but no [DONE], no usage, or an error event",
    )
    # Output parity (WorkloadSpec.keep_outputs): the prompt's token ids as the server saw them,
    # digested (two points "sent the same prompts" when these are equal), the response's token
    # ids, and the text of the first OUTPUT_TEXTS_KEPT responses for a reader to look at.
    prompt_digest: str | None = Field(
        default=None, description="BLAKE2b-64 of the prompt token ids the server returned"
    )
    output_ids: Int32Array = Field(
        default_factory=Int32Array, description="the response's token ids (keep_outputs only)"
    )
    output_text: str | None = Field(
        default=None, description="the response's text, for the first few requests only"
    )

    def model_post_init(self, context: Any, /) -> None:
        # pydantic gives every instance its own set of the field names it was given: the
        # collector names nearly all, a set of about 2 KB per record (over 200 MB for 100,000
        # requests). Every record shares one set of all names instead; nothing reads a record's
        # unset fields (exclude_unset), and a name pydantic adds on assignment is already in it.
        object.__setattr__(self, "__pydantic_fields_set__", _ALL_RECORD_FIELDS)

    @property
    def ok(self) -> bool:
        """Completed as `vllm bench serve` counts it: HTTP 200 and at least one chunk."""
        return self.completed(self.error, self.status, len(self.chunk_times))

    @staticmethod
    def completed(error: str | None, status: int | None, chunks: int) -> bool:
        """`ok` from its three inputs, for a reader of stored columns that makes no records."""
        return error is None and status == 200 and chunks > 0

    @property
    def strictly_ok(self) -> bool:
        """Headroom's strict completion: also `[DONE]`, a usage count and no error event."""
        return self.ok and self.incomplete is None and self.output_tokens is not None


# The one fields-set every RequestRecord shares (model_post_init).
_ALL_RECORD_FIELDS: set[str] = set(RequestRecord.model_fields)

class EngineSample(Schema):
    """One scrape of the engine's /metrics (gauges, and counters as running totals)."""

    t: float
    running: float | None = None
    waiting: float | None = None
    kv_usage: float | None = Field(default=None, description="0-1")
    preemptions_total: float | None = None
    prompt_tokens_total: float | None = None
    generation_tokens_total: float | None = None
    # vllm:iteration_tokens_total histogram's running sum and count (tokens scheduled per step)
    iteration_tokens_sum: float | None = None
    iteration_tokens_count: float | None = None
    # vllm:num_requests_waiting_by_reason (vLLM 0.32): waiting for scheduling capacity, and
    # deferred by a transient constraint (LoRA budget, KV transfer); they add up to `waiting`.
    waiting_capacity: float | None = None
    waiting_deferred: float | None = None
    # Prompt tokens looked up in the prefix cache, and those found there (running totals).
    prefix_cache_queries_total: float | None = None
    prefix_cache_hits_total: float | None = None
    # vLLM's own estimates of the work per GPU, counted only when the engine runs with
    # --enable-mfu-metrics (zero otherwise); each engine of a data-parallel server counts its own
    # GPU's, so these are the mean over engines (running totals).
    estimated_flops_per_gpu_total: float | None = None
    estimated_read_bytes_per_gpu_total: float | None = None
    estimated_write_bytes_per_gpu_total: float | None = None
    # vllm:request_queue_time_seconds, recorded as each request finishes: its running sum and
    # its cumulative bucket counts keyed by the `le` label as vLLM prints it ("0.3", "+Inf").
    queue_time_sum: float | None = None
    queue_time_buckets: dict[str, float] = Field(default_factory=dict)
    # Speculative decoding's running totals (only with --speculative-config): drafts, draft
    # tokens, accepted tokens, and accepted tokens by draft position ("0", "1", ...).
    spec_drafts_total: float | None = None
    spec_draft_tokens_total: float | None = None
    spec_accepted_tokens_total: float | None = None
    spec_accepted_per_position_total: dict[str, float] = Field(default_factory=dict)
    replica: int = 0
