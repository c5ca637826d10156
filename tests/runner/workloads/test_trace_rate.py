"""A trace's arrival rate over time, sized at its peak window or a percentile of its windows."""

from __future__ import annotations

import pytest

from runner.workloads.traces import SourceFile, TraceError, TraceRow, trace_rate, window_rates


def trace(*arrivals: float) -> SourceFile:
    rows = [TraceRow(line=i + 1, input_tokens=10, output_tokens=5, arrival_s=t)
            for i, t in enumerate(arrivals)]
    return SourceFile(name="t.csv", format="csv", rows=rows)


# Windows of 10 s from 0: 4 arrivals in [0, 10), 6 in [10, 20); the one at 25 s is in a
# part-window, which counts as neither a lull nor a spike.
BUSY_SECOND_WINDOW = trace(0, 1, 2, 3, 10, 10.5, 11, 11.2, 11.4, 12, 25)


def test_rates_are_counted_in_whole_windows_from_the_first_arrival():
    assert window_rates(BUSY_SECOND_WINDOW, 10.0) == [0.4, 0.6]


def test_a_trace_is_sized_at_its_peak_or_a_percentile_of_its_windows():
    assert trace_rate(BUSY_SECOND_WINDOW, 10.0).rate == pytest.approx(0.6)
    # numpy's linear percentile of [0.4, 0.6]: 0.4 + 0.5 x 0.2.
    found = trace_rate(BUSY_SECOND_WINDOW, 10.0, "p50")
    assert (found.rate, found.mean_rate, found.windows) == (pytest.approx(0.5),
                                                            pytest.approx(0.5), 2)


def test_a_trace_shorter_than_a_window_is_one_window():
    assert window_rates(trace(0, 1, 2), 60.0) == [3 / 60]


@pytest.mark.parametrize(("statistic", "window"), [("median", 10.0), ("p0", 10.0),
                                                   ("peak", 0.0)])
def test_a_statistic_or_window_that_means_nothing_is_refused(statistic, window):
    with pytest.raises(TraceError):
        trace_rate(BUSY_SECOND_WINDOW, window, statistic)
