"""Trace replay and request-length logs: the files behind the "trace" and "lengths" workloads.

Trace formats (WorkloadSpec.trace_format; "auto" decides from the file's first line):

- mooncake: JSONL, one request a line: `timestamp` (ms), `input_length`, `output_length` and
  `hash_ids`. Each hash id stands for one block of WorkloadSpec.trace_block_tokens prompt tokens
  (512 in Mooncake's convention); requests that share a hash id share that block. Prompts are
  built as vLLM 0.32's timed-trace reader builds them (`TimedTrace._expand_prompt` in
  vllm/benchmarks/datasets/datasets.py): block after block, each min(block size, tokens still
  wanted) random token ids seeded by (hash id, size), so a partial last block differs from the
  full block of the same id, and hash ids past the input length are not used. Two differences,
  both deliberate: the seed is the workload seed with the hash id, not Python's `hash()` of a
  string (randomized per process, so vLLM's prompts differ from run to run), and a request
  whose hash ids cover fewer tokens than its input_length gets the rest as tokens of its own
  (vLLM sends the shorter prompt).
- burstgpt: BurstGPT's CSV, columns Timestamp (s), Model, Request tokens, Response tokens,
  Total tokens, Log Type. Rows with 0 response tokens are requests that failed in the log;
  they are left out and counted, as vLLM's BurstGPT reader leaves them out. Every model's rows
  are replayed (vLLM's reader, which samples rows instead of replaying them, keeps GPT-4's).
- csv: a header `timestamp_s,input_tokens,output_tokens` and one request a row.

Without hash ids (burstgpt, csv, and every lengths workload) each request's prompt is tokens of
its own: the file says nothing about shared prefixes, so none are made up.

Rows are replayed in arrival order (a stable sort: a merged trace need not be sorted), the first
at 0 s; trace_span_s keeps the rows that arrive before that many seconds of trace time. A load
replays the first num_requests of them; with trace_longer "refuse" a load that would leave some
out is refused instead (check_source, before any engine starts).

Length logs (kind "lengths"): CSV with a header, or JSONL, of input and output token counts per
request, under any of the names in INPUT_NAMES / OUTPUT_NAMES (a JSONL row may carry them in a
`usage` object, as OpenAI responses do). A workload draws a systematic sample of the log's rows,
sorted by length, with the workload's seed: every n-quantile of the log once, so even 64
requests follow its histogram, each row keeping its own input/output pair; the draws are sent
in a seeded random order. max_tokens is each row's output count; with ignore_eos the responses
run that long.

Token ids come from the server's own tokenizer: POOL_TEXT tokenized once (no special tokens)
gives the pool that every prompt token is drawn from, so no prompt holds a special token or an
id outside the vocabulary.

Every bad row is refused with its file and line number (TraceError).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from runner.schema import (
    LengthComparison,
    LengthHistogram,
    LoadSpec,
    PointResult,
    RequestRecord,
    WorkloadSpec,
)
from runner.workloads import (
    CASE_STUDY_GUIDE,
    RANDOM_WORDS,
    TOKEN_DTYPE,
    CountTokens,
    DatasetError,
    Prompt,
    PromptTokens,
    TokenSource,
    WorkloadError,
    dataset_file,
    draw_tokens,
    read_file_lines,
)

MS_PER_S = 1000.0
BURSTGPT_COLUMNS = ("Timestamp", "Request tokens", "Response tokens")
PLAIN_CSV_COLUMNS = ("timestamp_s", "input_tokens", "output_tokens")
# A length log's columns, as the tools people export from name them: Headroom's own plain CSV,
# Mooncake, OpenAI usage, BurstGPT.
INPUT_NAMES = ("input_tokens", "input_length", "prompt_tokens", "Request tokens")
OUTPUT_NAMES = ("output_tokens", "output_length", "completion_tokens", "Response tokens")
# Prompt tokens are drawn from the server's tokens for this text: plain words, no special token.
POOL_TEXT = CASE_STUDY_GUIDE + " " + " ".join(RANDOM_WORDS)
# Entropy tags: a shared hash-id block and a request's own tail never draw the same stream.
HASH_BLOCK, OWN_TOKENS = 0, 1
# Histogram bins on the run page: enough to show a shape, few enough to read.
HISTOGRAM_BINS = 30


class TraceError(DatasetError):
    """A trace or length log that cannot be used; the message names the file and line."""


@dataclass(frozen=True)
class TraceRow:
    """One request of a trace or length log. arrival_s: trace seconds as the file has them
    (None in a length log); line: its line in the file, which also seeds its own tokens."""

    line: int
    input_tokens: int
    output_tokens: int
    arrival_s: float | None = None
    hash_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class SourceFile:
    """A trace or length log as read: its usable rows (trace: in arrival order, cut to the
    span) and what was left out on the way, for the point's notes."""

    name: str
    format: str
    rows: list[TraceRow]
    failed_rows: int = 0  # 0 output tokens: failed in the log
    rows_before_span: int = 0
    span_s: float = 0.0  # trace: first to last arrival of the whole file

    @property
    def kept_span_s(self) -> float:
        arrivals = [r.arrival_s for r in self.rows if r.arrival_s is not None]
        return max(arrivals) - min(arrivals) if arrivals else 0.0


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------


