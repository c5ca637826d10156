"""Engine-config grids: the cross product, its cap, and the combinations vLLM refuses."""

from __future__ import annotations

from typing import get_args

import pydantic
import pytest

from runner import grid
from runner.schema.engine_config import EngineConfig
from runner.schema.flags import KV_CACHE_DTYPES


def labels(result: grid.Grid) -> list[str]:
    return [config.label() for config in result.configs]


def test_two_axes_cross_into_every_combination_last_axis_fastest():
    result = grid.expand({"max_num_seqs": [4, 16], "max_num_batched_tokens": [256, 2048]})
    assert labels(result) == [
        "seqs=4,tokens=256", "seqs=4,tokens=2048", "seqs=16,tokens=256", "seqs=16,tokens=2048",
    ]
    assert result.combinations == 4
    assert result.pruned == []


def test_an_axis_of_one_value_is_shared_and_an_empty_axis_is_left_to_vllm():
    result = grid.expand({"max_num_seqs": [8, 32], "block_size": [16], "kv_cache_dtype": []})
    assert labels(result) == ["seqs=8,block=16", "seqs=32,block=16"]
    assert all(config.kv_cache_dtype is None for config in result.configs)


def test_extra_flag_variants_are_an_axis_too():
    result = grid.expand({"max_num_seqs": [8]}, [[], ["--enforce-eager"]])
    assert labels(result) == ["seqs=8", "seqs=8,--enforce-eager"]
    assert result.combinations == 2


def test_fewer_batched_tokens_than_sequences_is_pruned_with_the_rule_named():
    result = grid.expand({"max_num_seqs": [4, 512], "max_num_batched_tokens": [256, 2048]})
    assert labels(result) == ["seqs=4,tokens=256", "seqs=4,tokens=2048", "seqs=512,tokens=2048"]
    assert [p.label for p in result.pruned] == ["seqs=512,tokens=256"]
    assert "max_num_batched_tokens (256) must be >= max_num_seqs (512)" in result.notes()[0]
    assert result.notes()[0].startswith("seqs=512,tokens=256: not run, ")


def test_equal_tokens_and_sequences_is_allowed_as_vllm_allows_it():
    result = grid.expand({"max_num_seqs": [256], "max_num_batched_tokens": [256]})
    assert labels(result) == ["seqs=256,tokens=256"] and not result.pruned


def test_a_token_budget_below_the_nodes_default_sequences_is_pruned_when_seqs_is_unset():
    result = grid.expand({"max_num_batched_tokens": [64, 128]}, default_max_num_seqs=128)
    assert labels(result) == ["tokens=128"]
    assert "below the 128 sequences vLLM runs by default" in result.pruned[0].reason
    unknown = grid.expand({"max_num_batched_tokens": [64]}, default_max_num_seqs=None)
    assert labels(unknown) == ["tokens=64"]


def test_chunked_prefill_off_needs_a_budget_of_at_least_the_model_length():
    axes = {"max_num_seqs": [4], "max_num_batched_tokens": [1024, 2048], "max_model_len": [2048]}
    off = grid.expand(axes, [["--no-enable-chunked-prefill"]])
    assert [c.max_num_batched_tokens for c in off.configs] == [2048]
    assert "below max_model_len 2048 with chunked prefill off" in off.pruned[0].reason
    on = grid.expand(axes)
    assert len(on.configs) == 2


def test_a_long_prefill_threshold_above_the_model_length_is_pruned():
    axes = {"max_model_len": [512, 4096]}
    result = grid.expand(axes, [["--long-prefill-token-threshold", "1024"]])
    assert [c.max_model_len for c in result.configs] == [4096]
    assert "above max_model_len 512" in result.pruned[0].reason
    at_length = grid.expand({"max_model_len": [1024]}, [["--long-prefill-token-threshold=1024"]])
    assert len(at_length.configs) == 1, "vLLM refuses only a threshold above the length"


def test_every_combination_refused_is_an_error_naming_them():
    with pytest.raises(grid.GridError, match="refuse every combination: seqs=64,tokens=32"):
        grid.expand({"max_num_seqs": [64], "max_num_batched_tokens": [32]})


