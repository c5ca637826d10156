"""Result files: one PointResult per point (JSONL), appended and flushed as each point finishes.

A point's per-request records are written before the point's own line, as batch lines of at
most BATCH_VALUES ragged values (chunk times, chunk token counts, ...) each:

    {"headroom_requests":{"point":KEY,"batch":0,"batches":B,"records":[...],"arrays":{...}}}
    ... batches 1 .. B-1 ...
    {"schema_version":"headroom.result/1","key":KEY, ..., "requests":[], ...}

`records` holds each request's scalar fields as JSON; `arrays` holds each ragged field
(runner.schema.records.ragged_fields) of the batch's requests as {"dtype", "lengths" (one per
request), "data" (base64 of the values back to back, little-endian)}: values come back bit for
bit, and no line holds more than one batch, so neither writing nor reading a point of 100,000
requests builds one giant JSON text. The point's line commits the point: batch lines whose point
line never came (a run killed mid-write) are skipped with a warning, wherever they are, as is a
last line cut short. A point line with its requests inline, and no batches, reads too.
"""

from __future__ import annotations

import base64
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import numpy as np
import orjson
from pydantic import ValidationError

from runner.schema.records import CompactArray, RequestRecord, ragged_fields
from runner.schema.result import PointResult


class ResultFileError(ValueError):
    """A result file that is not a Headroom results file; the message names the line."""


@dataclass
class ReadResult:
    points: list[PointResult]
    warnings: list[str] = field(default_factory=list)


BATCH_KEY = "headroom_requests"
# How every batch line starts (orjson writes the one key first, without spaces); importers
# tell a Headroom file by it or by the point line's start.
BATCH_LINE_START = b'{"' + BATCH_KEY.encode() + b'":'
# A batch holds requests until their ragged values reach this many (8 MB of chunk times, about
# 11 MB of base64), or BATCH_RECORDS requests, whichever comes first.
BATCH_VALUES = 1 << 20
BATCH_RECORDS = 8192
_RAGGED = ragged_fields(RequestRecord)
_SCALARS = frozenset(RequestRecord.model_fields) - frozenset(_RAGGED)


