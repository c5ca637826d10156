import json

import pytest

from benchmarks.models import Caveat, PointData
from benchmarks.storage import columnar
from benchmarks.storage.points import point_to_result, store_point
from runner.schema.records import EngineSample, RequestRecord
from runner.schema.result import Metrics
from tests.rows import (
    format_1_blob,
    make_benchmark,
    make_point_result,
    make_requests,
    make_samples,
)


def test_requests_survive_the_column_encoding_with_missing_values_and_ragged_chunks():
    records = make_requests(6, output_tokens=3, failed=2)
    records.append(RequestRecord(index=6, intended_send=1.0, chunk_times=[1.5],
                                        chunk_tokens=[5], output_tokens=5, status=200))
    assert columnar.decode_requests(columnar.encode_requests(records)) == records


def test_the_request_encoding_covers_every_field_of_the_schema():
    assert set(columnar.REQUEST_FIELDS) == set(RequestRecord.model_fields)


def test_samples_keep_every_schema_field_including_the_newer_ones():
    histogram = {"0.3": 2.0, "1.0": 5.0, "+Inf": 7.0}
    sample = EngineSample(t=1.0, running=3, **{
        name: histogram if field.annotation == dict[str, float] else 7.0
        for name, field in EngineSample.model_fields.items()
        if name not in ("t", "running", "replica")
    }, replica=2)
    assert columnar.decode_samples(columnar.encode_samples([sample])) == [sample]


def test_samples_stored_before_the_newer_fields_read_them_as_unknown():
    # A blob written before vLLM 0.32's fields existed has no array for them.
    sample = EngineSample(
        t=1.0, running=3, waiting=2, prefix_cache_hits_total=40.0,
        queue_time_buckets={"0.3": 1.0, "+Inf": 1.0}, replica=1)
    arrays = columnar._unpack(columnar.encode_samples([sample]))
    old = {name: array for name, array in arrays.items()
           if not name.startswith(("prefix_cache", "queue_time", "waiting_", "estimated_"))}
    (read,) = columnar.decode_samples(columnar._pack(old))
    assert (read.t, read.running, read.waiting, read.replica) == (1.0, 3, 2, 1)
    assert read.prefix_cache_hits_total is None and read.queue_time_buckets == {}


def test_an_empty_point_encodes_to_empty_lists():
    assert columnar.decode_requests(columnar.encode_requests([])) == []
    assert columnar.decode_samples(columnar.encode_samples([])) == []


def test_samples_survive_the_column_encoding():
    samples = make_samples(30)
    assert columnar.decode_samples(columnar.encode_samples(samples)) == samples


def test_a_large_point_is_stored_far_smaller_than_its_json():
    records = make_requests(4096, output_tokens=64)
    json_size = sum(len(r.model_dump_json()) for r in records)
    assert len(columnar.encode_requests(records)) < json_size / 4


@pytest.mark.django_db
def test_a_stored_point_reads_back_exactly_as_the_runner_produced_it():
    benchmark = make_benchmark(state="running")
    result = make_point_result(requests=25, samples=40)
    point = store_point(benchmark, result)
    assert point_to_result(point) == result
    data = PointData.objects.get(point=point)
    assert (data.request_count, data.sample_count) == (25, 40)


@pytest.mark.django_db
def test_storing_a_point_counts_it_and_keeps_the_best_throughput():
    benchmark = make_benchmark(state="running")
    store_point(benchmark, make_point_result(max_num_seqs=256, output_throughput=1000.0))
    store_point(benchmark, make_point_result(max_num_seqs=512, output_throughput=3000.0))
    store_point(benchmark, make_point_result(max_num_seqs=1024, output_throughput=2000.0))
    benchmark.refresh_from_db()
    assert benchmark.points_done == 3
    assert benchmark.best_output_throughput == 3000.0


@pytest.mark.django_db
def test_a_cpu_point_gets_the_cpu_caveat_and_a_gpu_point_does_not():
    benchmark = make_benchmark(state="running")
    # 100 requests: what the factory's figures complete, so no check of them fails.
    cpu = make_point_result(max_num_seqs=8, num_requests=100, launch_style="cpu")
    gpu = make_point_result(max_num_seqs=16, num_requests=100, launch_style="serve")
    cpu, gpu = store_point(benchmark, cpu), store_point(benchmark, gpu)
    assert list(cpu.caveats.values_list("code", flat=True)) == ["cpu-engine"]
    assert not gpu.caveats.exists()


