"""The run page's request timeline drawn in headless Debian Chromium at 1,440 x 900 and on a
390 px phone: a lane per request coloured by phase, the engine's counts beneath, inside the
page."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from benchmarks.storage.points import store_point
from runner.schema.records import EngineSample, RequestRecord
from tests.rows import make_benchmark, make_point_result

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
# A burst of 48 requests on an engine that runs 8 at a time, 1 s a wave: each wave waits in the
# engine's queue for the ones before it, so its in-flight stretch grows wave by wave.
BURST, SEQS, WAVE_S = 48, 8, 1.0


def queued_burst() -> tuple[list[RequestRecord], list[EngineSample]]:
    records = []
    for i in range(BURST):
        wave = i // SEQS
        sent = 0.001 * i
        first = wave * WAVE_S + 0.2
        last = (wave + 1) * WAVE_S
        records.append(RequestRecord(
            index=i, intended_send=0.0, actual_send=sent, ttft=first - sent, e2el=last - sent,
            completed_at=last, chunk_times=[first, last], chunk_tokens=[1, 3],
            prompt_tokens=64, output_tokens=4, finish_reason="length", status=200))
    samples = [EngineSample(t=k * 0.5, running=float(SEQS if k < 12 else 0),
                            waiting=float(max(0, BURST - SEQS * (k // 2 + 1))))
               for k in range(14)]
    return records, samples


def _shot(page, tmp_path: Path, name: str) -> None:
    shot = tmp_path / f"{name}.png"
    page.screenshot(path=str(shot), full_page=True)
    target = os.environ.get("HEADROOM_SCREENSHOT_DIR")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(target) / shot.name)


@pytest.mark.parametrize(("viewport", "name"), [(DESKTOP, "1440"), (PHONE, "phone")])
def test_the_timeline_draws_a_lane_per_request_over_the_engines_counts(
    live_server, owner, chromium, tmp_path, viewport, name
):
    from playwright.sync_api import expect

    records, samples = queued_burst()
    result = make_point_result(num_requests=BURST, max_num_seqs=SEQS).model_copy(
        update={"requests": records, "samples": samples})
    benchmark = make_benchmark(state="succeeded")
    store_point(benchmark, result)
    context = chromium.new_context(viewport=viewport)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "owner")
    page.fill("#id_password", "owner-password")
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/runs/{benchmark.code}/")

    chart = page.locator("#timeline-chart")
    expect(chart.locator(".main-svg").first).to_be_visible()
    legend = chart.locator(".legendtext").evaluate_all("ts => ts.map(t => t.textContent)")
    assert legend[:3] == ["waiting for its send", "in flight before the first token",
                          "streaming"]
    assert "waiting" in legend and "running" in legend  # the engine's counts, beneath
    # One path a phase, every lane in it: 48 segments in flight, 48 streaming.
    drawn = page.evaluate("""() => document.getElementById("timeline-chart").data
        .map(t => t.x.filter(v => v === null).length)""")
    assert drawn[1] == BURST and drawn[2] == BURST
    expect(page.locator("#timeline-drawn")).to_have_text(
        "All 48 requests are drawn, one lane each, in the order they were due.")
    expect(page.locator("#timeline-phases")).to_contain_text("in flight before its first token")
    box = chart.bounding_box()
    assert box is not None and box["x"] + box["width"] <= viewport["width"]
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
    chart.scroll_into_view_if_needed()
    _shot(page, tmp_path, f"run-timeline-{name}")
    assert errors == []
    context.close()
