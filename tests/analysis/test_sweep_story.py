"""The sweep's story across engine configs: which verdict stands for each config, the steps one
setting at a time, the story of each step, and why a sweep has no summary."""

from __future__ import annotations

import pytest

from analysis.errors import AnalysisError
from analysis.sweep_story import summarize_sweep_change
from analysis.verdicts import verdict, verdicts_for_sweep
from tests.analysis.helpers import point
from tests.analysis.test_node_sentences import node
from tests.analysis.test_verdicts import PINNED, engine, sweep


def test_the_sweep_summary_says_what_raising_max_num_seqs_changed():
    summary = summarize_sweep_change(list(verdicts_for_sweep(sweep()).values()))
    assert summary.sentence == (
        "raising max_num_seqs from 256 to 1024 and max_num_batched_tokens from 2048 to 8192 "
        "moved the bottleneck from the scheduler cap to the engine's step time"
    )
    assert (summary.overall.from_key, summary.overall.to_key) == ("s256|2000", "s1024|2000")
    assert (summary.overall.from_throughput, summary.overall.to_throughput) == (18_000, 42_000)
    assert len(summary.steps) == 1


def test_the_sweep_summary_names_only_the_setting_that_changed():
    points = sweep()
    points = [
        (
            p
            if p.config_label == "seqs=256"
            else point(
                p.key,
                p.offered_concurrency,
                p.output_throughput,
                **{
                    **{
                        f: getattr(p, f)
                        for f in p.__dataclass_fields__
                        if f not in ("key", "offered_concurrency", "output_throughput")
                    },
                    "max_num_batched_tokens": 2048,
                },
            )
        )
        for p in points
    ]
    summary = summarize_sweep_change(list(verdicts_for_sweep(points).values()))
    assert summary.sentence == (
        "raising max_num_seqs from 256 to 1024 moved the bottleneck from the scheduler cap to "
        "the engine's step time"
    )


def test_the_sweep_summary_walks_configs_in_order_and_says_when_nothing_moved():
    verdicts = list(verdicts_for_sweep(sweep()).values())
    extra = verdict(
        engine(
            "s512|2000",
            2000,
            30_000,
            config_label="seqs=512",
            max_num_seqs=512,
            **{**PINNED, "mean_running": 500.0, "peak_running": 512.0},
        )
    )
    summary = summarize_sweep_change(verdicts + [extra])
    assert [s.sentence for s in summary.steps] == [
        "raising max_num_seqs from 256 to 512 left the bottleneck at the scheduler cap",
        "raising max_num_seqs from 512 to 1024 and max_num_batched_tokens from 2048 to 8192 "
        "moved the bottleneck from the scheduler cap to the engine's step time",
    ]
    assert summary.overall.from_key == "s256|2000" and summary.overall.to_key == "s1024|2000"


def test_the_sweep_summary_names_configs_that_differ_in_another_setting():
    a = verdict(engine("a", 2000, config_label="seqs=256,kv=auto", **PINNED))
    b = verdict(engine("b", 2000, config_label="seqs=256,kv=fp8", mean_waiting=0.0))
    summary = summarize_sweep_change([a, b])
    assert summary.sentence == (
        "changing the engine config from seqs=256,kv=auto to seqs=256,kv=fp8 moved the bottleneck "
        "from the scheduler cap to no limit (underloaded)"
    )


def test_the_sweep_summary_needs_two_configs():
    with pytest.raises(AnalysisError, match="one engine config"):
        summarize_sweep_change([verdict(engine(**PINNED))])


def test_the_sweep_summary_stands_each_config_on_its_single_replica_points():
    # The node run sits at a higher load than any single-replica point; the summary still joins
    # the single-replica verdicts, so its throughputs are one engine's, not a node's.
    node = engine("s1024|4000|x8", 4000, 330_000, config_label="seqs=1024", max_num_seqs=1024,
                  max_num_batched_tokens=8192, replicas=8, gpu_count=8, **PINNED)
    found = verdicts_for_sweep(sweep() + [node])
    summary = summarize_sweep_change(list(found.values()))
    assert (summary.overall.from_key, summary.overall.to_key) == ("s256|2000", "s1024|2000")
    assert summary.overall.to_throughput == 42_000


# -- Sweeps over several engine settings ------------------------------------------------------


