"""Bottleneck verdicts: every kind on a hand-built point, and the precedence."""

from __future__ import annotations

import pytest

from analysis.errors import AnalysisError
from analysis.types import WorkloadShape
from analysis.verdicts import (
    verdict,
    verdicts_for_sweep,
)
from tests.analysis.helpers import point


def engine(key="p", offered=2000, throughput=18_000, **kwargs):
    """A point with engine samples: by default a quiet engine with room (cap 256, budget 2048)."""
    values = dict(
        config_label="seqs=256",
        max_num_seqs=256,
        max_num_batched_tokens=2048,
        queue_samples=40,
        mean_running=10.0,
        peak_running=12.0,
        mean_waiting=0.0,
        peak_waiting=0.0,
        peak_kv_usage=0.08,
        mean_kv_usage=0.05,
        preemptions=0.0,
        median_e2el_ms=10_000.0,
    )
    values.update(kwargs)
    return point(key, offered, throughput, **values)


PINNED = dict(
    mean_running=240.0,
    peak_running=256.0,
    mean_waiting=1_500.0,
    peak_waiting=1_744.0,
    peak_kv_usage=0.4,
)
BELOW_CAP_WAITING = dict(
    mean_running=150.0,
    peak_running=180.0,
    mean_waiting=400.0,
    peak_waiting=900.0,
    peak_kv_usage=0.6,
)


def test_a_saturated_client_is_the_verdict_even_without_engine_samples():
    v = verdict(engine(client_saturated=True, queue_samples=0, mean_running=None, **{}))
    assert v.kind == "client_bound"
    assert v.sentence.startswith("client-bound: the load generator was saturated")


def test_a_saturated_client_wins_over_every_engine_limit():
    v = verdict(engine(client_saturated=True, preemptions=5.0, **PINNED))
    assert v.kind == "client_bound"


def test_near_full_kv_is_kv_capacity():
    v = verdict(engine(**{**PINNED, "peak_kv_usage": 0.97}))
    assert v.kind == "kv_capacity"
    assert "scheduler_cap" in v.evidence.also
    assert v.sentence == "KV capacity: peak KV usage 97.0% and 0.0 preemptions"


def test_preemptions_alone_are_kv_capacity():
    v = verdict(
        engine(preemptions=12.0, peak_kv_usage=0.8, **{k: PINNED[k] for k in ("mean_waiting",)})
    )
    assert v.kind == "kv_capacity"
    assert v.evidence.preemptions == 12
    assert v.sentence == "KV capacity: peak KV usage 80.0% and 12.0 preemptions"


def test_running_pinned_at_max_num_seqs_while_requests_wait_is_the_scheduler_cap():
    v = verdict(engine(**PINNED))
    assert v.kind == "scheduler_cap"
    assert v.partial is False
    assert v.evidence.mean_running == 240 and v.evidence.max_num_seqs == 256
    assert v.sentence == (
        "scheduler cap: running pinned at max_num_seqs (mean 240, peak 256 of 256) "
        "while 1,500 requests wait on average"
    )


def test_running_below_half_the_cap_is_not_pinned():
    # 0.5 x 256 = 128: a mean of 120 is below it.
    v = verdict(engine(**{**PINNED, "mean_running": 120.0}))
    assert v.kind == "token_budget"


def test_pinned_running_without_waiting_requests_is_not_the_scheduler_cap():
    # A burst the size of the cap: every request admitted, nothing left to wait.
    v = verdict(engine(**{**PINNED, "mean_waiting": 0.5, "peak_waiting": 30.0}))
    assert v.kind == "underloaded"
    assert v.sentence.startswith(
        "underloaded: nothing waits (mean 0.5) and the load just fills max_num_seqs (peak "
        "running 256 of 256")


