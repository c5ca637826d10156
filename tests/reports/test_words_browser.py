"""The customer report in headless Debian Chromium at 1,440 x 900 and on a 390 px phone: every
"Held fixed" item has its value (the host, whose name the page hides, is left out), and engine
settings read in words, never as the run page's short label."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.reports.conftest import make_sweep
from tests.reports.helpers import make_report
from tests.reports.test_phone import OVERFLOWING

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}


@pytest.mark.parametrize(("viewport", "name"), [(DESKTOP, "1440"), (PHONE, "phone")])
def test_held_fixed_items_have_values_and_engine_settings_read_in_words(
    live_server, owner, chromium, tmp_path, viewport, name
):
    from playwright.sync_api import expect

    sweep = make_sweep(owner, launch_style="serve")  # every point on one host
    report = make_report(sweep, owner, language="en")
    context = chromium.new_context(viewport=viewport)
    page = context.new_page()
    assert page.goto(f"{live_server.url}/r/{report.issued_token}/").status == 200
    expect(page.locator("body")).to_have_attribute("data-charts-drawn", "6")

    held = page.locator("#headline ul.held li").all_inner_texts()
    assert held, "the two sides hold factors fixed: the list must not be empty"
    for item in held:
        _label, _, value = item.partition(": ")
        assert value.strip(), f"held fixed without a value: {item!r}"
    assert "host" not in [item.split(":")[0] for item in held]

    configs = page.locator("#headline .figure-config").all_inner_texts()
    assert configs == ["max_num_seqs 8", "max_num_seqs 64"]
    legend = page.locator("#curve-chart .legendtext").evaluate_all(
        "ts => ts.map(t => t.textContent)")
    assert "max_num_seqs 8" in legend and "max_num_seqs 64" in legend
    assert "seqs=" not in page.locator("body").inner_text()

    found = page.evaluate(OVERFLOWING)
    assert found["page"] <= found["width"] and found["out"] == [], found
    shot = tmp_path / f"report-words-{name}.png"
    page.screenshot(path=str(shot), full_page=True)
    if os.environ.get("HEADROOM_SCREENSHOT_DIR"):
        target = Path(os.environ["HEADROOM_SCREENSHOT_DIR"])
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, target / shot.name)
    context.close()
