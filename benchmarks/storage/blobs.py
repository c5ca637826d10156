"""The column blob format: named numpy arrays packed into one blob, and read back from it.

benchmarks.storage.columnar makes a point's records, engine samples and telemetry readings into
such arrays; this module only lays arrays out and reads them back, whole or a piece at a time.

Format 2 (what layout and pack write), all integers little-endian:

    MAGIC (b"HRCOLS\\x00\\x02") | header length (uint32) | header (JSON) | parts, back to back

The header lists the arrays in order: {"name", "dtype" (numpy dtype.str), "shuffled", "parts":
[[codec, nbytes], ...]}, codec "raw" or "zlib". A numeric array is byte-shuffled first (byte 0
of every value, then byte 1, ...), as Blosc and HDF5's shuffle filter do, and each byte plane
is one part. Timestamps share their exponent and high mantissa bytes, so those planes compress
to a few percent; their low mantissa bytes are measurement noise that no compressor shrinks.
Each plane is therefore compressed only when a sample of it shrinks to under half: zlib spent
on noise takes most of a large point's encoding time and saves under 1% of its size.
A string array (numpy unicode) is one part, compressed by the same test. Lossless: values come
back bit for bit.

Format 1 (points stored before format 2) is a zlib-compressed .npz archive of the same shuffled
arrays plus a "__dtypes__" array; it is still read. A blob is format 2 when it starts with
MAGIC (a zlib stream starts with 0x78, so the two cannot be confused).

Writing: `layout` decides each part's codec and holds the compressed parts; a raw part is
made again from its array as the blob is written (`Layout.pieces`), so a blob can be written
out, a piece at a time, without ever being held whole. An array may be a numpy array or a
`Spooled` file of values (a ragged field of a large point,
benchmarks.storage.columnar.RequestEncoder).

Reading: `readers` gives each array a reader that returns its values whole or front to back,
inflating a zlib part only as far as it has been read.
"""

from __future__ import annotations

import io
import json
import struct
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import IO, Protocol

import numpy as np

MAGIC = b"HRCOLS\x00\x02"
FORMAT_VERSION = 2
_HEADER_LENGTH = struct.Struct("<I")

# Level 1: on timestamps' high bytes it compresses nearly as well as level 6, several times
# faster.
ZLIB_LEVEL = 1
# A byte plane is compressed when zlib shrinks a sample of it below this fraction. The sample
# is SAMPLE_SLICES slices of SAMPLE_SLICE_BYTES spread over the plane, so a plane that is noise
# only at its start (or only at its end) is judged on the whole. A plane that zlib brings only to
# 80-90% costs far more to compress than its saved bytes cost to store (docs/performance.md,
# "Dashboard").
COMPRESS_BELOW = 0.5
SAMPLE_SLICES = 4
SAMPLE_SLICE_BYTES = 16 * 1024
# Bytes of a raw part made at a time as a blob is written (of a spooled array: values).
PIECE_BYTES = 1 << 20
# zlib input fed at a time to a part being read: each call's unread input is copied
# (decompressobj's unconsumed_tail), so it is kept small.
INFLATE_INPUT_BYTES = 64 << 10


# -- writing ----------------------------------------------------------------------------------


class _Plane(Protocol):
    """One part of an array before it is stored: byte k of every value of a shuffled array, or
    an unshuffled array's own bytes."""

    @property
    def size(self) -> int: ...

    def span(self, start: int, end: int) -> bytes:
        """Bytes [start, end) of the part."""
        ...

    def pieces(self) -> Iterator[memoryview]:
        """The part's bytes in order, a bounded piece at a time."""
        ...


@dataclass
class _ArrayPlane:
    """Column k of an in-memory array's bytes (one row a value; width 1: the array's bytes)."""

    flat: np.ndarray
    k: int

    @property
    def size(self) -> int:
        return int(self.flat.shape[0])

    def span(self, start: int, end: int) -> bytes:
        return self.flat[start:end, self.k].tobytes()

    def pieces(self) -> Iterator[memoryview]:
        step = max(PIECE_BYTES, 1)
        for start in range(0, self.size, step):
            yield np.ascontiguousarray(self.flat[start : start + step, self.k]).data


