"""The console in a real headless Chromium against the live server (SQLite is enough here: the
HTTP-level tests in test_console.py run both stores).

Without Chromium or playwright the tests skip loudly, except under CI=true, where they fail:
CI must never pass with the browser tests skipped.
"""

from __future__ import annotations

import os

import pytest

from tests.support import browser as chromium

API = "/api/v1/workspaces/acme"


@pytest.fixture
def database_url(tmp_path) -> str:
    """Overrides conftest's parametrized store: SQLite only."""
    return f"sqlite:///{tmp_path}/store.sqlite"


@pytest.fixture(scope="module")
def launched_chromium():
    """One Chromium for the module's tests in this worker (a launch costs a second or two of CPU)."""
    missing = chromium.why_no_browser()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"{missing} (CI must run the browser tests)", pytrace=False)
        pytest.skip(f"SKIPPING BROWSER TEST: {missing}")
    with chromium.chromium() as launched:
        yield launched


@pytest.fixture
def browser(launched_chromium):
    """The launched Chromium. Each page a test opens (`new_page`) is in a context of its own, with its
    own cookies, storage and cache; every context is closed after the test, so none outlives it."""
    yield launched_chromium
    for context in launched_chromium.contexts:
        context.close()


def api(live, method: str, path: str, body=None, role: str = "admin"):
    reply = live.call(method, API + path, live.tokens[role], body)
    assert reply.status < 400, reply.body
    return reply.json


def history_of_a_month(live) -> None:
    """One Save (versions 1-3), then decisions: allowed and denied packages, and egress."""
    api(live, "PUT", "/policy", {"note": "the data team", "python": {"mode": "allowlist", "allow": "pandas, numpy"}})
    for sandbox in ("sbx-1", "sbx-2", "sbx-1"):
        context = {"sandbox": sandbox, "source": "run-code", "actor": "agent-7"}
        api(
            live,
            "POST",
            "/evaluate",
            {"language": "python", "specs": ["pandas", "torch"], "context": context},
            "sandbox",
        )
    target = {"target": "http://169.254.169.254/latest/", "context": {"sandbox": "sbx-2"}}
    api(live, "POST", "/egress/evaluate", target, "sandbox")