def grid_point(seqs: int, tokens: int, **kwargs):
    """The grid seqs {4, 16} x tokens {256, 2048}: 4-sequence engines pinned at their cap with
    requests waiting, 16-sequence ones with nothing waiting."""
    pinned = dict(mean_running=4.0, peak_running=4.0, mean_waiting=60.0, peak_waiting=60.0)
    room = dict(mean_running=10.0, peak_running=12.0)
    state = pinned if seqs == 4 else room
    return verdict(engine(
        f"s{seqs}t{tokens}", 64, 100.0 * seqs, config_label=f"seqs={seqs},tokens={tokens}",
        max_num_seqs=seqs, max_num_batched_tokens=tokens, **{**state, **kwargs},
    ))


def test_a_two_axis_grid_steps_one_axis_at_a_time_naming_where_the_other_was_held():
    grid = [grid_point(s, t) for s in (16, 4) for t in (2048, 256)]  # any order in
    summary = summarize_sweep_change(grid)
    assert [s.sentence for s in summary.steps] == [
        "raising max_num_batched_tokens from 256 to 2048 (at max_num_seqs 4) left the "
        "bottleneck at the scheduler cap",
        "raising max_num_seqs from 4 to 16 (at max_num_batched_tokens 256) moved the bottleneck "
        "from the scheduler cap to no limit (underloaded)",
        "raising max_num_seqs from 4 to 16 (at max_num_batched_tokens 2048) moved the "
        "bottleneck from the scheduler cap to no limit (underloaded)",
        "raising max_num_batched_tokens from 256 to 2048 (at max_num_seqs 16) left the "
        "bottleneck at no limit (underloaded)",
    ]
    assert summary.sentence == (
        "raising max_num_seqs from 4 to 16 and max_num_batched_tokens from 256 to 2048 moved "
        "the bottleneck from the scheduler cap to no limit (underloaded)"
    )
    assert (summary.overall.from_key, summary.overall.to_key) == ("s4t256", "s16t2048")


def test_a_setting_other_than_the_scheduler_two_is_named_by_its_axis():
    auto = grid_point(4, 256, other_settings=(("kv_cache_dtype", None),))
    fp8 = verdict(engine(
        "fp8", 64, 500.0, config_label="seqs=4,tokens=256,kv=fp8", max_num_seqs=4,
        max_num_batched_tokens=256, other_settings=(("kv_cache_dtype", "fp8"),),
        mean_running=4.0, peak_running=4.0, mean_waiting=60.0, peak_waiting=60.0,
    ))
    summary = summarize_sweep_change([fp8, auto])
    assert summary.sentence == (
        "changing kv_cache_dtype from fp8 to the engine default left the bottleneck at the "
        "scheduler cap"
    )


def test_a_switch_reads_on_and_off_and_is_not_raised():
    settings = lambda on: (("enable_prefix_caching", on),)  # noqa: E731
    off = grid_point(4, 256, other_settings=settings(False))
    on = verdict(engine(
        "on", 64, 500.0, config_label="seqs=4,tokens=256,prefix=True", max_num_seqs=4,
        max_num_batched_tokens=256, other_settings=settings(True), mean_running=4.0,
        peak_running=4.0, mean_waiting=60.0, peak_waiting=60.0,
    ))
    summary = summarize_sweep_change([on, off])
    assert summary.sentence.startswith("changing enable_prefix_caching from off to on left")


def test_configs_that_differ_in_two_settings_at_once_are_still_joined():
    # An explicit list: no two configs differ in one setting only.
    a, b = grid_point(4, 256), grid_point(16, 2048)
    summary = summarize_sweep_change([b, a])
    assert [s.sentence for s in summary.steps] == [
        "raising max_num_seqs from 4 to 16 and max_num_batched_tokens from 256 to 2048 moved "
        "the bottleneck from the scheduler cap to no limit (underloaded)"
    ]


def test_three_values_on_one_axis_step_to_the_next_value_not_past_it():
    summary = summarize_sweep_change([grid_point(s, 256) for s in (16, 4, 8)])
    assert [(s.from_key, s.to_key) for s in summary.steps] == [
        ("s4t256", "s8t256"), ("s8t256", "s16t256")
    ]
    assert "(at" not in summary.steps[0].sentence, "one axis: nothing held to name"


