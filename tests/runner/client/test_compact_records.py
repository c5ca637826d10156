"""Per-request chunk times and counts stay compact arrays end to end: in the record, through the
client worker's pickles, in result files (columnar batches) and in the metrics over them."""

from __future__ import annotations

import json
import pickle
import struct
from itertools import pairwise

import numpy as np
import pytest

from runner import results
from runner.client import workers
from runner.client.workers import record_batches
from runner.importer.files import load_result_file
from runner.measure import metrics
from runner.results import ResultFileError, append_point, finished_keys, read_points
from runner.schema.engine_config import EngineConfig
from runner.schema.plan import LoadSpec
from runner.schema.records import Float64Array, Int32Array, RequestRecord, ragged_fields
from runner.schema.result import PointResult
from tests import factories


def records(count: int, chunks: int, seed: int = 0) -> list[RequestRecord]:
    """Completed requests with jittered chunk times that no decimal rounding keeps exactly."""
    rng = np.random.default_rng(seed)
    out = []
    for index in range(count):
        n = int(rng.integers(1, chunks + 1))
        times = float(rng.uniform(0, 3)) + np.cumsum(rng.gamma(4.0, 0.005, n))
        out.append(RequestRecord(
            index=index, intended_send=float(rng.uniform(0, 1)), actual_send=0.1,
            chunk_times=times, chunk_tokens=rng.integers(0, 4, n), status=200,
            output_tokens=n, completed_at=float(times[-1]), ttft=float(times[0]),
            e2el=float(times[-1]), finish_reason="length",
        ))
    return out


def point(requests: list[RequestRecord], seqs: int = 8) -> PointResult:
    return factories.point_result(
        engine_config=EngineConfig(max_num_seqs=seqs),
        load=LoadSpec(num_requests=max(1, len(requests))), requests=requests,
        metrics=factories.metrics(completed=max(1, len(requests))),
    )


def bits(values: Float64Array) -> bytes:
    return struct.pack(f"<{len(values)}d", *values)


# -- the record -------------------------------------------------------------------------------


def test_a_record_built_from_lists_holds_typed_arrays():
    record = RequestRecord(index=0, intended_send=0.0, chunk_times=[0.1, 0.25],
                           chunk_tokens=[0, 3])
    assert type(record.chunk_times) is Float64Array and record.chunk_times.itemsize == 8
    assert type(record.chunk_tokens) is Int32Array and record.chunk_tokens.itemsize == 4
    assert record.chunk_times == [0.1, 0.25] and record.chunk_tokens == [0, 3]
    assert record.chunk_tokens != [0, 4]
    # Every ragged field is one of the compact types, so storage and files need not name them.
    assert set(ragged_fields(RequestRecord)) >= {"chunk_times", "chunk_tokens"}


def test_numpy_arrays_and_json_lists_validate_to_the_same_arrays():
    from_numpy = RequestRecord(index=0, intended_send=0.0, chunk_times=np.array([0.5, 1.5]),
                               chunk_tokens=np.array([1, 2], dtype=np.int64))
    from_json = RequestRecord.model_validate_json(from_numpy.model_dump_json())
    assert from_json == from_numpy and type(from_json.chunk_tokens) is Int32Array
    assert json.loads(from_numpy.model_dump_json())["chunk_times"] == [0.5, 1.5]


@pytest.mark.parametrize("bad", [[1.5], ["1"], [None], "12", [2**40]])
def test_token_counts_that_are_not_int32_are_refused(bad):
    with pytest.raises(ValueError, match="chunk_tokens"):
        RequestRecord(index=0, intended_send=0.0, chunk_tokens=bad)


def test_pickled_records_keep_their_arrays_as_raw_bytes():
    (record,) = records(1, 300)
    data = pickle.dumps(record, pickle.HIGHEST_PROTOCOL)
    back = pickle.loads(data)
    assert back == record and type(back.chunk_times) is Float64Array
    # 8 bytes a time and 4 a count, plus the record's scalars: a list would cost 9 and 2-5.
    assert len(data) < 12 * len(record.chunk_times) + 1500
    assert bits(back.chunk_times) == bits(record.chunk_times)


def test_client_workers_send_records_in_bounded_batches(monkeypatch):
    monkeypatch.setattr(workers, "RECORD_BATCH_VALUES", 500)
    made = records(40, 100)
    batches = record_batches(made)
    assert [r for batch in batches for r in batch] == made and len(batches) > 3
    for batch in batches:
        assert sum(len(r.chunk_times) + 1 for r in batch[:-1]) < 500
    assert record_batches([]) == []


# -- result files -----------------------------------------------------------------------------


@pytest.fixture
def small_batches(monkeypatch):
    monkeypatch.setattr(results, "BATCH_VALUES", 300)