@dataclass
class Spooled:
    """One ragged field of every request, its values back to back (little-endian) in a file."""

    spool: IO[bytes]
    dtype: np.dtype
    count: int


@dataclass
class _SpooledPlane:
    """Byte k of every value of a spooled ragged field, made from plain reads of its file: a
    bounded piece at a time, never the whole plane, and never mapped (the page cache of a
    mapped file would count as the process's own memory)."""

    values: Spooled
    k: int

    @property
    def size(self) -> int:
        return self.values.count

    def span(self, start: int, end: int) -> bytes:
        width = self.values.dtype.itemsize
        self.values.spool.seek(start * width)
        data = self.values.spool.read((end - start) * width)
        return np.frombuffer(data, np.uint8)[self.k :: width].tobytes()

    def pieces(self) -> Iterator[memoryview]:
        # Positions are kept here and sought before each read: pieces of two planes of one
        # file may be read in turn.
        step = max(PIECE_BYTES, 1)
        for start in range(0, self.size, step):
            yield memoryview(self.span(start, min(start + step, self.size)))


def _sample(plane: _Plane) -> bytes:
    """What a plane is judged on: SAMPLE_SLICES slices spread over it, or all of a small one."""
    if plane.size <= SAMPLE_SLICES * SAMPLE_SLICE_BYTES:
        return plane.span(0, plane.size)
    step = plane.size // SAMPLE_SLICES
    return b"".join(
        plane.span(i * step, i * step + SAMPLE_SLICE_BYTES) for i in range(SAMPLE_SLICES)
    )


def _encode_part(plane: _Plane) -> bytes | None:
    """The part compressed, or None: stored raw. zlib is fed the plane a piece at a time; the
    stream is the one zlib.compress makes of the whole plane (same settings, and deflate's
    output does not depend on how its input was cut)."""
    sample = _sample(plane)
    if len(zlib.compress(sample, ZLIB_LEVEL)) >= COMPRESS_BELOW * len(sample):
        return None
    compressor = zlib.compressobj(ZLIB_LEVEL)
    compressed = bytearray()
    for piece in plane.pieces():
        compressed += compressor.compress(piece)
    compressed += compressor.flush()
    return bytes(compressed) if len(compressed) < plane.size else None


def _planes(array: np.ndarray | Spooled) -> tuple[np.dtype, bool, list[_Plane]]:
    """The array's dtype, whether it is byte-shuffled, and its parts."""
    if isinstance(array, Spooled):
        return array.dtype, True, [_SpooledPlane(array, k) for k in range(array.dtype.itemsize)]
    array = np.ascontiguousarray(array)
    flat = array.view(np.uint8).reshape(-1, max(array.itemsize, 1))
    if array.dtype.kind in "fiu" and array.itemsize > 1:
        return array.dtype, True, [_ArrayPlane(flat, k) for k in range(array.itemsize)]
    return array.dtype, False, [_ArrayPlane(flat.reshape(-1, 1), 0)]


@dataclass
class Layout:
    """A blob as it will be stored (RequestEncoder.blob): its head, then each part compressed
    (held) or raw (None, made again from its plane as it is written), so a blob can be written
    out a piece at a time without being held whole."""

    head: bytes
    parts: list[tuple[bytes | None, _Plane]]

    @property
    def size(self) -> int:
        return len(self.head) + sum(
            plane.size if compressed is None else len(compressed)
            for compressed, plane in self.parts
        )

    def pieces(self) -> Iterator[bytes | memoryview]:
        yield self.head
        for compressed, plane in self.parts:
            if compressed is None:
                yield from plane.pieces()
            else:
                yield compressed

    def tobytes(self) -> bytearray:
        blob = bytearray(self.size)
        view, at = memoryview(blob), 0
        for piece in self.pieces():
            view[at : at + len(piece)] = piece
            at += len(piece)
        return blob


