"""Compact column storage for per-request records and engine samples.

A point can hold 32,768 requests with a few hundred chunk times each. One row per request would
be 32,768 INSERTs and a join on every page; JSON would be hundreds of megabytes. Instead each
field becomes one numpy array, the arrays are saved as an .npz archive (self-describing: names,
shapes; loaded with allow_pickle=False) and the archive is zlib-compressed at level 1.

Numeric arrays are byte-shuffled first (byte 0 of every value, then byte 1, ...), as Blosc and
HDF5's shuffle filter do: timestamps share their high bytes, so the shuffled bytes compress
about ten times better and twice as fast. Lossless: the float64 values come back bit for bit.

Missing values: NaN for floats, -1 for counts and status codes, "" for strings. Chunk times and
chunk token counts are ragged; they are stored flat with a per-request length array.
"""

from __future__ import annotations

import io
import itertools
import zlib
from collections.abc import Sequence

import numpy as np

from runner.schema import EngineSample, RequestRecord

# Level 1: about as fast as a memcpy-bound encoder gets; higher levels cost seconds on a large
# point for a few percent less space.
ZLIB_LEVEL = 1
MISSING_INT = -1

_REQUEST_FLOATS = ("intended_send", "actual_send", "ttft", "e2el", "completed_at")
_REQUEST_INTS = ("index", "replica", "prompt_tokens", "output_tokens", "status")
_REQUEST_STRINGS = ("finish_reason", "error")
# Every EngineSample field but the replica index is a float (t, gauges, running counter totals);
# taken from the schema so a field added there is stored without touching this file.
_SAMPLE_FLOATS = tuple(name for name in EngineSample.model_fields if name != "replica")
# What encode_requests stores; a test checks it covers every RequestRecord field.
REQUEST_FIELDS = (
    _REQUEST_FLOATS + _REQUEST_INTS + _REQUEST_STRINGS + ("chunk_times", "chunk_tokens")
)


DTYPES_KEY = "__dtypes__"


def _pack(arrays: dict[str, np.ndarray]) -> bytes:
    stored: dict[str, np.ndarray] = {}
    dtypes = []
    for name, array in arrays.items():
        if array.dtype.kind in "fiu":
            # (itemsize, n): row k holds byte k of every value.
            stored[name] = array.view(np.uint8).reshape(-1, array.itemsize).T.copy()
            dtypes.append(f"{name}={array.dtype.str}")
        else:
            stored[name] = array
    stored[DTYPES_KEY] = np.array(dtypes, dtype=np.str_)
    buffer = io.BytesIO()
    np.savez(buffer, **stored)
    return zlib.compress(buffer.getvalue(), ZLIB_LEVEL)


def _unpack(blob: bytes | memoryview) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(zlib.decompress(blob)), allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    for entry in arrays.pop(DTYPES_KEY).tolist():
        name, dtype = entry.split("=", 1)
        arrays[name] = arrays[name].T.copy().view(np.dtype(dtype)).reshape(-1)
    return arrays


def _floats(values: Sequence[float | None]) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


def _ints(values: Sequence[int | None]) -> np.ndarray:
    return np.array([MISSING_INT if v is None else v for v in values], dtype=np.int64)


def _float_or_none(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


def _int_or_none(value: int) -> int | None:
    return None if value == MISSING_INT else int(value)


def encode_requests(requests: Sequence[RequestRecord]) -> bytes:
    arrays: dict[str, np.ndarray] = {}
    for name in _REQUEST_FLOATS:
        arrays[name] = _floats([getattr(r, name) for r in requests])
    for name in _REQUEST_INTS:
        arrays[name] = _ints([getattr(r, name) for r in requests])
    for name in _REQUEST_STRINGS:
        arrays[name] = np.array([getattr(r, name) or "" for r in requests], dtype=np.str_)
    lengths = np.array([len(r.chunk_times) for r in requests], dtype=np.int64)
    total = int(lengths.sum())
    arrays["chunk_lengths"] = lengths
    arrays["chunk_times"] = np.fromiter(
        itertools.chain.from_iterable(r.chunk_times for r in requests), np.float64, count=total
    )
    token_lengths = np.array([len(r.chunk_tokens) for r in requests], dtype=np.int64)
    arrays["token_lengths"] = token_lengths
    arrays["chunk_tokens"] = np.fromiter(
        itertools.chain.from_iterable(r.chunk_tokens for r in requests),
        np.int32,
        count=int(token_lengths.sum()),
    )
    return _pack(arrays)


def decode_requests(blob: bytes | memoryview) -> list[RequestRecord]:
    arrays = _unpack(blob)
    count = len(arrays["index"])
    chunk_times = np.split(arrays["chunk_times"], np.cumsum(arrays["chunk_lengths"])[:-1])
    chunk_tokens = np.split(arrays["chunk_tokens"], np.cumsum(arrays["token_lengths"])[:-1])
    records = []
    for i in range(count):
        fields: dict[str, object] = {}
        for name in _REQUEST_FLOATS:
            fields[name] = _float_or_none(arrays[name][i])
        for name in _REQUEST_INTS:
            fields[name] = _int_or_none(arrays[name][i])
        for name in _REQUEST_STRINGS:
            fields[name] = str(arrays[name][i]) or None
        fields["chunk_times"] = chunk_times[i].tolist() if count else []
        fields["chunk_tokens"] = chunk_tokens[i].tolist() if count else []
        records.append(RequestRecord.model_validate(fields))
    return records


def encode_samples(samples: Sequence[EngineSample]) -> bytes:
    arrays = {name: _floats([getattr(s, name) for s in samples]) for name in _SAMPLE_FLOATS}
    arrays["replica"] = np.array([s.replica for s in samples], dtype=np.int64)
    return _pack(arrays)


def sample_columns(blob: bytes | memoryview) -> dict[str, np.ndarray]:
    """The samples as arrays (what the chart needs, without building 5,000 objects)."""
    return _unpack(blob)


def decode_samples(blob: bytes | memoryview) -> list[EngineSample]:
    arrays = _unpack(blob)
    # A point stored before a field joined the schema has no array for it: None, as unknown.
    names = [name for name in _SAMPLE_FLOATS if name in arrays]
    samples = []
    for i in range(len(arrays["t"])):
        fields: dict[str, object] = {name: _float_or_none(arrays[name][i]) for name in names}
        fields["replica"] = int(arrays["replica"][i])
        samples.append(EngineSample.model_validate(fields))
    return samples
