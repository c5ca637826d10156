"""What each request of a point went through, one lane per request, with the engine's waiting
and running counts on the same clock beneath: the run page's request timeline
(dashboard.views.point_timeline) and each side's in a report (judgement.report_sweep.queue).

A lane runs from the time its request was due (its intended send) to sent, to its first token,
to its last, in three phases: waiting for its send, in flight before the first token (the
engine's queue and the prompt's prefill), streaming. The boundaries are the stored records'
own fields (docs/result-schema.md, "requests"): due is intended_send, sent actual_send, the
first token actual_send + ttft and the last actual_send + e2el (vLLM's TTFT and E2EL count
from the actual send; the first chunk with choices, which on chat is the role chunk). A
request with no first token (failed) ends at completed_at instead.

Only those columns are read (benchmarks.storage.points.stored_request_arrays): milliseconds for a
32,768-request point (docs/performance.md, "Dashboard"). Beyond `lanes` requests, an
evenly spaced sample in the order they were due is drawn, the first and the last among them,
and the page says so; the medians count every request.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from analysis.sentences import Sentence
from benchmarks.models import Point
from benchmarks.storage.points import stored_request_arrays
from judgement import charts
from judgement.rows import samples_blob

# The most lanes the run page draws: a few thousand lines still draw in a moment, and more are
# finer than the chart's pixels.
TIMELINE_LANES = 2000
# A report stores its figures in every published version, in each language: fewer lanes.
REPORT_TIMELINE_LANES = 400

# The RequestRecord fields a timeline reads.
FIELDS = ("index", "replica", "intended_send", "actual_send", "ttft", "e2el", "completed_at")

ALL_DRAWN = "All %(count)s requests are drawn, one lane each, in the order they were due."
SAMPLE_DRAWN = (
    "%(lanes)s of the point's %(count)s requests are drawn, one lane each: evenly spaced in the "
    "order they were due, the first and the last among them. The medians count every request."
)
PHASE_MEDIANS = (
    "Median per request: %(waiting)s waiting for its send, %(in_flight)s in flight before its "
    "first token, %(streaming)s streaming (over the %(count)s requests that got a first token)."
)
NO_FIRST_TOKEN = "No request of this point got a first token."
# A phase's length, a clause of PHASE_MEDIANS.
SECONDS = "%(value)s s"
MILLISECONDS = "%(value)s ms"
# Every template above, for the report's catalog (tests/reports/test_translations.py).
TIMELINE_TEMPLATES = (ALL_DRAWN, SAMPLE_DRAWN, PHASE_MEDIANS, NO_FIRST_TOKEN, SECONDS,
                      MILLISECONDS)

# The run page's words for the phases and axes; a report translates its own
# (judgement.report_view.CHART_LABELS).
PHASE_NAMES = {
    "waiting": "waiting for its send",
    "in_flight": "in flight before the first token",
    "streaming": "streaming",
    "failed": "failed (no first token)",
}
TITLES = {
    "time": "Seconds since the point started",
    "lanes": "Requests, in the order they were due",
    "counts": "Requests in the engine",
    "request": "request",
    "waiting": "waiting",
    "running": "running",
}


@dataclass(frozen=True)
class Lanes:
    """The drawn requests, one lane each, in the order they were due (ties by replica, then
    index). Seconds since the point started; None where a request never reached a boundary."""

    index: list[int]
    replica: list[int]
    due: list[float | None]
    sent: list[float | None]
    first_token: list[float | None]
    last_token: list[float | None]
    # When a request that got no first token ended; None for every other.
    ended: list[float | None]


@dataclass(frozen=True)
class RequestTimeline:
    requests: int  # every stored request of the point
    lanes: Lanes
    drawn: Sentence  # which requests the lanes are
    phases: Sentence  # the median of each phase over every request
    # The engine's gauges over the point (judgement.charts.samples_figure); no replicas when
    # no sample was stored.
    queue: dict[str, Any]


def _listed(values: np.ndarray) -> list[Any]:
    """JSON's values: a missing float (NaN) or count (-1, benchmarks.storage.columnar) as None."""
    if values.dtype.kind == "f":
        return [None if math.isnan(v) else v for v in values.tolist()]
    return [None if v < 0 else v for v in values.tolist()]


