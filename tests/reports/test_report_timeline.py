"""Each side of a report's comparison with its request timeline: the lanes the run page reads,
at most REPORT_TIMELINE_LANES of them and said so, in the report's language, frozen with the
version; a version published before the timeline renders as it did."""

from __future__ import annotations

import dataclasses

import pytest
from django.test import Client

from benchmarks.models import PointData
from benchmarks.storage.points import store_point
from judgement.request_timeline import REPORT_TIMELINE_LANES, request_timeline
from reports import publishing
from reports.models import ReportVersion
from tests.reports.conftest import point, point_result
from tests.reports.helpers import make_report
from tests.rows import make_requests

pytestmark = pytest.mark.django_db


def test_each_side_draws_the_lanes_its_stored_requests_hold(sweep, owner):
    report = make_report(sweep, owner, language="en")
    content = publishing.content_of(report.versions.get(), "en")
    for side, stored, lanes in zip(content.queue, (point(sweep, 8, 32), point(sweep, 64, 32)),
                                   content.figures["timeline"], strict=True):
        timeline = request_timeline(stored, REPORT_TIMELINE_LANES)
        assert lanes == dataclasses.asdict(timeline.lanes)
        assert side.timeline_drawn == (
            "All 4 requests are drawn, one lane each, in the order they were due.")
        assert side.timeline_phases.startswith("Median per request: ")
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    assert 'id="timeline-chart-0"' in body and 'id="timeline-chart-1"' in body
    assert 'id="timeline-hint"' in body


def test_a_side_of_more_requests_than_a_report_draws_says_which_it_drew_in_korean(sweep, owner):
    big = point_result(64, 1000).model_copy(update={"requests": make_requests(1000)})
    candidate = store_point(sweep, big)
    report = make_report(sweep, owner, language="ko", candidate_point=candidate)
    version = report.versions.get()
    korean = publishing.content_of(version, "ko")
    after = korean.queue[1]
    assert after.timeline_drawn.startswith("이 지점의 요청 1,000개 중 400개를")
    assert len(korean.figures["timeline"][1]["due"]) == REPORT_TIMELINE_LANES == 400
    # Each request was sent 0.1 ms after it was due (tests.rows.make_requests): in Korean units.
    assert after.timeline_phases.startswith("요청별 중앙값: 전송 대기 0.1밀리초, ")
    english = publishing.content_of(version, "en")
    assert english.queue[1].timeline_drawn.startswith("400 of the point's 1,000 requests")


def test_a_side_that_stored_no_requests_has_no_timeline(sweep, owner):
    silent = store_point(sweep, point_result(8, 32, repeat=1).model_copy(
        update={"requests": []}))
    assert PointData.objects.get(point=silent).request_count == 0
    report = make_report(sweep, owner, language="en", baseline_point=silent)
    content = publishing.content_of(report.versions.get(), "en")
    assert content.queue[0].timeline_drawn == "" and content.figures["timeline"][0] is None
    assert content.queue[1].timeline_drawn != ""
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    assert 'id="timeline-chart-0"' not in body and 'id="timeline-chart-1"' in body


def test_a_version_published_before_the_timeline_renders_without_one(sweep, owner):
    report = make_report(sweep, owner, language="en")
    version = report.versions.get()
    for stored in version.content.values():  # as a version published before it was stored
        stored["figures"].pop("timeline")
        for side in stored["queue"]:
            side.pop("timeline_drawn")
            side.pop("timeline_phases")
    ReportVersion.objects.filter(pk=version.pk).update(content=version.content)
    response = Client().get(f"/r/{report.issued_token}/")
    assert response.status_code == 200
    body = response.content.decode()
    assert "timeline-chart" not in body and 'id="timeline-hint"' not in body
    assert 'id="queue-chart-0"' in body
