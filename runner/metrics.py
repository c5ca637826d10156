"""Client-side aggregates: vLLM's figures under vLLM's names, Headroom's own under their own.

vLLM's (`calculate_metrics` in vLLM 0.32's `vllm/benchmarks/serve.py`, fed by the request
functions of `vllm/benchmarks/lib/endpoint_request_func.py`):
- Completed: HTTP 200 and at least one chunk with choices (`RequestRecord.ok`); failed: the rest.
- Duration: the benchmark's start (the point's t0, when the schedule starts) to the last request's
  end; failed requests count in the window, not in the tokens.
- TTFT, E2EL: first and last chunk - the actual send. TPOT = (E2EL - TTFT) / (output_tokens - 1)
  when output_tokens > 1. ITL: every gap between consecutive chunks, one per chunk, pooled.
- Goodput: completed requests meeting every SLO (TTFT, TPOT with 0 for one-token requests,
  E2EL) per duration second.
- Statistics: mean, median, population std, percentiles with numpy's linear interpolation; ms.

Headroom's own (docs/result-schema.md):
- sched_ttft / sched_e2el: first token-bearing chunk / last chunk - the intended send time, so
  client lag and client-side queueing cannot hide (coordinated omission).
- token_itl: a chunk carrying k tokens after a gap g counts as k gaps of g/k (what a user sees
  per token with --stream-interval k).
- incomplete_responses: completed as vLLM counts them, but no [DONE], no usage or an error event.
- valid: every request completed strictly, none failed, and with ignore_eos none came back short.

One known difference: a completed response without a usage block. vLLM's client re-tokenizes its
text with its own tokenizer; Headroom never re-tokenizes (the count would depend on a tokenizer the
client may not have and could disagree with the server), so such a response adds no output tokens
and is counted in incomplete_responses.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any

import numpy as np

from runner.schema import Metrics, RequestRecord, Window, WorkloadSpec

PERCENTILES = (90, 95, 99)
STATISTICS = ("mean", "median", "std", *(f"p{p}" for p in PERCENTILES))


def window_of(records: Sequence[RequestRecord]) -> Window | None:
    """The point's t0 (the benchmark's start) to the last request's end, failed ones included."""
    sent = any(r.actual_send is not None for r in records)
    ends = [r.completed_at for r in records if r.completed_at is not None]
    if not sent or not ends:
        return None
    return Window(start=0.0, end=max(ends))


def summary_ms(name: str, seconds: Sequence[float]) -> dict[str, float | None]:
    """mean/median/std/p90/p95/p99 of a list of seconds, in ms, keyed like vllm bench."""
    keys = [f"{stat}_{name}_ms" for stat in STATISTICS]
    if not seconds:
        return dict.fromkeys(keys)
    ms = np.asarray(seconds, dtype=float) * 1000.0
    values = [float(np.mean(ms)), float(np.median(ms)), float(np.std(ms))]  # std: population
    values += [float(np.percentile(ms, p)) for p in PERCENTILES]  # linear interpolation
    return dict(zip(keys, values, strict=True))


# -- vLLM's per-request figures ------------------------------------------------------------------


def ttfts(records: Sequence[RequestRecord]) -> list[float]:
    return [r.ttft for r in records if r.ttft is not None]


def e2els(records: Sequence[RequestRecord]) -> list[float]:
    return [r.e2el for r in records if r.e2el is not None]


def tpot_of(record: RequestRecord) -> float | None:
    """(E2EL - TTFT) / (output_tokens - 1); None when one token or fewer (no 'per token')."""
    if record.output_tokens is None or record.output_tokens <= 1:
        return None
    if record.e2el is None or record.ttft is None:
        return None
    return (record.e2el - record.ttft) / (record.output_tokens - 1)


def tpots(records: Sequence[RequestRecord]) -> list[float]:
    return [t for r in records if (t := tpot_of(r)) is not None]


def itls(records: Sequence[RequestRecord]) -> list[float]:
    """One gap per chunk after the first, as vLLM's client appends them (role chunk included)."""
    out: list[float] = []
    for r in records:
        times = r.chunk_times
        out.extend(b - a for a, b in pairwise(times))
    return out


# -- Headroom's own per-request figures ------------------------------------------------------------


def token_itls(records: Sequence[RequestRecord]) -> list[float]:
    """Inter-token latencies: a chunk of k tokens after a gap g adds k values of g/k.

    Chunks with 0 tokens (the chat role chunk, or more chunks than the usage count) are
    skipped, so their time is part of the next token-bearing chunk's gap.
    """
    out: list[float] = []
    for r in records:
        previous: float | None = None
        # chunk_tokens is empty when the response carried no usage block: then no token ITLs.
        for t, k in zip(r.chunk_times, r.chunk_tokens, strict=False):
            if k <= 0:
                continue
            if previous is not None:
                out.extend([(t - previous) / k] * k)
            previous = t
    return out


