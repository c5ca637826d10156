"""Terse builders for analysis inputs: every test states only the figures it is about."""

from __future__ import annotations

from typing import Any

from analysis.types import PointFigures, RunFacts, WorkloadShape

CASE_STUDY_SPEC = WorkloadShape(input_tokens_min=63, input_tokens_max=66, output_tokens=256)


def point(key: str, offered: float, throughput: float, **kwargs: Any) -> PointFigures:
    kwargs.setdefault("config_label", "seqs=1024,tokens=8192")
    kwargs.setdefault("max_num_seqs", 1024)
    kwargs.setdefault("max_num_batched_tokens", 8192)
    kwargs.setdefault("workload", CASE_STUDY_SPEC)
    return PointFigures(
        key=key, offered_concurrency=offered, output_throughput=throughput, **kwargs
    )


def facts(**overrides: Any) -> RunFacts:
    """The case study's fixed factors, all recorded; override one to make it differ."""
    values: dict[str, Any] = {
        "gpu_sku": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
        "gpu_count": 1,
        "runtime": "vllm/vllm-openai",
        "runtime_version": "0.11.0",
        "checkpoint": "nvidia/Qwen3-30B-A3B-NVFP4",
        "checkpoint_revision": "a" * 40,
        "precision": "NVFP4",
        "kv_dtype": "fp8",
        "request_count": 2000,
        "workload": CASE_STUDY_SPEC,
        "host": "gpu-host-1",
    }
    values.update(overrides)
    return RunFacts(**values)
