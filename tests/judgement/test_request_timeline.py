"""The request timeline of a point: its phase boundaries are the stored records' own, its lanes
a stated, deterministic sample beyond the cap, and its JSON view reads no records."""

from __future__ import annotations

import random

import numpy as np
import pytest

from benchmarks.storage import columnar
from benchmarks.storage.points import store_point
from judgement.request_timeline import (
    ALL_DRAWN,
    PHASE_MEDIANS,
    SAMPLE_DRAWN,
    request_timeline,
    timeline_of,
)
from runner.schema.records import RequestRecord
from tests.rows import make_benchmark, make_point_result

pytestmark = pytest.mark.django_db


def _records(count: int, seed: int = 7) -> list[RequestRecord]:
    """Requests due out of order, with full-precision times (sums no float spells exactly), a
    failed one that got no first token, and one never sent."""
    rng = random.Random(seed)
    records = []
    for i in range(count):
        due = rng.uniform(0.0, 3.0)
        sent = due + rng.uniform(0.0, 0.01)
        ttft = rng.uniform(0.05, 2.0)
        e2el = ttft + rng.uniform(0.1, 4.0)
        records.append(RequestRecord(
            index=i, intended_send=due, actual_send=sent, ttft=ttft, e2el=e2el,
            completed_at=sent + e2el + 1e-4, status=200, output_tokens=4))
    records[3] = RequestRecord(index=3, intended_send=records[3].intended_send,
                               actual_send=records[3].actual_send, completed_at=2.5,
                               status=500, error="HTTP 500")
    records[5] = RequestRecord(index=5, intended_send=records[5].intended_send,
                               error="cancelled")
    return records


def _stored(records: list[RequestRecord]):
    benchmark = make_benchmark(state="succeeded")
    result = make_point_result(requests=len(records)).model_copy(update={"requests": records})
    return store_point(benchmark, result)


def test_each_lane_holds_its_records_own_boundaries_in_the_order_they_were_due():
    records = _records(40)
    timeline = request_timeline(_stored(records))
    assert timeline is not None and timeline.requests == 40
    lanes = timeline.lanes
    by_due = sorted(records, key=lambda r: r.intended_send)
    assert lanes.index == [r.index for r in by_due]
    for at, r in enumerate(by_due):
        # Exactly the stored fields, summed as the records define them: no re-derived time.
        assert lanes.due[at] == r.intended_send
        assert lanes.sent[at] == r.actual_send
        if r.ttft is None:
            assert lanes.first_token[at] is None and lanes.last_token[at] is None
            assert lanes.ended[at] == r.completed_at
        else:
            assert lanes.first_token[at] == r.actual_send + r.ttft
            assert lanes.last_token[at] == r.actual_send + r.e2el
            assert lanes.ended[at] is None
    assert timeline.drawn.template == ALL_DRAWN and str(timeline.drawn) == (
        "All 40 requests are drawn, one lane each, in the order they were due.")
    assert timeline.queue["replicas"]  # the engine's counts, on the same clock


def test_beyond_the_cap_an_evenly_spaced_sample_is_drawn_and_said_so():
    records = _records(20)
    point = _stored(records)
    first = request_timeline(point, lanes=7)
    assert first == request_timeline(point, lanes=7)  # the same lanes every time
    by_due = sorted(records, key=lambda r: r.intended_send)
    # Positions 0, 3.17, 6.33, 9.5, 12.67, 15.83, 19 of the 20 due times, rounded (9.5 to 10).
    assert first.lanes.index == [by_due[k].index for k in (0, 3, 6, 10, 13, 16, 19)]
    assert first.drawn.template == SAMPLE_DRAWN
    assert str(first.drawn).startswith("7 of the point's 20 requests are drawn")
    assert first.requests == 20


def test_a_32768_request_point_draws_2000_lanes_the_first_and_last_due_among_them():
    count = 32_768
    rng = np.random.default_rng(3)
    due = rng.uniform(0, 60, count)
    arrays = {"index": np.arange(count), "replica": np.zeros(count, np.int64),
              "intended_send": due, "actual_send": due + 1e-4, "ttft": np.full(count, 0.5),
              "e2el": np.full(count, 2.0), "completed_at": due + 2.0}
    timeline = timeline_of(arrays, {"replicas": []})
    lanes = timeline.lanes
    assert len(lanes.index) == 2000 == len(set(lanes.index))
    assert lanes.due[0] == due.min() and lanes.due[-1] == due.max()
    assert lanes.due == sorted(lanes.due)
    assert str(timeline.drawn).startswith("2,000 of the point's 32,768 requests are drawn")


def test_the_phase_medians_count_every_request_that_got_a_first_token():
    # Three requests: waits 0, 1 and 2 s for their send; in flight 1, 2, 6 s; streaming 3, 3, 9.
    arrays = {"index": np.arange(4), "replica": np.zeros(4, np.int64),
              "intended_send": np.array([0.0, 0.0, 0.0, 0.0]),
              "actual_send": np.array([0.0, 1.0, 2.0, 0.5]),
              "ttft": np.array([1.0, 2.0, 6.0, np.nan]),
              "e2el": np.array([4.0, 5.0, 15.0, np.nan]),
              "completed_at": np.array([4.0, 6.0, 17.0, 0.7])}
    timeline = timeline_of(arrays, {"replicas": []}, lanes=2)
    assert timeline.phases.template == PHASE_MEDIANS
    assert str(timeline.phases) == (
        "Median per request: 1.00 s waiting for its send, 2.00 s in flight before its first "
        "token, 3.00 s streaming (over the 3 requests that got a first token).")


def test_the_json_view_reads_the_few_columns_and_never_the_records(owner_client, monkeypatch):
    records = _records(12)
    point = _stored(records)

    def refuse(*args, **kwargs):
        raise AssertionError("the timeline built request records")

    monkeypatch.setattr(columnar, "decode_requests", refuse)
    monkeypatch.setattr(columnar, "iter_request_blocks", refuse)
    url = f"/runs/{point.benchmark.code}/points/{point.pk}/timeline.json"
    figure = owner_client.get(url).json()
    assert figure["requests"] == 12 and len(figure["lanes"]["due"]) == 12
    assert figure["drawn"].startswith("All 12 requests")
    assert figure["phase_names"]["in_flight"] == "in flight before the first token"
    assert figure["queue"]["line_shape"] == "hv"
    other = make_benchmark(node=point.benchmark.node, state="succeeded")
    assert owner_client.get(
        f"/runs/{other.code}/points/{point.pk}/timeline.json").status_code == 404


def test_the_run_page_offers_a_timeline_for_each_point_with_stored_requests(owner_client):
    point = _stored(_records(8))
    without = store_point(point.benchmark, make_point_result(num_requests=2000, requests=0))
    page = owner_client.get(f"/runs/{point.benchmark.code}/").content.decode()
    chooser = page.split('id="timeline-point"')[1].split("</select>")[0]
    assert f"/points/{point.pk}/timeline.json" in chooser
    assert f"/points/{without.pk}/timeline.json" not in chooser
    assert "no request records were stored" in page.split('id="timeline"')[1]
