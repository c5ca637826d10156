"""An adaptive sweep on the run page: the order it measured in and why, what it skipped, its
answer with the interval, and what it cost beside what the full grid would have."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pydantic

from analysis.noise import Interval
from analysis.search_interval import chosen_point_interval
from analysis.types import PointFigures
from benchmarks.launch.estimates import SECONDS_PER_HOUR, duration_label, gpu_hours_label, gpus_held
from benchmarks.models import Benchmark, Point
from judgement.operating_point import Shown
from runner.schema.plan import SweepPlan
from runner.schema.search_record import SearchCell, SearchRecord, SearchStep

PHASES = {
    "probe": "probe: the highest load first",
    "refine": "refine: a level inside the interval that holds the answer",
    "repeat": "repeat: a deciding point",
    "control": "end control: the answer point again on a fresh engine start",
}


@dataclass(frozen=True)
class StepRow:
    step: SearchStep
    point: Point

    @property
    def phase_label(self) -> str:
        return PHASES[self.step.phase]


@dataclass(frozen=True)
class SearchView:
    record: SearchRecord | None  # None: the stored record cannot be read (error says why)
    steps: list[StepRow] = field(default_factory=list)
    cells: list[SearchCell] = field(default_factory=list)
    interval: Interval | None = None
    answer_key: str | None = None
    spent: str = ""
    grid: str = ""
    spent_gpu_hours: str | None = None  # None: a CPU engine or an attached server holds no GPU
    grid_gpu_hours: str | None = None
    share_pct: float | None = None  # the search's engine time over the grid's, in percent
    started: int = 0
    cost_basis: str = ""  # how the search priced its choices; "" for plain halving (method /1)
    error: str | None = None


def search_view(
    benchmark: Benchmark, points: Sequence[Point], figs: Sequence[PointFigures], shown: Shown
) -> SearchView | None:
    """None for a grid run (no search record)."""
    if benchmark.search is None:
        return None
    try:
        record = SearchRecord.model_validate(benchmark.search)
        plan = SweepPlan.model_validate(benchmark.plan)
    except pydantic.ValidationError as exc:
        return SearchView(None, error=f"the stored search record cannot be read: {exc}")
    steps = sorted(
        (StepRow(SearchStep.model_validate(p.search), p) for p in points if p.search),
        key=lambda row: row.step.order,
    )
    gpus = gpus_held(plan)
    spent_s, grid_s = record.spent_s, record.grid_estimate_s
    return SearchView(
        record=record,
        steps=steps,
        cells=record.cells,
        interval=chosen_point_interval(record, figs, shown.key),
        answer_key=shown.key,
        spent=duration_label(spent_s),
        grid=duration_label(grid_s),
        spent_gpu_hours=gpu_hours_label(spent_s * gpus / SECONDS_PER_HOUR) if gpus else None,
        grid_gpu_hours=gpu_hours_label(grid_s * gpus / SECONDS_PER_HOUR) if gpus else None,
        share_pct=100 * spent_s / grid_s if grid_s > 0 else None,
        started=sum(1 for cell in record.cells if cell.engine_start_s is not None),
        cost_basis=cost_basis(record),
    )


def cost_basis(record: SearchRecord) -> str:
    """What the search's choices were priced by, e.g. 'engine start ~45 s (measured here),
    points by their measured wall time'."""
    if record.spec.method == "bracket-bisect-walk/1":
        return ""
    if record.start_measured_s is not None:
        start = f"engine start ~{duration_label(record.start_measured_s)} (measured here)"
    elif record.start_prior_s is not None:
        start = (f"engine start ~{duration_label(record.start_prior_s)} (from this node's last "
                 "starts)")
    else:
        start = "engine start not known (none measured on this node)"
    return f"{start}, points by their measured wall time"