def test_the_sweeps_story_says_what_raising_max_num_seqs_did_to_output_at_the_load_compared():
    summary = summarize_sweep_change(list(verdicts_for_sweep(sweep()).values()))
    # 18,000 -> 42,000 tok/s at the top load of both configs: 2.33x (these points name no load,
    # so their keys stand in), each side with its cause and the figure that shows it.
    assert str(summary.overall.story) == (
        "At s256|2000 and s1024|2000, raising max_num_seqs from 256 to 1024 and raising "
        "max_num_batched_tokens from 2048 to 8192 raised output 2.33x (18,000 -> 42,000 output "
        "tok/s): at max_num_seqs 256, max_num_batched_tokens 2048, the scheduler cap bound, with "
        "mean running 240 of max_num_seqs 256 while 1,500 requests waited on average, and more "
        "load added only waiting (+0.56% output over the previous load level); at max_num_seqs "
        "1024, max_num_batched_tokens 8192, the engine's own step time bound, with mean running "
        "up +75.0% over the previous load level for +0.48% output.")


def _capped(key: str, seqs: int, throughput: float):
    return verdict(engine(key, 2000, throughput, config_label=f"seqs={seqs}", max_num_seqs=seqs,
                          load_label="burst 2000", **{**PINNED, "mean_running": float(seqs),
                                                      "peak_running": float(seqs)}))


def test_raising_the_cap_without_more_output_says_the_engine_itself_is_now_the_limit():
    # 46,000 -> 46,300 is +0.65%, inside the 2% that counts as level.
    summary = summarize_sweep_change([_capped("a", 1024, 46_000), _capped("b", 2048, 46_300)])
    assert str(summary.overall.story).startswith(
        "At burst 2000, raising max_num_seqs from 1024 to 2048 left output level (46,000 -> "
        "46,300 output tok/s, +0.65%), so admitting more requests no longer pays and the "
        "engine's own step time is now the limit: at max_num_seqs 1024, the scheduler cap bound")


@pytest.mark.parametrize("after, ending", [
    (46_920, "raised output 1.02x (46,000 -> 46,920 output tok/s)"),  # +2.0%: not level
    (41_400, "lost 10.0% of output (46,000 -> 41,400 output tok/s)"),
])
def test_a_step_of_two_percent_or_more_is_a_change_not_level(after, ending):
    summary = summarize_sweep_change([_capped("a", 1024, 46_000), _capped("b", 2048, after)])
    assert str(summary.overall.story).startswith(
        f"At burst 2000, raising max_num_seqs from 1024 to 2048 {ending}: ")


def test_level_output_after_another_setting_changed_claims_nothing_of_the_engine():
    a = verdict(engine("a", 2000, 30_000, config_label="seqs=256,kv=auto", load_label="burst 2000",
                       **PINNED))
    b = verdict(engine("b", 2000, 30_100, config_label="seqs=256,kv=fp8", load_label="burst 2000",
                       **PINNED))
    assert str(summarize_sweep_change([a, b]).overall.story).startswith(
        "At burst 2000, changing the engine config from seqs=256,kv=auto to seqs=256,kv=fp8 left "
        "output level (30,000 -> 30,100 output tok/s, +0.33%): at the engine config "
        "seqs=256,kv=auto, the scheduler cap bound")


# --- why a sweep has no summary ----------------------------------------------------------------------


def test_no_summary_names_the_configs_without_verdicts_and_why():
    judged = verdict(node(replicas=1, mean_running=240.0, mean_waiting=1_500.0))
    with pytest.raises(AnalysisError) as refused:
        summarize_sweep_change([judged], {"seqs=512": "no engine samples"})
    assert str(refused.value) == (
        "only seqs=256 has bottleneck verdicts (seqs=512: no engine samples): a change needs "
        "two engine configs with verdicts"
    )


def test_no_summary_without_any_verdict_says_no_config_has_one():
    with pytest.raises(AnalysisError) as refused:
        summarize_sweep_change([], {"seqs=256": "no engine samples", "seqs=512": "imported"})
    assert str(refused.value) == (
        "no engine config has a bottleneck verdict (seqs=256: no engine samples; seqs=512: "
        "imported), so there is no change to summarize"
    )
