"""A person's path in headless Debian Chromium: log in, fill the form, watch the run finish,
find the chart drawn. Needs a real worker and engine: run under flock /tmp/headroom-engine.lock.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchmarks.models import Checkpoint, Node, Runtime

pytestmark = [pytest.mark.browser, pytest.mark.engine, pytest.mark.django_db(transaction=True)]

RUN_TIMEOUT_MS = 900_000


@pytest.fixture
def page(browser_page):
    return browser_page


def test_a_person_launches_a_sweep_and_sees_its_chart(
    live_server, celery_worker_queue, tiny_model_dir, owner, page
):
    from playwright.sync_api import expect

    node = Node.objects.get(queue=celery_worker_queue)
    checkpoint = Checkpoint.objects.create(repo=str(tiny_model_dir), approved=True)
    runtime = Runtime.objects.create(engine="vllm", version="0.32.0", approved=True)

    page.goto(f"{live_server.url}/runs/")
    page.fill("#id_username", "owner")
    page.fill("#id_password", "owner-password")
    page.click("button[type=submit]")
    expect(page.locator("h1")).to_have_text("Runs")

    page.goto(f"{live_server.url}/runs/new/")
    page.select_option("#id_node", str(node.pk))
    page.select_option("#id_checkpoint", str(checkpoint.pk))
    page.select_option("#id_runtime", str(runtime.pk))
    page.select_option("#id_workload_preset", "custom")
    page.click("details summary")
    page.fill("#id_input_tokens_min", "20")
    page.fill("#id_input_tokens_max", "24")
    # Long enough for the 0.5 s queue sampler to catch the engine busy several times, even on a
    # host that runs the tiny model at 2,500 tokens/s (32 x 256 tokens: 3 s there, more here).
    # 64-token outputs made a 0.4 s point that fell between two samples on such a host.
    page.fill("#id_output_tokens", "256")
    page.fill("#id_request_count", "32")
    page.select_option("#id_endpoint", "completions")
    page.fill("#id_max_num_seqs", "4")
    page.fill("#id_load_levels", "32")
    _screenshot(page, "launch-form")
    page.click("#launch-form button[type=submit]")
    # Nothing runs before the confirmation page, which shows the plan's size and cost first.
    expect(page.locator("h1")).to_have_text("Confirm the launch")
    expect(page.locator("#size-points")).to_have_text("1")
    _screenshot(page, "launch-confirm")
    page.click("#confirm-form button[type=submit]")

    expect(page.locator("#run-state")).to_have_text("succeeded", timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#throughput-chart .main-svg").first).to_be_visible()
    expect(page.locator("#samples-chart .main-svg").first).to_be_visible(timeout=30_000)
    expect(page.locator("table.points tbody tr")).to_have_count(1)
    expect(page.locator("#run-estimate")).to_contain_text("- took ")
    # The point was sampled densely enough to be judged: no sparse-samples caveat, a verdict.
    row = page.locator("table.points tbody tr").first
    expect(row).not_to_contain_text("sparse-queue-samples")
    expect(row).not_to_contain_text("no verdict")
    _screenshot(page, "launched-run")
    page.goto("about:blank")  # stop polling before the live server and database go away


def _screenshot(page, name: str) -> None:
    """Kept for a person to look at when HEADROOM_SCREENSHOT_DIR is set."""
    target = os.environ.get("HEADROOM_SCREENSHOT_DIR")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(target) / f"{name}.png"), full_page=True)
