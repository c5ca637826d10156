"""Bad plans and flags are refused with a clear message before any engine starts."""

from __future__ import annotations

import os

import pytest
from pydantic import ValidationError

from runner.cli.commands import load_plan, plan_from_bench_args, validate_plan, with_stability_args
from runner.cli.parser import build_parser, main
from runner.measure.summary import print_summary
from runner.schema.engine_config import Checkpoint, EngineConfig, EngineLaunch
from runner.schema.plan import ClientSpec, LoadSpec, StabilitySpec, SweepPlan
from runner.schema.result import Window
from runner.schema.samples import QueueSummary
from runner.schema.search_record import SearchSpec
from runner.sweep import plan_points
from tests.runner.importer.test_results_and_import import make_point

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


def test_it_interleaves_repeats_and_ends_each_config_with_its_control_point():
    plan = SweepPlan(
        checkpoint=Checkpoint(model="m"),
        engine_configs=[EngineConfig(max_num_seqs=4), EngineConfig(max_num_seqs=32)],
        loads=[LoadSpec(num_requests=64), LoadSpec(shape="concurrency", concurrency=8, num_requests=64)],
        repeats=2,
    )
    points = plan_points(plan)
    keys = [p.key for p in points]
    # Every level once, then every level again: a slow spell touches both levels alike.
    assert keys[:5] == [
        "seqs=4|concurrency 8 x 64|r0",
        "seqs=4|burst 64|r0",
        "seqs=4|concurrency 8 x 64|r1",
        "seqs=4|burst 64|r1",
        "seqs=4|concurrency 8 x 64|r2",
    ]
    assert [p.control for p in points[:5]] == [False, False, False, False, True]
    # A CPU engine's plan ends with the end control: the first config's first level, numbered
    # after its control point.
    assert keys[-1] == "seqs=4|concurrency 8 x 64|r3" and points[-1].end_control
    assert [p.end_control for p in points].count(True) == 1
    assert len(keys) == len(set(keys)) == 11


@pytest.mark.parametrize(("launch", "taken"), [
    ({"style": "cpu"}, True), ({"style": "serve"}, False),
    ({"style": "docker", "image": "vllm/vllm-openai:v0.11.0"}, False),
    ({"style": "attach", "base_url": "http://127.0.0.1:8000"}, False), (None, True)])
def test_a_plan_that_leaves_the_end_control_unset_takes_its_engines_default(launch, taken):
    data = {"checkpoint": {"model": "m"}, "engine_configs": [{"max_num_seqs": 4}],
            "loads": [{"num_requests": 8}], "stability": {"redraw_disturbed": 0},
            **({"launch": launch} if launch else {})}
    plan = SweepPlan.model_validate(data)
    assert plan.stability.end_control is taken
    # Recorded in the plan: read back (run again) on any node, it stays as it was.
    again = SweepPlan.model_validate(plan.model_dump(mode="json"))
    assert again.stability.end_control is taken
    said = SweepPlan.model_validate({**data, "stability": {"end_control": not taken}})
    assert said.stability.end_control is (not taken)


def test_the_end_control_needs_two_configs_or_a_search_and_an_engine_it_starts():
    two = SweepPlan(checkpoint=Checkpoint(model="m"), launch=EngineLaunch(style="serve"),
                    engine_configs=[EngineConfig(max_num_seqs=4), EngineConfig(max_num_seqs=8)],
                    loads=[LoadSpec(num_requests=8)],
                    stability=StabilitySpec(end_control=True))
    assert two.has_end_control
    assert plan_points(two)[-1].key == "seqs=4|burst 8|r2"  # r1 stays the control point's
    one = two.model_copy(update={"engine_configs": [EngineConfig(max_num_seqs=4)]})
    attached = two.model_copy(update={"launch": EngineLaunch(style="attach",
                                                             base_url="http://127.0.0.1:8000")})
    assert not any(plan.has_end_control for plan in (one, attached))
    assert not any(p.end_control for p in plan_points(one) + plan_points(attached))
    # A search's end control is its answer point again, so one config is enough.
    assert one.model_copy(update={"search": SearchSpec()}).has_end_control
    assert not attached.model_copy(update={"search": SearchSpec()}).has_end_control


