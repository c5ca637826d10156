"""Compact column storage for per-request records, engine samples and telemetry readings.

A point can hold 32,768 requests with 256 chunk times each: 8.4 million timestamps. One row per
request would be 32,768 INSERTs and a join on every page; JSON would be hundreds of megabytes.
Instead each field becomes one numpy array, and the arrays are packed into one blob.

Format 2 (what encode_* write), all integers little-endian:

    MAGIC (b"HRCOLS\\x00\\x02") | header length (uint32) | header (JSON) | parts, back to back

The header lists the arrays in order: {"name", "dtype" (numpy dtype.str), "shuffled", "parts":
[[codec, nbytes], ...]}, codec "raw" or "zlib". A numeric array is byte-shuffled first (byte 0
of every value, then byte 1, ...), as Blosc and HDF5's shuffle filter do, and each byte plane
is one part. Timestamps share their exponent and high mantissa bytes, so those planes compress
to a few percent; their low mantissa bytes are measurement noise that no compressor shrinks.
Each plane is therefore compressed only when a sample of it shrinks to under half: zlib spent
on noise was most of the time a 32,768-request point took to encode, for under 1% of its size.
A string array (numpy unicode) is one part, compressed by the same test. Lossless: values come
back bit for bit.

Format 1 (points stored before format 2) is a zlib-compressed .npz archive of the same shuffled
arrays plus a "__dtypes__" array; it is still read. A blob is format 2 when it starts with
MAGIC (a zlib stream starts with 0x78, so the two cannot be confused).

Missing values: NaN for floats, -1 for counts and status codes, "" for strings. Chunk times and
chunk token counts are ragged; they are stored flat with a per-request length array. They are
encoded from the records' compact arrays a byte plane at a time, and decoded into compact arrays
a block of requests at a time: a point's values are never held whole beside its records.
"""

from __future__ import annotations

import functools
import io
import json
import math
import operator
import struct
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from runner.schema import (
    CompactArray,
    EngineSample,
    RequestRecord,
    TelemetrySample,
    ragged_fields,
)

MAGIC = b"HRCOLS\x00\x02"
FORMAT_VERSION = 2
_HEADER_LENGTH = struct.Struct("<I")

# Level 1: on timestamps' high bytes it compresses nearly as well as level 6, several times
# faster.
ZLIB_LEVEL = 1
# A byte plane is compressed when zlib shrinks a sample of it below this fraction. The sample
# is SAMPLE_SLICES slices of SAMPLE_SLICE_BYTES spread over the plane, so a plane that is noise
# only at its start (or only at its end) is judged on the whole. Measured on chunk times: zlib
# took ~40 ns a byte to bring a noisy plane to 85%, while the INSERT costs ~13 ns a stored byte,
# so that 15% saved ~2 ns a byte; the planes that shrink to a few percent cost ~2 ns a byte.
COMPRESS_BELOW = 0.5
SAMPLE_SLICES = 4
SAMPLE_SLICE_BYTES = 16 * 1024
MISSING_INT = -1

_REQUEST_FLOATS = ("intended_send", "actual_send", "connect_s", "ttft", "e2el", "completed_at")
_REQUEST_INTS = (
    "index", "replica", "prompt_tokens", "output_tokens", "max_tokens", "status",
    "conversation", "turn",
)  # fmt: skip
_REQUEST_STRINGS = ("finish_reason", "error", "incomplete", "prompt_digest", "output_text")
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
# The ragged per-request fields (runner.schema.ragged_fields: chunk times, chunk token counts,
# output token ids, ...): each stored flat with a per-request length array named
# "<field>:lengths"; the two older than that rule keep their names. A ragged field no request
# fills (output ids outside output parity) is not stored, and reads back empty.
_RAGGED = ragged_fields(RequestRecord)
_LENGTHS = {"chunk_times": "chunk_lengths", "chunk_tokens": "token_lengths"}
# Requests read or made at a time for one ragged field, so that neither encoding nor decoding
# ever joins a whole point's values (800 MB of chunk times at 100,000 x 1,000) in one array.
RAGGED_BLOCK_VALUES = 1 << 20
# What encode_requests stores; a test checks it covers every RequestRecord field.
REQUEST_FIELDS = _REQUEST_FLOATS + _REQUEST_INTS + _REQUEST_STRINGS + tuple(_RAGGED)


