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

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from runner.schema.plan import WorkloadSpec
from runner.schema.records import CompactArray, Float64Array, Int32Array, RequestRecord
from runner.schema.result import Metrics, Window

PERCENTILES = (90, 95, 99)
STATISTICS = ("mean", "median", "std", *(f"p{p}" for p in PERCENTILES))
# Chunk-level figures (ITLs) pool one value per chunk: 8.4 million for 32,768 requests of 256
# chunks, 100 million for 100,000 of 1,000. Up to POOL_IN_MEMORY values are summarised in one
# array as numpy does; beyond it the values are made BLOCK_VALUES chunks at a time, again on
# each pass (summary_ms_blocks), so memory stays bounded whatever the point's size.
POOL_IN_MEMORY = 1 << 21
# 131,072 chunks (1 MiB of float64): each pass's temporaries (the joined times, their sort keys,
# the masks per rank) are a few copies of one block, so the block sets the working set
# (bench/request_memory.py; docs/performance.md, "Memory of large points").
BLOCK_VALUES = 1 << 17


def window_of(records: Sequence[RequestRecord]) -> Window | None:
    """The point's t0 (the benchmark's start) to the last request's end, failed ones included."""
    sent = any(r.actual_send is not None for r in records)
    ends = [r.completed_at for r in records if r.completed_at is not None]
    if not sent or not ends:
        return None
    return Window(start=0.0, end=max(ends))


def summary_ms(name: str, seconds: Sequence[float] | np.ndarray) -> dict[str, float | None]:
    """mean/median/std/p90/p95/p99 of a list of seconds, in ms, keyed like vllm bench."""
    keys = [f"{stat}_{name}_ms" for stat in STATISTICS]
    if len(seconds) == 0:
        return dict.fromkeys(keys)
    ms = np.asarray(seconds, dtype=float) * 1000.0
    values = [float(np.mean(ms)), float(np.median(ms)), float(np.std(ms))]  # std: population
    values += [float(np.percentile(ms, p)) for p in PERCENTILES]  # linear interpolation
    return dict(zip(keys, values, strict=True))


Blocks = Callable[[], Iterator[np.ndarray]]


