"""An adaptive sweep's answer and its interval, from the search's record and the repeats of the
chosen point.

The interval spans the chosen point's repeats, from the lowest to the highest, widened by the
search's tolerance (the search located the answer to within it, so an unmeasured level or an
unstarted config may differ from the measured answer by that much under its assumptions) and by
the run's pooled repeat spread. Two repeats alone hold their point's mean only about half the
time; widened on each side by the spread (about one standard deviation of a point, for two
repeats), about 19 times in 20 when the scatter is normal. On a quiet node the spread is small
and so is the widening; on a noisy one the interval says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from analysis.errors import AnalysisError
from analysis.noise import Interval
from runner.schema.search_record import SearchRecord


def answer_interval(record: SearchRecord, capacity_values: Sequence[float]) -> Interval | None:
    """The interval around the answer (output tokens/s); None without a valid repeat."""
    values = [v for v in capacity_values if math.isfinite(v)]
    if not values:
        return None
    if any(v < 0 for v in values):
        raise AnalysisError(f"a throughput cannot be negative: {values}")
    noise = (record.noise_pct or 0.0) / 100
    widen = record.spec.tolerance_pct / 100 + noise
    measured = ("one measurement" if len(values) == 1 else
                f"the chosen point's {len(values)} repeats")
    basis = (f"{measured}, widened by the search's {record.spec.tolerance_pct:g}% tolerance"
             + (f" and the run's {record.noise_pct:.1f}% repeat spread" if noise else
                "; no repeat in the run measured its spread"))
    return Interval(min(values) * (1 - widen), max(values) * (1 + widen), len(values), basis)
