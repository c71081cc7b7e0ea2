"""The console in a real headless Chromium against the live server (SQLite is enough here: the
HTTP-level tests in test_console.py run both stores).

Without Chromium or playwright the test skips loudly, except under CI=true, where it fails:
CI must never pass with the browser test skipped.
"""

from __future__ import annotations

import os

import pytest

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
SCREENSHOT = "/tmp/console.png"


@pytest.fixture
def database_url(tmp_path) -> str:
    """Overrides conftest's parametrized store: SQLite only."""
    return f"sqlite:///{tmp_path}/store.sqlite"


def _why_no_browser() -> str | None:
    if not os.path.exists(CHROMIUM):
        return f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[dev]')"
    return None


@pytest.fixture
def browser():
    missing = _why_no_browser()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"{missing} (CI must run the browser test)", pytrace=False)
        pytest.skip(f"SKIPPING BROWSER TEST: {missing}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


def test_an_admin_tests_a_draft_then_saves_it_in_a_real_browser(live, browser):
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(live.url + "/console/")
    page.get_by_label("API token").fill(live.tokens["admin"])
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Run-code packages", exact=True)).to_be_visible()

    page.get_by_role("group", name="Python", exact=True).get_by_label("Allowlist").check()
    page.get_by_label("Python allow list").fill("pandas")
    page.get_by_label("Language", exact=True).select_option("python")
    page.get_by_label("Specs or command line").fill("pandas\nnumpy")
    page.get_by_role("button", name="Test against my unsaved draft").click()

    rows = page.locator("table.results tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("pandas")
    expect(rows.nth(0)).to_contain_text("Allowed")
    expect(rows.nth(1)).to_contain_text("numpy")
    expect(rows.nth(1)).to_contain_text("Denied")
    expect(page.get_by_label("Python allow list")).to_have_value("pandas")  # the draft is kept
    assert live.call("GET", "/api/v1/workspaces/acme/policy", live.tokens["admin"]).json["version"] == 0
    page.screenshot(path=SCREENSHOT, full_page=True)

    page.get_by_label("Note").fill("pandas for the data team")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_text("Saved. The policy is now version 2.")).to_be_visible()
    policy = live.call("GET", "/api/v1/workspaces/acme/policy", live.tokens["admin"]).json
    assert policy["python"] == {"mode": "allowlist", "allow": ["pandas"], "deny": []}
    assert policy["changed_by"] == "admin-token"
