"""A capacity plan checked against a real vLLM CPU engine, the whole command-line path: measure
a rate ladder, plan with `python -m analysis capacity`, run the check plan it writes, judge the
check. One engine start: the ladder and the check both attach to it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from analysis.capacity_cli import EXIT_CHECK_MISSED, main
from runner.results import append_point, read_points
from runner.schema.engine_config import Checkpoint, EngineConfig, EngineLaunch
from runner.schema.plan import ClientSpec, LoadSpec, StabilitySpec, SweepPlan, WorkloadSpec
from runner.sweep import run_plan

pytestmark = pytest.mark.engine

CONFIG = EngineConfig(max_num_seqs=4)
REQUESTS = 24
RATES = (2.0, 6.0, 18.0)


def ladder(base_url: str) -> SweepPlan:
    return SweepPlan(
        name="capacity ladder", checkpoint=Checkpoint(model="tiny"),
        launch=EngineLaunch(style="attach", base_url=base_url), engine_configs=[CONFIG],
        loads=[LoadSpec(shape="rate", rate=rate, num_requests=REQUESTS) for rate in RATES],
        workload=WorkloadSpec(kind="random", input_tokens_min=16, input_tokens_max=20,
                              output_tokens=16),
        client=ClientSpec(request_timeout_s=120, stall_timeout_s=60), sample_interval_s=0.1,
        stability=StabilitySpec(redraw_disturbed=0, control_point=False))


def measure(plan: SweepPlan, out: Path, workdir: Path) -> None:
    for point in run_plan(plan, workdir):
        append_point(out, point)


def test_the_promised_rate_is_loaded_on_the_engine_and_judged(cpu_engine, tmp_path, capsys):
    engine = cpu_engine(CONFIG)
    source = ladder(engine.base_url)
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(source.model_dump(mode="json")))
    results = tmp_path / "results.jsonl"
    measure(source, results, tmp_path / "ladder")
    lowest = min(read_points(results).points, key=lambda p: p.load.rate or 0)
    # A target the lowest level meets with room (twice its own p95 E2EL), so some level holds.
    target = 2 * (lowest.metrics.p95_e2el_ms or 0)
    args = ["capacity", str(results), "--rate", "4", "--slo", f"e2el:p95:{target:.0f}"]
    assert main([*args, "--json", "--verify-plan", str(tmp_path / "check.yaml"),
                 "--from-plan", str(tmp_path / "sweep.yaml"), "--repeats", "2"]) == 0
    plan = json.loads(capsys.readouterr().out)["plan"]
    (config,) = plan["configs"]
    check = SweepPlan.model_validate(yaml.safe_load((tmp_path / "check.yaml").read_text()))
    # The share, then the level that measured the capacity again, for the engine's speed.
    capacity_rate = config["capacity"]["rate"]
    assert [(load.shape, load.rate) for load in check.loads] == [
        ("rate", config["share"]), ("rate", capacity_rate)]
    assert check.launch.base_url == engine.base_url and check.repeats == 2

    measure(check, tmp_path / "check.jsonl", tmp_path / "check")
    measured = read_points(tmp_path / "check.jsonl").points
    assert sorted(p.load.rate for p in measured) == [config["share"]] * 2 + [capacity_rate] * 2
    assert all(p.metrics.valid for p in measured)
    status = main([*args, "--verified", str(tmp_path / "check.jsonl")])
    out = capsys.readouterr().out
    at_share = [p for p in measured if p.load.rate == config["share"]]
    held = all(p.metrics.p95_e2el_ms is not None and p.metrics.p95_e2el_ms <= round(target)
               for p in at_share)
    # The exit status is what the check measured at the share: 0 when every draw met the target.
    assert status == (0 if held else EXIT_CHECK_MISSED)
    assert "Loaded at" in out
    assert f"The capacity level ({config['capacity']['load_label']}), loaded again" in out
    print(f"ladder p95 E2EL ms: {[p.metrics.p95_e2el_ms for p in read_points(results).points]}; "
          f"target {target:.0f}; capacity {config['capacity']['rate']} requests/s, share "
          f"{config['share']:.2f}; check p95 E2EL ms "
          f"{[p.metrics.p95_e2el_ms for p in at_share]}, exit {status}")