def test_a_grid_past_the_enumeration_cap_is_refused_before_it_is_built():
    axes = {"max_num_seqs": list(range(1, 101)), "max_num_batched_tokens": list(range(1, 102))}
    assert grid.combinations(axes, [[]]) == 10_100
    with pytest.raises(grid.GridError, match="10,100 combinations"):
        grid.expand(axes)
    just_under = {"max_num_seqs": list(range(1, 101)), "block_size": list(range(1, 101))}
    assert len(grid.expand(just_under).configs) == 10_000


def test_a_value_refused_on_its_own_is_a_validation_error_not_a_pruned_config():
    with pytest.raises(pydantic.ValidationError):
        grid.expand({"max_num_seqs": [0, 8]})
    with pytest.raises(pydantic.ValidationError, match="unknown KV-cache dtype 'fp9'"):
        grid.expand({"kv_cache_dtype": ["fp8", "fp9"]})


def test_the_kv_cache_dtypes_are_vllms_own():
    from vllm.config.cache import CacheDType

    assert set(KV_CACHE_DTYPES) == set(get_args(CacheDType))


@pytest.mark.parametrize(
    ("seqs", "tokens", "length", "chunked", "refused"),
    [
        (4, 256, 2048, False, True),
        (4, 2048, 2048, False, False),
        (4, 256, 2048, True, False),
        (512, 256, None, True, True),
        (256, 256, None, True, False),
    ],
)
def test_refusal_agrees_with_vllms_scheduler_config(seqs, tokens, length, chunked, refused):
    """The same values through vLLM's own SchedulerConfig check (vllm/config/scheduler.py)."""
    from vllm.config.scheduler import SchedulerConfig

    model_len = length or 2048
    try:
        SchedulerConfig(
            max_num_seqs=seqs, max_num_batched_tokens=tokens, enable_chunked_prefill=chunked,
            max_model_len=model_len, is_encoder_decoder=False,
        )
        vllm_refuses = False
    except (ValueError, pydantic.ValidationError):
        vllm_refuses = True
    assert vllm_refuses is refused
    extra = [] if chunked else ["--no-enable-chunked-prefill"]
    settings = {"max_num_seqs": [seqs], "max_num_batched_tokens": [tokens]}
    if length is not None:
        settings["max_model_len"] = [length]
    if refused:
        with pytest.raises(grid.GridError):
            grid.expand(settings, [extra])
    else:
        assert len(grid.expand(settings, [extra]).configs) == 1


@pytest.mark.parametrize(
    "line",
    [
        "--max-num-seqs 4 --max-num-batched-tokens 256",
        "--max-num-seqs=16 --enable-prefix-caching --enforce-eager",
        "--no-enable-prefix-caching --kv-cache-dtype fp8 --gpu-memory-utilization 0.85",
        "--tensor-parallel-size 2 --long-prefill-token-threshold 512",
    ],
)
def test_a_config_line_reads_back_equal(line):
    config = grid.parse_config_line(line)
    assert grid.parse_config_line(grid.config_line(config)) == config


def test_a_config_line_sets_named_settings_and_keeps_the_rest_as_extra_flags():
    config = grid.parse_config_line(
        "--max-num-seqs 4 --no-enable-prefix-caching --enforce-eager --seed 7"
    )
    assert config == EngineConfig(
        max_num_seqs=4, enable_prefix_caching=False, extra_args=["--enforce-eager", "--seed", "7"]
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("--max-num-seqs", "--max-num-seqs needs a value"),
        ("--max-num-seqs four", "max_num_seqs"),
        ("--max-num-seqs 64 --max-num-batched-tokens 32", "must be >= max_num_seqs"),
        ("--made-up-flag", "unknown engine flag --made-up-flag"),
        ("--max-num-seqs 'unclosed", "cannot split"),
    ],
)
def test_a_bad_config_line_says_why(line, message):
    with pytest.raises(ValueError, match=message):
        grid.parse_config_line(line)