def _lengths_name(field: str) -> str:
    return _LENGTHS.get(field, f"{field}:lengths")


def _worth_compressing(plane: memoryview) -> bool:
    size = len(plane)
    if size <= SAMPLE_SLICES * SAMPLE_SLICE_BYTES:
        sample = bytes(plane)
    else:
        step = size // SAMPLE_SLICES
        sample = b"".join(
            plane[i * step : i * step + SAMPLE_SLICE_BYTES] for i in range(SAMPLE_SLICES)
        )
    return len(zlib.compress(sample, ZLIB_LEVEL)) < COMPRESS_BELOW * len(sample)


def _encode_part(data: memoryview) -> bytes | None:
    """The part compressed, or None: stored raw."""
    if _worth_compressing(data):
        compressed = zlib.compress(data, ZLIB_LEVEL)
        if len(compressed) < len(data):
            return compressed
    return None


@dataclass
class _Ragged:
    """One ragged field of every request, read a block of requests at a time (never joined)."""

    values: list[CompactArray]
    dtype: np.dtype

    def __len__(self) -> int:
        return sum(map(len, self.values))

    def blocks(self) -> Iterator[np.ndarray]:
        start = 0
        while start < len(self.values):
            end, size = start, 0
            while end < len(self.values) and (size == 0 or size < RAGGED_BLOCK_VALUES):
                size += len(self.values[end])
                end += 1
            native = np.frombuffer(b"".join(self.values[start:end]), self.dtype.newbyteorder("="))
            yield native.astype(self.dtype, copy=False)  # the stored byte order: little-endian
            start = end

    def byte_plane(self, k: int, out: np.ndarray | None = None) -> np.ndarray:
        """Byte k of every value (into `out`, a slice of the blob, when given)."""
        plane = np.empty(len(self), np.uint8) if out is None else out
        at = 0
        for block in self.blocks():
            plane[at : at + len(block)] = block.view(np.uint8)[k :: self.dtype.itemsize]
            at += len(block)
        return plane


def _planes(array: np.ndarray | _Ragged) -> tuple[np.dtype, bool, list[Callable[..., Any]]]:
    """The array's dtype, whether it is byte-shuffled, and a maker for each of its parts
    (called with no argument, a part returns its bytes; with `out`, it writes them there)."""
    if isinstance(array, _Ragged):
        return array.dtype, True, [
            functools.partial(array.byte_plane, k) for k in range(array.dtype.itemsize)
        ]
    array = np.ascontiguousarray(array)
    flat = array.view(np.uint8).reshape(-1, max(array.itemsize, 1))
    if array.dtype.kind in "fiu" and array.itemsize > 1:
        return array.dtype, True, [
            functools.partial(_column, flat, k) for k in range(array.itemsize)
        ]
    return array.dtype, False, [functools.partial(_column, flat.reshape(-1, 1), 0)]


def _column(flat: np.ndarray, k: int, out: np.ndarray | None = None) -> np.ndarray:
    if out is None:
        return np.ascontiguousarray(flat[:, k])
    out[:] = flat[:, k]
    return out


