"""A report's dated references, each against the report point of its own input/output spec
(judgement.report_view calls it): no ratio or percentage is given across specs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from judgement.comparison_view import compare_with_reference
from judgement.public_provenance import is_cpu_engine
from judgement.report_phrases import (
    Figure,
    Phrase,
    Words,
    _,
    change,
    factor_phrase,
    guarded,
    is_controlled,
    joined,
    labels,
    number,
    seconds,
    side_title,
    spec_text,
    workload_row,
)
from judgement.rows import ExternalReference, Point
from judgement.vocabulary import UNIT_OUTPUT_TPS_PER_GPU


@dataclass(frozen=True, kw_only=True)
class ReferenceView:
    """A dated reference against the report point of its own spec, or why none is given."""

    source: str
    url: str
    recorded_on: Figure
    no_longer_listed_on: Figure | None
    reference_value: Figure
    unit: Phrase
    spec: str
    local_spec: Words
    local_label: Words | None
    local_value: Figure | None
    ratio: Figure | None
    difference: Figure | None
    controlled: bool
    matching: list[Words]
    differing: list[Words]
    not_recorded: list[Words]
    cpu_engine: bool
    no_match: Phrase | None
    latency: Words | None
    # The two lines the report prints, each one whole sentence for the translator.
    dated: Phrase
    figures: Phrase


def _dated(row: ExternalReference) -> Phrase:
    if row.no_longer_listed_on:
        return _("Recorded on %(recorded)s; no longer listed since %(gone)s.",
                 recorded=Figure(row.recorded_on, "day"),
                 gone=Figure(row.no_longer_listed_on, "day"))
    return _("Recorded on %(recorded)s.", recorded=Figure(row.recorded_on, "day"))


def _compared_at_same_spec(points: list[tuple[Phrase, Point]], row: ExternalReference
                           ) -> tuple[tuple[Phrase, Point] | None, Any, bool]:
    """(label and point, comparison) of the first report point measured at the reference's
    spec, or (None, None); the flag says whether the reference could be compared at all."""
    comparable = False
    for label, point in points:
        result, _error = compare_with_reference(point, row)
        if result is None:
            continue
        comparable = True
        spec = workload_row(result)
        if spec is not None and spec.status == "match" and guarded(result, "ratio") is not None:
            return (label, point), result, True
    return None, None, comparable


def _reference_latency(result: Any) -> Words | None:
    """'Median request latency (E2EL): reference 9.0 s, this result 2.5 s (-72.2%)'; the
    statistic is named, and a mean is only ever set beside a mean."""
    reference_ms = getattr(result, "reference_latency_ms", None)
    local_ms = getattr(result, "local_latency_ms", None)
    statistic = getattr(result, "latency_statistic", None)
    if reference_ms is None or statistic not in ("median", "mean"):
        return None
    label = (_("Median request latency (E2EL)") if statistic == "median"
             else _("Mean request latency (E2EL)"))
    difference = guarded(result, "latency_difference_pct")
    values: dict[str, Words] = {"label": label, "reference": seconds(reference_ms),
                                "local": seconds(local_ms)}
    if difference is None:
        return Phrase(REFERENCE_LATENCY, values)
    return Phrase(REFERENCE_LATENCY_CHANGE, {**values, "change": change(difference)})


REFERENCE_LATENCY = _("%(label)s: reference %(reference)s, this result %(local)s").msgid
REFERENCE_LATENCY_CHANGE = _(
    "%(label)s: reference %(reference)s, this result %(local)s (%(change)s)").msgid


def reference_rows(references: Sequence[ExternalReference], points: list[tuple[Phrase, Point]],
                   sources: dict[str, Any]) -> list[ReferenceView]:
    """Each reference against the report point of the same input/output spec (the "after"
    point first); when none has it, the row says so and gives no ratio."""
    rows = []
    compared: dict[str, int | None] = {}
    specs: list[Words] = []
    for _label, point in points:
        if (text := spec_text(point)) not in specs:
            specs.append(text)
    local_specs = joined(specs, ", ")
    for row in references:
        chosen, result, comparable = _compared_at_same_spec(points, row)
        if not comparable:
            continue  # the reference itself cannot be compared (its unit): nothing to show
        compared[str(row.pk)] = chosen[1].pk if chosen else None
        unit = (_("output tokens/s per GPU") if row.unit == UNIT_OUTPUT_TPS_PER_GPU
                else _("output tokens/s"))
        spec = row.workload_spec or "-"
        common: dict[str, Any] = {
            "source": row.source, "url": row.url, "recorded_on": Figure(row.recorded_on, "day"),
            "no_longer_listed_on": Figure(row.no_longer_listed_on, "day")
            if row.no_longer_listed_on else None,
            "reference_value": number(row.value), "unit": unit, "spec": spec,
            "local_spec": local_specs, "dated": _dated(row),
        }
        if result is None or chosen is None:
            rows.append(ReferenceView(
                **common, local_label=None, local_value=None, ratio=None,
                difference=None, controlled=False, matching=[], differing=[],
                not_recorded=[], cpu_engine=False, latency=None,
                figures=_("Reference: %(value)s %(unit)s (%(spec)s)",
                          value=common["reference_value"], unit=unit, spec=spec),
                no_match=_("No point in this report was measured at the reference's "
                           "input/output spec (%(reference)s; this report: %(local)s), so no "
                           "ratio is given.", reference=spec, local=local_specs),
            ))
            continue
        label, point = chosen
        local_label = side_title(label, point.engine_label)
        local_value = number(result.local_value)
        ratio = Figure(guarded(result, "ratio") or 0.0, "ratio")
        difference = change(guarded(result, "difference_pct"))
        against = {"value": common["reference_value"], "unit": unit, "spec": spec,
                   "local": local_label, "local_value": local_value, "ratio": ratio,
                   "change": difference or ""}
        rows.append(ReferenceView(
            **common,
            local_label=local_label,
            local_value=local_value,
            ratio=ratio,
            difference=difference,
            figures=_("Reference: %(value)s %(unit)s (%(spec)s); %(local)s: %(local_value)s "
                      "%(unit)s (CPU engine) (%(ratio)s, %(change)s)", **against)
            if is_cpu_engine(point) else
            _("Reference: %(value)s %(unit)s (%(spec)s); %(local)s: %(local_value)s %(unit)s "
              "(%(ratio)s, %(change)s)", **against),
            controlled=is_controlled(result),
            matching=labels(result, "match"),
            differing=[factor_phrase(r) for r in result.factors if r.status == "differ"],
            not_recorded=labels(result, "unknown"),
            cpu_engine=is_cpu_engine(point),
            no_match=None,
            latency=_reference_latency(result),
        ))
    sources["references"] = compared
    return rows
