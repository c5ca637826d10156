"""The search and the run page choose by one rule: what the search answers on a config's levels
is what analysis.selection chooses on the same points."""

from __future__ import annotations

import pytest

from analysis import selection
from analysis.search_interval import answer_interval
from analysis.types import LATENCY_FIELDS, PointFigures
from runner.schema.result import Metrics
from runner.schema.search_record import SEARCH_LATENCY_FIELDS, SearchRecord, SearchSpec
from runner.search.levels import Levels
from runner.search.observation import Observation

LABELS = ["c1", "c2", "c4", "c8", "c16"]


def test_every_latency_a_search_limits_is_one_a_point_carries_and_a_selection_knows():
    assert set(SEARCH_LATENCY_FIELDS) <= set(LATENCY_FIELDS)
    assert set(SEARCH_LATENCY_FIELDS) <= set(Metrics.model_fields)


@pytest.mark.parametrize(
    "curve",
    [
        [(10, 1000), (20, 1000), (39.5, 1100), (40, 1500), (40.2, 3000)],  # a knee at c4
        [(10, 1000), (20, 1050), (30, 1100), (40, 1150), (50, 1200)],  # no knee: the highest
        [(10, 1000), (10.1, 1300), (10.2, 2000), (10.2, 4000), (10.3, 8000)],  # at once
    ],
)
def test_the_searchs_knee_answer_is_the_run_pages_knee_choice(curve):
    levels = Levels(SearchSpec(), LABELS)
    figures = []
    for level, (throughput, latency) in enumerate(curve):
        levels.add(level, Observation(throughput, True, 1.0, {"median_e2el_ms": latency}))
        figures.append(PointFigures(key=LABELS[level], config_label="seqs=8",
                                    offered_concurrency=2.0 ** level,
                                    output_throughput=throughput, median_e2el_ms=latency))

    assert LABELS[levels.answer() or 0] == selection.knee(figures).chosen_key


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
