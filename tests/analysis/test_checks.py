"""Checks of a stored point's aggregates, and what a failed check keeps the point out of.

Every figure below is computed by hand in the comment beside it. The base point: a burst of 100
requests, all completed, 64 input and 256 output tokens each, in a 10 s window:
25,600 output tokens / 10 s = 2,560 tok/s; 100 requests / 10 s = 10 req/s;
(6,400 + 25,600) tokens / 10 s = 3,200 tok/s.
"""

from __future__ import annotations

from typing import Any

import pytest

from analysis import repeats, selection
from analysis.checks import failed_checks
from analysis.convert import from_point_result
from analysis.errors import AnalysisError
from runner.schema.plan import LoadSpec
from runner.schema.result import Metrics, PointResult, ReplicaResult
from tests import factories

# The latencies of the base point, all inside its 10 s window.
LATENCIES_MS = dict(
    median_ttft_ms=120.0, p99_ttft_ms=350.0, median_e2el_ms=5_200.0, p99_e2el_ms=9_000.0
)


def metrics(**overrides: Any) -> Metrics:
    """The base point's aggregates (the factory's burst of 100 requests) with these figures."""
    return factories.metrics(**{**LATENCIES_MS, **overrides})


def result(
    *,
    load: LoadSpec | None = None,
    repeat: int = 0,
    replicas: int = 1,
    per_replica: list[ReplicaResult] | None = None,
    **metric_overrides: Any,
) -> PointResult:
    return factories.point_result(
        load=load,
        repeat=repeat,
        replicas=replicas,
        per_replica=per_replica or [],
        metrics=metrics(**metric_overrides),
    )


def codes(p: PointResult) -> list[str]:
    return [check.code for check in failed_checks(p)]


# -- A consistent point ------------------------------------------------------------------------


def test_a_point_whose_figures_agree_with_its_counts_passes_every_check():
    assert failed_checks(result()) == []


def test_the_shared_factory_builds_points_whose_figures_agree_unless_told_otherwise():
    # Every test that builds a point through tests/factories.py relies on this.
    assert failed_checks(factories.point_result()) == []
    # 8 replicas x 100 requests: the factory counts 800 completed, their tokens and rates.
    assert failed_checks(factories.point_result(replicas=8)) == []
    # 1,234.5 tok/s over 10 s is 12,345 output tokens; the burst latencies fit the window.
    claimed = factories.metrics_at(1_234.5, **factories.BURST_LATENCIES_MS)
    assert claimed.total_output_tokens == 12_345
    assert failed_checks(factories.point_result(metrics=claimed)) == []


def test_a_figure_the_point_does_not_carry_is_not_a_failure():
    bare = result(median_ttft_ms=None, p99_ttft_ms=None, median_e2el_ms=None, p99_e2el_ms=None)
    assert failed_checks(bare) == []


# -- Throughputs against their counts over the window ----------------------------------------


def test_output_throughput_above_its_tokens_over_the_window_fails_with_the_numbers():
    # Claims 2,600 tok/s; 25,600 tokens / 10 s = 2,560: +1.6%.
    [check] = failed_checks(result(output_throughput=2_600.0))
    assert check.code == "output-throughput"
    assert check.sentence == (
        "output_throughput is 2,600.00/s but 25,600 output tokens over the 10 s window make "
        "2,560.00/s (+1.6%); they must agree within 0.5%."
    )


def test_output_throughput_exactly_half_a_percent_off_still_passes():
    # 2,560 x 1.005 = 2,572.8 and 2,560 x 0.995 = 2,547.2: both on the boundary.
    assert codes(result(output_throughput=2_572.8)) == []
    assert codes(result(output_throughput=2_547.2)) == []


def test_output_throughput_just_beyond_half_a_percent_fails_on_either_side():
    # 2,573 is +0.51% and 2,547 is -0.51% of 2,560.
    assert codes(result(output_throughput=2_573.0)) == ["output-throughput"]
    assert codes(result(output_throughput=2_547.0)) == ["output-throughput"]


