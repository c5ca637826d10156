"""How sure a run's figures are (analysis.noise): the pooled log spread, control-point drift,
intervals and their wording, each on hand-computed draws."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from analysis import noise, repeats, selection, sweep_story, verdicts
from tests.analysis.helpers import point

SEQS = "seqs=4"


def draw(level: int, repeat: int, throughput: float, **kwargs) -> object:
    kwargs.setdefault("config_label", SEQS)
    kwargs.setdefault("max_num_seqs", 4)
    kwargs.setdefault("median_e2el_ms", 1000.0 * level)
    return point(f"{SEQS}|burst {level}|r{repeat}", level, throughput, repeat=repeat, **kwargs)


def test_the_pooled_spread_of_a_pair_is_its_log_ratio_over_root_two():
    sd, draws = noise.pooled_log_sd([[100.0, 121.0]])
    assert sd == pytest.approx(math.log(1.21) / math.sqrt(2))
    assert draws == 2


def test_settings_pool_by_their_degrees_of_freedom_and_single_draws_add_nothing():
    # Squares: 2 x (ln 1.1 / 2)^2 for the pair; 0 for the equal triple (2 degrees of freedom).
    sd, draws = noise.pooled_log_sd([[100.0, 110.0], [50.0, 50.0, 50.0], [7.0]])
    assert sd == pytest.approx(math.sqrt(2 * (math.log(1.1) / 2) ** 2 / 3))
    assert draws == 5
    assert noise.pooled_log_sd([[7.0], [8.0]]) == (None, 0)


def test_a_control_point_beyond_the_repeats_spread_reads_as_drift():
    # Repeats scatter by 10% (ln 1.1 / sqrt 2 each); the control is 30% below its first draw.
    points = [draw(8, 0, 1000.0), draw(16, 0, 2000.0), draw(8, 1, 1100.0), draw(16, 1, 2200.0),
              draw(8, 2, 700.0, control=True)]
    found = noise.run_noise(points)
    assert found.repeat_sd == pytest.approx(math.log(1.1) / math.sqrt(2))
    # The pair's band: exp(1.96 x sd x sqrt 2) - 1 = 20.5%; -30% is beyond it.
    assert found.drifted is not None and found.drifted.change_pct == pytest.approx(-30.0)
    # The interval's sd is never narrower than the control pair implies.
    assert found.throughput_sd == pytest.approx(abs(math.log(0.7)) / math.sqrt(2))
    words = [str(s) for s in noise.noise_sentences(found, [])]
    assert words[1].startswith("Drifted by -30.0% between the start and the end of seqs=4: ")
    assert "±20.5%" in words[1]


def test_a_control_point_inside_the_spread_is_no_drift():
    points = [draw(8, 0, 1000.0), draw(16, 0, 2000.0), draw(8, 1, 1100.0), draw(16, 1, 2200.0),
              draw(8, 2, 1150.0, control=True)]
    found = noise.run_noise(points)
    assert found.drifted is None
    assert found.drifts[0].beyond_spread is False
    assert str(noise.noise_sentences(found, [])[1]).startswith(
        "The control points (each config's first load level measured again after its last) "
        "moved +15.0%, inside the ±20.5%")


# --- the end control: the first config's first level after the last config, a fresh start ---

WIDE = "seqs=8"


def sweep_with_end(end: float | None, control: float = 1150.0, repeats: bool = True) -> list:
    """seqs=4 then seqs=8 at levels 8 and 16; with repeats, each level's second draw 10% above
    its first (the band of a pair: +/-20.5%); each config's control point at `control` (seqs=4)
    or at its first draw (seqs=8); then the end control, seqs=4 at level 8, at `end`."""
    points = []
    for label in (SEQS, WIDE):
        points += [draw(8, 0, 1000.0, config_label=label), draw(16, 0, 2000.0, config_label=label)]
        if repeats:
            points += [draw(8, 1, 1100.0, config_label=label),
                       draw(16, 1, 2200.0, config_label=label)]
        first = control if label == SEQS else 1000.0
        points.append(draw(8, 2, first, config_label=label, control=True))
    if end is not None:
        points.append(draw(8, 3, end, end_control=True))
    return points


def test_without_an_end_control_the_run_has_no_end_drift():
    found = noise.run_noise(sweep_with_end(None))
    assert found.end_drift is None
    assert not any("end control" in str(s) or "of the sweep" in str(s)
                   for s in noise.noise_sentences(found, []))


def test_an_end_control_inside_the_spread_is_no_drift_between_the_start_and_the_end():
    found = noise.run_noise(sweep_with_end(1150.0))
    end = found.end_drift
    assert end is not None and end.beyond_spread is False
    # Against the first draw of its level (repeat 0, 1000), never a later repeat (1100).
    assert (end.first_key, end.control_key) == (f"{SEQS}|burst 8|r0", f"{SEQS}|burst 8|r3")
    assert end.change_pct == pytest.approx(15.0)
    # Its own config's control point is still the per-config drift, not the end control.
    assert found.drifts[0].control_key == f"{SEQS}|burst 8|r2"
    assert str(noise.noise_sentences(found, [])[-1]) == (
        "The end control (seqs=4's first load level, measured again on a fresh engine start "
        "after the last config) moved +15.0%, inside the ±20.5% the repeats scatter by: no "
        "drift between the start and the end of the sweep.")


def test_an_end_control_beyond_the_spread_drifted_and_widens_every_interval():
    found = noise.run_noise(sweep_with_end(750.0))
    # The repeats alone set the band: the end control is no repeat.
    assert found.repeat_sd == pytest.approx(math.log(1.1) / math.sqrt(2))
    assert found.end_drift is not None and found.end_drift.beyond_spread is True
    assert found.drifted is None  # both configs' own control points stayed inside
    # The interval's sd is never narrower than the end pair implies: |ln 0.75| / sqrt 2.
    sd = abs(math.log(0.75)) / math.sqrt(2)
    assert found.throughput_sd == pytest.approx(sd)
    assert found.latency_sd is not None and found.latency_sd >= sd
    quiet = noise.run_noise(sweep_with_end(1000.0))
    assert quiet.throughput_sd is not None and quiet.throughput_sd < sd
    ratio = noise.ratio_interval([1000.0], [2000.0], found.throughput_sd, found.throughput_sd)
    narrow = noise.ratio_interval([1000.0], [2000.0], quiet.throughput_sd, quiet.throughput_sd)
    assert ratio is not None and narrow is not None and ratio.low < narrow.low
    assert str(noise.noise_sentences(found, [])[-1]) == (
        "Drifted by -25.0% between the start and the end of the sweep: seqs=4's first load "
        "level, measured again on a fresh engine start after the last config, moved beyond the "
        "±20.5% its repeats scatter by. Every interval here is widened to include it.")


@pytest.mark.parametrize(("end", "beyond"), [
    (1200.0, False), (1210.0, True), (830.0, False), (828.0, True)])
def test_the_end_controls_band_is_the_pairs_on_the_log_scale(end, beyond):
    # The band of a change between two draws: exp(1.96 x ln 1.1) - 1 = +20.5%, and its mirror
    # 1/1.205 - 1 = -17.0% below.
    found = noise.run_noise(sweep_with_end(end))
    assert found.end_drift is not None and found.end_drift.beyond_spread is beyond


def test_with_one_draw_per_level_the_end_control_is_said_and_widens_the_noise():
    with_controls = noise.run_noise(sweep_with_end(800.0, repeats=False))
    assert with_controls.repeat_sd is None and with_controls.end_drift is not None
    assert with_controls.end_drift.beyond_spread is None
    words = [str(s) for s in noise.noise_sentences(with_controls, [])]
    assert words[0].startswith("Each engine config's first load level was measured again")
    assert words[1].startswith("The end control (seqs=4's first load level, measured again on "
                               "a fresh engine start after the last config) moved -20.0% from "
                               "the start of the sweep; with one draw per level")
    # Without control points per config the end control is the only measure of the noise.
    alone = [p for p in sweep_with_end(800.0, repeats=False) if not p.control]
    found = noise.run_noise(alone)
    # The pair (1000, 800) pooled with nothing else: sd = |ln 0.8| / sqrt 2.
    assert found.throughput_sd == pytest.approx(abs(math.log(0.8)) / math.sqrt(2))
    words = [str(s) for s in noise.noise_sentences(found, [])]
    assert words[0].startswith("With one draw per level and no control point per config, the "
                               "end control is the run's only measure of its noise")
    assert "moved -20.0% from the start of the sweep" in words[1]


def test_with_one_draw_per_level_the_control_points_are_the_noise():
    points = [draw(8, 0, 1000.0), draw(16, 0, 2000.0), draw(8, 1, 900.0, control=True)]
    found = noise.run_noise(points)
    assert found.repeat_sd is None and found.drifts[0].beyond_spread is None
    sd = abs(math.log(0.9)) / math.sqrt(2)
    assert found.throughput_sd == pytest.approx(sd)
    assert found.step_band_pct() == pytest.approx(math.expm1(1.96 * sd * math.sqrt(2)) * 100)
    sentence = str(noise.noise_sentences(found, [])[0])
    assert "moved -10.0%" in sentence and "one draw is good to ±" in sentence


def test_nothing_measured_gives_no_interval_and_says_a_single_draw_is_no_finding():
    found = noise.run_noise([draw(8, 0, 1000.0), draw(16, 0, 2000.0)])
    assert found.throughput_sd is None and found.step_band_pct() is None
    assert noise.value_interval(1000.0, found.throughput_sd, 1, "") is None
    assert "a single draw is not a finding" in str(noise.noise_sentences(found, [])[0])


def test_a_disturbed_draw_is_left_out_of_the_spread():
    points = [draw(8, 0, 1000.0), draw(8, 1, 1100.0), draw(8, 2, 400.0, disturbed=True)]
    assert noise.run_noise(points).repeat_sd == pytest.approx(math.log(1.1) / math.sqrt(2))


def test_a_value_interval_narrows_with_the_square_root_of_its_draws():
    one = noise.value_interval(1000.0, 0.1, 1, "")
    four = noise.value_interval(1000.0, 0.1, 4, "")
    assert one is not None and four is not None
    assert (one.low, one.high) == pytest.approx((1000 * math.exp(-0.196), 1000 * math.exp(0.196)))
    assert four.high == pytest.approx(1000 * math.exp(0.098))


def test_a_ratio_interval_from_single_draws_and_its_words():
    found = noise.ratio_interval([100.0], [1000.0], 0.1, 0.1)
    assert found is not None
    half = 1.96 * math.sqrt(0.02)
    assert (found.ratio, found.low, found.high) == pytest.approx(
        (10.0, 10 * math.exp(-half), 10 * math.exp(half)))
    assert not found.within_noise
    assert str(noise.ratio_sentence(10.0, found)) == (
        "10.00x (95% interval 7.58x-13.19x, from 1 and 1 draws)")


def test_a_ratio_whose_interval_holds_one_is_within_noise():
    found = noise.ratio_interval([1000.0, 1100.0], [1050.0], 0.1, 0.1)
    assert found is not None and found.within_noise
    assert str(noise.ratio_sentence(1.0, found)).startswith("1.00x, within noise: its 95% ")
    assert str(noise.ratio_sentence(10.51, None)) == (
        "10.51x from single draws, with no interval: nothing in either run measured its noise")


@pytest.mark.parametrize(("change", "within"), [(10.0, True), (-9.0909, True), (10.01, False)])
def test_the_band_is_symmetric_on_the_log_scale_and_includes_its_edge(change, within):
    # A +10% band holds +10% and its mirror, 1/1.1 - 1 = -9.09%, but not +10.01%.
    assert noise.within_band(change, 10.0) is within


def test_the_knee_steps_over_a_disturbed_point():
    # Quiet, the step to 16 would lose half the output: the knee would stop at 8.
    ladder = [draw(8, 0, 1000.0), draw(16, 0, 500.0, disturbed=True), draw(32, 0, 1900.0),
              draw(64, 0, 1910.0, median_e2el_ms=90000.0)]
    chosen = selection.knee(ladder)
    assert chosen.chosen_key == ladder[2].key
    assert chosen.evidence.excluded_disturbed == (ladder[1].key,)


def test_a_knee_step_inside_the_noise_is_said_to_be_within_noise():
    ladder = [draw(4, 0, 500.0), draw(8, 0, 1000.0),
              draw(16, 0, 960.0, median_e2el_ms=40000.0)]
    words = selection.knee(ladder, noise_band_pct=5.0).sentence
    assert "changed output tokens/s by -4.0%, within noise (±5.0%)" in words
    assert "lost 4.0%" in selection.knee(ladder, noise_band_pct=3.9).sentence


def test_a_disturbed_point_is_not_compared_and_the_next_compares_with_the_last_quiet_one():
    ladder = [draw(8, 0, 1000.0, queue_samples=10, mean_running=4, peak_running=4,
                   mean_waiting=4),
              draw(16, 0, 500.0, disturbed=True, queue_samples=10, mean_running=4,
                   peak_running=4, mean_waiting=12),
              draw(32, 0, 1005.0, queue_samples=10, mean_running=4, peak_running=4,
                   mean_waiting=28)]
    found = verdicts.verdicts_for_sweep(ladder)
    assert found[ladder[1].key].evidence.throughput_gain_pct is None
    assert found[ladder[1].key].evidence.saturated is False
    after = found[ladder[2].key].evidence
    assert after.previous_key == ladder[0].key and after.saturated is True


def test_the_saturation_tag_says_within_noise_instead_of_a_loss():
    ladder = [draw(8, 0, 1000.0, queue_samples=10, mean_running=4, peak_running=4,
                   mean_waiting=4),
              draw(16, 0, 900.0, queue_samples=10, mean_running=4, peak_running=4,
                   mean_waiting=12)]
    quiet = verdicts.verdicts_for_sweep(ladder, noise_band_pct=15.0)[ladder[1].key]
    assert "saturated: -10.0%, within noise (±15.0%) output tokens/s" in quiet.sentence
    assert "(output changed -10.0% over the previous load level, within noise of ±15.0%)" in (
        str(sweep_story.cause(quiet)))
    loud = verdicts.verdicts_for_sweep(ladder, noise_band_pct=9.0)[ladder[1].key]
    assert "saturated: -10.0% output tokens/s" in loud.sentence


def test_capacity_and_the_lowest_repeat_leave_a_disturbed_draw_out():
    group = [draw(8, 0, 1000.0), draw(8, 1, 300.0, disturbed=True), draw(8, 2, 1100.0)]
    assert [p.key for p in repeats.lowest_repeats(group)] == [group[0].key]
    (estimate,) = repeats.capacity_by_setting(group).values()
    assert estimate.capacity == 1000.0 and estimate.repeats == 2
    # Every repeat disturbed: they still stand, so the setting is not silently dropped.
    alone = [draw(8, 0, 300.0, disturbed=True)]
    assert [p.key for p in repeats.lowest_repeats(alone)] == [alone[0].key]


# --- on a recorded grid: this host's own scatter ----------------------------------------------

GRID = Path(__file__).resolve().parents[2] / "bench" / "grids" / "cpu-d.json"


def recorded(controls: dict[tuple[str, str], float] | None = None,
             first_repeat_is_control: bool = False) -> list:
    """cpu-d (9 configs x 5 concurrency levels x 2 repeats, recorded back to back on this
    host) as the rules' inputs; controls: more draws of (config, load), taken later."""
    grid = json.loads(GRID.read_text())
    lowest = {}
    for p in grid["points"]:
        level = float(p["load_label"].split()[1])
        lowest[p["config_label"]] = min(level, lowest.get(p["config_label"], level))
    out = []
    for p in grid["points"]:
        level = float(p["load_label"].split()[1])
        control = (first_repeat_is_control and p["repeat"] == 1
                   and level == lowest[p["config_label"]])
        out.append(point(f"{p['config_label']}|{p['load_label']}|r{p['repeat']}", level,
                         p["output_throughput"], config_label=p["config_label"],
                         load_label=p["load_label"], repeat=p["repeat"], valid=p["valid"],
                         control=control, median_e2el_ms=p["latencies"]["median_e2el_ms"]))
    for (config, load), value in (controls or {}).items():
        out.append(point(f"{config}|{load}|r2", float(load.split()[1]), value,
                         config_label=config, load_label=load, repeat=2, control=True,
                         median_e2el_ms=1.0))
    return out


