"""A node run's queue summary from its replicas' summaries, by each field's declared rule.

No engine: the replica summaries are written by hand, and the node's figures computed by hand.
"""

from __future__ import annotations

import pytest

from runner.schema.samples import QueueSummary
from runner.sweep import _node_queue

# Three replicas whose values differ so that a sum, a peak and a mean of them all differ.
# Binary fractions keep the expected means exact.
REPLICAS = [
    QueueSummary(samples=10, max_gap_s=0.5, mean_running=100.0, mean_waiting=20.0,
                 peak_running=128.0, peak_waiting=40.0, peak_kv_usage=0.875,
                 mean_kv_usage=0.75, preemptions=2.0, generation_tokens=25_600.0,
                 mean_tokens_per_step=1_800.0,
                 mean_waiting_capacity=18.0, mean_waiting_deferred=2.0,
                 prefix_cache_queries=6_400.0, prefix_cache_hits=4_800.0,
                 flops_per_gpu_s=1.0e12, read_bytes_per_gpu_s=2.0e12, write_bytes_per_gpu_s=0.25e12,
                 queue_time_requests=100.0, mean_queue_time_s=0.5, queue_time_p50_s=0.5,
                 queue_time_p90_s=1.0, queue_time_p99_s=2.5,
                 running_while_waiting_s={"128": 4.5, "127": 0.5},
                 spec_drafts=100.0, spec_draft_tokens=300.0, spec_accepted_tokens=150.0,
                 spec_accepted_per_position={"0": 80.0, "1": 50.0, "2": 20.0}),
    QueueSummary(samples=12, max_gap_s=1.5, mean_running=120.0, mean_waiting=30.0,
                 peak_running=110.0, peak_waiting=70.0, peak_kv_usage=0.625,
                 mean_kv_usage=0.25, preemptions=0.0, generation_tokens=25_600.0,
                 mean_tokens_per_step=2_000.0,
                 mean_waiting_capacity=30.0, mean_waiting_deferred=0.0,
                 prefix_cache_queries=6_400.0, prefix_cache_hits=6_400.0,
                 flops_per_gpu_s=2.0e12, read_bytes_per_gpu_s=3.0e12, write_bytes_per_gpu_s=0.5e12,
                 queue_time_requests=100.0, mean_queue_time_s=1.5, queue_time_p50_s=0.8,
                 queue_time_p90_s=2.0, queue_time_p99_s=5.0,
                 running_while_waiting_s={"110": 3.0, "128": 1.0},
                 spec_drafts=60.0, spec_draft_tokens=180.0, spec_accepted_tokens=30.0,
                 spec_accepted_per_position={"0": 20.0, "1": 10.0, "2": 0.0}),
    # An engine that exposed no step histogram, no work estimates and no speculative decoding:
    # left out of those only.
    QueueSummary(samples=8, max_gap_s=1.0, mean_running=80.0, mean_waiting=10.0,
                 peak_running=100.0, peak_waiting=90.0, peak_kv_usage=0.5,
                 mean_kv_usage=0.5, preemptions=1.0, generation_tokens=20_480.0,
                 mean_tokens_per_step=None,
                 mean_waiting_capacity=10.0, mean_waiting_deferred=0.0,
                 prefix_cache_queries=5_120.0, prefix_cache_hits=0.0,
                 queue_time_requests=80.0, mean_queue_time_s=0.25, queue_time_p50_s=0.3,
                 queue_time_p90_s=0.5, queue_time_p99_s=1.0),
]