def test_request_throughput_counts_completed_requests_over_the_window():
    # 100 completed / 10 s = 10 req/s; 10.1 is +1%.
    [check] = failed_checks(result(request_throughput=10.1))
    assert check.code == "request-throughput"
    assert "100 completed requests over the 10 s window make 10.00/s (+1.0%)" in check.sentence


def test_total_token_throughput_counts_input_and_output_tokens():
    # (6,400 + 25,600) / 10 s = 3,200 tok/s; 2,560 (output only) is -20%.
    [check] = failed_checks(result(total_token_throughput=2_560.0))
    assert check.code == "total-token-throughput"
    assert "32,000 input + output tokens over the 10 s window make 3,200.00/s" in check.sentence


def test_failed_requests_count_in_the_window_but_not_in_the_rates():
    # 95 completed, 5 failed: 95 x 256 = 24,320 tokens / 10 s = 2,432 tok/s; 95 / 10 = 9.5 req/s;
    # (95 x 64 + 24,320) / 10 = (6,080 + 24,320) / 10 = 3,040 tok/s.
    point = result(
        completed=95, failed=5, valid=False, total_input_tokens=6_080, total_output_tokens=24_320,
        request_throughput=9.5, output_throughput=2_432.0, total_token_throughput=3_040.0,
    )
    assert failed_checks(point) == []


def test_a_point_that_completed_nothing_may_claim_no_throughput():
    # 0 tokens over 10 s: any claimed rate is made up; no percentage of a zero rate exists.
    [check] = failed_checks(result(
        completed=0, failed=100, valid=False, total_input_tokens=0, total_output_tokens=0,
        request_throughput=0.0, output_throughput=5.0, total_token_throughput=0.0,
        median_ttft_ms=None, p99_ttft_ms=None, median_e2el_ms=None, p99_e2el_ms=None,
    ))
    assert check.code == "output-throughput"
    assert "make 0.00/s; they must agree" in check.sentence


# -- The window ------------------------------------------------------------------------------


def test_a_point_that_completed_requests_in_no_time_fails_and_its_rates_are_not_divided():
    [check] = failed_checks(result(duration=0.0))
    assert check.code == "empty-window"
    assert check.sentence.startswith(
        "100 completed requests and 25,600 output tokens in a window of 0 s"
    )


def test_a_window_of_no_time_may_not_claim_output_tokens_either():
    [check] = failed_checks(result(
        duration=0.0, completed=0, failed=100, valid=False, total_output_tokens=25_600
    ))
    assert check.code == "empty-window"
    assert check.sentence.startswith("0 completed requests and 25,600 output tokens")


def test_an_empty_window_with_nothing_completed_is_no_failure():
    empty = result(
        duration=0.0, completed=0, failed=100, valid=False, total_input_tokens=0,
        total_output_tokens=0, request_throughput=0.0, output_throughput=0.0,
        total_token_throughput=0.0, median_ttft_ms=None, p99_ttft_ms=None,
        median_e2el_ms=None, p99_e2el_ms=None,
    )
    assert failed_checks(empty) == []


# -- Requests against the load -----------------------------------------------------------------


def test_completed_plus_failed_must_be_the_requests_the_load_sent():
    point = result(load=LoadSpec(shape="burst", num_requests=1_000))
    [check] = failed_checks(point)
    assert check.code == "request-count"
    assert check.sentence == "100 completed + 0 failed = 100 requests, but the load sent 1000."


def test_a_node_run_sent_the_load_to_every_replica():
    # 8 replicas x 100 requests = 800; the node's figures pool them: 800 x 256 = 204,800
    # tokens / 10 s = 20,480 tok/s, 80 req/s, 800 x 320 / 10 = 25,600 tok/s in and out.
    # The factory derives those tokens and rates from the 800 completed requests.
    assert failed_checks(result(replicas=8, completed=800)) == []
    one_replicas_worth = result(replicas=8)  # 100 requests: what a single replica was sent
    [check] = failed_checks(one_replicas_worth)
    assert check.sentence == (
        "100 completed + 0 failed = 100 requests, but the load sent 800 "
        "(100 to each of 8 replicas)."
    )


