"""Which caveats a point gets, and the sentence each one says.

A caveat marks what limits a point's meaning (a CPU engine, a saturated client, aggregates that
disagree); it is stored with the point and shown next to its numbers. Pure:
benchmarks.storage.points stores what these rules return.
"""

from __future__ import annotations

from analysis.checks import failed_checks
from analysis.convert import quality_caveat, queue_gap_fraction
from analysis.verdicts import sparse_queue_samples
from runner.schema.result import DISTURBED_CORES, IMPORT_CLIENTS, IMPORTED_SOURCES, PointResult

# What a caveat is about (benchmarks.models Caveat.Kind takes its values from these).
SCOPE = "scope"
METHOD = "method"
LIMITATION = "limitation"

# The caveat code beside a quality score that says nothing (analysis.convert
# quality_caveat); the run page shows it next to the score.
QUALITY_CAVEAT = "quality-cpu-engine"

# The caveat of a point that other processes disturbed (runner.schema HostCpu.disturbed).
DISTURBED_CAVEAT = "disturbed-host"

# (code, kind, text) of one caveat.
AutomaticCaveat = tuple[str, str, str]


# Said of a point whose GPU telemetry came with an AIPerf import.
AIPERF_TELEMETRY = (
    " Its GPU figures come from AIPerf's scrape of a dcgm-exporter, not Headroom's own "
    "sampling: they are the GPUs that exporter reported, which the file does not tie to the "
    "engine that served."
)


# Said of a point in Headroom's own format that arrived through an import: the file could have
# been written by anyone, and its source field says "headroom" all the same.
HEADROOM_IMPORT = "headroom-import"
HEADROOM_IMPORT_TEXT = (
    "Imported from a Headroom result file, not measured on this dashboard: its figures and "
    "provenance (hardware, runtime, checkpoint) are as the file states them."
)


def automatic_caveats(result: PointResult, *, imported: bool) -> list[AutomaticCaveat]:
    """(code, kind, text) for what limits this point's meaning; shown next to its numbers.
    imported: the point arrived through an import (benchmarks.storage.imports), whatever its
    source."""
    caveats: list[AutomaticCaveat] = []
    style = result.provenance.engine.launch_style if result.provenance else None
    if style == "cpu":
        caveats.append(
            (
                "cpu-engine",
                LIMITATION,
                "CPU engine stands in for a GPU: the shape of the curves is real, "
                "the absolute numbers say nothing about GPU throughput.",
            )
        )
    quality = quality_caveat(result)
    if quality is not None:
        caveats.append((QUALITY_CAVEAT, LIMITATION, quality))
    if result.client.saturated:
        reasons = "; ".join(result.client.reasons) or "client CPU or event-loop lag"
        caveats.append(
            (
                "client-saturated",
                METHOD,
                f"Client saturated ({reasons}): per-token timings may be distorted.",
            )
        )
    nap = result.client.idle_nap_us
    if nap > 0:
        caveats.append(
            (
                "client-nap",
                METHOD,
                f"The client napped {nap:g} µs on idle event-loop passes instead of waiting for "
                "the server's next bytes (it spares a co-located API server the wake-ups): every "
                f"arrival stamp, and so TTFT, ITL and TPOT, can be late by up to {nap:g} µs plus "
                "about 50 µs of timer slack.",
            )
        )
    disturbed = disturbed_caveat(result)
    if disturbed is not None:
        caveats.append(disturbed)
    gap = queue_gap_fraction(result)  # None for imports: they carry no engine samples
    if sparse_queue_samples(gap):
        consequence = (
            "the running and waiting figures rest on too few samples to show the queue"
            if result.queue.samples
            else "the point has no running and waiting figures"
        )
        caveats.append(
            (
                "sparse-queue-samples",
                METHOD,
                f"The engine's /metrics answered {result.queue.samples} time(s) in this "
                f"{result.metrics.duration:.1f} s point and {gap:.0%} of it passed without a "
                f"sample: {consequence}. Longer points (more requests or output tokens) give "
                "firmer evidence.",
            )
        )
    metrics = result.metrics
    if not metrics.valid:
        caveats.append(
            (
                "invalid-point",
                LIMITATION,
                f"Not a valid run: {metrics.failed} failed and {metrics.short_responses} short "
                f"responses of {metrics.completed + metrics.failed} requests.",
            )
        )
    failed = failed_checks(result)
    if failed:
        caveats.append(
            (
                "inconsistent-aggregates",
                METHOD,
                "The stored aggregates disagree, so this point is left out of capacity and "
                "operating-point choices: " + " ".join(check.sentence for check in failed),
            )
        )
    if result.source == "vllm-bench-import":
        caveats.append(
            (
                "vllm-bench-import",
                SCOPE,
                "Imported from vllm bench serve: no engine queue samples, provenance only as "
                "far as the file records it.",
            )
        )
    elif result.source in IMPORTED_SOURCES:
        client = IMPORT_CLIENTS[result.source]
        caveats.append(
            (
                "peer-import",
                SCOPE,
                f"Imported from {client}: no engine queue samples, provenance only as far as "
                f"the file records it; vLLM-named figures are Headroom's, from {client}'s "
                f"per-request records, and {client}'s own figures keep its names."
                + (AIPERF_TELEMETRY if result.telemetry.source == "aiperf-dcgm" else ""),
            )
        )
    elif imported:
        caveats.append((HEADROOM_IMPORT, SCOPE, HEADROOM_IMPORT_TEXT))
    return caveats


def disturbed_caveat(result: PointResult) -> AutomaticCaveat | None:
    """A point other processes disturbed (HostCpu.disturbed), with the figure."""
    host = result.host
    if host is None or not host.disturbed:
        return None
    taken, engine = host.taken_cores, host.engine_cores
    assert taken is not None and engine is not None  # a disturbed host measured both
    redrawn = (f" It was measured {len(host.set_aside) + 1} times and every draw was disturbed; "
               "this is the least disturbed one." if host.set_aside else "")
    return (
        DISTURBED_CAVEAT,
        METHOD,
        f"Disturbed: other processes took {taken:.2f} of a core on average during this point "
        f"(above {DISTURBED_CORES:g}), while the engine used {engine:.2f} of the host's "
        f"{host.cpus} cores. Its throughput and latency say as much about that neighbour as "
        "about the engine, so the knee, the saturation tag and the sweep's story do not read "
        f"its change from a neighbouring point as the engine's.{redrawn}",
    )

