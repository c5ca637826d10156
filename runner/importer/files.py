"""Read result files: Headroom's own JSONL, a run's JSON download, and the result files of vllm
bench serve, AIPerf, GuideLLM, inference-perf and llm-d-benchmark, each by what
runner.importer.detect finds it is; a folder of them (runner.importer.folders)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from runner.importer import aiperf, guidellm, inference_perf, llm_d_report, vllm_sweep
from runner.importer.archives import is_zip, unpacked
from runner.importer.companions import Companion, check_size, read_companion
from runner.importer.detect import detect, unknown_refusal
from runner.importer.downloads import is_download, iter_download_into
from runner.importer.folders import iter_folder
from runner.importer.llm_d_report import read_yaml_documents
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
YAML_SUFFIXES = (".yaml", ".yml")


def load_result_file(
    path: Path,
    *,
    name: str = "",
    max_document_bytes: int | None = None,
    companion: Path | None = None,
    companion_name: str = "",
) -> list[PointResult]:
    """Every point in a result file (or a folder of them, runner.importer.folders);
    ImportFileError else."""
    return list(
        iter_result_file(
            path, name=name, max_document_bytes=max_document_bytes,
            companion=companion, companion_name=companion_name,
        )
    )  # fmt: skip


def iter_result_file(
    path: Path,
    *,
    name: str = "",
    max_document_bytes: int | None = None,
    companion: Path | None = None,
    companion_name: str = "",
) -> Iterator[PointResult]:
    """The points of a result file, one at a time; messages call the file `name` (its own name
    by default: an uploaded file is stored under a generated one).

    Headroom's JSONL is read a line at a time, never whole: each line is one point. A run's JSON
    download is read as a stream, a point and a request at a time. Anything else is JSON (or an
    llm-d report's YAML) documents read whole (a vllm bench file is one, --append-result writes
    one a line), so such a file over max_document_bytes is refused before it is read. What the
    streamed formats build whole (a JSONL line, a download's point without its requests, one
    request) is held to max_document_bytes too, as it is read. None sets no limit (a file of
    one's own on the command line). A bad line raises when it is reached: a caller that stores
    points stores them in one transaction (benchmarks.storage.imports), so nothing is half-kept.

    companion: the file that came with this one (runner.importer.companions: AIPerf's
    gpu_telemetry_export.jsonl with its profile_export.jsonl, inference-perf's
    stage_N_prometheus_metrics.json with its stage report); refused with any other file. It is
    read whole, so max_document_bytes applies to it too; messages call it companion_name.
    A folder (runner.importer.folders) pairs its companions itself.
    """
    points = iter_result_file_into(
        path, RecordList, name=name, max_document_bytes=max_document_bytes,
        companion=companion, companion_name=companion_name,
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
    companion: Path | None = None,
    companion_name: str = "",
    max_unpacked_bytes: int | None = None,
) -> Iterator[tuple[PointResult, SinkT | None]]:
    """iter_result_file, a Headroom file's batched records going to sinks a batch at a time as
    runner.results.iter_points_into gives them (each point with its sink, or None); a run
    download's records go to sinks too (runner.importer.downloads); a document's points
    come with None, their requests in the point (its document is read whole anyway).
    A .zip of a folder is unpacked (runner.importer.archives, its files together held to
    max_unpacked_bytes) and read as the folder."""
    name = name or path.name
    folder = path.is_dir()
    if not folder and not path.is_file():
        raise ImportFileError(f"{name}: no such file")
    zipped = not folder and is_zip(_head(path))
    if (folder or zipped) and companion is not None:
        raise ImportFileError(f"{name}: a folder pairs the files that came with its results "
                              "itself; import it without a companion file")  # fmt: skip
    if folder:
        for point in iter_folder(path, name, max_document_bytes, read_documents):
            yield point, None
        return
    if zipped:
        with unpacked(path, name, max_member_bytes=max_document_bytes,
                      max_total_bytes=max_unpacked_bytes) as unpacked_folder:  # fmt: skip
            for point in iter_folder(unpacked_folder, name, max_document_bytes, read_documents):
                yield point, None
        return
    head = _head(path)
    headroom = head.lstrip().startswith((HEADROOM_LINE_START, BATCH_LINE_START))
    download = not headroom and is_download(head)
    found = None
    if companion is not None:
        companion_name = companion_name or companion.name
        if headroom or download:
            what = "a Headroom results file" if headroom else "a run's JSON download"
            raise ImportFileError(  # before reading the companion for nothing
                f"{name}: {companion_name} is a file that comes with another tool's result "
                "(AIPerf's profile_export.jsonl or profile_export_aiperf.json, or an "
                f"inference-perf stage report); {what} has none"
            )
        found = read_companion(companion, companion_name, max_document_bytes)
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
    for point in read_documents(path, name, max_document_bytes, found):
        yield point, None


def read_documents(
    path: Path, name: str, max_document_bytes: int | None, companion: Companion | None = None
) -> Iterator[PointResult]:
    """The points of a file of JSON or YAML documents, read whole within the limit."""
    check_size(path, name, max_document_bytes, "a result document")
    text = _read_text(path, name)
    if path.suffix.lower() in YAML_SUFFIXES:
        yield from _yaml_points(text, name, companion)
    elif path.suffix.lower() == ".csv":
        _refuse_companion(companion, name, "a vllm bench sweep summary.csv")
        yield from vllm_sweep.csv_points(text, name)
    else:
        yield from _document_points(text, name, companion)


def _head(path: Path) -> bytes:
    """The file's first bytes: enough to tell Headroom's JSONL and a run's download."""
    with path.open("rb") as handle:
        return handle.read(HEADROOM_HEAD_BYTES)


def _read_text(path: Path, name: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ImportFileError(f"{name}: not a text file (is it compressed or binary?)") from None


def _yaml_points(text: str, name: str, companion: Companion | None) -> Iterator[PointResult]:
    """An llm-d-benchmark report written as YAML (one document, or several after `---`)."""
    _refuse_companion(companion, name, "a YAML file")
    documents = read_yaml_documents(text, name)
    if not documents:
        raise ImportFileError(f"{name}: the file is empty")
    for index, document in enumerate(documents):
        yield from _points_of(document, name if len(documents) == 1 else f"{name}#{index}")


def _document_points(
    text: str, name: str, companion: Companion | None = None
) -> Iterator[PointResult]:
    """The points of JSON documents: the whole text, or one a line (--append-result).

    Each document is parsed once; only the point made from it is kept. companion (the file that
    came with this one) goes only with the kind of file it belongs to.
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
            if detect(first).kind == "aiperf-records":
                documents = [first] + [_line_document(name, n, line) for n, line in lines[1:]]
                yield _aiperf_records(documents, name, companion)
                return
            _refuse_companion(companion, name, "a file of one result a line")
            yield from _points_of(first, f"{name}:{lines[0][0]}")
            del first
            for number, line in lines[1:]:
                yield from _points_of(_line_document(name, number, line), f"{name}:{number}")
            return
    del lines
    try:
        document = _loads(text)
    except json.JSONDecodeError as exc:
        if _looks_like_yaml(text):
            yield from _yaml_points(text, name, companion)
            return
        raise ImportFileError(
            f"{name}: not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg} "
            "(is the file truncated?)"
        ) from None
    del text
    yield from _points_of(document, name, companion)


def _looks_like_yaml(text: str) -> bool:
    """An llm-d report saved under a .json name is still YAML: it starts with its version."""
    return text.lstrip().startswith(("version:", "---", "run:", "scenario:"))


def _refuse_companion(companion: Companion | None, name: str, found: str) -> None:
    """A companion given with a file it does not belong to would be silently dropped."""
    if companion is not None:
        companion.refuse_with(name, found)


def _aiperf_records(
    documents: list[Any], name: str, companion: Companion | None
) -> PointResult:
    telemetry = None
    if companion is not None:
        if companion.kind != "aiperf-gpu-telemetry":
            companion.refuse_with(name, "AIPerf's per-request file")
        telemetry = (companion.data, companion.name)
    return aiperf.from_records(documents, source_name=name, telemetry=telemetry)


def _points_of(
    document: Any, source: str, companion: Companion | None = None
) -> Iterator[PointResult]:
    """The points of one JSON document, by what runner.importer.detect finds it is."""
    found = detect(document, source)
    if found.kind == "unknown" and found.refusal is None:
        _refuse_companion(companion, source, "an unrecognised file")
        unknown_refusal(document, source)
    found.check(source)
    if found.kind == "aiperf-records":
        yield _aiperf_records([document], source, companion)
        return
    if found.kind == "inference-perf-stage":
        server = None
        if companion is not None:
            if companion.kind != "inference-perf-prometheus":
                companion.refuse_with(source, f"an {found.label}")
            server = (companion.data, companion.name)
        yield inference_perf.from_stage_report(document, source_name=source, detected=found,
                                               server=server)  # fmt: skip
        return
    if found.kind == "aiperf-summary":
        server = None
        if companion is not None:
            if companion.kind != "aiperf-server-metrics":
                companion.refuse_with(source, f"an {found.label} summary")
            server = (companion.data, companion.name)
        yield aiperf.from_summary(document, source_name=source, detected=found, server=server)
        return
    _refuse_companion(companion, source, found.label)
    if found.kind == "headroom-point":
        yield _headroom_point(document, source)
    elif found.kind == "guidellm-report":
        yield from guidellm.from_report(document, source_name=source, detected=found)
    elif found.kind == "llm-d-report":
        yield from llm_d_report.from_report(document, source_name=source, detected=found)
    elif found.kind == "vllm-sweep-summary":
        yield from vllm_sweep.summary_points(document, source)
    else:
        yield from_vllm_bench(document, source_name=source, format_label=found.version)


def _headroom_point(document: Any, source: str) -> PointResult:
    """A Headroom point written as one JSON document."""
    try:
        return PointResult.model_validate(document)
    except ValidationError as exc:
        raise ImportFileError(
            f"{source}: not a valid Headroom point: {exc.errors()[0]['msg']}"
        ) from None


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