def test_steps_at_the_token_budget_with_room_under_the_cap_is_the_token_budget():
    # 0.9 x 2048 = 1843.2: steps averaging 2,000 fill the budget.
    v = verdict(engine(mean_tokens_per_step=2_000.0, **BELOW_CAP_WAITING))
    assert v.kind == "token_budget"
    assert v.partial is False
    assert v.sentence == (
        "token budget: running 150 of 256 on average with 400 waiting and KV at 60.0% peak; "
        "steps average 2,000 of 2048 batched tokens"
    )


def test_token_budget_without_step_counts_says_its_evidence_is_partial():
    v = verdict(engine(**BELOW_CAP_WAITING))
    assert v.kind == "token_budget"
    assert v.partial is True
    assert v.sentence.endswith("no per-step token counts, so the evidence is partial")


def test_steps_well_below_the_budget_leave_the_verdict_unclear():
    v = verdict(engine(mean_tokens_per_step=900.0, **BELOW_CAP_WAITING))
    assert v.kind == "unclear"
    # 900 / 2048 = 43.9%: the figure that rules the budget out stands in the sentence.
    assert "steps averaged 900 tokens, 43.9% of the 2,048-token budget: not the token budget" in (
        v.evidence.why)


def test_more_load_for_no_throughput_is_saturated():
    previous = engine(
        "lo", 1000, 41_800, median_e2el_ms=8_000.0, mean_tokens_per_step=900.0, **BELOW_CAP_WAITING
    )
    current = engine(
        "hi",
        2000,
        42_000,
        median_e2el_ms=12_000.0,
        mean_tokens_per_step=900.0,
        **{**BELOW_CAP_WAITING, "mean_waiting": 1_200.0},
    )
    v = verdict(current, previous)
    # Saturation is the ladder's symptom: it stands beside the cause, never as the verdict.
    assert v.kind == "unclear"
    assert v.evidence.saturated is True
    assert v.evidence.previous_key == "lo"
    assert v.evidence.throughput_gain_pct == pytest.approx(200 / 41_800 * 100)  # 0.48%
    assert v.evidence.latency_growth_pct == pytest.approx(50.0)
    assert v.sentence.endswith(
        "; saturated: +0.48% output tokens/s over the previous load level for +50.0% median "
        "latency")


def test_saturation_never_stands_in_for_a_token_budget_it_cannot_confirm():
    previous = engine("lo", 1000, 41_800, median_e2el_ms=8_000.0, **BELOW_CAP_WAITING)
    current = engine("hi", 2000, 42_000, median_e2el_ms=12_000.0, **BELOW_CAP_WAITING)
    v = verdict(current, previous)
    assert (v.kind, v.partial, v.evidence.saturated) == ("token_budget", True, True)
    assert v.evidence.also == ()


def test_a_pinned_scheduler_cap_is_the_cause_and_saturation_its_symptom():
    previous = engine("lo", 1000, 17_950, median_e2el_ms=8_000.0, **PINNED)
    current = engine("hi", 2000, 18_000, median_e2el_ms=16_000.0, **PINNED)
    v = verdict(current, previous)
    assert v.kind == "scheduler_cap"
    assert v.evidence.saturated is True and v.evidence.also == ()
    assert v.sentence.startswith("scheduler cap: running pinned at max_num_seqs")
    assert "; saturated: +0.28% output tokens/s" in v.sentence


def test_a_real_throughput_gain_is_not_saturation():
    previous = engine(
        "lo", 1000, 30_000, median_e2el_ms=8_000.0, mean_tokens_per_step=900.0, **BELOW_CAP_WAITING
    )
    current = engine(
        "hi", 2000, 42_000, median_e2el_ms=12_000.0, mean_tokens_per_step=900.0, **BELOW_CAP_WAITING
    )
    assert verdict(current, previous).kind == "unclear"


def test_nothing_waiting_and_room_in_the_engine_is_underloaded():
    v = verdict(engine(mean_waiting=0.2, peak_waiting=40.0))
    assert v.kind == "underloaded"
    assert (
        v.sentence == "underloaded: nothing waits (mean 0.2) and the engine has room "
        "(peak running 12.0 of 256, peak KV 8.0%)"
    )


