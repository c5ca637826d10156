"""The demo's comparison: the smallest max_num_seqs setting against the best one, saved after
the demo sweep (finish_demo). Judgement chooses and checks the pair; the row is written here."""

from __future__ import annotations

from analysis import AnalysisError
from analysis.types import PointFigures
from benchmarks.models import Benchmark, Comparison
from judgement.comparison_view import compare_points
from judgement.figures import figures_by_key
from judgement.rows import load_points


def save_demo_comparison(benchmark: Benchmark) -> Comparison | None:
    """After the demo sweep: save baseline = the smallest max_num_seqs, candidate = the best one.

    Each setting is represented at its capacity (lowest repeat) under the highest load level it
    ran, where a larger max_num_seqs can show what it recovers; the best setting is the one with
    the most output throughput there. The controlled / not controlled label is whatever
    analysis.compare says about the two points: it is recomputed on the comparison page, never
    stored. Returns None when the sweep has fewer than two max_num_seqs settings with valid
    points, or when the two cannot be compared (e.g. no latency data).
    """
    points = load_points(benchmark)
    figs, _ = figures_by_key(points)
    # The analysis's validity: also False when a point's stored aggregates fail their checks.
    figs = {key: f for key, f in figs.items() if f.valid and f.replicas == 1}
    by_key = {p.key: p for p in points}
    seqs = {f.max_num_seqs for f in figs.values() if f.max_num_seqs is not None}
    if len(seqs) < 2:
        return None
    top_load = max(f.offered_concurrency for f in figs.values())

    def capacity_point(max_num_seqs: int) -> PointFigures | None:
        at_top = [
            f for f in figs.values()
            if f.max_num_seqs == max_num_seqs and f.offered_concurrency == top_load
        ]
        return min(at_top, key=lambda f: (f.output_throughput, f.repeat)) if at_top else None

    at_top_load = {s: capacity_point(s) for s in sorted(seqs)}
    settings = {s: f for s, f in at_top_load.items() if f is not None}
    if len(settings) < 2:
        return None
    smallest = min(settings)
    best = max(settings, key=lambda s: (settings[s].output_throughput, -s))
    if best == smallest:
        return None
    baseline, candidate = by_key[settings[smallest].key], by_key[settings[best].key]
    try:
        compare_points(baseline, candidate)
    except AnalysisError:
        return None
    return Comparison.objects.create(
        name=f"{benchmark.name}: max_num_seqs {smallest} -> {best}",
        baseline_point=baseline,
        candidate_point=candidate,
        notes=(
            f"Saved by the demo: the smallest max_num_seqs ({smallest}) against the setting "
            f"with the most output throughput ({best}) at the highest load level."
        ),
        created_by=benchmark.created_by,
    )
