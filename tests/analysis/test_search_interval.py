"""An adaptive sweep's answer and its interval: widened by the search's tolerance and the run's
repeat spread, and wide enough to hold a point's mean."""

from __future__ import annotations

from analysis.search_interval import answer_interval
from runner.schema.search_record import SearchRecord, SearchSpec


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
