"""The console's Requests page, exceptions with Revoke, and the impact preview (SQLite, PostgreSQL)."""

from __future__ import annotations

import re
from html import unescape

from tests.interface.test_console import P, api, signed_in


def ask(live, name: str, why: str = "for the report") -> dict:
    body = {"language": "python", "name": name, "justification": why, "context": {"sandbox": "sbx-9"}}
    return api(live, "POST", "/requests", body, role="sandbox")


def test_an_admin_approves_a_request_for_a_week_and_revokes_its_exception(live):
    api(live, "PUT", "/policy", {"python": {"mode": "allowlist", "allow": ["pandas"]}})
    api(live, "POST", "/evaluate", {"language": "python", "specs": ["beta"]}, role="sandbox")
    request = ask(live, "beta")
    console = signed_in(live)
    page = console.get("/console/requests")
    assert page.status == 200
    assert "Python beta open" in page.plain and "“for the report”" in page.plain
    assert "stays denied unless you also tick “Lift its deny entry while the exception lasts”" in page.plain
    assert "Denied 1 time in the last 30 days" in page.plain and "sandbox sbx-9" in page.plain
    form = page.form(f"/console/requests/{request['id']}/approve")
    done = console.follow(console.post(form.action, form.fields + [("duration", "P7D")]))
    assert "Approved beta (7 days)." in done.plain and "No open requests." in done.plain
    assert api(live, "GET", f"/requests/{request['id']}")["status"] == "approved"
    packages = console.get(P)
    assert "Exceptions in force" in packages.plain and "beta" in packages.plain
    revoke = next(f for key, f in _forms(packages) if "/revoke" in key)
    after = console.follow(console.post(revoke.action, revoke.fields))
    assert "Exception for beta (Python) revoked: it no longer allows it." in after.plain
    assert api(live, "GET", "/exceptions")["exceptions"] == []


def test_approving_a_deny_listed_package_says_its_deny_entry_is_lifted_for_the_window(live):
    api(live, "PUT", "/policy", {"python": {"mode": "denylist", "deny": ["beta"]}})
    request = ask(live, "beta")
    console = signed_in(live)
    form = console.get("/console/requests").form(f"/console/requests/{request['id']}/approve")
    done = console.follow(console.post(form.action, form.fields + [("lift_deny", "yes"), ("duration", "P1D")]))
    assert "Approved beta (1 day). Its deny entry is lifted until the exception ends." in done.plain, done.plain


def approved_once_the_box_is_ticked(console, page: str, request_id: str, note: str, words: str):
    """Approve from `page` with a note and the lifting box left unticked: refused (409) in the
    console's words (`words`, never the API's field and rule), the form back with the note kept,
    not typed again; then approved with the box ticked. (The refusal, the page approved.)"""
    form = console.get(page).form(f"/console/requests/{request_id}/approve")
    typed = [(n, note if n == "note" else v) for n, v in form.fields]
    refused = console.post(form.action, [*typed, ("duration", "P7D")])
    assert refused.status == 409 and words in refused.plain, refused.plain
    assert "lift_deny" not in refused.plain and "must be true" not in refused.plain
    again = refused.form(f"/console/requests/{request_id}/approve")
    assert ("note", note) in again.fields
    done = console.follow(console.post(again.action, [*again.fields, ("lift_deny", "yes"), ("duration", "P7D")]))
    return refused, again, done


def test_an_approval_refused_keeps_the_note_and_says_what_to_tick_in_words(live):
    api(live, "PUT", "/policy", {"python": {"mode": "denylist", "deny": ["beta"]}})
    request = ask(live, "beta")
    words = (
        "beta is on the Python deny list, which wins over exceptions: to approve it, tick "
        "“Lift its deny entry while the exception lasts”. The entry stays on the list"
    )
    refused, _, done = approved_once_the_box_is_ticked(
        signed_in(live), "/console/requests", request["id"], "for the Q3 migration, OPS-1234", words
    )
    assert "python deny list" not in refused.plain
    assert "Approved beta (7 days)." in done.plain
    assert api(live, "GET", f"/requests/{request['id']}")["note"] == "for the Q3 migration, OPS-1234"


