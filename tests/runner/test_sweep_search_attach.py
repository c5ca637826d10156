"""An adaptive sweep through run_plan and `python -m runner sweep --search`, against a small
local server (attach mode): the steps on every point, the record beside the results, resume."""

from __future__ import annotations

import pytest

from runner import sweep
from runner.cli.parser import main
from runner.results import read_points
from runner.schema.engine_config import EngineConfig
from runner.schema.plan import SweepPlan
from runner.schema.search_record import SearchRecord, SearchSpec
from runner.sweep import run_plan

from .test_sweep_attach import attach_plan, fake_starts, served_plan, write_plan

LOADS = [2, 4, 8, 16, 32]


def test_a_search_from_the_cli_steps_every_point_and_writes_its_record(fake_vllm, tmp_path):
    plan = write_plan(tmp_path, attach_plan(fake_vllm.base_url, LOADS))
    out = tmp_path / "results.jsonl"
    assert main(["sweep", str(plan), "--out", str(out), "--search", "knee"]) == 0

    points = read_points(out).points
    steps = [p.search for p in points]
    assert all(steps) and [s.order for s in steps if s] == list(range(1, len(points) + 1))
    assert points[0].load.num_requests == 32 and steps[0] and steps[0].phase == "probe"
    record = SearchRecord.model_validate_json((tmp_path / "results.search.json").read_text())
    assert record.finished and record.points_measured == len(points)
    assert [c.status for c in record.cells] == ["searched"]


def test_a_resumed_search_reads_its_points_and_sends_only_the_rest(fake_vllm, tmp_path):
    plan = attach_plan(fake_vllm.base_url, LOADS).model_copy(update={"search": SearchSpec()})
    out = tmp_path / "results.jsonl"
    sweep = run_plan(plan, tmp_path / "first")
    first = [next(sweep), next(sweep)]  # the search dies after two points
    sweep.close()
    out.write_text("".join(p.model_dump_json() + "\n" for p in first))
    sent_before = len(fake_vllm.requests)

    assert main(["sweep", str(write_plan(tmp_path, plan)), "--out", str(out), "--resume"]) == 0
    points = read_points(out).points
    keys = [p.key for p in points]
    assert keys[:2] == [p.key for p in first] and len(set(keys)) == len(keys)
    sent = len(fake_vllm.requests) - sent_before
    assert sent == sum(p.load.num_requests for p in points[2:])


def searched_plan(base_url: str) -> SweepPlan:
    """One config on an engine the sweep starts (faked by fake_starts), with the end control."""
    return served_plan(base_url, LOADS).model_copy(update={
        "engine_configs": [EngineConfig(max_num_seqs=8)], "search": SearchSpec()})


def test_a_search_ends_with_its_answer_point_again_on_a_fresh_engine(
    fake_vllm, tmp_path, monkeypatch
):
    started = fake_starts(monkeypatch, fake_vllm)
    records: list[SearchRecord] = []
    points = list(run_plan(searched_plan(fake_vllm.base_url), tmp_path, on_search=records.append))

    assert started == ["seqs=8", "seqs=8"]
    *searching, end = points
    assert not any(p.end_control for p in searching) and end.end_control
    answer = records[-1].cells[0].answer
    at = next(p for p in searching if p.metrics.output_throughput == answer)
    assert (end.engine_config, end.load, end.repeat) == (at.engine_config, at.load, 2)  # plan.repeats + 1
    assert end.search is not None and end.search.phase == "control"
    assert end.search.order == len(points)
    assert end.notes[-1] == ("end control: the search's answer point measured again on a fresh "
                             "engine start after the search")
    assert records[-1].points_measured == len(points)
    assert records[-1].end_control_s > 0

    # A resumed run that holds every point, the end control's too, starts nothing more.
    started.clear()
    out = tmp_path / "results.jsonl"
    out.write_text("".join(p.model_dump_json() + "\n" for p in points))
    plan = write_plan(tmp_path, searched_plan(fake_vllm.base_url))
    assert main(["sweep", str(plan), "--out", str(out), "--resume"]) == 0
    assert started == []


def test_a_failed_end_control_start_keeps_the_searchs_points_and_says_after_the_search(
    fake_vllm, tmp_path, monkeypatch
):
    started = fake_starts(monkeypatch, fake_vllm, fail=(1,))
    points = []
    with pytest.raises(sweep.EndControlMissed,
                       match=r"end control \(seqs=8 started again after the search\): engine "
                             "exited with code 1"):
        for point in run_plan(searched_plan(fake_vllm.base_url), tmp_path):
            points.append(point)
    assert started == ["seqs=8", "seqs=8 (failed)"]
    assert points and not any(p.end_control for p in points)
