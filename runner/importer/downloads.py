"""A run's JSON download read back: its points one at a time, each point's requests in batches.

The dashboard's download (dashboard.views.run_json) is one document,

    {"benchmark": {...the run's summary...}, "points": [POINT, ...]}

each POINT a PointResult's model_dump_json with its requests inline. A point of 100,000 requests
x 1,000 chunks is about 2 GB of that text, so neither the document nor one point is parsed
whole: ijson reads the file as a stream of events, each point is built without its requests,
and each request is validated as it ends and given to the point's sink a batch at a time, as
runner.results gives a JSONL file's request batches. The summary is skipped: an import makes its
run from the points. Nesting deeper than max_depth is refused as the events arrive, and so is
a value longer than any a download holds (MAX_VALUE_BYTES), and a point without its requests,
or one request, longer than max_part_bytes: each is built whole, into many times its size.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import ijson
from pydantic import ValidationError

from runner.results import BATCH_RECORDS, BATCH_VALUES, ResultFileError, SinkT, first_error
from runner.schema.records import RequestRecord, ragged_fields
from runner.schema.result import PointResult

# How a download begins (the view writes the summary first); spaces are allowed, so a download
# saved again pretty-printed still reads as one.
DOWNLOAD_START = re.compile(rb'\s*\{\s*"benchmark"\s*:')

Event = tuple[str, Any]
_OPENS = frozenset({"start_map", "start_array"})
_CLOSES = frozenset({"end_map", "end_array"})
_KINDS = {"start_map": "an object", "start_array": "a list", "string": "a string",
          "number": "a number", "boolean": "true or false", "null": "null"}  # fmt: skip
_RAGGED = tuple(ragged_fields(RequestRecord))
# A download's longest values are a few kilobytes (a request's texts are cut at
# OUTPUT_TEXT_MAX_CHARS). yajl lexes a value that spans its reads from the value's start again on
# each read, so one value of n bytes costs time quadratic in n; a file is refused once this many
# bytes pass without a value ending, which keeps the cost of any file linear in its size.
MAX_VALUE_BYTES = 256 * 1024


def is_download(head: bytes) -> bool:
    """Whether a file whose first bytes are `head` is a run's JSON download."""
    return DOWNLOAD_START.match(head) is not None


@dataclass
class _Where:
    """The place being read, for messages: 'run.json: points.2.requests.17'."""

    label: str
    point: int | None = None
    request: int | None = None

    def __str__(self) -> str:
        if self.point is None:
            return self.label
        at = f"{self.label}: points.{self.point}"
        return at if self.request is None else f"{at}.requests.{self.request}"


def iter_download_into(
    path: Path,
    new_sink: Callable[[], SinkT],
    *,
    label: str,
    max_depth: int,
    max_part_bytes: int | None = None,
) -> Iterator[tuple[PointResult, SinkT]]:
    """The download's points, each with the sink of new_sink()'s that its requests went to (the
    point's own requests left empty); ResultFileError naming the point and request if bad.
    max_part_bytes: the most a point without its requests, or one request, may take (None: no
    limit, an operator's own file)."""
    where = _Where(label)
    with path.open("rb") as handle:
        reader = _ValueBoundedReader(handle, where, max_part_bytes)
        events = _depth_checked(ijson.basic_parse(reader, use_float=True), max_depth, reader)
        try:
            yield from _document(events, new_sink, reader)
        except ijson.JSONError as exc:
            raise ResultFileError(f"{where}: {_json_message(exc, reader.ended)}") from None


def _json_message(exc: Exception, ended: bool) -> str:
    """ended: the error came once the whole file was read, so the file stops mid-value (yajl
    says "premature EOF", or "invalid string" for a cut inside a string)."""
    # yajl's message is its first line; the lines after it draw the place with a caret.
    text = exc.args[0] if exc.args else ""
    text = text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
    reason = text.split("\n", 1)[0].strip()
    if ended or "premature EOF" in reason:
        return f"not valid JSON: {reason} (the file is cut short: was the download interrupted?)"
    return f"not valid JSON: {reason}"


class _ValueBoundedReader:
    """The file as ijson reads it, refused once MAX_VALUE_BYTES have been read since the last
    event (_depth_checked sets `unparsed` back to 0 at each): a value longer than any a download
    holds, or a gap between values as long. Likewise once the part being built (start_part to
    end_part) has taken more than max_part_bytes, counted to within one of the parser's reads."""

    def __init__(self, handle: BinaryIO, where: _Where, max_part_bytes: int | None) -> None:
        self.handle = handle
        self.where = where
        self.unparsed = 0
        self.ended = False  # the file has been read to its end
        self.max_part_bytes = max_part_bytes
        self.total = 0  # bytes read so far
        self.part: str | None = None  # what is being built, for the message
        self.part_start = 0  # self.total when the part (or its latest stretch) began
        self.part_before = 0  # the part's earlier stretch: a point's head before its requests

    def start_part(self, what: str | None, before: int = 0) -> None:
        self.part, self.part_start, self.part_before = what, self.total, before

    def part_bytes(self) -> int:
        return self.part_before + self.total - self.part_start

    def read(self, size: int = -1) -> bytes:
        if self.unparsed > MAX_VALUE_BYTES:
            raise ResultFileError(
                f"{self.where}: a value over {MAX_VALUE_BYTES // 1024} KB long, longer than any "
                "in a run download"
            )
        limit = self.max_part_bytes
        if limit is not None and self.part is not None and self.part_bytes() > limit:
            raise ResultFileError(
                f"{self.where}: {self.part} is over {limit / 2**20:.1f} MB, the limit for one "
                "document read whole"
            )
        chunk = self.handle.read(size)
        self.unparsed += len(chunk)
        self.total += len(chunk)
        self.ended = self.ended or (not chunk and size != 0)
        return chunk


