"""Aggregates on hand-computed cases, plus an independent recomputation on random records.

vLLM's figures count from the actual send and one gap per chunk; Headroom's own (sched_*,
token_itl) from the intended send and per token. Each case below is worked out by hand.
"""

from __future__ import annotations

import math
import random
import statistics

import pytest

from runner.measure.metrics import aggregate, itls, token_itls, tpots, window_of
from runner.schema.plan import WorkloadSpec
from runner.schema.records import RequestRecord

WORKLOAD = WorkloadSpec(output_tokens=4, ignore_eos=True)


def ok(**fields) -> RequestRecord:
    return RequestRecord(status=200, finish_reason="length", **fields)


def three_requests() -> list[RequestRecord]:
    """Two completed requests (one sent 20 ms late) and one failed, worked out by hand below.

    a: intended 0.0, sent 0.01, chunks at 0.1, 0.2, 0.4 -> vLLM TTFT 90 ms, E2EL 390 ms;
       from the schedule 100 ms and 400 ms.
    b: intended 0.5, sent 0.52, chunks at 0.7, 1.0 -> vLLM TTFT 180 ms, E2EL 480 ms;
       from the schedule 200 ms and 500 ms.
    """
    a = ok(
        index=0, intended_send=0.0, actual_send=0.01, ttft=0.09, e2el=0.39, completed_at=0.45,
        chunk_times=[0.1, 0.2, 0.4], chunk_tokens=[1, 1, 2], prompt_tokens=10, output_tokens=4,
    )
    b = ok(
        index=1, intended_send=0.5, actual_send=0.52, ttft=0.18, e2el=0.48, completed_at=1.05,
        chunk_times=[0.7, 1.0], chunk_tokens=[1, 3], prompt_tokens=20, output_tokens=4,
    )
    failed = RequestRecord(
        index=2, intended_send=0.2, actual_send=0.21, completed_at=1.6, status=500,
        error="HTTP 500: boom",
    )
    return [a, b, failed]


def test_it_computes_the_window_from_the_benchmark_start_to_the_last_end_including_failures():
    window = window_of(three_requests())
    assert window is not None
    # vLLM's duration runs from the benchmark's start (the point's t0), not the first send.
    assert (window.start, window.end) == (0.0, 1.6)


def test_it_has_no_window_without_a_sent_request():
    assert window_of([RequestRecord(index=0, intended_send=0.0, error="cancelled")]) is None


def test_it_divides_completed_tokens_by_the_common_window():
    m = aggregate(three_requests(), WORKLOAD)
    assert m.duration == pytest.approx(1.6)
    assert (m.completed, m.failed, m.short_responses, m.valid) == (2, 1, 0, False)
    assert (m.total_input_tokens, m.total_output_tokens) == (30, 8)
    assert m.output_throughput == pytest.approx(8 / 1.6)
    assert m.request_throughput == pytest.approx(2 / 1.6)
    assert m.total_token_throughput == pytest.approx(38 / 1.6)


def test_it_summarises_vllm_ttft_and_e2el_from_the_actual_send():
    m = aggregate(three_requests(), WORKLOAD)
    # TTFT values 90 ms and 180 ms: p90 = 90 + 0.9 * (180 - 90).
    assert (m.mean_ttft_ms, m.median_ttft_ms, m.std_ttft_ms) == pytest.approx((135, 135, 45))
    assert (m.p90_ttft_ms, m.p95_ttft_ms, m.p99_ttft_ms) == pytest.approx((171, 175.5, 179.1))
    assert (m.mean_e2el_ms, m.std_e2el_ms, m.p99_e2el_ms) == pytest.approx((435, 45, 479.1))


def test_it_summarises_headroom_latency_from_the_intended_send_under_its_own_names():
    m = aggregate(three_requests(), WORKLOAD)
    # From the schedule: TTFT 100 and 200 ms, E2EL 400 and 500 ms; the 10-20 ms send lag shows.
    assert (m.mean_sched_ttft_ms, m.p90_sched_ttft_ms) == pytest.approx((150, 190))
    assert (m.mean_sched_e2el_ms, m.std_sched_e2el_ms, m.p99_sched_e2el_ms) == pytest.approx(
        (450, 50, 499)
    )


def test_it_computes_tpot_per_request_from_ttft_and_e2el():
    m = aggregate(three_requests(), WORKLOAD)
    # (0.39 - 0.09) / 3 and (0.48 - 0.18) / 3: both 100 ms.
    assert (m.mean_tpot_ms, m.std_tpot_ms) == pytest.approx((100, 0))


def test_it_leaves_single_token_requests_out_of_tpot():
    one = ok(index=0, intended_send=0, actual_send=0, ttft=0.1, e2el=0.1, completed_at=0.1,
             chunk_times=[0.1], chunk_tokens=[1], prompt_tokens=1, output_tokens=1)
    assert tpots([one]) == []