def no_horizontal_overflow(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_an_admin_tests_a_draft_then_saves_it_in_a_real_browser(live, browser):
    from playwright.sync_api import expect

    page = chromium.sign_in(browser, live.url, live.tokens["admin"])
    expect(page.get_by_role("heading", name="Overview", exact=True)).to_be_visible()
    chromium.try_a_draft(page, "pandas", "pandas\nnumpy")

    rows = page.locator("table.results tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("pandas")
    expect(rows.nth(0)).to_contain_text("Allowed")
    expect(rows.nth(1)).to_contain_text("numpy")
    expect(rows.nth(1)).to_contain_text("Denied")
    expect(page.get_by_label("Python allow list")).to_have_value("pandas")  # the draft is kept
    assert live.call("GET", API + "/policy", live.tokens["admin"]).json["version"] == 0

    page.get_by_label("Note").fill("pandas for the data team")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_text("Saved. The policy is now version 2.")).to_be_visible()
    policy = live.call("GET", API + "/policy", live.tokens["admin"]).json
    assert policy["python"] == {"mode": "allowlist", "allow": ["pandas"], "deny": []}
    assert policy["changed_by"] == "admin-token"


def test_test_results_are_in_view_and_a_reload_asks_again_without_reposting(live, browser):
    from playwright.sync_api import expect

    page = chromium.sign_in(browser, live.url, live.tokens["admin"])
    chromium.try_a_draft(page, "pandas", "pandas\nnumpy")
    expect(page.locator("#results")).to_be_in_viewport()
    assert "/packages/test" not in page.url and page.url.endswith("#results")

    methods = []
    page.on("request", lambda request: methods.append((request.method, request.url)))
    page.reload()
    expect(page.locator("table.results tbody tr")).to_have_count(2)
    assert [m for m, url in methods if "/console/settings" in url] == ["GET"]
    expect(page.get_by_label("Python allow list")).to_have_value("pandas")  # the draft survives the reload too
    assert live.call("GET", API + "/policy", live.tokens["admin"]).json["version"] == 0


def test_the_test_panel_answers_each_pasted_line_as_the_apis_test_does_in_a_real_browser(live, browser):
    """Pasted into Chromium's textarea (which sends CRLF), a line with a no-break or ideographic
    space, or a leading blank, gets the answer /test gives for it; U+2028 breaks no line."""
    from playwright.sync_api import expect

    lines = [" lodash", "lodash\u00a0", "\u3000lodash", "left\u2028pad", "lodash"]
    page = chromium.sign_in(browser, live.url, live.tokens["admin"])
    chromium.open_page(page, "Run-code packages")
    page.get_by_label("Language", exact=True).select_option("node")
    page.get_by_label("Specs or command line").fill("\n".join(lines))
    page.get_by_role("button", name="Test against the saved policy").click()
    rows = page.locator("table.results tbody tr")
    expect(rows).to_have_count(len(lines))
    asked = api(live, "POST", "/test", {"language": "node", "specs": lines})["decisions"]
    for row, decision in zip(rows.all(), asked, strict=True):
        cells = [c.strip() for c in row.locator("td").all_inner_texts()]
        assert cells[2:5] == [decision["kind"], "Allowed" if decision["allowed"] else "Denied", decision["reason"]]


def test_the_overview_shows_the_month_and_a_bar_opens_its_decisions(live, browser):
    from playwright.sync_api import expect

    history_of_a_month(live)
    page = chromium.sign_in(browser, live.url, live.tokens["auditor"])
    today = api(live, "GET", "/decisions")["decisions"][0]["at"][:10]  # the day the decisions were stamped
    expect(page.locator(".tiles")).to_contain_text("7 decisions")  # 6 package decisions, 1 egress
    expect(page.locator("svg rect")).to_have_count(2)  # only today has decisions: allowed and denied parts
    denied = page.locator("svg rect.denied")
    expect(denied.locator("title")).to_have_text(f"{today}: 4 denied")
    ranking = page.get_by_role("region", name="Most denied packages, last 7 days")
    expect(ranking.get_by_role("row", name="torch")).to_contain_text("sbx-1 (2), sbx-2 (1)")
    expect(page.get_by_role("region", name="Egress denials, last 7 days")).to_contain_text("169.254.169.254")
    expect(page.get_by_role("region", name="Latest policy changes")).to_contain_text("added numpy to the allow list")
    assert no_horizontal_overflow(page)

    denied.click()
    expect(page.get_by_role("heading", name="Audit log")).to_be_visible()
    assert f"from={today}" in page.url and "outcome=denied" in page.url
    expect(page.locator("table.decisions tbody tr")).to_have_count(4)


def test_a_package_name_leads_to_its_status_timeline_and_decisions(live, browser, clock):
    from playwright.sync_api import expect

    history_of_a_month(live)
    api(
        live,
        "POST",
        "/policy/changes",
        {
            "note": "no torch, ever",
            "changes": [{"action": "add", "language": "python", "list": "deny", "entries": ["torch"]}],
        },
    )
    page = chromium.sign_in(browser, live.url, live.tokens["auditor"])
    page.get_by_role("region", name="Most denied packages, last 7 days").get_by_role("link", name="torch").click()

    expect(page.get_by_role("heading", name="torch Python package")).to_be_visible()
    now = page.get_by_role("region", name="Now")
    expect(now).to_contain_text("Denied: matches-the-deny-list")
    expect(now).to_contain_text("by admin-token: Python: added torch to the deny list (note: “no torch, ever”)")
    intervals = page.locator("table.intervals tbody tr")
    expect(intervals).to_have_count(3)  # default (allowed), allowlist (denied), deny list (denied)
    expect(intervals.nth(1)).to_contain_text("switched to allowlist mode (note: “the data team”)")
    expect(intervals.nth(2)).to_contain_text("added torch to the deny list")
    expect(page.locator("figure.band svg rect")).to_have_count(3)
    expect(page.locator("table.recent tbody tr")).to_have_count(3)
    page.get_by_role("link", name="Today").click()
    expect(page.get_by_label("From (UTC day)")).to_have_value(clock().date().isoformat())  # the console's clock


def test_a_history_link_shows_its_own_version_and_what_it_changed(live, browser):
    from playwright.sync_api import expect

    api(live, "PUT", "/policy", {"note": "one save", "python": {"mode": "allowlist", "allow": "pandas, numpy"}})
    page = chromium.sign_in(browser, live.url, live.tokens["auditor"])
    chromium.open_page(page, "Change history")
    page.get_by_role("link", name="View version 2").click()  # versions 1-3 share one instant

    assert page.url.endswith("/console/time-travel?version=2")
    version = page.get_by_role("region", name="Version 2", exact=True)
    expect(version).to_contain_text("Differences from version 1")
    expect(version.locator(".diff li")).to_have_count(1)
    expect(version.locator(".diff")).to_contain_text("Python allow list: + pandas")
    then = page.get_by_role("region", name="The policy at version 2")
    expect(then).to_contain_text("Version 2, last changed by admin-token")
    expect(then.locator(".language").first.locator(".entries li")).to_have_text(["pandas"])  # not numpy yet
    page.get_by_role("link", name="Version 3").click()
    expect(page.get_by_role("region", name="Version 3", exact=True).locator(".diff")).to_contain_text("+ numpy")


def test_the_egress_kind_filter_round_trips_and_egress_rows_read_well(live, browser):
    from playwright.sync_api import expect

    history_of_a_month(live)
    page = chromium.sign_in(browser, live.url, live.tokens["auditor"])
    chromium.open_page(page, "Audit log")
    page.get_by_label("Kind").select_option("egress")
    page.get_by_role("button", name="Filter").click()
    assert "kind=egress" in page.url
    expect(page.get_by_label("Kind")).to_have_value("egress")
    rows = page.locator("table.decisions tbody tr")
    expect(rows).to_have_count(1)
    cells = rows.first.locator("td")
    expect(cells.nth(1)).to_have_text("Egress")  # not a blank language
    expect(cells.nth(9)).to_have_text("—")  # no policy version, not "vNone"
    page.get_by_role("button", name="Filter").click()  # pressing Filter again keeps it
    assert "kind=egress" in page.url
    expect(rows).to_have_count(1)


def test_the_audit_table_fits_1280_px_with_actor_and_message(live, browser):
    from playwright.sync_api import expect

    history_of_a_month(live)
    long = "a-very-long-package-name-" * 8
    api(
        live,
        "POST",
        "/evaluate",
        {"language": "python", "specs": [long], "context": {"actor": "agent-" + "x" * 80}},
        "sandbox",
    )
    page = chromium.sign_in(browser, live.url, live.tokens["auditor"])
    chromium.open_page(page, "Audit log")
    table = page.locator("table.decisions")
    expect(table.get_by_role("columnheader", name="Actor")).to_be_visible()
    expect(table.get_by_role("columnheader", name="Message")).to_be_in_viewport()
    assert no_horizontal_overflow(page)
    assert page.evaluate(
        "(() => { const s = document.querySelector('.scroll'); return s.scrollWidth <= s.clientWidth })()"
    )
    last = table.locator("thead th").last
    box = last.bounding_box()
    assert box["x"] + box["width"] <= 1280


def test_an_admin_saves_a_release_age_rule_in_a_real_browser(live, browser):
    from playwright.sync_api import expect

    page = chromium.sign_in(browser, live.url, live.tokens["admin"])
    chromium.open_page(page, "Run-code packages")
    node = page.get_by_role("group", name="Node", exact=True)
    node.get_by_text("Node rules beyond names").click()  # the rules are folded away until used
    node.get_by_role("textbox", name="Minimum release age").fill("P3D")
    node.get_by_label("Never too new").fill("@acme/*")
    node.get_by_label("Minimum release age: action").select_option("monitor")
    node.get_by_label("Refuse versions that run install scripts").check()
    page.get_by_label("Note").fill("three days' cooldown, watched first")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_text("Saved. The policy is now version 2.")).to_be_visible()
    rules = live.call("GET", API + "/policy", live.tokens["admin"]).json["node"]["rules"]
    assert rules == {
        "min_release_age": {"age": "P3D", "exempt": ["@acme/*"], "action": "monitor"},
        "install_scripts": {"allow": [], "action": "enforce"},
    }
    expect(node.get_by_role("textbox", name="Minimum release age")).to_have_value("P3D")  # shown as saved, unfolded