def layout(arrays: Mapping[str, np.ndarray | Spooled]) -> Layout:
    """Compress what shrinks and only measure the rest (a point's noisy low mantissa bytes, most
    of its size): the raw parts are made again as the blob is written."""
    entries = []
    parts: list[tuple[bytes | None, _Plane]] = []
    for name, array in arrays.items():
        dtype, shuffled, planes = _planes(array)
        codecs: list[list[object]] = []
        for plane in planes:
            compressed = _encode_part(plane)
            codecs.append(
                ["raw", plane.size] if compressed is None else ["zlib", len(compressed)]
            )
            parts.append((compressed, plane))
        entries.append({"name": name, "dtype": dtype.str, "shuffled": shuffled, "parts": codecs})
    header = json.dumps({"version": FORMAT_VERSION, "arrays": entries}).encode()
    return Layout(MAGIC + _HEADER_LENGTH.pack(len(header)) + header, parts)


def pack(arrays: Mapping[str, np.ndarray | Spooled]) -> bytearray:
    return layout(arrays).tobytes()


# -- reading ----------------------------------------------------------------------------------


class _PartReader:
    """One stored part read front to back: a raw part as views of the blob, a zlib part
    inflated only as far as it has been read, INFLATE_INPUT_BYTES of its input at a time (a
    plane of 100 million chunk times is never decompressed whole)."""

    def __init__(self, codec: str, part: memoryview) -> None:
        self._part = part
        self._at = 0
        self._inflate = zlib.decompressobj() if codec == "zlib" else None
        self._tail: bytes | memoryview = b""

    def whole(self) -> bytes | memoryview:
        return zlib.decompress(self._part) if self._inflate is not None else self._part

    def read(self, size: int) -> bytes | memoryview:
        if self._inflate is None:
            out = self._part[self._at : self._at + size]
            self._at += size
            if len(out) != size:
                raise ValueError("a stored part ends before its values do")
            return out
        pieces, got = [], 0
        while got < size:
            if not self._tail:
                self._tail = self._part[self._at : self._at + INFLATE_INPUT_BYTES]
                self._at += len(self._tail)
            piece = self._inflate.decompress(self._tail, size - got)
            self._tail = self._inflate.unconsumed_tail
            if not piece and not self._tail and self._at >= len(self._part):
                raise ValueError("a stored part ends before its values do")
            pieces.append(piece)
            got += len(piece)
        return b"".join(pieces)


class Reader(Protocol):
    def whole(self) -> np.ndarray:
        """Every value (in the host's byte order), however far the array has been read."""
        ...

    def read(self, count: int) -> np.ndarray:
        """The next `count` values, in the host's byte order."""
        ...


@dataclass
class _PlaneReader:
    """A format 2 array, read front to back from its parts."""

    dtype: np.dtype
    shuffled: bool
    parts: list[_PartReader]

    def whole(self) -> np.ndarray:
        return self._values([part.whole() for part in self.parts])

    def read(self, count: int) -> np.ndarray:
        width = 1 if self.shuffled else self.dtype.itemsize
        return self._values([part.read(count * width) for part in self.parts])

    def _values(self, planes: list[bytes | memoryview]) -> np.ndarray:
        native = self.dtype.newbyteorder("=")
        if not self.shuffled:  # copied: a view would keep the blob or a plane alive
            return np.frombuffer(planes[0], self.dtype).astype(native)
        out = np.empty((len(planes[0]), len(planes)), np.uint8)
        for k, plane in enumerate(planes):
            out[:, k] = np.frombuffer(plane, np.uint8)
        return out.view(self.dtype).reshape(-1).astype(native, copy=False)


@dataclass
class _ArrayReader:
    """A format 1 array: decoded whole with its archive, read out front to back."""

    values: np.ndarray
    at: int = 0

    def whole(self) -> np.ndarray:
        return self.values

    def read(self, count: int) -> np.ndarray:
        self.at += count
        return self.values[self.at - count : self.at]


