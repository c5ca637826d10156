"""An adaptive sweep's answer and its interval: widened by the search's tolerance and by the
larger of the run's repeat spread and its end control's drift, and wide enough to hold a point's
mean."""

from __future__ import annotations

import pytest

from analysis.noise import Drift
from analysis.search_interval import answer_interval, chosen_point_interval
from runner.schema.search_record import SearchRecord, SearchSpec
from tests.analysis.helpers import point


def test_an_interval_is_widened_by_the_tolerance_and_the_runs_repeat_spread():
    record = SearchRecord(spec=SearchSpec(tolerance_pct=2), cells=[], noise_pct=3.0)
    interval = answer_interval(record, [100.0])
    assert interval is not None
    assert (round(interval.low, 6), round(interval.high, 6)) == (95.0, 105.0)
    assert interval.basis == ("one measurement, widened by the search's 2% tolerance and the "
                              "run's 3.0% repeat spread")
    repeated = answer_interval(record, [100.0, 104.0])
    assert repeated is not None
    assert (round(repeated.low, 6), round(repeated.high, 6)) == (95.0, 109.2)


def test_two_repeats_that_both_drew_high_still_hold_the_points_mean():
    # On a node whose repeats scatter by 15%, two draws of a point whose mean is 100 tok/s can
    # both land near 112: their range alone, widened by the tolerance, would leave 100 out.
    record = SearchRecord(spec=SearchSpec(tolerance_pct=2), cells=[], noise_pct=15.0)
    interval = answer_interval(record, [111.0, 113.0])
    assert interval is not None and interval.contains(100.0)


def test_an_interval_without_a_measured_spread_is_widened_by_the_tolerance_alone():
    record = SearchRecord(spec=SearchSpec(tolerance_pct=2), cells=[], noise_pct=None)
    interval = answer_interval(record, [100.0, 104.0])
    assert interval is not None
    assert (round(interval.low, 6), round(interval.high, 6)) == (98.0, 106.08)
    assert interval.basis.endswith("; no repeat in the run measured its spread")


def drift_of(change_pct: float) -> Drift:
    return Drift(config_label="seqs=32", load_label="concurrency 64", first_key="a",
                 control_key="b", change_pct=change_pct, beyond_spread=None)


def test_an_end_control_that_moved_more_than_the_repeats_widens_the_interval_by_its_spread():
    # Repeats 6201 and 6850 (cpu-g's fast spell), the end control 25% below the first draw:
    # the pair (1, 0.75) spreads by 0.25 / 0.875 = 28.6%, more than the repeats' 10%.
    record = SearchRecord(spec=SearchSpec(tolerance_pct=2), cells=[], noise_pct=10.0)
    control = 6201.0 * 0.75
    interval = answer_interval(record, [6201.0, 6850.0], drift_of(-25.0), control)
    assert interval is not None
    widen = 0.02 + 0.25 / 0.875
    assert interval.low == pytest.approx(control * (1 - widen))
    assert interval.high == pytest.approx(6850.0 * (1 + widen))
    assert interval.repeats == 3
    assert interval.basis == (
        "the chosen point's 2 repeats and its end control, widened by the search's 2% tolerance "
        "and the 28.6% spread between seqs=32's first draw and its end control after the "
        "search (more than the run's 10.0% repeat spread)")


def test_an_end_control_inside_the_repeats_spread_leaves_the_widening_to_the_repeats():
    record = SearchRecord(spec=SearchSpec(tolerance_pct=2), cells=[], noise_pct=10.0)
    # +5%: the pair spreads by 0.05 / 1.025 = 4.9%, less than the repeats' 10%.
    interval = answer_interval(record, [100.0, 104.0], drift_of(5.0), 105.0)
    assert interval is not None
    assert (round(interval.low, 6), round(interval.high, 6)) == (88.0, round(105.0 * 1.12, 6))
    assert interval.basis.endswith("widened by the search's 2% tolerance and the run's 10.0% "
                                   "repeat spread")