def test_enter_in_a_text_field_never_approves_or_saves(live, browser):
    """Enter "clicks" a form's first submit button: on the Requests page that was Approve for
    1 day, on the closure page Approve all, on the Packages page Save."""
    from playwright.sync_api import expect

    asked = api(live, "POST", "/requests", {"language": "python", "name": "polars"}, "sandbox")["id"]
    page = chromium.sign_in(browser, live.url, live.tokens["admin"])
    chromium.open_page(page, "Requests")
    page.get_by_label("Note").fill("not this one")
    page.get_by_label("Note").press("Enter")
    page.wait_for_timeout(500)
    expect(page.get_by_role("button", name="Reject")).to_be_visible()

    page.goto(f"{live.url}/console/requests/{asked}/closure")
    page.get_by_label("Note").fill("nor this")
    page.get_by_label("Note").press("Enter")
    page.wait_for_timeout(500)

    chromium.open_page(page, "Run-code packages")
    page.get_by_role("group", name="Python", exact=True).get_by_label("Allowlist").check()
    for field in ("Note", "coverage in percent", "Minimum release age"):
        page.get_by_label(field).first.press("Enter")
        page.wait_for_timeout(300)
    assert api(live, "GET", "/policy")["version"] == 0
    assert [r["id"] for r in api(live, "GET", "/requests?status=open")["requests"]] == [asked]


