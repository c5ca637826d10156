"""Figures per LoRA adapter for the points of a run whose workload spread its requests over
adapters (WorkloadSpec.lora_split), read from their stored requests (analysis.adapter_figures)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from analysis.adapter_figures import AdapterFigures, AdapterRequest, adapter_figures
from benchmarks.models import Point
from benchmarks.storage import columnar
from benchmarks.storage.points import stored_requests
from runner.schema.records import RequestRecord

# What adapter_rows reads of each stored request.
_FIELDS = ("adapter", "error", "status", "output_tokens", "ttft", "e2el")


@dataclass(frozen=True)
class AdapterRow:
    """One adapter of a point: the weight the split gave it, and its figures."""

    weight: float | None
    figures: AdapterFigures


@dataclass(frozen=True)
class AdapterSection:
    """One point's adapters, in name order; no rows when its requests are not stored."""

    point: Point
    rows: list[AdapterRow]


def adapter_rows(point: Point) -> list[AdapterFigures]:
    """The point's figures per adapter; empty when its requests are not stored or named none."""
    blob = stored_requests(point)
    if blob is None:
        return []
    # A few columns, never the records: their chunk times are most of a point's bytes.
    columns = columnar.request_columns(blob, _FIELDS)
    adapter, error, status, tokens, ttft, e2el = (columns.values[f] for f in _FIELDS)
    chunks = columns.lengths["chunk_times"].tolist()
    requests = [
        AdapterRequest(adapter=adapter[at],
                       completed=RequestRecord.completed(error[at], status[at], chunks[at]),
                       output_tokens=tokens[at], ttft_s=ttft[at], e2el_s=e2el[at])
        for at in range(len(adapter))
    ]
    return adapter_figures(requests, point.duration)


def adapter_sections(points: Sequence[Point]) -> list[AdapterSection]:
    """A section for each point whose workload had a LoRA split, in the points' order; none
    for a run without one."""
    sections = []
    for point in points:
        split = (point.workload or {}).get("lora_split") or []
        if not split:
            continue
        weights = {share["name"]: float(share["weight"]) for share in split}
        rows = [AdapterRow(weight=weights.get(f.name), figures=f) for f in adapter_rows(point)]
        sections.append(AdapterSection(point=point, rows=rows))
    return sections
