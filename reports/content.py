"""What a report shows, as plain numbers and sentences: build_report_content(report).

Every value, label and sentence comes from one judgement call, judgement.report_view, through
the same calls the run page makes; this module only writes it in the report's language
(reports.wording.say) and lays it out in reports.page's dataclasses. Nothing but those reaches
the template, so a hostname, a user name or a link to a run cannot appear by accident; an
engine label goes through facts.public_engine_label (no flag values, no local paths).

The public page never calls this: it renders the snapshot reports/publishing.py stored when the
version was published, so a link already sent cannot change. Call it inside
translation.override(language).
"""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from judgement.report_phrases import Phrase, Words
from judgement.report_view import (
    CurveView,
    FleetView,
    HeadlineView,
    QueueView,
    ReferenceView,
    ReportAsk,
    ScalingView,
    SideView,
    report_view,
)
from reports import facts
from reports.models import Item, Report
from reports.page import (
    AcceptanceRow,
    Fleet,
    FleetRow,
    Headline,
    MethodRow,
    QueueSide,
    ReferenceRow,
    ReportContent,
    Side,
    TableRow,
)
from reports.wording import day, say, say_or_none


def build_report_content(report: Report, generated_at: datetime | None = None,
                         version: int | None = None) -> ReportContent:
    """The whole page from the stored rows, as of now. Raises AnalysisError when the two
    headline points cannot be compared (e.g. one has no latency data)."""
    view = report_view(ReportAsk(
        benchmark=report.benchmark, baseline=report.baseline_point,
        candidate=report.candidate_point, scaling_point=report.scaling_point,
        scaling_reference=report.scaling_reference, references=list(report.references.all()),
        capacity_plan=report.capacity_plan,
        shows=frozenset(item for item in Item.values if report.shows(item)),
        today=timezone.localdate(generated_at) if generated_at else timezone.localdate()))
    content = ReportContent(
        title=report.title,
        language=report.language,
        created_on=day(generated_at or timezone.now()),
        cpu_engine=view.cpu_engine,
        items=[item for item in Item.values if report.shows(item)],
        version=version,
        figures={"labels": {name: say(label) for name, label in view.chart_labels.items()}},
        sources=view.sources,
    )
    content.headline = _headline(view.headline) if view.headline else None
    content.worth = [say(s) for s in view.worth]
    content.parity = [say(s) for s in view.parity]
    content.parity_flagged = view.parity_flagged
    if view.scaling is not None:
        _scaling(content, view.scaling)
    if view.references is not None:
        content.references = [_reference(r) for r in view.references]
    if view.table is not None:
        content.table = [TableRow(comparison=say(r.comparison), baseline=say(r.baseline),
                                  result=say(r.result), shows=say(r.shows),
                                  differs=say(r.differs)) for r in view.table]
    if view.curve is not None:
        _curve(content, view.curve)
    if view.queue is not None:
        _queue(content, view.queue)
    if view.fleet is not None:
        content.fleet = _fleet(view.fleet)
    content.methodology = [_method_row(r.label, r.values) for r in view.methodology]
    content.metric_definitions = [(say(term), say(text))
                                  for term, text in view.metric_definitions]
    content.limits = [say(limit) for limit in view.limits]
    content.acceptance = [AcceptanceRow(criterion=say(r.criterion), measured=r.measured,
                                        detail=say(r.detail)) for r in view.acceptance]
    caveats = list(report.caveats.all())
    content.caveats = [(c.kind, c.text) for c in caveats]
    content.sources["caveats"] = [c.pk for c in caveats]
    return content


def _side(side: SideView) -> Side:
    return Side(label=say(side.label), config=say(side.config),
                output_throughput=side.output_throughput,
                output_throughput_text=say(side.throughput),
                median_e2el_text=say(side.median_e2el), cpu_engine=side.cpu_engine)


