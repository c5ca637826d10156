"""The whole runner on real vLLM CPU engines serving the tiny model.

The case-study effect, for real: with max_num_seqs 4 a burst of 64 requests mostly waits, with
32 the engine admits them and output throughput rises. Engines are started once per engine
config for the whole test session (the sweep fixture is session-scoped).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from analysis import noise
from analysis.convert import from_point_result
from runner.schema.engine_config import Checkpoint, EngineConfig, EngineLaunch
from runner.schema.plan import ClientSpec, LoadSpec, SweepPlan, WorkloadSpec
from runner.schema.result import PointResult
from runner.sweep import run_plan
from tests.runner.engine.test_engine import processes_marked

pytestmark = pytest.mark.engine

OUTPUT_TOKENS = 64
BURST = 64


def cpu_plan(model_dir: Path, configs: list[EngineConfig], *, replicas: int = 1) -> SweepPlan:
    return SweepPlan(
        name="test",
        checkpoint=Checkpoint(model=str(model_dir), served_model_name="tiny"),
        launch=EngineLaunch(style="cpu", startup_timeout_s=300),
        engine_configs=configs,
        loads=[LoadSpec(shape="burst", num_requests=BURST)],
        workload=WorkloadSpec(input_tokens_min=20, input_tokens_max=24, output_tokens=OUTPUT_TOKENS),
        client=ClientSpec(request_timeout_s=120, stall_timeout_s=60),
        replicas=replicas,
        sample_interval_s=0.25,
    )


@pytest.fixture(scope="session")
def seqs_run(tiny_model: Path, tmp_path_factory) -> tuple[list[PointResult], list[float]]:
    """The sweep's points and its engine starts; a CPU engine's plan ends with the end control
    (max_num_seqs 4 started again: one start more)."""
    plan = cpu_plan(tiny_model, [EngineConfig(max_num_seqs=4), EngineConfig(max_num_seqs=32)])
    assert plan.stability.end_control
    workdir = tmp_path_factory.mktemp("sweep")
    starts: list[float] = []
    points = list(run_plan(plan, workdir, on_engine_started=starts.append))
    return points, starts


@pytest.fixture(scope="session")
def seqs_sweep(seqs_run) -> dict[int, PointResult]:
    return {p.engine_config.max_num_seqs: p for p in seqs_run[0] if not p.end_control}


def test_the_end_control_measures_the_first_config_again_on_a_fresh_engine(seqs_run):
    points, starts = seqs_run
    assert len(starts) == 3  # seqs=4, seqs=32, then seqs=4 again
    first, end = points[0], points[-1]
    assert [p.end_control for p in points] == [False, False, True]
    assert (end.engine_config, end.load) == (first.engine_config, first.load)
    assert end.metrics.valid and end.metrics.completed == BURST
    drift = noise.run_noise([from_point_result(p) for p in points]).end_drift
    assert drift is not None and (drift.first_key, drift.control_key) == (first.key, end.key)
    assert drift.change_pct == pytest.approx(
        (end.metrics.output_throughput / first.metrics.output_throughput - 1) * 100)


def test_more_admitted_sequences_raise_output_throughput(seqs_sweep):
    assert seqs_sweep[32].metrics.output_throughput > seqs_sweep[4].metrics.output_throughput


def test_the_small_engine_keeps_requests_waiting_while_running_stays_at_its_cap(seqs_sweep):
    samples = [s for s in seqs_sweep[4].samples if s.running is not None]
    assert max(s.waiting for s in samples) > 0
    assert max(s.running for s in samples) == 4
    # While requests wait the engine never runs more than its cap, and it does reach it. (A
    # scrape can land between one request finishing and the next being admitted, and on a
    # starved 2-core host the sampler may catch only a few busy moments.)
    busy = [s for s in samples if s.waiting and s.waiting > 0]
    assert busy and all(s.running <= 4 for s in busy)
    assert any(s.running == 4 for s in busy)
    assert seqs_sweep[4].queue.peak_waiting > 0


def test_every_request_reaches_max_tokens(seqs_sweep):
    for point in seqs_sweep.values():
        assert point.metrics.valid, point.metrics
        assert point.metrics.completed == BURST
        assert all(r.output_tokens == OUTPUT_TOKENS for r in point.requests)


def test_aggregates_match_an_independent_recomputation(seqs_sweep):
    for point in seqs_sweep.values():
        requests = point.requests
        # vLLM's duration: the benchmark's start (the point's t0, 0 on its clock) to the last end.
        assert min(r.actual_send for r in requests) >= 0
        end = max(r.completed_at for r in requests)
        tokens = sum(r.output_tokens for r in requests)
        metrics = point.metrics
        assert metrics.total_output_tokens == tokens
        assert metrics.duration == pytest.approx(end)
        assert metrics.output_throughput == pytest.approx(tokens / end)
        ttft_ms = np.array([r.ttft for r in requests]) * 1000
        e2el_ms = np.array([r.e2el for r in requests]) * 1000
        assert metrics.median_ttft_ms == pytest.approx(np.median(ttft_ms))
        assert metrics.p99_e2el_ms == pytest.approx(np.percentile(e2el_ms, 99))
        tpot_ms = (e2el_ms - ttft_ms) / (OUTPUT_TOKENS - 1)
        assert metrics.mean_tpot_ms == pytest.approx(tpot_ms.mean())


def test_provenance_records_engine_and_host(seqs_sweep):
    provenance = seqs_sweep[4].provenance
    assert provenance.engine.launch_style == "cpu"
    assert provenance.engine.version
    assert provenance.engine.num_gpu_blocks
    assert provenance.hardware.host
    assert provenance.checkpoint.served_model_name == "tiny"


def test_two_replicas_share_one_common_window(tiny_model, tmp_path):
    plan = cpu_plan(tiny_model, [EngineConfig(max_num_seqs=16)], replicas=2)
    (point,) = list(run_plan(plan, tmp_path))
    assert point.replicas == 2 and len(point.per_replica) == 2
    starts = [r.window.start for r in point.per_replica]
    ends = [r.window.end for r in point.per_replica]
    assert point.window.start == pytest.approx(min(starts))
    assert point.window.end == pytest.approx(max(ends))
    tokens = sum(r.metrics.total_output_tokens for r in point.per_replica)
    assert point.metrics.total_output_tokens == tokens == 2 * BURST * OUTPUT_TOKENS
    assert point.metrics.output_throughput == pytest.approx(tokens / point.window.seconds)
    summed_rates = sum(r.metrics.output_throughput for r in point.per_replica)
    assert point.metrics.output_throughput <= summed_rates


def test_killing_the_runner_mid_point_leaves_no_engine_behind(tiny_model, tmp_path):
    out = tmp_path / "killed.jsonl"
    command = [
        sys.executable, "-m", "runner", "bench",
        "--model", str(tiny_model), "--served-model-name", "tiny",
        "--max-num-seqs", "4", "--num-requests", "256",
        "--input-tokens", "20-24", "--output-tokens", "128",
        "--out", str(out), "--workdir", str(tmp_path / "work"),
    ]  # fmt: skip
    # Every process the runner starts inherits this marker: the engine, its EngineCore (which
    # renames itself, so its command line would not tell), a guard.
    marker = f"headroom-test-{uuid.uuid4()}"
    env = {**os.environ, "HEADROOM_TEST_MARKER": marker}
    runner = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_requests_in_flight(tmp_path / "work", timeout=300)
        assert processes_marked(marker), "the engine should be running before the kill"
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=10)
        deadline = time.monotonic() + 30
        while processes_marked(marker) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert processes_marked(marker) == []
    finally:
        if runner.poll() is None:
            runner.kill()


def _wait_for_requests_in_flight(workdir: Path, timeout: float) -> None:
    """Wait until the engine log shows it serving completions."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for log in workdir.glob("logs/**/*.log"):
            if "/v1/completions" in log.read_text(errors="replace"):
                time.sleep(1.0)
                return
        time.sleep(0.5)
    raise AssertionError("the engine never started serving")
