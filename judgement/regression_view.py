"""The run page's regression watch: the plan's accepted baseline and this run's verdict against
it, per engine config, with the factors that differ (runner.regression's rule, read only)."""

from __future__ import annotations

from dataclasses import dataclass

from benchmarks.models import Benchmark
from benchmarks.storage import regression_record
from runner.regression import RegressionReport


@dataclass(frozen=True)
class RegressionSection:
    is_baseline: bool
    baseline: Benchmark | None  # the plan's accepted baseline, when another run is it
    report: RegressionReport | None
    error: str | None  # why no verdict could be made
    # Whether this run may be accepted as the plan's baseline (it succeeded with points).
    can_be_baseline: bool


def regression_section(benchmark: Benchmark) -> RegressionSection | None:
    """The section, or None for a run launched from no plan (an import): it has no baseline
    to be judged against, and its page shows no section, so none is computed."""
    if benchmark.source != Benchmark.Source.LAUNCHED:
        return None
    baseline = regression_record.baseline_of(benchmark)
    report = error = None
    if baseline is not None and benchmark.state == Benchmark.State.SUCCEEDED:
        try:
            report = regression_record.report(baseline, benchmark)
        except ValueError as exc:  # a stored point that no longer reads (pydantic's error)
            error = f"no verdict: a point no longer reads ({exc})"
    return RegressionSection(
        is_baseline=benchmark.accepted_baseline,
        baseline=baseline,
        report=report,
        error=error,
        can_be_baseline=benchmark.state == Benchmark.State.SUCCEEDED,
    )
