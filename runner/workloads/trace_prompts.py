"""Prompts from a trace or length log, and the notes comparing what was sent with the source."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from runner.schema.plan import LoadSpec, WorkloadSpec
from runner.schema.records import RequestRecord
from runner.schema.result import LengthComparison, LengthHistogram, PointResult
from runner.workloads.prompts import (
    TOKEN_DTYPE,
    CountTokens,
    Prompt,
    PromptTokens,
    TokenSource,
    WorkloadError,
    draw_tokens,
)
from runner.workloads.traces import (
    HASH_BLOCK,
    HISTOGRAM_BINS,
    OWN_TOKENS,
    POOL_TEXT,
    SourceFile,
    TraceRow,
    load_source,
    trace_where,
)


def token_pool(tokens: TokenSource) -> np.ndarray:
    """The distinct token ids of POOL_TEXT, as the server tokenizes it."""
    pool = np.unique(np.asarray(tokens.token_ids(POOL_TEXT), dtype=TOKEN_DTYPE))
    if pool.size == 0:
        raise WorkloadError("the server's /tokenize gave no tokens for plain English text")
    return pool


class _Blocks:
    """Hash-id blocks built once per (hash id, size) and shared by every prompt using them."""

    def __init__(self, pool: np.ndarray, seed: int, block_tokens: int) -> None:
        self.pool, self.seed, self.block_tokens = pool, seed, block_tokens
        self.built: dict[tuple[int, int], bytes] = {}

    def prompt(self, row: TraceRow) -> PromptTokens:
        blocks: list[bytes] = []
        wanted = row.input_tokens
        for hash_id in row.hash_ids:
            if wanted <= 0:
                break
            size = min(self.block_tokens, wanted)
            key = (hash_id, size)
            if key not in self.built:
                entropy = (self.seed, HASH_BLOCK, hash_id, size)
                self.built[key] = draw_tokens(self.pool, entropy, size).tobytes()
            blocks.append(self.built[key])
            wanted -= size
        return PromptTokens(
            blocks=tuple(blocks), pool=self.pool,
            tail_entropy=(self.seed, OWN_TOKENS, row.line), tail_size=max(wanted, 0),
        )  # fmt: skip


def sample_lengths(rows: Sequence[TraceRow], n: int, seed: int) -> list[TraceRow]:
    """n rows that follow the log's distribution: a systematic sample of the rows sorted by
    (input, output), one random offset, sent in a seeded random order (module docstring)."""
    ordered = sorted(rows, key=lambda row: (row.input_tokens, row.output_tokens, row.line))
    rng = np.random.default_rng([seed & ((1 << 64) - 1), OWN_TOKENS])
    ranks = ((np.arange(n) + rng.random()) * len(ordered) / n).astype(int)
    picked = [ordered[min(rank, len(ordered) - 1)] for rank in ranks]
    return [picked[i] for i in rng.permutation(n)]


def source_prompts(
    workload: WorkloadSpec,
    n: int,
    count_tokens: CountTokens | None,
    data_dir: Path | None,
) -> list[Prompt]:
    """n token-id prompts with their own max_tokens: a trace's first n requests (with their
    arrival times after the first one's), or n draws from a length log."""
    if not isinstance(count_tokens, TokenSource):
        raise WorkloadError(
            f"a {workload.kind} workload sends token ids: it needs the server's tokenizer "
            "(its /tokenize)"
        )
    source = load_source(workload, data_dir)
    pool = token_pool(count_tokens)
    if workload.kind == "lengths":
        drawn = sample_lengths(source.rows, n, workload.seed)
        return [_prompt(i, row, pool, workload.seed, own_line=i) for i, row in enumerate(drawn)]
    if n > len(source.rows):
        raise WorkloadError(f"{n} requests, but {trace_where(source, workload)} holds "
                            f"{len(source.rows)}")
    blocks = _Blocks(pool, workload.seed, workload.trace_block_tokens)
    start = source.rows[0].arrival_s or 0.0
    return [
        Prompt(
            index=i, tokens=blocks.prompt(row), input_tokens=row.input_tokens,
            max_tokens=row.output_tokens, arrival_s=(row.arrival_s or 0.0) - start,
        )
        for i, row in enumerate(source.rows[:n])
    ]  # fmt: skip