def test_each_replica_of_a_node_run_must_account_for_its_own_requests():
    def replica(i: int, completed: int, failed: int = 0) -> ReplicaResult:
        # Each replica's own rates, derived by the factory: completed x 64 input and x 256
        # output tokens over its 10 s window.
        return ReplicaResult(
            replica=i, base_url=f"http://127.0.0.1:{8001 + i}",
            metrics=metrics(completed=completed, failed=failed),
        )

    def node(*replicas: ReplicaResult) -> PointResult:
        # 200 completed: 12,800 + 51,200 tokens, 20 req/s and 5,120 tok/s over 10 s.
        return result(replicas=2, per_replica=list(replicas), completed=200)

    [check] = failed_checks(node(replica(0, 100), replica(1, 90)))
    assert check.sentence == (
        "Replica 1: 90 completed + 0 failed = 90 requests, but it was sent 100."
    )
    # 90 completed + 10 failed: all 100 the replica was sent.
    assert failed_checks(node(replica(0, 100), replica(1, 90, failed=10))) == []


# -- Burst latencies against the window --------------------------------------------------------


def test_a_burst_whose_median_latency_exceeds_its_window_fails():
    [check] = failed_checks(result(median_e2el_ms=10_500.0, p99_e2el_ms=10_000.0))
    assert check.code == "latency-beyond-window"
    assert check.sentence.startswith(
        "median_e2el_ms is 10,500.0 ms, longer than the burst's whole 10 s window"
    )


def test_a_burst_latency_equal_to_its_window_or_a_rounding_above_it_passes():
    # The last request may end at the window's end; 10,000.0005 ms is float rounding, not time.
    assert failed_checks(result(p99_e2el_ms=10_000.0)) == []
    assert failed_checks(result(p99_e2el_ms=10_000.0005)) == []
    assert codes(result(p99_e2el_ms=10_000.01)) == ["latency-beyond-window"]


def test_every_bounded_statistic_of_a_burst_is_checked():
    bounded = dict(
        mean_ttft_ms=11_000.0, median_ttft_ms=11_000.0, p90_ttft_ms=11_000.0,
        p95_ttft_ms=11_000.0, p99_ttft_ms=11_000.0, mean_e2el_ms=11_000.0,
        p90_e2el_ms=11_000.0, p95_e2el_ms=11_000.0, p99_e2el_ms=11_000.0,
        median_sched_ttft_ms=11_000.0, p99_sched_e2el_ms=11_000.0,
        other_percentiles={"p99.9_e2el_ms": 11_000.0},
    )
    names = [check.sentence.split(" ")[0] for check in failed_checks(result(**bounded))]
    assert sorted(names) == sorted([*bounded.keys() - {"other_percentiles"}, "p99.9_e2el_ms"])


def test_per_token_latencies_and_spreads_are_not_held_to_the_window():
    # TPOT and ITL are bounded only as a fraction of E2EL; a std is no latency at all.
    loose = result(p99_tpot_ms=20_000.0, p99_itl_ms=20_000.0, std_e2el_ms=20_000.0,
                   other_percentiles={"p99.9_itl_ms": 20_000.0})
    assert failed_checks(loose) == []


def test_only_a_burst_is_held_to_its_window():
    closed_loop = result(
        load=LoadSpec(shape="concurrency", num_requests=100, concurrency=16),
        median_e2el_ms=15_000.0,
    )
    assert failed_checks(closed_loop) == []


# -- Left out of choices -----------------------------------------------------------------------