def _headline(view: HeadlineView) -> Headline:
    return Headline(
        ratio_interval=say_or_none(view.ratio_interval),
        stability=[say(s) for s in view.stability],
        baseline=_side(view.baseline),
        candidate=_side(view.candidate),
        ratio_text=say_or_none(view.ratio),
        improvement_text=say_or_none(view.improvement),
        spec_sentence=say_or_none(view.spec_sentence),
        latency_sentence=say(view.latency_sentence),
        controlled=view.controlled,
        held_fixed=[(say(label), say(value)) for label, value in view.held_fixed],
        differing=[(say(label), say(before), say(after))
                   for label, before, after in view.differing],
        not_recorded=[say(label) for label in view.not_recorded],
    )


def _scaling(content: ReportContent, view: ScalingView) -> None:
    content.scaling_missing = say_or_none(view.missing)
    content.scaling_sentence = say_or_none(view.sentence)
    content.scaling_facts = [(say(label), say(value)) for label, value in view.facts]
    if view.figure is not None:
        content.figures["scaling"] = view.figure


def _reference(row: ReferenceView) -> ReferenceRow:
    return ReferenceRow(
        source=row.source, url=row.url, recorded_on=say(row.recorded_on),
        no_longer_listed_on=say_or_none(row.no_longer_listed_on),
        reference_value=say(row.reference_value), unit=say(row.unit), spec=row.spec,
        local_spec=say(row.local_spec), local_label=say_or_none(row.local_label),
        local_value=say_or_none(row.local_value), ratio_text=say_or_none(row.ratio),
        difference_text=say_or_none(row.difference), controlled=row.controlled,
        matching=[say(label) for label in row.matching],
        differing=[say(label) for label in row.differing],
        not_recorded=[say(label) for label in row.not_recorded], cpu_engine=row.cpu_engine,
        no_match=say_or_none(row.no_match), latency_text=say_or_none(row.latency),
        dated_text=say(row.dated), figures_text=say(row.figures))


def _curve(content: ReportContent, view: CurveView) -> None:
    content.curve_sentence = say(view.sentence)
    content.curve_selected = say_or_none(view.selected)
    content.curve_interval = say_or_none(view.interval)
    traces = [{**trace, "name": facts.public_engine_label(trace["name"])}
              for trace in view.traces]
    selected = view.selected_point
    content.figures["curve"] = {"traces": traces, "selected": None if selected is None else {
        "x": selected["x"], "y": selected["y"],
        "name": facts.public_engine_label(selected["label"]),
        # Which config it is, spelled as the run page's label (data-config): not shown.
        "config": facts.public_engine_key(selected["label"]),
    }}


def _queue(content: ReportContent, view: QueueView) -> None:
    content.queue = [QueueSide(
        title=say(side.title), verdict=say(side.verdict), sentence=say(side.sentence),
        no_chart=say(side.no_chart), timeline_drawn=say(side.timeline_drawn),
        timeline_phases=say(side.timeline_phases)) for side in view.sides]
    content.figures["queue"] = [
        {"title": shown.title, "replicas": side.replicas, "line_shape": side.line_shape}
        for shown, side in zip(content.queue, view.sides, strict=True)]
    content.figures["timeline"] = [side.lanes for side in view.sides]
    content.queue_story = say(view.story)


def _method_row(label: Phrase, values: list[tuple[Phrase, Words]]) -> MethodRow:
    """One value when every side reads the same, else each side's own, labelled."""
    written = [(say(side), say(value)) for side, value in values]
    if len({value for _side, value in written}) == 1:
        return MethodRow(label=say(label), values=[("", written[0][1])])
    return MethodRow(label=say(label), values=written)


def _fleet(view: FleetView) -> Fleet:
    return Fleet(
        headline=view.headline, notes=[say(note) for note in view.notes], batch=view.batch,
        rows=[FleetRow(config=facts.public_engine_label(r.config_label), capacity=r.capacity,
                       gpus=r.gpus, hours=r.hours, cost=r.cost, sentences=r.sentences)
              for r in view.rows],
        check=view.check, check_held=view.check_held)
