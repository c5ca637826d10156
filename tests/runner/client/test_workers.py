"""The load generator against a real local HTTP server (tests/runner/fakeserver.py)."""

from __future__ import annotations

import gc
import os
import socket
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from runner.client import workers
from runner.client.health import STEAL_BLAME_SHARE, cpu_steal_s, merge_health, steal_share
from runner.client.job import NO_FULL_COLLECTION
from runner.client.responses import chunk_token_counts, request_body
from runner.client.schedule import Target, plan_jobs, send_offsets
from runner.client.workers import _worker_main, run_load
from runner.schema.plan import ClientSpec, LoadSpec, WorkloadSpec
from runner.workloads.prompts import Prompt, build_prompts
from tests.runner.fakeserver import FakeVllm

FAST_CLIENT = ClientSpec(request_timeout_s=10, stall_timeout_s=0.5)


def prompts_for(n: int, text: str = "hello there") -> list[Prompt]:
    return [Prompt(index=i, text=f"{text} {i}") for i in range(n)]


def run(server: FakeVllm, workload: WorkloadSpec, load: LoadSpec, prompts=None, **kwargs):
    prompts = prompts or build_prompts(workload, load.num_requests)
    return run_load([Target(0, server.base_url, "m")], workload, load, kwargs.pop("client", FAST_CLIENT),
                    prompts, **kwargs)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ---------------------------------------------------------------------------------------------
# Pure pieces
# ---------------------------------------------------------------------------------------------


def test_it_gives_the_first_chunk_one_token_and_spreads_the_rest_like_stream_interval():
    # vLLM with --stream-interval 4 and 10 tokens sends chunks of 1, 4, 4, 1.
    assert chunk_token_counts(4, None, 10) == [1, 3, 3, 3]
    assert chunk_token_counts(4, None, 13) == [1, 4, 4, 4]
    assert chunk_token_counts(65, None, 256) == [1] + [4] * 63 + [3]


def test_it_uses_per_chunk_usage_deltas_when_the_server_sends_them():
    assert chunk_token_counts(3, [1, 5, 6], 6) == [1, 4, 1]


def test_it_gives_extra_chunks_zero_tokens_when_usage_counts_fewer():
    assert chunk_token_counts(3, None, 2) == [1, 1, 0]


def test_it_splits_each_targets_requests_and_slots_across_its_processes():
    targets = [Target(0, "http://a:1", "m"), Target(1, "http://b:1", "m")]
    load = LoadSpec(shape="concurrency", num_requests=7, concurrency=5)
    jobs = plan_jobs(targets, load, ClientSpec(processes=2), prompts_for(7), seed=0)
    assert [(j.target.replica, [it.index for it in j.items], j.concurrency) for j in jobs] == [
        (0, [0, 2, 4, 6], 3), (0, [1, 3, 5], 2), (1, [0, 2, 4, 6], 3), (1, [1, 3, 5], 2),
    ]


def test_it_keeps_the_rate_schedule_when_splitting_it_across_processes():
    load = LoadSpec(shape="rate", num_requests=6, rate=10.0)
    jobs = plan_jobs([Target(0, "http://a:1", "m")], load, ClientSpec(processes=3), prompts_for(6), 1)
    offsets = sorted((it.index, it.offset) for j in jobs for it in j.items)
    assert [o for _, o in offsets] == send_offsets(load, 1)


def test_it_merges_extra_body_last_and_always_sends_temperature():
    workload = WorkloadSpec(extra_body={"max_tokens": 7, "min_tokens": 7}, temperature=0.0)
    body = request_body(workload, "m", Prompt(index=0, text="hi"))
    assert b'"temperature":0.0' in body and b'"max_tokens":7' in body
    assert b'"stream_options":{"include_usage":true}' in body and b'"ignore_eos":true' in body


