"""A selection's evidence as the JSON an operating-point row stores, and back.

The keys are the ones rows have always stored, so a row written before the evidence was typed
reads back. A stored row that lacks a key the sentence needs raises KeyError (the page then
keeps the row's own sentence); keys added later read as their default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, fields
from typing import Any

from analysis.types import (
    KneeEvidence,
    KneeFound,
    KneeStep,
    OverrideEvidence,
    ParetoEvidence,
    ParetoPoint,
    SelectionEvidence,
    SloEvidence,
)


def evidence_json(evidence: SelectionEvidence) -> dict[str, Any]:
    if isinstance(evidence, KneeEvidence):
        return _knee_json(evidence)
    if isinstance(evidence, ParetoEvidence):
        return {"output_throughput_per_gpu": evidence.output_throughput_per_gpu,
                "tokens_per_user": evidence.tokens_per_user,
                "frontier": [asdict(c) for c in evidence.frontier]}
    data = asdict(evidence)
    return {k: list(v) if isinstance(v, tuple) else v for k, v in data.items()}


def _knee_json(evidence: KneeEvidence) -> dict[str, Any]:
    data: dict[str, Any] = {"knee_found": evidence.knee_found}
    if evidence.found is not None:
        data.update(asdict(evidence.found))
    else:
        data["chosen_throughput"] = evidence.chosen_throughput
    data["steps"] = [asdict(s) for s in evidence.steps]
    data["excluded_invalid"] = list(evidence.excluded_invalid)
    if evidence.per_config is not None:
        data["per_config"] = dict(evidence.per_config)
        data["configs_too_short"] = list(evidence.configs_too_short or ())
    data["excluded_disturbed"] = list(evidence.excluded_disturbed)
    data["disturbed_walked"] = list(evidence.disturbed_walked)
    data["noise_band_pct"] = evidence.noise_band_pct
    return data


def evidence_from_json(method: str, data: Mapping[str, Any]) -> SelectionEvidence:
    """The stored evidence of a row chosen by `method`; KeyError for an unknown method or a
    missing key the evidence cannot do without."""
    if method == "knee":
        return _knee_from_json(data)
    if method == "slo":
        return SloEvidence(
            chosen_throughput=data["chosen_throughput"],
            values=dict(data["values"]),
            utilisation=dict(data["utilisation"]),
            closest_metric=data["closest_metric"],
            binding_metric=data["binding_metric"],
            next_key=data.get("next_key"),
            next_throughput=data.get("next_throughput"),
            next_violations=dict(data.get("next_violations") or {}),
            excluded_invalid=tuple(data.get("excluded_invalid") or ()),
        )
    if method == "pareto":
        return ParetoEvidence(
            output_throughput_per_gpu=data["output_throughput_per_gpu"],
            tokens_per_user=data["tokens_per_user"],
            frontier=tuple(ParetoPoint(**c) for c in data.get("frontier") or ()),
        )
    if method == "override":
        # An override's sentence is its reason: a row without the throughput still reads.
        return OverrideEvidence(chosen_throughput=data.get("chosen_throughput"))
    raise KeyError(method)


def _knee_from_json(data: Mapping[str, Any]) -> KneeEvidence:
    found = None
    if data["knee_found"]:
        found = KneeFound(**{f.name: data[f.name] for f in fields(KneeFound)})
    per_config = data.get("per_config")
    too_short = data.get("configs_too_short")
    return KneeEvidence(
        found=found,
        chosen_throughput=None if found is not None else data.get("chosen_throughput"),
        steps=tuple(KneeStep(**s) for s in data.get("steps") or ()),
        excluded_invalid=tuple(data.get("excluded_invalid") or ()),
        per_config=None if per_config is None else dict(per_config),
        configs_too_short=None if too_short is None else tuple(too_short),
        excluded_disturbed=tuple(data.get("excluded_disturbed") or ()),
        disturbed_walked=tuple(data.get("disturbed_walked") or ()),
        noise_band_pct=data.get("noise_band_pct"),
    )