def test_a_very_long_package_name_wraps_instead_of_widening_the_pages(live, browser):
    long_name = "a" + "b" * 198 + "c"  # a valid name of 200 characters
    api(live, "PUT", "/policy", {"python": {"mode": "allowlist", "allow": "pandas"}})
    api(live, "POST", "/evaluate", {"language": "python", "specs": [long_name]}, "sandbox")
    page = chromium.sign_in(browser, live.url, live.tokens["admin"])
    assert long_name in page.inner_text("main")  # the overview's most denied packages
    assert no_horizontal_overflow(page)
    page.goto(f"{live.url}/console/packages/python/{long_name}")
    assert long_name in page.inner_text("main")
    assert no_horizontal_overflow(page)


def test_a_very_long_token_name_wraps_in_the_header_instead_of_widening_every_page(live, browser):
    """The header's token name did not wrap: a 200-character one (the most a name may hold) made
    every page 2257 px wide at 1280."""
    long_name = "T" * 200
    secret = api(live, "POST", "/tokens", {"name": long_name, "role": "admin"}, "owner")["token"]
    page = chromium.sign_in(browser, live.url, secret)
    for path in ("overview", "settings/governance/packages", "audit", "time-travel"):
        page.goto(f"{live.url}/console/{path}")  # waits for the page's load, its style sheet's too
        assert long_name in page.inner_text("header .who"), path
        assert no_horizontal_overflow(page), path


def test_no_column_heading_breaks_inside_a_word_or_runs_into_the_next(live, browser):
    """The overview's half-width rankings broke "Denied" as "Deni/ed" once their Sandboxes column
    filled up (the page breaks long names anywhere, and that let a heading shrink below its word),
    and the audit log's fixed columns ran "Sandbox" into "Source"."""
    for n in range(4):
        context = {"sandbox": f"sbx-analytics-{n}", "source": "run-code", "actor": "agent-1"}
        api(live, "POST", "/evaluate", {"language": "python", "specs": ["torch"], "context": context}, "sandbox")
        api(live, "POST", "/egress/evaluate", {"target": "http://169.254.169.254/", "context": context}, "sandbox")
    page = chromium.sign_in(browser, live.url, live.tokens["admin"])
    assert page.locator("th", has_text="Denied").count() >= 2  # both rankings are on the page
    assert misfit_headings(page) == []
    chromium.open_page(page, "Audit log")
    assert page.locator("table.decisions th", has_text="Sandbox").count() == 1
    assert misfit_headings(page) == []


def misfit_headings(page) -> list[str]:
    """Column headings of one word on more than one line, or wider than their column."""
    return page.evaluate(
        """[...document.querySelectorAll('th')].filter(th => {
             const range = document.createRange();
             range.selectNodeContents(th);
             const oneWord = !th.textContent.trim().includes(' ');
             return (oneWord && range.getClientRects().length > 1) || th.scrollWidth > th.clientWidth;
           }).map(th => th.textContent.trim())"""
    )
