"""Fixtures every test package shares: headless Debian Chromium (never a downloaded browser)."""

from __future__ import annotations

import os

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]


@pytest.fixture
def chromium():
    """A headless Chromium browser driven by Playwright's sync API; skips without one."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip("install Debian's chromium: apt-get install chromium chromium-driver")
    # Playwright's sync API runs an event loop in this thread; the ORM calls in these tests are
    # plain blocking calls made between browser steps, never inside the loop.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
    os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
