from __future__ import annotations

from typing import Any

from benchmarks.models import Benchmark
from reports.models import Item, Report, ReportCaveat
from tests.reports.conftest import point

ALL_ITEMS = list(Item.values)


def make_report(benchmark: Benchmark, owner, **fields: Any) -> Report:
    caveats = fields.pop("caveats", [])
    defaults: dict[str, Any] = {
        "title": "Scheduling settings: 2.3x output throughput",
        "language": "en",
        "benchmark": benchmark,
        "baseline_point": point(benchmark, 8, 32),
        "candidate_point": point(benchmark, 64, 32),
        "scaling_point": point(benchmark, 64, 32, replicas=2),
        "scaling_reference": point(benchmark, 64, 32),
        "items": ALL_ITEMS,
        "created_by": owner,
    }
    report = Report.objects.create(**{**defaults, **fields})
    for position, text in enumerate(caveats):
        ReportCaveat.objects.create(report=report, position=position, kind="scope", text=text)
    return report
