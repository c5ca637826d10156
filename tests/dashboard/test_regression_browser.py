"""The regression watch as an engineer uses it, in headless Debian Chromium: accept a run as the
plan's baseline from its page, then read a later run's verdict on its page and in the list."""

from __future__ import annotations

import pytest

from .test_browser import _screenshot
from .test_regression_watch import run_with

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_engineer_accepts_a_baseline_and_reads_a_regression(live_server, logged_in_page):
    from playwright.sync_api import expect

    page = logged_in_page
    baseline = run_with(1000.0, 1040.0, name="baseline sweep")
    candidate = run_with(800.0, name="after the upgrade")

    page.goto(f"{live_server.url}/runs/{candidate.code}/")
    expect(page.locator("#regression")).to_contain_text("has no accepted baseline")
    page.goto(f"{live_server.url}/runs/{baseline.code}/")
    page.click("#accept-baseline")
    expect(page.locator("#regression-verdict")).to_contain_text("accepted baseline")

    page.goto(f"{live_server.url}/runs/{candidate.code}/")
    expect(page.locator("#regression-verdict strong.verdict-regressed")).to_have_text("Regressed")
    expect(page.locator("#regression-configs li.verdict-regressed")).to_contain_text(
        "seqs=256 regressed: at burst 1000, output throughput 800.0 tok/s (-21.6%)")
    _screenshot(page, "regression-watch")
    page.goto(f"{live_server.url}/runs/")
    expect(page.locator("td.regression.verdict-regressed")).to_have_text("regressed")
    expect(page.locator("td.regression.verdict-baseline")).to_have_text("baseline")
    _screenshot(page, "regression-list")
