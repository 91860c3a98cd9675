"""Browser tests: Playwright for Python driving the system's Chromium against pytest-django's live server.

Browsers are never downloaded: Chromium is Debian's (`apt-get install chromium`), launched by path. Without
playwright or a Chromium binary every test here is skipped, not failed. The live server is pytest-django's
(Django's LiveServerThread with the staticfiles handler, on the in-memory SQLite test database it shares
with the test), so the pages get their CSS as in production.
"""

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or (
    "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)


@pytest.fixture(scope="package")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install -e '.[dev]')")
    if CHROMIUM is None:
        pytest.skip("no Chromium binary (apt-get install chromium)")
    # Playwright's sync API keeps an asyncio loop running on this thread for as long as it lives, and
    # Django refuses ORM calls under a running loop. The tests' ORM calls are plain synchronous code (the
    # loop only waits for the browser), so the check is lifted, for this package and only while the
    # browser lives; the live server answers from its own threads, where no loop runs.
    environment = pytest.MonkeyPatch()
    environment.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    playwright = sync_playwright().start()
    try:
        # Chromium's sandbox refuses to start as root (CI runs as root).
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                              args=["--no-sandbox"] if os.geteuid() == 0 else [])
        yield launched
        launched.close()
    finally:
        playwright.stop()
        environment.undo()


@pytest.fixture
def new_page(browser, live_server):
    """new_page() -> a page in a fresh browser context (its own cookies: another person) on the live
    server; `page.goto("/path")` is relative to it."""
    contexts = []

    def make():
        context = browser.new_context(base_url=live_server.url, viewport={"width": 1440, "height": 900})
        context.set_default_timeout(10_000)
        contexts.append(context)
        return context.new_page()

    yield make
    for context in contexts:
        context.close()


@pytest.fixture
def page(new_page):
    """A fresh browser context (no cookies) on the live server: `page.goto("/path")` is relative to it."""
    return new_page()