def test_it_precomputes_a_reproducible_poisson_schedule_from_one_gap_in_to_n_over_rate():
    load = LoadSpec(shape="rate", num_requests=20000, rate=100.0)
    offsets = send_offsets(load, seed=3)
    # As `vllm bench serve`: the first request waits its gap, and the last goes at N / rate.
    assert offsets == send_offsets(load, seed=3) and offsets[0] > 0.0
    assert offsets[-1] == pytest.approx(200.0, rel=1e-12)
    gaps = np.diff([0.0, *offsets])
    assert gaps.mean() == pytest.approx(0.01, rel=1e-9)
    bursty = np.diff(send_offsets(load.model_copy(update={"burstiness": 0.25}), seed=3))
    assert bursty.std() > 1.5 * gaps.std()  # gamma shape < 1: same mean, burstier arrivals


def test_it_flags_a_saturated_client_with_reasons():
    health = merge_health([
        {"cpu_fraction": 0.3, "lag_p99_ms": 0.5, "lag_max_ms": 1.0},
        {"cpu_fraction": 0.97, "lag_p99_ms": 12.0, "lag_max_ms": 30.0},
    ])
    assert health.saturated and health.cpu_fraction == 0.97 and health.loop_lag_max_ms == 30.0
    assert len(health.reasons) == 2 and "more client processes" in health.reasons[0]


def test_it_blames_other_processes_when_a_lagging_client_was_idle():
    health = merge_health([{"cpu_fraction": 0.05, "lag_p99_ms": 40.0, "lag_max_ms": 90.0}])
    assert health.saturated and "other processes on this host starved it" in health.reasons[0]
    assert health.cpu_steal is None  # not reported: nothing is said of the hypervisor
    assert "hypervisor" not in health.reasons[0]


def lagging(steal: float | None, cpu: float = 0.05) -> dict[str, float | None]:
    return {"cpu_fraction": cpu, "lag_p99_ms": 40.0, "lag_max_ms": 90.0, "steal_share": steal}


def test_it_blames_the_hypervisor_when_a_lagging_clients_cpus_were_stolen():
    health = merge_health([lagging(0.001), lagging(0.05)])
    assert health.saturated and health.cpu_steal == 0.05  # the worst process speaks
    assert len(health.reasons) == 1
    assert "the hypervisor took 5.0% of the client's CPU time (steal)" in health.reasons[0]
    assert "other processes" not in health.reasons[0]
    at_limit = merge_health([lagging(STEAL_BLAME_SHARE)])
    assert "hypervisor" in at_limit.reasons[0]
    below = merge_health([lagging(STEAL_BLAME_SHARE - 0.001)])
    assert "other processes on this host starved it" in below.reasons[0]
    assert below.cpu_steal == pytest.approx(STEAL_BLAME_SHARE - 0.001)


def test_steal_does_not_excuse_a_client_that_was_busy_itself():
    health = merge_health([lagging(0.05, cpu=0.97)])
    assert len(health.reasons) == 2 and "more client processes" in health.reasons[0]
    assert "hypervisor" not in health.reasons[1] and health.cpu_steal == 0.05


def test_it_reads_each_cpus_steal_from_proc_stat(tmp_path):
    ticks = os.sysconf("SC_CLK_TCK")
    stat = tmp_path / "stat"
    stat.write_text(
        f"cpu  100 0 50 9000 3 0 2 {7 * ticks} 0 0\n"  # every CPU together: not one CPU
        f"cpu0 50 0 25 4500 1 0 1 {3 * ticks} 0 0\n"
        f"cpu1 50 0 25 4500 2 0 1 {4 * ticks} 0 0\n"
        "cpu2 50 0 25 4500\n"  # an old kernel's short line: no steal column
        "intr 12345 0 0\nctxt 999\n"
    )
    assert cpu_steal_s(str(stat)) == {0: 3.0, 1: 4.0}
    assert cpu_steal_s(str(tmp_path / "absent")) == {}


