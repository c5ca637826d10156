"""The runs list and the run page's points table fit the window, in headless Debian Chromium at
1,440 x 900 and on a 390 px phone: no column cut off or hidden behind a sideways scroll, and a
checkpoint named, never by its path on a machine."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.judgement.helpers import sweep
from tests.rows import make_checkpoint, make_node

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
VIEWPORTS = [(DESKTOP, "1440"), (PHONE, "phone")]
# A local checkpoint as the demo registers it: its folder, resolved on the machine.
LOCAL_MODEL = "/srv/people/alice-engineer/headroom/var/tiny-model"

# Every cell of the table whose right edge passes the window's, and how much wider than its box
# the table's scroll box is (0: nothing hidden behind a sideways scroll).
OVERFLOW = """(selector) => {
  const table = document.querySelector(selector);
  const box = table.closest(".scroll") || table.parentElement;
  const width = document.documentElement.clientWidth;
  const out = [];
  for (const cell of table.querySelectorAll("th, td")) {
    const r = cell.getBoundingClientRect();
    if (r.width > 0 && r.right > width + 1) out.push(cell.textContent.trim().slice(0, 40));
  }
  return {hidden: box.scrollWidth - box.clientWidth, page: document.documentElement.scrollWidth,
          width: width, out: out.slice(0, 10)};
}"""


def _log_in(chromium, live_server, viewport):
    context = chromium.new_context(viewport=viewport)
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "owner")
    page.fill("#id_password", "owner-password")
    page.click("button[type=submit]")
    return context, page


def _shot(page, tmp_path: Path, name: str) -> None:
    shot = tmp_path / f"{name}.png"
    page.screenshot(path=str(shot), full_page=True)
    target = os.environ.get("HEADROOM_SCREENSHOT_DIR")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(target) / shot.name)


def _fits(page, selector: str, viewport: dict[str, int]) -> None:
    found = page.evaluate(OVERFLOW, selector)
    assert found["hidden"] <= 1 and found["out"] == [], found
    assert found["page"] <= viewport["width"], found


@pytest.mark.parametrize(("viewport", "name"), VIEWPORTS)
def test_the_runs_list_fits_and_names_a_local_checkpoint_by_its_folder(
    live_server, owner, chromium, tmp_path, viewport, name
):
    from playwright.sync_api import expect

    node = make_node(queue="cpu-local", gpu_name="", gpu_count=0, launch_style="cpu",
                     cpu_model="AMD EPYC 9R14 96-Core Processor")
    checkpoint = make_checkpoint(repo=LOCAL_MODEL, revision="22b68337" + "0" * 32,
                                 precision="bf16", kv_cache_dtype="")
    sweep(node=node, checkpoint=checkpoint, hardware=node.hardware_label(),
          name="Demo: max_num_seqs sweep on the CPU engine")
    context, page = _log_in(chromium, live_server, viewport)
    page.goto(f"{live_server.url}/runs/")

    cells = page.locator("table.runs tbody tr").first.locator("td")
    expect(cells.nth(2)).to_have_text("tiny-model @22b68337")  # the Model column
    assert "/srv/people" not in page.locator("body").inner_text()
    assert "tiny-model@22b68337 bf16" in page.locator("select[name=model]").inner_text()
    _fits(page, "table.runs", viewport)
    best = cells.nth(6)  # Best output tok/s
    box = best.bounding_box()
    assert box is not None and box["x"] + box["width"] <= viewport["width"]
    _shot(page, tmp_path, f"runs-list-{name}")
    context.close()


@pytest.mark.parametrize(("viewport", "name"), VIEWPORTS)
def test_the_points_table_shows_its_decisions_and_folds_the_rest_inside_the_window(
    live_server, owner, chromium, tmp_path, viewport, name
):
    from playwright.sync_api import expect

    benchmark = sweep()
    context, page = _log_in(chromium, live_server, viewport)
    page.goto(f"{live_server.url}/runs/{benchmark.code}/")

    row = page.locator("table.points tbody tr").first
    expect(row.locator("td.verdict strong")).to_be_visible()
    _fits(page, "table.points", viewport)
    # The p99 latency is a decision: in the row, inside the window, without scrolling sideways.
    p99 = row.locator("td[data-label='p99 E2EL ms (vLLM)']")
    box = p99.bounding_box()
    assert box is not None and box["x"] + box["width"] <= viewport["width"]
    # Every other figure is one click away, in its own table.
    more = page.locator("#point-figures")
    expect(more.locator("table.points-more")).to_be_hidden()
    more.locator("summary").click()
    figures = more.locator("table.points-more tbody tr")
    expect(figures).to_have_count(benchmark.points.count())
    expect(more.locator("thead")).to_contain_text("Median TTFT ms")
    if name == "1440":
        _fits(page, "table.points-more", viewport)
    else:  # a phone scrolls that table inside its card, never the page
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
    assert page.evaluate("window.scrollX") == 0
    page.locator("#points").scroll_into_view_if_needed()
    _shot(page, tmp_path, f"points-table-{name}")
    context.close()
