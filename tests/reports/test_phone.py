"""The customer report reads on a phone 390 px wide: nothing runs off the right edge.

Debian's Chromium through Playwright, as tests/reports/test_browser.py; the page is a GPU run
with a 40-hex checkpoint revision, a dated reference and node scaling, the case the issue saw
cut off (the comparison table's last column, the curve, the revision in its box).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from benchmarks.models import ExternalReference
from tests.reports.conftest import make_sweep
from tests.reports.helpers import make_report

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHROMIUM = "/usr/bin/chromium"
PHONE = {"width": 390, "height": 844}
REVISION = "0123456789abcdef0123456789abcdef01234567"

# Every element under the report whose right edge passes its card's (or the page's): a scroll
# box may hold wider content, which the reader scrolls inside the card.
OVERFLOWING = """() => {
  const width = document.documentElement.clientWidth;
  const inScrollBox = (el) => { for (let p = el.parentElement; p; p = p.parentElement) {
      if (p.classList && p.classList.contains("scroll")) return true; } return false; };
  const out = [];
  for (const el of document.querySelectorAll(".report-main *")) {
    const box = el.getBoundingClientRect();
    if (box.width === 0 || inScrollBox(el)) continue;
    const card = el.closest("section") || document.body;
    const limit = Math.min(width, card.getBoundingClientRect().right) + 1;
    if (box.right > limit) out.push(el.tagName + "#" + el.id + "." + el.className + " " +
                                    Math.round(box.right) + " > " + Math.round(limit));
  }
  return {page: document.documentElement.scrollWidth, width: width, out: out.slice(0, 10)};
}"""


@pytest.fixture
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip("install Debian's chromium: apt-get install chromium")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM,
                                             args=["--headless", "--no-sandbox", "--disable-gpu"])
        try:
            yield browser
        finally:
            browser.close()
    os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)


@pytest.mark.parametrize("language", ["en", "ko"])
def test_the_report_fits_a_390_px_phone(live_server, owner, browser, tmp_path, language):
    from playwright.sync_api import expect

    sweep = make_sweep(owner, launch_style="serve", revision=REVISION)
    reference = ExternalReference.objects.create(
        source="Vendor per-GPU figure for the same GPU", url="https://vendor.example/perf",
        value=20000.0, recorded_on="2025-03-01", gpu_name="NVIDIA H200",
        workload_spec="63-66 in / 256 out")
    report = make_report(sweep, owner, language=language, references=[reference])
    context = browser.new_context(viewport=PHONE, device_scale_factor=2, is_mobile=True)
    page = context.new_page()
    assert page.goto(f"{live_server.url}/r/{report.issued_token}/").status == 200
    expect(page.locator("body")).to_have_attribute("data-charts-drawn", "6")
    found = page.evaluate(OVERFLOWING)
    assert found["page"] <= found["width"], found
    assert found["out"] == [], found
    # The table's last column is read in full, the revision wraps inside its box.
    differs = page.locator("#comparison-table td.differs").first
    assert differs.bounding_box()["x"] + differs.bounding_box()["width"] <= PHONE["width"]
    assert REVISION in page.locator("#methodology").inner_text()
    for chart in ("#curve-chart", "#timeline-chart-1"):
        box = page.locator(f"{chart} .main-svg").first.bounding_box()
        assert box["x"] + box["width"] <= PHONE["width"], chart
    shot = tmp_path / f"report-phone-{language}.png"
    page.screenshot(path=str(shot), full_page=True)
    if os.environ.get("HEADROOM_SCREENSHOT_DIR"):  # CI keeps it for a person to look at
        target = Path(os.environ["HEADROOM_SCREENSHOT_DIR"])
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, target / shot.name)
    context.close()
