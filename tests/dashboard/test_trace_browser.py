"""The run page's request-length histograms in headless Debian Chromium, from a stored point
(no engine)."""

from __future__ import annotations

import pytest

from benchmarks.models import Benchmark
from benchmarks.storage.points import store_point
from tests.rows import make_benchmark

from .test_trace_launch import lengths_point

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def page(logged_in_page):
    return logged_in_page


def test_the_run_page_draws_the_logs_histogram_against_the_sent_one(live_server, page):
    from playwright.sync_api import expect

    benchmark = make_benchmark(state="running")
    store_point(benchmark, lengths_point())
    Benchmark.objects.filter(pk=benchmark.pk).update(state="succeeded")
    page.goto(f"{live_server.url}/runs/{benchmark.code}/")
    for chart in ("lengths-chart-0", "lengths-chart-1"):
        expect(page.locator(f"#{chart} .main-svg").first).to_be_attached()
    bars = page.evaluate(
        "() => document.getElementById('lengths-chart-0').data.map(t => [t.name, t.y])")
    assert bars == [["log.csv (8 requests)", [75, 25]], ["sent (4 requests)", [50, 50]]]
    page.locator("#lengths").screenshot(path=str(_screenshots() / "run-lengths.png"))


def _screenshots():
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "var" / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder
