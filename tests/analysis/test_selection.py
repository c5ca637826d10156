"""Operating point selection: knee, SLO, Pareto frontier and override, on hand-computed cases."""

from __future__ import annotations

import pytest

from analysis.errors import AnalysisError
from analysis.selection import (
    knee,
    override,
    pareto_choice,
    pareto_frontier,
    slo,
)
from tests.analysis.helpers import point


def case_study_levels():
    # The case study's shape: the last step adds 400 / 46,000 = 0.87% throughput while median
    # latency goes 20,000 -> 29,800 ms = +49%.
    return [
        point("c500", 500, 30_000, median_e2el_ms=10_000),
        point("c1000", 1000, 40_000, median_e2el_ms=14_000),
        point("c2000", 2000, 46_000, median_e2el_ms=20_000),
        point("c4000", 4000, 46_400, median_e2el_ms=29_800),
    ]


def test_knee_chooses_the_point_before_the_step_that_stops_paying():
    sel = knee(case_study_levels())
    assert sel.method == "knee"
    assert sel.chosen_key == "c2000"
    assert sel.reason == "the point before the saturation knee"
    # helpers.point leaves load_label empty, so the sentence names the next level by its key.
    assert sel.sentence == (
        "The operating point is the last load level before the knee: going on to c4000 added "
        "+0.87% output tokens/s while median latency rose +49.0%.")
    assert sel.params == {"throughput_gain_pct": 2.0, "latency_growth_pct": 20.0}
    assert sel.evidence.knee_found is True
    assert sel.evidence.found.to_key == "c4000"
    assert sel.evidence.found.throughput_gain_pct == pytest.approx(400 / 46_000 * 100)
    assert sel.evidence.found.latency_growth_pct == pytest.approx(49.0)
    assert len(sel.evidence.steps) == 3


def test_knee_does_not_depend_on_input_order():
    assert knee(list(reversed(case_study_levels()))).chosen_key == "c2000"


def test_knee_stops_at_the_first_qualifying_step():
    levels = case_study_levels() + [point("c8000", 8000, 46_500, median_e2el_ms=60_000)]
    assert knee(levels).chosen_key == "c2000"


def test_knee_needs_both_a_small_gain_and_a_large_latency_growth():
    # Flat throughput but latency only +10%: not a knee at 20%.
    levels = [
        point("a", 1, 100, median_e2el_ms=1000),
        point("b", 2, 150, median_e2el_ms=1100),
        point("c", 4, 151, median_e2el_ms=1210),
    ]
    sel = knee(levels)
    assert sel.reason == "no knee within the sweep"
    assert sel.chosen_key == "c"
    assert sel.evidence.knee_found is False
    assert sel.sentence == (
        "No knee within the sweep: no step added less than 2% output tokens/s while median "
        "latency grew more than 20%, so the highest-throughput point is the operating point.")


def test_knee_thresholds_are_parameters():
    levels = [
        point("a", 1, 100, median_e2el_ms=1000),
        point("b", 2, 150, median_e2el_ms=1100),
        point("c", 4, 151, median_e2el_ms=1210),
    ]
    sel = knee(levels, throughput_gain_pct=2.0, latency_growth_pct=5.0)
    assert sel.chosen_key == "b"
    assert sel.params == {"throughput_gain_pct": 2.0, "latency_growth_pct": 5.0}


def boundary_levels(top_throughput, top_latency_ms):
    # The first step doubles throughput (no knee); the second goes from 100 tok/s at 1,000 ms to
    # the given top level. 100 -> 102 is exactly +2.0% and 1,000 -> 1,200 ms exactly +20.0% in
    # floating point, the default thresholds.
    return [
        point("a", 1, 50, median_e2el_ms=800),
        point("b", 2, 100, median_e2el_ms=1000),
        point("c", 4, top_throughput, median_e2el_ms=top_latency_ms),
    ]


def test_a_gain_exactly_at_the_threshold_is_not_a_knee():
    # The rule is gain < 2%: exactly +2.0% still pays, even for +50% latency.
    sel = knee(boundary_levels(102, 1500))
    assert sel.evidence.steps[1].throughput_gain_pct == 2.0
    assert sel.evidence.knee_found is False
    assert sel.chosen_key == "c"


def test_a_gain_just_under_the_threshold_is_a_knee():
    sel = knee(boundary_levels(101.9, 1500))
    assert sel.evidence.knee_found is True
    assert sel.chosen_key == "b"


