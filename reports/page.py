"""What the report page receives: plain text and numbers, nothing that links back to a row.

reports/content.py fills these; reports/publishing.py stores them as a version's JSON and loads
them back, so a field added later needs a default (older snapshots lack it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Side:
    """One measured point as the customer sees it."""

    label: str
    config: str
    output_throughput: float
    output_throughput_text: str
    median_e2el_text: str
    cpu_engine: bool


@dataclass
class Headline:
    baseline: Side
    candidate: Side
    # None when the input/output specs differ: then spec_sentence says so instead.
    ratio_text: str | None
    improvement_text: str | None
    latency_sentence: str
    controlled: bool
    held_fixed: list[tuple[str, str]]
    differing: list[tuple[str, str, str]]
    not_recorded: list[str]
    spec_sentence: str | None = None
    # The ratio with its 95% interval, or "within noise", and what each run says of its own
    # noise and drift (judgement.stability_view); versions published before them show neither.
    ratio_interval: str | None = None
    stability: list[str] = field(default_factory=list)


@dataclass
class TableRow:
    """One comparison: what is compared, baseline -> result, what it shows, what differs."""

    comparison: str
    baseline: str
    result: str
    shows: str
    differs: str = ""


@dataclass
class QueueSide:
    title: str
    verdict: str
    sentence: str
    # Why the side has no queue chart (no engine samples stored); empty when it has one.
    # Versions published before this field read as having a chart, as they were drawn.
    no_chart: str = ""
    # The side's request timeline (judgement.request_timeline): which requests its lanes are,
    # and each phase's median. Empty when the point stored no requests, and in versions
    # published before the timeline existed, which draw none.
    timeline_drawn: str = ""
    timeline_phases: str = ""


@dataclass
class ReferenceRow:
    source: str
    url: str
    recorded_on: str
    no_longer_listed_on: str | None
    reference_value: str
    unit: str
    spec: str
    local_spec: str
    # The report point compared with the reference (one of the same spec), or None.
    local_label: str | None
    local_value: str | None
    ratio_text: str | None
    difference_text: str | None
    controlled: bool
    matching: list[str]
    differing: list[str]
    not_recorded: list[str]
    cpu_engine: bool
    # Set when no report point has the reference's spec: no ratio is given.
    no_match: str | None = None
    # The reference's published latency beside the same statistic of this result, when stated.
    latency_text: str | None = None
    # The date line and the figures line, each one translated sentence. Empty in versions
    # published before them, which print the pieces they stored.
    dated_text: str = ""
    figures_text: str = ""


@dataclass
class MethodRow:
    """One methodology fact; one value when both sides share it, else one per side."""

    label: str
    values: list[tuple[str, str]]


@dataclass
class AcceptanceRow:
    """One production acceptance criterion: whether this report measured it, and what it found
    or why not."""

    criterion: str
    measured: bool
    detail: str


@dataclass
class FleetRow:
    """One engine config of a capacity plan: what one replica sustains, the GPUs the demand
    needs, the hours a batch job takes and what it costs; each sentence beside it."""

    config: str
    capacity: str
    gpus: str
    hours: str | None
    cost: str | None
    sentences: list[str]


@dataclass
class Fleet:
    """What a stored capacity plan means for the customer's fleet, as it was answered."""

    headline: str
    notes: list[str]
    rows: list[FleetRow]
    batch: bool
    # The plan's check against the engine: what loading the config at its promised rate
    # measured; empty when it was not checked (or its run had no point yet).
    check: list[str] = field(default_factory=list)
    check_held: bool | None = None


@dataclass
class ReportContent:
    title: str
    language: str
    created_on: str
    cpu_engine: bool
    items: list[str]
    version: int | None = None
    headline: Headline | None = None
    table: list[TableRow] | None = None
    curve_sentence: str | None = None
    curve_selected: str | None = None
    # The operating point's figures with their 95% intervals (judgement.stability_view); versions
    # published before it show none.
    curve_interval: str | None = None
    queue: list[QueueSide] | None = None
    # The step from the before point to the after point with each side's cause (the run page's
    # story); empty where a side has no verdict, and in versions published before it.
    queue_story: str = ""
    scaling_sentence: str | None = None
    scaling_facts: list[tuple[str, str]] = field(default_factory=list)
    scaling_missing: str | None = None
    references: list[ReferenceRow] | None = None
    methodology: list[MethodRow] = field(default_factory=list)
    metric_definitions: list[tuple[str, str]] = field(default_factory=list)
    limits: list[str] = field(default_factory=list)
    # Which production acceptance criteria the report's two points measured; empty in versions
    # published before it existed.
    acceptance: list[AcceptanceRow] = field(default_factory=list)
    # Output parity of the two points: its sentence and notes, translated; empty when outputs
    # were not kept, and in versions published before it existed.
    parity: list[str] = field(default_factory=list)
    parity_flagged: bool = False
    caveats: list[tuple[str, str]] = field(default_factory=list)
    # What the tuning is worth in money and GPUs, with the price's date and any note beside it
    # (judgement.cost_view.worth_of's sentences, translated); empty in versions published before
    # it existed.
    worth: list[str] = field(default_factory=list)
    # What a capacity plan means for the customer's fleet; None when the report does not show
    # one, and in versions published before it existed.
    fleet: Fleet | None = None
    # Everything the charts draw (json_script): raw numbers and translated axis titles.
    figures: dict[str, Any] = field(default_factory=dict)
    # Ids of the rows the figures came from; kept on the published version, never rendered.
    sources: dict[str, Any] = field(default_factory=dict)
