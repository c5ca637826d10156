"""The tiny model: a loadable Qwen3 checkpoint, built offline, the same every time."""

from __future__ import annotations

import json

import pytest

from runner.engine.tinymodel import EOS, MARKER, build_tiny_model, weights_digest


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_it_builds_a_qwen3_config_and_tokenizer_that_load_back(tmp_path):
    from transformers import AutoConfig, AutoTokenizer

    path = build_tiny_model(tmp_path / "tiny")
    config = AutoConfig.from_pretrained(path)
    tokenizer = AutoTokenizer.from_pretrained(path)

    assert config.model_type == "qwen3"
    assert (config.hidden_size, config.num_hidden_layers) == (128, 2)
    assert (config.num_attention_heads, config.num_key_value_heads, config.head_dim) == (2, 1, 64)
    assert config.vocab_size == len(tokenizer) == 512
    assert tokenizer.eos_token == EOS
    assert config.eos_token_id == tokenizer.eos_token_id
    assert (path / "model.safetensors").exists()
    # Byte-level BPE: any text round-trips, nothing maps to an unknown token.
    text = "Explain KV caches, then say 안녕 and 42!"
    assert tokenizer.decode(tokenizer.encode(text)) == text


def test_its_chat_template_renders_qwen3_turns_and_accepts_enable_thinking(tmp_path):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(build_tiny_model(tmp_path / "tiny"))
    messages = [{"role": "user", "content": "hi"}]

    thinking_off = tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=True, enable_thinking=False
    )
    plain = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    assert plain == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert thinking_off == plain + "<think>\n\n</think>\n\n"


def test_two_builds_with_one_seed_have_identical_weights(tmp_path):
    first = build_tiny_model(tmp_path / "a", seed=0)
    second = build_tiny_model(tmp_path / "b", seed=0)
    other = build_tiny_model(tmp_path / "c", seed=1)

    assert weights_digest(first) == weights_digest(second)
    assert weights_digest(first) != weights_digest(other)
    assert (first / "tokenizer.json").read_bytes() == (second / "tokenizer.json").read_bytes()


def test_it_leaves_an_existing_identical_build_untouched(tmp_path):
    path = build_tiny_model(tmp_path / "tiny")
    weights = path / "model.safetensors"
    before = weights.stat().st_mtime_ns

    assert build_tiny_model(path) == path
    assert weights.stat().st_mtime_ns == before
    assert json.loads((path / MARKER).read_text())["params"]["seed"] == 0


def test_it_refuses_to_overwrite_a_directory_it_did_not_build(tmp_path):
    foreign = tmp_path / "someone-elses-model"
    foreign.mkdir()
    (foreign / "config.json").write_text("{}")

    with pytest.raises(FileExistsError):
        build_tiny_model(foreign)
    assert (foreign / "config.json").read_text() == "{}"