def test_waiting_requests_with_an_unknown_cap_are_unclear_and_say_why():
    v = verdict(engine(max_num_seqs=None, **BELOW_CAP_WAITING))
    assert v.kind == "unclear"
    assert "max_num_seqs is not recorded" in v.sentence


def test_samples_that_leave_most_of_the_point_uncovered_make_the_verdict_unclear():
    # The figures alone would say underloaded; a burst can fill and drain between two samples.
    v = verdict(engine(queue_samples=2, queue_gap_fraction=0.9))
    assert v.kind == "unclear"
    assert "90.0% of the point passed without a sample" in v.sentence
    assert v.evidence.also == ()
    assert verdict(engine(queue_samples=2, queue_gap_fraction=0.5)).kind == "underloaded"


def test_a_verdict_refuses_a_point_without_engine_samples():
    with pytest.raises(AnalysisError, match="no engine samples"):
        verdict(engine(queue_samples=0))


def test_a_verdict_refuses_a_previous_point_of_another_config_or_a_higher_load():
    with pytest.raises(AnalysisError, match="another engine config"):
        verdict(engine("hi", 2000), engine("lo", 1000, config_label="seqs=1024"))
    with pytest.raises(AnalysisError, match="not at a lower load level"):
        verdict(engine("hi", 2000), engine("lo", 4000))


def sweep():
    return [
        engine("s256|1000", 1000, 17_900, median_e2el_ms=9_000.0, **PINNED),
        engine("s256|2000", 2000, 18_000, median_e2el_ms=16_000.0, **PINNED),
        engine(
            "s1024|1000",
            1000,
            41_800,
            config_label="seqs=1024",
            max_num_seqs=1024,
            max_num_batched_tokens=8192,
            median_e2el_ms=8_000.0,
            mean_tokens_per_step=900.0,
            **{**BELOW_CAP_WAITING, "mean_running": 400.0, "peak_running": 500.0,
               "mean_waiting": 0.5},
        ),
        engine(
            "s1024|2000",
            2000,
            42_000,
            config_label="seqs=1024",
            max_num_seqs=1024,
            max_num_batched_tokens=8192,
            median_e2el_ms=12_000.0,
            mean_tokens_per_step=900.0,
            **{
                **BELOW_CAP_WAITING,
                "mean_running": 700.0,
                "peak_running": 900.0,
                "mean_waiting": 0.8,
            },
        ),
    ]


def test_verdicts_for_a_sweep_compare_each_level_with_the_previous_of_its_own_config():
    verdicts = verdicts_for_sweep(sweep())
    assert verdicts["s256|2000"].kind == "scheduler_cap"
    assert verdicts["s256|2000"].evidence.previous_key == "s256|1000"
    # Every request admitted (running 400 -> 700, +75%) for +0.48% output: the step time.
    assert verdicts["s1024|2000"].kind == "step_time"
    assert verdicts["s1024|2000"].evidence.previous_key == "s1024|1000"
    assert verdicts["s1024|1000"].kind == "underloaded"
    assert verdicts["s1024|1000"].evidence.previous_key is None


def test_a_full_token_budget_is_the_cause_and_saturation_its_symptom():
    # Steps average 2,000 of 2048 (>= 0.9 x 2048) below the cap while requests wait, and the
    # step from 1000 added 0.48% throughput for +50% latency: the budget is what to change,
    # saturation only says "stop adding load".
    previous = engine(
        "lo", 1000, 41_800, median_e2el_ms=8_000.0, mean_tokens_per_step=2_000.0,
        **BELOW_CAP_WAITING,
    )
    current = engine(
        "hi", 2000, 42_000, median_e2el_ms=12_000.0, mean_tokens_per_step=2_000.0,
        **BELOW_CAP_WAITING,
    )
    v = verdict(current, previous)
    assert v.kind == "token_budget"
    assert v.partial is False
    assert v.evidence.also == () and v.evidence.saturated is True