def test_it_keeps_one_itl_per_chunk_as_vllm_does():
    record = ok(index=0, intended_send=0, actual_send=0, ttft=0.0, e2el=0.5, completed_at=0.5,
                chunk_times=[0.0, 0.1, 0.5], chunk_tokens=[1, 1, 2], prompt_tokens=1,
                output_tokens=4)
    # vLLM: one gap per chunk, 0.1 s then 0.4 s, whatever the chunk carried.
    assert itls([record]) == pytest.approx([0.1, 0.4])


def test_it_splits_a_k_token_chunk_gap_into_k_per_token_latencies():
    record = ok(index=0, intended_send=0, actual_send=0, ttft=0.0, e2el=0.5, completed_at=0.5,
                chunk_times=[0.0, 0.1, 0.5], chunk_tokens=[1, 1, 2], prompt_tokens=1,
                output_tokens=4)
    # Headroom's token_itl: 0.1 s for one token, then 0.4 s for two tokens: 0.2 s each.
    assert token_itls([record]) == pytest.approx([0.1, 0.2, 0.2])


def test_it_skips_zero_token_chunks_and_keeps_their_time_in_the_next_gap():
    record = ok(index=0, intended_send=0, actual_send=0, ttft=0.0, e2el=0.3, completed_at=0.3,
                chunk_times=[0.0, 0.1, 0.3], chunk_tokens=[1, 0, 1], prompt_tokens=1,
                output_tokens=2)
    assert token_itls([record]) == pytest.approx([0.3])


def test_it_counts_the_chat_role_chunk_in_vllm_ttft_but_not_in_the_first_token():
    # Role chunk at 0.05 (no token), then tokens at 0.2 and 0.3.
    record = ok(index=0, intended_send=0.0, actual_send=0.0, ttft=0.05, e2el=0.3,
                completed_at=0.31, chunk_times=[0.05, 0.2, 0.3], chunk_tokens=[0, 1, 1],
                prompt_tokens=3, output_tokens=2)
    m = aggregate([record], WorkloadSpec(output_tokens=2))
    assert m.median_ttft_ms == pytest.approx(50)  # vLLM: first chunk with choices
    assert m.median_sched_ttft_ms == pytest.approx(200)  # Headroom: first chunk with a token
    assert itls([record]) == pytest.approx([0.15, 0.1])
    assert token_itls([record]) == pytest.approx([0.1])


def test_it_counts_short_responses_only_with_ignore_eos():
    records = three_requests()[:2]
    records[1] = records[1].model_copy(update={"output_tokens": 3, "chunk_tokens": [1, 2]})
    strict = aggregate(records, WORKLOAD)
    assert (strict.short_responses, strict.valid) == (1, False)
    lenient = aggregate(records, WORKLOAD.model_copy(update={"ignore_eos": False}))
    assert (lenient.short_responses, lenient.valid) == (0, True)


def test_it_counts_an_incomplete_response_as_completed_but_not_valid():
    records = three_requests()[:2]
    records[1] = records[1].model_copy(update={"incomplete": "stream ended without data: [DONE]"})
    m = aggregate(records, WORKLOAD)
    assert (m.completed, m.failed, m.incomplete_responses, m.valid) == (2, 0, 1, False)
    assert m.total_output_tokens == 8


def test_it_counts_a_response_without_usage_as_completed_with_no_tokens():
    records = three_requests()[:2]
    records[1] = records[1].model_copy(
        update={"output_tokens": None, "chunk_tokens": [], "incomplete": "no usage"}
    )
    m = aggregate(records, WORKLOAD)
    assert (m.completed, m.incomplete_responses, m.total_output_tokens) == (2, 1, 4)


def test_it_calls_a_run_valid_only_when_every_request_completed_in_full():
    assert aggregate(three_requests()[:2], WORKLOAD).valid is True
    assert aggregate([], WORKLOAD).valid is False


def test_it_reports_the_largest_send_lag():
    assert aggregate(three_requests(), WORKLOAD).max_send_lag_ms == pytest.approx(20)


def test_it_leaves_latency_stats_empty_when_nothing_completed():
    m = aggregate(three_requests()[2:], WORKLOAD)
    assert m.completed == 0 and m.output_throughput == 0
    assert m.mean_ttft_ms is None and m.p99_itl_ms is None and m.p99_token_itl_ms is None