def _prompt(index: int, row: TraceRow, pool: np.ndarray, seed: int, own_line: int) -> Prompt:
    """A prompt of the row's lengths made of tokens of its own (seeded by own_line: two draws
    of one log row are two requests, not a shared prefix)."""
    tokens = PromptTokens(
        pool=pool, tail_entropy=(seed, OWN_TOKENS, own_line), tail_size=row.input_tokens
    )
    return Prompt(
        index=index, tokens=tokens, input_tokens=row.input_tokens, max_tokens=row.output_tokens
    )


# ---------------------------------------------------------------------------------------------
# What the point says about its file
# ---------------------------------------------------------------------------------------------


def source_notes(source: SourceFile, point: PointResult) -> list[str]:
    """Sentences for the point: what part of the file it sent, and, for a trace load, how
    closely the client kept the trace's times."""
    workload, load = point.workload, point.load
    notes: list[str] = []
    if source.failed_rows:
        notes.append(f"{source.name}: {source.failed_rows} row(s) with 0 output tokens (failed "
                     "in the log) left out")
    if workload.kind == "lengths":
        eos = "ignore_eos" if workload.ignore_eos else "no ignore_eos: responses may stop early"
        notes.append(f"request lengths drawn from {source.name} ({len(source.rows)} requests), "
                     f"seed {workload.seed}, {eos}")
        return notes
    if len(source.rows) < source.rows_before_span:
        notes.append(f"trace cut to its first {workload.trace_span_s:g} s: {len(source.rows)} of "
                     f"{source.rows_before_span} requests ({source.span_s:.1f} s in all)")
    if load.num_requests < len(source.rows):
        notes.append(f"trace truncated to its first {load.num_requests} of {len(source.rows)} "
                     "requests (the load's request count)")
    schedule = point.client.schedule
    if load.shape == "trace" and schedule is not None:
        notes.append(_schedule_note(load, schedule.scheduled_rate, schedule.achieved_rate,
                                    schedule.scheduled_span_s, schedule.p99_send_lag_ms))
    return notes


def _schedule_note(
    load: LoadSpec,
    scheduled: float | None,
    achieved: float | None,
    span_s: float,
    p99_lag_ms: float | None,
) -> str:
    def rate(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f} requests/s"

    lag = "-" if p99_lag_ms is None else f"{p99_lag_ms:.1f} ms"
    return (f"trace replayed at speed {load.speed:g}: scheduled {rate(scheduled)} over "
            f"{span_s:.1f} s, achieved {rate(achieved)}, send lag p99 {lag}")


def _histogram_edges(values: np.ndarray) -> np.ndarray:
    """Whole-number edges covering every value, at most HISTOGRAM_BINS bins of one width."""
    low, high = int(values.min()), int(values.max())
    width = max(1, math.ceil((high + 1 - low) / HISTOGRAM_BINS))
    bins = math.ceil((high + 1 - low) / width)
    return low + width * np.arange(bins + 1)


def length_histogram(source: Sequence[int], sent: Sequence[int]) -> LengthHistogram:
    """Both sets of counts on one set of edges."""
    src, out = np.asarray(source, dtype=np.int64), np.asarray(sent, dtype=np.int64)
    both = np.concatenate([src, out])
    edges = _histogram_edges(both) if both.size else np.array([0, 1])
    return LengthHistogram(
        edges=[float(e) for e in edges],
        source=[int(c) for c in np.histogram(src, bins=edges)[0]],
        sent=[int(c) for c in np.histogram(out, bins=edges)[0]],
    )


def length_comparison(
    source: SourceFile, records: Sequence[RequestRecord], workload: WorkloadSpec
) -> LengthComparison:
    """The file's lengths beside the point's first replica's requests (every replica of a
    node sends the same ones): input as the server counted it, output as the max_tokens sent."""
    first = min((r.replica for r in records), default=0)
    mine = [r for r in records if r.replica == first and r.prompt_tokens is not None]
    return LengthComparison(
        file=source.name,
        source_requests=len(source.rows),
        sent_requests=len(mine),
        input_tokens=length_histogram(
            [row.input_tokens for row in source.rows], [r.prompt_tokens or 0 for r in mine]
        ),
        output_tokens=length_histogram(
            [row.output_tokens for row in source.rows],
            [r.max_tokens or workload.output_tokens for r in mine],
        ),
    )


def annotate_point(point: PointResult, source: SourceFile | None) -> None:
    """Add the file's notes and the length comparison to a point of a trace or lengths plan."""
    if source is None:
        return
    point.notes.extend(source_notes(source, point))
    point.lengths = length_comparison(source, point.requests, point.workload)