def test_latency_growth_exactly_at_the_threshold_is_not_a_knee():
    # The rule is growth > 20%: exactly +20.0% latency for +1% throughput is not yet the knee.
    sel = knee(boundary_levels(101, 1200))
    assert sel.evidence.steps[1].latency_growth_pct == 20.0
    assert sel.evidence.knee_found is False
    assert sel.chosen_key == "c"


def test_latency_growth_just_over_the_threshold_is_a_knee():
    sel = knee(boundary_levels(101, 1201))
    assert sel.evidence.knee_found is True
    assert sel.chosen_key == "b"


def test_knee_without_a_knee_uses_the_highest_throughput_point():
    levels = [
        point("a", 1, 100, median_e2el_ms=1000),
        point("b", 2, 200, median_e2el_ms=1500),
        point("c", 4, 190, median_e2el_ms=1600),  # dropped, but latency only +6.7%
    ]
    sel = knee(levels)
    assert sel.chosen_key == "b"
    assert sel.reason == "no knee within the sweep"


def test_knee_never_steps_from_one_config_to_another_at_one_load():
    # Raising max_num_seqs at one load is the sweep's story across configs, not a load step:
    # one point per config is no ladder, so there is no knee in this sweep.
    levels = [
        point("s1024", 2000, 46_000, max_num_seqs=1024, config_label="seqs=1024",
              median_e2el_ms=20_000),
        point("s256", 2000, 18_000, max_num_seqs=256, config_label="seqs=256",
              median_e2el_ms=16_000),
        point("s2048", 2000, 46_100, max_num_seqs=2048, config_label="seqs=2048",
              median_e2el_ms=31_000),
    ]
    with pytest.raises(AnalysisError, match=(
            r"^no knee in this sweep: .* a step never goes from one config to another; valid "
            r"levels per config: seqs=1024 \(1\), seqs=256 \(1\), seqs=2048 \(1\)$")):
        knee(levels)


def test_points_left_out_leaving_one_level_per_config_give_no_knee_across_configs():
    # An import whose stored-point checks left each config one valid level, at different
    # loads: ordered by load, a walk would quote a "step" from seqs=256 into seqs=2048.
    levels = [
        point("s256-b256", 256, 9_000, max_num_seqs=256, config_label="seqs=256",
              median_e2el_ms=8_000),
        point("s256-b2048", 2048, 1, max_num_seqs=256, config_label="seqs=256", valid=False),
        point("s2048-b256", 256, 1, max_num_seqs=2048, config_label="seqs=2048", valid=False),
        point("s2048-b2048", 2048, 4_430, max_num_seqs=2048, config_label="seqs=2048",
              median_e2el_ms=18_450),
        point("s1024-b512", 512, 20_000, max_num_seqs=1024, config_label="seqs=1024",
              median_e2el_ms=12_000),
    ]
    with pytest.raises(AnalysisError, match=(
            r"valid levels per config: seqs=256 \(1\), seqs=2048 \(1\), seqs=1024 \(1\) "
            r"\(2 invalid point\(s\) left out\)$")):
        knee(levels)


def test_knee_refuses_fewer_than_three_levels():
    with pytest.raises(AnalysisError, match="at least 3 load levels; got 2"):
        knee(case_study_levels()[:2])


def test_knee_counts_only_valid_points_and_says_how_many_were_excluded():
    levels = case_study_levels()[:3]
    levels[1] = point("c1000", 1000, 40_000, median_e2el_ms=14_000, valid=False)
    with pytest.raises(AnalysisError, match=r"got 2 valid point\(s\) \(1 invalid excluded\)"):
        knee(levels)


def test_knee_refuses_missing_latency_data():
    levels = case_study_levels()
    levels[2] = point("c2000", 2000, 46_000)
    with pytest.raises(AnalysisError, match="c2000 has no median_e2el_ms"):
        knee(levels)


def test_knee_refuses_two_points_at_one_load_level():
    levels = case_study_levels() + [point("c2000r1", 2000, 45_000, median_e2el_ms=20_500, repeat=1)]
    with pytest.raises(AnalysisError, match="same load level"):
        knee(levels)