def level(requests: int, duration: float, median_e2el_ms: float, **overrides: Any) -> PointResult:
    """A burst of `requests`, 256 output and 64 input tokens each, over `duration` seconds.

    The factory derives the token totals and the rates (tokens / duration) from those counts.
    """
    values: dict[str, Any] = dict(
        completed=requests, duration=duration, median_e2el_ms=median_e2el_ms,
        p99_e2el_ms=median_e2el_ms,
    )
    values.update(overrides)
    return result(load=LoadSpec(shape="burst", num_requests=requests), **values)


def ladder(**at_400: Any) -> list[PointResult]:
    """Four load levels; the 400-request level takes the overrides.

    100: 25,600 / 10 s = 2,560 tok/s at 5,000 ms; 200: 51,200 / 12.8 s = 4,000 (+56%) at 6,000
    ms; 400: 102,400 / 20 s = 5,120 (+28%) at 8,000 ms; 800: 204,800 / 40 s = 5,120 (+0%) at
    16,000 ms (+100%): the knee, so 400 is the operating point.
    """
    return [
        level(100, 10.0, 5_000.0),
        level(200, 12.8, 6_000.0),
        level(400, 20.0, 8_000.0, **at_400),
        level(800, 40.0, 16_000.0),
    ]


KEY_200, KEY_400, KEY_800 = (ladder()[i].key for i in (1, 2, 3))
# 400 requests claiming 5,200 tok/s where 102,400 tokens / 20 s = 5,120 (+1.6%).
INFLATED = {"output_throughput": 5_200.0}


def figures(points: list[PointResult]) -> list[Any]:
    return [from_point_result(p) for p in points]


def test_the_knee_leaves_out_a_point_whose_throughput_disagrees_with_its_tokens():
    assert selection.knee(figures(ladder())).chosen_key == KEY_400
    choice = selection.knee(figures(ladder(**INFLATED)))
    # Without 400: 200 -> 800 adds +28% and no step is a knee; the highest is chosen.
    assert choice.chosen_key == KEY_800
    assert choice.evidence.excluded_invalid == (KEY_400,)


def test_an_slo_choice_leaves_out_a_point_whose_throughput_disagrees_with_its_tokens():
    limits = {"median_e2el_ms": 10_000.0}  # 100, 200 and 400 are within; 400 delivers the most
    assert selection.slo(figures(ladder()), limits).chosen_key == KEY_400
    choice = selection.slo(figures(ladder(**INFLATED)), limits)
    assert choice.chosen_key == KEY_200
    assert choice.evidence.excluded_invalid == (KEY_400,)


def test_capacity_rests_only_on_repeats_whose_figures_agree():
    # Repeat 1 claims 4,800 tok/s where its 102,400 tokens / 20 s make 5,120 (-6.25%): taken,
    # it would be the lowest repeat and so the capacity.
    good = level(400, 20.0, 8_000.0)
    understated = level(400, 20.0, 8_000.0, output_throughput=4_800.0).model_copy(
        update={"repeat": 1}
    )
    [estimate] = repeats.capacity_by_setting(figures([good, understated])).values()
    assert (estimate.capacity, estimate.repeats) == (5_120.0, 1)
    assert [p.repeat for p in repeats.lowest_repeats(figures([good, understated]))] == [0]


def test_an_engineer_may_still_choose_such_a_point_with_a_written_reason():
    points = figures(ladder(**INFLATED))
    reason = "tokens re-counted from the engine log; the stored rate was rounded by the importer"
    assert selection.override(points, KEY_400, reason).chosen_key == KEY_400


def test_an_override_of_such_a_point_needs_a_written_reason():
    with pytest.raises(AnalysisError, match="written reason"):
        selection.override(figures(ladder(**INFLATED)), KEY_400, "  ")


def test_an_override_never_takes_a_run_with_failed_requests_whatever_its_checks_say():
    # 390 completed + 10 failed: an invalid run, and its 5,200 tok/s disagrees with its tokens.
    points = figures(ladder(completed=390, failed=10, valid=False, **INFLATED))
    with pytest.raises(AnalysisError, match="not a valid run"):
        selection.override(points, KEY_400, "the engineer insists")
