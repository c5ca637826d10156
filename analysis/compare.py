"""Honest comparisons: baseline vs candidate, and a local result vs a dated external reference.

A comparison is "controlled" only when every fixed factor (docs/vllm.md, "Controlled
comparisons") is recorded on both sides and equal. A factor missing on either side is "unknown",
never assumed equal: a claim of control must rest on recorded facts. Across different
input/output specs (or a spec not recorded on both sides) no percentage or ratio is given, only
the statement of which spec each side has: the same guard for two points and for a point against
a reference.
"""

from __future__ import annotations

from dataclasses import dataclass

from analysis import sentences
from analysis.errors import AnalysisError
from analysis.types import (
    UNIT_OUTPUT_TPS_PER_GPU,
    Comparison,
    FactorRow,
    LatencyStatistic,
    Measured,
    PointFigures,
    Reference,
    ReferenceComparison,
    RunFacts,
    WorkloadShape,
    spec_row,
)
from runner.fixed_factors import FACTORS, factor_status


def _shown(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, WorkloadShape):
        return value.label()
    return str(value)


def compare_factors(baseline: RunFacts, candidate: RunFacts) -> tuple[FactorRow, ...]:
    """Every fixed factor side by side with match / differ / unknown."""
    rows = []
    for name, label in FACTORS:
        a, b = getattr(baseline, name), getattr(candidate, name)
        status = factor_status(a, b)
        rows.append(
            FactorRow(
                name=name, label=label, baseline=_shown(a), candidate=_shown(b), status=status
            )
        )
    return tuple(rows)


def _labels(rows: tuple[FactorRow, ...], status: str) -> tuple[str, ...]:
    return tuple(r.label for r in rows if r.status == status)


@dataclass(frozen=True)
class Guard:
    """What the comparison guard decides from the factor rows, for every kind of comparison.

    controlled: every fixed factor recorded on both sides and equal. same_spec: the input/output
    spec recorded on both sides and equal, the only case in which a percentage is printed.
    """

    rows: tuple[FactorRow, ...]
    matching: tuple[str, ...]
    differing: tuple[str, ...]
    unknown: tuple[str, ...]

    @property
    def controlled(self) -> bool:
        return not self.differing and not self.unknown

    @property
    def same_spec(self) -> bool:
        return spec_row(self.rows).status == "match"

    @property
    def spec_differs(self) -> bool:
        return spec_row(self.rows).status == "differ"

    def spec_note(self, left: str, right: str) -> str | None:
        """The statement that replaces a percentage; None when the specs are the same."""
        if self.same_spec:
            return None
        row = spec_row(self.rows)
        return sentences.spec_statement(left, row.baseline, right, row.candidate)


def guard(left: RunFacts, right: RunFacts) -> Guard:
    rows = compare_factors(left, right)
    return Guard(
        rows=rows,
        matching=_labels(rows, "match"),
        differing=_labels(rows, "differ"),
        unknown=_labels(rows, "unknown"),
    )


def change_pct(before: float, after: float) -> float:
    """(after - before) / before * 100; callers check that before is positive."""
    return (after - before) / before * 100


def _median_e2el(point: PointFigures) -> float:
    if point.median_e2el_ms is None:
        raise AnalysisError(f"point {point.key} has no median_e2el_ms: latency data is missing")
    return point.median_e2el_ms


# The engine settings whose difference changes the work an engine does for the same requests,
# not only when it does it: with prefix caching on, a workload whose prompts share a prefix
# computes it once. A tuning comparison across them is not a scheduler result.
WORK_SETTINGS = ("enable_prefix_caching",)


def engine_differences(baseline: PointFigures, candidate: PointFigures) -> tuple[str, ...]:
    """A sentence for each WORK_SETTINGS setting the two configs record differently (None, the
    engine's default, differs from an explicit value: what the default was is not recorded)."""
    before, after = dict(baseline.other_settings), dict(candidate.other_settings)
    out = []
    for name in WORK_SETTINGS:
        if before.get(name) != after.get(name):
            out.append(sentences.prefix_caching_sentence(
                before.get(name), baseline.prefix_cache_hit_rate,
                after.get(name), candidate.prefix_cache_hit_rate))
    return tuple(out)