def first_token_at(record: RequestRecord) -> float | None:
    """When the first chunk that carried a token arrived (the role chunk carries none)."""
    if not record.chunk_tokens:
        return record.chunk_times[0] if record.chunk_times else None
    for t, k in zip(record.chunk_times, record.chunk_tokens, strict=True):
        if k > 0:
            return t
    return None


def sched_ttfts(records: Sequence[RequestRecord]) -> list[float]:
    return [t - r.intended_send for r in records if (t := first_token_at(r)) is not None]


def sched_e2els(records: Sequence[RequestRecord]) -> list[float]:
    return [r.chunk_times[-1] - r.intended_send for r in records if r.chunk_times]


def short_responses(records: Sequence[RequestRecord], workload: WorkloadSpec) -> int:
    """With ignore_eos every completion must reach its max_tokens (the request's own, else the
    workload's); fewer means the run is invalid."""
    if not workload.ignore_eos:
        return 0
    return sum(
        1
        for r in records
        if r.output_tokens is not None
        and r.output_tokens < (r.max_tokens or workload.output_tokens)
    )


def max_send_lag_ms(records: Sequence[RequestRecord]) -> float | None:
    lags = [r.actual_send - r.intended_send for r in records if r.actual_send is not None]
    return max(lags) * 1000.0 if lags else None


def connect_ms(records: Sequence[RequestRecord]) -> dict[str, float | None]:
    seconds = np.asarray([r.connect_s for r in records if r.connect_s is not None], dtype=float)
    if not seconds.size:
        return {"mean_connect_ms": None, "p99_connect_ms": None, "max_connect_ms": None}
    ms = seconds * 1000.0
    return {
        "mean_connect_ms": float(np.mean(ms)),
        "p99_connect_ms": float(np.percentile(ms, 99)),
        "max_connect_ms": float(np.max(ms)),
    }


# -- Run figures -------------------------------------------------------------------------------


def throughputs(completed: Sequence[RequestRecord], duration: float) -> dict[str, int | float]:
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


def meets_slo(record: RequestRecord, name: str, slo_ms: float) -> bool:
    """vLLM's rule for one completed request: the figure is at most the SLO (TPOT 0 if 1 token)."""
    if name == "ttft":
        value = record.ttft
    elif name == "e2el":
        value = record.e2el
    else:
        value = tpot_of(record) or 0.0
    return value is not None and value <= slo_ms / 1000.0


def goodput(
    records: Sequence[RequestRecord],
    completed: Sequence[RequestRecord],
    duration: float,
    slos: dict[str, float],
) -> dict[str, Any]:
    """request_goodput and the share of all requests meeting each SLO ("all": every one)."""
    if not slos:
        return {"request_goodput": None, "goodput_slos": {}, "slo_attainment": {}}
    meeting = {name: [meets_slo(r, name, ms) for r in completed] for name, ms in slos.items()}
    good = sum(all(flags) for flags in zip(*meeting.values(), strict=True))
    total = len(records)
    attainment = {name: sum(flags) / total if total else 0.0 for name, flags in meeting.items()}
    attainment["all"] = good / total if total else 0.0
    return {
        "request_goodput": good / duration if duration > 0 else 0.0,
        "goodput_slos": dict(slos),
        "slo_attainment": attainment,
    }


def aggregate(
    records: Sequence[RequestRecord],
    workload: WorkloadSpec,
    slos: dict[str, float] | None = None,
) -> Metrics:
    """The Metrics of one run (or one replica's share of it); slos in ms as `--goodput`."""
    completed = [r for r in records if r.ok]
    failed = len(records) - len(completed)
    window = window_of(records)
    duration = window.seconds if window is not None else 0.0
    short = short_responses(completed, workload)
    incomplete = sum(1 for r in completed if not r.strictly_ok)
    fields: dict[str, Any] = {
        "duration": duration,
        "completed": len(completed),
        "failed": failed,
        **throughputs(completed, duration),
        **goodput(records, completed, duration, slos or {}),
        **summary_ms("ttft", ttfts(completed)),
        **summary_ms("tpot", tpots(completed)),
        **summary_ms("itl", itls(completed)),
        **summary_ms("e2el", e2els(completed)),
        "short_responses": short,
        "incomplete_responses": incomplete,
        "valid": bool(records) and failed == 0 and incomplete == 0 and short == 0,
        **summary_ms("sched_ttft", sched_ttfts(completed)),
        **summary_ms("sched_e2el", sched_e2els(completed)),
        **summary_ms("token_itl", token_itls(completed)),
        "max_send_lag_ms": max_send_lag_ms(records),
        **connect_ms(records),
    }
    return Metrics(**fields)
