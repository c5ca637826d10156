"""The request blob made a block at a time (RequestEncoder: the import and the worker) is byte
for byte the blob encode_requests has always made of the same records."""

from __future__ import annotations

import json
import math
import struct
import zlib

import numpy as np
import pytest

from benchmarks.models import PointData
from benchmarks.storage import blobs, columnar
from benchmarks.storage.imports import import_file
from benchmarks.storage.points import store_point
from judgement import request_timeline
from runner import results
from runner.schema.records import RequestRecord, ragged_fields
from tests.rows import make_benchmark, make_point_result


def varied_records(count: int = 260) -> list[RequestRecord]:
    """Records with every field used, missing values among them, ragged fields of 0-600 values
    (planes past the 64 KB a sample takes whole), noisy times and repetitive counts, so that
    some planes are stored raw and others compressed."""
    out = []
    for i in range(count):
        n = (i * 37) % 601
        send = i * 0.0125
        times, t = [], send + 0.05 + (i % 13) * 0.001
        for k in range(n):
            t += 0.02 + ((i * 7919 + k * 104729) % 1000) * 1e-6
            times.append(t)
        ok = i % 17 != 5
        out.append(RequestRecord(
            index=i, replica=i % 2, intended_send=send,
            actual_send=send + 0.0004 if ok else None,
            connect_s=0.0002 if i % 3 else None,
            ttft=times[0] - send if times else None,
            e2el=times[-1] - send if times else None,
            completed_at=times[-1] if times else None,
            chunk_times=times, chunk_tokens=[1 + (k % 50 == 7) for k in range(n)],
            prompt_tokens=64 + i % 5, output_tokens=n if ok else None,
            max_tokens=600 if i % 4 == 0 else None,
            conversation=i // 3 if i % 2 else None, turn=1 + i % 3 if i % 2 else None,
            finish_reason="length" if ok else None, status=200 if ok else 503,
            error=None if ok else "HTTP 503: overloaded",
            incomplete="no [DONE]" if i == 9 else None,
            prompt_digest=f"{(i * 2654435761) % 2**64:016x}",
            output_ids=[(i * 31 + k * 17) % 151_000 for k in range(n)] if i % 3 == 0 else [],
            output_text=f"text of request {i}" if i < 4 else None,
        ))
    return out