def test_a_result_file_keeps_every_value_bit_for_bit_in_batches(tmp_path, small_batches):
    out = tmp_path / "results.jsonl"
    first, second = point(records(30, 50, seed=1), seqs=4), point(records(5, 9, seed=2), seqs=8)
    append_point(out, first)
    append_point(out, second)
    lines = out.read_bytes().splitlines()
    assert len(lines) > 6 and all(len(line) < 40_000 for line in lines)  # no giant line
    assert lines[0].startswith(results.BATCH_LINE_START)
    back = read_points(out)
    assert back.warnings == [] and back.points == [first, second]
    for old, new in zip(first.requests, back.points[0].requests, strict=True):
        assert type(new.chunk_times) is Float64Array and type(new.chunk_tokens) is Int32Array
        assert bits(new.chunk_times) == bits(old.chunk_times)
    assert finished_keys(out) == {first.key, second.key}
    (imported, _) = load_result_file(out)  # an importer tells the file by its first line
    assert imported == first


def test_a_file_with_requests_inline_still_reads(tmp_path):
    out = tmp_path / "old.jsonl"
    old = point(records(4, 6))
    out.write_text(old.model_dump_json() + "\n")  # how every point was written before batches
    (back,) = read_points(out).points
    assert back == old and type(back.requests[0].chunk_times) is Float64Array


def _cut_after(out, keep_lines: int) -> None:
    lines = out.read_bytes().splitlines(keepends=True)
    out.write_bytes(b"".join(lines[:keep_lines]))


def test_a_point_whose_line_never_came_is_skipped_as_cut_short(tmp_path, small_batches):
    out = tmp_path / "results.jsonl"
    append_point(out, point(records(3, 5), seqs=2))
    append_point(out, point(records(30, 50), seqs=4))
    whole = out.read_bytes().splitlines(keepends=True)
    _cut_after(out, len(whole) - 1)  # every batch of the second point, not its line
    result = read_points(out)
    assert [p.engine_config.max_num_seqs for p in result.points] == [2]
    assert "never came" in result.warnings[0] and "seqs=4" in result.warnings[0]
    out.write_bytes(b"".join(whole[:-2]) + whole[-2][:100])  # the last batch itself cut short
    result = read_points(out)
    assert len(result.points) == 1 and "cut short" in result.warnings[-1]


def test_a_resumed_run_skips_the_batches_of_the_point_it_lost(tmp_path, small_batches):
    out = tmp_path / "results.jsonl"
    append_point(out, point(records(30, 50), seqs=4))
    lines = out.read_bytes().splitlines(keepends=True)
    out.write_bytes(b"".join(lines[:2]) + lines[2][:50])  # killed mid-batch, no newline
    again = point(records(30, 50, seed=3), seqs=4)
    append_point(out, again)  # --resume measures it again
    result = read_points(out)
    assert result.points == [again]
    assert any("never came" in warning for warning in result.warnings)


def test_a_batch_that_follows_no_batch_is_refused(tmp_path, small_batches):
    out = tmp_path / "results.jsonl"
    append_point(out, point(records(30, 50)))
    lines = out.read_bytes().splitlines(keepends=True)
    out.write_bytes(b"".join([lines[0], *lines[2:]]))  # batch 1 lost
    with pytest.raises(ResultFileError, match=r"results.jsonl:2: request batch 2 .* no batch 1"):
        read_points(out)


def test_an_unreadable_batch_before_its_point_is_refused(tmp_path, small_batches):
    out = tmp_path / "results.jsonl"
    append_point(out, point(records(30, 50)))
    lines = out.read_bytes().splitlines(keepends=True)
    lines[-2] = lines[-2][:80] + b"\n"  # the point's last batch damaged, its line intact
    out.write_bytes(b"".join(lines))
    with pytest.raises(ResultFileError, match="cannot be read comes before the point"):
        read_points(out)


def test_a_batch_with_a_foreign_dtype_is_refused(tmp_path):
    out = tmp_path / "results.jsonl"
    append_point(out, point(records(2, 3)))
    lines = out.read_bytes().splitlines(keepends=True)
    lines[0] = lines[0].replace(b'"<f8"', b'"<f4"')
    out.write_bytes(b"".join(lines))
    with pytest.raises(ResultFileError, match=r":1: not a Headroom request batch: dtype '<f4'"):
        read_points(out)


# -- metrics over arrays ----------------------------------------------------------------------


def _token_itls_per_chunk(rs: list[RequestRecord]) -> list[float]:
    """The per-chunk loop the vectorised token_itls replaced."""
    out: list[float] = []
    for r in rs:
        previous = None
        for t, k in zip(r.chunk_times, r.chunk_tokens, strict=False):
            if k <= 0:
                continue
            if previous is not None:
                out.extend([(t - previous) / k] * k)
            previous = t
    return out


