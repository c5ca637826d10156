"""Node runs in the analysis sentences: per-replica figures in verdicts, the stored-point checks
in node scaling, and the percentage rule every sentence uses."""

from __future__ import annotations

import pytest

from analysis.errors import AnalysisError
from analysis.scaling import check_node_point, scaling
from analysis.sentences import no_queue_chart_sentence, pct, percent
from analysis.verdicts import verdict
from tests.analysis.helpers import CASE_STUDY_SPEC, point

CHECK = "output_throughput is 2,600.00/s but 10,000 output tokens make 1,000.00/s."


def node(key="node", offered=2000, throughput=160_000, replicas=8, **kwargs):
    """An 8-replica node run of seqs=256: the queue summary holds the sum of the replicas' means
    and the highest replica's peaks (runner.schema.samples.QueueSummary)."""
    values = dict(
        config_label="seqs=256", max_num_seqs=256, max_num_batched_tokens=2048,
        replicas=replicas, gpu_count=replicas, queue_samples=320,
        mean_running=240.0 * replicas, peak_running=256.0,
        mean_waiting=1_500.0 * replicas, peak_waiting=1_744.0,
        peak_kv_usage=0.4, mean_kv_usage=0.3, preemptions=0.0, median_e2el_ms=10_000.0,
    )
    values.update(kwargs)
    return point(key, offered, throughput, **values)


# --- verdict sentences ---------------------------------------------------------------------------


def test_a_node_scheduler_cap_quotes_running_and_waiting_per_replica():
    v = verdict(node())
    assert v.kind == "scheduler_cap"
    assert v.sentence == (
        "scheduler cap: running pinned at max_num_seqs on each of 8 replicas (mean 240 per "
        "replica, peak 256 of 256 on the busiest replica) while 1,500 requests wait per replica "
        "on average"
    )


def test_a_single_engine_scheduler_cap_keeps_its_own_wording():
    v = verdict(node(replicas=1, mean_running=240.0, mean_waiting=1_500.0))
    assert v.sentence == (
        "scheduler cap: running pinned at max_num_seqs (mean 240, peak 256 of 256) while "
        "1,500 requests wait on average"
    )


def test_a_node_kv_capacity_names_the_fullest_replica_and_the_node_preemptions():
    v = verdict(node(peak_kv_usage=0.97, preemptions=40.0))
    assert v.sentence == (
        "KV capacity: peak KV usage 97.0% on the fullest replica and 40.0 preemptions across "
        "the 8 replicas"
    )


def test_a_node_token_budget_reads_steps_against_one_replicas_budget():
    v = verdict(node(mean_running=150.0 * 8, peak_running=180.0, mean_waiting=400.0 * 8,
                     peak_kv_usage=0.6, mean_tokens_per_step=2_000.0))
    assert v.kind == "token_budget"
    assert v.sentence == (
        "token budget: running 150 of 256 per replica on average with 400 waiting per replica "
        "and KV at 60.0% peak on the fullest replica; steps average 2,000 of 2048 batched "
        "tokens per replica"
    )


def test_a_node_underloaded_verdict_says_every_replica_has_room():
    v = verdict(node(mean_running=10.0 * 8, peak_running=12.0, mean_waiting=0.1 * 8,
                     peak_kv_usage=0.08))
    assert v.kind == "underloaded"
    assert v.sentence == (
        "underloaded: nothing waits (mean 0.1 per replica) and every replica has room (peak "
        "running 12.0 of 256 on the busiest replica, peak KV 8.0% on the fullest replica)"
    )


def test_a_saturated_node_names_its_throughput_as_the_nodes():
    below = dict(mean_running=150.0 * 8, peak_running=180.0, mean_waiting=400.0 * 8,
                 peak_kv_usage=0.6, mean_tokens_per_step=900.0)
    previous = node("lo", 1000, 159_400, median_e2el_ms=8_000.0, **below)
    current = node("hi", 2000, 160_000, median_e2el_ms=12_000.0,
                   **{**below, "mean_waiting": 1_200.0 * 8})
    v = verdict(current, previous)
    assert v.evidence.saturated is True
    # 600 / 159,400 = +0.38%; 8,000 -> 12,000 ms = +50.0%.
    assert v.sentence.endswith(
        "; saturated: +0.38% node output tokens/s (8 replicas) over the previous load level for "
        "+50.0% median latency"
    )


# --- node scaling refuses what fails the stored-point checks ---------------------------------------


def test_a_node_point_with_a_failed_check_is_refused_naming_the_check():
    with pytest.raises(AnalysisError) as refused:
        check_node_point(node(valid=False, failed_checks=(CHECK,)))
    assert str(refused.value) == (
        "node point node fails a check of its stored aggregates, so its scaling cannot be "
        "computed: output_throughput is 2,600.00/s but 10,000 output tokens make 1,000.00/s"
    )


def test_a_node_point_whose_replicas_lost_requests_is_still_scaled():
    # Its throughput counts only what completed; the result's all_replicas_valid says so.
    check_node_point(node(valid=False, run_valid=False))


def test_a_reference_with_a_failed_check_is_refused_naming_the_check_not_failed_requests():
    reference = point("single", 2000, 46_000, valid=False, failed_checks=(CHECK,))
    with pytest.raises(AnalysisError) as refused:
        scaling(node_throughput=330_000.0, n_replicas=8, gpus_per_replica=1,
                window_seconds=120.0, workload=CASE_STUDY_SPEC, per_replica=[],
                reference=reference)
    message = str(refused.value)
    assert "reference single fails a check of its stored aggregates" in message
    assert "10,000 output tokens make 1,000.00/s" in message
    assert "failed or short responses" not in message


# --- the shared percentage rule and the queue chart sentence --------------------------------------


def test_percentages_keep_two_decimals_below_one_percent_and_one_above():
    assert (pct(0.38), pct(-0.04), pct(0.996), pct(1.04), pct(70.73)) == (
        "+0.38%", "-0.04%", "+1.00%", "+1.0%", "+70.7%"
    )
    assert (percent(0.5), percent(73.14), percent(100.0)) == ("0.50%", "73.1%", "100.0%")


def test_the_queue_chart_sentence_tells_an_import_from_a_silent_engine():
    assert "imported from vllm bench serve" in no_queue_chart_sentence("vllm bench serve", 0)
    assert "/metrics did not answer" in no_queue_chart_sentence(None, 0)
    assert "queue summary of 12 engine samples" in no_queue_chart_sentence(None, 12)
