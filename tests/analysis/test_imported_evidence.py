"""Verdicts on an imported point whose queue is the tool's scrape (PointFigures.queue_source):
the verdict its evidence allows, and what the evidence lacked, said beside it."""

from __future__ import annotations

import pytest

from analysis.errors import AnalysisError
from analysis.verdicts import verdict, verdicts_for_sweep
from tests.analysis.helpers import point

SCRAPE = "inference-perf's Prometheus report"


def imported(key="p", offered=100, throughput=1000.0, **kwargs):
    """A stage whose queue came from a tool's scrape: means only, no peaks, limits unknown."""
    values = dict(config_label="defaults", queue_source=SCRAPE, queue_samples=0,
                  mean_waiting=0.0, median_e2el_ms=500.0, max_num_seqs=None,
                  max_num_batched_tokens=None)  # fmt: skip
    values.update(kwargs)
    return point(key, offered, throughput, **values)


def test_nothing_waiting_is_underloaded_without_a_running_count():
    v = verdict(imported(queue_lacks=("running requests",)))
    assert v.kind == "underloaded"
    assert v.sentence == (
        "underloaded: nothing waits (mean 0.0); evidence: inference-perf's Prometheus report, "
        "which lacks running requests, max_num_seqs and max_num_batched_tokens")
    assert v.evidence.lacked == ("running requests", "max_num_seqs", "max_num_batched_tokens")


def test_a_queue_without_a_running_count_or_limits_is_unclear_and_says_why():
    v = verdict(imported(mean_waiting=155.0, queue_lacks=("running requests", "KV cache use")))
    assert v.kind == "unclear"
    assert v.evidence.why == (
        "requests wait (mean 155) but inference-perf's Prometheus report has no count of running "
        "requests and max_num_seqs is not recorded, so the scheduler cap and the token budget "
        "cannot be told apart")


def test_a_full_kv_mean_is_kv_capacity_though_the_scrape_has_no_peak():
    v = verdict(imported(mean_waiting=40.0, mean_kv_usage=0.97, queue_lacks=("running requests",)))
    assert v.kind == "kv_capacity"


def test_a_mean_running_at_the_known_cap_is_the_scheduler_cap_without_a_peak():
    v = verdict(imported(mean_waiting=40.0, mean_running=64.0, max_num_seqs=64, seqs_limit=64,
                         max_num_batched_tokens=2048, token_budget=2048, mean_kv_usage=0.4,
                         preemptions=0.0))  # fmt: skip
    assert v.kind == "scheduler_cap"
    assert v.evidence.lacked == ()
    assert v.sentence.endswith("; evidence: inference-perf's Prometheus report")


def test_a_scrape_without_a_waiting_count_gets_no_verdict():
    with pytest.raises(AnalysisError, match="inference-perf's Prometheus report has no waiting "
                       "count"):  # fmt: skip
        verdict(imported(mean_waiting=None, queue_lacks=("waiting requests",)))


def test_the_ladder_of_imported_stages_shows_where_more_load_only_added_waiting():
    stages = [
        imported("s0", 60, 60.0),
        imported("s1", 2278, 2366.0),
        imported("s2", 8933, 7094.0, mean_waiting=155.0, median_e2el_ms=3700.0),
        imported("s3", 11151, 7183.0, mean_waiting=208.0, median_e2el_ms=4200.0),
    ]
    found = verdicts_for_sweep(stages)
    assert [found[k].evidence.saturated for k in ("s0", "s1", "s2", "s3")] == [
        False, False, False, True]