def _pack(arrays: Mapping[str, np.ndarray | _Ragged]) -> bytearray:
    """The blob, in two passes so that no raw part is held beside it: the first compresses
    what shrinks and only measures the rest (a point's noisy low mantissa bytes, most of its
    size); the second writes the raw parts straight into the blob, made again from the arrays."""
    entries = []
    parts: list[tuple[bytes | None, Callable[..., Any], int]] = []
    for name, array in arrays.items():
        dtype, shuffled, makers = _planes(array)
        codecs: list[list[object]] = []
        for make in makers:
            plane = make()
            compressed = _encode_part(plane.data)
            size = len(compressed) if compressed is not None else len(plane)
            del plane
            codecs.append(["zlib" if compressed is not None else "raw", size])
            parts.append((compressed, make, size))
        entries.append({"name": name, "dtype": dtype.str, "shuffled": shuffled, "parts": codecs})
    header = json.dumps({"version": FORMAT_VERSION, "arrays": entries}).encode()
    head = MAGIC + _HEADER_LENGTH.pack(len(header)) + header
    blob = bytearray(len(head) + sum(size for _, _, size in parts))
    blob[: len(head)] = head
    at = len(head)
    for compressed, make, size in parts:
        if compressed is not None:
            blob[at : at + size] = compressed
        else:
            make(out=np.frombuffer(blob, np.uint8, size, at))
        at += size
    return blob


def _unpack(
    blob: bytes | bytearray | memoryview, *, lazy: frozenset[str] = frozenset()
) -> dict[str, np.ndarray]:
    """Every array of a blob; those named in `lazy` as _Planes (format 2 only), to be joined a
    block at a time rather than whole."""
    view = memoryview(blob)
    if format_version(view) == 1:
        return _unpack_format_1(view)
    offset = len(MAGIC)
    (header_length,) = _HEADER_LENGTH.unpack_from(view, offset)
    offset += _HEADER_LENGTH.size
    header = json.loads(bytes(view[offset : offset + header_length]))
    offset += header_length
    arrays: dict[str, Any] = {}
    for entry in header["arrays"]:
        parts = []
        for codec, nbytes in entry["parts"]:
            part = view[offset : offset + nbytes]
            offset += nbytes
            # A raw part stays a view of the blob: no copy until it is read.
            parts.append(zlib.decompress(part) if codec == "zlib" else part)
        planes = _Planes(parts, np.dtype(entry["dtype"]), entry["shuffled"])
        arrays[entry["name"]] = planes if entry["name"] in lazy else planes.values(0, len(planes))
    return arrays


@dataclass
class _Planes:
    """One stored array as its parts: the byte planes of a shuffled array, or its one part."""

    parts: list[bytes | memoryview]
    dtype: np.dtype
    shuffled: bool

    def __len__(self) -> int:
        return len(self.parts[0]) // (1 if self.shuffled else self.dtype.itemsize)

    def values(self, start: int, end: int) -> np.ndarray:
        """Values [start, end), in the host's byte order."""
        native = self.dtype.newbyteorder("=")
        if not self.shuffled:
            size = self.dtype.itemsize
            return np.frombuffer(self.parts[0][start * size : end * size], self.dtype).astype(
                native
            )
        out = np.empty((end - start, len(self.parts)), np.uint8)
        for k, part in enumerate(self.parts):
            out[:, k] = np.frombuffer(part, np.uint8, end - start, start)
        return out.view(self.dtype).reshape(-1).astype(native, copy=False)


def _unpack_format_1(view: memoryview) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(zlib.decompress(view)), allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    for entry in arrays.pop("__dtypes__").tolist():
        name, dtype = entry.split("=", 1)
        arrays[name] = arrays[name].T.copy().view(np.dtype(dtype)).reshape(-1)
    return arrays


def format_version(blob: bytes | bytearray | memoryview) -> int:
    """2 for what encode_* write now, 1 for blobs stored before format 2."""
    return FORMAT_VERSION if bytes(memoryview(blob)[: len(MAGIC)]) == MAGIC else 1


def _floats(values: Sequence[float | None]) -> np.ndarray:
    return np.array([math.nan if v is None else v for v in values], dtype=np.float64)


def _ints(values: Sequence[int | None]) -> np.ndarray:
    return np.array([MISSING_INT if v is None else v for v in values], dtype=np.int64)


def _nan_to_none(values: np.ndarray) -> list[float | None]:
    return [None if v != v else v for v in values.tolist()]  # NaN is the one value != itself


def _missing_to_none(values: np.ndarray) -> list[int | None]:
    return [None if v == MISSING_INT else v for v in values.tolist()]