def test_a_full_token_budget_ranks_ahead_of_the_step_time_when_both_hold():
    # Steps average 2,000 of 2048 below the cap while requests wait (the token budget), and
    # against the level before running rose 100 -> 150 (+50%) for +0.48% output (the step
    # time): the budget is a setting to change, so it is the verdict; the step time stands
    # beside it.
    previous = engine("lo", 1000, 41_800, mean_tokens_per_step=2_000.0,
                      **{**BELOW_CAP_WAITING, "mean_running": 100.0})
    current = engine("hi", 2000, 42_000, mean_tokens_per_step=2_000.0, **BELOW_CAP_WAITING)
    v = verdict(current, previous)
    assert (v.kind, v.partial) == ("token_budget", False)
    assert v.evidence.also == ("step_time",)


def test_kv_usage_exactly_at_ninety_five_percent_counts_as_full():
    # The rule is peak KV usage >= 0.95: at the boundary the cache is full and outranks the
    # pinned scheduler cap; just below it, the cap is the verdict.
    at = verdict(engine(**{**PINNED, "peak_kv_usage": 0.95}))
    assert at.kind == "kv_capacity"
    assert at.evidence.also == ("scheduler_cap",)
    assert verdict(engine(**{**PINNED, "peak_kv_usage": 0.9499})).kind == "scheduler_cap"


def test_a_node_is_pinned_only_when_its_replicas_average_half_their_cap():
    # 8 replicas of max_num_seqs 256: the node's mean running is the sum over replicas, the peak
    # one replica's. One replica touched 256, but 960 / 8 = 120 per replica on average, below
    # 0.5 x 256: not pinned, and full steps make it the token budget.
    node = {"replicas": 8, "gpu_count": 8, "mean_tokens_per_step": 2_000.0}
    spread = verdict(engine(**{**BELOW_CAP_WAITING, "mean_running": 960.0,
                               "peak_running": 256.0, "mean_waiting": 3_200.0}, **node))
    assert spread.kind == "token_budget"
    assert spread.evidence.replicas == 8
    # 8 x 130 = 1,040 >= 0.5 x 256 x 8 = 1,024: every replica is pinned on average.
    pinned = verdict(engine(**{**PINNED, "mean_running": 1_040.0}, **node))
    assert pinned.kind == "scheduler_cap"


def node_ladder():
    """The single-replica ladder of sweep()'s seqs=256 config, and an 8-replica node run of the
    same config at the same load levels, pinned too (8 x 240 running, 8 x 1,500 waiting)."""
    node = {
        "replicas": 8, "gpu_count": 8, "mean_running": 1_920.0, "peak_running": 256.0,
        "mean_waiting": 12_000.0, "peak_waiting": 14_000.0, "peak_kv_usage": 0.4,
    }
    return [
        engine("s256|1000|x8", 1000, 143_000, median_e2el_ms=9_500.0, **node),
        engine("s256|2000|x8", 2000, 144_000, median_e2el_ms=17_000.0, **node),
    ]


def test_a_node_run_beside_single_replica_points_is_judged_on_its_own_ladder():
    verdicts = verdicts_for_sweep(sweep() + node_ladder())
    assert len(verdicts) == 6
    assert verdicts["s256|2000"].evidence.previous_key == "s256|1000"
    assert verdicts["s256|2000|x8"].evidence.previous_key == "s256|1000|x8"
    assert verdicts["s256|2000|x8"].kind == "scheduler_cap"
    assert verdicts["s256|1000|x8"].evidence.previous_key is None


def test_another_workload_spec_beside_a_point_is_its_own_ladder():
    other = WorkloadShape(input_tokens_min=1000, input_tokens_max=1000, output_tokens=1000)
    long_prompts = engine("s256|2000|long", 2000, 9_000, workload=other, **PINNED)
    verdicts = verdicts_for_sweep(sweep() + [long_prompts])
    assert verdicts["s256|2000|long"].evidence.previous_key is None
    assert verdicts["s256|2000"].evidence.previous_key == "s256|1000"


