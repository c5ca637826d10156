"""Read result files: Headroom's own JSONL, a run's JSON download, `vllm bench serve` results.

`vllm bench serve --save-result` writes one JSON object; `--append-result` adds one object per
line to the same file, so one file may hold several runs, and each becomes its own point.
Files vary by version: older ones lack `failed`, p90/p95, `latencies` and `start_times`; the
per-request arrays other than `latencies` are present only with `--save-detailed`.
`--metadata KEY=VALUE` entries are top-level keys of the object beside vLLM's own (as strings);
those that name an engine setting or provenance fill those fields, the others are kept in notes.

What a file cannot tell (whether responses were cut short, the goodput SLOs) is written into the
point's notes instead of being guessed, and so is every figure computed from the file rather
than read from it. A bad line or value refuses the file with a message naming the line and the
field. Points are returned one at a time (iter_result_file): Headroom's JSONL and a run's
download (runner.downloads) are never read whole, a vllm bench document is parsed once, and JSON
nested deeper than a result file ever is (MAX_JSON_DEPTH) is refused before it is parsed.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runner.downloads import is_download, iter_download_into
from runner.metrics import summary_ms
from runner.responses import chunk_token_counts
from runner.results import (
    BATCH_LINE_START,
    RecordList,
    ResultFileError,
    SinkT,
    iter_points_into,
)
from runner.schema import (
    Checkpoint,
    EngineConfig,
    EngineInfo,
    Float64Array,
    Hardware,
    Int32Array,
    LoadSpec,
    Metrics,
    PointResult,
    Provenance,
    RequestRecord,
    WorkloadSpec,
    check_goodput,
)

# The keys without which a file is not a vllm bench serve result at all.
VLLM_BENCH_REQUIRED = ("duration", "completed", "total_input_tokens", "total_output_tokens")
METRIC_FAMILIES = ("ttft", "tpot", "itl", "e2el")
STATISTICS = ("mean", "median", "std", "p90", "p95", "p99")
STATISTIC_FIELDS = frozenset(f"{s}_{family}_ms" for family in METRIC_FAMILIES for s in STATISTICS)
# vLLM names a percentile p{int} when it is whole, else p{float}: p50_ttft_ms, p99.9_ttft_ms.
PERCENTILE_KEY = re.compile(r"^p\d+(?:\.\d+)?_(?:ttft|tpot|itl|e2el)_ms$")
# Any statistic vLLM writes, of the families above or others (client_queue_time, ...).
STATISTIC_KEY = re.compile(r"^(?:mean|median|std|p\d+(?:\.\d+)?)_[a-z0-9_]+_ms$")

# vLLM's own keys that have no Headroom field: scalars are kept in notes, arrays dropped.
VLLM_KEYS_WITHOUT_FIELD = frozenset(
    {
        "tokenizer_id",
        "best_of",
        "use_beam_search",
        "generated_texts",
        "queue_times",
        "rps_change_events",
        "max_output_tokens_per_s",
        "max_concurrent_requests",
        "rtfx",
        "input_throughput",
        "request_inthroughput",  # vLLM 0.3's spelling
        "total_input_sequences",
        "input_sequence_throughput",
    }
)
VLLM_KEY_PREFIXES = ("spec_decode_", "diffusion_", "probe_")

# --metadata keys (lower case, '-' read as '_') that name a field: group -> field of its model.
# Every engine setting is a key under its own name (max_num_seqs=256).
METADATA_FIELDS: dict[str, tuple[str, str]] = {
    **{setting.name: ("engine", setting.name) for setting in EngineConfig.settings()},
    "tp": ("engine", "tensor_parallel_size"),  # vLLM's own --metadata example: tp=1
    "gpu": ("hardware", "gpu_name"),
    "gpu_name": ("hardware", "gpu_name"),
    "hardware": ("hardware", "gpu_name"),
    "host": ("hardware", "host"),
    "revision": ("checkpoint", "revision"),
    "precision": ("checkpoint", "precision"),
    "engine": ("engine_info", "name"),
    "engine_name": ("engine_info", "name"),
    "runtime": ("engine_info", "name"),
    "version": ("engine_info", "version"),  # vLLM's own --metadata example: version=0.3.3
    "vllm_version": ("engine_info", "version"),
    "sglang_version": ("engine_info", "version"),
    "tensorrt_llm_version": ("engine_info", "version"),
    "trtllm_version": ("engine_info", "version"),
    "image": ("engine_info", "image"),
    "goodput": ("goodput", "slos"),  # as vLLM's --goodput: ttft:500,tpot:50 (ms)
}
# A version key that names its engine says which engine ran, as engine=NAME would.
VERSION_KEY_ENGINES = {
    "vllm_version": "vllm",
    "sglang_version": "sglang",
    "tensorrt_llm_version": "tensorrt-llm",
    "trtllm_version": "tensorrt-llm",
}
# vllm bench's --backend values that name the engine they were written for. The others
# ("openai", "openai-chat", ...) are request formats any OpenAI-compatible server speaks, so
# they say nothing about what served the requests. Older vLLM releases defaulted to "vllm",
# which is why the note on such a point says where its engine name came from.
BACKEND_ENGINES = {
    "vllm": "vllm",
    "vllm-pooling": "vllm",
    "vllm-rerank": "vllm",
    "tensorrt-llm": "tensorrt-llm",
    "sglang": "sglang",
    "tgi": "tgi",
    "lmdeploy": "lmdeploy",
    "deepspeed-mii": "deepspeed-mii",
    "scalellm": "scalellm",
    "llama.cpp": "llama.cpp",
}
UNKNOWN_HOST = "unknown (not recorded by vllm bench)"
UNKNOWN_MODEL = "unknown"

# A result nests about five levels deep (a point, its requests, one request's chunk times). A
# document nested deeper than this is not a result file, and is refused before it is parsed: a
# file of "[[[[..." would otherwise drive the parser's recursion to its limit.
MAX_JSON_DEPTH = 64
TOO_DEEP = f"JSON nested too deeply to be a result file (over {MAX_JSON_DEPTH} levels)"
# A JSON string (escapes included) or a bracket: all the nesting check needs to read. A string
# left open runs to the end of the text (json.loads then refuses it): were the closing quote
# required, a match failing at the end would be tried again from every quote after it, and a
# file of escaped quotes would take time quadratic in its length. Each character is read once.
STRING_OR_BRACKET = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"?|[\[\]{}]', re.DOTALL)
# How every point line of Headroom's JSONL starts (runner.results.append_point writes
# schema_version first; a point's request batches before it start with BATCH_LINE_START), and
# how much of a file's head is read to see it.
HEADROOM_LINE_START = b'{"schema_version":'
HEADROOM_HEAD_BYTES = 4096


class ImportFileError(ValueError):
    """A result file that cannot be read; the message says why and where."""


class _BenchDocument(BaseModel):
    """The keys of a `vllm bench serve` result this import reads, typed as vLLM writes them.

    A wrong type is refused with the key (and index) named; the statistics (`*_ms`) and the
    metadata are read from the raw object, their names are not fixed.
    """

    model_config = ConfigDict(extra="ignore")

    date: str | None = None
    backend: str | None = None
    endpoint_type: str | None = None
    label: str | None = None
    model_id: str | None = None
    dataset_name: str | None = None
    dataset_path: str | None = None
    num_prompts: int | None = Field(default=None, gt=0)
    request_rate: float | str | None = None  # "inf" for a burst
    burstiness: float | None = Field(default=None, gt=0)
    max_concurrency: int | None = Field(default=None, gt=0)
    ramp_up_strategy: str | None = None
    ramp_up_start_rps: float | None = None
    ramp_up_end_rps: float | None = None
    duration: float = Field(gt=0, allow_inf_nan=False)
    completed: int = Field(ge=0)
    failed: int | None = Field(default=None, ge=0)
    total_input_tokens: int = Field(ge=0)
    total_output_tokens: int = Field(ge=0)
    request_throughput: float | None = None
    request_goodput: float | None = None
    output_throughput: float | None = None
    total_token_throughput: float | None = None
    input_lens: list[int] | None = None
    output_lens: list[int] | None = None
    ttfts: list[float] | None = None
    itls: list[list[float]] | None = None
    latencies: list[float] | None = None
    start_times: list[float] | None = None
    errors: list[str | None] | None = None


KNOWN_VLLM_KEYS = frozenset(_BenchDocument.model_fields) | VLLM_KEYS_WITHOUT_FIELD


@dataclass
class _Metadata:
    """The file's --metadata entries: by group, field -> (key as written, value); the rest."""

    fields: dict[str, dict[str, tuple[str, Any]]]
    kept: list[str] = field(default_factory=list)  # "key=value" naming no field
    unread: list[str] = field(default_factory=list)  # unknown keys whose value is not a string

    def group(self, name: str) -> dict[str, tuple[str, Any]]:
        return self.fields.get(name, {})


