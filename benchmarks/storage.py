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
chunk token counts are ragged; they are stored flat with a per-request length array.
"""

from __future__ import annotations

import io
import itertools
import json
import math
import operator
import struct
import zlib
from collections.abc import Sequence

import numpy as np

from runner.schema import EngineSample, RequestRecord, TelemetrySample

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
_REQUEST_INTS = ("index", "replica", "prompt_tokens", "output_tokens", "max_tokens", "status")
_REQUEST_STRINGS = ("finish_reason", "error", "incomplete")
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
# What encode_requests stores; a test checks it covers every RequestRecord field.
REQUEST_FIELDS = (
    _REQUEST_FLOATS + _REQUEST_INTS + _REQUEST_STRINGS + ("chunk_times", "chunk_tokens")
)


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


def _encode_part(data: memoryview, parts: list[list[object]], payload: list[bytes]) -> None:
    if _worth_compressing(data):
        compressed = zlib.compress(data, ZLIB_LEVEL)
        if len(compressed) < len(data):
            parts.append(["zlib", len(compressed)])
            payload.append(compressed)
            return
    parts.append(["raw", len(data)])
    payload.append(data)


def _pack(arrays: dict[str, np.ndarray]) -> bytes:
    entries = []
    payload: list[bytes | memoryview] = []
    for name, array in arrays.items():
        array = np.ascontiguousarray(array)
        parts: list[list[object]] = []
        shuffled = array.dtype.kind in "fiu" and array.itemsize > 1
        if shuffled:
            # (itemsize, n): row k holds byte k of every value.
            planes = array.view(np.uint8).reshape(-1, array.itemsize).T.copy()
            for plane in planes:
                _encode_part(plane.data, parts, payload)
        else:
            _encode_part(array.view(np.uint8).reshape(-1).data, parts, payload)
        entries.append(
            {"name": name, "dtype": array.dtype.str, "shuffled": shuffled, "parts": parts}
        )
    header = json.dumps({"version": FORMAT_VERSION, "arrays": entries}).encode()
    return b"".join([MAGIC, _HEADER_LENGTH.pack(len(header)), header, *payload])


def _unpack(blob: bytes | memoryview) -> dict[str, np.ndarray]:
    view = memoryview(blob)
    if format_version(view) == 1:
        return _unpack_format_1(view)
    offset = len(MAGIC)
    (header_length,) = _HEADER_LENGTH.unpack_from(view, offset)
    offset += _HEADER_LENGTH.size
    header = json.loads(bytes(view[offset : offset + header_length]))
    offset += header_length
    arrays = {}
    for entry in header["arrays"]:
        parts = []
        for codec, nbytes in entry["parts"]:
            part = view[offset : offset + nbytes]
            offset += nbytes
            parts.append(zlib.decompress(part) if codec == "zlib" else part)
        arrays[entry["name"]] = _join_parts(parts, np.dtype(entry["dtype"]), entry["shuffled"])
    return arrays


def _join_parts(parts: list, dtype: np.dtype, shuffled: bool) -> np.ndarray:
    if not shuffled:
        return np.frombuffer(parts[0], dtype).copy()
    planes = np.empty((len(parts), len(parts[0])), dtype=np.uint8)
    for row, part in enumerate(parts):
        planes[row] = np.frombuffer(part, np.uint8)
    return planes.T.copy().view(dtype).reshape(-1)


def _unpack_format_1(view: memoryview) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(zlib.decompress(view)), allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    for entry in arrays.pop("__dtypes__").tolist():
        name, dtype = entry.split("=", 1)
        arrays[name] = arrays[name].T.copy().view(np.dtype(dtype)).reshape(-1)
    return arrays


def format_version(blob: bytes | memoryview) -> int:
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


def _flat(
    requests: Sequence[RequestRecord], field: str, dtype: type
) -> tuple[np.ndarray, np.ndarray]:
    """A ragged list field of every request as one flat array, and the per-request lengths."""
    lists = list(map(operator.attrgetter(field), requests))
    lengths = np.fromiter(map(len, lists), np.int64, len(lists))
    total = int(lengths.sum())
    if dtype is np.int32 and all(map(_all_ones, lists)):
        # Chunk token counts are all 1 unless the engine runs with --stream-interval; checking
        # that costs a few ns a value, converting every value about 30.
        return np.ones(total, dtype), lengths
    # One pass in C over every value: about 30 ns a value, the floor for reading Python numbers.
    return np.fromiter(itertools.chain.from_iterable(lists), dtype, total), lengths


def _all_ones(values: list[int]) -> bool:
    return values.count(1) == len(values)


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
    arrays: dict[str, np.ndarray] = {}
    for name in _REQUEST_FLOATS:
        arrays[name] = _floats(columns[name])
    for name in _REQUEST_INTS:
        arrays[name] = _ints(columns[name])
    for name in _REQUEST_STRINGS:
        arrays[name] = np.array([value or "" for value in columns[name]], dtype=np.str_)
    arrays["chunk_times"], arrays["chunk_lengths"] = _flat(requests, "chunk_times", np.float64)
    arrays["chunk_tokens"], arrays["token_lengths"] = _flat(requests, "chunk_tokens", np.int32)
    return _pack(arrays)


def _split(flat: np.ndarray, lengths: np.ndarray) -> list[list]:
    values = flat.tolist()
    ends = np.cumsum(lengths).tolist()
    return [values[end - length : end] for end, length in zip(ends, lengths.tolist(), strict=True)]


def decode_requests(blob: bytes | memoryview) -> list[RequestRecord]:
    arrays = _unpack(blob)
    columns: dict[str, list] = {}
    # A point stored before a field joined the schema has no array for it: left out, so the
    # record gets the field's default (None, unknown).
    for name in _REQUEST_FLOATS:
        if name in arrays:
            columns[name] = _nan_to_none(arrays[name])
    for name in _REQUEST_INTS:
        if name in arrays:
            columns[name] = _missing_to_none(arrays[name])
    for name in _REQUEST_STRINGS:
        if name in arrays:
            columns[name] = [value or None for value in arrays[name].tolist()]
    columns["chunk_times"] = _split(arrays["chunk_times"], arrays["chunk_lengths"])
    columns["chunk_tokens"] = _split(arrays["chunk_tokens"], arrays["token_lengths"])
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