def test_steal_share_spreads_the_steal_over_every_cpu_the_client_may_use():
    before, after = {0: 1.0, 1: 2.0}, {0: 1.1, 1: 2.5}
    assert steal_share(before, after, {1}, 10.0) == pytest.approx(0.05)
    assert steal_share(before, after, {0, 1}, 10.0) == pytest.approx(0.6 / 20)
    assert steal_share(before, after, {0, 2}, 10.0) is None  # CPU 2 not reported
    assert steal_share(before, after, {1}, 0.0) is None
    assert steal_share({}, {}, {0}, 10.0) is None  # a kernel without steal figures


# ---------------------------------------------------------------------------------------------
# Against the fake server
# ---------------------------------------------------------------------------------------------


def test_it_records_every_request_of_a_burst_with_usage_tokens(fake_vllm):
    workload = WorkloadSpec(output_tokens=12)
    done = []
    outcome = run(fake_vllm, workload, LoadSpec(num_requests=8),
                  on_request_done=lambda d, t: done.append((d, t)))
    assert [r.index for r in outcome.records] == list(range(8))
    assert done[-1] == (8, 8)
    for r in outcome.records:
        assert r.ok and r.intended_send == 0.0 and r.output_tokens == 12
        assert r.prompt_tokens == len(build_prompts(workload, 8)[r.index].text.split())
        assert r.chunk_tokens == [1] * 12 and r.finish_reason == "length"
        assert r.chunk_times == sorted(r.chunk_times)
        # vLLM's TTFT and E2EL count from the actual send, not from the burst's t0.
        assert r.ttft == pytest.approx(r.chunk_times[0] - r.actual_send)
        assert r.e2el == pytest.approx(r.chunk_times[-1] - r.actual_send)
    assert fake_vllm.requests[0]["stream_options"] == {"include_usage": True}
    assert outcome.health.cpu_steal is not None and 0.0 <= outcome.health.cpu_steal < 1.0


def test_the_collector_runs_no_full_collection_and_skips_the_old_heap_while_loading(fake_vllm):
    """As `vllm bench serve` freezes its heap, and more: a full collection mid-load stops the
    loop and stamps every arrival in the pause late. Both come back once the load is over."""
    thresholds = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    seen = []
    run(fake_vllm, WorkloadSpec(output_tokens=4), LoadSpec(num_requests=3),
        on_request_done=lambda d, t: seen.append((gc.get_freeze_count(), gc.get_threshold())))
    assert len(seen) == 3
    for frozen, (young, middle, oldest) in seen:
        assert frozen > 1000 and (young, middle) == thresholds[:2] and oldest == NO_FULL_COLLECTION
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == thresholds


def _worker_noting_the_collector(*args):
    """runner.client.workers._worker_main, noting the collector's state in the file named by
    HEADROOM_TEST_GC_NOTES each time it says ready (before t0) or sends records (after)."""
    events, notes = args[5], Path(os.environ["HEADROOM_TEST_GC_NOTES"])

    class NotingEvents:
        def put(self, message):
            if message[0] in ("ready", "records"):
                with notes.open("a") as f:
                    f.write(f"{message[0]} {gc.get_freeze_count()} {gc.get_threshold()[2]}\n")
            events.put(message)

    _worker_main(*args[:5], NotingEvents(), *args[6:])


def test_each_client_worker_quiets_its_collector_before_it_is_ready(fake_vllm, monkeypatch, tmp_path):
    """The parent sets t0 once every worker is ready, so the worker's own collection must be
    over by then; the records go back after the load, with the collector as it was."""
    notes = tmp_path / "gc-notes"
    monkeypatch.setenv("HEADROOM_TEST_GC_NOTES", str(notes))
    monkeypatch.setattr(workers, "_worker_main", _worker_noting_the_collector)
    client = FAST_CLIENT.model_copy(update={"processes": 2})
    outcome = run(fake_vllm, WorkloadSpec(output_tokens=3), LoadSpec(num_requests=4), client=client)
    assert all(r.ok for r in outcome.records) and outcome.health.processes == 2
    lines = [line.split() for line in notes.read_text().splitlines()]
    ready = [(int(n), int(t)) for kind, n, t in lines if kind == "ready"]
    after = [(int(n), int(t)) for kind, n, t in lines if kind == "records"]
    assert len(ready) == 2 and all(n > 1000 and t == NO_FULL_COLLECTION for n, t in ready)
    assert len(after) >= 2 and all(n == 0 and t == gc.get_threshold()[2] for n, t in after)