def test_the_recorded_grid_has_no_drift_without_a_control_point():
    found = noise.run_noise(recorded())
    assert found.drifts == () and found.drifted is None
    # Its back-to-back repeats scatter by a log sd of 0.146: one draw is good to about +/-33%.
    assert found.repeat_sd == pytest.approx(0.1465, abs=5e-4)


def test_on_the_recorded_grid_a_repeat_taken_as_control_is_inside_the_spread():
    found = noise.run_noise(recorded(first_repeat_is_control=True))
    assert len(found.drifts) == 9 and found.drifted is None
    assert all(d.beyond_spread is False for d in found.drifts)


def test_the_recorded_slow_spell_reads_as_drift_beyond_the_spread():
    # The grid's answer point, 5617 and 5836 tok/s in the grid, gave 3103 on the same host
    # eight minutes later (docs/performance.md): -44.8%, beyond the +/-50% band in log terms.
    key = ("seqs=32,tokens=2048,len=1024", "concurrency 32 x 96")
    found = noise.run_noise(recorded({key: 3103.0}))
    assert found.drifted is not None and found.drifted.config_label == key[0]
    assert found.drifted.change_pct == pytest.approx((3103.0 / 5617.327070305837 - 1) * 100)


def test_a_config_disturbed_throughout_is_still_walked_rather_than_left_without_a_knee():
    # Two of four levels disturbed: two quiet ones are too few for a knee, so all four walk.
    ladder = [draw(8, 0, 1000.0, disturbed=True), draw(16, 0, 1900.0),
              draw(32, 0, 1910.0, median_e2el_ms=90000.0), draw(64, 0, 1915.0,
                                                                disturbed=True)]
    chosen = selection.knee(ladder)
    assert chosen.chosen_key == ladder[1].key
    assert chosen.evidence.excluded_disturbed == ()
    assert chosen.evidence.disturbed_walked == (ladder[0].key, ladder[3].key)


