"""The quality set (runner.measure.quality): its file refused line by line, its two rules at their edges,
and its scoring against the small local server, where a failing request is a row, not a crash."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pydantic
import pytest

from runner.cli.commands import plan_from_bench_args
from runner.cli.parser import build_parser, main
from runner.measure.quality import QualitySet, judge, load_quality, parse_items, score_quality
from runner.schema.engine_config import Checkpoint, EngineConfig, EngineLaunch
from runner.schema.plan import (
    QUALITY_EXCERPT_CHARS,
    QUALITY_MAX_ITEMS,
    ClientSpec,
    LoadSpec,
    QualitySpec,
    StabilitySpec,
    SweepPlan,
    WorkloadSpec,
)
from runner.schema.result import PointResult, QualityResult, QualityRow
from runner.sweep import run_plan
from runner.workloads.prompts import DatasetError
from tests.runner.fakeserver import FakeVllm


def write_items(path: Path, *rows: object) -> Path:
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n"
                            for row in rows))
    return path


def read_set(tmp_path: Path, *rows: object, max_tokens: int = 64) -> QualitySet:
    write_items(tmp_path / "quality.jsonl", *rows)
    quality = load_quality(QualitySpec(path="quality.jsonl", max_tokens=max_tokens), tmp_path)
    assert quality is not None
    return quality


# ---------------------------------------------------------------------------------------------
# The file
# ---------------------------------------------------------------------------------------------


def test_items_take_the_rule_exact_and_the_specs_max_tokens_unless_they_set_their_own(tmp_path):
    quality = read_set(
        tmp_path,
        {"prompt": "a", "expected": "b"},
        "",
        {"prompt": "c", "expected": "d", "rule": "contains", "max_tokens": 5},
        max_tokens=12,
    )
    assert [(i.line, i.prompt, i.expected, i.rule, i.max_tokens) for i in quality.items] == [
        (1, "a", "b", "exact", 12), (3, "c", "d", "contains", 5)]
    assert quality.name == "quality.jsonl"


@pytest.mark.parametrize(("line", "message"), [
    ("{not json", "not JSON"),
    ('["a", "b"]', 'expected an object {"prompt": ..., "expected": ...}'),
    ({"expected": "b"}, "prompt: Field required"),
    ({"prompt": "", "expected": "b"}, "prompt: String should have at least 1 character"),
    ({"prompt": "a"}, "expected: Field required"),
    ({"prompt": "a", "expected": " \n"}, "expected: expected must hold more than whitespace"),
    ({"prompt": "a", "expected": 4}, "expected: Input should be a valid string"),
    ({"prompt": "a", "expected": "b", "rule": "regex"}, "rule: Input should be 'exact' or "
                                                        "'contains'"),
    ({"prompt": "a", "expected": "b", "rule": "Exact"}, "rule: Input should be 'exact' or "
                                                        "'contains'"),
    ({"prompt": "a", "expected": "b", "max_tokens": 0}, "max_tokens: Input should be greater "
                                                        "than 0"),
    ({"prompt": "a", "expected": "b", "max_tokens": True}, "max_tokens: Input should be a "
                                                           "valid integer"),
    ({"prompt": "a", "expected": "b", "answer": "c"}, "answer: Extra inputs are not permitted"),
])
def test_a_bad_line_is_refused_naming_its_file_and_line(tmp_path, line, message):
    path = write_items(tmp_path / "quality.jsonl", {"prompt": "ok", "expected": "ok"}, "", line)
    with pytest.raises(DatasetError) as refused:
        load_quality(QualitySpec(path="quality.jsonl"), tmp_path)
    assert str(refused.value).startswith(f"{path}:3: ")
    assert message in str(refused.value)


def test_a_set_of_the_most_items_is_read_and_one_more_is_refused_at_its_line(tmp_path):
    rows = [{"prompt": f"p{i}", "expected": "x"} for i in range(QUALITY_MAX_ITEMS)]
    assert len(read_set(tmp_path, *rows).items) == QUALITY_MAX_ITEMS
    # A blank line is no item: the refused one is the 201st item, on line 202.
    path = write_items(tmp_path / "quality.jsonl", "", *rows, {"prompt": "p", "expected": "x"})
    with pytest.raises(DatasetError, match=rf"^{path}:202: a quality set holds at most 200 "):
        load_quality(QualitySpec(path="quality.jsonl"), tmp_path)


def test_a_file_without_items_is_refused(tmp_path):
    (tmp_path / "quality.jsonl").write_text("\n  \n")
    with pytest.raises(DatasetError, match="the quality set has no items"):
        load_quality(QualitySpec(path="quality.jsonl"), tmp_path)


@pytest.mark.parametrize("name", ["../outside.jsonl", "/etc/passwd", "inside/../../outside.jsonl"])
def test_a_file_outside_the_data_directory_is_refused(tmp_path, name):
    data_dir = tmp_path / "data"
    (data_dir / "inside").mkdir(parents=True)
    write_items(tmp_path / "outside.jsonl", {"prompt": "a", "expected": "b"})
    with pytest.raises(DatasetError, match="data directory"):
        load_quality(QualitySpec(path=name), data_dir)


def test_without_a_data_directory_the_name_is_the_operators_path(tmp_path):
    path = write_items(tmp_path / "mine.jsonl", {"prompt": "a", "expected": "b"})
    quality = load_quality(QualitySpec(path=str(path)), None)
    assert quality is not None and len(quality.items) == 1
    assert load_quality(None, tmp_path) is None


# ---------------------------------------------------------------------------------------------
# The rules
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("rule", "expected", "answer", "passed"), [
    ("exact", "Paris", "Paris", True),
    ("exact", "Paris", " Paris\n", True),  # surrounding whitespace is not the answer
    ("exact", "  Paris ", "Paris", True),
    ("exact", "Paris", "paris", False),  # case counts
    ("exact", "Paris", "Paris.", False),
    ("exact", "Paris", "Paris is the capital", False),
    ("exact", "Paris", "Pa ris", False),
    ("exact", "New York", "New  York", False),  # inner whitespace counts
    ("contains", "Paris", "It is Paris.", True),
    ("contains", "Paris", "Paris", True),
    ("contains", " Paris ", "Paris!", True),  # the expected text is stripped, then looked for
    ("contains", "Paris", "It is paris.", False),  # case counts
    ("contains", "Paris", "Pari", False),
    ("contains", "Paris", "P a r i s", False),
])
def test_each_rule_passes_what_it_says_and_no_more(rule, expected, answer, passed):
    assert judge(rule, expected, answer) is passed


# ---------------------------------------------------------------------------------------------
# Scoring against the fake server: an answer is " tok" once per token, max_tokens of them
# ---------------------------------------------------------------------------------------------


def test_the_score_is_passed_over_items_and_a_500_is_an_error_row(fake_vllm, tmp_path):
    quality = read_set(
        tmp_path,
        {"prompt": "three", "expected": "tok tok tok", "max_tokens": 3},  # exact: passes
        {"prompt": "two", "expected": "tok tok", "max_tokens": 3},  # one token more: fails
        {"prompt": "any", "expected": "tok", "rule": "contains", "max_tokens": 2},  # passes
        {"prompt": "mode=http_500", "expected": "tok", "rule": "contains"},  # no answer
    )
    result = score_quality(quality, fake_vllm.base_url, "fake-model", WorkloadSpec(),
                           timeout_s=10)
    assert [(r.index, r.line, r.passed) for r in result.rows] == [
        (0, 1, True), (1, 2, False), (2, 3, True), (3, 4, False)]
    assert (result.items, result.passed, result.errors, result.score) == (4, 2, 1, 0.5)
    assert result.rows[0].answer == " tok tok tok" and result.rows[0].finish_reason == "length"
    failed = result.rows[3]
    assert failed.answer is None and failed.error is not None
    assert failed.error.startswith("HTTP 500: ") and "boom" in failed.error
    assert all(row.error is None for row in result.rows[:3])


def test_requests_are_greedy_non_streamed_and_on_the_workloads_endpoint(fake_vllm, tmp_path):
    quality = read_set(tmp_path, {"prompt": "Name a colour", "expected": "tok tok", "max_tokens": 2},
                       max_tokens=9)
    workload = WorkloadSpec(endpoint="chat", temperature=0.7, ignore_eos=True,
                            extra_body={"chat_template_kwargs": {"enable_thinking": False},
                                        "top_p": 0.5})
    result = score_quality(quality, fake_vllm.base_url, "fake-model", workload, timeout_s=10)
    assert result.passed == 1 and result.rows[0].answer == " tok tok"
    (body,) = fake_vllm.requests
    # The workload's sampling (temperature, top_p, ignore_eos) is not the eval's: greedy, and
    # an answer ends where the model ends it; the chat template's switches do carry over.
    assert body == {
        "model": "fake-model", "max_tokens": 2, "temperature": 0.0, "stream": False,
        "messages": [{"role": "user", "content": "Name a colour"}],
        "chat_template_kwargs": {"enable_thinking": False},
    }
    score_quality(quality, fake_vllm.base_url, "fake-model", WorkloadSpec(), timeout_s=10)
    assert fake_vllm.requests[1] == {"model": "fake-model", "max_tokens": 2,
                                     "temperature": 0.0, "stream": False,
                                     "prompt": "Name a colour"}


def test_an_answer_is_judged_whole_and_stored_cut_to_an_excerpt(fake_vllm, tmp_path):
    long = QUALITY_EXCERPT_CHARS  # tokens of 4 characters: four times the excerpt
    quality = read_set(tmp_path, {"prompt": "long", "expected": " tok" * long,
                                  "max_tokens": long})
    result = score_quality(quality, fake_vllm.base_url, "fake-model", WorkloadSpec(),
                           timeout_s=10)
    (row,) = result.rows
    assert row.passed
    assert row.answer == (" tok" * long)[:QUALITY_EXCERPT_CHARS]
    assert row.expected == (" tok" * long)[:QUALITY_EXCERPT_CHARS]


def test_a_server_that_is_gone_gives_error_rows_with_the_reason(tmp_path):
    quality = read_set(tmp_path, {"prompt": "a", "expected": "tok"}, {"prompt": "b",
                                                                      "expected": "tok"})
    server = FakeVllm().start()
    base_url = server.base_url
    server.stop()
    result = score_quality(quality, base_url, "fake-model", WorkloadSpec(), timeout_s=5)
    assert (result.items, result.passed, result.errors, result.score) == (2, 0, 2, 0.0)
    assert all(row.error and row.error.startswith("request failed: ConnectError")
               for row in result.rows)


def test_once_cancelled_the_items_left_are_rows_that_were_not_sent(fake_vllm, tmp_path):
    quality = read_set(tmp_path, {"prompt": "a", "expected": "tok"})
    cancel = threading.Event()
    cancel.set()
    result = score_quality(quality, fake_vllm.base_url, "fake-model", WorkloadSpec(),
                           timeout_s=5, cancel=cancel)
    assert fake_vllm.requests == []
    assert result.rows[0].error == "not sent: the run was cancelled" and result.score == 0


def test_a_stored_result_whose_counts_contradict_its_rows_is_refused():
    row = QualityRow(index=0, line=1, rule="exact", expected="a", answer="a", passed=True)
    good = QualityResult.of("q.jsonl", [row])
    assert (good.items, good.passed, good.score) == (1, 1, 1.0)
    for wrong in ({"passed": 0}, {"score": 0.5}, {"items": 2}, {"errors": 1}):
        with pytest.raises(pydantic.ValidationError, match="counts are its rows'"):
            QualityResult.model_validate({**good.model_dump(), **wrong})


# ---------------------------------------------------------------------------------------------
# Beside a point: run_plan and the CLI
# ---------------------------------------------------------------------------------------------


def attach_plan(base_url: str, quality: QualitySpec | None) -> SweepPlan:
    return SweepPlan(
        name="quality",
        checkpoint=Checkpoint(model="fake-model"),
        launch=EngineLaunch(style="attach", base_url=base_url),
        engine_configs=[EngineConfig()],
        loads=[LoadSpec(num_requests=n) for n in (2, 4)],
        workload=WorkloadSpec(kind="random", input_tokens_min=4, input_tokens_max=6,
                              output_tokens=8),
        client=ClientSpec(request_timeout_s=10, stall_timeout_s=2),
        sample_interval_s=0.1,
        quality=quality,
        stability=StabilitySpec(control_point=False),  # two points, each scored
    )


def test_every_point_is_scored_after_its_window_closes(fake_vllm, tmp_path):
    write_items(tmp_path / "q.jsonl", {"prompt": "x", "expected": "tok tok", "max_tokens": 2},
                {"prompt": "mode=http_500", "expected": "tok"})
    plan = attach_plan(fake_vllm.base_url, QualitySpec(path="q.jsonl"))
    points = list(run_plan(plan, tmp_path / "work", data_dir=tmp_path))
    assert [p.load.num_requests for p in points] == [2, 4]
    # The load streams, the eval does not: each point's two eval requests follow its load.
    kinds = ["load" if body["stream"] else "eval" for body in fake_vllm.requests]
    assert kinds == ["load"] * 2 + ["eval"] * 2 + ["load"] * 4 + ["eval"] * 2
    for point, evals in zip(points, (fake_vllm.arrivals[2:4], fake_vllm.arrivals[8:10]),
                            strict=True):
        assert min(evals) >= point.t0_monotonic + point.window.end  # the window had closed
        assert point.metrics.valid and point.metrics.completed == point.load.num_requests
        # The 500 is a row of the score; the point is kept whole.
        quality = point.quality
        assert quality is not None
        assert (quality.file, quality.items, quality.passed, quality.errors) == (
            "q.jsonl", 2, 1, 1)
        assert PointResult.model_validate_json(point.model_dump_json()).quality == quality


def test_a_bad_quality_file_is_refused_before_any_engine_is_reached(tmp_path):
    write_items(tmp_path / "q.jsonl", {"prompt": "x", "expected": "y"}, {"prompt": "x"})
    # Nothing listens there: reaching the server first would fail as an engine error instead.
    plan = attach_plan("http://127.0.0.1:9", QualitySpec(path="q.jsonl"))
    with pytest.raises(DatasetError, match=r"q.jsonl:2: expected: Field required"):
        next(run_plan(plan, tmp_path / "work", data_dir=tmp_path))


def test_the_cli_takes_a_quality_file_and_refuses_a_bad_one_before_starting(tmp_path, capsys):
    good = write_items(tmp_path / "good.jsonl", {"prompt": "x", "expected": "y"})
    args = build_parser().parse_args(["bench", "--model", "m", "--quality", str(good),
                                    "--out", str(tmp_path / "o.jsonl")])
    plan = SweepPlan.model_validate(plan_from_bench_args(args))
    assert plan.quality == QualitySpec(path=str(good))
    bad = write_items(tmp_path / "bad.jsonl", {"prompt": "x", "expected": "y", "rule": "fuzzy"})
    status = main(["bench", "--model", "m", "--launch", "attach", "--base-url",
                   "http://127.0.0.1:9", "--quality", str(bad), "--out",
                   str(tmp_path / "o.jsonl")])
    assert status == 2
    assert f"{bad}:1: rule: Input should be 'exact' or 'contains'" in capsys.readouterr().err
    assert not (tmp_path / "o.jsonl").exists()


def test_parse_items_reads_bytes_lines_as_the_file_gives_them(tmp_path):
    items = parse_items([b'{"prompt": "caf\xc3\xa9", "expected": "\xc3\xa9"}'],
                        tmp_path / "q.jsonl", 7)
    assert (items[0].prompt, items[0].expected, items[0].max_tokens) == ("café", "é", 7)
