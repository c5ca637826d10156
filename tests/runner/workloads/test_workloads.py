"""Prompts from a WorkloadSpec: lengths in range, stable with the seed, clear dataset errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner.client.schedule import Target
from runner.client.workers import run_load
from runner.schema.engine_config import Checkpoint, EngineConfig, EngineLaunch
from runner.schema.plan import ClientSpec, LoadSpec, SweepPlan, WorkloadSpec
from runner.sweep import run_plan
from runner.workloads.prompts import (
    DatasetError,
    WorkloadError,
    build_prompts,
    dataset_file,
    dataset_names,
    read_dataset,
    server_token_counter,
    token_counter_for,
)


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
    # The guide first, the id last: every prompt shares the guide as its prefix.
    assert [p.text.split()[-1] for p in prompts[:3]] == ["0)", "1)", "2)"]
    assert len({p.text.split(" (request")[0][:200] for p in prompts}) == 1
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


# ---------------------------------------------------------------------------------------------
# Which files a dataset may be: regular files only, inside the data directory for a plan
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def data_dir(tmp_path) -> Path:
    """A node's data directory, with a neighbour outside it and every kind of file that must
    not be read as prompts."""
    root = tmp_path / "datasets"
    (root / "chat").mkdir(parents=True)
    (root / "short.jsonl").write_text('{"prompt": "alpha"}\n')
    (root / "chat" / "turns.jsonl").write_text('{"prompt": "beta"}\n')
    (root / "alias.jsonl").symlink_to(root / "short.jsonl")
    (tmp_path / "private.jsonl").write_text('{"prompt": "not yours"}\n')
    (root / "escape.jsonl").symlink_to(tmp_path / "private.jsonl")
    (root / "zero.jsonl").symlink_to("/dev/zero")
    os.mkfifo(root / "pipe.jsonl")
    return root


def _dataset(name: str) -> WorkloadSpec:
    return WorkloadSpec(kind="dataset", dataset_path=name, input_tokens_min=1, input_tokens_max=9)


def test_a_plan_names_its_dataset_relative_to_the_data_directory(data_dir):
    assert [p.text for p in build_prompts(_dataset("chat/turns.jsonl"), 2, data_dir=data_dir)] \
        == ["beta", "beta"]
    assert dataset_file("alias.jsonl", data_dir) == (data_dir / "short.jsonl").resolve()
    # The prompts are read only through that check.
    with pytest.raises(DatasetError, match="not inside the data directory"):
        build_prompts(_dataset("escape.jsonl"), 1, data_dir=data_dir)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("/dev/zero", "named relative to the data directory"),
        ("", "named relative to the data directory"),
        ("../private.jsonl", "not inside the data directory"),
        ("escape.jsonl", "not inside the data directory"),  # a symlink out
        ("zero.jsonl", "not inside the data directory"),  # a symlink to a device
        ("chat", "not a regular file"),
        ("pipe.jsonl", "not a regular file"),
        ("missing.jsonl", "cannot read dataset"),
    ],
)
def test_a_plan_may_not_name_a_file_outside_the_data_directory_or_one_that_is_not_regular(
        data_dir, name, message):
    with pytest.raises(DatasetError, match=message):
        dataset_file(name, data_dir)


@pytest.mark.parametrize("path", ["/dev/zero", "pipe.jsonl", "chat"])
def test_the_operators_own_dataset_path_must_still_be_a_regular_file(data_dir, path):
    given = path if path.startswith("/") else str(data_dir / path)
    with pytest.raises(DatasetError, match="not a regular file"):
        build_prompts(_dataset(given), 1)  # no data directory: runner bench --dataset FILE
    outside = str(data_dir.parent / "private.jsonl")
    assert [p.text for p in build_prompts(_dataset(outside), 1)] == ["not yours"]


def test_the_data_directory_lists_only_the_files_a_plan_may_name(data_dir):
    assert dataset_names(data_dir) == ["alias.jsonl", "chat/turns.jsonl", "short.jsonl"]
    assert dataset_names(data_dir / "absent") == []


def test_a_file_swapped_for_a_fifo_is_refused_without_waiting_for_a_writer(data_dir):
    with pytest.raises(DatasetError, match="not a regular file"):
        read_dataset(data_dir / "pipe.jsonl")


def test_a_sweep_refuses_a_dataset_outside_the_data_directory_before_any_engine_starts(
        data_dir, tmp_path):
    plan = SweepPlan(
        name="refused", checkpoint=Checkpoint(model="fake-model"),
        # Nothing listens there: reaching for the engine would fail another way.
        launch=EngineLaunch(style="attach", base_url="http://127.0.0.1:9"),
        engine_configs=[EngineConfig()], loads=[LoadSpec(num_requests=1)],
        workload=_dataset("/dev/zero"),
    )
    with pytest.raises(DatasetError, match="named relative to the data directory"):
        list(run_plan(plan, tmp_path / "work", data_dir=data_dir))


@pytest.mark.parametrize("named_inside", [True, False])
def test_a_sweep_reads_its_dataset_by_name_in_the_data_directory_or_by_the_operators_path(
        fake_vllm, data_dir, tmp_path, named_inside):
    # The worker's plan names "chat/turns.jsonl" in its data directory; `runner bench
    # --dataset FILE` (and bench/peer_vllm.py through it) gives a path and no directory.
    name = "chat/turns.jsonl" if named_inside else str(data_dir / "chat" / "turns.jsonl")
    plan = SweepPlan(
        name="dataset", checkpoint=Checkpoint(model="fake-model"),
        launch=EngineLaunch(style="attach", base_url=fake_vllm.base_url),
        engine_configs=[EngineConfig()], loads=[LoadSpec(num_requests=2)],
        workload=WorkloadSpec(kind="dataset", dataset_path=name, input_tokens_min=1,
                              input_tokens_max=50, output_tokens=4),
        client=ClientSpec(request_timeout_s=10, stall_timeout_s=2), sample_interval_s=0.1,
    )
    (point,) = list(run_plan(plan, tmp_path / "work",
                             data_dir=data_dir if named_inside else None))
    assert point.metrics.completed == 2