def test_two_points_on_one_ladder_at_one_load_level_are_refused():
    twin = engine("s256|2000|again", 2000, 18_100, median_e2el_ms=16_100.0, **PINNED)
    with pytest.raises(AnalysisError, match="share config, replica count, workload spec, repeat"):
        verdicts_for_sweep(sweep() + [twin])


def test_a_verdict_refuses_a_previous_point_on_another_replica_count():
    single, node = engine("lo", 1000), engine("hi", 2000, replicas=8, gpu_count=8)
    with pytest.raises(AnalysisError, match="another replica count or workload spec"):
        verdict(node, single)


# -- Each threshold exactly at its boundary and one step past it -------------------------------
# A rule written with > where it says >= (or the reverse) fails one of these fixed examples.


def test_mean_running_exactly_at_half_the_cap_is_pinned():
    # The rule is mean running >= 0.5 x 256 = 128.
    assert verdict(engine(**{**PINNED, "mean_running": 128.0})).kind == "scheduler_cap"
    assert verdict(engine(**{**PINNED, "mean_running": 127.9})).kind == "token_budget"


def test_one_request_waiting_on_average_counts_as_waiting():
    # The rule is mean waiting >= 1.0: at 1.0 the pinned engine is held by its cap; at 0.99
    # nothing waits and the cap is merely filled.
    assert verdict(engine(**{**PINNED, "mean_waiting": 1.0})).kind == "scheduler_cap"
    below = verdict(engine(**{**PINNED, "mean_waiting": 0.99}))
    assert below.kind == "underloaded"
    assert "the load just fills max_num_seqs" in below.sentence


def test_steps_exactly_at_ninety_percent_of_the_budget_fill_it():
    # The rule is mean tokens per step >= 0.9 x 2048 = 1,843.2 (exact: 0.9 x 2^11).
    at = verdict(engine(mean_tokens_per_step=1_843.2, **BELOW_CAP_WAITING))
    assert (at.kind, at.partial) == ("token_budget", False)
    assert verdict(engine(mean_tokens_per_step=1_843.1, **BELOW_CAP_WAITING)).kind == "unclear"


def saturation_step(throughput: float, median_e2el_ms: float, mean_waiting: float = 400.0):
    """(current, previous): 1000 -> 2000 requests from 40,000 tok/s at 8,000 ms, with 400
    waiting before. Steps well below the budget and running level, so no cause holds and only
    the symptom can change."""
    previous = engine(
        "lo", 1000, 40_000, median_e2el_ms=8_000.0, mean_tokens_per_step=900.0,
        **BELOW_CAP_WAITING,
    )
    current = engine(
        "hi", 2000, throughput, median_e2el_ms=median_e2el_ms, mean_tokens_per_step=900.0,
        **{**BELOW_CAP_WAITING, "mean_waiting": mean_waiting},
    )
    return current, previous


def test_a_throughput_gain_exactly_at_two_percent_is_not_saturation():
    # The rule is gain < 2%: 40,000 -> 40,800 is exactly +2.0% (for +50% latency) and still
    # pays; 40,799 is +1.9975% and does not.
    at = verdict(*saturation_step(40_800, 12_000.0))
    assert at.evidence.throughput_gain_pct == 2.0
    assert at.evidence.saturated is False
    assert verdict(*saturation_step(40_799, 12_000.0)).evidence.saturated is True


def test_latency_growth_exactly_at_five_percent_is_saturation():
    # The rule is growth >= 5%: 8,000 -> 8,400 ms is exactly +5.0% for +0.25% throughput;
    # 8,399 ms is +4.99%, and with waiting unchanged (400 -> 400) nothing else says saturated.
    at = verdict(*saturation_step(40_100, 8_400.0))
    assert at.evidence.latency_growth_pct == 5.0
    assert at.evidence.saturated is True
    assert verdict(*saturation_step(40_100, 8_399.0)).evidence.saturated is False