# ---------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------


def load_result_file(
    path: Path, *, name: str = "", max_document_bytes: int | None = None
) -> list[PointResult]:
    """Every point in a Headroom results file (JSONL), a run's download or a vllm bench file;
    ImportFileError else."""
    return list(iter_result_file(path, name=name, max_document_bytes=max_document_bytes))


def iter_result_file(
    path: Path, *, name: str = "", max_document_bytes: int | None = None
) -> Iterator[PointResult]:
    """The points of a result file, one at a time; messages call the file `name` (its own name
    by default: an uploaded file is stored under a generated one).

    Headroom's JSONL is read a line at a time, never whole: each line is one point. A run's JSON
    download is read as a stream, a point and a request at a time. Anything else is JSON
    documents read whole (a vllm bench file is one, --append-result writes one a line),
    so such a file over max_document_bytes is refused before it is read; None sets no limit (a
    file of one's own on the command line). A bad line raises when it is reached: a caller that
    stores points stores them in one transaction (benchmarks.imports), so nothing is half-kept.
    """
    points = iter_result_file_into(
        path, RecordList, name=name, max_document_bytes=max_document_bytes
    )
    for point, batches in points:
        if batches is not None:
            point.requests = batches.records
        yield point


def iter_result_file_into(
    path: Path,
    new_sink: Callable[[], SinkT],
    *,
    name: str = "",
    max_document_bytes: int | None = None,
) -> Iterator[tuple[PointResult, SinkT | None]]:
    """iter_result_file, a Headroom file's batched records going to sinks a batch at a time as
    runner.results.iter_points_into gives them (each point with its sink, or None); a run
    download's records go to sinks too (runner.downloads); a vllm bench file's points come with
    None, their requests in the point (its document is read whole anyway)."""
    name = name or path.name
    if not path.is_file():
        raise ImportFileError(f"{name}: no such file")
    head = _head(path)
    try:
        if head.lstrip().startswith((HEADROOM_LINE_START, BATCH_LINE_START)):
            # A last line cut short (a run killed mid-write) is skipped, as --resume skips it.
            yield from iter_points_into(path, [], new_sink, label=name)
            return
        if is_download(head):
            # Streamed, so like the JSONL only the upload limit applies, not the document one.
            yield from iter_download_into(path, new_sink, label=name, max_depth=MAX_JSON_DEPTH)
            return
    except ResultFileError as exc:
        raise ImportFileError(str(exc)) from None
    size = path.stat().st_size
    if max_document_bytes is not None and size > max_document_bytes:
        raise ImportFileError(
            f"{name}: a vllm bench file is read whole, and this one ({_megabytes(size)}) is "
            f"over the {_megabytes(max_document_bytes)} limit for that"
        )
    for point in _document_points(_read_text(path, name), name):
        yield point, None