@pytest.mark.django_db
def test_a_point_its_samples_left_mostly_uncovered_gets_the_sparse_samples_caveat():
    benchmark = make_benchmark(state="running")
    # The factory's window is 10 s.
    thin = make_point_result(max_num_seqs=8, num_requests=100, launch_style="serve", samples=2)
    thin.queue.max_gap_s = 6.0
    covered = make_point_result(max_num_seqs=16, num_requests=100, launch_style="serve")
    covered.queue.max_gap_s = 0.5
    thin_point, covered_point = store_point(benchmark, thin), store_point(benchmark, covered)
    caveat = thin_point.caveats.get()
    assert caveat.code == "sparse-queue-samples"
    assert "answered 2 time(s) in this 10.0 s point and 60% of it passed" in caveat.text
    assert "rest on too few samples" in caveat.text
    assert not covered_point.caveats.exists()


@pytest.mark.django_db
def test_a_point_no_sample_fell_inside_is_said_to_have_no_queue_figures():
    benchmark = make_benchmark(state="running")
    unsampled = make_point_result(max_num_seqs=8, num_requests=100, launch_style="serve", samples=0)
    unsampled.queue.max_gap_s = 10.0
    caveat = store_point(benchmark, unsampled).caveats.get()
    assert caveat.code == "sparse-queue-samples"
    assert "answered 0 time(s)" in caveat.text
    assert "the point has no running and waiting figures" in caveat.text


@pytest.mark.django_db
def test_a_point_whose_client_napped_says_its_stamps_can_be_late_by_the_nap():
    benchmark = make_benchmark(state="running")
    result = make_point_result(num_requests=100, launch_style="serve")
    result.client.idle_nap_us = 150
    caveat = store_point(benchmark, result).caveats.get()
    assert caveat.code == "client-nap" and caveat.kind == Caveat.Kind.METHOD
    assert "napped 150 µs" in caveat.text and "late by up to 150 µs" in caveat.text
    plain = make_point_result(num_requests=100, launch_style="serve", max_num_seqs=8)
    assert not store_point(benchmark, plain).caveats.exists()


@pytest.mark.django_db
def test_a_saturated_client_and_an_invalid_point_get_their_caveats():
    benchmark = make_benchmark(state="running")
    point = store_point(
        benchmark,
        make_point_result(num_requests=103, launch_style="serve", saturated=True, valid=False,
                          failed=3),
    )
    caveats = {c.code: c for c in Caveat.objects.filter(point=point)}
    assert set(caveats) == {"client-saturated", "invalid-point"}
    assert "event-loop lag" in caveats["client-saturated"].text
    assert "3 failed" in caveats["invalid-point"].text


@pytest.mark.django_db
def test_a_point_whose_aggregates_disagree_gets_a_caveat_with_the_numbers():
    benchmark = make_benchmark(state="running")
    # 25,600 output tokens / 10 s make 2,560 tok/s; the point claims 3,000.
    result = make_point_result(num_requests=100, launch_style="serve", completed=100,
                               total_output_tokens=25600, output_throughput=3000.0)
    point = store_point(benchmark, result)
    caveat = point.caveats.get()
    assert (caveat.code, caveat.kind, caveat.automatic) == (
        "inconsistent-aggregates", Caveat.Kind.METHOD, True)
    assert caveat.text == (
        "The stored aggregates disagree, so this point is left out of capacity and "
        "operating-point choices: output_throughput is 3,000.00/s but 25,600 output tokens "
        "over the 10 s window make 2,560.00/s (+17.2%); they must agree within 0.5%."
    )
    assert point.valid is True  # the row keeps the run's own validity: every request completed


@pytest.mark.django_db
def test_every_failed_check_of_a_point_is_named_in_its_one_caveat():
    benchmark = make_benchmark(state="running")
    # 1,000 requests sent, 100 accounted for; and a burst whose median exceeds its 10 s window.
    result = make_point_result(num_requests=1000, launch_style="serve", completed=100,
                               median_e2el_ms=12000.0)
    [caveat] = store_point(benchmark, result).caveats.all()
    assert caveat.code == "inconsistent-aggregates"
    assert caveat.text.endswith(
        "choices: 100 completed + 0 failed = 100 requests, but the load sent 1000. "
        "median_e2el_ms is 12,000.0 ms, longer than the burst's whole 10 s window: every "
        "request of a burst was sent and answered inside it."
    )


