"""Headless Debian Chromium opens a report link logged out: charts drawn, numbers as stored.

Factory-made stored points, no engine. Screenshots go to pytest's tmp dir and, when
HEADROOM_SCREENSHOT_DIR is set (CI), there too, so a person can look at the page.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from reports.models import Report
from tests.reports.conftest import make_sweep, point
from tests.reports.helpers import make_report

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]


@pytest.fixture
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip("install Debian's chromium: apt-get install chromium")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
    os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)


def _save(path: Path) -> None:
    target = os.environ.get("HEADROOM_SCREENSHOT_DIR")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(target) / path.name)


def _as_number(text: str) -> float:
    return float(text.replace(",", "").strip())


@pytest.mark.parametrize("language", ["en", "ko"])
def test_a_logged_out_visitor_sees_the_charts_drawn_and_the_stored_numbers(
    live_server, owner, browser, tmp_path, language
):
    from playwright.sync_api import expect

    sweep = make_sweep(owner)
    report = make_report(sweep, owner, language=language)
    baseline, candidate = point(sweep, 8, 32), point(sweep, 64, 32)
    context = browser.new_context(viewport={"width": 1200, "height": 900})  # no cookies
    page = context.new_page()
    response = page.goto(f"{live_server.url}/r/{report.token}/")
    assert response.status == 200

    for chart in ("#curve-chart", "#queue-chart-0", "#queue-chart-1", "#scaling-chart"):
        expect(page.locator(f"{chart}.js-plotly-plot .main-svg").first).to_be_visible()
    expect(page.locator("body")).to_have_attribute("data-charts-drawn", "4")
    # Plotly drew the stored points: one marker per single-replica point, plus the star.
    markers = page.locator("#curve-chart .scatterlayer .point").count()
    assert markers == sweep.points.filter(replicas=1).count() + 1

    before = page.locator("#headline-before")
    after = page.locator("#headline-after")
    assert _as_number(before.inner_text()) == round(baseline.output_throughput)
    assert _as_number(after.inner_text()) == round(candidate.output_throughput)
    assert float(after.get_attribute("data-value")) == candidate.output_throughput
    ratio = candidate.output_throughput / baseline.output_throughput
    assert page.locator("#headline-ratio").inner_text() == f"{ratio:.2f}x"

    shot = tmp_path / f"report-{language}.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    _save(shot)
    page.emulate_media(media="print")
    expect(page.locator(".report-tools")).to_be_hidden()
    context.close()


def test_the_pdf_download_prints_the_report_with_chromium(owner, client, tmp_path):
    sweep = make_sweep(owner)
    report = make_report(sweep, owner)
    response = client.get(f"/r/{report.token}/report.pdf")
    assert response.status_code == 200, response.content[:500]
    assert response["Content-Type"] == "application/pdf"
    assert response.content.startswith(b"%PDF")
    assert len(response.content) > 20_000  # text and three drawn charts, not a blank page
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(response.content)
    _save(pdf)
    assert Report.objects.get(pk=report.pk).revoked_at is None
