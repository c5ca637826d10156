"""Checks of a stored point's aggregates against each other.

A point's headline figures are derived from a few counts (docs/vllm.md, "Figures"): output
throughput is completed output tokens over the window, completed plus failed is every request
sent. A figure that disagrees with its own counts was computed wrongly, edited, or imported from
a file that mixed two runs; either way no choice may rest on it. Each check here names the
figures it compared, with their numbers, so the caveat on the point says what is wrong.

A figure the point does not carry (None) is not a failure: it is simply not checked.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from runner.schema.result import Metrics, PointResult

# How far a stored throughput may sit from its count over the window, relative to the
# recomputed figure. vLLM and Headroom both divide the same two numbers, so an honest point
# agrees to float rounding; 0.5% leaves room for a file that rounded its figures.
THROUGHPUT_TOLERANCE = 0.005
# Decimal figures are not exact in binary (2,572.8 - 2,560 is 12.8000000000002, not 12.8): a
# figure exactly on the boundary passes, as the tolerance says, when this much is added to it.
BOUNDARY_ROUNDING = 1e-9

# Slack for a latency against its window. Both are differences of one clock's readings and no
# request is sent before the window starts, so the bound holds exactly up to float rounding in
# means and interpolated percentiles (~1e-13 ms for a window of hours); a microsecond is far
# above that and far below any real latency.
WINDOW_ROUNDING_MS = 0.001

# The latency statistics a burst's window bounds. A burst's requests are all due at the
# window's start, and vLLM's TTFT and E2EL count from the actual send, which
# is no earlier; the last chunk comes no later than the last completion, the window's end. So
# every request's TTFT, E2EL and their schedule-relative twins lie within the window, and so
# does any mean or percentile of them. TPOT and ITL are bounded too, but only loosely (a
# fraction of E2EL), so checking them adds nothing; a standard deviation is not a latency.
BOUNDED_LATENCIES = ("ttft", "e2el", "sched_ttft", "sched_e2el")
BOUNDED_STATISTICS = ("mean", "median", "p90", "p95", "p99")


@dataclass(frozen=True, kw_only=True)
class FailedCheck:
    """One check a point's aggregates failed: a stable code and a sentence with the numbers."""

    code: str
    sentence: str


def failed_checks(p: PointResult) -> list[FailedCheck]:
    """Every check of the point's stored aggregates that fails; empty when they agree."""
    return [
        *_duration(p.metrics),
        *_throughputs(p.metrics),
        *_request_counts(p),
        *_burst_latencies(p),
    ]


def _duration(m: Metrics) -> Iterator[FailedCheck]:
    if m.duration <= 0 and (m.completed > 0 or m.total_output_tokens > 0):
        yield FailedCheck(
            code="empty-window",
            sentence=(
                f"{m.completed:,} completed requests and {m.total_output_tokens:,} output tokens "
                f"in a window of {m.duration:g} s: a point that completed anything took time."
            ),
        )


def _throughputs(m: Metrics) -> Iterator[FailedCheck]:
    if m.duration <= 0:
        return  # no rate to recompute; _duration names the window when it matters
    rates = (
        ("output_throughput", m.output_throughput, m.total_output_tokens, "output tokens"),
        ("request_throughput", m.request_throughput, m.completed, "completed requests"),
        (
            "total_token_throughput",
            m.total_token_throughput,
            m.total_input_tokens + m.total_output_tokens,
            "input + output tokens",
        ),
    )
    for name, stored, count, what in rates:
        expected = count / m.duration
        if abs(stored - expected) <= THROUGHPUT_TOLERANCE * expected * (1 + BOUNDARY_ROUNDING):
            continue
        off = f" ({(stored - expected) / expected:+.1%})" if expected > 0 else ""
        yield FailedCheck(
            code=name.replace("_", "-"),
            sentence=(
                f"{name} is {stored:,.2f}/s but {count:,} {what} over the {m.duration:g} s "
                f"window make {expected:,.2f}/s{off}; they must agree within "
                f"{THROUGHPUT_TOLERANCE:.1%}."
            ),
        )


def _request_counts(p: PointResult) -> Iterator[FailedCheck]:
    """Completed + failed against the requests sent: num_requests to each replica of a node."""
    # runner.sweep sends load.num_requests to every replica; the node's metrics pool them all.
    sent = p.load.num_requests * p.replicas
    m = p.metrics
    if m.completed + m.failed != sent:
        each = ""
        if p.replicas > 1:
            each = f" ({p.load.num_requests} to each of {p.replicas} replicas)"
        yield FailedCheck(
            code="request-count",
            sentence=(
                f"{m.completed} completed + {m.failed} failed = {m.completed + m.failed} "
                f"requests, but the load sent {sent}{each}."
            ),
        )
    for replica in p.per_replica:
        r = replica.metrics
        if r is not None and r.completed + r.failed != p.load.num_requests:
            yield FailedCheck(
                code="request-count",
                sentence=(
                    f"Replica {replica.replica}: {r.completed} completed + {r.failed} failed = "
                    f"{r.completed + r.failed} requests, but it was sent {p.load.num_requests}."
                ),
            )


def _burst_latencies(p: PointResult) -> Iterator[FailedCheck]:
    m = p.metrics
    if p.load.shape != "burst" or m.duration <= 0:
        return  # an empty window is named by _duration; every latency would exceed it
    window_ms = m.duration * 1000.0
    for name, value in _bounded_statistics(m):
        if value > window_ms + WINDOW_ROUNDING_MS:
            yield FailedCheck(
                code="latency-beyond-window",
                sentence=(
                    f"{name} is {value:,.1f} ms, longer than the burst's whole "
                    f"{m.duration:g} s window: every request of a burst was sent and "
                    "answered inside it."
                ),
            )


def _bounded_statistics(m: Metrics) -> Iterator[tuple[str, float]]:
    """(name, ms) of each bounded statistic the point carries, the file's extra percentiles too."""
    for latency in BOUNDED_LATENCIES:
        for statistic in BOUNDED_STATISTICS:
            name = f"{statistic}_{latency}_ms"
            value = getattr(m, name)
            if value is not None:
                yield name, value
    for name, value in sorted(m.other_percentiles.items()):
        # An imported file's finer percentiles, e.g. p99.9_e2el_ms.
        if name.endswith(("_ttft_ms", "_e2el_ms")):
            yield name, value
