"""The open-loop schedule equals `vllm bench serve`'s, and max_concurrency caps what is in flight.

vLLM's own `get_request` (vllm/benchmarks/serve.py, 0.32) is driven for real: its clock is
frozen at 0 and its sleep only records, so every sleep it asks for is exactly its intended
delay for that request (0 + delay - 0 == delay in floating point).
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace

import numpy as np
import pytest
import vllm.benchmarks.serve as vllm_serve
from pydantic import ValidationError
from vllm.benchmarks.datasets import SampleRequest

from runner.client.schedule import Target, plan_jobs, send_offsets
from runner.client.workers import run_load
from runner.schema.plan import ClientSpec, LoadSpec, WorkloadSpec
from runner.schema.records import RequestRecord
from runner.schema.result import PointResult
from runner.workloads.prompts import Prompt, build_prompts
from tests.runner.fakeserver import FakeVllm
from tests.runner.importer.test_results_and_import import make_point

SEEDS = (0, 1, 42)
BURSTINESS = (0.5, 1.0, 3.0, math.inf)
RATE = 7.3  # not a round number: a scale that happens to be exact in binary cannot hide a slip
NUM_REQUESTS = 200
FAST_CLIENT = ClientSpec(request_timeout_s=10, stall_timeout_s=2)


@contextmanager
def seeded_global_rng(seed: int) -> Iterator[None]:
    """np.random.seed(seed) as vLLM's main_async does, and the caller's RNG state back after."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


def vllm_send_times(
    monkeypatch: pytest.MonkeyPatch, n: int, rate: float, burstiness: float, seed: int
) -> list[float]:
    """The intended send times vLLM's get_request computes for n requests, without sleeping."""
    asked: list[float] = []

    async def record_sleep(seconds: float) -> None:
        asked.append(seconds)

    # Only serve.py's own names change; the event loop running this test keeps the real ones.
    monkeypatch.setattr(vllm_serve, "asyncio", SimpleNamespace(sleep=record_sleep))
    monkeypatch.setattr(vllm_serve, "time", SimpleNamespace(time=lambda: 0.0))
    requests = [SampleRequest(prompt=f"p{i}", prompt_len=1, expected_output_len=1) for i in range(n)]

    async def drive() -> list[float]:
        sends = []
        async for _request, _rate in vllm_serve.get_request(requests, rate, burstiness):
            # get_request sleeps (or, for a delay of 0, does not) just before it yields.
            sends.append(asked.pop() if asked else 0.0)
        return sends

    with seeded_global_rng(seed):
        return asyncio.run(drive())


def rate_load(burstiness: float = 1.0, **fields: object) -> LoadSpec:
    spec = {"shape": "rate", "num_requests": NUM_REQUESTS, "rate": RATE, "burstiness": burstiness}
    return LoadSpec.model_validate({**spec, **fields})


def in_flight_peak(records: list[RequestRecord]) -> int:
    """The most requests between their actual send and completion at any one send instant."""
    spans = [(r.actual_send, r.completed_at) for r in records]
    return max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)


# ---------------------------------------------------------------------------------------------
# The schedule
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("burstiness", BURSTINESS)
def test_it_sends_at_the_times_vllm_bench_serve_would(monkeypatch, seed, burstiness):
    expected = vllm_send_times(monkeypatch, NUM_REQUESTS, RATE, burstiness, seed)
    assert send_offsets(rate_load(burstiness), seed) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("burstiness", BURSTINESS)
def test_it_waits_one_gap_before_the_first_send_and_ends_at_n_over_rate(burstiness):
    offsets = send_offsets(rate_load(burstiness), seed=42)
    assert offsets[0] > 0.0
    assert offsets == sorted(offsets)
    assert offsets[-1] == pytest.approx(NUM_REQUESTS / RATE, rel=1e-12)


def test_it_spaces_requests_evenly_with_infinite_burstiness():
    offsets = send_offsets(rate_load(math.inf), seed=0)
    assert offsets == pytest.approx([(i + 1) / RATE for i in range(NUM_REQUESTS)], rel=1e-12)


def test_it_never_touches_the_global_numpy_rng():
    with seeded_global_rng(9):
        np.random.random()  # somewhere mid-stream, not at a fresh seed
        before = np.random.get_state()
        send_offsets(rate_load(0.5), seed=3)
        after = np.random.get_state()
    assert (after[1] == before[1]).all() and after[2:] == before[2:]


def test_it_keeps_zeros_for_a_burst_and_no_schedule_for_a_closed_loop():
    assert send_offsets(LoadSpec(num_requests=3), seed=1) == [0.0, 0.0, 0.0]
    closed = LoadSpec(shape="concurrency", num_requests=3, concurrency=2)
    assert send_offsets(closed, seed=1) is None


# ---------------------------------------------------------------------------------------------
# Rate and burstiness validation, infinity in JSON
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["rate", "burstiness"])
@pytest.mark.parametrize("value", [math.nan, -1.0, 0.0, "nan"])
def test_it_refuses_nan_negative_and_zero_rate_or_burstiness_naming_the_field(field, value):
    with pytest.raises(ValidationError, match=rf"{field} must be .* > 0"):
        rate_load(**{field: value})


def test_it_refuses_an_infinite_rate_and_points_to_the_burst_shape():
    with pytest.raises(ValidationError, match=r"rate must be a finite .* use shape 'burst'"):
        rate_load(rate=math.inf)


def test_it_refuses_negative_infinite_burstiness():
    with pytest.raises(ValidationError, match="burstiness must be"):
        rate_load(-math.inf)