@pytest.mark.parametrize(("flags", "taken"), [
    ([], True), (["--no-end-control"], False), (["--end-control"], True)])
def test_the_end_control_flags_override_the_plans_setting(tmp_path, flags, taken):
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN_YAML)  # a CPU engine's plan: on unless a flag says
    args = build_parser().parse_args(["sweep", str(path), "--out", "r.jsonl", *flags])
    plan = with_stability_args(load_plan(path), args)
    assert plan.stability.end_control is taken
    assert plan_points(plan)[-1].end_control is taken


def test_a_single_load_level_or_a_plan_that_says_no_gets_no_control_point():
    one_level = SweepPlan(checkpoint=Checkpoint(model="m"), engine_configs=[EngineConfig()],
                          loads=[LoadSpec(num_requests=8)])
    assert [p.control for p in plan_points(one_level)] == [False]
    two_levels = one_level.model_copy(update={
        "loads": [LoadSpec(num_requests=8), LoadSpec(num_requests=16)],
        "stability": StabilitySpec(control_point=False)})
    assert [p.control for p in plan_points(two_levels)] == [False, False]


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


def test_the_client_idle_nap_goes_into_the_plan_off_unless_asked_for():
    assert bench_plan().client.idle_nap_us == 0
    assert bench_plan("--client-idle-nap-us", "150").client.idle_nap_us == 150
    assert bench_plan("--client-idle-nap-us", "1000").client.idle_nap_us == 1000


@pytest.mark.parametrize("value", ["-1", "1000.5", "nan", "inf", "fast"])
def test_it_refuses_a_client_idle_nap_outside_0_to_1000_us(capsys, value):
    assert (
        f"argument --client-idle-nap-us: expected microseconds from 0 to 1000, got '{value}'"
        in refused(capsys, "--client-idle-nap-us", value)
    )
    if value != "fast":  # a plan file refuses the same numbers
        with pytest.raises(ValidationError, match="idle_nap_us"):
            ClientSpec(idle_nap_us=float(value))


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
    assert "notes.json: not a result file Headroom reads" in capsys.readouterr().err


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


def bench_plan(*flags: str) -> SweepPlan:
    """The plan `bench` would run for these flags, without running it."""
    args = build_parser().parse_args(["bench", "--model", "m", "--out", "r.jsonl", *flags])
    return validate_plan(plan_from_bench_args(args), source="command line")


def refused(capsys, *flags: str) -> str:
    """The error argparse gives for these bench flags; it exits with status 2."""
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "--model", "m", "--out", "r.jsonl", "--dry-run", *flags])
    assert exit_.value.code == 2
    return capsys.readouterr().err


def test_goodput_takes_vllms_key_ms_pairs_into_the_plan():
    plan = bench_plan("--goodput", "ttft:500", "tpot:50", "e2el:5000.5")
    assert plan.goodput == {"ttft": 500.0, "tpot": 50.0, "e2el": 5000.5}
    assert bench_plan().goodput == {}


def test_it_refuses_a_goodput_pair_without_a_colon(capsys):
    assert "argument --goodput: expected KEY:MS such as ttft:500, got 'ttft=5'" in refused(
        capsys, "--goodput", "ttft=5"
    )


def test_it_refuses_a_goodput_pair_whose_ms_is_not_a_number(capsys):
    assert "argument --goodput: expected KEY:MS such as ttft:500, got 'ttft:5ms'" in (
        refused(capsys, "--goodput", "ttft:5ms")
    )


def test_it_refuses_an_unknown_goodput_key(capsys):
    err = refused(capsys, "--goodput", "itl:5")
    assert "argument --goodput: unknown goodput metric 'itl': use ttft, tpot, e2el" in err


@pytest.mark.parametrize("value", ["-1", "nan", "inf"])
def test_it_refuses_a_negative_or_not_finite_goodput_value(capsys, value):
    err = refused(capsys, "--goodput", f"tpot:{value}")
    assert "argument --goodput: goodput tpot:" in err
    assert "must be a finite number >= 0" in err


