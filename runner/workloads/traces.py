"""Trace replay and request-length logs: reading the files behind the trace and lengths workloads.
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

from runner.schema.plan import LoadSpec, WorkloadSpec
from runner.workloads.prompts import (
    CASE_STUDY_GUIDE,
    RANDOM_WORDS,
    DatasetError,
    WorkloadError,
    dataset_file,
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
    where = trace_where(source, workload)
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


def trace_where(source: SourceFile, workload: WorkloadSpec) -> str:
    if workload.trace_span_s is None:
        return f"the trace {source.name}"
    return f"the first {workload.trace_span_s:g} s of the trace {source.name}"


# ---------------------------------------------------------------------------------------------
# A trace's arrival rate over time: the demand a capacity plan sizes for
# ---------------------------------------------------------------------------------------------

# A trace's rate is counted in windows of this many trace seconds unless a plan says: long
# enough that one window holds several requests of a production trace, short enough that a
# minute's peak is not averaged away.
TRACE_RATE_WINDOW_S = 60.0


@dataclass(frozen=True)
class TraceRate:
    """A trace's arrivals per second in consecutive windows, and the rate a plan sizes at.

    statistic: "peak" (the busiest window) or "pNN" (that percentile of the windows' rates,
    linear interpolation as numpy). rate: that statistic, requests/s at replay speed 1.
    """

    name: str
    window_s: float
    windows: int
    statistic: str
    rate: float
    mean_rate: float


def window_rates(source: SourceFile, window_s: float) -> list[float]:
    """Requests per second in each whole window of window_s trace seconds from the first
    arrival. A part-window at the end is left out (divided by the whole width it would read as
    a lull, by its own as a spike); a trace shorter than one window is one window."""
    if not (math.isfinite(window_s) and window_s > 0):
        raise TraceError(f"a rate window must be a number of seconds above 0, got {window_s!r}")
    arrivals = [row.arrival_s for row in source.rows if row.arrival_s is not None]
    if not arrivals:
        raise TraceError(f"{source.name} has no arrival times: it is not a trace")
    first = min(arrivals)
    whole = int((max(arrivals) - first) // window_s)
    if whole == 0:
        return [len(arrivals) / window_s]
    counts = [0] * whole
    for arrival in arrivals:
        index = int((arrival - first) // window_s)
        if index < whole:
            counts[index] += 1
    return [count / window_s for count in counts]


def trace_rate(source: SourceFile, window_s: float = TRACE_RATE_WINDOW_S,
               statistic: str = "peak") -> TraceRate:
    """The trace's rate at its peak window or a percentile of its windows ("p95")."""
    rates = window_rates(source, window_s)
    if statistic == "peak":
        rate = max(rates)
    else:
        try:
            percentile = float(statistic.removeprefix("p"))
        except ValueError:
            percentile = math.nan
        if not statistic.startswith("p") or not 0 < percentile <= 100:
            raise TraceError(f"size a trace at its peak or a percentile such as p95, got "
                             f"{statistic!r}")
        rate = float(np.percentile(rates, percentile))
    return TraceRate(name=source.name, window_s=window_s, windows=len(rates),
                     statistic=statistic, rate=rate, mean_rate=sum(rates) / len(rates))