def slo_points():
    return [
        point("a", 1, 1000, p99_e2el_ms=5_000, p95_ttft_ms=100, median_ttft_ms=50),
        point("b", 2, 2000, p99_e2el_ms=12_000, p95_ttft_ms=300, median_ttft_ms=120),
        point("c", 4, 3000, p99_e2el_ms=18_000, p95_ttft_ms=450, median_ttft_ms=200),
        point("d", 8, 3500, p99_e2el_ms=26_000, p95_ttft_ms=480, median_ttft_ms=260),
        point("e", 16, 3600, p99_e2el_ms=40_000, p95_ttft_ms=900, median_ttft_ms=400),
    ]


def test_slo_chooses_the_highest_throughput_within_all_limits_and_names_the_binding_one():
    sel = slo(slo_points(), {"p99_e2el_ms": 20_000, "p95_ttft_ms": 500})
    assert sel.method == "slo"
    assert sel.chosen_key == "c"
    # At c: p99 e2el 18,000 / 20,000 = 0.9, p95 ttft 450 / 500 = 0.9 -> tie, first wins;
    # the next faster point d breaks only the e2el limit, so e2el binds.
    assert sel.evidence.binding_metric == "p99_e2el_ms"
    assert sel.evidence.next_key == "d"
    assert sel.evidence.next_violations == {"p99_e2el_ms": 26_000}
    assert sel.evidence.utilisation == {
        "p99_e2el_ms": pytest.approx(0.9),
        "p95_ttft_ms": pytest.approx(0.9),
    }
    assert sel.params == {"limits": {"p99_e2el_ms": 20_000, "p95_ttft_ms": 500}}
    assert sel.sentence == (
        "The operating point is the highest output throughput within p99_e2el_ms <= 20,000 ms "
        "and p95_ttft_ms <= 500 ms; p99_e2el_ms binds (18,000 of 20,000 ms here) and the next "
        "faster point (d) reaches p99_e2el_ms 26,000 ms."
    )


def test_slo_closest_limit_can_differ_from_the_one_that_excludes_the_next_point():
    sel = slo(slo_points(), {"p99_e2el_ms": 30_000, "p95_ttft_ms": 500})
    # d: e2el 26,000/30,000 = 0.867, ttft 480/500 = 0.96 -> ttft closest; e breaks both, but
    # ttft by 900/500 = 1.8x against e2el 40,000/30,000 = 1.33x, so ttft binds.
    assert sel.chosen_key == "d"
    assert sel.evidence.closest_metric == "p95_ttft_ms"
    assert sel.evidence.binding_metric == "p95_ttft_ms"
    assert list(sel.evidence.next_violations) == ["p95_ttft_ms", "p99_e2el_ms"]


def test_slo_at_the_fastest_point_says_no_faster_point_exists():
    sel = slo(slo_points(), {"p99_e2el_ms": 60_000})
    assert sel.chosen_key == "e"
    assert sel.evidence.next_key is None
    assert sel.evidence.binding_metric == "p99_e2el_ms"
    assert sel.sentence.endswith("and no point of the sweep is faster.")


def test_slo_accepts_p50_for_median():
    sel = slo(slo_points(), {"p50_ttft_ms": 150})
    assert sel.chosen_key == "b"
    assert sel.evidence.values == {"p50_ttft_ms": 120}


def test_slo_says_how_far_off_when_no_point_meets_the_limits():
    with pytest.raises(
        AnalysisError,
        match=r"no point meets the limits: lowest p99_e2el_ms is 5,000 ms \(limit 1,000\)",
    ):
        slo(slo_points(), {"p99_e2el_ms": 1_000})


def test_slo_refuses_a_missing_metric():
    points = slo_points() + [point("f", 32, 3700, p99_e2el_ms=41_000)]
    with pytest.raises(AnalysisError, match="f has no p95_ttft_ms"):
        slo(points, {"p95_ttft_ms": 500})


def test_slo_refuses_an_unknown_metric_and_a_bad_limit():
    with pytest.raises(AnalysisError, match="unknown latency metric 'p42_ttft_ms'"):
        slo(slo_points(), {"p42_ttft_ms": 500})
    with pytest.raises(AnalysisError, match="positive number of ms"):
        slo(slo_points(), {"p95_ttft_ms": 0})
    with pytest.raises(AnalysisError, match="at least one latency limit"):
        slo(slo_points(), {})


