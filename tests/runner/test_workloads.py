"""Prompts from a WorkloadSpec: lengths in range, stable with the seed, clear dataset errors."""

from __future__ import annotations

import pytest

from runner.loadgen import Target, run_load
from runner.schema import ClientSpec, LoadSpec
from runner.workloads import (
    DatasetError,
    WorkloadError,
    build_prompts,
    server_token_counter,
    token_counter_for,
)
from runner.schema import WorkloadSpec
from tests.runner.fakeserver import fake_vllm  # noqa: F401 (fixture)


def words(text: str) -> int:
    return len(text.split())


def test_it_lands_every_case_study_prompt_in_the_token_range(fake_vllm):
    workload = WorkloadSpec(input_tokens_min=63, input_tokens_max=66)
    calls = []
    server_count = server_token_counter(fake_vllm.base_url, "m")

    def counter(text: str) -> int:
        calls.append(text)
        return server_count(text)

    prompts = build_prompts(workload, 150, counter)
    assert [p.text.split()[1] for p in prompts[:3]] == ["0:", "1:", "2:"]
    assert all(63 <= words(p.text) <= 66 and p.input_tokens == words(p.text) for p in prompts)
    assert len(calls) <= 3 * 16  # one binary search per id width (1-3 digits), not per request


def test_it_counts_chat_prompts_through_the_chat_tokenizer(fake_vllm):
    workload = WorkloadSpec(endpoint="chat", input_tokens_min=20, input_tokens_max=20)
    prompts = build_prompts(workload, 3, server_token_counter(fake_vllm.base_url, "m", "chat"))
    assert all(p.text is None and words(p.messages[0]["content"]) == 20 for p in prompts)


def test_it_counts_chat_prompts_with_the_requests_chat_template_options(fake_vllm):
    workload = WorkloadSpec(
        endpoint="chat", input_tokens_min=20, input_tokens_max=20, output_tokens=2,
        extra_body={"chat_template_kwargs": {"enable_thinking": False}},
    )
    prompts = build_prompts(workload, 2, token_counter_for(fake_vllm.base_url, "m", workload))
    outcome = run_load([Target(0, fake_vllm.base_url, "m")], workload, LoadSpec(num_requests=2),
                       ClientSpec(), prompts)
    assert [r.prompt_tokens for r in outcome.records] == [20, 20]  # what the server reports
    assert [p.input_tokens for p in prompts] == [20, 20]


def test_it_refuses_a_range_the_case_study_text_cannot_hit():
    workload = WorkloadSpec(input_tokens_min=1, input_tokens_max=1)
    with pytest.raises(WorkloadError, match="widen the input range"):
        build_prompts(workload, 1, lambda text: len(text.split()))


def test_it_approximates_lengths_without_a_counter():
    prompts = build_prompts(WorkloadSpec(input_tokens_min=100, input_tokens_max=100), 2)
    assert all(p.input_tokens is None and 360 <= len(p.text) <= 400 for p in prompts)


def test_it_builds_the_same_random_prompts_from_the_same_seed():
    workload = WorkloadSpec(kind="random", input_tokens_min=10, input_tokens_max=50, seed=4)
    first = build_prompts(workload, 20, lambda text: len(text.split()))
    assert first == build_prompts(workload, 20, lambda text: len(text.split()))
    assert all(10 <= words(p.text) <= 50 for p in first)
    assert len({words(p.text) for p in first}) > 5


def test_it_reads_the_three_dataset_styles(tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_text(
        '{"conversations": [{"from": "system", "value": "x"}, {"from": "human", "value": "alpha"}]}\n'
        '{"messages": [{"role": "user", "content": "beta"}]}\n'
        "\n"
        '{"prompt": "gamma"}\n'
    )
    workload = WorkloadSpec(kind="dataset", dataset_path=str(path), input_tokens_min=1,
                            input_tokens_max=5)
    prompts = build_prompts(workload, 5)
    assert sorted({p.text for p in prompts}) == ["alpha", "beta", "gamma"]
    assert len(prompts) == 5  # reused in order rather than silently running fewer requests


def test_it_filters_dataset_prompts_to_the_token_range(tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_text('{"prompt": "one"}\n{"prompt": "one two three"}\n')
    workload = WorkloadSpec(kind="dataset", dataset_path=str(path), input_tokens_min=2,
                            input_tokens_max=5)
    prompts = build_prompts(workload, 2, lambda text: len(text.split()))
    assert [p.text for p in prompts] == ["one two three"] * 2


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"prompt": "ok"}\n{"nope": 1}\n', r"data.jsonl:2: expected"),
        ('{"prompt": "ok"}\nnot json\n', r"data.jsonl:2: not JSON"),
        ("\n\n", r"data.jsonl: the dataset has no prompts"),
    ],
)
def test_it_names_the_file_and_line_of_a_bad_dataset(tmp_path, content, message):
    path = tmp_path / "data.jsonl"
    path.write_text(content)
    workload = WorkloadSpec(kind="dataset", dataset_path=str(path))
    with pytest.raises(DatasetError, match=message):
        build_prompts(workload, 1)


def test_it_cuts_inside_a_word_when_a_coarse_tokenizer_jumps_over_the_range():
    # A small-vocabulary tokenizer can spend a token per character: whole words jump 5-10
    # tokens at a time, over a 2-token range.
    def per_character(text: str) -> int:
        return sum(len(word) for word in text.split())

    workload = WorkloadSpec(input_tokens_min=63, input_tokens_max=64)
    prompts = build_prompts(workload, 12, per_character)
    assert all(63 <= per_character(p.text) <= 64 for p in prompts)
    assert all(p.input_tokens == per_character(p.text) for p in prompts)