# --- a search's end control: its answer point again after the search ---------------------------

@pytest.mark.parametrize(("end", "repeated", "expected"), [
    (1150.0, True,
     "The end control (the search's answer point, seqs=4 at burst 8, measured again on a fresh "
     "engine start after the search) moved +15.0% from its first draw, inside the ±20.5% the "
     "repeats scatter by: no drift over the search."),
    (750.0, True,
     "Drifted by -25.0% over the search: its answer point, seqs=4 at burst 8, measured again on "
     "a fresh engine start after the search, moved beyond the ±20.5% its repeats scatter by. "
     "Every interval here is widened to include it."),
    (800.0, False,
     "The end control (the search's answer point, seqs=4 at burst 8, measured again on a fresh "
     "engine start after the search) moved -20.0% from its first draw; with one draw per level "
     "nothing tells that from noise, and every interval here is widened to include it."),
])
def test_a_searchs_end_control_names_its_answer_point_not_the_first_config(
    end, repeated, expected
):
    points = [dataclasses.replace(p, load_label="burst 8") if "|burst 8|" in p.key else p
              for p in sweep_with_end(end, repeats=repeated)]
    found = noise.run_noise(points)
    assert str(noise.noise_sentences(found, [], searched=True)[-1]) == expected
    # A grid's run still names its first config's first level.
    assert "first load level" in str(noise.noise_sentences(found, [])[-1])
