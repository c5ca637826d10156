"""Compact column storage for per-request records, engine samples and telemetry readings.

A point can hold 32,768 requests with 256 chunk times each: 8.4 million timestamps. One row per
request would be 32,768 INSERTs and a join on every page; JSON would be hundreds of megabytes.
Instead each field becomes one numpy array, and the arrays are packed into one blob of
benchmarks.storage.blobs' format (byte-shuffled planes, zlib where it helps; format 1 blobs still
read), lossless: values come back bit for bit.

Missing values: NaN for floats, -1 for counts and status codes, "" for strings. Chunk times and
chunk token counts are ragged; they are stored flat with a per-request length array.

Memory: a point of 100,000 requests x 1,000 chunks is 1.4 GB of records and a 590 MB blob, so
neither side holds both (docs/performance.md, "Memory of large points"). RequestEncoder takes
the records a block at a time, spilling their ragged values to files, and writes the blob out a
piece at a time (or whole, for encode_requests). Reading, iter_request_blocks makes a block of
records at a time and inflates each zlib part only as far as it has read, and request_columns
gives a few fields without making records at all.
"""

from __future__ import annotations

import math
import operator
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.storage import blobs
from benchmarks.storage.blobs import FORMAT_VERSION as FORMAT_VERSION
from benchmarks.storage.blobs import MAGIC as MAGIC
from benchmarks.storage.blobs import Layout as Layout
from benchmarks.storage.blobs import Reader, Spooled
from benchmarks.storage.blobs import format_version as format_version
from runner.schema.records import CompactArray, EngineSample, RequestRecord, ragged_fields
from runner.schema.samples import TelemetrySample

MISSING_INT = -1
# Named here so that a caller (a test, bench/dashboard_pages.py) can watch or replace them.
_pack = blobs.pack
_unpack = blobs.unpack

_REQUEST_FLOATS = ("intended_send", "actual_send", "connect_s", "ttft", "e2el", "completed_at")
_REQUEST_INTS = (
    "index", "replica", "prompt_tokens", "output_tokens", "max_tokens", "status",
    "conversation", "turn",
)  # fmt: skip
_REQUEST_STRINGS = (
    "finish_reason", "error", "incomplete", "prompt_digest", "output_text", "adapter",
)  # fmt: skip
# Every EngineSample field but the replica index and its histograms is a float (t, gauges,
# running counter totals); taken from the schema so a field added there is stored without
# touching this file. A histogram (cumulative count per bucket bound, a dict) is stored ragged,
# as chunk times are: "<name>:bounds" (the bound labels), "<name>:counts" and
# "<name>:lengths" (entries per sample).
_SAMPLE_HISTOGRAMS = tuple(
    name for name, field in EngineSample.model_fields.items()
    if field.annotation == dict[str, float]
)
_SAMPLE_FLOATS = tuple(
    name for name in EngineSample.model_fields
    if name != "replica" and name not in _SAMPLE_HISTOGRAMS
)
# TelemetrySample: the replica and GPU index are integers (-1: a CPU reading, no GPU), every
# other field a float; taken from the schema as for EngineSample.
_TELEMETRY_INTS = ("replica", "gpu")
_TELEMETRY_FLOATS = tuple(
    name for name in TelemetrySample.model_fields if name not in _TELEMETRY_INTS
)
# The ragged per-request fields (runner.schema.records.ragged_fields: chunk times, chunk token
# counts, output token ids, ...): each stored flat with a per-request length array named
# "<field>:lengths", except the chunk fields' own names in _LENGTHS, which stored blobs use. A
# ragged field no request fills (output ids outside output parity) is not stored, and reads
# back empty.
_RAGGED = ragged_fields(RequestRecord)
_LENGTHS = {"chunk_times": "chunk_lengths", "chunk_tokens": "token_lengths"}
# Requests read or made at a time: as many as hold this many ragged values together, so that
# neither encoding nor decoding ever joins a whole point's values (800 MB of chunk times at
# 100,000 x 1,000) in one array, nor makes more than a block of records at once; and no more
# than BLOCK_RECORDS of them, for points whose requests have no chunks.
RAGGED_BLOCK_VALUES = 1 << 20
BLOCK_RECORDS = 8192
# A ragged field's values are spilled to a file past this many bytes (RequestEncoder).
SPOOL_MEMORY_BYTES = 4 << 20
_SCALARS = _REQUEST_FLOATS + _REQUEST_INTS + _REQUEST_STRINGS
# What encode_requests stores; a test checks it covers every RequestRecord field.
REQUEST_FIELDS = _SCALARS + tuple(_RAGGED)


