"""The first demo sweep's confirmation page in headless Debian Chromium at 1,440 x 900 and on a
390 px phone: on a CPU node that measured no start yet, the estimate counts a CPU engine's
start, not a GPU's ten minutes, and the page fits the window."""

from __future__ import annotations

import pytest

from demo.management.commands.launch_demo_sweep import DEMO_FORM
from tests.rows import make_checkpoint, make_node, make_runtime

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Sets each named field of the launch form as a person would, then submits it.
FILL_AND_SUBMIT = """(values) => {
  const form = document.getElementById("launch-form");
  for (const [name, value] of Object.entries(values)) {
    const field = form.elements[name];
    if (!field) throw new Error("the launch form has no field " + name);
    if (field.type === "checkbox") field.checked = Boolean(value);
    else if (field.length !== undefined && field.tagName !== "SELECT") {
      for (const radio of field) radio.checked = radio.value === String(value);
    } else field.value = String(value);
  }
  form.querySelector("button[type=submit]").click();
}"""


@pytest.mark.parametrize("viewport", [{"width": 1440, "height": 900},
                                      {"width": 390, "height": 844}])
def test_the_first_demo_sweep_is_estimated_with_a_cpu_engines_start(
    live_server, owner, chromium, viewport
):
    from playwright.sync_api import expect

    node = make_node("cpu-local", gpu_name="", gpu_count=0, launch_style="cpu",
                     cpu_model="AMD EPYC")
    checkpoint = make_checkpoint(repo="nvidia/tiny-model", revision="", precision="bf16",
                                 kv_cache_dtype="")
    runtime = make_runtime(version="0.32.0")
    context = chromium.new_context(viewport=viewport)
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "owner")
    page.fill("#id_password", "owner-password")
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/runs/new/")
    page.evaluate(FILL_AND_SUBMIT, {**DEMO_FORM, "node": node.pk, "checkpoint": checkpoint.pk,
                                    "runtime": runtime.pk})

    expect(page.locator("h1")).to_have_text("Confirm the launch")
    basis = page.locator("#estimate-basis")
    expect(basis).to_contain_text("no engine start measured on this CPU node: a CPU engine's "
                                  "start as measured on two cores, 90 s")
    assert "default 10 min" not in basis.inner_text()
    # 3 starts of 90 s, and the 15 points' tokens at the default rate (the rest of the figure).
    expect(page.locator("#size-engine-starts")).to_have_text("3")
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
    for element in ("#estimate-wall", "#estimate-basis"):
        box = page.locator(element).bounding_box()
        assert box is not None and box["x"] + box["width"] <= viewport["width"], element
    context.close()
