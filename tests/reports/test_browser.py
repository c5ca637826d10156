"""Headless Debian Chromium opens a report link logged out: charts drawn, numbers as stored;
and the run page, logged in, beside it: the same operating point and the same measured step.

Factory-made stored points, no engine. Screenshots go to pytest's tmp dir and, when
HEADROOM_SCREENSHOT_DIR is set (CI), there too, so a person can look at the page.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission

from reports.facts import public_engine_label
from reports.models import Report
from tests.reports.conftest import make_sweep, point
from tests.reports.helpers import make_report, store_ladder

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

@pytest.fixture
def browser(chromium):
    return chromium


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
    response = page.goto(f"{live_server.url}/r/{report.issued_token}/")
    assert response.status == 200

    for chart in ("#curve-chart", "#queue-chart-0", "#queue-chart-1", "#scaling-chart",
                  "#timeline-chart-0", "#timeline-chart-1"):
        expect(page.locator(f"{chart}.js-plotly-plot .main-svg").first).to_be_visible()
    expect(page.locator("body")).to_have_attribute("data-charts-drawn", "6")
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
    response = client.get(f"/r/{report.issued_token}/report.pdf")
    assert response.status_code == 200, response.content[:500]
    assert response["Content-Type"] == "application/pdf"
    assert response.content.startswith(b"%PDF")
    assert len(response.content) > 20_000  # text and three drawn charts, not a blank page
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(response.content)
    _save(pdf)
    assert Report.objects.get(pk=report.pk).revoked_at is None


# --- the run page and the report name one operating point ----------------------------------------

# A setting past the two the report compares, as in the case study: seqs=256 saturates near 46k
# output tokens/s, and going on from 32 to 64 queued requests adds +0.7% (46,000 -> 46,300) while
# median latency rises +60% (2.0 s -> 3.2 s): the knee. Its operating point, seqs=256 at burst 32,
# delivers more than seqs=64's (41,600, the lower repeat at burst 32), so the default knee picks it,
# outside the report's own engine configs.
SATURATING_LADDER = [(16, 32000.0, 1500.0), (32, 46000.0, 2000.0), (64, 46300.0, 3200.0)]

# (median latency, output tokens/s) of each star (the operating point's marker) Plotly drew.
STARS_JS = """id => (document.getElementById(id).data || [])
    .filter(t => t.marker && t.marker.symbol === "star").map(t => [t.x[0], t.y[0]])"""

# A signed percentage as either page prints one: "+0.7%", "+0.65%", "+60.0%".
PERCENTAGE = re.compile(r"[+-]\d[\d,]*(?:\.\d+)?%")


def _open_run_page_logged_in(context: Any, url: str, owner: Any) -> Any:
    from playwright.sync_api import expect

    page = context.new_page()
    page.goto(url)  # the login form, then back to the run page
    page.fill("#id_username", owner.username)
    page.fill("#id_password", "owner-password")
    page.click("form.narrow button[type=submit]")
    expect(page.locator("#operating-point-chosen")).to_be_visible()
    _draw_against_median_latency(page)
    return page


def _draw_against_median_latency(page: Any) -> None:
    """The run page's chart on the report's axes: the knee is read on median E2EL."""
    from playwright.sync_api import expect

    expect(page.locator("#throughput-chart .main-svg").first).to_be_visible()
    page.select_option("#latency-metric", "median_e2el_ms")
    expect(page.locator("#throughput-chart .xtitle")).to_contain_text("E2EL")


def _open_report_logged_out(browser: Any, url: str) -> tuple[Any, Any]:
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1200, "height": 900})  # no cookies
    page = context.new_page()
    assert page.goto(url).status == 200
    expect(page.locator("#curve-chart.js-plotly-plot .main-svg").first).to_be_visible()
    return context, page


def _run_page_operating_point(page: Any) -> dict[str, Any]:
    chosen = page.locator("#operating-point-chosen")
    return {
        "config": chosen.get_attribute("data-config"),
        "load": chosen.get_attribute("data-load"),
        "output_throughput": float(chosen.get_attribute("data-output-throughput")),
        # The run page draws latency in ms, the report in s.
        "stars": [(x / 1000, y) for x, y in page.evaluate(STARS_JS, "throughput-chart")],
        "sentence": page.locator("#operating-point-sentence").inner_text(),
    }


def _report_operating_point(page: Any) -> dict[str, Any]:
    selected = page.locator("#curve-selected")
    return {
        "config": selected.get_attribute("data-config"),
        "text": selected.inner_text(),
        "output_throughput": float(selected.get_attribute("data-output-throughput")),
        "stars": [tuple(star) for star in page.evaluate(STARS_JS, "curve-chart")],
        "sentence": page.locator("#curve-sentence").inner_text(),
    }


def _reads_as(sentence: str, values: list[float]) -> bool:
    """Whether the sentence's percentages are these values, each rounded to the decimals it
    prints: the report and the run page each have their own precision ("+0.7%", "+0.65%")."""
    printed = PERCENTAGE.findall(sentence)
    decimals = [len(p.rstrip("%").partition(".")[2]) for p in printed]
    figures = [float(p.rstrip("%").replace(",", "")) for p in printed]
    return len(printed) == len(values) and figures == [
        round(value, places) for value, places in zip(values, decimals, strict=True)]


def _screenshot(page: Any, tmp_path: Path, name: str) -> None:
    shot = tmp_path / f"{name}.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    _save(shot)


def _assert_same_point(run: dict[str, Any], report: dict[str, Any]) -> None:
    assert report["config"] == run["config"]
    # The same config, its settings in words for the customer.
    assert report["text"].startswith(f"{public_engine_label(run['config'])} at {run['load']}: ")
    assert report["output_throughput"] == run["output_throughput"]
    # Each chart marks that point with one star, at the same place on the same axes.
    assert len(run["stars"]) == 1 and run["stars"][0][1] == run["output_throughput"]
    assert report["stars"] == run["stars"]


def test_the_run_page_and_the_sent_report_show_the_same_default_operating_point_and_step(
        live_server, owner, browser, tmp_path):
    sweep = make_sweep(owner)
    store_ladder(sweep, 256, SATURATING_LADDER)
    # Nothing saved: both pages compute the default knee.
    report = make_report(sweep, owner)  # seqs=8 -> seqs=64 at burst 32, published

    context = browser.new_context(viewport={"width": 1200, "height": 900})
    run_page = _open_run_page_logged_in(context, f"{live_server.url}/runs/{sweep.code}/", owner)
    run = _run_page_operating_point(run_page)
    _screenshot(run_page, tmp_path, "operating-point-run-page")
    report_context, report_page = _open_report_logged_out(
        browser, f"{live_server.url}/r/{report.issued_token}/")
    shown = _report_operating_point(report_page)
    _screenshot(report_page, tmp_path, "operating-point-report")

    assert (run["config"], run["load"], run["output_throughput"]) == (
        "seqs=256", "burst 32", 46000.0)
    _assert_same_point(run, shown)
    # Both quote the measured step, not the knee's thresholds (2% / 20%).
    step = [(46300 - 46000) / 46000 * 100, (3200 - 2000) / 2000 * 100]
    assert _reads_as(run["sentence"], step), run["sentence"]
    assert _reads_as(shown["sentence"], step), shown["sentence"]
    assert "going on to burst 64" in shown["sentence"]
    # One sentence, written by the judgement layer for both pages.
    assert run["sentence"] == shown["sentence"]
    report_context.close()
    context.close()


def test_an_operating_point_chosen_on_the_run_page_is_the_one_the_report_shows(
        live_server, owner, browser, tmp_path):
    from playwright.sync_api import expect

    # The one permission of the Engineer role this needs; granted directly because a
    # transactional test's flush drops the groups the migrations made.
    owner.user_permissions.add(Permission.objects.get(
        content_type__app_label="benchmarks", codename="add_operatingpoint"))
    sweep = make_sweep(owner)
    store_ladder(sweep, 256, SATURATING_LADDER)
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    run_page = _open_run_page_logged_in(context, f"{live_server.url}/runs/{sweep.code}/", owner)
    # The engineer overrides the knee (seqs=256) with the report's own "after" point.
    reason = "the customer's latency target rules out 256 running requests"
    run_page.click("#operating-point summary")
    run_page.select_option("#id_method", "override")
    run_page.select_option("#id_point", str(point(sweep, 64, 32).pk))
    run_page.fill("#id_reason", reason)
    run_page.click("#operating-point-form button[type=submit]")
    expect(run_page.locator("#operating-point-reason")).to_have_text(reason)
    _draw_against_median_latency(run_page)
    run = _run_page_operating_point(run_page)
    _screenshot(run_page, tmp_path, "operating-point-override-run-page")

    report = make_report(sweep, owner)  # published after the choice
    report_context, report_page = _open_report_logged_out(
        browser, f"{live_server.url}/r/{report.issued_token}/")
    shown = _report_operating_point(report_page)
    _screenshot(report_page, tmp_path, "operating-point-override-report")

    assert (run["config"], run["load"], run["output_throughput"]) == (
        "seqs=64", "burst 32", 41873.6)
    _assert_same_point(run, shown)
    assert run["sentence"] == shown["sentence"] == (
        f"The operating point was chosen by an engineer: {reason}.")
    report_context.close()
    context.close()
