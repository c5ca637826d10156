"""The comparison page's output parity in headless Debian Chromium, from stored points."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.models import Comparison

from .helpers import sweep
from .test_parity_pages import stored, with_outputs

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_parity_section_reads_and_opens(live_server, owner, page):
    from playwright.sync_api import expect

    benchmark = sweep()
    comparison = Comparison.objects.create(
        name="parity", baseline_point=stored(benchmark, 8, with_outputs()),
        candidate_point=stored(benchmark, 64, with_outputs(diverge={1: 2})))
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "owner")
    page.fill("#id_password", "owner-password")
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/comparisons/{comparison.code}/")
    expect(page.locator("#parity-sentence")).to_contain_text(
        "Outputs identical for 9 of 10 requests compared; 1 diverged, the earliest after token 2")
    expect(page.locator("#parity-samples table")).to_be_hidden()  # folded until asked
    page.click("#parity-samples summary")
    page.click("#parity-divergences summary")
    expect(page.locator("#parity-samples table")).to_be_visible()
    expect(page.locator("#parity-samples tbody tr")).to_have_count(4)
    expect(page.locator("#parity-samples tbody tr").nth(1)).to_contain_text("differs")
    folder = Path(__file__).resolve().parents[2] / "var" / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    page.locator("#output-parity").screenshot(path=str(folder / "comparison-parity.png"))
    assert errors == []
