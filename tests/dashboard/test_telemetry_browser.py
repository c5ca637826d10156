"""The run page's telemetry chart in headless Debian Chromium, from stored points (no engine)."""

from __future__ import annotations

import pytest

from benchmarks.models import Benchmark
from benchmarks.storage.points import store_point
from tests.benchmarks.storage.test_telemetry import CPU_READINGS, gpu_point, with_telemetry
from tests.rows import make_benchmark, make_point_result

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def page(logged_in_page):
    return logged_in_page


def trace_names(page) -> list[str]:
    return page.evaluate(
        "() => (document.getElementById('telemetry-chart').data || []).map(t => t.name)")


def test_the_chart_draws_gpu_utilization_and_power_then_a_cpu_engines_cores(live_server, page):
    from playwright.sync_api import expect

    benchmark = make_benchmark(state="running")
    store_point(benchmark, gpu_point(max_num_seqs=256))
    store_point(benchmark, with_telemetry(make_point_result(max_num_seqs=512), CPU_READINGS,
                                          "psutil"))
    Benchmark.objects.filter(pk=benchmark.pk).update(state="succeeded")
    page.goto(f"{live_server.url}/runs/{benchmark.code}/")
    expect(page.locator("#telemetry-chart .main-svg").first).to_be_attached()
    page.wait_for_function("() => document.getElementById('telemetry-chart').data")
    assert trace_names(page) == ["GPU 0 utilization %", "GPU 0 power W"]
    page.select_option("#telemetry-point", index=1)
    page.wait_for_function(
        "() => document.getElementById('telemetry-chart').data[0].name.startsWith('CPU')")
    assert trace_names(page) == ["CPU cores busy"]
    assert page.evaluate(
        "() => document.getElementById('telemetry-chart').layout.yaxis.title.text"
    ) == "CPU cores busy (CPU engine)"


def test_a_run_without_telemetry_says_so_instead_of_an_empty_chart(live_server, page):
    from playwright.sync_api import expect

    benchmark = make_benchmark(state="running")
    store_point(benchmark, make_point_result())
    Benchmark.objects.filter(pk=benchmark.pk).update(state="succeeded")
    page.goto(f"{live_server.url}/runs/{benchmark.code}/")
    expect(page.locator("#telemetry-none")).to_be_visible()
    expect(page.locator("#telemetry-controls")).to_be_hidden()