def drawn_order(due: np.ndarray, replica: np.ndarray, index: np.ndarray,
                lanes: int) -> np.ndarray:
    """Positions of the requests drawn, in the order they were due: all of them, or `lanes`
    evenly spaced ones (the first and the last among them) when there are more."""
    order = np.lexsort((index, replica, due))  # the last key sorts first; NaN due goes last
    if len(order) <= lanes:
        return order
    # Spaced by more than one position, so rounding never picks one request twice.
    return order[np.rint(np.linspace(0, len(order) - 1, lanes)).astype(np.int64)]


def phase_bounds(arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each boundary of every request from its stored fields (the module's docstring)."""
    sent, ttft, e2el = arrays["actual_send"], arrays["ttft"], arrays["e2el"]
    first = sent + ttft
    return {
        "due": arrays["intended_send"],
        "sent": sent,
        "first_token": first,
        "last_token": sent + e2el,
        "ended": np.where(np.isnan(first), arrays["completed_at"], np.nan),
    }


def _span(seconds: float) -> Sentence:
    """A phase's length for prose (a clause a report translates with its sentence):
    milliseconds under a second, else seconds."""
    if seconds < 1:
        ms = seconds * 1000
        return Sentence(MILLISECONDS, {"value": f"{ms:.1f}" if ms < 10 else f"{ms:.0f}"})
    return Sentence(SECONDS, {"value": f"{seconds:.2f}" if seconds < 10 else f"{seconds:.1f}"})


def phase_medians(bounds: Mapping[str, np.ndarray]) -> Sentence:
    """The median of each phase over the requests that got a first token."""
    reached = ~np.isnan(bounds["first_token"])
    if not reached.any():
        return Sentence(NO_FIRST_TOKEN, {})
    waiting = bounds["sent"][reached] - bounds["due"][reached]
    in_flight = bounds["first_token"][reached] - bounds["sent"][reached]
    streaming = bounds["last_token"][reached] - bounds["first_token"][reached]
    return Sentence(PHASE_MEDIANS, {
        "waiting": _span(float(np.median(waiting))),
        "in_flight": _span(float(np.median(in_flight))),
        "streaming": _span(float(np.median(streaming))),
        "count": f"{int(reached.sum()):,}",
    })


def timeline_of(arrays: Mapping[str, np.ndarray], queue: dict[str, Any],
                lanes: int = TIMELINE_LANES) -> RequestTimeline:
    """The timeline of a point's stored request columns (FIELDS) and engine samples."""
    bounds = phase_bounds(arrays)
    count = len(arrays["index"])
    chosen = drawn_order(bounds["due"], arrays["replica"], arrays["index"], lanes)
    drawn = (Sentence(ALL_DRAWN, {"count": f"{count:,}"}) if len(chosen) == count
             else Sentence(SAMPLE_DRAWN, {"lanes": f"{len(chosen):,}", "count": f"{count:,}"}))
    return RequestTimeline(
        requests=count,
        lanes=Lanes(index=_listed(arrays["index"][chosen]),
                    replica=_listed(arrays["replica"][chosen]),
                    **{name: _listed(values[chosen]) for name, values in bounds.items()}),
        drawn=drawn,
        phases=phase_medians(bounds),
        queue=queue,
    )


def request_timeline(point: Point, lanes: int = TIMELINE_LANES) -> RequestTimeline | None:
    """The point's timeline from its stored rows; None when it stored no request."""
    arrays = stored_request_arrays(point, FIELDS)
    if arrays is None or not len(arrays["index"]):
        return None
    blob = samples_blob(point)
    queue = charts.samples_figure(blob) if blob else {"replicas": [],
                                                     "line_shape": charts.GAUGE_LINE_SHAPE}
    return timeline_of(arrays, queue, lanes)


def timeline_figure(timeline: RequestTimeline) -> dict[str, Any]:
    """What the run page's script draws (static/js/run.js), its words included."""
    return {
        "requests": timeline.requests,
        "lanes": asdict(timeline.lanes),
        "drawn": str(timeline.drawn),
        "phases": str(timeline.phases),
        "queue": timeline.queue,
        "phase_names": PHASE_NAMES,
        "titles": TITLES,
    }

