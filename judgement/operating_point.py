"""The run's operating point: choosing one (knee, SLO, Pareto, override), the one the run page
shows (stored, or the knee by default) with its sentence, and the Pareto frontier it is chosen
on. Storing a choice is the data layer's (benchmarks.storage.operating_points)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic

from analysis import AnalysisError, noise, repeats, selection, sentences
from analysis.selection_json import evidence_from_json
from analysis.types import ParetoPoint, PointFigures, Selection, SelectionEvidence
from benchmarks.models import Benchmark, OperatingPoint
from benchmarks.storage.operating_points import current_operating_point
from runner.schema.search_record import SearchSpec


def candidates(figs: Sequence[PointFigures]) -> list[PointFigures]:
    """What knee / SLO / Pareto choose among: one point per setting, the lowest valid repeat,
    on the sweep's own ladder (the fewest replicas). A node run beside it is scaled against a
    reference in its own section; as a load level of the same curve it would be a 1-GPU
    throughput set against an 8-GPU one."""
    if not figs:
        return []
    fewest = min(f.replicas for f in figs)
    return repeats.lowest_repeats([f for f in figs if f.replicas == fewest])


def select(method: str, params: Mapping[str, Any], figs: Sequence[PointFigures]) -> Selection:
    """Run one selection method; raises AnalysisError with the reason when it cannot."""
    if method == OperatingPoint.Method.KNEE:
        return selection.knee(
            candidates(figs),
            throughput_gain_pct=params.get(
                "throughput_gain_pct", selection.DEFAULT_THROUGHPUT_GAIN_PCT
            ),
            latency_growth_pct=params.get(
                "latency_growth_pct", selection.DEFAULT_LATENCY_GROWTH_PCT
            ),
            noise_band_pct=noise.run_noise(figs).step_band_pct(),
        )
    if method == OperatingPoint.Method.SLO:
        return selection.slo(candidates(figs), params.get("limits", {}))
    if method == OperatingPoint.Method.PARETO:
        return selection.pareto_choice(candidates(figs), params["min_tokens_per_user"])
    if method == OperatingPoint.Method.OVERRIDE:
        return selection.override(figs, params["chosen_key"], params.get("reason", ""))
    raise AnalysisError(f"unknown selection method {method!r}")


@dataclass(frozen=True)
class Shown:
    """What the run page shows as the operating point: stored, or computed by default."""

    key: str | None
    method: str
    sentence: str
    reason: str
    params: dict[str, Any]
    # None: nothing chosen, or a stored row whose evidence predates a field it now has.
    evidence: SelectionEvidence | None
    stored: OperatingPoint | None
    error: str | None


def _stored_evidence(stored: OperatingPoint) -> SelectionEvidence | None:
    try:
        return evidence_from_json(stored.method, stored.evidence)
    except (KeyError, TypeError):  # a key it needs is missing, or one it does not know is there
        return None


def _stored_sentence(stored: OperatingPoint, evidence: SelectionEvidence | None
                     ) -> sentences.Sentence:
    """A saved choice's sentence, rebuilt from its stored params and evidence so it reads as a
    fresh one does; a row whose evidence predates a field the sentence needs keeps its text."""
    try:
        if evidence is not None:
            return sentences.operating_point_sentence(
                stored.method, stored.params, evidence, stored.reason)
    except KeyError:  # params that predate what the sentence reads
        pass
    return sentences.Sentence("%(text)s", {"text": stored.sentence}, translatable=False)


def operating_point_sentence(shown: Shown) -> sentences.Sentence:
    """The sentence the run page shows for this operating point, as template and values, so a
    report can translate the template and say the same thing. Only for a shown point
    (shown.error is None)."""
    if shown.stored is not None:
        return _stored_sentence(shown.stored, shown.evidence)
    assert shown.evidence is not None  # a fresh choice always has its evidence
    return sentences.operating_point_sentence(shown.method, shown.params, shown.evidence,
                                              shown.reason)


def shown_operating_point(benchmark: Benchmark, figs: Sequence[PointFigures]) -> Shown:
    stored = current_operating_point(benchmark)
    if stored is not None:
        evidence = _stored_evidence(stored)
        return Shown(
            key=stored.point.key,
            method=stored.method,
            sentence=str(_stored_sentence(stored, evidence)),
            reason=stored.reason,
            params=stored.params,
            evidence=evidence,
            stored=stored,
            error=None,
        )
    method, params = default_selection(benchmark)
    try:
        chosen = select(method, params, figs)
    except AnalysisError as exc:
        return Shown(None, method, "", "", {}, None, None, str(exc))
    return Shown(
        chosen.chosen_key,
        chosen.method,
        chosen.sentence,
        chosen.reason,
        chosen.params,
        chosen.evidence,
        None,
        None,
    )


def default_selection(benchmark: Benchmark) -> tuple[str, dict[str, Any]]:
    """What the page shows before anyone chooses: the knee, or what the run's search looked
    for (its SLO limits, or its knee thresholds), so an adaptive run's page shows its answer."""
    stored = (benchmark.plan or {}).get("search")
    if not stored:
        return OperatingPoint.Method.KNEE, {}
    try:
        spec = SearchSpec.model_validate(stored)
    except pydantic.ValidationError:
        return OperatingPoint.Method.KNEE, {}
    if spec.objective == "slo":
        return OperatingPoint.Method.SLO, {"limits": dict(spec.limits)}
    return OperatingPoint.Method.KNEE, {"throughput_gain_pct": spec.throughput_gain_pct,
                                        "latency_growth_pct": spec.latency_growth_pct}


@dataclass(frozen=True)
class Frontier:
    """The Pareto axes of the run: every candidate point (valid, lowest repeat per setting,
    single-replica ladder) and the frontier among them, or why there is none."""

    points: tuple[ParetoPoint, ...]
    keys: tuple[str, ...]  # the frontier, in drawing order (per GPU ascending)
    error: str | None


def frontier(figs: Sequence[PointFigures]) -> Frontier:
    chosen = candidates(figs)
    try:
        points = selection.pareto_points(chosen)
        keys = tuple(c.key for c in selection.pareto_frontier(chosen))
    except AnalysisError as exc:
        return Frontier(points=(), keys=(), error=str(exc))
    return Frontier(points=points, keys=keys, error=None)
