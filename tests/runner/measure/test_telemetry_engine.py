"""The CPU engine's CPU use per point, measured for real beside the queue sampler.

One point of the sweep's own measuring step (runner.sweep._measure_point) on the shared CPU
engine (tests/runner/conftest.py), so no engine is started for this file alone.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from runner.schema.engine_config import EngineConfig, EngineLaunch
from runner.schema.plan import ClientSpec, LoadSpec, SweepPlan, WorkloadSpec
from runner.schema.result import PointResult
from runner.sweep import _build_prompts, _measure_point, _PointContext, plan_points

pytestmark = pytest.mark.engine

CONFIG = EngineConfig(max_num_seqs=4, max_model_len=1024)  # the engine test_engine.py shares


def group_cpu_seconds(group: int) -> float:
    """User + system seconds of the live processes of a process group, from /proc directly."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # Fields after the command name, which is in parentheses and may hold spaces.
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == group:  # pgrp
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


@pytest.fixture(scope="module")
def measured(cpu_engine, tiny_checkpoint) -> tuple[PointResult, float, float]:
    engine = cpu_engine(CONFIG)
    plan = SweepPlan(
        name="telemetry",
        checkpoint=tiny_checkpoint,
        launch=EngineLaunch(style="cpu"),
        engine_configs=[CONFIG],
        loads=[LoadSpec(shape="burst", num_requests=8)],
        # Two waves of 256 tokens behind 4 sequences: a second or more even on a fast host, so
        # readings every 0.1 s land inside the window, not only at its edges.
        workload=WorkloadSpec(input_tokens_min=20, input_tokens_max=24, output_tokens=256),
        client=ClientSpec(request_timeout_s=120, stall_timeout_s=60),
        sample_interval_s=0.1,
    )
    context = _PointContext(plan, plan_points(plan)[0], 0, 1, lambda progress: None)
    prompts = _build_prompts(plan, engine, None)
    point = _measure_point(context, [engine], prompts, threading.Event())
    assert engine.process_group is not None
    return point, group_cpu_seconds(engine.process_group), os.cpu_count() or 1


def test_a_cpu_engine_point_records_its_processes_cpu_use_labelled_cpu(measured):
    point, _, cores = measured
    summary = point.telemetry
    assert summary.source == "psutil" and summary.gpus == []
    assert summary.energy_j is None and summary.joules_per_output_token is None
    [cpu] = summary.cpu
    assert cpu.replica == 0 and cpu.samples >= 1
    assert point.window is not None and summary.window_s == pytest.approx(point.window.seconds)
    # Generating 8 x 256 tokens keeps the engine busy; never more cores than the host has.
    assert 0.2 < cpu.mean_cores_busy <= cores + 0.5
    assert cpu.mean_cores_busy == pytest.approx(cpu.cpu_seconds / point.window.seconds)
    assert summary.mean_cores_busy == cpu.mean_cores_busy
    assert any("no GPU telemetry was taken" in note for note in summary.notes)


def test_the_readings_cover_the_window_on_the_queue_samples_clock(measured):
    point, _, _ = measured
    times = [s.t for s in point.telemetry_samples]
    assert times == sorted(times) and all(s.gpu is None for s in point.telemetry_samples)
    # Started before the load and read once more after it: both edges are covered, so the
    # CPU seconds are a difference over exactly the window.
    assert times[0] <= 0.0 and times[-1] >= point.window.end
    queue_times = [s.t for s in point.samples]
    assert queue_times[0] <= 0.0 and abs(queue_times[0] - times[0]) < 1.0


def test_the_running_total_agrees_with_the_kernels_own_count(measured):
    point, proc_total, _ = measured
    last = point.telemetry_samples[-1].cpu_seconds
    # /proc was read just after the point: it can only be ahead of the sampler's last total
    # (by what the engine used since), never behind it by more than a clock tick.
    assert last - 0.02 <= proc_total < last + 3.0
