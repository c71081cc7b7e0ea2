"""Debian's Chromium through playwright, for the console's browser tests and `make screenshots`.

Never a downloaded browser: playwright drives /usr/bin/chromium. The console's flows that both
the tests and the screenshots walk through live here too, so the pictures in docs/ show
exactly what the tests check.
"""

from __future__ import annotations

import contextlib
import os

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
VIEWPORT = {"width": 1280, "height": 900}


def why_no_browser() -> str | None:
    if not os.path.exists(CHROMIUM):
        return f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[dev]')"
    return None


@contextlib.contextmanager
def chromium():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


def sign_in(browser, url: str, token: str, viewport: dict | None = None):
    """A new page, signed in to the console at `url` with `token`; it lands on the overview."""
    page = browser.new_page(viewport=viewport or VIEWPORT)
    page.goto(url + "/")
    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    return page


def open_page(page, label: str) -> None:
    """Follow one of the console's navigation links."""
    page.get_by_role("navigation", name="Console").get_by_role("link", name=label, exact=True).click()


def try_a_draft(page, allow: str, specs: str) -> None:
    """On Run-code packages: switch Python to Allowlist with `allow`, and test `specs` against it."""
    open_page(page, "Run-code packages")
    page.get_by_role("group", name="Python", exact=True).get_by_label("Allowlist").check()
    page.get_by_label("Python allow list").fill(allow)
    page.get_by_label("Language", exact=True).select_option("python")
    page.get_by_label("Specs or command line").fill(specs)
    page.get_by_role("button", name="Test against my unsaved draft").click()
    page.locator("#results").wait_for()