def test_it_leaves_a_collector_someone_else_set_up_as_it_was(fake_vllm):
    """A heap frozen already (the caller's, or a load in another thread): nothing to undo later."""
    thresholds = gc.get_threshold()
    gc.freeze()
    try:
        seen = []
        run(fake_vllm, WorkloadSpec(output_tokens=4), LoadSpec(num_requests=2),
            on_request_done=lambda d, t: seen.append(gc.get_threshold()))
        assert seen == [thresholds] * 2
        assert gc.get_freeze_count() > 1000  # not thawed (refcounting still frees a frozen object)
    finally:
        gc.unfreeze()


@pytest.mark.parametrize("processes", [1, 2])
def test_the_points_client_health_records_the_clients_idle_nap(fake_vllm, processes):
    """In the caller's process and in spawned workers alike: the nap can delay every stamp, so
    the point says it ran with one (benchmarks.storage.points then gives it the client-nap caveat)."""
    load = LoadSpec(num_requests=4)
    napping = ClientSpec(request_timeout_s=10, stall_timeout_s=5, processes=processes,
                         idle_nap_us=250)
    outcome = run(fake_vllm, WorkloadSpec(output_tokens=4), load, client=napping)
    assert all(r.ok for r in outcome.records) and outcome.health.idle_nap_us == 250
    assert outcome.health.cpu_steal is not None  # measured in the worker processes too
    plain = ClientSpec(request_timeout_s=10, stall_timeout_s=5, processes=processes)
    assert run(fake_vllm, WorkloadSpec(output_tokens=4), load, client=plain).health.idle_nap_us == 0


def test_it_counts_tokens_per_chunk_with_a_stream_interval(fake_vllm):
    fake_vllm.stream_interval = 4
    outcome = run(fake_vllm, WorkloadSpec(output_tokens=13), LoadSpec(num_requests=2))
    assert [r.chunk_tokens for r in outcome.records] == [[1, 4, 4, 4]] * 2
    # 10 tokens come as 1, 4, 4, 1; without per-chunk usage the client can only spread them.
    outcome = run(fake_vllm, WorkloadSpec(output_tokens=10), LoadSpec(num_requests=1))
    assert outcome.records[0].chunk_tokens == [1, 3, 3, 3]


def test_it_uses_continuous_usage_stats_when_asked_for(fake_vllm):
    fake_vllm.stream_interval = 3
    workload = WorkloadSpec(
        output_tokens=8,
        extra_body={"stream_options": {"include_usage": True, "continuous_usage_stats": True}},
    )
    outcome = run(fake_vllm, workload, LoadSpec(num_requests=1))
    assert outcome.records[0].chunk_tokens == [1, 3, 3, 1]


def test_it_keeps_the_chat_role_chunk_as_a_chunk_that_carries_no_token(fake_vllm):
    outcome = run(fake_vllm, WorkloadSpec(output_tokens=5, endpoint="chat"), LoadSpec(num_requests=2))
    for r in outcome.records:
        # vLLM's client counts the role chunk (its TTFT); it carries none of the 5 tokens.
        assert r.ok and len(r.chunk_times) == 6 and r.chunk_tokens == [0, 1, 1, 1, 1, 1]
    assert "messages" in fake_vllm.requests[0]


