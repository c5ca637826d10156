"""The search and the run page choose by one rule: what the search answers on a config's levels
is what analysis.selection chooses on the same points."""

from __future__ import annotations

import pytest

from analysis import selection
from analysis.types import LATENCY_FIELDS, PointFigures
from runner.schema.result import Metrics
from runner.schema.search_record import SEARCH_LATENCY_FIELDS, SearchSpec
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