def _lengths_name(field: str) -> str:
    return _LENGTHS.get(field, f"{field}:lengths")


def _floats(values: Sequence[float | None]) -> np.ndarray:
    return np.array([math.nan if v is None else v for v in values], dtype=np.float64)


def _ints(values: Sequence[int | None]) -> np.ndarray:
    return np.array([MISSING_INT if v is None else v for v in values], dtype=np.int64)


def _nan_to_none(values: np.ndarray) -> list[float | None]:
    return [None if v != v else v for v in values.tolist()]  # NaN is the one value != itself


def _missing_to_none(values: np.ndarray) -> list[int | None]:
    return [None if v == MISSING_INT else v for v in values.tolist()]


# -- request records ----------------------------------------------------------------------------


def _block_spans(count: int, lengths: Sequence[np.ndarray]) -> Iterator[tuple[int, int]]:
    """[start, end) of each block of requests: as many as keep their ragged values (the given
    fields' together) under RAGGED_BLOCK_VALUES, one request however long, BLOCK_RECORDS at
    most (a point of requests without chunks is not one block)."""
    sizes = np.sum(lengths, axis=0, dtype=np.int64) if lengths else np.zeros(count, np.int64)
    ends = np.cumsum(sizes)
    start = 0
    while start < count:
        base = int(ends[start - 1]) if start else 0
        end = int(np.searchsorted(ends, base + RAGGED_BLOCK_VALUES, side="left"))
        end = min(max(end, start + 1), start + BLOCK_RECORDS, count)
        yield start, end
        start = end


def _record_spans(records: Sequence[RequestRecord]) -> list[tuple[int, int]]:
    lengths = [
        np.fromiter((len(getattr(r, name)) for r in records), np.int64, len(records))
        for name in _RAGGED
    ]
    return list(_block_spans(len(records), lengths))


def _le_bytes(values: list[CompactArray], kind: type[CompactArray]) -> bytes:
    """The values back to back as files and blobs store them: little-endian."""
    data = b"".join(values)
    if sys.byteorder == "big":
        native = np.dtype(kind.DTYPE).newbyteorder("=")
        data = np.frombuffer(data, native).astype(kind.DTYPE).tobytes()
    return data


class RequestEncoder:
    """A point's records encoded as they come, a block at a time, for points too big to hold
    whole beside their blob (100,000 requests x 1,000 chunks: 1.4 GB of records, 590 MB of blob).

    Each block's scalar fields become arrays at once; its ragged values (chunk times, ...) are
    appended to one file per field, kept in memory up to SPOOL_MEMORY_BYTES and on disk past
    that. `blob()` lays the blob out from them, its raw parts made again from the files as it
    is written (`Layout.pieces`, or `tobytes` whole). The blob is byte for byte the one
    encode_requests makes of the same records: encode_requests is this encoder fed at once.
    A context manager: leaving it removes the files.
    """

    def __init__(self) -> None:
        self.count = 0
        self._columns: dict[str, list[np.ndarray]] = {name: [] for name in _SCALARS}
        self._lengths: dict[str, list[np.ndarray]] = {name: [] for name in _RAGGED}
        # Closed by close(), which leaving the encoder's with block calls.
        self._spools = {
            name: tempfile.SpooledTemporaryFile(  # noqa: SIM115
                SPOOL_MEMORY_BYTES, prefix="headroom-requests-"
            )
            for name in _RAGGED
        }
        self._layout: Layout | None = None

    def __enter__(self) -> RequestEncoder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for spool in self._spools.values():
            spool.close()

    def add(self, records: Sequence[RequestRecord]) -> None:
        for start, end in _record_spans(records):
            self._add_block(records[start:end])

    def take(self, records: list[RequestRecord]) -> None:
        """add() the records, removing each block from the list once it is spilled: a caller
        that gives its records up (the worker's point, just measured) has them freed a block
        at a time instead of holding them all until the blob is written."""
        for start, end in _record_spans(records):
            self._add_block(records[: end - start])
            del records[: end - start]

    def _add_block(self, records: Sequence[RequestRecord]) -> None:
        if self._layout is not None:
            raise RuntimeError("records added after the blob was laid out")
        # Attributes are read straight off the models, all of a record's scalars in one C call:
        # model_dump() would build a Python object of every value only to read it once.
        rows = zip(*map(operator.attrgetter(*_SCALARS), records), strict=True)
        for name, column in zip(_SCALARS, rows, strict=True):
            self._columns[name].append(_scalar_array(name, column))
        for name, kind in _RAGGED.items():
            # The records' own arrays, read as bytes: no Python number is made for any value.
            values = [kind.coerce(value) for value in map(operator.attrgetter(name), records)]
            self._lengths[name].append(np.fromiter(map(len, values), np.int64, len(values)))
            self._spools[name].write(_le_bytes(values, kind))
        self.count += len(records)

    def blob(self) -> Layout:
        if self._layout is None:
            self._layout = blobs.layout(self._arrays())
        return self._layout

    def _arrays(self) -> dict[str, np.ndarray | Spooled]:
        arrays: dict[str, np.ndarray | Spooled] = {
            # A string column's blocks differ in width: joined, they take the widest, as one
            # array of every value would.
            name: np.concatenate(blocks) if blocks else _scalar_array(name, ())
            for name, blocks in self._columns.items()
        }
        for name, kind in _RAGGED.items():
            blocks = self._lengths[name]
            lengths = np.concatenate(blocks) if blocks else np.zeros(0, np.int64)
            if name not in _LENGTHS and not lengths.any():
                continue
            arrays[name] = Spooled(self._spools[name], np.dtype(kind.DTYPE), int(lengths.sum()))
            arrays[_lengths_name(name)] = lengths
        return arrays


