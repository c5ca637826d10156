"""The run page's judgement additions drawn in headless Debian Chromium (no engine needed)."""

from __future__ import annotations

import datetime

import pytest

from benchmarks.models import ExternalReference

from .helpers import sweep

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_curve_chart_marks_the_operating_point_frontier_and_references(
    live_server, owner, page
):
    from playwright.sync_api import expect

    benchmark = sweep()
    ExternalReference.objects.create(
        source="Vendor blog", url="https://example.com/a", recorded_on=datetime.date(2026, 10, 1),
        value=2400.0, unit="output tokens/s", gpu_name="NVIDIA H200",
        workload_spec="63-66 in / 256 out")
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "owner")
    page.fill("#id_password", "owner-password")
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/runs/{benchmark.code}/")

    expect(page.locator("#throughput-chart .main-svg").first).to_be_visible()
    legend = page.locator("#throughput-chart .legendtext")
    expect(legend.filter(has_text="Operating point")).to_have_count(1)
    expect(page.locator("#pareto-chart .legendtext").filter(has_text="Pareto frontier")).to_have_count(1)
    expect(page.locator("#throughput-chart .annotation-text").first).to_contain_text("2026-10-01")
    expect(page.locator("#operating-point-sentence")).to_contain_text("+0.67% output tokens/s")
    page.screenshot(path="/tmp/e_run_page.png", full_page=True)
    assert errors == []


def test_the_points_table_shows_config_load_throughput_latency_and_verdict_at_1440_px(
    live_server, owner, chromium
):
    benchmark = sweep()
    page = chromium.new_page(viewport={"width": 1440, "height": 900})
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "owner")
    page.fill("#id_password", "owner-password")
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/runs/{benchmark.code}/")

    headers = page.locator("table.points thead th")
    assert [headers.nth(i).inner_text().split("\n")[0] for i in range(6)] == [
        "Engine config", "Load", "Rep.", "Output tok/s", "Median E2EL ms vLLM",
        "Bottleneck verdict (evidence)"]
    # Without scrolling sideways: each of these cells ends inside the window.
    first_row = page.locator("table.points tbody tr").first
    for cell in range(6):
        box = first_row.locator("td").nth(cell).bounding_box()
        assert box is not None and box["x"] + box["width"] <= 1440, cell
    assert page.evaluate("window.scrollX") == 0
    first_row.scroll_into_view_if_needed()
    page.screenshot(path="/tmp/e_points_table_1440.png")
