"""Store the points of a result file (read by runner.importer) as one imported benchmark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from benchmarks.models import Benchmark, Checkpoint, Runtime, Workload
from benchmarks.points import store_point
from runner.importer import ImportFileError, load_result_file
from runner.schema import PointResult

__all__ = ["ImportFileError", "import_file", "import_points"]


def import_file(path: Path, *, name: str = "", user: Any = None) -> Benchmark:
    """Read the file first (ImportFileError if it is bad), then store it in one transaction."""
    points = load_result_file(path)
    if not points:
        raise ImportFileError(f"{path.name}: no points in this file")
    return import_points(points, name=name or path.name, source_file=path.name, user=user)


def _workload_for(point: PointResult) -> Workload:
    spec = point.workload
    thinking = bool(spec.extra_body.get("chat_template_kwargs", {}).get("enable_thinking", False))
    workload, _ = Workload.objects.get_or_create(
        name="imported",
        prompt_source=spec.kind,
        dataset_path=spec.dataset_path or "",
        input_tokens_min=spec.input_tokens_min,
        input_tokens_max=spec.input_tokens_max,
        output_tokens=spec.output_tokens,
        request_count=point.load.num_requests,
        temperature=spec.temperature,
        ignore_eos=spec.ignore_eos,
        thinking=thinking and spec.endpoint == "chat",
        endpoint=spec.endpoint,
        stream=spec.stream,
        load_shape=point.load.shape,
    )
    return workload


def _checkpoint_for(point: PointResult) -> Checkpoint | None:
    if point.provenance is None:
        return None
    checkpoint = point.provenance.checkpoint
    engine = point.provenance.engine
    row, _ = Checkpoint.objects.get_or_create(
        repo=checkpoint.model,
        revision=checkpoint.revision or "",
        precision=checkpoint.precision or "",
        kv_cache_dtype=engine.cache_dtype or "",
    )
    return row


def _runtime_for(point: PointResult) -> Runtime | None:
    engine = point.provenance.engine if point.provenance else None
    if engine is None or not engine.version:
        return None
    row, _ = Runtime.objects.get_or_create(
        engine="vllm", version=engine.version, image=engine.image or "", digest=""
    )
    return row


def import_points(
    points: list[PointResult], *, name: str, source_file: str, user: Any = None
) -> Benchmark:
    keys = [point.key for point in points]
    duplicates = sorted({key for key in keys if keys.count(key) > 1})
    if duplicates:
        raise ImportFileError(f"{source_file}: point key {duplicates[0]!r} appears more than once")
    first = points[0]
    now = timezone.now()
    with transaction.atomic():
        benchmark = Benchmark.objects.create(
            name=name[:200],
            source=Benchmark.Source.IMPORTED,
            runtime=_runtime_for(first),
            checkpoint=_checkpoint_for(first),
            workload=_workload_for(first),
            plan={"name": first.plan_name, "imported_from": source_file},
            created_by=user if user is not None and user.is_authenticated else None,
            state=Benchmark.State.SUCCEEDED,
            progress=1.0,
            progress_note=f"imported from {source_file}",
            started_at=now,
            finished_at=now,
        )
        for point in points:
            store_point(benchmark, point)
    return benchmark
