"""In a real headless Chromium: an admin approves a request for 7 days in two clicks, sees the
exception on the packages page, and sees the impact preview follow the draft."""

from __future__ import annotations

from tests.interface.test_console_browser import browser, database_url, launched_chromium  # noqa: F401 - fixtures

API = "/api/v1/workspaces/acme"


def test_an_admin_approves_for_a_week_then_previews_a_draft(live, browser):  # noqa: F811
    from playwright.sync_api import expect

    sandbox, admin = live.tokens["sandbox"], live.tokens["admin"]
    live.call("PUT", API + "/policy", admin, {"python": {"mode": "allowlist", "allow": ["pandas"]}})
    for spec in ("pandas", "pandas", "pandas", "scipy"):
        live.call(
            "POST", API + "/evaluate", sandbox, {"language": "python", "specs": [spec], "context": {"sandbox": "s1"}}
        )
    asked = live.call(
        "POST", API + "/requests", sandbox, {"language": "python", "name": "scipy", "justification": "fits"}
    )
    assert asked.status == 201

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(live.url + "/console/")
    page.get_by_label("API token").fill(admin)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("navigation", name="Console").get_by_role("link", name="Requests").click()  # click one
    request = page.get_by_role("region", name="Python scipy open")
    expect(request).to_contain_text("“fits”")
    request.get_by_role("button", name="Approve for 7 days").click()  # click two
    expect(page.get_by_text("Approved scipy (7 days).")).to_be_visible()
    assert live.call("GET", API + "/requests/" + asked.json["id"], admin).json["status"] == "approved"

    page.get_by_role("navigation", name="Console").get_by_role("link", name="Run-code packages").click()
    exceptions = page.get_by_role("table", name="Exceptions in force")
    expect(exceptions).to_contain_text("scipy")
    expect(exceptions.get_by_role("button", name="Revoke the exception for scipy")).to_be_visible()

    page.get_by_label("Python allow list").fill("scipy")  # pandas would now be denied
    page.get_by_role("button", name="Preview impact").click()
    preview = page.get_by_role("status").filter(has_text="What this draft would change")
    expect(preview).to_contain_text("It would have denied 3 of 4 installs in the last 30 days: pandas ×3")
    page.get_by_label("Python allow list").fill("pandas")  # back to the saved lists
    page.get_by_role("button", name="Preview impact").click()
    expect(page.get_by_role("status").filter(has_text="What this draft would change")).to_contain_text(
        "Nothing: the draft gives each of the 4 installs"
    )
    page.get_by_role("group", name="Python", exact=True).get_by_label("Denylist").check()
    page.get_by_label("Python deny list").fill("scipy")
    page.get_by_role("button", name="Preview impact").click()
    expect(page.get_by_role("status").filter(has_text="What this draft would change")).to_contain_text(
        "It would have denied 1 of 4 installs in the last 30 days: scipy ×1"
    )
    assert live.call("GET", API + "/policy", admin).json["version"] == 3  # previews save nothing