def whole_array_blob(records: list[RequestRecord]) -> bytes:
    """Format 2 as encode_requests wrote it before blocks and spilled files: every array made
    whole, every plane judged and compressed whole by zlib.compress."""
    arrays: dict[str, np.ndarray] = {}
    for name in columnar._REQUEST_FLOATS:
        values = [getattr(r, name) for r in records]
        arrays[name] = np.array([math.nan if v is None else v for v in values], np.float64)
    for name in columnar._REQUEST_INTS:
        values = [getattr(r, name) for r in records]
        arrays[name] = np.array([-1 if v is None else v for v in values], np.int64)
    for name in columnar._REQUEST_STRINGS:
        arrays[name] = np.array([getattr(r, name) or "" for r in records], np.str_)
    for name, kind in ragged_fields(RequestRecord).items():
        lengths = np.array([len(getattr(r, name)) for r in records], np.int64)
        if name not in ("chunk_times", "chunk_tokens") and not lengths.any():
            continue
        arrays[name] = np.array([v for r in records for v in getattr(r, name)], kind.DTYPE)
        arrays[columnar._lengths_name(name)] = lengths
    entries, parts = [], []
    for name, array in arrays.items():
        shuffled = array.dtype.kind in "fiu" and array.itemsize > 1
        flat = array.view(np.uint8).reshape(-1, array.itemsize)
        planes = [flat[:, k].tobytes() for k in range(array.itemsize)] if shuffled else [
            array.tobytes()]
        codecs = []
        for plane in planes:
            step = len(plane) // 4
            sample = plane if len(plane) <= 4 * 16384 else b"".join(
                plane[i * step : i * step + 16384] for i in range(4))
            packed = zlib.compress(plane, 1)
            if len(zlib.compress(sample, 1)) < 0.5 * len(sample) and len(packed) < len(plane):
                codecs.append(["zlib", len(packed)])
                parts.append(packed)
            else:
                codecs.append(["raw", len(plane)])
                parts.append(plane)
        entries.append({"name": name, "dtype": array.dtype.str, "shuffled": shuffled,
                        "parts": codecs})
    header = json.dumps({"version": 2, "arrays": entries}).encode()
    return columnar.MAGIC + struct.pack("<I", len(header)) + header + b"".join(parts)


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of a few requests, pieces of 1,000 bytes (or values), and every ragged field
    spilled to disk past 4 KB."""
    monkeypatch.setattr(columnar, "RAGGED_BLOCK_VALUES", 1000)
    monkeypatch.setattr(blobs, "PIECE_BYTES", 1000)
    monkeypatch.setattr(columnar, "SPOOL_MEMORY_BYTES", 4096)


def test_the_blob_is_the_one_made_of_whole_arrays():
    made = varied_records()
    blob = columnar.encode_requests(made)
    codecs = {c for entry in json.loads(blob[12 : 12 + int.from_bytes(blob[8:12], "little")])[
        "arrays"] for c, _ in entry["parts"]}
    assert codecs == {"raw", "zlib"}  # both kinds of part are exercised
    assert blob == whole_array_blob(made)


def test_blocks_and_spilled_files_make_the_same_blob_every_way(small_blocks):
    made = varied_records()
    expected = whole_array_blob(made)
    assert columnar.encode_requests(made) == expected
    with columnar.RequestEncoder() as encoder:
        for start in range(0, len(made), 37):  # batches as a file's lines bring them
            encoder.add(made[start : start + 37])
        assert encoder.count == len(made)
        layout = encoder.blob()
        assert layout.size == len(expected)
        pieces = list(layout.pieces())
        assert len(pieces) > 50 and b"".join(bytes(p) for p in pieces) == expected
        assert encoder.blob().tobytes() == expected  # laid out once, written as often as asked
    given = list(made)
    with columnar.RequestEncoder() as encoder:
        encoder.take(given)
        assert given == [] and encoder.blob().tobytes() == expected
    assert columnar.decode_requests(expected) == made


def test_an_encoder_refuses_records_after_its_blob_is_laid_out():
    with columnar.RequestEncoder() as encoder:
        encoder.add(varied_records(3))
        encoder.blob()
        with pytest.raises(RuntimeError):
            encoder.add(varied_records(1))


@pytest.mark.django_db
def test_store_point_stores_the_blob_encode_requests_makes(small_blocks):
    result = make_point_result()
    result.requests = varied_records(120)
    point = store_point(make_benchmark(state="succeeded"), result)
    data = PointData.objects.get(point=point)
    assert bytes(data.requests) == whole_array_blob(result.requests)
    assert data.request_count == 120 and bytes(data.samples) == columnar.encode_samples(
        result.samples)


@pytest.mark.django_db
def test_a_point_whose_records_were_given_up_is_stored_whole(small_blocks):
    result = make_point_result()
    result.requests = varied_records(120)
    expected = whole_array_blob(result.requests)
    with columnar.RequestEncoder() as requests:
        requests.take(result.requests)  # as the worker gives up a point it measured
        point = store_point(make_benchmark(state="succeeded"), result, requests=requests)
    assert result.requests == []
    data = PointData.objects.get(point=point)
    assert bytes(data.requests) == expected and data.request_count == 120


@pytest.mark.django_db
def test_an_import_encodes_each_batch_as_it_reads_it(tmp_path, monkeypatch, small_blocks):
    monkeypatch.setattr(results, "BATCH_VALUES", 2000)  # several batch lines
    result = make_point_result()
    result.requests = varied_records(120)
    path = tmp_path / "big.jsonl"
    results.append_point(path, result)
    assert sum(line.startswith(results.BATCH_LINE_START) for line in path.open("rb")) > 5
    joined = []
    monkeypatch.setattr(results.RecordList, "add", lambda self, records: joined.append(records))
    added = []
    add = columnar.RequestEncoder.add

    def spy(self, records):
        added.append(len(records))
        add(self, records)

    monkeypatch.setattr(columnar.RequestEncoder, "add", spy)
    benchmark = import_file(path)
    data = PointData.objects.get(point__benchmark=benchmark)
    assert bytes(data.requests) == whole_array_blob(result.requests)
    # A batch at a time into the encoder; never joined into the point.
    assert joined == [] and len(added) > 5 and sum(added) == 120


@pytest.mark.django_db
def test_every_imported_record_is_still_validated(tmp_path, monkeypatch):
    from benchmarks.storage.imports import ImportFileError

    monkeypatch.setattr(results, "BATCH_VALUES", 2000)
    result = make_point_result()
    result.requests = varied_records(60)
    path = tmp_path / "bad.jsonl"
    results.append_point(path, result)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b'"prompt_tokens":', b'"prompt_tokens":"many","x":', 1)
    path.write_bytes(b"".join(lines))
    with pytest.raises(ImportFileError, match=r"bad.jsonl:3: not a Headroom point: records\."):
        import_file(path)
    assert not PointData.objects.exists()


@pytest.mark.django_db
def test_a_stored_blob_is_read_back_whole_from_its_pieces(monkeypatch):
    from benchmarks.storage import points

    monkeypatch.setattr(points, "READ_PIECE_BYTES", 4096)  # tens of pieces
    result = make_point_result()
    result.requests = varied_records(120)
    point = store_point(make_benchmark(state="succeeded"), result)
    blob = points.stored_requests(point)
    assert len(blob) > 20 * 4096 and bytes(blob) == whole_array_blob(result.requests)
    PointData.objects.filter(point=point).delete()
    assert points.stored_requests(point) is None


# What the request timeline reads of each request.
TIMELINE_FIELDS = request_timeline.FIELDS


@pytest.mark.django_db
def test_a_few_columns_are_read_alone_and_equal_the_whole_blobs(monkeypatch):
    from benchmarks.storage import points

    monkeypatch.setattr(points, "HEAD_READ_BYTES", 64)  # the head takes a second read
    result = make_point_result()
    result.requests = varied_records(300)
    point = store_point(make_benchmark(state="succeeded"), result)
    read: list[int] = []
    subset = blobs.subset
    monkeypatch.setattr(blobs, "subset", lambda head, arrays: read.append(
        sum(map(len, arrays.values()))) or subset(head, arrays))
    found = points.stored_request_arrays(point, TIMELINE_FIELDS)
    whole = points.stored_requests(point)
    expected = columnar.request_arrays(whole, TIMELINE_FIELDS)
    assert found.keys() == expected.keys()
    for name in TIMELINE_FIELDS:
        assert found[name].dtype == expected[name].dtype
        assert np.array_equal(found[name], expected[name], equal_nan=True), name
    assert np.isnan(found["ttft"][0])  # a request with no chunk: no first token
    assert read and read[0] < len(whole) / 10  # the chunk times stayed in the database
    PointData.objects.filter(point=point).delete()
    assert points.stored_request_arrays(point, TIMELINE_FIELDS) is None


@pytest.mark.django_db
def test_a_format_1_blob_gives_its_columns_read_whole():
    from benchmarks.storage import points
    from tests.rows import format_1_blob

    records = varied_records(40)
    point = store_point(make_benchmark(state="succeeded"), make_point_result())
    old = format_1_blob(columnar._unpack(columnar.encode_requests(records)))
    PointData.objects.filter(point=point).update(requests=old)
    found = points.stored_request_arrays(point, TIMELINE_FIELDS)
    assert found["index"].tolist() == list(range(40))
    assert found["intended_send"].tolist() == [r.intended_send for r in records]


def test_a_subset_blob_refuses_an_array_of_the_wrong_size():
    blob = columnar.encode_requests(varied_records(10))
    head = bytes(blob[: blobs.head_length(blob[: blobs.HEAD_PREFIX_BYTES])])
    offset, size = blobs.array_spans(head)["index"]
    assert columnar.request_arrays(
        blobs.subset(head, {"index": blob[offset : offset + size]}), ["ttft"]
    )["ttft"].shape == (10,)  # a field the subset lacks reads as missing
    with pytest.raises(ValueError, match=r"index: .* not its stored size"):
        blobs.subset(head, {"index": blob[offset : offset + size - 1]})
