from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchmarks.models import Benchmark, Point
from benchmarks.points import store_point
from reports import publishing
from reports.models import Item, Report, ReportCaveat
from tests.reports.conftest import point, point_result

ALL_ITEMS = list(Item.values)


def make_report(benchmark: Benchmark, owner, *, publish: bool = True, **fields: Any) -> Report:
    """A report as the build form leaves it: saved with its caveats and version 1 published
    (publish=False: a report from before versions, frozen when its link is first opened). Its
    issued_token is the token of that link, which the database does not keep."""
    caveats = fields.pop("caveats", [])
    references = fields.pop("references", [])
    defaults: dict[str, Any] = {
        "title": "Scheduling settings: 2.3x output throughput",
        "language": "en",
        "benchmark": benchmark,
        "baseline_point": lambda: point(benchmark, 8, 32),
        "candidate_point": lambda: point(benchmark, 64, 32),
        "scaling_point": lambda: point(benchmark, 64, 32, replicas=2),
        "scaling_reference": lambda: point(benchmark, 64, 32),
        "items": ALL_ITEMS,
        "created_by": owner,
    }
    # The default points are looked up only when not given: another sweep may lack them.
    for name, value in defaults.items():
        if name not in fields:
            fields[name] = value() if callable(value) else value
    report = Report(**fields)
    report.issue_token()  # report.issued_token: its link's token, as the build page shows it
    report.save()
    report.references.set(references)
    for position, text in enumerate(caveats):
        ReportCaveat.objects.create(report=report, position=position, kind="scope", text=text)
    if publish:
        publishing.publish(report, owner)
    return report


def store_ladder(benchmark: Benchmark, seqs: int,
                 levels: Sequence[tuple[int, float, float]]) -> list[Point]:
    """One engine config's load ladder, stored: (requests, output tokens/s, median latency ms)
    per load level."""
    return [store_point(benchmark, point_result(seqs, requests, throughput=tps,
                                                median_e2el_ms=e2el))
            for requests, tps, e2el in levels]
