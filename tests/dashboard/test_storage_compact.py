"""The request blob is made from and read into compact arrays, a block of requests at a time."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import storage
from runner.schema import Float64Array, Int32Array, RequestRecord, ragged_fields


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
    monkeypatch.setattr(storage, "RAGGED_BLOCK_VALUES", block)
    made = records(60)
    back = storage.decode_requests(storage.encode_requests(made))
    assert back == made
    for old, new in zip(made, back, strict=True):
        assert type(new.chunk_times) is Float64Array and type(new.chunk_tokens) is Int32Array
        assert new.chunk_times.tobytes() == old.chunk_times.tobytes()


def test_the_blob_does_not_depend_on_the_block_size(monkeypatch):
    made = records(60)
    whole = storage.encode_requests(made)
    monkeypatch.setattr(storage, "RAGGED_BLOCK_VALUES", 3)
    assert storage.encode_requests(made) == whole


def test_every_ragged_field_is_stored_flat_with_its_lengths():
    made = records(10)
    arrays = storage._unpack(storage.encode_requests(made))
    for name in ragged_fields(RequestRecord):
        lengths = arrays[storage._lengths_name(name)]
        assert lengths.tolist() == [len(getattr(r, name)) for r in made]
        assert arrays[name].tolist() == [v for r in made for v in getattr(r, name)]
    # A ragged field no request fills is left out, and reads back empty.
    plain = [r.model_copy(update={"output_ids": Int32Array()}) for r in made]
    assert "output_ids" not in storage._unpack(storage.encode_requests(plain))
    assert storage.decode_requests(storage.encode_requests(plain)) == plain


def test_decoding_joins_no_more_than_a_block_of_values(monkeypatch):
    monkeypatch.setattr(storage, "RAGGED_BLOCK_VALUES", 50)
    joined = []
    values = storage._Planes.values

    made = records(60)

    def spy(self, start, end):
        if len(self) != len(made):  # a ragged field's values, not a per-request column
            joined.append(end - start)
        return values(self, start, end)

    monkeypatch.setattr(storage._Planes, "values", spy)
    storage.decode_requests(storage.encode_requests(made))
    longest = max(len(r.chunk_times) for r in made)
    assert joined and max(joined) <= max(50, longest) and sum(joined) > 50


def test_the_chunk_arrays_are_stored_even_when_no_request_has_a_chunk():
    # Code older than ragged_fields reads them unconditionally.
    failed = [RequestRecord(index=i, intended_send=0.0, error="refused") for i in range(3)]
    arrays = storage._unpack(storage.encode_requests(failed))
    assert {"chunk_times", "chunk_lengths", "chunk_tokens", "token_lengths"} <= set(arrays)
