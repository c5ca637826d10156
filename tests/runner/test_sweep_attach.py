"""The sweep path end to end against a small local server (attach mode): resume, bad servers.

Real engines cannot misbehave on demand; tests/runner/test_sweep_engine.py covers real ones.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

import pytest

from runner import sweep
from runner.cli.parser import main
from runner.engine.command import EngineError
from runner.engine.process import RunningEngine
from runner.results import read_points
from runner.schema.engine_config import Checkpoint, EngineConfig, EngineLaunch
from runner.schema.plan import ClientSpec, LoadSpec, StabilitySpec, SweepPlan, WorkloadSpec
from runner.schema.result import EngineInfo
from runner.sweep import run_plan
from tests.runner.measure.test_sampler import UNREADABLE_PAGE


def attach_plan(base_url: str, loads: list[int]) -> SweepPlan:
    return SweepPlan(
        name="attach",
        checkpoint=Checkpoint(model="fake-model"),
        launch=EngineLaunch(style="attach", base_url=base_url),
        engine_configs=[EngineConfig()],
        loads=[LoadSpec(num_requests=n) for n in loads],
        workload=WorkloadSpec(kind="random", input_tokens_min=8, input_tokens_max=12, output_tokens=16),
        client=ClientSpec(request_timeout_s=10, stall_timeout_s=2),
        sample_interval_s=0.1,
    )


def write_plan(tmp_path: Path, plan: SweepPlan) -> Path:
    path = tmp_path / "plan.json"
    path.write_text(plan.model_dump_json())
    return path


def test_a_finished_sweep_is_all_valid_and_on_disk(fake_vllm, tmp_path):
    plan = write_plan(tmp_path, attach_plan(fake_vllm.base_url, [4, 8]))
    out = tmp_path / "results.jsonl"
    assert main(["sweep", str(plan), "--out", str(out)]) == 0
    points = read_points(out).points
    # The first level again at the end: the control point, the repeat after the last.
    assert [(p.load.num_requests, p.repeat, p.control) for p in points] == [
        (4, 0, False), (8, 0, False), (4, 1, True)]
    assert all(p.metrics.valid and p.metrics.total_output_tokens == p.load.num_requests * 16 for p in points)
    assert points[0].provenance.engine.launch_style == "attach"
    # An attached server's processes are not this runner's: the host is read, never judged.
    assert points[0].host is not None and points[0].host.engine_s is None
    assert not points[0].host.disturbed


def test_no_control_point_leaves_the_ladder_as_planned(fake_vllm, tmp_path):
    plan = write_plan(tmp_path, attach_plan(fake_vllm.base_url, [4, 8]))
    out = tmp_path / "results.jsonl"
    assert main(["sweep", str(plan), "--out", str(out), "--no-control-point"]) == 0
    assert [p.load.num_requests for p in read_points(out).points] == [4, 8]


def test_resume_runs_only_the_points_missing_from_the_file(fake_vllm, tmp_path):
    plan = attach_plan(fake_vllm.base_url, [4, 8])
    out = tmp_path / "results.jsonl"
    # A sweep that dies after its first point: that point is already in the file.
    sweep = run_plan(plan, tmp_path)
    first = next(sweep)
    sweep.close()
    out.write_text(first.model_dump_json() + "\n")
    sent_before = len(fake_vllm.requests)

    assert main(["sweep", str(write_plan(tmp_path, plan)), "--out", str(out), "--resume"]) == 0

    # Only the burst of 8 and the control point (the burst of 4 again) ran.
    assert len(fake_vllm.requests) - sent_before == 8 + 4
    assert [p.load.num_requests for p in read_points(out).points] == [4, 8, 4]


def test_a_server_answering_500_gives_an_invalid_point_with_error_records(fake_vllm, tmp_path):
    fake_vllm.mode = "http_500"
    (point,) = list(run_plan(attach_plan(fake_vllm.base_url, [4]), tmp_path))
    assert point.metrics.failed == 4 and not point.metrics.valid
    assert all(r.status == 500 and r.error for r in point.requests)


def test_a_metrics_page_of_nan_infinities_and_bad_labels_costs_figures_not_the_sweep(
    fake_vllm, tmp_path
):
    fake_vllm.metrics_page = UNREADABLE_PAGE
    fake_vllm.interval_s = 0.03  # half a second a point: several samples land inside it
    points = list(run_plan(attach_plan(fake_vllm.base_url, [4, 8]), tmp_path))
    assert [p.load.num_requests for p in points] == [4, 8, 4]  # the last: the control point
    for point in points:
        json.dumps(point.queue.model_dump(mode="json"), allow_nan=False)  # storable
        assert point.queue.mean_running == 3
        assert any(note.startswith("the engine's /metrics held values that are no figures")
                   and "position='first'" in note for note in point.notes)


def test_a_stalled_stream_ends_as_an_error_record_within_the_stall_timeout(fake_vllm, tmp_path):
    fake_vllm.mode = "stall"
    (point,) = list(run_plan(attach_plan(fake_vllm.base_url, [2]), tmp_path))
    assert point.metrics.failed == 2
    assert point.metrics.duration < 10
    assert all("stall" in r.error for r in point.requests)


def test_an_unreachable_endpoint_is_a_clear_error_not_a_hang(tmp_path, capsys):
    plan = write_plan(tmp_path, attach_plan("http://127.0.0.1:9", [2]))
    status = main(["sweep", str(plan), "--out", str(tmp_path / "r.jsonl")])
    assert status != 0
    assert "127.0.0.1:9" in capsys.readouterr().err


def test_each_config_reports_the_start_of_its_slowest_replica(fake_vllm, tmp_path, monkeypatch):
    # Two configs of two replicas "started" here (they are the fake server), in these times.
    start_times = [[12.0, 30.0], [20.0, 8.0]]

    @contextmanager
    def started(launch, checkpoint, config, *, replicas, log_dir, credentials):
        yield [RunningEngine(replica=i, base_url=fake_vllm.base_url, served_model="fake-model",
                             info=EngineInfo(launch_style="serve"), start_s=seconds)
               for i, seconds in enumerate(start_times.pop(0))]

    monkeypatch.setattr(sweep, "engines", started)
    plan = attach_plan(fake_vllm.base_url, [4]).model_copy(update={
        "launch": EngineLaunch(style="serve"), "replicas": 2,
        "engine_configs": [EngineConfig(max_num_seqs=8), EngineConfig(max_num_seqs=16)]})
    reported: list[float] = []
    assert len(list(run_plan(plan, tmp_path, on_engine_started=reported.append))) == 2
    assert reported == [30.0, 20.0]


def test_an_attached_server_reports_no_engine_start(fake_vllm, tmp_path):
    reported: list[float] = []
    list(run_plan(attach_plan(fake_vllm.base_url, [4]), tmp_path, on_engine_started=reported.append))
    assert reported == []


def served_plan(base_url: str, loads: list[int]) -> SweepPlan:
    """Two configs on engines the sweep starts (faked by fake_starts), with the end control."""
    return attach_plan(base_url, loads).model_copy(update={
        "launch": EngineLaunch(style="serve"),
        "engine_configs": [EngineConfig(max_num_seqs=8), EngineConfig(max_num_seqs=16)],
        "stability": StabilitySpec(end_control=True)})


def fake_starts(monkeypatch, fake_vllm, fail: tuple[int, ...] = ()) -> list[str]:
    """Engine starts that are the fake server; the starts numbered in fail (from 0) fail as a
    real one does, with EngineError. Returns the configs started, in order."""
    started: list[str] = []

    @contextmanager
    def engines(launch, checkpoint, config, *, replicas, log_dir, credentials):
        if len(started) in fail:
            started.append(f"{config.label()} (failed)")
            raise EngineError("engine exited with code 1 before /health answered")
        started.append(config.label())
        yield [RunningEngine(replica=0, base_url=fake_vllm.base_url, served_model="fake-model",
                             info=EngineInfo(launch_style="serve"), start_s=1.0)]

    monkeypatch.setattr(sweep, "engines", engines)
    return started


def test_the_end_control_starts_the_first_config_again_after_the_last(
    fake_vllm, tmp_path, monkeypatch
):
    started = fake_starts(monkeypatch, fake_vllm)
    plan = served_plan(fake_vllm.base_url, [4, 8])
    points = list(run_plan(plan, tmp_path))
    assert started == ["seqs=8", "seqs=16", "seqs=8"]
    assert [(p.engine_config.max_num_seqs, p.load.num_requests, p.repeat, p.control,
             p.end_control) for p in points] == [
        (8, 4, 0, False, False), (8, 8, 0, False, False), (8, 4, 1, True, False),
        (16, 4, 0, False, False), (16, 8, 0, False, False), (16, 4, 1, True, False),
        (8, 4, 2, False, True)]
    assert points[-1].notes[-1].startswith("end control: the first config's first load level")
    # A resumed run that already holds it starts nothing for it.
    started.clear()
    assert list(run_plan(plan, tmp_path, skip_keys=frozenset(p.key for p in points))) == []
    assert started == []


def test_a_failed_end_control_start_keeps_every_point_and_ends_the_sweep(
    fake_vllm, tmp_path, monkeypatch, capsys
):
    started = fake_starts(monkeypatch, fake_vllm, fail=(2,))
    plan = served_plan(fake_vllm.base_url, [4])
    points = []
    with pytest.raises(sweep.EndControlMissed, match=r"end control \(seqs=8 started again"):
        for point in run_plan(plan, tmp_path):
            points.append(point)
    assert started == ["seqs=8", "seqs=16", "seqs=8 (failed)"]
    assert [p.engine_config.max_num_seqs for p in points] == [8, 16]
    assert not any(p.end_control for p in points)

    # The command line keeps them too, says what was not measured, and calls the sweep done.
    fake_starts(monkeypatch, fake_vllm, fail=(2,))
    out = tmp_path / "results.jsonl"
    assert main(["sweep", str(write_plan(tmp_path, plan)), "--out", str(out)]) == 0
    assert [p.engine_config.max_num_seqs for p in read_points(out).points] == [8, 16]
    assert "not measured: end control (seqs=8 started again after the last config): engine " \
           "exited with code 1" in capsys.readouterr().err


def test_a_failed_config_and_a_failed_end_control_are_both_named(
    fake_vllm, tmp_path, monkeypatch
):
    # seqs=16's start fails, then the end control's (seqs=8 again, the fourth start).
    started = fake_starts(monkeypatch, fake_vllm, fail=(1, 3))
    plan = served_plan(fake_vllm.base_url, [4]).model_copy(update={"engine_configs": [
        EngineConfig(max_num_seqs=8), EngineConfig(max_num_seqs=16), EngineConfig(max_num_seqs=32)]})
    points = []
    with pytest.raises(sweep.SweepIncomplete) as raised:
        for point in run_plan(plan, tmp_path):
            points.append(point)
    assert started == ["seqs=8", "seqs=16 (failed)", "seqs=32", "seqs=8 (failed)"]
    assert raised.value.failures == [
        "seqs=16: engine exited with code 1 before /health answered",
        "end control (seqs=8 started again after the last config): engine exited with code 1 "
        "before /health answered"]
    assert [p.engine_config.max_num_seqs for p in points] == [8, 32]


def test_no_end_control_is_started_when_the_first_config_measured_nothing(
    fake_vllm, tmp_path, monkeypatch
):
    started = fake_starts(monkeypatch, fake_vllm, fail=(0,))
    with pytest.raises(sweep.SweepIncomplete):
        list(run_plan(served_plan(fake_vllm.base_url, [4]), tmp_path))
    assert started == ["seqs=8 (failed)", "seqs=16"]
