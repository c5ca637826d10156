"""An adaptive sweep's answer and its interval, from the search's record and the draws of the
chosen point.

The interval spans the chosen point's draws, from the lowest to the highest, widened by the
search's tolerance (the search located the answer to within it, so an unmeasured level or an
unstarted config may differ from the measured answer by that much under its assumptions) and by
the largest of three spreads:
- the run's pooled repeat spread. Two repeats alone hold their point's mean only about half the
  time; widened on each side by the spread (about one standard deviation of a point, for two
  repeats), about 19 times in 20 when the scatter is normal;
- the spread between the end control (the answer point again on a fresh engine start after the
  search, runner.search.state) and its setting's first draw. Repeats are taken seconds apart and
  bound a point's scatter; the end control, minutes later, shows how far the host's speed moved
  over the search, and an answer read in a fast or a slow spell is off by that much. Where the
  end control was measured at the chosen point, its draw is inside the span too;
- the spread of the repeats at the deciding step: the next load measured above the chosen point
  on its config, whose figures decided that the answer stops below it (the knee, or the first
  load over a latency limit). Where those repeats disagree by more than the run's pooled
  spread, one of them may be an outlier that moved the answer by a whole load step, and the
  answer is no surer than they are.
On a quiet node both spreads are small and so is the widening; on a noisy one the interval says
so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from analysis.errors import AnalysisError
from analysis.noise import Drift, Interval, end_drift
from analysis.repeats import Setting, setting_of
from analysis.types import PointFigures
from runner.schema.search_record import SearchRecord
from runner.search.state import relative_spread


@dataclass(frozen=True)
class StepSpread:
    """The repeats at the load above the chosen point that decided the answer stops below it."""

    load_label: str
    spread: float  # relative_spread of their throughputs


def answer_interval(
    record: SearchRecord,
    draws: Sequence[float],
    drift: Drift | None = None,
    control: float | None = None,
    step: StepSpread | None = None,
) -> Interval | None:
    """The interval around the answer (output tokens/s); None without a valid draw.

    draws: the chosen point's repeats; drift: the run's end control against its first draw;
    control: the end control's draw where it was measured at the chosen point; step: the
    deciding step's repeats (module docstring)."""
    values = [v for v in draws if math.isfinite(v)]
    if not values:
        return None
    span = values + ([control] if control is not None and math.isfinite(control) else [])
    if any(v < 0 for v in span):
        raise AnalysisError(f"a throughput cannot be negative: {span}")
    noise = (record.noise_pct or 0.0) / 100
    # The pair's spread, by the rule the search pools its repeats' spread by.
    moved = (relative_spread([1.0, 1.0 + drift.change_pct / 100]) if drift is not None
             else 0.0)
    stepped = step.spread if step is not None else 0.0
    widen = record.spec.tolerance_pct / 100 + max(noise, moved, stepped)
    measured = ("one measurement" if len(values) == 1 else
                f"the chosen point's {len(values)} repeats")
    if len(span) > len(values):
        measured += " and its end control"
    basis = f"{measured}, widened by the search's {record.spec.tolerance_pct:g}% tolerance"
    if step is not None and stepped > max(noise, moved):
        basis += (f" and the {100 * stepped:.1f}% spread between the repeats at "
                  f"{step.load_label}, the load above it that decided the answer"
                  + (f" (more than the run's {record.noise_pct:.1f}% repeat spread)" if noise
                     else ""))
    elif drift is not None and moved > noise:
        basis += (f" and the {100 * moved:.1f}% spread between {drift.config_label}'s first draw "
                  "and its end control after the search"
                  + (f" (more than the run's {record.noise_pct:.1f}% repeat spread)" if noise
                     else ""))
    elif noise:
        basis += f" and the run's {record.noise_pct:.1f}% repeat spread"
    else:
        basis += "; no repeat in the run measured its spread"
    return Interval(min(span) * (1 - widen), max(span) * (1 + widen), len(span), basis)


def chosen_point_interval(
    record: SearchRecord, figs: Sequence[PointFigures], key: str | None
) -> Interval | None:
    """Around the point `key` (the run's shown operating point): its valid draws, its end
    control where the search measured it there, and the run's end drift. None: no such point."""
    chosen = next((f for f in figs if f.key == key), None)
    if chosen is None:
        return None
    setting = setting_of(chosen)
    same = [f for f in figs if f.valid and setting_of(f) == setting]
    control = next((f.output_throughput for f in same if f.end_control), None)
    return answer_interval(record, [f.output_throughput for f in same if not f.end_control],
                           end_drift(figs), control, deciding_step(figs, chosen))


def deciding_step(figs: Sequence[PointFigures], chosen: PointFigures) -> StepSpread | None:
    """The repeats at the next load measured above the chosen point on its config (same
    replicas and workload), or None where there is no such load or it was drawn once. Loads
    are ordered as the search's ladder orders them: by offered concurrency, then by rate."""
    def order(f: PointFigures) -> tuple[float, float]:
        return (f.offered_concurrency, f.offered_rate or 0.0)

    here = setting_of(chosen)
    above: dict[Setting, list[PointFigures]] = {}
    for f in figs:
        other = setting_of(f)
        if (f.valid and not f.end_control and other.config_label == here.config_label
                and other.replicas == here.replicas and other.workload == here.workload
                and order(f) > order(chosen)):
            above.setdefault(other, []).append(f)
    if not above:
        return None
    nearest = min(above.values(), key=lambda group: order(group[0]))
    if len(nearest) < 2:
        return None
    return StepSpread(nearest[0].load_label,
                      relative_spread([f.output_throughput for f in nearest]))
