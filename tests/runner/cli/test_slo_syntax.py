"""Latency targets as a capacity plan takes them: METRIC:STATISTIC:MS."""

from __future__ import annotations

import pytest

from runner.schema.flags import parse_slos, slo_text


def test_targets_read_as_the_point_figures_they_limit():
    assert parse_slos(["ttft:p95:2000", "tpot:p50:40", "itl:p99:80", "e2el:p99:20000"]) == {
        "p95_ttft_ms": 2000.0, "median_tpot_ms": 40.0, "p99_itl_ms": 80.0,
        "p99_e2el_ms": 20000.0}
    assert slo_text("median_tpot_ms") == "tpot:p50"


@pytest.mark.parametrize(("text", "said"), [
    ("ttft:2000", "METRIC:STATISTIC:MS"), ("queue:p95:5", "unknown metric 'queue'"),
    ("ttft:p90:5", "unknown statistic 'p90'"), ("ttft:p95:0", "above 0"),
    ("ttft:p95:inf", "above 0"),
])
def test_a_target_that_means_nothing_is_refused(text, said):
    with pytest.raises(ValueError, match=said):
        parse_slos([text])


def test_a_figure_limited_twice_is_refused():
    with pytest.raises(ValueError, match="limited twice"):
        parse_slos(["ttft:p95:2000", "ttft:p95:1000"])