# By hand: sums 10+12+8, 100+120+80, 20+30+10, 2+0+1, 25600+25600+20480; highest 1.5, 128,
# 90, 0.875; means (0.75+0.25+0.5)/3 and (1800+2000)/2. vLLM 0.32's: sums 18+30+10, 2+0+0,
# 6400+6400+5120, 4800+6400+0, 100+100+80; per-GPU rates the mean of the two that report them;
# queue-time mean (0.5+1.5+0.25)/3; the highest of each percentile. Seconds at each running
# count while waiting add count by count (128: 4.5 + 1.0); the third replica kept none.
# Speculative decoding's counts add up (100+60 drafts, 300+180 draft tokens, 150+30 accepted),
# position by position (80+20, 50+10, 20+0).
NODE = {
    "samples": 30,
    "max_gap_s": 1.5,
    "mean_running": 300.0,
    "mean_waiting": 60.0,
    "peak_running": 128.0,
    "peak_waiting": 90.0,
    "peak_kv_usage": 0.875,
    "mean_kv_usage": 0.5,
    "preemptions": 3.0,
    "generation_tokens": 71_680.0,
    "mean_tokens_per_step": 1_900.0,
    "mean_waiting_capacity": 58.0,
    "mean_waiting_deferred": 2.0,
    "prefix_cache_queries": 17_920.0,
    "prefix_cache_hits": 11_200.0,
    "flops_per_gpu_s": 1.5e12,
    "read_bytes_per_gpu_s": 2.5e12,
    "write_bytes_per_gpu_s": 0.375e12,
    "queue_time_requests": 280.0,
    "mean_queue_time_s": 0.75,
    "queue_time_p50_s": 0.8,
    "queue_time_p90_s": 2.0,
    "queue_time_p99_s": 5.0,
    "running_while_waiting_s": {"110": 3.0, "127": 0.5, "128": 5.5},
    "spec_drafts": 160.0,
    "spec_draft_tokens": 480.0,
    "spec_accepted_tokens": 180.0,
    "spec_accepted_per_position": {"0": 100.0, "1": 60.0, "2": 20.0},
}


def test_every_queue_field_declares_how_a_node_combines_it():
    rules = {name: QueueSummary.node_rule(name) for name in QueueSummary.model_fields}
    assert rules == {
        "samples": "sum",
        "max_gap_s": "max",
        "mean_running": "sum",
        "mean_waiting": "sum",
        "peak_running": "max",
        "peak_waiting": "max",
        "peak_kv_usage": "max",
        "mean_kv_usage": "mean",
        "preemptions": "sum",
        "generation_tokens": "sum",
        "mean_tokens_per_step": "mean",
        "mean_waiting_capacity": "sum",
        "mean_waiting_deferred": "sum",
        "prefix_cache_queries": "sum",
        "prefix_cache_hits": "sum",
        "flops_per_gpu_s": "mean",
        "read_bytes_per_gpu_s": "mean",
        "write_bytes_per_gpu_s": "mean",
        "queue_time_requests": "sum",
        "mean_queue_time_s": "mean",
        "queue_time_p50_s": "max",
        "queue_time_p90_s": "max",
        "queue_time_p99_s": "max",
        "running_while_waiting_s": "histogram",
        "spec_drafts": "sum",
        "spec_draft_tokens": "sum",
        "spec_accepted_tokens": "sum",
        "spec_accepted_per_position": "histogram",
    }


def test_a_queue_field_without_a_node_rule_is_refused():
    class Later(QueueSummary):
        new_gauge: float | None = None

    with pytest.raises(ValueError, match=r"QueueSummary\.new_gauge declares no node rule"):
        Later.node_rule("new_gauge")


def test_the_hand_computed_node_covers_every_queue_field():
    # A field added to QueueSummary must get its expected node value here too.
    assert set(NODE) == set(QueueSummary.model_fields)


def test_a_node_sums_means_and_counters_takes_the_highest_peaks_and_averages_ratios():
    assert _node_queue(REPLICAS).model_dump() == NODE


def test_a_node_keeps_the_token_budget_evidence():
    # The field a hand-written copy once dropped: multi-replica points lost their token-budget
    # evidence and every token-budget verdict on them was partial.
    assert _node_queue(REPLICAS[:2]).mean_tokens_per_step == 1_900.0


def test_a_field_no_replica_recorded_stays_unrecorded_on_the_node():
    node = _node_queue([QueueSummary(samples=3), QueueSummary(samples=4)])
    assert node.samples == 7
    assert node.mean_running is None and node.mean_tokens_per_step is None


def test_a_node_hit_rate_weighs_every_replicas_tokens():
    # 11,200 of 17,920 looked-up tokens, not the mean of 75%, 100% and 0%.
    assert _node_queue(REPLICAS).prefix_cache_hit_rate == pytest.approx(11_200 / 17_920)


def test_a_single_replica_is_its_own_summary():
    assert _node_queue(REPLICAS[:1]) == REPLICAS[0]
