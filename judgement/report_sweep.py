"""A report's judgement of the sweep itself: the curve with the operating point the run page
shows, and the queue evidence of the two headline points (judgement.report_view calls both)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from analysis.sentences import Sentence
from judgement import charts
from judgement.operating_point import operating_point_sentence, shown_operating_point
from judgement.public_provenance import is_cpu_engine
from judgement.report_phrases import (
    AFTER,
    BEFORE,
    Figure,
    Phrase,
    Words,
    _,
    engine,
    joined,
    number,
    percent,
    seconds,
    side_title,
)
from judgement.report_rows import Sweeps
from judgement.request_timeline import REPORT_TIMELINE_LANES, request_timeline
from judgement.rows import Benchmark, Point, samples_blobs
from judgement.stability_view import figure_sentences, run_stability
from judgement.verdict_rows import cause, step_story
from judgement.vocabulary import Verdict

# --- curve and operating point -----------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class CurveView:
    """The sweep's curve and its operating point. Trace names and the selected point's name
    are engine labels as stored: the report shows them as the customer may read them."""

    sentence: Words
    selected: Phrase | None
    # The operating point's figures with their 95% intervals, when it has them.
    interval: Words | None
    traces: list[dict[str, Any]]
    selected_point: dict[str, Any] | None
    sources: dict[str, Any]


def curve(benchmark: Benchmark, sweeps: Sweeps) -> CurveView:
    """The sweep's curve with the operating point the run page shows (stored, or the default
    knee over every single-replica point of the benchmark)."""
    points, figs = sweeps.single_replica(benchmark)
    by_key = {p.key: p for p in sweeps.of(benchmark)[0]}
    shown = shown_operating_point(benchmark, figs)
    selected = by_key.get(shown.key) if shown.key else None
    sentence: Words
    if shown.error is not None:
        sentence = _("No operating point could be chosen from the measured load levels (a knee "
                     "needs enough valid levels of one engine config); none is marked.")
    else:
        # The run page's own sentence, each point key in it as the customer may read it.
        sentence = _public_sentence(operating_point_sentence(shown), by_key)
    sources = {
        "curve_points": [p.pk for p in points],
        "operating_point": shown.stored.pk if shown.stored else None,
        "operating_point_point": selected.pk if selected else None,
    }
    figure = charts.throughput_figure(points)
    # The curve is drawn from single-replica points: each trace's name is an engine label.
    traces = [{
        "name": trace["name"],
        "x": [None if v is None else v / 1000 for v in trace["x"]["median_e2el_ms"]],
        "y": trace["y"],
        "valid": trace["valid"],
    } for trace in figure["traces"]]
    if selected is None:
        return CurveView(sentence=sentence, selected=None, interval=None, traces=traces,
                         selected_point=None, sources=sources)
    values: dict[str, Words] = {
        "config": engine(selected.engine_label), "load": selected.load_label,
        "tps": number(selected.output_throughput), "lat": seconds(selected.median_e2el_ms)}
    chosen = next((f for f in figs if f.key == selected.key), None)
    interval = None
    if chosen is not None:
        found = figure_sentences(chosen, figs, run_stability(figs).noise)
        interval = joined([s for s in found if s is not None], "; ")
    return CurveView(
        sentence=sentence,
        selected=Phrase(SELECTED_CPU if is_cpu_engine(selected) else SELECTED, values),
        interval=interval, traces=traces, sources=sources,
        selected_point={
            "x": None if selected.median_e2el_ms is None else selected.median_e2el_ms / 1000,
            "y": selected.output_throughput,
            "label": selected.engine_label,
        })


SELECTED = _("%(config)s at %(load)s: %(tps)s output tokens/s, median latency %(lat)s").msgid
SELECTED_CPU = _("%(config)s at %(load)s: %(tps)s output tokens/s, median latency %(lat)s "
                 "(CPU engine)").msgid


def _public_sentence(sentence: Sentence, by_key: dict[str, Point]) -> Words:
    """The run page's sentence with each point key in it (the SLO sentence names the next
    point by its key) as the customer may read it: no engine flag values."""
    if not sentence.translatable:
        return sentence
    values: dict[str, Words] = {
        name: Figure(value, "point_key") if isinstance(value, str) and value in by_key
        else value for name, value in sentence.values.items()}
    return Phrase(sentence.template, values)


# --- queue evidence ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class QueueSideView:
    title: Phrase
    verdict: Words
    sentence: Phrase
    # Why the side has no queue chart (no engine samples stored); empty when it has one.
    no_chart: Words
    timeline_drawn: Words
    timeline_phases: Words
    # The queue chart's replicas (judgement.charts.samples_figure) and its lanes.
    replicas: list[Any]
    line_shape: str
    lanes: dict[str, Any] | None


@dataclass(frozen=True, kw_only=True)
class QueueView:
    sides: list[QueueSideView]
    # The step from the before point to the after point with each side's cause; empty where a
    # side has no verdict.
    story: Words


def _verdict_text(point: Point, verdict: Verdict | None, sweeps: Sweeps) -> Words:
    """The point's cause with the figure that shows it, as the run page's story says it."""
    if verdict is not None:
        return cause(verdict)
    figs = sweeps.figures(point)
    if figs is not None and figs.queue_samples == 0:
        return _("not determined (no engine samples)")
    return _("not determined")


def _queue_value(point: Point, name: str) -> float | None:
    value = (point.queue or {}).get(name)
    return None if value is None else float(value)


def queue(baseline: Point, candidate: Point, sweeps: Sweeps) -> QueueView:
    blobs = samples_blobs([baseline, candidate])
    verdicts = [sweeps.verdicts(p.benchmark).by_key.get(p.key) for p in (baseline, candidate)]
    sides = []
    for point, label, verdict in zip((baseline, candidate), (BEFORE, AFTER), verdicts,
                                     strict=True):
        kv = _queue_value(point, "peak_kv_usage")
        sentence = _(
            "On average %(running)s requests ran while %(waiting)s waited (peak %(peak_waiting)s "
            "waiting); peak KV cache use %(kv)s.",
            running=number(_queue_value(point, "mean_running"), 1),
            waiting=number(_queue_value(point, "mean_waiting"), 1),
            peak_waiting=number(_queue_value(point, "peak_waiting")),
            kv=percent(None if kv is None else kv * 100))
        blob = blobs.get(point.pk)
        drawn = charts.samples_figure(blob) if blob else {"replicas": []}
        timeline = request_timeline(point, REPORT_TIMELINE_LANES)
        sides.append(QueueSideView(
            title=side_title(label, point.engine_label, is_cpu_engine(point)),
            verdict=_verdict_text(point, verdict, sweeps), sentence=sentence,
            no_chart="" if drawn["replicas"] else _(
                "No engine samples were stored for this point, so there is no queue chart."),
            timeline_drawn=timeline.drawn if timeline else "",
            timeline_phases=timeline.phases if timeline else "",
            replicas=drawn["replicas"], line_shape=drawn.get("line_shape", "linear"),
            # Its lanes; the engine's counts beneath them are the queue chart's own samples.
            lanes=dataclasses.asdict(timeline.lanes) if timeline else None))
    before, after = verdicts
    story: Words = step_story(before, after) if before is not None and after is not None else ""
    return QueueView(sides=sides, story=story)
