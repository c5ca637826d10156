"""The run's operating point as stored: the current choice, and storing a new one.

The judgement layer chooses (judgement.operating_point.select) and never writes; this is the
write, in one transaction so a run never has two current choices.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction

from analysis.selection_json import evidence_json
from analysis.types import Selection
from benchmarks.models import Benchmark, OperatingPoint, Point


def current_operating_point(benchmark: Benchmark) -> OperatingPoint | None:
    return (
        OperatingPoint.objects.filter(benchmark=benchmark, is_current=True)
        .select_related("point", "chosen_by")
        .first()
    )


@transaction.atomic
def save_operating_point(
    benchmark: Benchmark, chosen: Selection, points: Sequence[Point], user: Any = None
) -> OperatingPoint:
    """Store a selection as the benchmark's current one; earlier ones stay as history."""
    point = next(p for p in points if p.key == chosen.chosen_key)
    previous = current_operating_point(benchmark)
    params = dict(chosen.params)
    if chosen.method == "override" and previous is not None:
        params.setdefault("replaces_method", previous.method)
        params.setdefault("replaces_key", previous.point.key)
    OperatingPoint.objects.filter(benchmark=benchmark, is_current=True).update(is_current=False)
    return OperatingPoint.objects.create(
        benchmark=benchmark,
        method=chosen.method,
        params=params,
        point=point,
        sentence=chosen.sentence,
        evidence=evidence_json(chosen.evidence),
        reason=chosen.reason,
        chosen_by=user if getattr(user, "is_authenticated", False) else None,
    )