def test_it_measures_a_non_streamed_request_as_one_chunk(fake_vllm):
    outcome = run(fake_vllm, WorkloadSpec(output_tokens=6, stream=False), LoadSpec(num_requests=2))
    for r in outcome.records:
        assert r.ok and r.ttft == r.e2el and r.chunk_tokens == [6] and r.output_tokens == 6


def test_it_turns_every_bad_server_behaviour_into_its_own_error_record(fake_vllm):
    modes = ["normal", "http_500", "garbage_sse", "truncated_sse", "stall", "die_mid_stream",
             "error_in_stream", "short"]
    prompts = [Prompt(index=i, text=f"mode={mode} please") for i, mode in enumerate(modes)]
    started = time.monotonic()
    outcome = run(fake_vllm, WorkloadSpec(output_tokens=6), LoadSpec(num_requests=len(modes)), prompts)
    assert time.monotonic() - started < 5
    by_mode = dict(zip(modes, outcome.records, strict=True))
    assert by_mode["normal"].ok and by_mode["short"].ok
    assert by_mode["short"].output_tokens == 3 and by_mode["short"].finish_reason == "stop"
    assert by_mode["http_500"].status == 500 and "boom" in by_mode["http_500"].error
    assert "malformed SSE data" in by_mode["garbage_sse"].error
    assert "stalled" in by_mode["stall"].error
    assert "connection closed" in by_mode["die_mid_stream"].error
    for mode in ("http_500", "garbage_sse", "stall", "die_mid_stream"):
        assert not by_mode[mode].ok and by_mode[mode].completed_at is not None
    # vLLM's client counts a 200 with chunks as completed, whatever came after them; Headroom
    # keeps it completed under vLLM's name and says why it is not whole.
    for mode, reason in (("truncated_sse", "without data: [DONE]"), ("error_in_stream", "engine dead")):
        record = by_mode[mode]
        assert record.ok and not record.strictly_ok and reason in record.incomplete
    assert by_mode["normal"].strictly_ok and by_mode["normal"].incomplete is None


def test_it_records_an_unreachable_server_without_raising():
    target = Target(0, f"http://127.0.0.1:{free_port()}", "m")
    workload = WorkloadSpec(output_tokens=4)
    outcome = run_load([target], workload, LoadSpec(num_requests=3), FAST_CLIENT,
                       build_prompts(workload, 3))
    assert all("cannot connect" in r.error for r in outcome.records)


def test_it_cuts_off_a_slow_request_at_the_request_timeout(fake_vllm):
    fake_vllm.mode = "stall"
    client = ClientSpec(request_timeout_s=0.3, stall_timeout_s=60)
    outcome = run(fake_vllm, WorkloadSpec(output_tokens=4), LoadSpec(num_requests=1), client=client)
    assert "timed out after 0.3 s" in outcome.records[0].error


def test_it_never_has_more_requests_in_flight_than_the_concurrency(fake_vllm):
    fake_vllm.interval_s = 0.005
    load = LoadSpec(shape="concurrency", num_requests=8, concurrency=2)
    outcome = run(fake_vllm, WorkloadSpec(output_tokens=4), load)
    assert all(r.ok for r in outcome.records)
    spans = [(r.actual_send, r.completed_at) for r in outcome.records]
    in_flight = [sum(1 for s, e in spans if s <= t < e) for t, _ in spans]
    assert max(in_flight) == 2


def test_it_sends_an_open_loop_rate_on_its_precomputed_schedule(fake_vllm):
    load = LoadSpec(shape="rate", num_requests=10, rate=40.0)
    workload = WorkloadSpec(output_tokens=3, seed=5)
    outcome = run(fake_vllm, workload, load)
    assert [r.intended_send for r in outcome.records] == pytest.approx(send_offsets(load, 5))
    assert outcome.records[0].intended_send > 0.0  # as vLLM: the first request waits its gap
    for r in outcome.records:
        assert r.ok and r.actual_send >= r.intended_send
        # vLLM's reading (RequestRecord): from when it went; the schedule stays in intended_send.
        assert r.ttft == pytest.approx(r.chunk_times[0] - r.actual_send)


