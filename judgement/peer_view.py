"""Another client's own figures on the run page: each imported point's headline figures under
the tool's names, and every figure it stated, as stored (Point.peer)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.models import Point
from runner.importer.peers import SOURCES
from runner.schema.result import IMPORT_CLIENTS, PeerFigures, PeerTool

# The figures each tool leads its own summary with, by the tool's names.
HEADLINES: dict[PeerTool, tuple[str, ...]] = {
    "aiperf": (
        "request_throughput.avg",
        "output_token_throughput.avg",
        "time_to_first_token.p50",
        "time_to_first_token.p99",
        "inter_token_latency.avg",
        "request_latency.p50",
        "request_latency.p99",
    ),
    "guidellm": (
        "requests_per_second.successful.mean",
        "output_tokens_per_second.successful.mean",
        "time_to_first_token_ms.successful.median",
        "time_to_first_token_ms.successful.percentiles.p99",
        "inter_token_latency_ms.successful.mean",
        "request_latency.successful.median",
        "request_latency.successful.percentiles.p99",
    ),
    "inference-perf": (
        "successes.throughput.requests_per_sec",
        "successes.throughput.output_tokens_per_sec",
        "successes.latency.time_to_first_token.median",
        "successes.latency.time_to_first_token.p99",
        "successes.latency.time_per_output_token.median",
        "successes.latency.request_latency.median",
        "successes.latency.request_latency.p99",
    ),
}


@dataclass(frozen=True)
class PeerRow:
    point: Point
    headline: list[float | None]
    figures: list[tuple[str, float, str]]  # every stated figure: name, value, unit


@dataclass(frozen=True)
class PeerSection:
    client: str
    version: str
    columns: tuple[str, ...]
    rows: list[PeerRow]


def peer_sections(points: Sequence[Point]) -> list[PeerSection]:
    """One section a tool, in the order the tools first appear among the points."""
    by_tool: dict[PeerTool, list[tuple[Point, PeerFigures]]] = {}
    for point in points:
        if point.peer:
            peer = PeerFigures.model_validate(point.peer)
            by_tool.setdefault(peer.tool, []).append((point, peer))
    sections = []
    for tool, pairs in by_tool.items():
        columns = HEADLINES[tool]
        versions = sorted({peer.version or "version not recorded" for _, peer in pairs})
        sections.append(
            PeerSection(
                client=IMPORT_CLIENTS[SOURCES[tool]],
                version=", ".join(versions),
                columns=columns,
                rows=[
                    PeerRow(
                        point=point,
                        headline=[peer.figures.get(name) for name in columns],
                        figures=[
                            (name, value, peer.units.get(name, ""))
                            for name, value in sorted(peer.figures.items())
                        ],
                    )
                    for point, peer in pairs
                ],
            )
        )
    return sections
