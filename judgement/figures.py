"""Stored rows as the rules' inputs: a Point as PointFigures or Measured, an ExternalReference
as a Reference. The conversion is analysis.convert's, so it is the one the unit tests cover."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, cast

from analysis import AnalysisError
from analysis.convert import (
    from_point_result,
    needs_samples,
    replica_figures_from_point_result,
    run_facts_from_point_result,
)
from analysis.types import LatencyStatistic, Measured, PointFigures, Reference, WorkloadShape
from benchmarks.models import ExternalReference, Point
from benchmarks.storage.points import point_to_result
from judgement.rows import engine_samples
from runner.schema.result import PointResult


def point_result(point: Point) -> PointResult:
    """The point as runner.schema.result.PointResult without its per-request records and samples.

    The judgement layer reads only aggregates, so the compressed arrays in PointData stay on
    disk; everything else is the stored row, validated by the same schema the runner wrote.
    """
    return point_to_result(point, records=False)


def with_samples(pairs: Sequence[tuple[Point, PointResult]]) -> None:
    """Give the results that need their engine samples to judge (analysis.convert.needs_samples:
    a queue summary without the record of running while requests waited) those samples, read
    for all of them in one query; the others read none."""
    wanting = [(point, result) for point, result in pairs if needs_samples(result)]
    if not wanting:
        return
    stored = engine_samples([point for point, _ in wanting])
    for point, result in wanting:
        result.samples = stored.get(point.pk, [])


def judged_result(point: Point) -> PointResult:
    """point_result, with its engine samples where the rules need them (with_samples)."""
    result = point_result(point)
    with_samples([(point, result)])
    return result


def figures(point: Point) -> PointFigures:
    return from_point_result(judged_result(point))


def measured(point: Point) -> Measured:
    result = judged_result(point)
    return Measured(facts=run_facts_from_point_result(result), figures=from_point_result(result))


SPEC_RE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+))?\s*in\s*/\s*(\d+)\s*out\s*$", re.IGNORECASE)


def parse_spec(text: str) -> WorkloadShape | None:
    """'1000 in / 1000 out' or '63-66 in / 256 out' (WorkloadShape.label's own format)."""
    match = SPEC_RE.match(text or "")
    if not match:
        return None
    low, high, out = match.groups()
    try:
        return WorkloadShape(
            input_tokens_min=int(low), input_tokens_max=int(high or low), output_tokens=int(out)
        )
    except AnalysisError:
        return None


def reference(ref: ExternalReference) -> Reference:
    """An ExternalReference row as the analysis input; what the row does not state is None."""
    return Reference(
        name=ref.source,
        value=ref.value,
        unit=ref.unit,
        recorded_on=ref.recorded_on,
        no_longer_listed_on=ref.no_longer_listed_on,
        gpu_sku=ref.gpu_name or None,
        gpu_count=ref.gpu_count or None,
        runtime=ref.runtime or None,
        runtime_version=ref.runtime_version or None,
        checkpoint=ref.checkpoint or None,
        checkpoint_revision=ref.checkpoint_revision or None,
        precision=ref.precision or None,
        kv_dtype=ref.kv_dtype or None,
        request_count=ref.request_count,
        workload=parse_spec(ref.workload_spec),
        host=ref.host or None,
        latency_ms=ref.latency_ms,
        # The row's constraint and Reference itself hold it to LATENCY_STATISTICS.
        latency_statistic=cast(LatencyStatistic | None, ref.latency_statistic or None),
        source_url=ref.url or None,
    )


def figures_by_key(points: Sequence[Point]) -> tuple[dict[str, PointFigures], dict[str, str]]:
    """Analysis inputs of the points, and the points that cannot be one (key -> why)."""
    figs, problems = {}, {}
    read = []
    for p in points:
        try:
            read.append((p, point_result(p)))
        except (AnalysisError, ValueError) as exc:  # pydantic's ValidationError: a ValueError
            problems[p.key] = str(exc)
    with_samples(read)
    for p, result in read:
        try:
            figs[p.key] = from_point_result(result)
        except (AnalysisError, ValueError) as exc:
            problems[p.key] = str(exc)
    return figs, problems


def replica_figures(point: Point) -> tuple[Any, ...]:
    return replica_figures_from_point_result(point_result(point))
