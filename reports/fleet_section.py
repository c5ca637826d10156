"""The report's "What it means for your fleet": a stored capacity plan as it was answered
(judgement.capacity_view), in the report's language, with its check against the engine."""

from __future__ import annotations

from django.utils.translation import gettext as _

from judgement.capacity_view import plan_view, price_text
from reports import facts
from reports.build_reads import Build
from reports.page import Fleet, FleetRow, ReportContent


def fleet(content: ReportContent, build: Build) -> None:
    row = build.report.capacity_plan
    if row is None:
        return
    view = plan_view(row, _)
    notes = list(view.notes)
    if view.targets:
        notes.append(_("Latency targets: %(targets)s.") % {"targets": view.targets})
    if price_text(row) is None:
        notes.append(_("No GPU-hour price was set, so the plan gives no cost."))
    content.fleet = Fleet(
        headline=view.headline, notes=notes, batch=view.batch,
        rows=[FleetRow(config=facts.public_engine_label(r.config_label), capacity=r.capacity,
                       gpus=r.gpus, hours=r.hours, cost=r.cost, sentences=r.sentences)
              for r in view.rows],
        check=view.check.sentences if view.check else [],
        check_held=view.check.held if view.check else None)
    content.sources["capacity_plan"] = row.pk