def encode_requests(requests: Sequence[RequestRecord]) -> bytes:
    # Attributes are read straight off the models, all of a record's scalars in one C call:
    # model_dump() of 32,768 records with 256 chunk times each would build 8 million Python
    # objects only to read them once.
    scalars = _REQUEST_FLOATS + _REQUEST_INTS + _REQUEST_STRINGS
    if requests:
        rows = map(operator.attrgetter(*scalars), requests)
        columns = dict(zip(scalars, zip(*rows, strict=True), strict=True))
    else:
        columns = {name: () for name in scalars}
    arrays: dict[str, np.ndarray | _Ragged] = {}
    for name in _REQUEST_FLOATS:
        arrays[name] = _floats(columns[name])
    for name in _REQUEST_INTS:
        arrays[name] = _ints(columns[name])
    for name in _REQUEST_STRINGS:
        arrays[name] = np.array([value or "" for value in columns[name]], dtype=np.str_)
    for name, kind in _RAGGED.items():
        # The records' own arrays, read as bytes: no Python number is made for any value.
        values = [kind.coerce(value) for value in map(operator.attrgetter(name), requests)]
        lengths = np.fromiter(map(len, values), np.int64, len(values))
        if name not in _LENGTHS and not lengths.any():
            continue
        arrays[name] = _Ragged(values, np.dtype(kind.DTYPE))
        arrays[_lengths_name(name)] = lengths
    return _pack(arrays)


def _split(flat: np.ndarray, lengths: np.ndarray) -> list[list]:
    values = flat.tolist()
    ends = np.cumsum(lengths).tolist()
    return [values[end - length : end] for end, length in zip(ends, lengths.tolist(), strict=True)]


def _split_ragged(
    planes: np.ndarray | _Planes, lengths: np.ndarray, kind: type[CompactArray]
) -> list[CompactArray]:
    """Each request's values as its own array, joined RAGGED_BLOCK_VALUES values at a time."""
    out: list[CompactArray] = []
    ends = np.cumsum(lengths).tolist()
    starts = [end - length for end, length in zip(ends, lengths.tolist(), strict=True)]
    first = 0
    while first < len(ends):
        last = first
        while last < len(ends) and ends[last] - starts[first] < RAGGED_BLOCK_VALUES:
            last += 1
        last = max(last, first + 1)
        base = starts[first]
        block = (
            planes.values(base, ends[last - 1]) if isinstance(planes, _Planes)
            else planes[base : ends[last - 1]]
        )
        data = np.ascontiguousarray(block, kind.DTYPE.replace("<", "=")).data.cast("B")
        size = block.itemsize
        out.extend(
            kind.from_native_bytes(data[(a - base) * size : (b - base) * size])
            for a, b in zip(starts[first:last], ends[first:last], strict=True)
        )
        first = last
    return out


def decode_requests(blob: bytes | bytearray | memoryview) -> list[RequestRecord]:
    """The records; their ragged fields as compact arrays, made a block at a time."""
    arrays: dict[str, Any] = _unpack(blob, lazy=frozenset(_RAGGED))
    columns: dict[str, list] = {}
    # A point stored before a field joined the schema has no array for it: left out, so the
    # record gets the field's default (None, unknown; an empty array).
    for name in _REQUEST_FLOATS:
        if name in arrays:
            columns[name] = _nan_to_none(arrays[name])
    for name in _REQUEST_INTS:
        if name in arrays:
            columns[name] = _missing_to_none(arrays[name])
    for name in _REQUEST_STRINGS:
        if name in arrays:
            columns[name] = [value or None for value in arrays[name].tolist()]
    for name, kind in _RAGGED.items():
        if name in arrays:
            columns[name] = _split_ragged(arrays.pop(name), arrays[_lengths_name(name)], kind)
    names = list(columns)
    return [
        RequestRecord.model_validate(dict(zip(names, values, strict=True)))
        for values in zip(*columns.values(), strict=True)
    ]


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
