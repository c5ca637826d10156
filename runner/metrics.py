"""Client-side aggregates, exactly as domain.md section 2 and `vllm bench serve` define them.

- Window: first request sent to last completion; failed requests count in the window.
- Throughputs: completed requests' tokens / window seconds (failed requests add no tokens).
- TTFT and E2EL: from the intended send time (open-loop lag is part of the latency).
- TPOT = (E2EL - TTFT) / (output_tokens - 1), only for requests with more than one output token.
- ITL: gaps between content chunks; a chunk carrying k tokens counts as k gaps of gap/k.
- Statistics: mean, median, population std, p90/p95/p99 with numpy's linear interpolation; ms.
- Valid: every request completed, none failed, and with ignore_eos none came back short.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from runner.schema import Metrics, RequestRecord, Window, WorkloadSpec

PERCENTILES = (90, 95, 99)


def window_of(records: Sequence[RequestRecord]) -> Window | None:
    """First request sent to last completion, over every request that was sent (failed too)."""
    starts = [r.actual_send for r in records if r.actual_send is not None]
    ends = [r.completed_at for r in records if r.completed_at is not None]
    if not starts or not ends:
        return None
    return Window(start=min(starts), end=max(ends))


def summary_ms(name: str, seconds: Sequence[float]) -> dict[str, float | None]:
    """mean/median/std/p90/p95/p99 of a list of seconds, in ms, keyed like vllm bench."""
    keys = [f"{stat}_{name}_ms" for stat in ("mean", "median", "std")]
    keys += [f"p{p}_{name}_ms" for p in PERCENTILES]
    if not seconds:
        return dict.fromkeys(keys)
    ms = np.asarray(seconds, dtype=float) * 1000.0
    values = [float(np.mean(ms)), float(np.median(ms)), float(np.std(ms))]  # std: population
    values += [float(np.percentile(ms, p)) for p in PERCENTILES]  # linear interpolation
    return dict(zip(keys, values))


def ttfts(records: Sequence[RequestRecord]) -> list[float]:
    return [r.ttft for r in records if r.ttft is not None]


def e2els(records: Sequence[RequestRecord]) -> list[float]:
    return [r.e2el for r in records if r.e2el is not None]


def tpots(records: Sequence[RequestRecord]) -> list[float]:
    """Per request, only when it produced more than one token (the first has no 'per token')."""
    return [
        (r.e2el - r.ttft) / (r.output_tokens - 1)
        for r in records
        if r.output_tokens is not None
        and r.output_tokens > 1
        and r.e2el is not None
        and r.ttft is not None
    ]


def itls(records: Sequence[RequestRecord]) -> list[float]:
    """Inter-token latencies: a chunk of k tokens after a gap g adds k values of g/k.

    Chunks with 0 tokens (more chunks than the usage count) are skipped, so their time is part
    of the next token-bearing chunk's gap.
    """
    out: list[float] = []
    for r in records:
        previous: float | None = None
        for t, k in zip(r.chunk_times, r.chunk_tokens):
            if k <= 0:
                continue
            if previous is not None:
                out.extend([(t - previous) / k] * k)
            previous = t
    return out


def short_responses(records: Sequence[RequestRecord], workload: WorkloadSpec) -> int:
    """With ignore_eos every completion must reach max_tokens; fewer means the run is invalid."""
    if not workload.ignore_eos:
        return 0
    return sum(
        1 for r in records if r.output_tokens is not None and r.output_tokens < workload.output_tokens
    )


def max_send_lag_ms(records: Sequence[RequestRecord]) -> float | None:
    lags = [r.actual_send - r.intended_send for r in records if r.actual_send is not None]
    return max(lags) * 1000.0 if lags else None


def throughputs(
    completed: Sequence[RequestRecord], duration: float
) -> dict[str, int | float]:
    total_in = sum(r.prompt_tokens or 0 for r in completed)
    total_out = sum(r.output_tokens or 0 for r in completed)

    def per_second(amount: float) -> float:
        return amount / duration if duration > 0 else 0.0

    return {
        "total_input_tokens": total_in,
        "total_output_tokens": total_out,
        "request_throughput": per_second(len(completed)),
        "output_throughput": per_second(total_out),
        "total_token_throughput": per_second(total_in + total_out),
    }


def aggregate(records: Sequence[RequestRecord], workload: WorkloadSpec) -> Metrics:
    """The Metrics of one run (or one replica's share of it)."""
    completed = [r for r in records if r.ok]
    failed = len(records) - len(completed)
    window = window_of(records)
    duration = window.seconds if window is not None else 0.0
    short = short_responses(completed, workload)
    fields: dict[str, Any] = {
        "duration": duration,
        "completed": len(completed),
        "failed": failed,
        "short_responses": short,
        "valid": bool(records) and failed == 0 and short == 0,
        **throughputs(completed, duration),
        **summary_ms("ttft", ttfts(completed)),
        **summary_ms("tpot", tpots(completed)),
        **summary_ms("itl", itls(completed)),
        **summary_ms("e2el", e2els(completed)),
        "max_send_lag_ms": max_send_lag_ms(records),
    }
    return Metrics(**fields)