def test_an_end_control_at_another_point_still_widens_by_the_hosts_drift():
    # The run page's operating point may not be the search's answer point: the host's drift
    # applies to every figure, though the control's draw is no draw of this point.
    record = SearchRecord(spec=SearchSpec(tolerance_pct=2), cells=[], noise_pct=None)
    interval = answer_interval(record, [100.0], drift_of(20.0))
    assert interval is not None
    widen = 0.02 + 0.2 / 1.1
    assert (interval.low, interval.high) == (pytest.approx(100 * (1 - widen)),
                                             pytest.approx(100 * (1 + widen)))
    assert interval.repeats == 1


def fig(key: str, repeat: int, throughput: float, **kwargs) -> object:
    return point(key, 64, throughput, repeat=repeat, config_label="seqs=32",
                 load_label="concurrency 64", **kwargs)


def test_the_chosen_points_interval_reads_its_draws_and_the_runs_end_control_from_the_rows():
    record = SearchRecord(spec=SearchSpec(tolerance_pct=2), cells=[], noise_pct=10.0)
    figs = [fig("seqs=32|concurrency 64|r0", 0, 6201.0), fig("seqs=32|concurrency 64|r1", 1, 6850.0),
            fig("seqs=32|concurrency 64|r3", 3, 6201.0 * 0.75, end_control=True)]
    interval = chosen_point_interval(record, figs, "seqs=32|concurrency 64|r0")
    assert interval == answer_interval(record, [6201.0, 6850.0], drift_of(-25.0), 6201.0 * 0.75)
    # Without the end control: the repeats' spread alone.
    assert chosen_point_interval(record, figs[:2], figs[0].key) == answer_interval(
        record, [6201.0, 6850.0])
    assert chosen_point_interval(record, figs, "no such point") is None


def at(load: int, repeat: int, throughput: float, config: str = "seqs=32", **kwargs) -> object:
    return point(f"{config}|concurrency {load}|r{repeat}", load, throughput, repeat=repeat,
                 config_label=config, load_label=f"concurrency {load}", **kwargs)


def test_repeats_that_disagree_at_the_load_above_widen_the_chosen_points_interval():
    # cpu-k: the answer at 32 in flight, decided by 64, whose draws read 7249 and 9228 (24.0%
    # apart): one slow draw there moved the answer a whole load step down.
    record = SearchRecord(spec=SearchSpec(tolerance_pct=2), cells=[], noise_pct=4.4)
    figs = [at(16, 0, 6500.0), at(32, 0, 8575.0), at(32, 1, 8511.0), at(64, 0, 7249.0),
            at(64, 1, 9228.0), at(128, 0, 4000.0), at(128, 1, 9000.0),
            # Another config's and an invalid draw at 64 are no draws of this step.
            at(64, 0, 100.0, config="seqs=8"), at(64, 2, 20000.0, valid=False)]
    interval = chosen_point_interval(record, figs, figs[1].key)
    spread = 1979.0 / 8238.5
    assert interval is not None
    assert (interval.low, interval.high) == (pytest.approx(8511.0 * (1 - 0.02 - spread)),
                                             pytest.approx(8575.0 * (1 + 0.02 + spread)))
    assert interval.contains(9175.0)
    assert interval.basis == (
        "the chosen point's 2 repeats, widened by the search's 2% tolerance and the 24.0% "
        "spread between the repeats at concurrency 64, the load above it that decided the "
        "answer (more than the run's 4.4% repeat spread)")


def test_a_load_above_drawn_once_or_inside_the_runs_spread_widens_nothing():
    record = SearchRecord(spec=SearchSpec(tolerance_pct=2), cells=[], noise_pct=4.4)
    once = [at(32, 0, 8575.0), at(32, 1, 8511.0), at(64, 0, 7249.0)]
    agreeing = [*once, at(64, 1, 7400.0)]
    for figs in (once, agreeing):
        assert chosen_point_interval(record, figs, figs[0].key) == answer_interval(
            record, [8575.0, 8511.0])
    # The top load has no load above it.
    top = chosen_point_interval(record, agreeing, agreeing[2].key)
    assert top == answer_interval(record, [7249.0, 7400.0])