def test_slo_ignores_invalid_points():
    points = slo_points()
    points[2] = point("c", 4, 3000, p99_e2el_ms=18_000, p95_ttft_ms=450, valid=False)
    sel = slo(points, {"p99_e2el_ms": 20_000, "p95_ttft_ms": 500})
    assert sel.chosen_key == "b"
    assert sel.evidence.excluded_invalid == ("c",)


def pareto_points():
    return [
        point("A", 1, 1000, median_tpot_ms=10),  # 100 tok/s/user
        point("B", 2, 2000, median_tpot_ms=20),  # 50
        point("C", 3, 1500, median_tpot_ms=25),  # 40: B beats it on both axes
        point("D", 4, 3000, median_tpot_ms=50),  # 20
    ]


def test_pareto_frontier_keeps_undominated_points_in_chart_order():
    frontier = pareto_frontier(pareto_points())
    assert [f.key for f in frontier] == ["A", "B", "D"]
    assert [f.tokens_per_user for f in frontier] == [100, 50, 20]
    assert [f.output_throughput_per_gpu for f in frontier] == [1000, 2000, 3000]


def test_pareto_frontier_divides_throughput_by_gpus_used():
    frontier = pareto_frontier([point("two", 1, 4000, median_tpot_ms=10, gpu_count=2)])
    assert frontier[0].output_throughput_per_gpu == 2000


def test_pareto_frontier_keeps_a_point_equal_on_one_axis_and_better_on_the_other():
    frontier = pareto_frontier(
        [point("x", 1, 1000, median_tpot_ms=10), point("y", 2, 1000, median_tpot_ms=5)]
    )
    assert [f.key for f in frontier] == ["y"]


def test_pareto_frontier_refuses_missing_tpot():
    with pytest.raises(AnalysisError, match="B has no median_tpot_ms"):
        pareto_frontier([point("A", 1, 1000, median_tpot_ms=10), point("B", 2, 2000)])


def test_pareto_choice_takes_most_throughput_per_gpu_at_the_per_user_target():
    sel = pareto_choice(pareto_points(), min_tokens_per_user=45)
    assert sel.method == "pareto"
    assert sel.chosen_key == "B"
    assert sel.params == {"min_tokens_per_user": 45}
    assert [f.key for f in sel.evidence.frontier] == ["A", "B", "D"]
    assert sel.sentence == (
        "The operating point is the highest output tokens/s per GPU on the Pareto frontier with "
        "at least 45.0 tokens/s per user: 2,000 per GPU at 50.0 tokens/s per user."
    )


def test_pareto_choice_refuses_an_unreachable_target():
    with pytest.raises(AnalysisError, match=r"the most is 100$"):
        pareto_choice(pareto_points(), min_tokens_per_user=150)


def test_override_keeps_the_reason_and_what_it_replaced():
    previous = knee(case_study_levels())
    sel = override(case_study_levels(), "c1000", "  customer needs p99 under 15 s  ", previous)
    assert sel.method == "override"
    assert sel.chosen_key == "c1000"
    assert sel.reason == "customer needs p99 under 15 s"
    assert sel.params == {
        "reason": "customer needs p99 under 15 s",
        "replaces_method": "knee",
        "replaces_key": "c2000",
    }
    assert sel.sentence == (
        "The operating point was chosen by an engineer: customer needs p99 under 15 s.")


def test_override_refuses_a_blank_reason_an_unknown_key_and_an_invalid_point():
    levels = case_study_levels() + [point("bad", 8000, 10, valid=False)]
    with pytest.raises(AnalysisError, match="written reason"):
        override(levels, "c1000", "   ")
    with pytest.raises(AnalysisError, match="nope is not part"):
        override(levels, "nope", "because")
    with pytest.raises(AnalysisError, match="not a valid run"):
        override(levels, "bad", "because")


