"""How sure a run's figures are, for the run page, the comparison page and the report: the run's
noise, drift and disturbed points (analysis.noise), the operating point's figures with their
intervals, and a comparison's ratio with its interval. Every page says it with these calls."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from analysis import noise, repeats
from analysis.sentences import Sentence
from analysis.types import PointFigures
from benchmarks.models import Point
from judgement.figures import figures_by_key
from judgement.rows import load_points


@dataclass(frozen=True)
class RunStability:
    """A run's noise and what the page says of it."""

    noise: noise.RunNoise
    sentences: tuple[Sentence, ...]
    disturbed: frozenset[str]  # keys of the points other processes disturbed


def run_stability(figs: Sequence[PointFigures], *, searched: bool = False) -> RunStability:
    """searched: the run is an adaptive sweep (Benchmark.search), whose end control is its
    answer point."""
    disturbed = [f for f in figs if f.disturbed]
    found = noise.run_noise(figs)
    return RunStability(noise=found,
                        sentences=noise.noise_sentences(found, disturbed, searched=searched),
                        disturbed=frozenset(f.key for f in disturbed))


def _draws(point: PointFigures, figs: Sequence[PointFigures]) -> list[PointFigures]:
    """The judged draws of the point's setting (its repeats and control point)."""
    group = repeats.group_by_setting(figs).get(repeats.setting_of(point), [point])
    return repeats.judged_repeats(group) or [point]


def figure_sentences(
    point: PointFigures, figs: Sequence[PointFigures], found: noise.RunNoise
) -> tuple[Sentence, Sentence | None]:
    """The point's output throughput and median latency, each with its interval from the
    run's noise and the draws of its setting: the operating point's headline figures."""
    draws = len(_draws(point, figs))
    throughput = noise.figure_sentence(
        point.output_throughput,
        noise.value_interval(point.output_throughput, found.throughput_sd, draws, ""),
        "output tok/s")
    latency = None
    if point.median_e2el_ms is not None:
        latency = noise.figure_sentence(
            point.median_e2el_ms,
            noise.value_interval(point.median_e2el_ms, found.latency_sd, draws, ""),
            "ms median latency")
    return throughput, latency


def _run_figures(point: Point) -> list[PointFigures]:
    return list(figures_by_key(load_points(point.benchmark))[0].values())


@dataclass(frozen=True)
class ComparisonStability:
    """How sure a comparison is: its ratio with the interval (None across specs), and what each
    side's run says of its own noise, drift and disturbed points."""

    ratio: Sentence | None
    baseline: RunStability
    candidate: RunStability


def comparison_stability(
    baseline: Point, candidate: Point, ratio: float | None
) -> ComparisonStability:
    """ratio: the comparison's candidate / baseline, None where it gives none (other specs).
    The interval runs over every judged draw of each side's setting, with each run's noise."""
    sides = []
    for point in (baseline, candidate):
        figs = _run_figures(point)
        mine = next((f for f in figs if f.key == point.key), None)
        draws = [] if mine is None else [f.output_throughput for f in _draws(mine, figs)]
        sides.append((draws, run_stability(figs, searched=point.benchmark.search is not None)))
    (b, before), (c, after) = sides
    sentence = None
    if ratio is not None:
        interval = noise.ratio_interval(b, c, before.noise.throughput_sd,
                                        after.noise.throughput_sd)
        sentence = noise.ratio_sentence(ratio, interval)
    return ComparisonStability(ratio=sentence, baseline=before, candidate=after)
