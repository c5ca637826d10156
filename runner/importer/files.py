"""Read result files: Headroom's own JSONL, a run's JSON download, `vllm bench serve` results."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from runner.importer import aiperf, guidellm, inference_perf
from runner.importer import aiperf_telemetry as aiperf_telemetry_file
from runner.importer.downloads import is_download, iter_download_into
from runner.importer.vllm_bench import from_vllm_bench
from runner.importer.vllm_document import ImportFileError
from runner.results import (
    BATCH_LINE_START,
    RecordList,
    ResultFileError,
    SinkT,
    iter_points_into,
)
from runner.schema.result import PointResult

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
# how much of a file's head is read to see it. The value is part of it: AIPerf's summary starts
# with a schema_version of its own.
HEADROOM_LINE_START = b'{"schema_version":"headroom.'
HEADROOM_HEAD_BYTES = 4096


def load_result_file(
    path: Path,
    *,
    name: str = "",
    max_document_bytes: int | None = None,
    aiperf_telemetry: Path | None = None,
    telemetry_name: str = "",
) -> list[PointResult]:
    """Every point in a Headroom results file (JSONL), a run's download or a vllm bench file;
    ImportFileError else."""
    return list(
        iter_result_file(
            path, name=name, max_document_bytes=max_document_bytes,
            aiperf_telemetry=aiperf_telemetry, telemetry_name=telemetry_name,
        )
    )  # fmt: skip


def iter_result_file(
    path: Path,
    *,
    name: str = "",
    max_document_bytes: int | None = None,
    aiperf_telemetry: Path | None = None,
    telemetry_name: str = "",
) -> Iterator[PointResult]:
    """The points of a result file, one at a time; messages call the file `name` (its own name
    by default: an uploaded file is stored under a generated one).

    Headroom's JSONL is read a line at a time, never whole: each line is one point. A run's JSON
    download is read as a stream, a point and a request at a time. Anything else is JSON
    documents read whole (a vllm bench file is one, --append-result writes one a line),
    so such a file over max_document_bytes is refused before it is read. What the streamed
    formats build whole (a JSONL line, a download's point without its requests, one request)
    is held to max_document_bytes too, as it is read. None sets no limit (a file of one's own
    on the command line). A bad line raises when it is reached: a caller that stores points
    stores them in one transaction (benchmarks.imports), so nothing is half-kept.

    aiperf_telemetry: the gpu_telemetry_export.jsonl of the AIPerf run whose profile_export.jsonl
    `path` is (runner.importer.aiperf_telemetry); refused with any other file. It is read
    whole, so max_document_bytes applies to it too; messages call it telemetry_name.
    """
    points = iter_result_file_into(
        path, RecordList, name=name, max_document_bytes=max_document_bytes,
        aiperf_telemetry=aiperf_telemetry, telemetry_name=telemetry_name,
    )  # fmt: skip
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
    aiperf_telemetry: Path | None = None,
    telemetry_name: str = "",
) -> Iterator[tuple[PointResult, SinkT | None]]:
    """iter_result_file, a Headroom file's batched records going to sinks a batch at a time as
    runner.results.iter_points_into gives them (each point with its sink, or None); a run
    download's records go to sinks too (runner.importer.downloads); a vllm bench file's points
    come with None, their requests in the point (its document is read whole anyway)."""
    name = name or path.name
    if not path.is_file():
        raise ImportFileError(f"{name}: no such file")
    head = _head(path)
    headroom = head.lstrip().startswith((HEADROOM_LINE_START, BATCH_LINE_START))
    download = not headroom and is_download(head)
    telemetry = None
    if aiperf_telemetry is not None:
        telemetry_name = telemetry_name or aiperf_telemetry.name
        if headroom or download:
            _refuse_telemetry(name, telemetry_name)  # before reading it for nothing
        if not aiperf_telemetry.is_file():
            raise ImportFileError(f"{telemetry_name}: no such file")
        _check_document_size(aiperf_telemetry, telemetry_name, max_document_bytes,
                             "AIPerf's GPU telemetry file")  # fmt: skip
        telemetry = (aiperf_telemetry_file.read_readings(aiperf_telemetry, telemetry_name),
                     telemetry_name)  # fmt: skip
    try:
        if headroom:
            # A last line cut short (a run killed mid-write) is skipped, as --resume skips it.
            yield from iter_points_into(path, [], new_sink, label=name,
                                        max_line_bytes=max_document_bytes)  # fmt: skip
            return
        if download:
            yield from iter_download_into(path, new_sink, label=name, max_depth=MAX_JSON_DEPTH,
                                          max_part_bytes=max_document_bytes)  # fmt: skip
            return
    except ResultFileError as exc:
        raise ImportFileError(str(exc)) from None
    _check_document_size(path, name, max_document_bytes, "a vllm bench file")
    for point in _document_points(_read_text(path, name), name, telemetry):
        yield point, None


def _head(path: Path) -> bytes:
    """The file's first bytes: enough to tell Headroom's JSONL and a run's download."""
    with path.open("rb") as handle:
        return handle.read(HEADROOM_HEAD_BYTES)


def _check_document_size(path: Path, name: str, limit: int | None, what: str) -> None:
    """A file read whole must fit the limit for that, or it is refused unread."""
    size = path.stat().st_size
    if limit is not None and size > limit:
        raise ImportFileError(
            f"{name}: {what} is read whole, and this one ({_megabytes(size)}) is over the "
            f"{_megabytes(limit)} limit for that"
        )


def _megabytes(size: int) -> str:
    return f"{size / 2**20:.1f} MB"


def _read_text(path: Path, name: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ImportFileError(f"{name}: not a text file (is it compressed or binary?)") from None


def _document_points(
    text: str, name: str, telemetry: tuple[list[dict[str, Any]], str] | None = None
) -> Iterator[PointResult]:
    """The points of JSON documents: the whole text, or one a line (--append-result).

    Each document is parsed once; only the point made from it is kept. telemetry (AIPerf's
    readings and their file's name) goes only with AIPerf's per-request file.
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
            if aiperf.is_record(first):
                documents = [first] + [_line_document(name, n, line) for n, line in lines[1:]]
                yield aiperf.from_records(documents, source_name=name, telemetry=telemetry)
                return
            _refuse_telemetry(name, None if telemetry is None else telemetry[1])
            yield from _points_of(first, f"{name}:{lines[0][0]}")
            del first
            for number, line in lines[1:]:
                yield from _points_of(_line_document(name, number, line), f"{name}:{number}")
            return
    _refuse_telemetry(name, None if telemetry is None else telemetry[1])
    del lines
    try:
        document = _loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFileError(
            f"not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg} "
            "(is the file truncated?)"
        ) from None
    del text
    yield from _points_of(document, name)


def _refuse_telemetry(name: str, telemetry_name: str | None) -> None:
    """Readings given with any file but AIPerf's per-request one would be silently dropped."""
    if telemetry_name is not None:
        raise ImportFileError(
            f"{name}: AIPerf's GPU telemetry file {telemetry_name} is read only with AIPerf's "
            "per-request file, profile_export.jsonl"
        )


def _points_of(document: Any, source: str) -> Iterator[PointResult]:
    """The points of one JSON document: Headroom's, another client's, or vllm bench's."""
    if aiperf.is_record(document):
        yield aiperf.from_records([document], source_name=source)
    elif aiperf.is_summary(document):
        yield aiperf.from_summary(document, source_name=source)
    elif guidellm.is_report(document):
        yield from guidellm.from_report(document, source_name=source)
    elif inference_perf.is_stage_report(document):
        yield inference_perf.from_stage_report(document, source_name=source)
    elif inference_perf.is_summary_report(document):
        raise ImportFileError(inference_perf.SUMMARY_REFUSED.format(source=source))
    else:
        yield _point_of(document, source)


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
