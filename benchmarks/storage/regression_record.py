"""Regression watch on the rows: a plan's accepted baseline, and each run's verdict against it.

The rule is runner.regression's, the one `python -m runner compare` applies to files; here the
verdict is kept on each run's row (Benchmark.regression) so the run list shows it without
reading points. It is set again whenever it can change: a run of the plan succeeds, or the
plan's baseline is accepted or withdrawn.
"""

from __future__ import annotations

from django.db import transaction

from benchmarks.models import Benchmark
from benchmarks.storage.points import point_to_result
from runner.regression import RegressionReport, compare_runs
from runner.schema.result import PointResult

BASELINE = "baseline"  # Benchmark.regression of the accepted baseline itself


def baseline_of(benchmark: Benchmark) -> Benchmark | None:
    """The accepted baseline of the run's plan, if another run is it."""
    if not benchmark.plan_key or benchmark.accepted_baseline:
        return None
    return (Benchmark.objects.select_related("node", "runtime", "checkpoint")
            .filter(plan_key=benchmark.plan_key, accepted_baseline=True).first())


def run_points(benchmark: Benchmark) -> list[PointResult]:
    """The run's points as the runner wrote them, without per-request records."""
    return [point_to_result(p, records=False) for p in benchmark.points.all()]


def report(baseline: Benchmark, candidate: Benchmark) -> RegressionReport:
    return compare_runs(run_points(baseline), run_points(candidate))


def _verdict(baseline_points: list[PointResult] | None, run: Benchmark) -> str:
    if run.accepted_baseline:
        return BASELINE
    if baseline_points is None or run.state != Benchmark.State.SUCCEEDED:
        return ""
    return compare_runs(baseline_points, run_points(run)).verdict


def judge_run(benchmark_id: int) -> None:
    """Store a finished run's verdict against its plan's baseline (blank without one)."""
    run = Benchmark.objects.filter(pk=benchmark_id).first()
    if run is not None:
        baseline = baseline_of(run)
        verdict = _verdict(None if baseline is None else run_points(baseline), run)
        Benchmark.objects.filter(pk=run.pk).update(regression=verdict)


def refresh_plan(plan_key: str) -> None:
    """Every run of the plan judged again against its baseline (or none); the baseline's points
    are read once."""
    if not plan_key:  # imported runs: no plan, no baseline, no verdicts
        return
    runs = list(Benchmark.objects.filter(plan_key=plan_key))
    baseline = next((r for r in runs if r.accepted_baseline), None)
    baseline_points = None if baseline is None else run_points(baseline)
    for run in runs:
        Benchmark.objects.filter(pk=run.pk).update(regression=_verdict(baseline_points, run))


class BaselineError(ValueError):
    """Why a run cannot be its plan's baseline."""


def accept(benchmark: Benchmark) -> None:
    """The run becomes its plan's accepted baseline, replacing the one before."""
    if benchmark.source != Benchmark.Source.LAUNCHED or not benchmark.plan_key:
        raise BaselineError("an imported run was launched from no plan: it cannot be a "
                            "plan's baseline")
    if benchmark.state != Benchmark.State.SUCCEEDED:
        raise BaselineError("only a run that succeeded can be a baseline: a failed or "
                            "cancelled run did not measure all its plan")
    if not benchmark.points.exists():
        raise BaselineError("this run has no points to compare against")
    with transaction.atomic():
        Benchmark.objects.filter(plan_key=benchmark.plan_key, accepted_baseline=True).update(
            accepted_baseline=False)
        Benchmark.objects.filter(pk=benchmark.pk).update(accepted_baseline=True)
        refresh_plan(benchmark.plan_key)
    benchmark.accepted_baseline = True


def withdraw(benchmark: Benchmark) -> None:
    """The plan has no accepted baseline any more; its runs' verdicts are cleared."""
    with transaction.atomic():
        Benchmark.objects.filter(pk=benchmark.pk).update(accepted_baseline=False)
        refresh_plan(benchmark.plan_key)
    benchmark.accepted_baseline = False
