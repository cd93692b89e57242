"""Real-browser tests: Playwright driving Debian's chromium against the live server.

``playwright install`` cannot download browsers here, so the tests use
``/usr/bin/chromium`` (override with ``CHROMIUM_PATH``). A missing browser is a
failure with instructions, never a skip.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from tests.browser.a11y import AXE

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# Playwright's sync API runs an event loop in this thread; the live server and
# the test's ORM calls are ordinary synchronous code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        pytest.fail(f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 390, "height": 844})
    # axe-core in every page from the start, so a check never reloads a page that a
    # POST produced (tests/browser/a11y.py).
    context.add_init_script(path=str(AXE))
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()
