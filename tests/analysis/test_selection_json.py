"""A selection's typed evidence as the JSON an operating-point row stores, and back."""

from __future__ import annotations

import json

import pytest

from analysis import selection
from analysis.selection_json import evidence_from_json, evidence_json
from analysis.types import KneeEvidence, OverrideEvidence
from tests.analysis.helpers import point


def _ladder(throughputs: list[float], latencies: list[float], label: str = "seqs=4"):
    seqs = int(label.split("=")[1])
    return [point(f"{label}|c{c}", c, t, median_e2el_ms=e, median_tpot_ms=20.0 + c,
                  config_label=label, max_num_seqs=seqs)
            for c, t, e in zip((1, 2, 4, 8), throughputs, latencies, strict=True)]


def _round_trip(method: str, chosen: selection.Selection) -> None:
    # Through json as a JSONField stores it: tuples come back as lists.
    stored = json.loads(json.dumps(evidence_json(chosen.evidence)))
    assert evidence_from_json(method, stored) == chosen.evidence


def test_every_method_reads_back_what_it_stored():
    knee_ladder = _ladder([1000, 1900, 1910, 1915], [100, 110, 200, 400])
    _round_trip("knee", selection.knee(knee_ladder, noise_band_pct=4.0))
    _round_trip("knee", selection.knee(_ladder([1000, 2000, 3000, 4000], [100, 110, 120, 130])))
    two = knee_ladder + _ladder([900, 1700, 1720, 1725], [90, 100, 190, 380], label="seqs=8")
    per_config = selection.knee(two)
    assert isinstance(per_config.evidence, KneeEvidence)
    assert per_config.evidence.per_config is not None
    _round_trip("knee", per_config)
    _round_trip("slo", selection.slo(knee_ladder, {"median_e2el_ms": 150}))
    _round_trip("slo", selection.slo(knee_ladder, {"median_e2el_ms": 1000}))
    _round_trip("pareto", selection.pareto_choice(knee_ladder, 1.0))
    _round_trip("override", selection.override(knee_ladder, knee_ladder[2].key, "kept"))


def test_a_knee_stores_the_keys_rows_have_always_had():
    chosen = selection.knee(_ladder([1000, 1900, 1910, 1915], [100, 110, 200, 400]))
    stored = evidence_json(chosen.evidence)
    assert list(stored) == [
        "knee_found", "from_key", "to_key", "to_load", "throughput_before", "throughput_after",
        "median_e2el_before_ms", "median_e2el_after_ms", "throughput_gain_pct",
        "latency_growth_pct", "steps", "excluded_invalid", "excluded_disturbed",
        "disturbed_walked", "noise_band_pct"]
    assert stored["steps"][0] == {"from_key": "seqs=4|c1", "to_key": "seqs=4|c2",
                                  "throughput_gain_pct": 90.0, "latency_growth_pct": 10.0}


def test_a_row_from_before_the_noise_band_reads_with_none():
    chosen = selection.knee(_ladder([1000, 1900, 1910, 1915], [100, 110, 200, 400]))
    stored = evidence_json(chosen.evidence)
    for key in ("noise_band_pct", "excluded_disturbed", "disturbed_walked"):
        del stored[key]
    found = evidence_from_json("knee", stored)
    assert isinstance(found, KneeEvidence)
    assert found.noise_band_pct is None and found.excluded_disturbed == ()


@pytest.mark.parametrize("missing", ["to_load", "throughput_gain_pct", "knee_found"])
def test_a_knee_row_without_what_its_sentence_needs_is_refused(missing):
    chosen = selection.knee(_ladder([1000, 1900, 1910, 1915], [100, 110, 200, 400]))
    stored = evidence_json(chosen.evidence)
    del stored[missing]
    with pytest.raises(KeyError):
        evidence_from_json("knee", stored)


def test_an_unknown_method_is_refused():
    with pytest.raises(KeyError):
        evidence_from_json("fastest", {})


def test_an_override_row_without_its_throughput_still_reads():
    found = evidence_from_json("override", {})
    assert found == OverrideEvidence(chosen_throughput=None)
