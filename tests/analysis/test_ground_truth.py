"""The recorded ground truth (tests/analysis/ground_truth): every class recorded at least three
times, each recording small, and each still showing its limit bind as the class builds it, so a
fixture cannot drift from its class definition unnoticed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from analysis.convert import from_point_result
from tests.analysis.ground_truth.accuracy import accuracy, contradictions, markdown_table
from tests.analysis.ground_truth.classes import CLASSES, KINDS, evidence_problems
from tests.analysis.ground_truth.record import read_recording, recordings

MAX_BYTES = 30_000


def test_every_class_labels_at_least_two_load_levels_of_one_config_with_known_kinds():
    for gt in CLASSES.values():
        kinds = {kind for kind in gt.labels.values() if kind is not None}
        assert kinds <= set(KINDS), gt.name
        levels: dict[str, set[str]] = {}
        for (config, load), kind in gt.labels.items():
            if kind is not None:
                levels.setdefault(config, set()).add(load)
        assert max(len(loads) for loads in levels.values()) >= 2, gt.name
        assert {load.label() for load in gt.live_loads} <= {load.label() for load in gt.loads}


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_each_class_is_recorded_three_times_in_small_fixtures(name):
    paths = recordings(name)
    assert len(paths) >= 3
    for path in paths:
        assert path.stat().st_size < MAX_BYTES, path


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_every_recording_shows_its_limit_binding_as_built(name):
    gt = CLASSES[name]
    for path in recordings(name):
        points = read_recording(path)
        assert {(p.engine_config.label(), p.load.label()) for p in points} == set(gt.labels)
        assert not evidence_problems(gt, points), path
        for p in points:
            assert p.requests == [] and p.samples == []
            assert p.provenance is not None and p.provenance.engine.version
            assert from_point_result(p).queue_samples > 0


# The targets over the whole labelled set: every config's diagnosis right in every recording,
# at least 90% of labelled points right, and no verdict its own evidence contradicts.
POINTS_RIGHT_MIN = 0.9


@pytest.fixture(scope="module")
def rows():
    return accuracy()


def test_every_engine_configs_diagnosis_is_right_in_every_recording(rows):
    wrong = {r.name: f"{r.configs_right} of {r.configs}: {r.wrong}" for r in rows
             if r.configs_right < r.configs}
    assert not wrong


def test_nine_in_ten_labelled_points_get_the_limit_that_binds_by_construction(rows):
    for r in rows:
        assert r.points_right >= POINTS_RIGHT_MIN * r.points, (r.name, r.wrong)
    assert sum(r.points_right for r in rows) >= POINTS_RIGHT_MIN * sum(r.points for r in rows)


def test_no_verdict_is_contradicted_by_its_own_evidence(rows):
    assert [c for r in rows for c in r.contradictions] == []


def test_the_accuracy_table_in_the_docs_is_the_recordings_own(rows):
    docs = (Path(__file__).resolve().parents[2] / "docs" / "verdicts.md").read_text()
    assert markdown_table(rows) in docs, (
        "docs/verdicts.md's accuracy table is stale; paste this:\n" + markdown_table(rows))


def test_a_contradiction_is_caught_where_the_evidence_says_otherwise():
    from analysis.verdicts import verdict
    from tests.analysis.helpers import point

    # A token budget whose steps sit at 1% of the budget cannot be the token budget.
    judged = verdict(point("p", 64, 100.0, config_label="seqs=16", max_num_seqs=16,
                           max_num_batched_tokens=2048, queue_samples=20, mean_running=4.0,
                           peak_running=5.0, mean_waiting=30.0, peak_waiting=60.0,
                           peak_kv_usage=0.1, preemptions=0.0, mean_tokens_per_step=2_000.0))
    assert judged.kind == "token_budget" and contradictions(judged) == []
    lying = dataclasses.replace(
        judged, evidence=dataclasses.replace(judged.evidence, mean_tokens_per_step=20.0))
    assert contradictions(lying) == ["token budget with steps at 20 of 2048"]
