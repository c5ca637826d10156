"""The report's acceptance checklist: which production criteria its two points measured."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client

from benchmarks.models import Point
from tests.reports.helpers import make_report

pytestmark = pytest.mark.django_db


def _checklist(report) -> dict[str, str]:
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    block = re.search(r'<dl id="acceptance">(.*?)</dl>', body, re.DOTALL)
    assert block, "the report has no acceptance checklist"
    pairs = re.findall(r"<dt>(.*?)</dt><dd[^>]*>(.*?)</dd>", block.group(1), re.DOTALL)
    return {html.unescape(dt): html.unescape(dd) for dt, dd in pairs}


def test_a_synthetic_local_sweep_says_what_it_did_not_measure(sweep, owner):
    report = make_report(sweep, owner)
    rows = _checklist(report)
    assert list(rows) == ["Representative prompts or a trace", "p95/p99 latency",
                          "Network overhead", "Failures", "Output parity or quality"]
    assert rows["Representative prompts or a trace"] == (
        "not measured: synthetic prompts, not the customer's traffic")
    assert rows["Network overhead"] == "not measured: no network round trip recorded"
    assert rows["Output parity or quality"] == (
        "not measured: outputs were not compared and no quality set was run")
    before, after = report.baseline_point, report.candidate_point
    assert rows["Failures"] == (
        f"measured: {before.failed} of {before.completed + before.failed} requests failed "
        f"before, {after.failed} of {after.completed + after.failed} after")
    assert rows["p95/p99 latency"].startswith("measured: p99 request latency ")


def test_a_trace_replay_with_round_trips_counts_as_measured(sweep, owner):
    report = make_report(sweep, owner, publish=False)
    for p, rtt in ((report.baseline_point, 0.12), (report.candidate_point, 0.346)):
        workload = {**p.workload, "kind": "trace", "dataset_path": "customer.jsonl"}
        client = {**p.client, "network_rtt": {"median_ms": rtt, "min_ms": rtt, "probes": 10}}
        Point.objects.filter(pk=p.pk).update(workload=workload, client=client)
    rows = _checklist(report)
    assert rows["Representative prompts or a trace"] == "measured: replayed from a trace file"
    assert rows["Network overhead"] == (
        "measured: round trip 0.12 ms before, 0.35 ms after, measured before each point")


def test_one_synthetic_side_is_enough_to_call_the_prompts_unrepresentative(sweep, owner):
    report = make_report(sweep, owner, publish=False)
    p = report.candidate_point
    Point.objects.filter(pk=p.pk).update(
        workload={**p.workload, "kind": "trace", "dataset_path": "customer.jsonl"})
    rows = _checklist(report)
    assert rows["Representative prompts or a trace"].startswith("not measured")


def test_the_korean_report_translates_the_checklist(sweep, owner):
    rows = _checklist(make_report(sweep, owner, language="ko"))
    assert "출력 동일성 또는 품질" in rows
    assert rows["출력 동일성 또는 품질"].startswith("측정하지 않음: ")
    assert "measured" not in " ".join(rows.values())


def test_replayed_conversations_count_as_representative(sweep, owner):
    report = make_report(sweep, owner, publish=False)
    for p in (report.baseline_point, report.candidate_point):
        Point.objects.filter(pk=p.pk).update(
            workload={**p.workload, "kind": "conversation", "dataset_path": "chats.jsonl",
                      "endpoint": "chat"})
    rows = _checklist(report)
    assert rows["Representative prompts or a trace"] == (
        "measured: multi-turn conversations replayed from a file")
