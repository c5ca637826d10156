"""One live ground-truth point set per bottleneck class (tests/analysis/ground_truth/classes.py)
on real vLLM CPU engines: the engine's own records must show the limit binding as the class
builds it, and the verdict rules must name it.

Engines come from the session's cpu_engine fixture and every plan attaches to one: the scheduler
cap, the underloaded engine and the starved client share SHARED_CONFIG's engine with the other
engine tests; the token budget, the KV cache and the step time start their own. An attached
server records no flags, so each point gets the config it ran with back before it is judged.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from analysis.convert import from_point_result
from analysis.verdicts import verdicts_for_sweep
from runner.engine.process import RunningEngine
from runner.measure.sampler import point_running_while_waiting
from runner.schema.engine_config import EngineConfig
from runner.schema.result import PointResult
from runner.sweep import run_plan
from tests.analysis.ground_truth.classes import (
    KV_CAPACITY,
    SCHEDULER_CAP,
    STARVED_CLIENT,
    STEP_TIME,
    TOKEN_BUDGET,
    UNDERLOADED,
    GroundTruthClass,
    evidence_problems,
)
from tests.analysis.ground_truth.record import spinning, start_spinning

pytestmark = pytest.mark.engine

Engines = Callable[[EngineConfig], RunningEngine]


def live_points(cpu_engine: Engines, gt: GroundTruthClass, workdir: Path) -> list[PointResult]:
    """The class's live loads against an engine of its first config, CPUs kept busy as the
    class says while they run; each point carries that config."""
    if gt.hog_nice < 0 and os.geteuid() != 0:
        pytest.skip("spinning processes above the client's priority need root")
    config = gt.engine_configs[0]
    engine = cpu_engine(config)
    with spinning() as procs:
        start_spinning(procs, gt)
        points = list(run_plan(gt.live_plan(engine.base_url), workdir))
    return [p.model_copy(update={"engine_config": config}) for p in points]


def assert_binds(gt: GroundTruthClass, points: list[PointResult]) -> None:
    problems = evidence_problems(gt, points)
    assert not problems, "\n".join(problems)
    # A point stored before the sampler kept its record of running while requests waited is
    # judged by the record found again from its samples: on a real engine's samples, that is
    # the record the sampler kept.
    for p in points:
        recorded = p.queue.running_while_waiting_s
        assert recorded is not None and p.samples, p.key
        found = point_running_while_waiting(p)
        assert found == pytest.approx(recorded), (p.key, found, recorded)


def assert_kinds(gt: GroundTruthClass, points: list[PointResult], *,
                 may_rank_ahead: tuple[str, ...] = ()) -> None:
    """Every labelled point is judged the kind the class expects (classes.expected_kind), or
    one of may_rank_ahead with the expected kind holding behind it (evidence.also)."""
    judged = verdicts_for_sweep([from_point_result(p) for p in points])
    for p in points:
        expected = gt.expected_kind(p.engine_config.label(), p.load.label())
        verdict = judged[p.key]
        if expected is None or verdict.kind == expected:
            continue
        assert verdict.kind in may_rank_ahead, (p.key, verdict.sentence, p.queue)
        assert expected in verdict.evidence.also, (p.key, verdict.evidence)


def test_a_long_queue_behind_max_num_seqs_4_is_the_scheduler_cap(cpu_engine, tmp_path):
    points = live_points(cpu_engine, SCHEDULER_CAP, tmp_path)
    assert_binds(SCHEDULER_CAP, points)
    assert_kinds(SCHEDULER_CAP, points)


def test_long_prompts_in_32_token_chunks_are_the_token_budget(cpu_engine, tmp_path):
    points = live_points(cpu_engine, TOKEN_BUDGET, tmp_path)
    assert_binds(TOKEN_BUDGET, points)
    assert_kinds(TOKEN_BUDGET, points)


def test_long_outputs_in_16_kv_blocks_are_the_kv_capacity(cpu_engine, tmp_path):
    points = live_points(cpu_engine, KV_CAPACITY, tmp_path)
    assert_binds(KV_CAPACITY, points)
    assert (points[0].queue.preemptions or 0) > 0, points[0].queue
    assert_kinds(KV_CAPACITY, points)


def test_more_load_under_a_cap_far_above_it_is_the_engine_step_time(cpu_engine, tmp_path):
    points = live_points(cpu_engine, STEP_TIME, tmp_path)
    assert_binds(STEP_TIME, points)
    assert_kinds(STEP_TIME, points)


def test_fewer_requests_in_flight_than_max_num_seqs_is_underloaded(cpu_engine, tmp_path):
    points = live_points(cpu_engine, UNDERLOADED, tmp_path)
    assert_binds(UNDERLOADED, points)
    # The construction decides that nothing waits, not that two in flight on two shared cores
    # deliver 1.41x of one: a slow spell can make the engine's step time hold too, and rank
    # ahead. Underloaded must then still hold behind it.
    assert_kinds(UNDERLOADED, points, may_rank_ahead=("step_time",))


def test_a_client_starved_of_its_cpu_that_keeps_too_few_requests_in_flight_is_the_limit(
    cpu_engine, tmp_path
):
    points = live_points(cpu_engine, STARVED_CLIENT, tmp_path)
    assert_binds(STARVED_CLIENT, points)
    assert all(p.client.cpus == [1] for p in points)
    assert_kinds(STARVED_CLIENT, points)