def test_more_requests_waiting_is_saturation_even_when_latency_barely_grows():
    # +0.25% throughput and +1.25% latency (8,000 -> 8,100 ms), but 401 wait where 400 did:
    # the added load only queued. With waiting unchanged it is not saturation.
    assert verdict(*saturation_step(40_100, 8_100.0, mean_waiting=401.0)).evidence.saturated
    assert not verdict(*saturation_step(40_100, 8_100.0, mean_waiting=400.0)).evidence.saturated


def test_the_demos_blank_token_budget_is_ruled_out_by_its_steps_not_called_partial():
    # The demo at max_num_seqs 64 on the CPU engine: 40 running of 64 while 30 wait, steps of
    # 6 tokens against vLLM's CPU default of 2,048 (6 / 2048 = 0.29%).
    point = engine(config_label="seqs=64", max_num_seqs=64, max_num_batched_tokens=None,
                   token_budget=2048, limits_from_defaults=("max_num_batched_tokens",),
                   mean_running=40.0, peak_running=60.0, mean_waiting=30.0, peak_waiting=80.0,
                   mean_tokens_per_step=6.0)
    v = verdict(point)
    assert v.kind == "unclear" and v.partial is False
    assert v.evidence.max_num_batched_tokens == 2048
    assert v.sentence == (
        "unclear: requests wait with running below max_num_seqs and KV not full, and steps "
        "averaged 6.0 tokens, 0.29% of the 2,048-token budget (vLLM's default): not the token "
        "budget; compare with the next load level")


def test_a_cap_that_is_vllms_default_is_marked_where_the_sentence_quotes_it():
    point = engine(at_cap_share=0.9, limits_from_defaults=("max_num_seqs",),
                   **{**SMALL_CAP_QUEUED, "max_num_seqs": None, "seqs_limit": 4})
    assert "(mean 3.2, peak 4.0 of 4 (vLLM's default))" in verdict(point).sentence


def test_without_a_known_budget_a_token_budget_verdict_stays_partial():
    point = engine(max_num_batched_tokens=None, mean_tokens_per_step=6.0, **BELOW_CAP_WAITING)
    v = verdict(point)
    assert v.kind == "token_budget" and v.partial is True


# The demo's max_num_seqs 4 under bursts: the mean running sits at 3.2-3.7 of 4 (ramp-up,
# drain) while requests wait, but running is at 4 for nearly all of the time they wait.
SMALL_CAP_QUEUED = dict(config_label="seqs=4", max_num_seqs=4, max_num_batched_tokens=2048,
                        mean_running=3.2, peak_running=4.0, mean_waiting=7.0, peak_waiting=28.0,
                        mean_tokens_per_step=4.0)


def test_a_small_cap_under_a_queue_is_the_scheduler_cap_though_its_mean_sits_below_it():
    v = verdict(engine(at_cap_share=0.94, **SMALL_CAP_QUEUED))
    assert v.kind == "scheduler_cap"
    assert v.sentence.startswith(
        "scheduler cap: running pinned at max_num_seqs for 94.0% of the time requests waited "
        "(mean 3.2, peak 4.0 of 4)")


@pytest.mark.parametrize("share, kind", [(0.51, "scheduler_cap"), (0.5, "unclear")])
def test_more_than_half_the_queued_time_at_the_cap_pins_it(share, kind):
    assert verdict(engine(at_cap_share=share, **SMALL_CAP_QUEUED)).kind == kind


def test_without_the_record_or_samples_the_mean_decides():
    assert verdict(engine(**SMALL_CAP_QUEUED)).kind == "scheduler_cap"  # 3.2 >= 0.5 x 4
    assert verdict(engine(**{**SMALL_CAP_QUEUED, "mean_running": 1.9})).kind == "unclear"


# -- The engine's step time and deferred admission ----------------------------------------------


