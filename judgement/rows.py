"""Every query the judgement layer makes, each a named read: the other modules take rows from
here (or from the data layer's own reads in benchmarks.storage: a point's blobs, its operating
point, a plan's baseline) and never write."""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import Q

# The row types this layer hands to pages and reports, re-exported once: reports/ names them
# from here and never imports benchmarks.models (its rows come only through judgement).
from benchmarks.models import Benchmark as Benchmark
from benchmarks.models import CapacityPlan as CapacityPlan
from benchmarks.models import ExternalReference as ExternalReference
from benchmarks.models import Point as Point
from benchmarks.models import PointData
from benchmarks.storage.columnar import decode_samples
from runner.schema.records import EngineSample


def load_points(benchmark: Benchmark) -> list[Point]:
    return list(benchmark.points.all())


def stored_counts(points: Sequence[Point]) -> dict[int, tuple[int, int]]:
    """(engine samples, request records) stored for each point that has either (PointData's
    count columns, one query): what a queue chart and a request timeline are drawn from."""
    rows = PointData.objects.filter(
        Q(sample_count__gt=0) | Q(request_count__gt=0), point__in=list(points)
    ).values_list("point_id", "sample_count", "request_count")
    return {pk: (samples, requests) for pk, samples, requests in rows}


def samples_blob(point: Point) -> bytes | None:
    """The point's stored engine samples (only that column: its request records can be
    hundreds of megabytes); None without a PointData row."""
    return PointData.objects.filter(point=point).values_list("samples", flat=True).first()


def samples_blobs(points: Sequence[Point]) -> dict[int, bytes]:
    """The stored engine samples of each point with a PointData row, by pk, in one query (only
    that column)."""
    return dict(PointData.objects.filter(point__in=list(points))
                .values_list("point_id", "samples"))


def engine_samples(points: Sequence[Point]) -> dict[int, list[EngineSample]]:
    """The stored engine samples of the points that have any, by pk, in one query (only the
    samples column: a point's request records can be hundreds of megabytes)."""
    rows = PointData.objects.filter(point__in=list(points), sample_count__gt=0).values_list(
        "point_id", "samples")
    return {pk: decode_samples(blob) for pk, blob in rows}


def references() -> list[ExternalReference]:
    return list(ExternalReference.objects.all())


def scaling_reference_choices(node_point: Point, limit: int = 200) -> list[Point]:
    """Single-replica valid points with the same workload spec, newest first."""
    spec = node_point.workload
    return list(
        Point.objects.filter(
            replicas=1,
            valid=True,
            workload__input_tokens_min=spec.get("input_tokens_min"),
            workload__input_tokens_max=spec.get("input_tokens_max"),
            workload__output_tokens=spec.get("output_tokens"),
        )
        .select_related("benchmark")
        .order_by("-id")[:limit]
    )


def plan_runs_points(benchmark: Benchmark) -> list[Point]:
    """The points of every succeeded run of the benchmark's plan (its plan_key), and its own."""
    if not benchmark.plan_key:
        return load_points(benchmark)
    return list(Point.objects.filter(
        Q(benchmark=benchmark)
        | Q(benchmark__plan_key=benchmark.plan_key, benchmark__state=Benchmark.State.SUCCEEDED)
    ).order_by("benchmark_id", "id"))


def plan_runs_count(benchmark: Benchmark) -> int:
    """How many succeeded runs share the benchmark's plan, itself included if succeeded."""
    if not benchmark.plan_key:
        return 1
    return Benchmark.objects.filter(plan_key=benchmark.plan_key,
                                    state=Benchmark.State.SUCCEEDED).count()


def config_points(pairs: Sequence[tuple[Benchmark, str]]) -> list[Point]:
    """Each run's points of one engine config (a comparison's two sides), every replica count."""
    where = Q(pk__in=[])
    for benchmark, engine_label in pairs:
        where |= Q(benchmark=benchmark, engine_label=engine_label)
    return list(Point.objects.filter(where).order_by("benchmark_id", "id"))


def plan_config_points(plan: CapacityPlan, engine_label: str) -> list[Point]:
    """The points a stored capacity plan read of one engine config, by run."""
    return list(Point.objects.filter(pk__in=plan.point_ids, engine_label=engine_label)
                .order_by("benchmark_id", "id"))


def capacity_plans(benchmark: Benchmark, limit: int = 20) -> list[CapacityPlan]:
    """The run's capacity plans, newest first."""
    return list(benchmark.capacity_plans.select_related("created_by")[:limit])


def point_by_id(value: str | None) -> Point | None:
    """The point a page's query names by its id (a scaling reference); None for no or a
    malformed id, or one that is gone."""
    if value and value.isdigit():
        return Point.objects.select_related("benchmark").filter(pk=int(value)).first()
    return None
