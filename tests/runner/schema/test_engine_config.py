"""An engine config, a checkpoint and a launch style are refused at once when vLLM would refuse
them, or when a flag would bypass the config's own fields (runner.schema.engine_config)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from runner.schema.engine_config import Checkpoint, EngineConfig, EngineLaunch


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


def test_a_new_settings_own_flag_is_refused_as_an_extra_flag():
    # --seed is an allowed extra flag until a field of that name makes it a setting.
    class Seeded(EngineConfig):
        seed: int | None = None

    assert EngineConfig(extra_args=["--seed", "1"]).extra_args == ["--seed", "1"]
    with pytest.raises(ValidationError, match="--seed has its own field"):
        Seeded(extra_args=["--seed", "1"])


def test_the_label_names_each_setting_that_differs_from_its_default_in_the_old_order():
    config = EngineConfig(
        max_num_seqs=8, max_num_batched_tokens=64, gpu_memory_utilization=0.5,
        kv_cache_dtype="fp8", max_model_len=512, block_size=16, enable_prefix_caching=True,
        tensor_parallel_size=2, stream_interval=2, num_gpu_blocks_override=100,
        extra_args=["--enforce-eager"],
    )
    # Point keys are made from labels: an old results file must resume with the same keys.
    assert config.label() == (
        "seqs=8,tokens=64,mem=0.5,kv=fp8,len=512,block=16,prefix=True,stream=2,blocks=100,"
        "tp=2,--enforce-eager"
    )
    assert EngineConfig(tensor_parallel_size=1).label() == "defaults"