def append_point(path: Path, point: PointResult) -> None:
    """Append one point, its request batches first, and force it to disk before the next."""
    path.parent.mkdir(parents=True, exist_ok=True)
    spans = _batch_spans(point.requests)
    with path.open("ab") as out:
        if out.tell() and not _ends_with_newline(path):
            out.write(b"\n")  # a line cut short by a crash stays a line of its own
        for number, (start, end) in enumerate(spans):
            out.write(_batch_line(point.key, number, len(spans), point.requests[start:end]))
        header = point.model_copy(update={"requests": []})
        out.write(header.model_dump_json().encode() + b"\n")
        out.flush()
        os.fsync(out.fileno())


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def _batch_spans(requests: Sequence[RequestRecord]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = 0
    while start < len(requests):
        end, values = start, 0
        while end < len(requests) and end - start < BATCH_RECORDS and (
            values == 0 or values < BATCH_VALUES
        ):
            values += sum(len(getattr(requests[end], name)) for name in _RAGGED)
            end += 1
        spans.append((start, end))
        start = end
    return spans


def _batch_line(key: str, number: int, total: int, requests: Sequence[RequestRecord]) -> bytes:
    arrays = {}
    for name, kind in _RAGGED.items():
        values = [kind.coerce(getattr(r, name)) for r in requests]
        data = b"".join(values)
        if sys.byteorder == "big":
            data = np.frombuffer(data, np.dtype(kind.DTYPE).newbyteorder("=")).astype(
                kind.DTYPE
            ).tobytes()
        arrays[name] = {
            "dtype": kind.DTYPE,
            "lengths": [len(v) for v in values],
            "data": base64.b64encode(data).decode("ascii"),
        }
    records = [r.model_dump(mode="json", include=set(_SCALARS)) for r in requests]
    batch = {"point": key, "batch": number, "batches": total, "records": records, "arrays": arrays}
    return orjson.dumps({BATCH_KEY: batch}) + b"\n"


def read_points(path: Path) -> ReadResult:
    """Every point of a results file, validated against the schema."""
    result = ReadResult(points=[])
    result.points.extend(iter_points(path, result.warnings))
    return result


class RequestSink(Protocol):
    """Where a point's batched records go, a batch at a time, as iter_points_into reads them."""

    def add(self, records: Sequence[RequestRecord]) -> None: ...


SinkT = TypeVar("SinkT", bound=RequestSink)


@dataclass
class RecordList:
    """The sink that keeps the records: what iter_points joins into point.requests."""

    records: list[RequestRecord] = field(default_factory=list)

    def add(self, records: Sequence[RequestRecord]) -> None:
        self.records.extend(records)


@dataclass
class _Pending(Generic[SinkT]):
    """The batches read so far of a point whose line has not come yet; key None: a batch line
    that could not be read (cut short by a crash), which only a new point's batch 0 may follow.
    sink None: the batches are not read."""

    key: str | None
    batches: int
    line: int
    sink: SinkT | None = None
    read: int = 0


def iter_points(
    path: Path, warnings: list[str], *, label: str = "", requests: bool = True
) -> Iterator[PointResult]:
    """The points of a results file one at a time: a big file is never held whole.

    A last line cut short, and batches of a point whose line never came, are skipped and said
    in `warnings`. Messages name the file as `label` (default: its path), so an uploaded file
    is named as its uploader called it. requests=False leaves every point's batched requests
    unread (the point comes back without them): what --resume needs, at a fraction of the cost.
    """
    sinks = iter_points_into(path, warnings, RecordList if requests else None, label=label)
    for point, batches in sinks:
        if batches is not None:
            point.requests = batches.records
        yield point


def iter_points_into(
    path: Path,
    warnings: list[str],
    new_sink: Callable[[], SinkT] | None,
    *,
    label: str = "",
    max_line_bytes: int | None = None,
) -> Iterator[tuple[PointResult, SinkT | None]]:
    """iter_points, but each point's batched records, validated as they are read, go to a sink
    of new_sink()'s a batch at a time instead of into point.requests, so that a reader that
    encodes them as they come (benchmarks.storage.columnar.RequestEncoder) never holds a point's
    records whole. Each point comes with the sink its batches went to (point.requests then empty),
    or None when it had no batches (a file older than batches: its requests are in its line). The
    sink of batches whose point line never came is dropped unseen. new_sink None: no batch
    is read.

    Each line is parsed whole, into several times its size (a list of tiny samples, about 100
    times), so a line longer than max_line_bytes is refused before more than that of it is
    read; None: no limit (the runner's own file).
    """
    label = label or str(path)
    size = path.stat().st_size
    pending: _Pending[SinkT] | None = None
    read_size = -1 if max_line_bytes is None else max_line_bytes + 1
    with path.open("rb") as handle:
        for number, raw in enumerate(iter(lambda: handle.readline(read_size), b""), start=1):
            if max_line_bytes is not None and len(raw) > max_line_bytes and raw[-1:] != b"\n":
                raise ResultFileError(
                    f"{label}:{number}: a line over {max_line_bytes / 2**20:.1f} MB, the limit "
                    "for one document read whole"
                )
            if not raw.strip():
                continue
            at_end = handle.tell() == size
            if raw.startswith(BATCH_LINE_START):
                pending = _next_batch(raw, pending, new_sink, f"{label}:{number}", at_end,
                                      warnings)  # fmt: skip
                continue
            try:
                point = PointResult.model_validate_json(raw)
            except ValidationError as exc:
                if at_end and _looks_truncated(exc):
                    warnings.append(
                        f"{label}:{number}: last line is cut short (a run was killed "
                        "mid-write); skipped"
                    )
                    pending = None
                    continue
                raise ResultFileError(
                    f"{label}:{number}: not a Headroom point: {first_error(exc)}"
                ) from None
            sink = None
            if pending is not None:
                if pending.key is None:
                    raise ResultFileError(
                        f"{label}:{pending.line}: a request batch that cannot be read comes "
                        f"before the point on line {number}"
                    )
                if pending.key != point.key:
                    warnings.append(_unfinished(label, pending))
                elif pending.read != pending.batches:
                    raise ResultFileError(
                        f"{label}:{number}: the point has {pending.read} of its "
                        f"{pending.batches} request batches"
                    )
                else:
                    sink = pending.sink
                pending = None
            yield point, sink
    if pending is not None:
        warnings.append(_unfinished(label, pending))


def _next_batch(
    raw: bytes,
    pending: _Pending[SinkT] | None,
    new_sink: Callable[[], SinkT] | None,
    where: str,
    at_end: bool,
    warnings: list[str],
) -> _Pending[SinkT] | None:
    """Add one batch line to the point it belongs to. A batch 0 starts a point over: batches
    before it belonged to a point that was never finished."""
    label, line = where.rsplit(":", 1)
    try:
        batch = orjson.loads(raw)[BATCH_KEY]
    except orjson.JSONDecodeError:
        # Cut short by a crash: said at the end of the file; elsewhere (a resumed run appended
        # after it) only a new point's first batch may follow it.
        if at_end:
            warnings.append(f"{where}: last line is cut short (a run was killed mid-write); "
                            "skipped")
            return None
        return _Pending(key=None, batches=0, line=int(line))
    try:
        key, number, total = batch["point"], batch["batch"], batch["batches"]
        if not (isinstance(key, str) and isinstance(number, int) and isinstance(total, int)):
            raise TypeError
    except (KeyError, TypeError):
        raise ResultFileError(
            f"{where}: not a Headroom request batch: needs point, batch and batches"
        ) from None
    continues = (
        pending is not None and pending.key == key and pending.read == number
        and pending.batches == total
    )
    if not continues:
        if number != 0:
            raise ResultFileError(
                f"{where}: request batch {number} of point {key!r} follows no batch {number - 1}"
            )
        if pending is not None:
            warnings.append(_unfinished(label, pending))
        sink = new_sink() if new_sink is not None else None
        pending = _Pending(key=key, batches=total, line=int(line), sink=sink)
    assert pending is not None
    if pending.sink is not None:
        pending.sink.add(_batch_records(batch, where))
    pending.read += 1
    return pending


def _batch_records(batch: dict[str, Any], where: str) -> list[RequestRecord]:
    try:
        records = batch["records"]
        arrays = batch["arrays"]
        # append_point never writes more; each record becomes a model, so more is refused unread.
        if len(records) > BATCH_RECORDS:
            raise ValueError(f"over {BATCH_RECORDS} records")
        # A ragged field the file predates is absent: each record gets its default.
        columns = {
            name: _split(arrays[name], kind, len(records))
            for name, kind in _RAGGED.items() if name in arrays
        }
        unknown = set(arrays) - set(_RAGGED)
        if unknown:
            raise ValueError(f"unknown array(s) {sorted(unknown)}")
    except (KeyError, TypeError, ValueError) as exc:
        raise ResultFileError(f"{where}: not a Headroom request batch: {exc}") from None
    out = []
    for position, scalars in enumerate(records):
        try:
            if not isinstance(scalars, dict):
                raise ResultFileError(f"{where}: records.{position}: not an object")
            fields = {**scalars, **{name: values[position] for name, values in columns.items()}}
            out.append(RequestRecord.model_validate(fields))
        except ValidationError as exc:
            raise ResultFileError(
                f"{where}: not a Headroom point: records.{position}.{first_error(exc)}"
            ) from None
    return out


def _split(column: dict[str, Any], kind: type[CompactArray], count: int) -> list[CompactArray]:
    """One ragged field's values per request, copied out of the batch's bytes."""
    if column["dtype"] != kind.DTYPE:
        raise ValueError(f"dtype {column['dtype']!r}, expected {kind.DTYPE!r}")
    lengths = column["lengths"]
    data = memoryview(base64.b64decode(column["data"], validate=True))
    size = np.dtype(kind.DTYPE).itemsize
    if len(lengths) != count or sum(lengths) * size != len(data):
        raise ValueError("lengths do not match the records and the data")
    out, at = [], 0
    for length in lengths:
        if not isinstance(length, int) or length < 0:
            raise ValueError(f"bad length {length!r}")
        out.append(kind.from_le_bytes(data[at : at + length * size]))
        at += length * size
    return out


def _unfinished(label: str, pending: _Pending) -> str:
    what = f"requests of point {pending.key!r}" if pending.key else "a request batch cut short"
    return (
        f"{label}:{pending.line}: {what}, whose point line never came (a run was killed "
        "mid-write); skipped"
    )


def finished_keys(path: Path) -> frozenset[str]:
    """Keys of the points already in the file, for --resume (their requests are not read)."""
    if not path.exists():
        return frozenset()
    return frozenset(point.key for point in iter_points(path, [], requests=False))


def _looks_truncated(exc: ValidationError) -> bool:
    return any(error["type"] in ("json_invalid", "json_type") for error in exc.errors())


def first_error(exc: ValidationError) -> str:
    """Where the first problem is and what, and how many more: for every reader of our files."""
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "(top level)"
    more = exc.error_count() - 1
    suffix = f" (and {more} more problems)" if more else ""
    return f"{where}: {error['msg']}{suffix}"
