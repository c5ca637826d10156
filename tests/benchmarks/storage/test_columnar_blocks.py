"""The request blob is made from and read into compact arrays, a block of requests at a time."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.storage import blobs, columnar
from runner.schema.records import Float64Array, Int32Array, RequestRecord, ragged_fields
from tests.rows import format_1_blob


def records(count: int) -> list[RequestRecord]:
    rng = np.random.default_rng(4)
    out = []
    for index in range(count):
        n = int(rng.integers(0, 40))
        out.append(RequestRecord(
            index=index, intended_send=0.0, chunk_times=np.cumsum(rng.gamma(3.0, 0.01, n)),
            chunk_tokens=rng.integers(0, 3, n), status=200 if n else None,
            output_ids=rng.integers(0, 150_000, n) if index % 3 else [],
        ))
    return out


@pytest.mark.parametrize("block", [1, 7, 50, 1 << 20])
def test_requests_round_trip_bit_for_bit_whatever_the_block(monkeypatch, block):
    monkeypatch.setattr(columnar, "RAGGED_BLOCK_VALUES", block)
    made = records(60)
    back = columnar.decode_requests(columnar.encode_requests(made))
    assert back == made
    for old, new in zip(made, back, strict=True):
        assert type(new.chunk_times) is Float64Array and type(new.chunk_tokens) is Int32Array
        assert new.chunk_times.tobytes() == old.chunk_times.tobytes()


def test_the_blob_does_not_depend_on_the_block_size(monkeypatch):
    made = records(60)
    whole = columnar.encode_requests(made)
    monkeypatch.setattr(columnar, "RAGGED_BLOCK_VALUES", 3)
    assert columnar.encode_requests(made) == whole


def test_every_ragged_field_is_stored_flat_with_its_lengths():
    made = records(10)
    arrays = columnar._unpack(columnar.encode_requests(made))
    for name in ragged_fields(RequestRecord):
        lengths = arrays[columnar._lengths_name(name)]
        assert lengths.tolist() == [len(getattr(r, name)) for r in made]
        assert arrays[name].tolist() == [v for r in made for v in getattr(r, name)]
    # A ragged field no request fills is left out, and reads back empty.
    plain = [r.model_copy(update={"output_ids": Int32Array()}) for r in made]
    assert "output_ids" not in columnar._unpack(columnar.encode_requests(plain))
    assert columnar.decode_requests(columnar.encode_requests(plain)) == plain


def test_the_blocks_are_the_decoded_records_in_order_over_several_blocks(monkeypatch):
    monkeypatch.setattr(columnar, "RAGGED_BLOCK_VALUES", 50)
    made = records(60)
    blob = columnar.encode_requests(made)
    blocks = list(columnar.iter_request_blocks(blob))
    assert len(blocks) > 5 and [r for block in blocks for r in block] == made
    assert columnar.decode_requests(blob) == made
    # A block holds requests while their ragged values together stay under the bound; a
    # request longer than the bound is a block of its own.
    for block in blocks:
        values = sum(len(getattr(r, name)) for r in block for name in ragged_fields(RequestRecord))
        assert len(block) == 1 or values < 50


def test_requests_without_chunks_still_come_a_bounded_block_at_a_time(monkeypatch):
    monkeypatch.setattr(columnar, "BLOCK_RECORDS", 4)
    failed = [RequestRecord(index=i, intended_send=0.0, error="refused") for i in range(10)]
    blocks = list(columnar.iter_request_blocks(columnar.encode_requests(failed)))
    assert [len(block) for block in blocks] == [4, 4, 2]
    assert [r for block in blocks for r in block] == failed


def test_an_empty_blob_has_no_blocks():
    blob = columnar.encode_requests([])
    assert list(columnar.iter_request_blocks(blob)) == [] and columnar.decode_requests(blob) == []


def test_a_format_1_blob_reads_a_block_at_a_time_too(monkeypatch):
    made = records(30)
    old = format_1_blob(columnar._unpack(columnar.encode_requests(made)))
    monkeypatch.setattr(columnar, "RAGGED_BLOCK_VALUES", 40)
    blocks = list(columnar.iter_request_blocks(old))
    assert len(blocks) > 3 and [r for block in blocks for r in block] == made


def test_decoding_never_inflates_a_ragged_plane_whole(monkeypatch):
    """Only the per-request columns (the index, the lengths) are read whole; every other part is
    read, and inflated, a block's worth at a time."""
    monkeypatch.setattr(columnar, "RAGGED_BLOCK_VALUES", 50)
    monkeypatch.setattr(blobs, "INFLATE_INPUT_BYTES", 16)
    made = records(60)
    blob = columnar.encode_requests(made)
    most = max(len(block) for block in columnar.iter_request_blocks(blob))
    widest = max(array.itemsize for array in columnar._unpack(blob).values())
    reads, wholes = [], []
    read, whole = blobs._PartReader.read, blobs._PlaneReader.whole

    def spy_read(self, size):
        reads.append(size)
        return read(self, size)

    def spy_whole(self):
        values = whole(self)
        wholes.append(len(values))
        return values

    monkeypatch.setattr(blobs._PartReader, "read", spy_read)
    monkeypatch.setattr(blobs._PlaneReader, "whole", spy_whole)
    assert columnar.decode_requests(blob) == made
    assert wholes and set(wholes) == {len(made)}
    # A ragged plane is read a block's values at a time (a request longer than the block
    # alone), a per-request column a block's requests at a time; never a plane whole.
    longest = max(len(r.chunk_times) + len(r.chunk_tokens) + len(r.output_ids) for r in made)
    assert max(reads) <= max(50, longest, most * widest)
    assert max(reads) < sum(len(r.chunk_times) for r in made)


