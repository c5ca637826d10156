"""Fixtures every test package shares: the personas, the worker side, the migrations' helpers
(tests/personas.py, tests/workers.py, tests/migrations.py) and headless Debian Chromium (never a
downloaded browser)."""

from __future__ import annotations

import os

import pytest

pytest_plugins = ["tests.personas", "tests.workers", "tests.migrations"]

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


@pytest.fixture
def browser_page(chromium):
    """A page in headless Chromium."""
    return chromium.new_page()


@pytest.fixture
def logged_in_page(browser_page, live_server, owner):
    """browser_page after logging in as the owner (an engineer)."""
    browser_page.goto(f"{live_server.url}/accounts/login/")
    browser_page.fill("#id_username", "owner")
    browser_page.fill("#id_password", "owner-password")
    browser_page.click("button[type=submit]")
    return browser_page
