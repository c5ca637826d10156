"""The sweep path end to end against a small local server (attach mode): resume, bad servers.

Real engines cannot misbehave on demand; tests/runner/test_sweep_engine.py covers real ones.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

from runner import sweep
from runner.cli.parser import main
from runner.engine.process import RunningEngine
from runner.results import read_points
from runner.schema.engine_config import Checkpoint, EngineConfig, EngineLaunch
from runner.schema.plan import ClientSpec, LoadSpec, SweepPlan, WorkloadSpec
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