def test_it_stops_promptly_when_cancelled_and_records_the_unfinished(fake_vllm):
    fake_vllm.mode = "stall"
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    started = time.monotonic()
    load = LoadSpec(shape="rate", num_requests=5, rate=4.0)  # later sends are still waiting
    outcome = run(fake_vllm, WorkloadSpec(output_tokens=4), load,
                  client=ClientSpec(stall_timeout_s=60), cancel=cancel)
    assert time.monotonic() - started < 2
    assert len(outcome.records) == 5
    assert all(r.error == "cancelled" for r in outcome.records)


def test_it_runs_one_process_per_replica_on_one_clock():
    servers = [FakeVllm().start(), FakeVllm().start()]
    try:
        targets = [Target(i, s.base_url, "m") for i, s in enumerate(servers)]
        workload = WorkloadSpec(output_tokens=5)
        before = time.monotonic()
        outcome = run_load(targets, workload, LoadSpec(num_requests=4), ClientSpec(processes=1),
                           build_prompts(workload, 4))
        after = time.monotonic()
    finally:
        for server in servers:
            server.stop()
    assert [(r.replica, r.index) for r in outcome.records] == [(p, i) for p in (0, 1) for i in range(4)]
    assert all(r.ok for r in outcome.records)
    assert outcome.health.processes == 2  # one worker process per target
    assert before < outcome.t0 < after
    # The servers stamp arrivals on their own clock; they fall inside the client's window.
    start = outcome.t0 + min(r.actual_send for r in outcome.records)
    end = outcome.t0 + max(r.completed_at for r in outcome.records)
    assert all(start <= t <= end for s in servers for t in s.arrivals)


def test_it_pins_each_client_process_to_its_cpu_and_says_so(fake_vllm):
    # One target, one process: pinned, it still runs in a worker, never in the caller's process.
    cpu = max(os.sched_getaffinity(0))
    affinity_before = os.sched_getaffinity(0)
    client = FAST_CLIENT.model_copy(update={"cpus": [cpu]})
    outcome = run(fake_vllm, WorkloadSpec(output_tokens=3), LoadSpec(num_requests=3), client=client)
    assert all(r.ok for r in outcome.records)
    assert outcome.health.cpus == [cpu]
    assert os.sched_getaffinity(0) == affinity_before
    unpinned = run(fake_vllm, WorkloadSpec(output_tokens=3), LoadSpec(num_requests=3))
    assert unpinned.health.cpus == []


def test_it_cancels_worker_processes_promptly_and_keeps_finished_requests():
    servers = [FakeVllm().start(), FakeVllm().start()]
    cancel = threading.Event()
    try:
        targets = [Target(i, s.base_url, "m") for i, s in enumerate(servers)]
        prompts = [Prompt(index=0, text="quick")] + [Prompt(index=i, text="mode=stall") for i in (1, 2)]
        outcome = run_load(targets, WorkloadSpec(output_tokens=3), LoadSpec(num_requests=3),
                           ClientSpec(stall_timeout_s=60), prompts, cancel=cancel,
                           on_request_done=lambda done, total: cancel.set())
    finally:
        for server in servers:
            server.stop()
    assert len(outcome.records) == 6
    assert all(r.error == "cancelled" for r in outcome.records if r.index > 0)
    assert any(r.ok for r in outcome.records if r.index == 0)  # finished before the cancel


def test_it_returns_cancelled_records_when_cancelled_before_workers_start():
    cancel = threading.Event()
    cancel.set()
    targets = [Target(i, f"http://127.0.0.1:{free_port()}", "m") for i in range(2)]
    outcome = run_load(targets, WorkloadSpec(), LoadSpec(num_requests=2), ClientSpec(),
                       prompts_for(2), cancel=cancel)
    assert [r.error for r in outcome.records] == ["cancelled"] * 4