def summary_ms_blocks(name: str, blocks: Blocks) -> dict[str, float | None]:
    """summary_ms of values that come in blocks of seconds; `blocks()` makes them afresh.

    A pool of up to POOL_IN_MEMORY values is joined and given to summary_ms: the figures are
    numpy's to the last bit. A larger pool is never held whole: the mean and std come from
    per-block sums (numpy's formulas, summed with math.fsum, so they agree with numpy to
    rounding), and the median and percentiles from the exact order statistics (_order_values)
    interpolated as numpy's linear method does, bit for bit.
    """
    count = sum(len(block) for block in blocks())
    if count <= POOL_IN_MEMORY:
        joined = [block for block in blocks() if len(block)]
        return summary_ms(name, np.concatenate(joined) if joined else [])
    mean = math.fsum(float(np.sum(b * 1000.0)) for b in blocks()) / count
    std = math.sqrt(
        math.fsum(float(np.sum((b * 1000.0 - mean) ** 2)) for b in blocks()) / count
    )
    ranks = {count // 2, (count - 1) // 2}
    spots = {p: _virtual_index(count, p) for p in PERCENTILES}
    for low, high, _ in spots.values():
        ranks |= {low, high}
    found = _order_values(lambda: (b * 1000.0 for b in blocks()), sorted(ranks))
    median = (found[(count - 1) // 2] + found[count // 2]) / 2.0  # np.median: mean of the middle
    values = [mean, median, std]
    values += [_lerp(found[low], found[high], gamma) for low, high, gamma in spots.values()]
    return dict(zip([f"{stat}_{name}_ms" for stat in STATISTICS], values, strict=True))


def _virtual_index(count: int, percentile: float) -> tuple[int, int, float]:
    """The two ranks np.percentile's linear method reads and its weight, as numpy computes them
    (numpy/lib/_function_base_impl.py: (n - 1) * q, q = p / 100)."""
    virtual = (count - 1) * (percentile / 100.0)
    if virtual >= count - 1:
        return count - 1, count - 1, 0.0
    low = math.floor(virtual)
    return low, low + 1, virtual - low


def _lerp(a: float, b: float, t: float) -> float:
    """numpy's _lerp, exact: from b downwards when the weight is half or more."""
    diff = b - a
    return b - diff * (1.0 - t) if t >= 0.5 else a + diff * t


# Order statistics by radix selection on the values' bits: a float64's bit pattern, with the sign
# bit flipped (all bits for a negative), orders as the float does. Each pass over the blocks
# either counts the next KEY_BITS bits of the values under a rank's known prefix or, once at most
# POOL_IN_MEMORY values share that prefix, gathers them to pick the rank with np.partition.
KEY_BITS = 16
_SIGN = np.uint64(1 << 63)


def _sort_keys(values: np.ndarray) -> np.ndarray:
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    return np.where(bits & _SIGN, ~bits, bits | _SIGN)


def _key_value(key: int) -> float:
    bits = key & ~(1 << 63) if key >> 63 else ~key & ((1 << 64) - 1)
    return float(np.array([bits], dtype=np.uint64).view(np.float64)[0])


def _order_values(blocks: Callable[[], Iterable[np.ndarray]], ranks: list[int]) -> dict[int, float]:
    """The values at these 0-based ranks of the sorted pool, exact, in bounded memory."""
    # Per rank: the bits known (from the top), their value, and how many values sort below them.
    search = {rank: (0, 0, 0) for rank in ranks}
    sizes = {(0, 0): sum(len(b) for b in blocks())}
    found: dict[int, float] = {}
    while search:
        for rank, (known, prefix, _) in list(search.items()):
            if known == 64:  # every value under this prefix is the same value
                found[rank] = _key_value(prefix)
                del search[rank]
        groups = {(known, prefix) for known, prefix, _ in search.values()}
        if not groups:
            break
        gather: dict[tuple[int, int], list[np.ndarray]] = {
            g: [] for g in groups if sizes[g] <= POOL_IN_MEMORY
        }
        counts = {g: np.zeros(1 << KEY_BITS, np.int64) for g in groups if g not in gather}
        for block in blocks():
            keys = _sort_keys(block)
            for known, prefix in groups:
                under = keys if known == 0 else keys[(keys >> np.uint64(64 - known)) == prefix]
                if (known, prefix) in gather:
                    gather[(known, prefix)].append(under)
                else:
                    digits = (under >> np.uint64(64 - known - KEY_BITS)) & np.uint64(0xFFFF)
                    counts[(known, prefix)] += np.bincount(digits, minlength=1 << KEY_BITS)
        for rank, (known, prefix, below) in list(search.items()):
            if (known, prefix) in gather:
                pool = np.concatenate(gather[(known, prefix)])
                found[rank] = _key_value(int(np.partition(pool, rank - below)[rank - below]))
                del search[rank]
                continue
            cumulative = np.cumsum(counts[(known, prefix)])
            digit = int(np.searchsorted(cumulative, rank - below, side="right"))
            below += int(cumulative[digit - 1]) if digit else 0
            group = (known + KEY_BITS, (prefix << KEY_BITS) | digit)
            sizes[group] = int(counts[(known, prefix)][digit])
            search[rank] = (*group, below)
    return found


def _chunk_blocks(
    records: Sequence[RequestRecord], with_tokens: bool
) -> Iterator[tuple[np.ndarray, np.ndarray | None, np.ndarray]]:
    """The records' chunk times (and token counts) joined, BLOCK_VALUES chunks at a time, with
    each chunk's position within its block's records (0, 1, ... per record)."""
    start = 0
    while start < len(records):
        end, values = start, 0
        while end < len(records) and (values == 0 or values < BLOCK_VALUES):
            values += len(records[end].chunk_times)
            end += 1
        group = records[start:end]
        start = end
        times: list[CompactArray]
        if with_tokens:
            # A response without usage has no token counts: its chunks count no tokens.
            pairs = [_paired(r) for r in group]
            times = [t for t, _ in pairs]
            tokens: np.ndarray | None = np.frombuffer(b"".join(k for _, k in pairs), np.int32)
        else:
            times = [Float64Array.coerce(r.chunk_times) for r in group]
            tokens = None
        lengths = np.fromiter(map(len, times), np.int64, len(times))
        joined = np.frombuffer(b"".join(times), np.float64)
        starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
        yield joined, tokens, np.arange(len(joined)) - starts


def _paired(record: RequestRecord) -> tuple[CompactArray, CompactArray]:
    """Times and token counts over the chunks both cover (zip's rule in the per-chunk loop)."""
    times = Float64Array.coerce(record.chunk_times)
    tokens = Int32Array.coerce(record.chunk_tokens)
    if len(tokens) == len(times):
        return times, tokens
    n = min(len(times), len(tokens))
    return Float64Array.coerce(times[:n]), Int32Array.coerce(tokens[:n])


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


def itl_blocks(records: Sequence[RequestRecord]) -> Blocks:
    """One gap per chunk after the first, as vLLM's client appends them (role chunk included)."""

    def blocks() -> Iterator[np.ndarray]:
        for times, _, position in _chunk_blocks(records, with_tokens=False):
            yield np.diff(times)[position[1:] > 0]  # not across two requests

    return blocks


def itls(records: Sequence[RequestRecord]) -> list[float]:
    return _joined(itl_blocks(records))


def _joined(blocks: Blocks) -> list[float]:
    return [value for block in blocks() for value in block.tolist()]


# -- Headroom's own per-request figures ------------------------------------------------------------


def token_itl_blocks(records: Sequence[RequestRecord]) -> Blocks:
    """Inter-token latencies: a chunk of k tokens after a gap g adds k values of g/k.

    Chunks with 0 tokens (the chat role chunk, or more chunks than the usage count) are
    skipped, so their time is part of the next token-bearing chunk's gap. chunk_tokens is
    empty when the response carried no usage block: then the request adds none.
    """

    def blocks() -> Iterator[np.ndarray]:
        for times, tokens, position in _chunk_blocks(records, with_tokens=True):
            assert tokens is not None
            bearing = tokens > 0
            t, k = times[bearing], tokens[bearing]
            # Request starts among the token-bearing chunks: a chunk's gap is to the previous
            # bearing chunk of its own request only.
            first = np.maximum.accumulate(np.where(position == 0, np.arange(len(position)), 0))
            owner = first[bearing]
            same = owner[1:] == owner[:-1]
            gaps, counts = np.diff(t)[same], k[1:][same]
            yield np.repeat(gaps / counts, counts)

    return blocks


def token_itls(records: Sequence[RequestRecord]) -> list[float]:
    return _joined(token_itl_blocks(records))


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
        **summary_ms_blocks("itl", itl_blocks(completed)),
        **summary_ms("e2el", e2els(completed)),
        "short_responses": short,
        "incomplete_responses": incomplete,
        "valid": bool(records) and failed == 0 and incomplete == 0 and short == 0,
        **summary_ms("sched_ttft", sched_ttfts(completed)),
        **summary_ms("sched_e2el", sched_e2els(completed)),
        **summary_ms_blocks("token_itl", token_itl_blocks(completed)),
        "max_send_lag_ms": max_send_lag_ms(records),
        **connect_ms(records),
    }
    return Metrics(**fields)