def _head(path: Path) -> bytes:
    """The file's first bytes: enough to tell Headroom's JSONL and a run's download."""
    with path.open("rb") as handle:
        return handle.read(HEADROOM_HEAD_BYTES)


def _megabytes(size: int) -> str:
    return f"{size / 2**20:.1f} MB"


def _read_text(path: Path, name: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ImportFileError(f"{name}: not a text file (is it compressed or binary?)") from None


def _document_points(text: str, name: str) -> Iterator[PointResult]:
    """The points of JSON documents: the whole text, or one a line (--append-result).

    Each document is parsed once; only the point made from it is kept.
    """
    lines = [(number, line) for number, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        raise ImportFileError(f"{name}: the file is empty")
    if len(lines) > 1:
        try:
            first = _loads(lines[0][1])
        except json.JSONDecodeError:
            pass  # not one object a line: one document written over several lines
        else:
            yield _point_of(first, f"{name}:{lines[0][0]}")
            del first
            for number, line in lines[1:]:
                yield _point_of(_line_document(name, number, line), f"{name}:{number}")
            return
    del lines
    try:
        document = _loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFileError(
            f"not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg} "
            "(is the file truncated?)"
        ) from None
    del text
    yield _point_of(document, name)


def _point_of(document: Any, source: str) -> PointResult:
    """A Headroom point written as one JSON document, else a vllm bench serve result."""
    if isinstance(document, dict) and "schema_version" in document:
        try:
            return PointResult.model_validate(document)
        except ValidationError as exc:
            raise ImportFileError(
                f"{source}: not a valid Headroom point: {exc.errors()[0]['msg']}"
            ) from None
    return from_vllm_bench(document, source_name=source)


def check_nesting(text: str) -> None:
    """Refuse JSON nested deeper than MAX_JSON_DEPTH, before any parser recurses into it."""
    depth = 0
    for match in STRING_OR_BRACKET.finditer(text):
        opened = text[match.start()]
        if opened in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                raise ImportFileError(TOO_DEEP)
        elif opened in "]}":
            depth -= 1


def _loads(text: str) -> Any:
    """json.loads after the nesting check; a RecursionError in the decoder is refused alike."""
    check_nesting(text)
    try:
        return json.loads(text)
    except RecursionError:
        raise ImportFileError(TOO_DEEP) from None


def _line_document(name: str, number: int, line: str) -> Any:
    try:
        return _loads(line)
    except json.JSONDecodeError as exc:
        raise ImportFileError(
            f"{name}:{number}: not valid JSON at column {exc.colno}: {exc.msg} "
            "(is the line cut short?)"
        ) from None
    except ImportFileError as exc:
        raise ImportFileError(f"{name}:{number}: {exc}") from None


# ---------------------------------------------------------------------------------------------
# One vllm bench document
# ---------------------------------------------------------------------------------------------


def from_vllm_bench(data: Any, *, source_name: str) -> PointResult:
    """Turn one `vllm bench serve --save-result` document into a point."""
    if not isinstance(data, dict):
        raise ImportFileError(f"{source_name}: expected a JSON object, got {_kind(data)}")
    missing = [key for key in VLLM_BENCH_REQUIRED if key not in data]
    if missing:
        raise ImportFileError(
            f"{source_name}: not a vllm bench serve result (missing {', '.join(missing)})"
        )
    try:
        doc = _BenchDocument.model_validate(data)
        return _point(doc, data, source_name)
    except ValidationError as exc:
        raise ImportFileError(f"{source_name}: {_first_error(exc)}") from None


def _point(doc: _BenchDocument, data: dict[str, Any], source: str) -> PointResult:
    metadata = _read_metadata(data, source)
    notes = [f"imported from vllm bench serve file {source}"]
    chat = "chat" in (doc.backend or doc.endpoint_type or "")
    requests = _requests(doc, chat=chat, source=source, notes=notes)
    metrics = _metrics(doc, data, requests, metadata, notes, source)
    load = _load(doc, metrics.completed + metrics.failed, source, notes)
    engine_config = _from_metadata(EngineConfig, metadata.group("engine"), source)
    notes.append(_engine_settings_note(engine_config, metadata))
    notes += _leftover_notes(data, metadata)
    return PointResult(
        key=f"import:{source}:{doc.date or ''}",
        plan_name=doc.label or "vllm-bench-import",
        engine_config=engine_config,
        load=load,
        workload=_workload(doc, chat, requests, metrics),
        metrics=metrics,
        provenance=_provenance(doc, metadata, source, notes),
        requests=requests,
        source="vllm-bench-import",
        notes=notes,
    )


def _kind(data: Any) -> str:
    if isinstance(data, list) and data and isinstance(data[0], dict) and "benchmark" in data[0]:
        # save_to_pytorch_benchmark_format writes this list beside the result file.
        return "a list (a .pytorch.json file? import the result file written beside it)"
    return type(data).__name__


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "(top level)"
    return f"{where}: {error['msg']}"


# ---------------------------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------------------------


def _metrics(
    doc: _BenchDocument,
    data: dict[str, Any],
    requests: list[RequestRecord],
    metadata: _Metadata,
    notes: list[str],
    source: str,
) -> Metrics:
    completed, duration = doc.completed, doc.duration
    if doc.failed is not None:
        failed = doc.failed
    else:
        failed = max((doc.num_prompts or completed) - completed, 0)
        notes.append("file has no 'failed' key: failures inferred from num_prompts - completed")
    notes.append("short responses cannot be checked: the file does not record max_tokens")
    statistics, other_percentiles = _statistics(data, source)
    if not any(key.endswith("_e2el_ms") for key in (*statistics, *other_percentiles)):
        statistics |= _e2el_from_latencies(doc, requests, completed, failed, notes)
    total_input, total_output = doc.total_input_tokens, doc.total_output_tokens
    return Metrics(
        duration=duration,
        completed=completed,
        failed=failed,
        short_responses=0,
        valid=failed == 0 and completed > 0,
        total_input_tokens=total_input,
        total_output_tokens=total_output,
        request_throughput=_finite(doc.request_throughput) or completed / duration,
        output_throughput=_finite(doc.output_throughput) or total_output / duration,
        total_token_throughput=_finite(doc.total_token_throughput)
        or (total_input + total_output) / duration,
        request_goodput=_finite(doc.request_goodput),
        goodput_slos=_goodput_slos(doc, metadata, notes, source),
        other_percentiles=other_percentiles,
        # Each statistic is a float | None field of Metrics, checked there by its name; mypy
        # cannot match a ** dict's keys to fields, so it sees them as Any.
        **cast(dict[str, Any], statistics),
    )


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _statistics(
    data: dict[str, Any], source: str
) -> tuple[dict[str, float | None], dict[str, float]]:
    """The ttft/tpot/itl/e2el statistics: Metrics fields, and the other percentiles by name."""
    fields: dict[str, float | None] = {}
    others: dict[str, float] = {}
    for key, value in data.items():
        if key in STATISTIC_FIELDS:
            fields[key] = _figure(key, value, source)
        elif PERCENTILE_KEY.match(key) and (figure := _figure(key, value, source)) is not None:
            others[key] = figure
    return fields, others


def _figure(key: str, value: Any, source: str) -> float | None:
    """A statistic as a float; None when absent or not finite, refused when not a number."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ImportFileError(f"{source}: {key}: expected a number of ms, got {value!r:.60}")
    return float(value) if math.isfinite(value) else None


def _e2el_from_latencies(
    doc: _BenchDocument,
    requests: list[RequestRecord],
    completed: int,
    failed: int,
    notes: list[str],
) -> dict[str, float | None]:
    """vLLM's e2el statistics (np.mean/median/std/percentile of successful latencies, ms).

    vLLM writes them only with --percentile-metrics e2el, but keeps `latencies` in every 0.32
    file. Without --save-detailed there is no `errors` array to tell which requests succeeded;
    vLLM's request functions leave a failed request's latency at 0.0, so the non-zero ones are
    taken, and only when their count is exactly `completed`.
    """
    if doc.latencies is None:
        return {}
    if requests:
        latencies = [r.e2el for r in requests if r.ok and r.e2el is not None]
    else:
        latencies = [x for x in doc.latencies if x > 0] if failed else list(doc.latencies)
    if not latencies or len(latencies) != completed:
        notes.append(
            "e2el statistics left empty: the file does not tell which latencies are of "
            "successful requests"
        )
        return {}
    notes.append(
        "e2el statistics (mean, median, std, p90, p95, p99) computed from the file's latencies "
        "of successful requests, not read from it"
    )
    return summary_ms("e2el", latencies)


def _goodput_slos(
    doc: _BenchDocument, metadata: _Metadata, notes: list[str], source: str
) -> dict[str, float]:
    """SLOs from --metadata goodput=ttft:500,tpot:50; vLLM does not save its --goodput."""
    given = metadata.group("goodput").get("slos")
    if given is None:
        if _finite(doc.request_goodput) is not None:
            notes.append(
                "request_goodput kept, but its SLOs are unknown: vllm bench does not save "
                "--goodput (record them as --metadata goodput=ttft:MS,tpot:MS)"
            )
        return {}
    key, text = given
    slos: dict[str, float] = {}
    try:
        for pair in re.split(r"[\s,]+", str(text).strip()):
            name, _, ms = pair.partition(":")
            slos[name] = float(ms)
        return check_goodput(slos)
    except ValueError as exc:
        raise ImportFileError(
            f"{source}: --metadata {key}={text}: {exc} (write it as vLLM's --goodput: "
            "ttft:500,tpot:50)"
        ) from None


# ---------------------------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------------------------


def _requests(
    doc: _BenchDocument, *, chat: bool, source: str, notes: list[str]
) -> list[RequestRecord]:
    """Per-request records from --save-detailed arrays; empty when the file has none."""
    if not doc.ttfts:
        return []
    count = len(doc.ttfts)
    for name in ("itls", "latencies", "output_lens", "input_lens", "errors", "start_times"):
        values = getattr(doc, name)
        if values is not None and len(values) != count:
            raise ImportFileError(
                f"{source}: {name} has {len(values)} entries but ttfts has {count}"
            )
    starts = doc.start_times
    first_start = min(starts, default=None) if starts is not None else None
    if first_start is None:
        notes.append("file has no start_times: request send times shown as 0")
    if doc.output_lens is not None:
        role = "; a chat stream's first chunk is taken as the role chunk, 0 tokens" if chat else ""
        notes.append(
            "tokens per chunk are not in the file: each request's output_lens is spread over "
            f"its chunks (1 on the first token chunk, the rest evenly{role})"
        )
    return [_request(doc, index, chat, first_start) for index in range(count)]


def _request(
    doc: _BenchDocument, index: int, chat: bool, first_start: float | None
) -> RequestRecord:
    starts = doc.start_times
    send = starts[index] - first_start if starts and first_start is not None else 0.0
    error = (doc.errors[index] if doc.errors else None) or None
    ttft = doc.ttfts[index] if doc.ttfts and error is None and doc.ttfts[index] else None
    if error is None and ttft is None:
        # vLLM's client records no reason for some failures (an HTTP error without a reason).
        error = "failed in vllm bench (no first chunk; no reason recorded)"
    gaps = doc.itls[index] if doc.itls else []
    chunk_times: list[float] = []
    if ttft is not None:
        moment = send + ttft
        chunk_times.append(moment)
        for gap in gaps:
            moment += gap
            chunk_times.append(moment)
    latency = doc.latencies[index] if doc.latencies and doc.latencies[index] else None
    if latency is None and ttft is not None:
        latency = ttft + sum(gaps)
    output = doc.output_lens[index] if doc.output_lens is not None and error is None else None
    return RequestRecord(
        index=index,
        intended_send=send,
        actual_send=send,
        ttft=ttft,
        e2el=latency if error is None else None,
        completed_at=send + latency if latency is not None and error is None else None,
        chunk_times=Float64Array(chunk_times),
        chunk_tokens=Int32Array(
            _chunk_tokens(len(chunk_times), output, chat) if output is not None else ()
        ),
        prompt_tokens=doc.input_lens[index] if doc.input_lens is not None else None,
        output_tokens=output,
        status=None if error else 200,
        error=error,
    )


def _chunk_tokens(chunks: int, output_tokens: int, chat: bool) -> list[int]:
    """output_lens over the chunks, as the runner's collector splits a usage count.

    vLLM's server opens a chat stream with a role chunk that vLLM's client counts as the first
    chunk (its TTFT) but that carries no token.
    """
    role = 1 if chat and chunks > 1 else 0
    return [0] * role + chunk_token_counts(chunks - role, None, output_tokens)


# ---------------------------------------------------------------------------------------------
# Load, workload, metadata, provenance
# ---------------------------------------------------------------------------------------------


def _load(doc: _BenchDocument, num_requests: int, source: str, notes: list[str]) -> LoadSpec:
    num_requests = doc.num_prompts or num_requests or 1
    rate = _request_rate(doc.request_rate, source)
    if doc.ramp_up_strategy:
        notes.append(
            f"ramp-up load ({doc.ramp_up_strategy}, {doc.ramp_up_start_rps} to "
            f"{doc.ramp_up_end_rps} req/s) has no Headroom load shape: the load shown is not "
            "what ran"
        )
    if rate is not None:
        burstiness = doc.burstiness if doc.burstiness is not None else 1.0
        if not math.isfinite(burstiness):
            raise ImportFileError(f"{source}: burstiness: {burstiness} cannot be stored")
        return LoadSpec(
            shape="rate",
            num_requests=num_requests,
            rate=rate,
            burstiness=burstiness,
            max_concurrency=doc.max_concurrency,
        )
    if doc.max_concurrency is not None:
        return LoadSpec(
            shape="concurrency", num_requests=num_requests, concurrency=doc.max_concurrency
        )
    return LoadSpec(shape="burst", num_requests=num_requests)


def _request_rate(value: float | str | None, source: str) -> float | None:
    """requests/s, or None for a burst: vLLM writes "inf" (a float inf reads as JSON Infinity)."""
    if isinstance(value, str):
        if value.strip().lower() in ("inf", "infinity"):
            return None
        try:
            value = float(value)
        except ValueError:
            raise ImportFileError(f"{source}: request_rate: {value!r} is not a number") from None
    if value is None or value == math.inf:
        return None
    if not math.isfinite(value) or value <= 0:
        raise ImportFileError(f"{source}: request_rate: {value} must be a number > 0 or 'inf'")
    return value


def _workload(
    doc: _BenchDocument, chat: bool, requests: list[RequestRecord], metrics: Metrics
) -> WorkloadSpec:
    input_lens = [r.prompt_tokens for r in requests if r.prompt_tokens]
    output_lens = [r.output_tokens for r in requests if r.output_tokens]
    completed = max(metrics.completed, 1)
    mean_input = max(round(metrics.total_input_tokens / completed), 1)
    mean_output = max(round(metrics.total_output_tokens / completed), 1)
    return WorkloadSpec(
        kind="dataset",
        dataset_path=doc.dataset_name or doc.dataset_path or "vllm-bench",
        input_tokens_min=min(input_lens, default=mean_input),
        input_tokens_max=max(input_lens, default=mean_input),
        output_tokens=max(output_lens, default=mean_output),
        ignore_eos=False,
        endpoint="chat" if chat else "completions",
    )


def _is_vllm_key(key: str) -> bool:
    return (
        key in KNOWN_VLLM_KEYS
        or STATISTIC_KEY.match(key) is not None
        or key.startswith(VLLM_KEY_PREFIXES)
    )


def _read_metadata(data: dict[str, Any], source: str) -> _Metadata:
    """The keys vLLM did not write itself: --metadata entries, strings as vLLM stores them."""
    metadata = _Metadata(fields={})
    for key, value in data.items():
        if _is_vllm_key(key):
            continue
        target = METADATA_FIELDS.get(_metadata_key(key))
        if target is None:
            if isinstance(value, str):
                metadata.kept.append(f"{key}={value}")
            else:
                metadata.unread.append(key)  # a newer vLLM's figure, not a --metadata string
            continue
        group, name = target
        fields = metadata.fields.setdefault(group, {})
        if name in fields and str(fields[name][1]) != str(value):
            raise ImportFileError(
                f"{source}: --metadata {fields[name][0]}={fields[name][1]} and {key}={value} "
                "disagree"
            )
        fields[name] = (key, value)
    return metadata


def _metadata_key(key: str) -> str:
    return key.strip().lower().replace("-", "_")


ModelT = TypeVar("ModelT", bound=BaseModel)


def _from_metadata(
    model: type[ModelT], given: dict[str, tuple[str, Any]], source: str, /, **known: Any
) -> ModelT:
    """A model from metadata strings, converted by pydantic ('256', '0.9', 'true').

    A bad value refuses the file, naming the key as written in the file.
    """
    try:
        return model(**{**known, **{name: value for name, (_, value) in given.items()}})
    except ValidationError as exc:
        error = exc.errors()[0]
        name = str(error["loc"][0]) if error["loc"] else ""
        entries = [given[name]] if name in given else list(given.values())
        where = ", ".join(f"{key}={value}" for key, value in entries)
        raise ImportFileError(f"{source}: --metadata {where}: {error['msg']}") from None


def _engine_settings_note(config: EngineConfig, metadata: _Metadata) -> str:
    if not metadata.group("engine"):
        return "engine settings are not recorded in vllm bench files; shown as 'defaults'"
    return (
        f"engine settings from the file's --metadata: {config.label()}; "
        "settings not named there are unknown"
    )


def _leftover_notes(data: dict[str, Any], metadata: _Metadata) -> list[str]:
    """Metadata naming no field, vLLM figures without a Headroom field, unknown keys."""
    notes = []
    if metadata.kept:
        notes.append("metadata kept as notes: " + ", ".join(metadata.kept))
    figures = [
        f"{key}={value:g}"
        for key, value in data.items()
        if _is_vllm_key(key)
        and key not in _BenchDocument.model_fields
        and key not in STATISTIC_FIELDS
        and not PERCENTILE_KEY.match(key)
        and isinstance(value, (int, float))
        and not isinstance(value, bool)
    ]
    if figures:
        notes.append("vLLM figures without a Headroom field: " + ", ".join(figures))
    if metadata.unread:
        notes.append("keys this import does not know, not read: " + ", ".join(metadata.unread))
    return notes


def _provenance(
    doc: _BenchDocument, metadata: _Metadata, source: str, notes: list[str]
) -> Provenance:
    name, note = _engine_name(doc, metadata, source)
    notes.append(note)
    return Provenance(
        hardware=_from_metadata(Hardware, metadata.group("hardware"), source, host=UNKNOWN_HOST),
        engine=_from_metadata(
            EngineInfo, metadata.group("engine_info"), source, launch_style="attach", name=name
        ),
        checkpoint=_from_metadata(
            Checkpoint, metadata.group("checkpoint"), source, model=doc.model_id or UNKNOWN_MODEL
        ),
        client_version=f"vllm bench serve ({doc.backend or 'unknown backend'})",
        started_at=_iso_date(doc.date),
    )


def _engine_name(doc: _BenchDocument, metadata: _Metadata, source: str) -> tuple[str | None, str]:
    """The engine that served the file's requests, and a note saying how it is known.

    --metadata engine=NAME (or a version key naming its engine, vllm_version=...) is what the
    engineer recorded; the backend is only the client's request format, read when nothing else
    says. None when the file does not tell: an import never claims vLLM by default.
    """
    info = metadata.group("engine_info")
    given, version = info.get("name"), info.get("version")
    implied = VERSION_KEY_ENGINES.get(_metadata_key(version[0])) if version else None
    if given is not None:
        key, value = given
        name = EngineInfo.normalize_name(str(value))
        if version and implied and name != implied:
            raise ImportFileError(
                f"{source}: --metadata {key}={value} and {version[0]}={version[1]} disagree"
            )
        return name, f"serving engine {name}: from the file's --metadata {key}={value}"
    if version and implied:
        return implied, f"serving engine {implied}: from the file's --metadata {version[0]}"
    backend = doc.backend or doc.endpoint_type
    if backend in BACKEND_ENGINES:
        name = BACKEND_ENGINES[backend]
        return name, (
            f"serving engine {name}: from the file's backend {backend!r}, the request format "
            "vllm bench used (record --metadata engine=NAME when another engine served it)"
        )
    said = f"backend {backend!r} is a request format, not an engine" if backend else "no backend"
    return None, (
        f"serving engine not recorded ({said}): state it at import, or record it with "
        "--metadata engine=NAME"
    )


def _iso_date(value: str | None) -> str:
    """vllm bench writes local time as 20250101-120000; keep it, marked as local time."""
    try:
        return datetime.strptime(str(value), "%Y%m%d-%H%M%S").isoformat() + " (local time)"
    except ValueError:
        return str(value or "unknown")