def _count(value: Any, where: str, name: str, *, zero_ok: bool = False) -> int:
    """A token count: a whole number >= 1 (>= 0 with zero_ok); "12" and 12.0 are 12."""
    number: Any = value
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if isinstance(number, bool) or not isinstance(number, int | float) or not (
        math.isfinite(number) and number == int(number)
    ):
        raise TraceError(f"{where}: {name} must be a whole number of tokens, got {value!r}")
    if int(number) < (0 if zero_ok else 1):
        raise TraceError(f"{where}: {name} must be {'>= 0' if zero_ok else '>= 1'}, got {value!r}")
    return int(number)


def _seconds(value: Any, where: str, name: str, scale: float = 1.0) -> float:
    number: Any = value
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if isinstance(number, bool) or not isinstance(number, int | float) or not math.isfinite(
        number
    ):
        raise TraceError(f"{where}: {name} must be a finite number, got {value!r}")
    return float(number) / scale


def _hash_ids(value: Any, where: str) -> tuple[int, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(
        isinstance(h, int) and not isinstance(h, bool) and h >= 0 for h in value
    ):
        raise TraceError(f"{where}: hash_ids must be a list of whole numbers >= 0")
    return tuple(value)


def _text_lines(path: Path) -> list[str]:
    try:
        return [line.decode("utf-8") for line in read_file_lines(path)]
    except UnicodeDecodeError as exc:
        raise TraceError(f"{path}: not UTF-8 text ({exc.reason})") from None


def _first_line(lines: list[str]) -> str:
    return next((line for line in lines if line.strip()), "")


def detect_format(path: Path, lines: list[str]) -> str:
    """mooncake, burstgpt or csv from the first non-empty line, or TraceError naming them."""
    first = _first_line(lines).lstrip("\ufeff").strip()
    if first.startswith("{"):
        return "mooncake"
    header = {name.strip() for name in next(csv.reader([first]), [])}
    if set(BURSTGPT_COLUMNS) <= header:
        return "burstgpt"
    if set(PLAIN_CSV_COLUMNS) <= header:
        return "csv"
    raise TraceError(
        f"{path}:1: not a trace: expected Mooncake JSONL ({{\"timestamp\": ms, ...}}), a BurstGPT "
        f"CSV ({', '.join(BURSTGPT_COLUMNS)}, ...) or a CSV {','.join(PLAIN_CSV_COLUMNS)}"
    )


def _json_rows(path: Path, lines: list[str]) -> list[tuple[int, dict[str, Any]]]:
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise TraceError(f"{path}:{number}: not JSON: {exc}") from None
        if not isinstance(row, dict):
            raise TraceError(f"{path}:{number}: expected a JSON object, one request a line")
        rows.append((number, row))
    return rows


def _csv_rows(path: Path, lines: list[str]) -> list[tuple[int, dict[str, str]]]:
    """Each data row with its line number; the header is the first non-empty line."""
    text = "\n".join(lines).lstrip("\ufeff")
    reader = csv.DictReader(io.StringIO(text), skipinitialspace=True)
    if reader.fieldnames is not None:
        reader.fieldnames = [name.strip() for name in reader.fieldnames]
    rows = []
    try:
        for row in reader:
            if any(value is None for value in row.values()) or None in row:
                raise TraceError(
                    f"{path}:{reader.line_num}: expected {len(reader.fieldnames or [])} columns "
                    "as the header names"
                )
            rows.append((reader.line_num, row))
    except csv.Error as exc:
        raise TraceError(f"{path}:{reader.line_num}: not CSV: {exc}") from None
    return rows


def _mooncake(path: Path, lines: list[str]) -> tuple[list[TraceRow], int]:
    rows, failed = [], 0
    for number, row in _json_rows(path, lines):
        where = f"{path}:{number}"
        for key in ("timestamp", "input_length", "output_length"):
            if key not in row:
                raise TraceError(f"{where}: no {key!r} (Mooncake: timestamp in ms, input_length, "
                                 "output_length, hash_ids)")
        output = _count(row["output_length"], where, "output_length", zero_ok=True)
        if output == 0:
            failed += 1
            continue
        rows.append(TraceRow(
            line=number,
            arrival_s=_seconds(row["timestamp"], where, "timestamp", MS_PER_S),
            input_tokens=_count(row["input_length"], where, "input_length"),
            output_tokens=output,
            hash_ids=_hash_ids(row.get("hash_ids"), where),
        ))  # fmt: skip
    return rows, failed


def _columns_csv(
    path: Path, lines: list[str], columns: tuple[str, str, str], time_scale: float = 1.0
) -> tuple[list[TraceRow], int]:
    """A CSV trace whose time, input and output columns are `columns`."""
    time_name, input_name, output_name = columns
    rows, failed = [], 0
    for number, row in _csv_rows(path, lines):
        where = f"{path}:{number}"
        output = _count(row[output_name], where, output_name, zero_ok=True)
        if output == 0:
            failed += 1
            continue
        rows.append(TraceRow(
            line=number,
            arrival_s=_seconds(row[time_name], where, time_name, time_scale),
            input_tokens=_count(row[input_name], where, input_name),
            output_tokens=output,
        ))  # fmt: skip
    return rows, failed


def read_trace(path: Path, trace_format: str = "auto") -> SourceFile:
    """Every usable request of a trace file, in arrival order; TraceError names file:line."""
    lines = _text_lines(path)
    fmt = detect_format(path, lines) if trace_format == "auto" else trace_format
    if fmt == "mooncake":
        rows, failed = _mooncake(path, lines)
    elif fmt == "burstgpt":
        _require_header(path, lines, BURSTGPT_COLUMNS)
        rows, failed = _columns_csv(path, lines, BURSTGPT_COLUMNS)
    elif fmt == "csv":
        _require_header(path, lines, PLAIN_CSV_COLUMNS)
        rows, failed = _columns_csv(path, lines, PLAIN_CSV_COLUMNS)
    else:
        raise TraceError(f"{path}: unknown trace format {fmt!r}")
    if not rows:
        raise TraceError(f"{path}: the trace has no requests")
    rows.sort(key=lambda row: row.arrival_s or 0.0)  # stable: rows at one instant keep order
    first, last = rows[0].arrival_s or 0.0, rows[-1].arrival_s or 0.0
    return SourceFile(
        name=str(path), format=fmt, rows=rows, failed_rows=failed,
        rows_before_span=len(rows), span_s=last - first,
    )  # fmt: skip


def _require_header(path: Path, lines: list[str], columns: tuple[str, ...]) -> None:
    first = _first_line(lines).lstrip("\ufeff")
    header = {name.strip() for name in next(csv.reader([first]), [])}
    missing = [name for name in columns if name not in header]
    if missing:
        raise TraceError(f"{path}:1: the header lacks {', '.join(missing)}")


def cut_to_span(source: SourceFile, span_s: float | None) -> SourceFile:
    """The rows arriving before span_s seconds after the first one (all of them for None)."""
    if span_s is None:
        return source
    start = source.rows[0].arrival_s or 0.0
    kept = [row for row in source.rows if (row.arrival_s or 0.0) - start < span_s]
    return SourceFile(
        name=source.name, format=source.format, rows=kept, failed_rows=source.failed_rows,
        rows_before_span=source.rows_before_span, span_s=source.span_s,
    )  # fmt: skip


def _named(row: dict[str, Any], names: tuple[str, ...]) -> tuple[str, Any] | None:
    for name in names:
        if name in row:
            return name, row[name]
    usage = row.get("usage")
    if isinstance(usage, dict):
        return _named(usage, names)
    return None


def read_length_log(path: Path) -> SourceFile:
    """Every row's (input, output) token counts of a length log; TraceError names file:line."""
    lines = _text_lines(path)
    first = _first_line(lines).lstrip("\ufeff").strip()
    is_json = first.startswith("{")
    records: Sequence[tuple[int, dict[str, Any]]] = (
        _json_rows(path, lines) if is_json else _csv_rows(path, lines)
    )
    expected = (f"an input count ({', '.join(INPUT_NAMES)}) and an output count "
                f"({', '.join(OUTPUT_NAMES)})")
    rows, failed = [], 0
    for number, row in records:
        where = f"{path}:{number}"
        found_in, found_out = _named(row, INPUT_NAMES), _named(row, OUTPUT_NAMES)
        if found_in is None or found_out is None:
            raise TraceError(f"{where}: expected {expected}")
        output = _count(found_out[1], where, found_out[0], zero_ok=True)
        if output == 0:
            failed += 1
            continue
        rows.append(TraceRow(
            line=number, input_tokens=_count(found_in[1], where, found_in[0]),
            output_tokens=output,
        ))  # fmt: skip
    if not rows:
        raise TraceError(f"{path}: the log has no requests with output tokens")
    return SourceFile(
        name=str(path), format="jsonl" if is_json else "csv", rows=rows, failed_rows=failed,
        rows_before_span=len(rows),
    )  # fmt: skip


def load_source(workload: WorkloadSpec, data_dir: Path | None) -> SourceFile:
    """The workload's trace (cut to its span) or length log, read from inside data_dir."""
    assert workload.dataset_path is not None  # the schema guarantees it for these kinds
    path = dataset_file(workload.dataset_path, data_dir)
    if workload.kind == "trace":
        source = cut_to_span(read_trace(path, workload.trace_format), workload.trace_span_s)
    else:
        source = read_length_log(path)
    # Notes name the file as the plan does (relative to the data directory), not where it is.
    return SourceFile(
        name=workload.dataset_path, format=source.format, rows=source.rows,
        failed_rows=source.failed_rows, rows_before_span=source.rows_before_span,
        span_s=source.span_s,
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Checking a plan against its file, before any engine starts
# ---------------------------------------------------------------------------------------------


def check_source(
    workload: WorkloadSpec, data_dir: Path | None, loads: Sequence[LoadSpec], warmup: int = 0
) -> SourceFile | None:
    """The workload's file read and held against the plan's loads; None for other kinds.

    A dataset is only checked to be a file inside data_dir (its prompts are read later). A
    trace must hold every load's requests (it is never repeated, since its times would be
    wrong), and with trace_longer "refuse" no load may leave any of them out. WorkloadError says
    which load and how many requests.
    """
    if workload.kind == "dataset" and workload.dataset_path is not None:
        dataset_file(workload.dataset_path, data_dir)
    if workload.kind not in ("trace", "lengths"):
        return None
    source = load_source(workload, data_dir)
    if workload.kind == "lengths":
        return source
    held = len(source.rows)
    where = _trace_where(source, workload)
    for load in loads:
        if load.num_requests > held:
            raise WorkloadError(
                f"{load.label()}: {load.num_requests} requests, but {where} holds {held}; "
                "a trace is replayed once, never repeated"
            )
        if load.num_requests < held and workload.trace_longer == "refuse":
            raise WorkloadError(
                f"{load.label()}: {load.num_requests} requests would leave out "
                f"{held - load.num_requests} of the {held} in {where} (trace_longer refuse); "
                "send them all or set a span"
            )
    if warmup > held:
        raise WorkloadError(f"{warmup} warm-up requests, but {where} holds {held}")
    return source


def _trace_where(source: SourceFile, workload: WorkloadSpec) -> str:
    if workload.trace_span_s is None:
        return f"the trace {source.name}"
    return f"the first {workload.trace_span_s:g} s of the trace {source.name}"


# ---------------------------------------------------------------------------------------------
# Prompts
# ---------------------------------------------------------------------------------------------


def token_pool(tokens: TokenSource) -> np.ndarray:
    """The distinct token ids of POOL_TEXT, as the server tokenizes it."""
    pool = np.unique(np.asarray(tokens.token_ids(POOL_TEXT), dtype=TOKEN_DTYPE))
    if pool.size == 0:
        raise WorkloadError("the server's /tokenize gave no tokens for plain English text")
    return pool


class _Blocks:
    """Hash-id blocks built once per (hash id, size) and shared by every prompt using them."""

    def __init__(self, pool: np.ndarray, seed: int, block_tokens: int) -> None:
        self.pool, self.seed, self.block_tokens = pool, seed, block_tokens
        self.built: dict[tuple[int, int], bytes] = {}

    def prompt(self, row: TraceRow) -> PromptTokens:
        blocks: list[bytes] = []
        wanted = row.input_tokens
        for hash_id in row.hash_ids:
            if wanted <= 0:
                break
            size = min(self.block_tokens, wanted)
            key = (hash_id, size)
            if key not in self.built:
                entropy = (self.seed, HASH_BLOCK, hash_id, size)
                self.built[key] = draw_tokens(self.pool, entropy, size).tobytes()
            blocks.append(self.built[key])
            wanted -= size
        return PromptTokens(
            blocks=tuple(blocks), pool=self.pool,
            tail_entropy=(self.seed, OWN_TOKENS, row.line), tail_size=max(wanted, 0),
        )  # fmt: skip


def sample_lengths(rows: Sequence[TraceRow], n: int, seed: int) -> list[TraceRow]:
    """n rows that follow the log's distribution: a systematic sample of the rows sorted by
    (input, output), one random offset, sent in a seeded random order (module docstring)."""
    ordered = sorted(rows, key=lambda row: (row.input_tokens, row.output_tokens, row.line))
    rng = np.random.default_rng([seed & ((1 << 64) - 1), OWN_TOKENS])
    ranks = ((np.arange(n) + rng.random()) * len(ordered) / n).astype(int)
    picked = [ordered[min(rank, len(ordered) - 1)] for rank in ranks]
    return [picked[i] for i in rng.permutation(n)]


def source_prompts(
    workload: WorkloadSpec,
    n: int,
    count_tokens: CountTokens | None,
    data_dir: Path | None,
) -> list[Prompt]:
    """n token-id prompts with their own max_tokens: a trace's first n requests (with their
    arrival times after the first one's), or n draws from a length log."""
    if not isinstance(count_tokens, TokenSource):
        raise WorkloadError(
            f"a {workload.kind} workload sends token ids: it needs the server's tokenizer "
            "(its /tokenize)"
        )
    source = load_source(workload, data_dir)
    pool = token_pool(count_tokens)
    if workload.kind == "lengths":
        drawn = sample_lengths(source.rows, n, workload.seed)
        return [_prompt(i, row, pool, workload.seed, own_line=i) for i, row in enumerate(drawn)]
    if n > len(source.rows):
        raise WorkloadError(f"{n} requests, but {_trace_where(source, workload)} holds "
                            f"{len(source.rows)}")
    blocks = _Blocks(pool, workload.seed, workload.trace_block_tokens)
    start = source.rows[0].arrival_s or 0.0
    return [
        Prompt(
            index=i, tokens=blocks.prompt(row), input_tokens=row.input_tokens,
            max_tokens=row.output_tokens, arrival_s=(row.arrival_s or 0.0) - start,
        )
        for i, row in enumerate(source.rows[:n])
    ]  # fmt: skip


def _prompt(index: int, row: TraceRow, pool: np.ndarray, seed: int, own_line: int) -> Prompt:
    """A prompt of the row's lengths made of tokens of its own (seeded by own_line: two draws
    of one log row are two requests, not a shared prefix)."""
    tokens = PromptTokens(
        pool=pool, tail_entropy=(seed, OWN_TOKENS, own_line), tail_size=row.input_tokens
    )
    return Prompt(
        index=index, tokens=tokens, input_tokens=row.input_tokens, max_tokens=row.output_tokens
    )


# ---------------------------------------------------------------------------------------------
# What the point says about its file
# ---------------------------------------------------------------------------------------------


def source_notes(source: SourceFile, point: PointResult) -> list[str]:
    """Sentences for the point: what part of the file it sent, and, for a trace load, how
    closely the client kept the trace's times."""
    workload, load = point.workload, point.load
    notes: list[str] = []
    if source.failed_rows:
        notes.append(f"{source.name}: {source.failed_rows} row(s) with 0 output tokens (failed "
                     "in the log) left out")
    if workload.kind == "lengths":
        eos = "ignore_eos" if workload.ignore_eos else "no ignore_eos: responses may stop early"
        notes.append(f"request lengths drawn from {source.name} ({len(source.rows)} requests), "
                     f"seed {workload.seed}, {eos}")
        return notes
    if len(source.rows) < source.rows_before_span:
        notes.append(f"trace cut to its first {workload.trace_span_s:g} s: {len(source.rows)} of "
                     f"{source.rows_before_span} requests ({source.span_s:.1f} s in all)")
    if load.num_requests < len(source.rows):
        notes.append(f"trace truncated to its first {load.num_requests} of {len(source.rows)} "
                     "requests (the load's request count)")
    schedule = point.client.schedule
    if load.shape == "trace" and schedule is not None:
        notes.append(_schedule_note(load, schedule.scheduled_rate, schedule.achieved_rate,
                                    schedule.scheduled_span_s, schedule.p99_send_lag_ms))
    return notes


def _schedule_note(
    load: LoadSpec,
    scheduled: float | None,
    achieved: float | None,
    span_s: float,
    p99_lag_ms: float | None,
) -> str:
    def rate(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f} requests/s"

    lag = "-" if p99_lag_ms is None else f"{p99_lag_ms:.1f} ms"
    return (f"trace replayed at speed {load.speed:g}: scheduled {rate(scheduled)} over "
            f"{span_s:.1f} s, achieved {rate(achieved)}, send lag p99 {lag}")


def _histogram_edges(values: np.ndarray) -> np.ndarray:
    """Whole-number edges covering every value, at most HISTOGRAM_BINS bins of one width."""
    low, high = int(values.min()), int(values.max())
    width = max(1, math.ceil((high + 1 - low) / HISTOGRAM_BINS))
    bins = math.ceil((high + 1 - low) / width)
    return low + width * np.arange(bins + 1)


def length_histogram(source: Sequence[int], sent: Sequence[int]) -> LengthHistogram:
    """Both sets of counts on one set of edges."""
    src, out = np.asarray(source, dtype=np.int64), np.asarray(sent, dtype=np.int64)
    both = np.concatenate([src, out])
    edges = _histogram_edges(both) if both.size else np.array([0, 1])
    return LengthHistogram(
        edges=[float(e) for e in edges],
        source=[int(c) for c in np.histogram(src, bins=edges)[0]],
        sent=[int(c) for c in np.histogram(out, bins=edges)[0]],
    )


def length_comparison(
    source: SourceFile, records: Sequence[RequestRecord], workload: WorkloadSpec
) -> LengthComparison:
    """The file's lengths beside the point's first replica's requests (every replica of a
    node sends the same ones): input as the server counted it, output as the max_tokens sent."""
    first = min((r.replica for r in records), default=0)
    mine = [r for r in records if r.replica == first and r.prompt_tokens is not None]
    return LengthComparison(
        file=source.name,
        source_requests=len(source.rows),
        sent_requests=len(mine),
        input_tokens=length_histogram(
            [row.input_tokens for row in source.rows], [r.prompt_tokens or 0 for r in mine]
        ),
        output_tokens=length_histogram(
            [row.output_tokens for row in source.rows],
            [r.max_tokens or workload.output_tokens for r in mine],
        ),
    )


def annotate_point(point: PointResult, source: SourceFile | None) -> None:
    """Add the file's notes and the length comparison to a point of a trace or lengths plan."""
    if source is None:
        return
    point.notes.extend(source_notes(source, point))
    point.lengths = length_comparison(source, point.requests, point.workload)