def _scalar_array(name: str, values: Sequence[Any]) -> np.ndarray:
    if name in _REQUEST_FLOATS:
        return _floats(values)
    if name in _REQUEST_INTS:
        return _ints(values)
    return np.array([value or "" for value in values], dtype=np.str_)


def encode_requests(requests: Sequence[RequestRecord]) -> bytes:
    with RequestEncoder() as encoder:
        encoder.add(requests)
        return encoder.blob().tobytes()


def _scalar_values(name: str, values: np.ndarray) -> list[Any]:
    """A stored column as the records hold it: None for a missing value."""
    if name in _REQUEST_FLOATS:
        return _nan_to_none(values)
    if name in _REQUEST_INTS:
        return _missing_to_none(values)
    return [value or None for value in values.tolist()]


def _ragged_values(
    reader: Reader, lengths: np.ndarray, kind: type[CompactArray]
) -> list[CompactArray]:
    """Each request's values as its own array, from the block's values read at once."""
    block = reader.read(int(lengths.sum()))
    data = np.ascontiguousarray(block, kind.DTYPE.replace("<", "=")).data.cast("B")
    size, at, out = block.itemsize, 0, []
    for length in lengths.tolist():
        out.append(kind.from_native_bytes(data[at * size : (at + length) * size]))
        at += length
    return out


def _column_blocks(
    blob: bytes | bytearray | memoryview, fields: Sequence[str]
) -> Iterator[dict[str, list[Any]]]:
    """The named fields of a blob's requests, as the records hold them, a block of requests at a
    time (_block_spans over the named ragged fields): neither a point's records nor any of its
    whole planes are made. A field the blob predates is left out of every block."""
    readers = blobs.readers(blob)
    count = len(readers["index"].whole())
    stored = [name for name in fields if name in readers]
    lengths = {
        name: readers[_lengths_name(name)].whole() for name in stored if name in _RAGGED
    }
    for start, end in _block_spans(count, list(lengths.values())):
        yield {
            name: (
                _ragged_values(readers[name], lengths[name][start:end], _RAGGED[name])
                if name in _RAGGED
                else _scalar_values(name, readers[name].read(end - start))
            )
            for name in stored
        }


def iter_request_blocks(blob: bytes | bytearray | memoryview) -> Iterator[list[RequestRecord]]:
    """The records of a blob, a block at a time: a reader that writes them out (the JSON
    download) holds no more than a block of them. A field the blob predates gets its default
    (None, unknown; an empty array)."""
    for columns in _column_blocks(blob, REQUEST_FIELDS):
        names = list(columns)
        yield [
            RequestRecord.model_validate(dict(zip(names, values, strict=True)))
            for values in zip(*columns.values(), strict=True)
        ]