def test_it_refuses_a_goodput_key_given_twice(capsys):
    assert "argument --goodput: ttft is given twice" in refused(
        capsys, "--goodput", "ttft:5", "ttft:6"
    )


def test_max_concurrency_caps_a_rate_or_burst_load():
    rate = bench_plan("--shape", "rate", "--rate", "4", "--max-concurrency", "8").loads[0]
    assert (rate.rate, rate.max_concurrency) == (4.0, 8)
    assert bench_plan("--max-concurrency", "8").loads[0].max_concurrency == 8


def test_it_refuses_max_concurrency_on_a_concurrency_load(tmp_path, capsys):
    flags = ["--shape", "concurrency", "--concurrency", "4", "--max-concurrency", "2"]
    assert main(["bench", "--model", "m", "--out", str(tmp_path / "r.jsonl"), *flags]) == 2
    assert "--max-concurrency caps a rate or burst load" in capsys.readouterr().err


def test_burstiness_may_be_infinite():
    load = bench_plan("--shape", "rate", "--rate", "2", "--burstiness", "inf").loads[0]
    assert load.burstiness == float("inf")
    assert bench_plan("--shape", "rate", "--rate", "2").loads[0].burstiness == 1.0


@pytest.mark.parametrize("value", ["nan", "0", "-2", "fast"])
@pytest.mark.parametrize("flag", ["--rate", "--burstiness"])
def test_rate_and_burstiness_refuse_nan_zero_negative_and_words(capsys, flag, value):
    err = refused(capsys, "--shape", "rate", "--rate", "1", flag, value)
    assert f"argument {flag}: expected a" in err
    assert repr(value) in err


def test_an_infinite_rate_is_refused_with_a_pointer_to_the_burst_shape(capsys):
    err = refused(capsys, "--shape", "rate", "--rate", "inf")
    assert "argument --rate: expected a finite number > 0, got 'inf'" in err
    assert "use --shape burst" in err


def test_it_refuses_rate_flags_that_the_load_shape_would_ignore(tmp_path, capsys):
    out = str(tmp_path / "r.jsonl")
    assert main(["bench", "--model", "m", "--out", out, "--rate", "2"]) == 2
    assert "--rate needs --shape rate" in capsys.readouterr().err
    assert main(["bench", "--model", "m", "--out", out, "--burstiness", "2"]) == 2
    assert "--burstiness shapes the gaps of a rate load" in capsys.readouterr().err


def test_bench_sets_tensor_parallel_size_and_prefix_caching():
    config = bench_plan("--tensor-parallel-size", "2", "--enable-prefix-caching").engine_configs[0]
    assert (config.tensor_parallel_size, config.enable_prefix_caching) == (2, True)
    assert bench_plan("--no-enable-prefix-caching").engine_configs[0].enable_prefix_caching is False
    default = bench_plan().engine_configs[0]
    assert (default.tensor_parallel_size, default.enable_prefix_caching) == (1, None)


def test_it_refuses_a_tensor_parallel_size_below_one(capsys):
    assert "argument --tensor-parallel-size: must be > 0, got '0'" in refused(
        capsys, "--tensor-parallel-size", "0"
    )


