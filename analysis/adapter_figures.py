"""Figures per LoRA adapter of a point whose workload spread its requests over adapters
(WorkloadSpec.lora_split), from its stored requests.

Each adapter's figures are the point's own, restricted to the requests that named it, with
vLLM's definitions: completed = HTTP 200 with at least one chunk; output tokens from usage,
completed requests only; TTFT and E2EL medians over its completed requests (numpy's median).
Its output throughput is its completed output tokens over the point's duration: the part of
the point's output throughput it produced, so the adapters' throughputs add up to the point's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class AdapterRequest:
    """What the figures read of one stored request."""

    adapter: str | None
    completed: bool
    output_tokens: int | None
    ttft_s: float | None
    e2el_s: float | None


@dataclass(frozen=True)
class AdapterFigures:
    name: str
    requests: int
    completed: int
    request_share: float  # of the point's requests, 0-1
    output_tokens: int
    output_share: float | None  # of the point's completed output tokens, 0-1; None: none
    output_throughput: float | None  # tokens/s over the point's duration; None: no duration
    median_ttft_ms: float | None
    median_e2el_ms: float | None


def _median_ms(values: list[float]) -> float | None:
    return float(np.median(values)) * 1000.0 if values else None


def adapter_figures(
    requests: Sequence[AdapterRequest], duration_s: float
) -> list[AdapterFigures]:
    """One row per adapter the requests named, in name order; empty when none named one. A
    request that named no adapter (the served model itself) counts in the totals only."""
    names = sorted({r.adapter for r in requests if r.adapter is not None})
    if not names:
        return []
    total_requests = len(requests)
    total_tokens = sum(r.output_tokens or 0 for r in requests if r.completed)
    rows = []
    for name in names:
        mine = [r for r in requests if r.adapter == name]
        done = [r for r in mine if r.completed]
        tokens = sum(r.output_tokens or 0 for r in done)
        rows.append(AdapterFigures(
            name=name,
            requests=len(mine),
            completed=len(done),
            request_share=len(mine) / total_requests,
            output_tokens=tokens,
            output_share=tokens / total_tokens if total_tokens else None,
            output_throughput=tokens / duration_s if duration_s > 0 else None,
            median_ttft_ms=_median_ms([r.ttft_s for r in done if r.ttft_s is not None]),
            median_e2el_ms=_median_ms([r.e2el_s for r in done if r.e2el_s is not None]),
        ))
    return rows