def iter_requests(blob: bytes | bytearray | memoryview) -> Iterator[RequestRecord]:
    for block in iter_request_blocks(blob):
        yield from block


def decode_requests(blob: bytes | bytearray | memoryview) -> list[RequestRecord]:
    """The records; their ragged fields as compact arrays, made a block at a time."""
    return list(iter_requests(blob))


@dataclass(frozen=True)
class RequestColumns:
    """Some fields of every request of a blob, without a record built (request_columns)."""

    # Field -> one value per request, as decode_requests' record would hold it.
    values: dict[str, list[Any]]
    # Every ragged field -> its values per request (zeros for a field the blob does not hold).
    lengths: dict[str, np.ndarray]


def request_columns(
    blob: bytes | bytearray | memoryview, fields: Sequence[str]
) -> RequestColumns:
    """The named RequestRecord fields of every request, for a reader that needs a few (output
    parity: token ids and prompt digests), with the lengths of every ragged field. A field the
    blob predates comes back as the field's default for every request."""
    unknown = set(fields) - set(REQUEST_FIELDS)
    if unknown:
        raise ValueError(f"not RequestRecord fields: {sorted(unknown)}")
    values: dict[str, list[Any]] = {name: [] for name in fields}
    for block in _column_blocks(blob, fields):
        for name, column in block.items():
            values[name].extend(column)
    readers = blobs.readers(blob)
    count = len(readers["index"].whole())
    lengths = {
        name: readers[_lengths_name(name)].whole() if _lengths_name(name) in readers
        else np.zeros(count, np.int64)
        for name in _RAGGED
    }
    for name in fields:
        if name not in readers:
            field = RequestRecord.model_fields[name]
            if field.is_required():
                raise ValueError(f"the blob has no {name!r}, which every record needs")
            values[name] = [field.get_default(call_default_factory=True) for _ in range(count)]
    return RequestColumns(values, lengths)


# The scalar numeric fields request_arrays reads: floats (NaN: missing) and counts (-1).
NUMERIC_REQUEST_FIELDS = _REQUEST_FLOATS + _REQUEST_INTS


def request_arrays(
    blob: bytes | bytearray | memoryview, fields: Sequence[str]
) -> dict[str, np.ndarray]:
    """The named numeric fields of every request as the stored arrays themselves (NaN for a
    missing float, MISSING_INT for a missing count), for a reader of a few fields of every
    request that computes on them (the request timeline); nothing else is decompressed. The
    blob may be a subset holding only these fields and "index" (blobs.subset). A field the
    blob predates reads as missing for every request."""
    unknown = set(fields) - set(NUMERIC_REQUEST_FIELDS)
    if unknown:
        raise ValueError(f"not numeric RequestRecord fields: {sorted(unknown)}")
    readers = blobs.readers(blob)
    count = len(readers["index"].whole())
    arrays = {}
    for name in fields:
        if name in readers:
            arrays[name] = readers[name].whole()
        elif name in _REQUEST_FLOATS:
            arrays[name] = np.full(count, math.nan)
        else:
            arrays[name] = np.full(count, MISSING_INT, np.int64)
    return arrays


def encode_samples(samples: Sequence[EngineSample]) -> bytes:
    arrays = {name: _floats([getattr(s, name) for s in samples]) for name in _SAMPLE_FLOATS}
    arrays["replica"] = np.array([s.replica for s in samples], dtype=np.int64)
    for name in _SAMPLE_HISTOGRAMS:
        histograms = [getattr(s, name) for s in samples]
        arrays[f"{name}:bounds"] = np.array(
            [bound for h in histograms for bound in h], dtype=np.str_)
        arrays[f"{name}:counts"] = _floats([count for h in histograms for count in h.values()])
        arrays[f"{name}:lengths"] = np.array([len(h) for h in histograms], dtype=np.int64)
    return _pack(arrays)


def _split(flat: np.ndarray, lengths: np.ndarray) -> list[list]:
    values = flat.tolist()
    ends = np.cumsum(lengths).tolist()
    return [values[end - length : end] for end, length in zip(ends, lengths.tolist(), strict=True)]