def test_it_writes_infinite_burstiness_as_a_string_that_strict_json_accepts_and_reads_back():
    load = rate_load(math.inf)
    as_json = json.dumps(load.model_dump(mode="json"), allow_nan=False)  # as Django's JSONField
    assert json.loads(as_json)["burstiness"] == "inf"
    back = LoadSpec.model_validate(json.loads(as_json))
    assert back.burstiness == math.inf and back == load
    assert LoadSpec.model_validate_json(load.model_dump_json()) == load
    assert rate_load(0.5).model_dump(mode="json")["burstiness"] == 0.5  # finite: a number


def test_it_round_trips_infinite_burstiness_through_a_point_result():
    point = make_point(4).model_copy(update={"load": rate_load(math.inf, max_concurrency=8)})
    back = PointResult.model_validate_json(point.model_dump_json())
    assert back.load.burstiness == math.inf and back.load.max_concurrency == 8
    stored = json.loads(json.dumps(point.model_dump(mode="json"), allow_nan=False))
    assert PointResult.model_validate(stored).load == point.load


# ---------------------------------------------------------------------------------------------
# max_concurrency in the schema and the plan
# ---------------------------------------------------------------------------------------------


def test_it_refuses_max_concurrency_on_a_closed_loop():
    with pytest.raises(ValidationError, match="max_concurrency caps a burst or rate load"):
        LoadSpec(shape="concurrency", num_requests=8, concurrency=4, max_concurrency=2)


def test_it_names_the_cap_in_the_label_and_offers_at_most_the_cap():
    capped = LoadSpec(shape="rate", num_requests=100, rate=4.0, max_concurrency=8)
    assert capped.label() == "rate 4.0/s x 100 (max 8 in flight)"
    assert capped.offered_concurrency() == 8.0
    burst = LoadSpec(num_requests=5, max_concurrency=8)
    assert burst.label() == "burst 5 (max 8 in flight)" and burst.offered_concurrency() == 5.0
    assert LoadSpec(num_requests=5).label() == "burst 5"


def test_it_splits_the_cap_across_processes_like_closed_loop_slots():
    load = LoadSpec(shape="rate", num_requests=7, rate=10.0, max_concurrency=5)
    prompts = [Prompt(index=i, text=f"p {i}") for i in range(7)]
    jobs = plan_jobs([Target(0, "http://a:1", "m")], load, ClientSpec(processes=2), prompts, 1)
    assert [(j.concurrency, j.max_in_flight) for j in jobs] == [(None, 3), (None, 2)]
    # No worker without a slot: a cap of 2 over 4 processes runs 2 workers.
    tight = load.model_copy(update={"max_concurrency": 2})
    jobs = plan_jobs([Target(0, "http://a:1", "m")], tight, ClientSpec(processes=4), prompts, 1)
    assert [j.max_in_flight for j in jobs] == [1, 1]
    assert sorted(it.index for j in jobs for it in j.items) == list(range(7))


# ---------------------------------------------------------------------------------------------
# max_concurrency against the fake server
# ---------------------------------------------------------------------------------------------


def run_capped(server: FakeVllm, load: LoadSpec, client: ClientSpec = FAST_CLIENT):
    workload = WorkloadSpec(output_tokens=4, seed=5)
    prompts = build_prompts(workload, load.num_requests)
    return run_load([Target(0, server.base_url, "m")], workload, load, client, prompts).records


def test_it_never_has_more_than_max_concurrency_of_a_burst_in_flight(fake_vllm):
    fake_vllm.interval_s = 0.005
    records = run_capped(fake_vllm, LoadSpec(num_requests=8, max_concurrency=2))
    assert all(r.ok for r in records) and in_flight_peak(records) == 2
    for r in records:
        assert r.intended_send == 0.0  # the schedule, not when a slot freed
        assert r.ttft == pytest.approx(r.chunk_times[0] - r.actual_send)  # from when it went
    assert max(r.actual_send for r in records) > 2 * 4 * fake_vllm.interval_s  # they waited


def test_it_keeps_the_rate_schedule_while_requests_wait_for_a_slot(fake_vllm):
    fake_vllm.interval_s = 0.01  # 4 tokens take ~40 ms; arrivals come every ~5 ms
    load = LoadSpec(shape="rate", num_requests=10, rate=200.0, max_concurrency=1)
    records = run_capped(fake_vllm, load)
    assert all(r.ok for r in records) and in_flight_peak(records) == 1
    assert [r.intended_send for r in records] == pytest.approx(send_offsets(load, 5))
    assert all(r.actual_send >= r.intended_send for r in records)
    assert records[-1].actual_send - records[-1].intended_send > 0.2  # queued behind the cap
    assert all(r.e2el == pytest.approx(r.chunk_times[-1] - r.actual_send) for r in records)


def test_it_holds_the_cap_summed_over_client_processes(fake_vllm):
    fake_vllm.interval_s = 0.005
    load = LoadSpec(num_requests=12, max_concurrency=3)
    records = run_capped(fake_vllm, load, FAST_CLIENT.model_copy(update={"processes": 2}))
    assert len(records) == 12 and all(r.ok for r in records)
    assert in_flight_peak(records) <= 3


def test_two_rate_loads_that_differ_only_in_burstiness_get_different_keys():
    poisson = LoadSpec(shape="rate", rate=4.0, num_requests=100)
    bursty = LoadSpec(shape="rate", rate=4.0, num_requests=100, burstiness=0.5)
    even = LoadSpec(shape="rate", rate=4.0, num_requests=100, burstiness=float("inf"))
    assert poisson.label() == "rate 4.0/s x 100"
    assert bursty.label() == "rate 4.0/s x 100 burstiness 0.5"
    assert even.label() == "rate 4.0/s x 100 burstiness inf"
