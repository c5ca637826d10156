"""Each engine config's diagnosis over its load ladder: one limit said once, where it changed,
where saturation began, and a node run kept off the single-replica ladder."""

from __future__ import annotations

from analysis.diagnosis import diagnose_ladders
from analysis.verdicts import verdict, verdicts_for_sweep
from tests.analysis.test_verdicts import SMALL_CAP_QUEUED, engine


def _level(seqs: int, load: int, kind_evidence: dict, replicas: int = 1):
    values = {**kind_evidence, "config_label": f"seqs={seqs}", "max_num_seqs": seqs,
              "load_label": f"burst {load}", "replicas": replicas, "gpu_count": replicas}
    return verdict(engine(f"s{seqs}|{load}|{replicas}", load, 1000.0 + load, **values))


CAPPED_4 = {**SMALL_CAP_QUEUED, "at_cap_share": 0.97}
QUIET = {"mean_waiting": 0.0, "peak_waiting": 0.0, "mean_running": 3.0, "peak_running": 6.0}
SPARSE = {**CAPPED_4, "queue_gap_fraction": 0.6}


def test_a_ladder_bound_by_one_limit_at_every_load_says_so_once():
    ladder = [_level(4, load, CAPPED_4) for load in (16, 32, 64, 128)]
    assert diagnose_ladders(ladder) == (
        "seqs=4: the scheduler cap at every loaded level (burst 16 to burst 128)",)


def test_where_the_verdict_changes_along_the_ladder_the_diagnosis_says_where():
    capped_16 = {**CAPPED_4, "peak_running": 16.0}
    ladder = [_level(16, 8, QUIET), _level(16, 32, {**SPARSE, "peak_running": 16.0}),
              _level(16, 64, capped_16), _level(16, 128, capped_16)]
    assert diagnose_ladders(ladder) == (
        "seqs=16: no limit (underloaded) at burst 8 (nothing waits); an unclear limit at burst "
        "32; the scheduler cap from burst 64 on (running sits at max_num_seqs while requests "
        "wait)",)


def test_a_saturated_ladder_says_so_beside_its_cause_from_where_it_began():
    # The demo's first config: pinned at 4 at every level; 16 -> 32 still added 20% output,
    # from burst 64 on more load added under 2% for more latency.
    levels = ((16, 1_000.0, 1_000.0), (32, 1_200.0, 1_900.0), (64, 1_205.0, 3_800.0),
              (128, 1_190.0, 7_600.0))
    ladder = verdicts_for_sweep([
        engine(f"s4|{load}", load, tput, **{**CAPPED_4, "config_label": "seqs=4",
               "max_num_seqs": 4, "load_label": f"burst {load}", "median_e2el_ms": e2el})
        for load, tput, e2el in levels])
    assert [ladder[f"s4|{load}"].kind for load, _, _ in levels] == ["scheduler_cap"] * 4
    assert diagnose_ladders(list(ladder.values())) == (
        "seqs=4: the scheduler cap at every loaded level (burst 16 to burst 128); saturated "
        "from burst 64 on",)


def test_a_node_run_beside_single_replica_points_is_not_read_as_a_load_level():
    ladder = [_level(4, 16, CAPPED_4), _level(4, 32, CAPPED_4),
              _level(4, 64, QUIET, replicas=8)]  # 8 replicas, each with room
    assert diagnose_ladders(ladder) == (
        "seqs=4: the scheduler cap at every loaded level (burst 16 to burst 32)",)