def _depth_checked(
    events: Iterator[Event], max_depth: int, reader: _ValueBoundedReader
) -> Iterator[Event]:
    depth = 0
    for event, value in events:
        reader.unparsed = 0
        if event in _OPENS:
            depth += 1
            if depth > max_depth:
                raise ResultFileError(
                    f"{reader.where}: JSON nested too deeply to be a run download (over "
                    f"{max_depth} levels)"
                )
        elif event in _CLOSES:
            depth -= 1
        yield event, value


def _document(
    events: Iterator[Event], new_sink: Callable[[], SinkT], reader: _ValueBoundedReader
) -> Iterator[tuple[PointResult, SinkT]]:
    where = reader.where
    _expect(events, "start_map", where, "a JSON object")
    has_points = False
    for event, key in events:  # the document's keys
        if event == "end_map":
            break
        if key == "points":
            has_points = True
            yield from _points(events, new_sink, reader)
        else:
            _value(events, _next(events, where), where)
    if not has_points:
        raise ResultFileError(f'{where}: a run download has a "points" list; this one has none')
    # Reading on lets the parser refuse anything after the document but spaces.
    if next(events, None) is not None:
        raise ResultFileError(f"{where}: more follows the end of the run download")


def _points(
    events: Iterator[Event], new_sink: Callable[[], SinkT], reader: _ValueBoundedReader
) -> Iterator[tuple[PointResult, SinkT]]:
    where = reader.where
    _expect(events, "start_array", where, 'a "points" list')
    index = 0
    while (first := _next(events, where))[0] != "end_array":
        where.point = index
        if first[0] != "start_map":
            raise ResultFileError(
                f"{where}: not a Headroom point: expected an object, got {_kind(first)}"
            )
        yield _point(events, new_sink(), reader)
        index += 1
    where.point = None


def _point(
    events: Iterator[Event], sink: SinkT, reader: _ValueBoundedReader
) -> tuple[PointResult, SinkT]:
    """One point (its start_map read): everything but its requests built, those sent to sink."""
    where = reader.where
    head = ijson.ObjectBuilder()
    head.event("start_map", None)
    reader.start_part("the point without its requests")
    while (first := _next(events, where))[0] != "end_map":
        key = first[1]
        if key == "requests":
            before = reader.part_bytes()
            _requests(events, sink, reader)
            reader.start_part("the point without its requests", before)
            continue
        head.event("map_key", key)
        _value(events, _next(events, where), where, head)
    head.event("end_map", None)
    reader.start_part(None)
    try:
        return PointResult.model_validate(head.value), sink
    except ValidationError as exc:
        raise ResultFileError(f"{where}: not a Headroom point: {first_error(exc)}") from None


def _requests(events: Iterator[Event], sink: SinkT, reader: _ValueBoundedReader) -> None:
    """A point's requests, each validated as it ends, to the sink in batches no larger than a
    JSONL file's (runner.results.BATCH_RECORDS and BATCH_VALUES)."""
    where = reader.where
    _expect(events, "start_array", where, 'a "requests" list')
    batch: list[RequestRecord] = []
    values = 0
    index = 0
    while (first := _next(events, where))[0] != "end_array":
        where.request = index
        reader.start_part("the request")
        record = ijson.ObjectBuilder()
        _value(events, first, where, record)
        try:
            batch.append(RequestRecord.model_validate(record.value))
        except ValidationError as exc:
            raise ResultFileError(f"{where}: not a Headroom request: {first_error(exc)}") from None
        values += sum(len(getattr(batch[-1], name)) for name in _RAGGED)
        if len(batch) >= BATCH_RECORDS or values >= BATCH_VALUES:
            sink.add(batch)
            batch, values = [], 0
        index += 1
    if batch:
        sink.add(batch)
    where.request = None


def _value(
    events: Iterator[Event], first: Event, where: _Where, builder: Any = None
) -> None:
    """One JSON value whose first event is `first`, given to builder (None: skipped)."""
    if builder is not None:
        builder.event(*first)
    if first[0] not in _OPENS:
        return
    depth = 1
    for event, value in events:
        if builder is not None:
            builder.event(event, value)
        if event in _OPENS:
            depth += 1
        elif event in _CLOSES:
            depth -= 1
            if depth == 0:
                return
    raise _cut_short(where)


def _next(events: Iterator[Event], where: _Where) -> Event:
    item = next(events, None)
    if item is None:
        raise _cut_short(where)
    return item


def _cut_short(where: _Where) -> ResultFileError:
    # The parser itself says so first; this is for events that end without its word.
    return ResultFileError(f"{where}: the file ends inside the document (is it cut short?)")


def _expect(events: Iterator[Event], event: str, where: _Where, what: str) -> None:
    first = _next(events, where)
    if first[0] != event:
        raise ResultFileError(f"{where}: expected {what}, got {_kind(first)}")


def _kind(event: Event) -> str:
    return _KINDS.get(event[0], event[0])
