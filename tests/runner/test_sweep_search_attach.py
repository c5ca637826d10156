"""An adaptive sweep through run_plan and `python -m runner sweep --search`, against a small
local server (attach mode): the steps on every point, the record beside the results, resume."""

from __future__ import annotations

from runner.cli.parser import main
from runner.results import read_points
from runner.schema.search_record import SearchRecord, SearchSpec
from runner.sweep import run_plan

from .test_sweep_attach import attach_plan, write_plan

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
