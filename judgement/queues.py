"""Which points get a queue chart and a request timeline on the run page, and why the others
do not."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from analysis import sentences
from analysis.types import PointFigures
from benchmarks.models import Point
from judgement.rows import stored_counts
from runner.schema.result import IMPORT_CLIENTS


@dataclass(frozen=True)
class QueueCharts:
    """Which points get a queue chart (stored engine samples to draw), and why the others
    do not, grouped by reason in the order the points come: never an empty plot."""

    drawn: list[Point]
    missing: list[tuple[str, list[Point]]]
    # The points with stored request records, each drawn as a request timeline
    # (judgement.request_timeline); the others, which the timeline section names.
    timelines: list[Point] = field(default_factory=list)
    no_timeline: list[Point] = field(default_factory=list)


def queue_charts(points: Sequence[Point], figs: Mapping[str, PointFigures]) -> QueueCharts:
    """A point's chart is drawn from its stored samples (PointData), so that is what decides;
    the reason for a point without them reads its source and its queue summary."""
    counts = stored_counts(points)
    stored = {pk for pk, (samples, _requests) in counts.items() if samples}
    drawn: list[Point] = []
    missing: dict[str, list[Point]] = {}
    for p in points:
        if p.pk in stored:
            drawn.append(p)
            continue
        fig = figs.get(p.key)
        summarized = fig.queue_samples if fig is not None else int(p.queue.get("samples") or 0)
        why = sentences.no_queue_chart_sentence(
            imported_from=IMPORT_CLIENTS.get(p.source), summary_samples=summarized
        )
        missing.setdefault(why, []).append(p)
    with_requests = {pk for pk, (_samples, requests) in counts.items() if requests}
    return QueueCharts(
        drawn=drawn, missing=list(missing.items()),
        timelines=[p for p in points if p.pk in with_requests],
        no_timeline=[p for p in points if p.pk not in with_requests],
    )