def compare(baseline: Measured, candidate: Measured) -> Comparison:
    """Before -> after output throughput, improvement % ((c - b) / b * 100) and ratio c / b,
    median latency before -> after, and the fixed factors with the sentence naming what matches
    and what differs. Across different (or unrecorded) specs the figures stand side by side
    with no percentage and no ratio, and the sentence says which spec each side has. A setting
    that changes the work (engine_differences) is named after the factors; it does not decide
    "controlled", which is about the fixed factors of the measurement.
    """
    b, c = baseline.figures, candidate.figures
    b_latency, c_latency = _median_e2el(b), _median_e2el(c)
    checked = guard(baseline.facts, candidate.facts)
    differences = engine_differences(b, c)
    improvement = ratio = latency_change = None
    if checked.same_spec:
        if b.output_throughput <= 0:
            raise AnalysisError(
                f"baseline {b.key} has zero output throughput; an improvement over it is undefined"
            )
        if b_latency <= 0:
            raise AnalysisError(f"baseline {b.key} has median_e2el_ms 0; its change is undefined")
        improvement = change_pct(b.output_throughput, c.output_throughput)
        ratio = c.output_throughput / b.output_throughput
        latency_change = change_pct(b_latency, c_latency)
    return Comparison(
        baseline_key=b.key,
        candidate_key=c.key,
        baseline_throughput=b.output_throughput,
        candidate_throughput=c.output_throughput,
        improvement_pct=improvement,
        ratio=ratio,
        baseline_median_e2el_ms=b_latency,
        candidate_median_e2el_ms=c_latency,
        latency_change_pct=latency_change,
        factors=checked.rows,
        controlled=checked.controlled,
        spec_differs=checked.spec_differs,
        matching=checked.matching,
        differing=checked.differing,
        unknown=checked.unknown,
        sentence="; ".join([sentences.comparison_sentence(
            checked.controlled,
            checked.matching,
            checked.differing,
            checked.unknown,
            checked.spec_note("baseline", "candidate"),
        ), *differences]),
        engine_differences=differences,
        baseline_prefix_cache_hit_rate=b.prefix_cache_hit_rate,
        candidate_prefix_cache_hit_rate=c.prefix_cache_hit_rate,
    )


def local_value_in_unit(point: PointFigures, unit: str) -> float:
    """The local figure in the reference's unit: per GPU divides by the devices the point used."""
    if unit == UNIT_OUTPUT_TPS_PER_GPU:
        return point.throughput_per_gpu
    return point.output_throughput


# The PointFigures field holding each statistic of vLLM's E2EL. A point without the field (or
# with it unset) has no local figure to put beside the reference's: shown as not recorded.
LOCAL_E2EL_FIELDS: dict[LatencyStatistic, str] = {
    "median": "median_e2el_ms",
    "mean": "mean_e2el_ms",
}


def local_latency(point: PointFigures, statistic: LatencyStatistic) -> float | None:
    value = getattr(point, LOCAL_E2EL_FIELDS[statistic], None)
    return None if value is None else float(value)


def compare_reference(local: Measured, reference: Reference) -> ReferenceComparison:
    """A local result against a dated reference: the ratio local / reference in the reference's
    unit, what matches and what differs, and the reference's dates kept with the result.
    What the reference does not state counts as unknown, not as a match. A published latency
    stands beside the local point's same statistic. Ratio and percentages only at the same spec.
    """
    point = local.figures
    value = local_value_in_unit(point, reference.unit)
    checked = guard(reference.facts(), local.facts)
    statistic = reference.latency_statistic
    local_ms = local_latency(point, statistic) if statistic is not None else None
    same = checked.same_spec
    return ReferenceComparison(
        reference_name=reference.name,
        unit=reference.unit,
        local_key=point.key,
        local_value=value,
        reference_value=reference.value,
        ratio=value / reference.value if same else None,
        difference_pct=change_pct(reference.value, value) if same else None,
        recorded_on=reference.recorded_on,
        no_longer_listed_on=reference.no_longer_listed_on,
        factors=checked.rows,
        controlled=checked.controlled,
        spec_differs=checked.spec_differs,
        matching=checked.matching,
        differing=checked.differing,
        unknown=checked.unknown,
        latency_statistic=statistic,
        latency_label=sentences.latency_label(statistic) if statistic is not None else None,
        reference_latency_ms=reference.latency_ms,
        local_latency_ms=local_ms,
        latency_difference_pct=(
            change_pct(reference.latency_ms, local_ms)
            if same and reference.latency_ms is not None and local_ms is not None
            else None
        ),
        sentence=sentences.reference_sentence(
            reference.name,
            reference.recorded_on,
            reference.no_longer_listed_on,
            checked.controlled,
            checked.matching,
            checked.differing,
            checked.unknown,
            checked.spec_note("reference", "local point"),
        ),
    )