def test_the_chunk_arrays_are_stored_even_when_no_request_has_a_chunk():
    # Code older than ragged_fields reads them unconditionally.
    failed = [RequestRecord(index=i, intended_send=0.0, error="refused") for i in range(3)]
    arrays = columnar._unpack(columnar.encode_requests(failed))
    assert {"chunk_times", "chunk_lengths", "chunk_tokens", "token_lengths"} <= set(arrays)


PARITY_READS = ("index", "error", "status", "prompt_digest", "output_ids", "output_text")


def with_strings(made: list[RequestRecord]) -> list[RequestRecord]:
    return [
        r.model_copy(update={
            "prompt_digest": f"{r.index * 2654435761 % 2**64:016x}",
            "output_text": f"text {r.index}" if r.index < 4 else None,
            "error": "refused" if r.index % 9 == 4 else None,
        })
        for r in made
    ]


@pytest.mark.parametrize("fields", [PARITY_READS, ("chunk_times", "ttft"), ("index",)])
def test_the_columns_are_the_decoded_records_fields(monkeypatch, fields):
    monkeypatch.setattr(columnar, "RAGGED_BLOCK_VALUES", 30)
    made = with_strings(records(50))
    blob = columnar.encode_requests(made)
    columns = columnar.request_columns(blob, fields)
    decoded = columnar.decode_requests(blob)
    assert set(columns.values) == set(fields)
    for name in fields:
        assert columns.values[name] == [getattr(r, name) for r in decoded], name
    for name in ragged_fields(RequestRecord):
        assert columns.lengths[name].tolist() == [len(getattr(r, name)) for r in decoded]
    if "output_ids" in fields:
        assert all(type(ids) is Int32Array for ids in columns.values["output_ids"])


def test_a_column_the_blob_predates_reads_as_the_fields_default():
    made = with_strings(records(20))
    arrays = columnar._unpack(columnar.encode_requests(made))
    for name in ("prompt_digest", "output_ids", "output_ids:lengths", "max_tokens"):
        del arrays[name]
    old = columnar._pack(arrays)
    fields = ("index", "prompt_digest", "output_ids", "max_tokens", "status")
    columns = columnar.request_columns(old, fields)
    decoded = columnar.decode_requests(old)
    for name in fields:
        assert columns.values[name] == [getattr(r, name) for r in decoded], name
    assert columns.values["prompt_digest"] == [None] * 20
    assert columns.values["output_ids"] == [[]] * 20
    assert columns.values["status"] == [r.status for r in made]
    assert columns.lengths["output_ids"].tolist() == [0] * 20


def test_columns_read_from_format_1_blobs_and_empty_ones():
    made = with_strings(records(12))
    old = format_1_blob(columnar._unpack(columnar.encode_requests(made)))
    columns = columnar.request_columns(old, PARITY_READS)
    assert columns.values["output_ids"] == [r.output_ids for r in made]
    assert columns.values["prompt_digest"] == [r.prompt_digest for r in made]
    empty = columnar.request_columns(columnar.encode_requests([]), PARITY_READS)
    assert empty.values == {name: [] for name in PARITY_READS}


def test_a_name_that_is_no_field_is_refused():
    with pytest.raises(ValueError, match="not RequestRecord fields"):
        columnar.request_columns(columnar.encode_requests(records(2)), ("index", "chunk_count"))