def test_vectorised_itls_equal_the_per_chunk_loops_bit_for_bit(monkeypatch):
    monkeypatch.setattr(metrics, "BLOCK_VALUES", 64)  # many blocks, records split across none
    rs = records(50, 40, seed=5)
    rs[3] = rs[3].model_copy(update={"chunk_tokens": []})  # no usage: no token ITLs
    rs[4] = rs[4].model_copy(update={"chunk_tokens": [2, 1]})  # fewer counts than chunks
    assert metrics.itls(rs) == [b - a for r in rs for a, b in pairwise(r.chunk_times)]
    assert metrics.token_itls(rs) == _token_itls_per_chunk(rs)


@pytest.mark.parametrize("kind", ["jitter", "ties", "equal", "narrow"])
def test_summaries_of_pools_too_big_to_hold_match_numpy(monkeypatch, kind):
    # 30,008 values: p90, p95 and p99 fall between two ranks, weighted below and above a half.
    rng = np.random.default_rng(9)
    values = rng.gamma(2.0, 0.01, 30_008) - (0.01 if kind == "jitter" else 0)
    if kind == "ties":
        values = np.round(values, 3)
    if kind == "equal":
        values = np.full(30_008, 0.0125)
    if kind == "narrow":  # one top-bits bucket holds them all: the selection goes a level down
        values = rng.uniform(0.016, 0.01601, 30_008)
    want = metrics.summary_ms("itl", values)
    monkeypatch.setattr(metrics, "POOL_IN_MEMORY", 1_000)
    got = metrics.summary_ms_blocks("itl", lambda: iter(np.array_split(values, 17)))
    for stat in ("median", "p90", "p95", "p99"):
        assert got[f"{stat}_itl_ms"] == want[f"{stat}_itl_ms"], stat  # exact order statistics
    assert got["mean_itl_ms"] == pytest.approx(want["mean_itl_ms"], rel=1e-12)
    assert got["std_itl_ms"] == pytest.approx(want["std_itl_ms"], rel=1e-9, abs=1e-12)


def test_aggregate_streams_big_pools_to_the_same_figures(monkeypatch):
    rs = records(200, 60, seed=11)
    spec = factories.point_result().workload
    whole = metrics.aggregate(rs, spec)
    monkeypatch.setattr(metrics, "POOL_IN_MEMORY", 500)
    monkeypatch.setattr(metrics, "BLOCK_VALUES", 128)
    streamed = metrics.aggregate(rs, spec)
    for name in ("itl", "token_itl"):
        for stat in ("median", "p90", "p95", "p99"):
            key = f"{stat}_{name}_ms"
            assert getattr(streamed, key) == getattr(whole, key), key
        assert getattr(streamed, f"mean_{name}_ms") == pytest.approx(
            getattr(whole, f"mean_{name}_ms"), rel=1e-12)


def test_a_point_missing_one_of_its_batches_is_refused(tmp_path, small_batches):
    out = tmp_path / "results.jsonl"
    append_point(out, point(records(30, 50)))
    lines = out.read_bytes().splitlines(keepends=True)
    out.write_bytes(b"".join([*lines[:-2], lines[-1]]))  # its last batch lost, its line intact
    with pytest.raises(ResultFileError, match=rf":{len(lines) - 1}: the point has \d+ of its"):
        read_points(out)


def test_batches_left_by_a_lost_point_do_not_go_to_the_next_point(tmp_path, small_batches):
    out = tmp_path / "results.jsonl"
    append_point(out, point(records(30, 50), seqs=4))
    _cut_after(out, len(out.read_bytes().splitlines()) - 1)  # its line never written
    empty = point([], seqs=8)
    append_point(out, empty)
    result = read_points(out)
    assert result.points == [empty] and "never came" in result.warnings[0]


def test_streamed_percentiles_interpolate_as_numpy_at_every_weight(monkeypatch):
    monkeypatch.setattr(metrics, "POOL_IN_MEMORY", 100)
    rng = np.random.default_rng(21)
    for count in range(1_001, 1_101):  # weights all over [0, 1) for p90, p95, p99
        values = rng.gamma(2.0, 0.01, count)
        got = metrics.summary_ms_blocks("itl", lambda v=values: iter(np.array_split(v, 3)))
        want = metrics.summary_ms("itl", values)
        for stat in ("median", "p90", "p95", "p99"):
            assert got[f"{stat}_itl_ms"] == want[f"{stat}_itl_ms"], (count, stat)


def test_a_batch_of_more_records_than_a_batch_holds_is_refused_before_they_are_built(
    tmp_path, monkeypatch
):
    out = tmp_path / "results.jsonl"
    append_point(out, point(records(30, 5)))  # one batch of 30
    monkeypatch.setattr(results, "BATCH_RECORDS", 29)
    with pytest.raises(ResultFileError, match=r":1: not a Headroom request batch: over 29 records"):
        read_points(out)
