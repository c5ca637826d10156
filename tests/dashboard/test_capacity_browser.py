"""A capacity plan as an engineer makes and checks it, in headless Debian Chromium: plan from the
run page's form, read the headline, press Verify, and read the check's verdict beside the
engine's speed once its points are in."""

from __future__ import annotations

import pytest

from benchmarks.models import CapacityPlan
from runner.schema.plan import LoadSpec

from .test_browser import _screenshot
from .test_capacity_plans import broker, run, store_check_draws  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_engineer_plans_capacity_and_reads_the_engines_check(
        live_server, logged_in_page, run, broker):  # noqa: F811 (fixtures)
    from playwright.sync_api import expect

    page = logged_in_page
    page.goto(f"{live_server.url}/runs/{run.code}/")
    # The sweep's bursts: 200 requests/s per replica within a median E2EL of 5 s.
    page.fill("#capacity-form #id_rate", "1000")
    page.fill("#capacity-form #id_slos", "e2el:p50:5000")
    page.click("#capacity-form button[type=submit]")
    expect(page.locator("#capacity-headline")).to_have_text(
        "At max_num_seqs 256 this traffic needs 5 CPU engines; at 512, 5.")

    page.select_option("#capacity-check-form #id_config", "seqs=512")
    page.fill("#capacity-check-form #id_repeats", "2")
    page.click("#capacity-check-form button[type=submit]")
    expect(page.locator("#capacity-check")).to_contain_text("No point measured yet")
    assert broker.llen(run.node.queue) == 1

    row = CapacityPlan.objects.get(benchmark=run)
    store_check_draws(row, LoadSpec(shape="rate", rate=200.0, num_requests=2000),
                      "median_e2el_ms", (4200.0, 4600.0))
    store_check_draws(row, LoadSpec(shape="burst", num_requests=2000), "median_tpot_ms",
                      (29.0, 31.0))
    page.reload()
    result = page.locator("#capacity-check-result")
    expect(result).to_contain_text("the targets held in 2 of 2 draw(s)")
    expect(result).to_contain_text("ran each output token 49.9% slower than when the plan "
                                   "measured it")
    _screenshot(page, "capacity-plan-checked")