def test_the_requests_page_pages_on_to_the_requests_waiting_longest(live, monkeypatch):
    monkeypatch.setattr("interface.console.access.PAGE_SIZE", 2)
    for i in range(5):
        ask(live, f"pkg-{i}")
    console = signed_in(live)
    shown, page = [], console.get("/console/requests", status="all")
    while True:
        on_page = re.findall(r"Python (pkg-\d) open", page.plain)
        assert 1 <= len(on_page) <= 2
        shown += on_page
        older = re.search(r'href="(/console/requests\?[^"]*cursor=[^"]+)" rel="next">Next page', page.text)
        if older is None:
            break
        assert "status=all" in older.group(1)  # the filter kept from page to page
        page = console.get(unescape(older.group(1)))
        assert page.status == 200 and "First page" in page.plain
    assert shown == [f"pkg-{i}" for i in (4, 3, 2, 1, 0)]  # newest first, the oldest reached last


def test_an_agents_text_is_isolated_so_its_direction_controls_stay_inside_it(live):
    """A justification with a right-to-left override (U+202E) reordered the text after it on the
    page: each agent's or admin's free text is its own bidi isolate."""
    ask(live, "beta", why="security review: \u202eDEVORPPA")
    page = signed_in(live).get("/console/requests")
    assert "“<bdi>security review: \u202eDEVORPPA</bdi>”" in page.text


def test_rejecting_with_a_note(live):
    request = ask(live, "gamma")
    console = signed_in(live)
    form = console.get("/console/requests").form(f"/console/requests/{request['id']}/approve")
    reject = next(b for b in form.buttons if b.get("formaction", "").endswith("/reject"))
    console.follow(
        console.post(reject["formaction"], [(n, "use pandas" if n == "note" else v) for n, v in form.fields])
    )
    decided = api(live, "GET", f"/requests/{request['id']}")
    assert (decided["status"], decided["note"]) == ("rejected", "use pandas")
    shown = console.get("/console/requests", status="rejected")
    assert "Rejected by admin-token" in shown.plain and "“use pandas”" in shown.plain


def test_an_unknown_status_filter_is_refused_in_plain_words_not_shown_as_the_open_ones(live):
    ask(live, "beta")
    page = signed_in(live, "auditor").get("/console/requests", status="bogus")
    assert page.status == 422 and "there is no request status 'bogus' to show" in page.plain, page.plain
    assert "must be one of open, approved, rejected, expired, all" in page.plain and "beta" not in page.plain


def test_an_auditor_sees_requests_but_cannot_decide_them(live):
    request = ask(live, "beta")
    console = signed_in(live, "auditor")
    page = console.get("/console/requests")
    assert "Python beta open" in page.plain and "Approve for" not in page.plain
    refused = console.post(f"/console/requests/{request['id']}/approve", [("duration", "P7D")])
    assert refused.status in (400, 403)  # no CSRF token and no right: either way nothing is decided
    assert api(live, "GET", f"/requests/{request['id']}")["status"] == "open"


def test_the_impact_preview_of_the_unsaved_draft(live):
    for name in ("pandas", "pandas", "scipy"):
        api(
            live,
            "POST",
            "/evaluate",
            {"language": "python", "specs": [name], "context": {"sandbox": "s"}},
            role="sandbox",
        )
    console = signed_in(live)
    page = console.get(P)
    button = next(b for b in page.form().buttons if b.get("formaction", "").endswith("/impact"))
    form = dict(page.form().fields) | {"python-mode": "allowlist", "python-allow": "scipy"}
    shown = console.post(button["formaction"], list(form.items()))
    assert shown.status == 200
    assert "It would have denied 2 of 3 installs in the last 30 days: pandas ×2" in shown.plain
    assert shown.form().get("python-allow") == "scipy"  # the draft is kept, nothing saved
    assert api(live, "GET", "/policy")["version"] == 0
    same = console.post(button["formaction"], page.form().fields)
    assert "Nothing: the draft gives each of the 3 installs" in same.plain


