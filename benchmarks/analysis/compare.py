"""Honest comparisons: baseline vs candidate, and a local result vs a dated external reference.

A comparison is "controlled" only when every fixed factor of domain.md section 2 is recorded on
both sides and equal. A factor missing on either side is "unknown", never assumed equal: a
claim of control must rest on recorded facts.
"""

from __future__ import annotations

from benchmarks.analysis import sentences
from benchmarks.analysis.errors import AnalysisError
from benchmarks.analysis.types import (
    UNIT_OUTPUT_TPS_PER_GPU,
    Comparison,
    FactorRow,
    FactorStatus,
    Measured,
    PointFigures,
    Reference,
    ReferenceComparison,
    RunFacts,
    WorkloadShape,
)

# (RunFacts field, words used in sentences), in the order the issue lists them.
FACTORS: tuple[tuple[str, str], ...] = (
    ("gpu_sku", "GPU SKU"),
    ("gpu_count", "GPU count"),
    ("runtime", "runtime"),
    ("runtime_version", "runtime version"),
    ("checkpoint", "checkpoint"),
    ("checkpoint_revision", "checkpoint revision"),
    ("precision", "precision"),
    ("kv_dtype", "KV dtype"),
    ("request_count", "request count"),
    ("workload", "spec"),
    ("host", "host"),
)


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
        status: FactorStatus
        if a is None or b is None:
            status = "unknown"
        elif a == b:
            status = "match"
        else:
            status = "differ"
        rows.append(
            FactorRow(
                name=name, label=label, baseline=_shown(a), candidate=_shown(b), status=status
            )
        )
    return tuple(rows)


def _labels(rows: tuple[FactorRow, ...], status: str) -> tuple[str, ...]:
    return tuple(r.label for r in rows if r.status == status)


def _median_e2el(point: PointFigures) -> float:
    if point.median_e2el_ms is None:
        raise AnalysisError(f"point {point.key} has no median_e2el_ms: latency data is missing")
    return point.median_e2el_ms


def compare(baseline: Measured, candidate: Measured) -> Comparison:
    """Before -> after output throughput, improvement % ((c - b) / b * 100) and ratio c / b,
    median latency before -> after, and the fixed factors with the sentence naming what matches
    and what differs.
    """
    b, c = baseline.figures, candidate.figures
    if b.output_throughput <= 0:
        raise AnalysisError(
            f"baseline {b.key} has zero output throughput; an improvement over it is undefined"
        )
    b_latency, c_latency = _median_e2el(b), _median_e2el(c)
    if b_latency <= 0:
        raise AnalysisError(f"baseline {b.key} has median_e2el_ms 0; its change is undefined")
    rows = compare_factors(baseline.facts, candidate.facts)
    matching, differing, unknown = (
        _labels(rows, "match"),
        _labels(rows, "differ"),
        _labels(rows, "unknown"),
    )
    controlled = not differing and not unknown
    return Comparison(
        baseline_key=b.key,
        candidate_key=c.key,
        baseline_throughput=b.output_throughput,
        candidate_throughput=c.output_throughput,
        improvement_pct=(c.output_throughput - b.output_throughput) / b.output_throughput * 100,
        ratio=c.output_throughput / b.output_throughput,
        baseline_median_e2el_ms=b_latency,
        candidate_median_e2el_ms=c_latency,
        latency_change_pct=(c_latency - b_latency) / b_latency * 100,
        factors=rows,
        controlled=controlled,
        matching=matching,
        differing=differing,
        unknown=unknown,
        sentence=sentences.comparison_sentence(controlled, matching, differing, unknown),
    )


def local_value_in_unit(point: PointFigures, unit: str) -> float:
    """The local figure in the reference's unit: per GPU divides by the devices the point used."""
    if unit == UNIT_OUTPUT_TPS_PER_GPU:
        return point.throughput_per_gpu
    return point.output_throughput


def compare_reference(local: Measured, reference: Reference) -> ReferenceComparison:
    """A local result against a dated reference: the ratio local / reference in the reference's
    unit, what matches and what differs, and the reference's dates kept with the result.
    What the reference does not state counts as unknown, not as a match.
    """
    point = local.figures
    value = local_value_in_unit(point, reference.unit)
    rows = compare_factors(reference.facts(), local.facts)
    matching, differing, unknown = (
        _labels(rows, "match"),
        _labels(rows, "differ"),
        _labels(rows, "unknown"),
    )
    return ReferenceComparison(
        reference_name=reference.name,
        unit=reference.unit,
        local_key=point.key,
        local_value=value,
        reference_value=reference.value,
        ratio=value / reference.value,
        difference_pct=(value - reference.value) / reference.value * 100,
        recorded_on=reference.recorded_on,
        no_longer_listed_on=reference.no_longer_listed_on,
        factors=rows,
        matching=matching,
        differing=differing,
        unknown=unknown,
        sentence=sentences.reference_sentence(
            reference.name,
            reference.recorded_on,
            reference.no_longer_listed_on,
            matching,
            differing,
            unknown,
        ),
    )
