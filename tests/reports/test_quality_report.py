"""A report's acceptance checklist counts a quality set as measured when both of its points ran
one, with both scores in the row, in English and in Korean."""

from __future__ import annotations

import pytest

from benchmarks.models import Point
from runner.schema.result import QualityResult, QualityRow
from tests.reports.helpers import make_report
from tests.reports.test_acceptance import _checklist

pytestmark = pytest.mark.django_db

ROW = "Output parity or quality"


def score(file: str, passed: int, items: int) -> dict:
    rows = [QualityRow(index=i, line=i + 1, rule="exact", expected="x",
                              answer="x" if i < passed else "y", passed=i < passed)
            for i in range(items)]
    return QualityResult.of(file, rows).model_dump(mode="json")


def scored_report(owner, sweep, before: dict | None, after: dict | None, **fields):
    report = make_report(sweep, owner, publish=False, **fields)
    for point, quality in ((report.baseline_point, before), (report.candidate_point, after)):
        Point.objects.filter(pk=point.pk).update(quality=quality)
    return report


def test_both_points_scored_on_one_set_is_measured_with_both_scores(sweep, owner):
    report = scored_report(owner, sweep, score("evals/q.jsonl", 18, 20),
                           score("evals/q.jsonl", 17, 20))
    assert _checklist(report)[ROW] == (
        "measured: quality set evals/q.jsonl: 18 of 20 items passed before (90.0%), 17 of 20 "
        "after (85.0%)")


def test_two_different_sets_are_named_each(sweep, owner):
    report = scored_report(owner, sweep, score("a.jsonl", 1, 4), score("b.jsonl", 3, 4))
    assert _checklist(report)[ROW] == (
        "measured: quality sets differ: 1 of 4 items of a.jsonl passed before (25.0%), 3 of 4 "
        "of b.jsonl after (75.0%)")


@pytest.mark.parametrize("side", ["before", "after"])
def test_one_point_without_a_score_leaves_quality_unmeasured(sweep, owner, side):
    scored = score("evals/q.jsonl", 1, 2)
    report = scored_report(owner, sweep, None if side == "before" else scored,
                           None if side == "after" else scored)
    assert _checklist(report)[ROW] == (
        "not measured: outputs were not compared and no quality set was run")


def test_the_korean_report_gives_both_scores(sweep, owner):
    report = scored_report(owner, sweep, score("evals/q.jsonl", 18, 20),
                           score("evals/q.jsonl", 17, 20), language="ko")
    assert _checklist(report)["출력 동일성 또는 품질"] == (
        "측정함: 품질 평가 세트 evals/q.jsonl: 이전 20개 항목 중 18개 통과(90.0%), 이후 20개 중 "
        "17개 통과(85.0%)")