def test_every_metrics_aggregate_has_its_own_point_column():
    from benchmarks.models import Point

    columns = {field.name for field in Point._meta.get_fields()}
    assert set(Metrics.model_fields) <= columns


def test_points_stored_in_format_1_still_read_back():
    records = make_requests(5, output_tokens=3, failed=1)
    samples = make_samples(7)
    old_requests = format_1_blob(columnar._unpack(columnar.encode_requests(records)))
    old_samples = format_1_blob(columnar._unpack(columnar.encode_samples(samples)))
    assert columnar.format_version(old_requests) == 1
    assert columnar.decode_requests(old_requests) == records
    assert columnar.decode_samples(old_samples) == samples


def test_new_blobs_are_format_2():
    blob = columnar.encode_requests(make_requests(3))
    assert blob.startswith(columnar.MAGIC)
    assert columnar.format_version(blob) == 2


def test_timestamp_noise_is_stored_raw_and_the_shared_high_bytes_compressed():
    import numpy as np

    rng = np.random.default_rng(0)
    times = 100.0 + np.cumsum(rng.gamma(4.0, 0.006, 200_000))
    blob = columnar._pack({"t": times})
    start = len(columnar.MAGIC) + 4
    header = json.loads(blob[start : start + int.from_bytes(blob[start - 4 : start], "little")])
    codecs = [codec for codec, _ in header["arrays"][0]["parts"]]
    # Byte k of every value is part k (little-endian): low mantissa bytes are noise, kept raw;
    # the exponent and high mantissa bytes are shared, compressed.
    assert codecs[:4] == ["raw"] * 4
    assert codecs[6:] == ["zlib"] * 2
    assert len(blob) < 7 * len(times)
    assert np.array_equal(columnar._unpack(blob)["t"], times)


def test_chunk_token_counts_other_than_one_survive_the_all_ones_shortcut():
    records = make_requests(4, output_tokens=5)
    records[3] = records[3].model_copy(update={"chunk_tokens": [1, 1, 1, 1, 2]})
    decoded = columnar.decode_requests(columnar.encode_requests(records))
    assert [r.chunk_tokens for r in decoded] == [[1] * 5] * 3 + [[1, 1, 1, 1, 2]]


@pytest.mark.django_db
def test_point_blobs_skip_postgresql_own_compression():
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("a PostgreSQL storage setting")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT attname, attstorage FROM pg_attribute WHERE attrelid = "
            "'benchmarks_pointdata'::regclass AND attname IN ('requests', 'samples')"
        )
        assert dict(cursor.fetchall()) == {"requests": "e", "samples": "e"}


@pytest.mark.django_db
def test_the_run_page_never_reads_the_request_records(owner_client, monkeypatch):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    benchmark = make_benchmark(state="succeeded")
    # Recorded with the record of running while requests waited, as the sampler keeps it: a
    # point without it has its samples read to find it (tests/judgement/test_old_points.py).
    point = make_point_result(requests=50, samples=30)
    point.queue.running_while_waiting_s = {"8": 5.0, "7": 0.5}
    store_point(benchmark, point)

    def refuse(*args, **kwargs):
        raise AssertionError("the run page decoded stored records")

    monkeypatch.setattr(columnar, "decode_requests", refuse)
    monkeypatch.setattr(columnar, "_unpack", refuse)
    with CaptureQueriesContext(connection) as queries:
        response = owner_client.get(f"/runs/{benchmark.code}/")
    assert response.status_code == 200
    # The page may ask which points have samples (a count column); it never loads the blobs.
    blobs = ('"benchmarks_pointdata"."requests"', '"benchmarks_pointdata"."samples"')
    assert not [q for q in queries.captured_queries if any(b in q["sql"] for b in blobs)]
    assert all("sample_count" in q["sql"] for q in queries.captured_queries
               if "benchmarks_pointdata" in q["sql"])