def wider_step(running_before: float, running_after: float, throughput_after: float, cap=512,
               **after):
    """(current, previous): burst 64 -> 128 with nothing waiting, 1,000 output tok/s before."""
    room = dict(mean_waiting=0.2, peak_waiting=4.0, max_num_seqs=cap, config_label=f"seqs={cap}")
    previous = engine("lo", 64, 1_000, **{"mean_running": running_before,
                                          "peak_running": running_before + 4, **room})
    current = engine("hi", 128, throughput_after, **{
        "mean_running": running_after, "peak_running": running_after + 4, **room, **after})
    return current, previous


def test_a_wider_batch_for_little_more_output_is_the_engine_step_time():
    # Running 50 -> 100 (+100%) for +10% output: elasticity log 1.1 / log 2 = 0.14.
    v = verdict(*wider_step(50.0, 100.0, 1_100))
    assert v.kind == "step_time"
    assert v.evidence.running_growth_pct == pytest.approx(100.0)
    assert v.sentence.startswith(
        "engine step time: mean running rose +100.0% over the previous load level (to 100) "
        "for +10.0% output tokens/s")


def test_a_wider_batch_that_turns_into_output_is_room_not_the_step_time():
    # +100% running for +60% output: the engine still had room.
    assert verdict(*wider_step(50.0, 100.0, 1_600)).kind == "underloaded"


def test_the_step_time_needs_output_under_the_square_root_of_the_running_growth():
    # The rule is elasticity < 0.5: for a doubled batch, output under sqrt(2) = 1.41421x.
    # 1,000 -> 1,415 is 0.5008 and not it; 1,414 is 0.4998 and is.
    assert verdict(*wider_step(50.0, 100.0, 1_415)).kind == "underloaded"
    at = verdict(*wider_step(50.0, 100.0, 1_414))
    assert at.kind == "step_time"
    assert at.evidence.output_elasticity == pytest.approx(0.49978, abs=1e-5)


def test_output_that_fell_for_a_wider_batch_is_the_step_time():
    assert verdict(*wider_step(50.0, 100.0, 900)).kind == "step_time"


def test_the_step_time_needs_running_to_grow_at_least_a_fifth():
    # +20% running (50 -> 60) for no output counts; +19.8% (50 -> 59.9) is too little to say.
    assert verdict(*wider_step(50.0, 60.0, 1_000)).kind == "step_time"
    assert verdict(*wider_step(50.0, 59.9, 1_000)).kind == "underloaded"


def test_a_pinned_scheduler_cap_outranks_the_step_time():
    # Both hold: running grew +100% for no output, and it sits at the cap while 60 wait.
    current, previous = wider_step(50.0, 100.0, 1_000, cap=100, peak_running=100.0,
                                   mean_waiting=60.0, at_cap_share=0.9)
    v = verdict(current, previous)
    assert v.kind == "scheduler_cap"
    assert v.evidence.also == ("step_time",)


def test_kv_capacity_outranks_the_step_time():
    v = verdict(*wider_step(50.0, 100.0, 1_000, preemptions=3.0))
    assert v.kind == "kv_capacity" and "step_time" not in v.evidence.also


def test_requests_mostly_deferred_are_deferred_admission_not_the_cap():
    # Pinned at the cap, but 30 of the 60 waiting wait deferred (a LoRA slot, a grammar).
    deferred = dict(PINNED, mean_waiting=60.0, mean_waiting_deferred=30.0, at_cap_share=0.9)
    v = verdict(engine(**deferred))
    assert v.kind == "deferred"
    assert v.evidence.also == ("scheduler_cap",)
    assert v.sentence.startswith("deferred admission: 30.0 of 60.0 waiting requests")
    # The rule is deferred >= half the waiting: 29.9 of 60 is the cap's queue.
    assert verdict(engine(**{**deferred, "mean_waiting_deferred": 29.9})).kind == "scheduler_cap"


def test_kv_capacity_outranks_deferred_admission():
    v = verdict(engine(**dict(PINNED, mean_waiting=60.0, mean_waiting_deferred=60.0,
                              preemptions=2.0)))
    assert v.kind == "kv_capacity" and v.evidence.also[0] == "deferred"