def test_bench_dry_run_prints_the_point_and_its_goodput_slos_without_starting_anything(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("COLUMNS", "200")
    out = tmp_path / "r.jsonl"
    flags = ["--shape", "rate", "--rate", "4", "--max-concurrency", "8", "--max-num-seqs", "4"]
    command = ["bench", "--model", "m", "--out", str(out), "--dry-run", *flags]
    assert main([*command, "--goodput", "ttft:500", "e2el:5000"]) == 0
    printed = capsys.readouterr().out
    assert "seqs=4|rate 4.0/s x 64 (max 8 in flight)|r0" in printed
    assert "goodput SLOs: ttft <= 500 ms, e2el <= 5000 ms" in printed
    assert not out.exists()


# ---------------------------------------------------------------------------------------------
# Engine settings: one definition (EngineConfig's fields) for flags, form fields and labels
# ---------------------------------------------------------------------------------------------

SETTING_VALUES = {int: ("3", 3), float: ("0.5", 0.5), str: ("fp8", "fp8")}


@pytest.mark.parametrize("setting", EngineConfig.settings(), ids=lambda s: s.name)
def test_every_engine_setting_is_a_bench_flag_whose_value_reaches_the_plan(setting):
    if setting.kind is bool:
        assert getattr(bench_plan(setting.flag).engine_configs[0], setting.name) is True
        off = f"--no-{setting.flag.removeprefix('--')}"
        assert getattr(bench_plan(off).engine_configs[0], setting.name) is False
        return
    text, value = SETTING_VALUES[setting.kind]
    assert getattr(bench_plan(setting.flag, text).engine_configs[0], setting.name) == value


def test_a_setting_added_to_the_engine_config_becomes_a_bench_flag_untouched(monkeypatch):
    from pydantic import Field

    import runner.cli.commands
    import runner.cli.parser

    class Extended(EngineConfig):
        max_num_partial_prefills: int | None = Field(default=None, gt=0, description="at once")

    monkeypatch.setattr(runner.cli.parser, "EngineConfig", Extended)
    monkeypatch.setattr(runner.cli.commands, "EngineConfig", Extended)
    args = build_parser().parse_args(
        ["bench", "--model", "m", "--out", "r.jsonl", "--max-num-partial-prefills", "2"]
    )
    assert plan_from_bench_args(args)["engine_configs"][0]["max_num_partial_prefills"] == 2


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--gpu-memory-utilization", "1.5"], "argument --gpu-memory-utilization: must be <= 1"),
        (["--gpu-memory-utilization", "0"], "argument --gpu-memory-utilization: must be > 0"),
        (["--gpu-memory-utilization", "nan"], "argument --gpu-memory-utilization: must be > 0"),
        (["--max-num-seqs", "0"], "argument --max-num-seqs: must be > 0, got '0'"),
        (["--block-size", "2.5"], "argument --block-size: expected a whole number, got '2.5'"),
    ],
)
def test_an_engine_flag_is_held_to_its_fields_bounds_before_anything_starts(capsys, flags, message):
    assert message in refused(capsys, *flags)


def test_the_metrics_scrape_interval_is_a_bench_flag_with_the_plans_default():
    # A CPU engine's points last about a second: 0.1 s there, 0.5 s elsewhere.
    assert bench_plan().sample_interval_s == 0.1
    assert bench_plan("--launch", "serve").sample_interval_s == 0.5
    assert bench_plan("--sample-interval", "5").sample_interval_s == 5.0
    assert bench_plan("--launch", "serve", "--sample-interval", "0.1").sample_interval_s == 0.1


def test_a_plan_that_names_its_scrape_interval_keeps_it_on_any_launch():
    base = {"checkpoint": {"model": "m"}, "engine_configs": [{}], "loads": [{"num_requests": 1}]}
    assert SweepPlan.model_validate(base).sample_interval_s == 0.1  # the default launch: cpu
    assert SweepPlan.model_validate({**base, "sample_interval_s": 0.5}).sample_interval_s == 0.5
    served = {**base, "launch": {"style": "serve"}}
    assert SweepPlan.model_validate(served).sample_interval_s == 0.5


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_the_scrape_interval_refuses_what_would_never_or_always_scrape(capsys, value):
    err = refused(capsys, "--sample-interval", value)
    assert "argument --sample-interval: expected a finite number > 0" in err


def test_a_code_loading_flag_needs_the_operator_to_vouch_for_the_checkpoint(tmp_path, capsys):
    flag = "--engine-arg=--trust-remote-code"
    assert main(["bench", "--model", "m", "--out", str(tmp_path / "r.jsonl"), "--dry-run",
                 flag]) == 2
    assert "--trust-remote-code" in capsys.readouterr().err
    plan = bench_plan(flag, "--trusted-checkpoint")
    assert plan.checkpoint.trusted and plan.engine_configs[0].extra_args == ["--trust-remote-code"]
    assert bench_plan().checkpoint.trusted is False