def test_knee_walks_each_config_on_its_own_and_keeps_the_best_operating_point():
    # The demo's shape: three configs, four burst sizes each. Interleaving them by offered
    # concurrency would compare seqs=4 at 32 with seqs=64 at 16; each config is walked alone.
    def cfg(seqs, offered, tput, e2el):
        return point(
            f"seqs={seqs}|burst {offered}", offered, tput, config_label=f"seqs={seqs}",
            max_num_seqs=seqs, median_e2el_ms=e2el,
        )

    points = [
        cfg(4, 16, 506, 3086), cfg(4, 32, 570, 4010), cfg(4, 64, 665, 6670), cfg(4, 128, 557, 17760),
        cfg(64, 16, 1067, 1745), cfg(64, 32, 1997, 2050), cfg(64, 64, 1958, 4120),
        cfg(64, 128, 2017, 6540),
    ]
    selection = knee(points)
    assert selection.chosen_key == "seqs=64|burst 32"
    # 1997 -> 1958 is -1.95%; 2050 -> 4120 ms is +100.98%.
    assert selection.evidence.found.throughput_gain_pct == pytest.approx(-1.9529, abs=1e-3)
    assert selection.evidence.found.latency_growth_pct == pytest.approx(100.976, abs=1e-2)
    assert selection.evidence.per_config == {"seqs=4|burst 64": 665, "seqs=64|burst 32": 1997}


def test_knee_per_config_refuses_when_no_config_has_three_levels():
    points = [
        point("a1", 16, 100, config_label="a", median_e2el_ms=10),
        point("a2", 32, 120, config_label="a", median_e2el_ms=20),
        point("b1", 16, 200, config_label="b", median_e2el_ms=10),
        point("b2", 32, 220, config_label="b", median_e2el_ms=20),
    ]
    with pytest.raises(AnalysisError, match="valid levels per config: a \\(2\\), b \\(2\\)"):
        knee(points)


# -- Boundaries as fixed examples: a rule with < for <= (or the reverse) fails one of these ----


def test_knee_thresholds_below_one_percent_are_compared_as_given():
    # b -> c adds 100 / 20,000 = exactly +0.5% for 1,100 -> 1,500 ms (+36%). At a 0.5% gain
    # threshold that step still pays (the rule is gain < X); at 0.6% it is the knee. A gain
    # rounded or truncated to whole percent (0%) would call it the knee at 0.5% too.
    levels = [
        point("a", 1, 10_000, median_e2el_ms=1_000),
        point("b", 2, 20_000, median_e2el_ms=1_100),
        point("c", 4, 20_100, median_e2el_ms=1_500),
    ]
    at = knee(levels, throughput_gain_pct=0.5)
    assert at.evidence.steps[1].throughput_gain_pct == 0.5
    assert (at.evidence.knee_found, at.chosen_key) == (False, "c")
    past = knee(levels, throughput_gain_pct=0.6)
    assert (past.evidence.knee_found, past.chosen_key) == (True, "b")


def test_a_latency_exactly_at_its_slo_limit_is_within_it():
    # The rule is value <= limit: c's p99 E2EL of 18,000 ms meets a limit of 18,000 ms; 1 ms
    # tighter, c is out and b (12,000 ms) is the fastest point left.
    assert slo(slo_points(), {"p99_e2el_ms": 18_000}).chosen_key == "c"
    assert slo(slo_points(), {"p99_e2el_ms": 17_999}).chosen_key == "b"


def test_an_slo_tie_in_throughput_goes_to_the_lower_load_level():
    # Both deliver 2,000 tok/s within the limit; the one at concurrency 2 queues less. Listed
    # second, so a choice that kept the first of equals would take the other.
    points = [
        point("high", 4, 2000, p99_e2el_ms=12_000),
        point("low", 2, 2000, p99_e2el_ms=9_000),
    ]
    assert slo(points, {"p99_e2el_ms": 20_000}).chosen_key == "low"


def test_a_pareto_point_exactly_at_the_per_user_target_meets_it():
    # B makes 1000 / 20 ms = exactly 50 tokens/s per user: at a target of 50 it is eligible
    # (the rule is >=) and delivers more per GPU than A; just above 50 only A (100) is left.
    assert pareto_choice(pareto_points(), min_tokens_per_user=50).chosen_key == "B"
    assert pareto_choice(pareto_points(), min_tokens_per_user=50.5).chosen_key == "A"


def test_a_step_past_the_knee_that_lost_throughput_reads_as_a_loss():
    # 46,000 -> 41,800 tok/s is -9.13%; 20,000 -> 29,800 ms is +49.0%.
    levels = case_study_levels()[:3] + [point("c4000", 4000, 41_800, median_e2el_ms=29_800)]
    sel = knee(levels)
    assert sel.chosen_key == "c2000"
    assert sel.sentence == (
        "The operating point is the last load level before the knee: going on to c4000 lost "
        "9.1% of its output tokens/s while median latency rose +49.0%.")