def test_it_counts_goodput_as_requests_meeting_every_slo_per_second():
    # a: TTFT 90, TPOT 100, E2EL 390 ms; b: TTFT 180, TPOT 100, E2EL 480 ms; one failed.
    m = aggregate(three_requests(), WORKLOAD, {"ttft": 100, "tpot": 101})
    assert m.request_goodput == pytest.approx(1 / 1.6)  # only a meets TTFT <= 100 ms
    assert m.goodput_slos == {"ttft": 100, "tpot": 101}
    # Shares of all three requests: the failed one meets nothing.
    assert m.slo_attainment == pytest.approx({"ttft": 1 / 3, "tpot": 2 / 3, "all": 1 / 3})


def test_it_counts_an_slo_met_exactly_at_its_limit():
    m = aggregate(three_requests(), WORKLOAD, {"e2el": 480})
    assert m.slo_attainment["e2el"] == pytest.approx(2 / 3)
    assert aggregate(three_requests(), WORKLOAD, {"e2el": 479.9}).slo_attainment[
        "e2el"
    ] == pytest.approx(1 / 3)


def test_it_gives_a_one_token_request_a_tpot_of_zero_for_goodput_as_vllm_does():
    one = ok(index=0, intended_send=0, actual_send=0, ttft=0.1, e2el=0.1, completed_at=0.1,
             chunk_times=[0.1], chunk_tokens=[1], prompt_tokens=1, output_tokens=1)
    m = aggregate([one], WorkloadSpec(output_tokens=1), {"tpot": 0})
    assert m.slo_attainment["tpot"] == 1.0


def test_it_leaves_goodput_empty_without_slos():
    m = aggregate(three_requests(), WORKLOAD)
    assert (m.request_goodput, m.goodput_slos, m.slo_attainment) == (None, {}, {})


def test_it_summarises_connection_times():
    records = [r.model_copy(update={"connect_s": s}) for r, s in zip(three_requests(), (0.001, 0.0, 0.003), strict=True)]
    m = aggregate(records, WORKLOAD)
    assert (m.mean_connect_ms, m.max_connect_ms) == pytest.approx((4 / 3, 3))


# ---------------------------------------------------------------------------------------------
# Independent recomputation: plain Python, no numpy, written from the definitions.
# ---------------------------------------------------------------------------------------------


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    rank = p / 100 * (len(ordered) - 1)
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def random_records(rng: random.Random, n: int) -> list[RequestRecord]:
    records = []
    for i in range(n):
        intended = rng.uniform(0, 2)
        actual = intended + rng.uniform(0, 0.01)
        if rng.random() < 0.1:
            records.append(RequestRecord(index=i, intended_send=intended, actual_send=actual,
                                         completed_at=actual + 0.05, error="stalled"))
            continue
        sizes = [1] + [rng.choice([1, 2, 4]) for _ in range(rng.randint(0, 8))]
        times, t = [], actual + rng.uniform(0.05, 0.3)
        for _ in sizes:
            times.append(t)
            t += rng.uniform(0.001, 0.05)
        records.append(ok(index=i, intended_send=intended, actual_send=actual,
                          ttft=times[0] - actual, e2el=times[-1] - actual,
                          completed_at=times[-1] + 0.001, chunk_times=times, chunk_tokens=sizes,
                          prompt_tokens=rng.randint(5, 9), output_tokens=sum(sizes)))
    return records


def test_it_matches_an_independent_recomputation_on_random_records():
    records = random_records(random.Random(7), 200)
    m = aggregate(records, WorkloadSpec(output_tokens=1, ignore_eos=False))
    done = [r for r in records if r.error is None]
    duration = max(r.completed_at for r in records)  # from the point's t0
    assert m.duration == pytest.approx(duration)
    assert m.output_throughput == pytest.approx(sum(r.output_tokens for r in done) / duration)
    itl, token_itl = [], []
    for r in done:
        for j in range(1, len(r.chunk_times)):
            gap, k = r.chunk_times[j] - r.chunk_times[j - 1], r.chunk_tokens[j]
            itl.append(gap)
            token_itl += [gap / k] * k
    tpot = [(r.e2el - r.ttft) / (r.output_tokens - 1) for r in done if r.output_tokens > 1]
    sched_ttft = [r.chunk_times[0] - r.intended_send for r in done]
    for name, seconds in (
        ("itl", itl), ("token_itl", token_itl), ("tpot", tpot), ("ttft", [r.ttft for r in done]),
        ("sched_ttft", sched_ttft),
    ):
        ms = [s * 1000 for s in seconds]
        assert getattr(m, f"mean_{name}_ms") == pytest.approx(statistics.fmean(ms))
        assert getattr(m, f"median_{name}_ms") == pytest.approx(statistics.median(ms))
        assert getattr(m, f"std_{name}_ms") == pytest.approx(statistics.pstdev(ms))
        for p in (90, 95, 99):
            assert getattr(m, f"p{p}_{name}_ms") == pytest.approx(percentile(ms, p))
