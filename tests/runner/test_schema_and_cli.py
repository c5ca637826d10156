"""Bad plans and flags are refused with a clear message before any engine starts."""

from __future__ import annotations

import os

import pytest
from pydantic import ValidationError

from runner.cli import main, print_summary
from runner.schema import (
    Checkpoint,
    ClientSpec,
    EngineConfig,
    EngineLaunch,
    LoadSpec,
    QueueSummary,
    SweepPlan,
    Window,
)
from runner.sweep import plan_points
from tests.runner.test_results_and_import import make_point

PLAN_YAML = """
name: seqs
checkpoint: {model: var/tiny-model}
engine_configs:
  - {max_num_seqs: 4}
  - {max_num_seqs: 32}
loads:
  - {shape: burst, num_requests: 64}
  - {shape: concurrency, concurrency: 8, num_requests: 64}
workload: {input_tokens_min: 20, input_tokens_max: 24, output_tokens: 32}
repeats: 2
"""


def test_it_rejects_unknown_engine_flag():
    with pytest.raises(ValidationError, match="unknown engine flag --max-num-seq"):
        EngineConfig(extra_args=["--max-num-seq", "8"])


def test_it_rejects_a_named_flag_passed_as_extra():
    with pytest.raises(ValidationError, match="has its own field"):
        EngineConfig(extra_args=["--max-num-seqs=8"])


def test_it_rejects_negative_max_num_seqs():
    with pytest.raises(ValidationError, match="greater than 0"):
        EngineConfig(max_num_seqs=-1)


def test_it_rejects_batched_tokens_below_max_num_seqs():
    with pytest.raises(ValidationError, match="vLLM refuses to start"):
        EngineConfig(max_num_seqs=512, max_num_batched_tokens=256)


def test_it_rejects_a_revision_that_is_not_a_commit():
    with pytest.raises(ValidationError, match="40-hex"):
        Checkpoint(model="Qwen/Qwen3-30B-A3B", revision="main")
    assert Checkpoint(model="m", revision="a" * 40).revision == "a" * 40


def test_attach_and_docker_styles_need_their_address_and_image():
    with pytest.raises(ValidationError, match="base_url"):
        EngineLaunch(style="attach")
    with pytest.raises(ValidationError, match="image"):
        EngineLaunch(style="docker")


def test_it_orders_points_per_config_by_rising_load_then_repeat():
    plan = SweepPlan(
        checkpoint=Checkpoint(model="m"),
        engine_configs=[EngineConfig(max_num_seqs=4), EngineConfig(max_num_seqs=32)],
        loads=[LoadSpec(num_requests=64), LoadSpec(shape="concurrency", concurrency=8, num_requests=64)],
        repeats=2,
    )
    keys = [p.key for p in plan_points(plan)]
    assert keys[:4] == [
        "seqs=4|concurrency 8 x 64|r0",
        "seqs=4|concurrency 8 x 64|r1",
        "seqs=4|burst 64|r0",
        "seqs=4|burst 64|r1",
    ]
    assert len(keys) == len(set(keys)) == 8


def test_dry_run_prints_the_plan_without_starting_anything(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # rich would fold the table at pytest's width
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN_YAML)
    assert main(["sweep", str(plan), "--out", str(tmp_path / "r.jsonl"), "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert "seqs=32|burst 64|r1" in printed
    assert not (tmp_path / "r.jsonl").exists()


def test_a_bad_plan_gets_one_clear_line_and_exit_status_2(tmp_path, capsys):
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN_YAML.replace("max_num_seqs: 4", "max_num_seqs: four"))
    assert main(["sweep", str(plan), "--out", str(tmp_path / "r.jsonl"), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "engine_configs.0.max_num_seqs" in err


def test_a_plan_that_is_not_yaml_is_named(tmp_path, capsys):
    plan = tmp_path / "plan.yaml"
    plan.write_text("checkpoint: [unclosed")
    assert main(["sweep", str(plan), "--out", str(tmp_path / "r.jsonl")]) == 2
    assert "not valid YAML" in capsys.readouterr().err


def test_bench_refuses_an_unknown_engine_flag_before_starting_an_engine(tmp_path, capsys):
    status = main(
        [
            "bench",
            "--model",
            "var/tiny-model",
            "--engine-arg=--no-such-flag",
            "--out",
            str(tmp_path / "r.jsonl"),
        ]
    )
    assert status == 2
    assert "unknown engine flag --no-such-flag" in capsys.readouterr().err


def test_bench_refuses_client_cpus_this_host_does_not_have_before_starting_an_engine(
    tmp_path, capsys
):
    out = tmp_path / "r.jsonl"
    missing = str(max(os.sched_getaffinity(0)) + 1)
    assert main(["bench", "--model", "var/tiny-model", "--client-cpus", missing, "--out", str(out)]) == 2
    assert f"client cpus [{missing}] are not available here" in capsys.readouterr().err
    assert main(["bench", "--model", "var/tiny-model", "--client-cpus", "one", "--out", str(out)]) == 2
    assert "--client-cpus takes CPU numbers" in capsys.readouterr().err
    assert not out.exists()


def test_client_cpus_must_be_distinct_and_not_negative():
    with pytest.raises(ValidationError, match="distinct CPU numbers"):
        ClientSpec(cpus=[1, 1])
    with pytest.raises(ValidationError, match="distinct CPU numbers"):
        ClientSpec(cpus=[-1])


def test_node_needs_at_least_two_replicas(tmp_path, capsys):
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN_YAML)
    assert main(["node", str(plan), "--replicas", "1", "--out", str(tmp_path / "n.jsonl")]) == 2
    assert "at least 2" in capsys.readouterr().err


def test_import_of_a_foreign_file_is_refused_with_its_name(tmp_path, capsys):
    foreign = tmp_path / "notes.json"
    foreign.write_text('{"title": "meeting notes"}')
    status = main(["import-vllm-bench", str(foreign), "--out", str(tmp_path / "i.jsonl")])
    assert status == 2
    assert "notes.json: not a vllm bench serve result" in capsys.readouterr().err


def test_the_summary_says_why_a_point_has_no_queue_figures(capsys):
    # A 0.4 s point that fell between two scrapes, and a 2 s point that was sampled.
    unsampled = make_point(4).model_copy(
        update={"window": Window(start=0.0, end=0.4), "queue": QueueSummary(max_gap_s=0.4)}
    )
    sampled = make_point(32).model_copy(
        update={"window": Window(start=0.0, end=2.0), "queue": QueueSummary(samples=4)}
    )

    print_summary([unsampled, sampled])

    out = capsys.readouterr().out
    assert "seqs=4|burst 8|r0: no /metrics sample fell inside its 0.40 s window" in out
    assert "seqs=32|burst 8|r0:" not in out