def readers(blob: bytes | bytearray | memoryview) -> dict[str, Reader]:
    """A reader for every array of a blob; nothing of a format 2 blob is decompressed yet."""
    view = memoryview(blob)
    if format_version(view) == 1:
        return {name: _ArrayReader(array) for name, array in _unpack_format_1(view).items()}
    offset = len(MAGIC)
    (header_length,) = _HEADER_LENGTH.unpack_from(view, offset)
    offset += _HEADER_LENGTH.size
    header = json.loads(bytes(view[offset : offset + header_length]))
    offset += header_length
    readers: dict[str, Reader] = {}
    for entry in header["arrays"]:
        parts = []
        for codec, nbytes in entry["parts"]:
            parts.append(_PartReader(codec, view[offset : offset + nbytes]))
            offset += nbytes
        readers[entry["name"]] = _PlaneReader(np.dtype(entry["dtype"]), entry["shuffled"], parts)
    return readers


# -- a few arrays of a stored blob -------------------------------------------------------------

# What head_length needs of a blob: MAGIC and the header's length.
HEAD_PREFIX_BYTES = len(MAGIC) + _HEADER_LENGTH.size



def head_length(prefix: bytes | bytearray | memoryview) -> int | None:
    """How many bytes a format 2 blob's head (MAGIC, header length, header) takes, from its
    first HEAD_PREFIX_BYTES; None for a format 1 blob, which has no head to read apart."""
    view = memoryview(prefix)
    if bytes(view[: len(MAGIC)]) != MAGIC:
        return None
    if len(view) < HEAD_PREFIX_BYTES:
        raise ValueError("too few bytes of the blob to read its header's length")
    (header_length,) = _HEADER_LENGTH.unpack_from(view, len(MAGIC))
    return len(MAGIC) + _HEADER_LENGTH.size + header_length



def array_spans(head: bytes | bytearray | memoryview) -> dict[str, tuple[int, int]]:
    """Each array of a format 2 blob as (offset in the blob, bytes): its parts lie back to back
    there, so a reader that needs a few arrays of a large blob can fetch only those bytes
    (benchmarks.storage.points.stored_request_arrays) and make a blob of them with `subset`."""
    view = memoryview(head)
    length = head_length(view)
    if length is None or len(view) < length:
        raise ValueError("not the whole head of a format 2 blob")
    header = json.loads(bytes(view[len(MAGIC) + _HEADER_LENGTH.size : length]))
    spans, offset = {}, length
    for entry in header["arrays"]:
        size = sum(nbytes for _codec, nbytes in entry["parts"])
        spans[entry["name"]] = (offset, size)
        offset += size
    return spans


def subset(head: bytes | bytearray | memoryview, arrays: Mapping[str, bytes]) -> bytearray:
    """A format 2 blob of some arrays of another: `head` is that blob's head, `arrays` each
    chosen array's stored bytes (its span). readers() reads the same values from it as from
    the whole blob."""
    view = memoryview(head)
    length = head_length(view)
    if length is None or len(view) < length:
        raise ValueError("not the whole head of a format 2 blob")
    header = json.loads(bytes(view[len(MAGIC) + _HEADER_LENGTH.size : length]))
    entries = [entry for entry in header["arrays"] if entry["name"] in arrays]
    kept = json.dumps({**header, "arrays": entries}).encode()
    out = bytearray(MAGIC + _HEADER_LENGTH.pack(len(kept)) + kept)
    for entry in entries:
        data = arrays[entry["name"]]
        if len(data) != sum(nbytes for _codec, nbytes in entry["parts"]):
            raise ValueError(f"{entry['name']}: {len(data)} bytes, not its stored size")
        out += data
    return out


def unpack(blob: bytes | bytearray | memoryview) -> dict[str, np.ndarray]:
    """Every array of a blob, whole."""
    return {name: reader.whole() for name, reader in readers(blob).items()}


def _unpack_format_1(view: memoryview) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(zlib.decompress(view)), allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    for entry in arrays.pop("__dtypes__").tolist():
        name, dtype = entry.split("=", 1)
        arrays[name] = arrays[name].T.copy().view(np.dtype(dtype)).reshape(-1)
    return arrays


def format_version(blob: bytes | bytearray | memoryview) -> int:
    """2 for what layout and pack write, 1 for a format 1 (.npz) blob."""
    return FORMAT_VERSION if bytes(memoryview(blob)[: len(MAGIC)]) == MAGIC else 1