def _histograms(arrays: dict[str, np.ndarray], name: str, n: int) -> list[dict[str, float]]:
    """One histogram per sample; empty for every sample of a blob stored before it existed."""
    if f"{name}:lengths" not in arrays:
        return [{} for _ in range(n)]
    bounds = _split(arrays[f"{name}:bounds"], arrays[f"{name}:lengths"])
    counts = _split(arrays[f"{name}:counts"], arrays[f"{name}:lengths"])
    return [dict(zip(b, c, strict=True)) for b, c in zip(bounds, counts, strict=True)]


def sample_columns(blob: bytes | memoryview) -> dict[str, np.ndarray]:
    """The samples as arrays (what the chart needs, without building 5,000 objects)."""
    return _unpack(blob)


def decode_samples(blob: bytes | memoryview) -> list[EngineSample]:
    arrays = _unpack(blob)
    # A point stored before a field joined the schema has no array for it: None, as unknown.
    columns: dict[str, list] = {
        name: _nan_to_none(arrays[name]) for name in _SAMPLE_FLOATS if name in arrays
    }
    columns["replica"] = arrays["replica"].tolist()
    for name in _SAMPLE_HISTOGRAMS:
        columns[name] = _histograms(arrays, name, len(columns["replica"]))
    names = list(columns)
    return [
        EngineSample.model_validate(dict(zip(names, values, strict=True)))
        for values in zip(*columns.values(), strict=True)
    ]


def encode_telemetry(samples: Sequence[TelemetrySample]) -> bytes:
    """GPU or CPU-engine readings as columns; no readings: b"" (what PointData.telemetry holds
    for points without telemetry, and for points stored before it existed)."""
    if not samples:
        return b""
    arrays = {name: _floats([getattr(s, name) for s in samples]) for name in _TELEMETRY_FLOATS}
    for name in _TELEMETRY_INTS:
        arrays[name] = _ints([getattr(s, name) for s in samples])
    return _pack(arrays)


def telemetry_columns(blob: bytes | memoryview) -> dict[str, np.ndarray]:
    """The readings as arrays, for the chart; none: no arrays."""
    return _unpack(blob) if len(blob) else {}


def decode_telemetry(blob: bytes | memoryview) -> list[TelemetrySample]:
    arrays = telemetry_columns(blob)
    if not arrays:
        return []
    columns: dict[str, list] = {
        name: _nan_to_none(arrays[name]) for name in _TELEMETRY_FLOATS if name in arrays
    }
    for name in _TELEMETRY_INTS:
        columns[name] = _missing_to_none(arrays[name])
    names = list(columns)
    return [
        TelemetrySample.model_validate(dict(zip(names, values, strict=True)))
        for values in zip(*columns.values(), strict=True)
    ]


# A reading's gauges the run page draws, per GPU; a CPU engine's is its cores busy.
_GPU_SERIES = ("utilization_pct", "power_w", "memory_used_mib", "sm_clock_mhz")


def telemetry_series(blob: bytes | memoryview) -> dict[str, list[dict[str, object]]]:
    """The readings per device as JSON-ready lists (NaN as null), for the run page's chart.

    A GPU's series are its gauges; a CPU engine replica's is cores busy between consecutive
    readings (CPU seconds over elapsed seconds), stamped at the later one. No readings: an
    empty list of devices.
    """
    columns = telemetry_columns(blob)
    if not columns:
        return {"devices": []}
    devices: list[dict[str, object]] = []
    gpu, replica = columns["gpu"], columns["replica"]
    for index in np.unique(gpu[gpu != MISSING_INT]).tolist():
        mask = gpu == index
        device: dict[str, object] = {
            "kind": "gpu", "gpu": index, "replica": int(replica[mask][0]),
            "t": _nan_to_none(columns["t"][mask]),
        }
        device.update({name: _nan_to_none(columns[name][mask]) for name in _GPU_SERIES})
        devices.append(device)
    for index in np.unique(replica[gpu == MISSING_INT]).tolist():
        mask = (gpu == MISSING_INT) & (replica == index)
        t, seconds = columns["t"][mask], columns["cpu_seconds"][mask]
        with np.errstate(divide="ignore", invalid="ignore"):
            busy = np.diff(seconds) / np.diff(t)
        busy[~np.isfinite(busy)] = np.nan  # two readings at one instant: no rate, not infinity
        devices.append(
            {"kind": "cpu", "replica": index, "t": _nan_to_none(t[1:]),
             "cores_busy": _nan_to_none(busy)}
        )
    return {"devices": devices}