def _forms(page):
    from tests.interface.test_console import FormReader

    reader = FormReader()
    reader.feed(page.text)
    return reader.forms.items()


def test_the_change_history_names_exceptions(live):
    granted = api(live, "POST", "/exceptions", {"language": "python", "name": "beta"}, role="admin")
    api(live, "DELETE", f"/exceptions/{granted['id']}", role="admin")
    page = signed_in(live, "auditor").get("/console/history")
    assert "Python: granted an exception for beta" in page.plain
    assert "Python: revoked the exception for beta" in page.plain


def test_the_overview_counts_pending_requests_in_good_english(live):
    console = signed_in(live)
    ask(live, "beta")
    assert "1 pending request " in console.get("/console/overview").plain + " "
    ask(live, "gamma")
    assert "2 pending requests" in console.get("/console/overview").plain


def test_the_sign_in_page_says_what_the_browser_really_keeps(live):
    hint = signed_in(live).get("/console/sign-in").plain
    assert "a random session id" in hint and "never your token" in hint and "encrypted" not in hint


def test_an_ended_request_says_who_approved_it_and_when_its_exception_ended(live):
    request = ask(live, "delta")
    api(live, "POST", f"/requests/{request['id']}/approve", {"duration": "P1D"}, role="admin")
    console = signed_in(live)
    approved = console.get("/console/requests", status="approved").plain
    assert "Approved by admin-token on " in approved and "; exception until " in approved
    exception = api(live, "GET", "/exceptions")["exceptions"][0]
    api(live, "DELETE", f"/exceptions/{exception['id']}", role="admin")
    ended = console.get("/console/requests", status="expired").plain
    assert "Approved by admin-token on " in ended and "; exception revoked on " in ended
    assert "Expired by" not in ended


def test_refusals_name_what_the_page_shows_and_the_note_limit_is_the_servers(live):
    from domain.limits import MAX_NOTE
    from interface.console.forms import field_label

    request = ask(live, "epsilon")
    admin = signed_in(live)
    form = admin.get("/console/requests").form(f"/console/requests/{request['id']}/approve")
    assert f'maxlength="{MAX_NOTE}"' in admin.get("/console/requests").text
    assert f'maxlength="{MAX_NOTE}"' in admin.get(P).text
    auditor = signed_in(live, "auditor")
    token = auditor.get("/console/requests").form("/console/sign-out").get("csrf_token")
    refused = auditor.post(form.action, [("csrf_token", token), ("duration", "P1D")])
    assert refused.status == 403 and "you are signed in with an auditor token" in refused.plain
    labels = {f: field_label(f) for f in ("node.deny", "note", "request_id", "exception_id", "import-content")}
    assert labels == {
        "node.deny": "Node deny list",
        "note": "Note",
        "request_id": "The request",
        "exception_id": "The exception",
        "import-content": "File content",
    }


def test_a_request_shows_why_it_was_filed_and_why_each_asker_asked_last(live):
    """The first justification was shown nowhere once its asker asked again (the CLI showed only
    it): an admin in the console and one at the CLI read different reasons."""
    ask(live, "beta", "the quarterly report needs beta's solver")
    ask(live, "beta", "again")
    page = signed_in(live).get("/console/requests")
    assert "saying “the quarterly report needs beta's solver”" in page.plain
    assert "asked 2 times, most recently: “again”" in page.plain


def test_the_audit_logs_reason_filter_keeps_egress_reasons_apart_and_the_header_names_the_token(live):
    """A newcomer found an option `allowed` (an egress reason) among the package reasons, and a
    header reading `owner (owner)`."""
    page = signed_in(live).get("/console/audit")
    packages, egress = re.search(
        r'<optgroup label="Packages">(.*?)</optgroup><optgroup label="Egress">(.*?)</optgroup>', page.text, re.S
    ).groups()
    assert '"not-on-the-deny-list"' in packages and '"allowed"' not in packages
    assert '"allowed"' in egress and '"not-on-hostname-allowlist"' in egress
    assert re.search(r"token [\w-]+ \((owner|admin|auditor)\)", page.plain)
