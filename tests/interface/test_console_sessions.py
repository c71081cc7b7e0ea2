"""Console sessions are server-side (once: a cookie copied before sign-out still
opened the audit log afterwards). The cookie carries only a session id; the store records each
session, and signing out or revoking the token ends it at once, for every copy of the cookie."""

from __future__ import annotations

from tests.interface.test_console import Console, P, api, signed_in


def copy_of(console: Console, live) -> Console:
    """Another browser holding the same cookies (an attacker who copied them)."""
    thief = Console(live)
    for cookie in console.jar:
        thief.jar.set_cookie(cookie)
    return thief


def test_a_cookie_copied_before_sign_out_no_longer_opens_the_audit_log(live):
    console = signed_in(live, "auditor")
    thief = copy_of(console, live)
    assert thief.request("GET", "/console/audit").status == 200  # the copy works while signed in
    page = console.get(P)
    assert console.post("/console/sign-out", [("csrf_token", page.form().get("csrf_token"))]).status == 302
    for path in ("/console/audit", "/console/audit/export.csv", P):
        answer = thief.request("GET", path)
        assert answer.status == 302 and answer.headers["Location"].endswith("/console/sign-in"), path


def test_signing_in_again_ends_the_earlier_session(live):
    """Signing in with another token in the same browser cleared the cookie but left the earlier
    session open: a copy of its cookie still opened the console as the admin for up to 8 hours."""
    console = signed_in(live, "admin")
    thief = copy_of(console, live)
    assert console.sign_in(live.tokens["auditor"]).status == 302  # no Sign out first
    page = console.get("/console/overview")
    assert "auditor-token (auditor)" in page.plain and "admin-token" not in page.plain
    answer = thief.request("GET", "/console/overview")
    assert answer.status == 302 and answer.headers["Location"].endswith("/console/sign-in")
    assert "Your session has ended" in thief.follow(answer).plain


def test_revoking_the_token_ends_every_session_signed_in_with_it(live):
    first, second = signed_in(live, "admin"), signed_in(live, "admin")
    token = next(t for t in api(live, "GET", "/tokens")["tokens"] if t["name"] == "admin-token")
    api(live, "DELETE", f"/tokens/{token['id']}")
    for console in (first, second, copy_of(first, live)):
        assert console.request("GET", "/console/audit").status == 302


def test_signing_out_one_session_leaves_the_others(live):
    kept, ended = signed_in(live, "admin"), signed_in(live, "admin")
    page = ended.get(P)
    ended.post("/console/sign-out", [("csrf_token", page.form().get("csrf_token"))])
    assert ended.request("GET", "/console/audit").status == 302
    assert kept.request("GET", "/console/audit").status == 200


def test_the_session_store_holds_a_digest_not_the_id_in_the_cookie(live, app):
    console = signed_in(live, "owner")
    value = next(c.value for c in console.jar if c.name == "runcode_console")
    rows = app.recorder.fetch(app.readmodel.dialect.sql("SELECT id FROM {console_sessions}"))
    assert len(rows) == 1 and rows[0]["id"] not in value


def test_a_signed_out_session_revived_in_the_store_still_does_not_open_the_console(live, app, database_url):
    from tests.support.tamper import Tamperer

    console = signed_in(live, "auditor")
    thief = copy_of(console, live)
    page = console.get(P)
    console.post("/console/sign-out", [("csrf_token", page.form().get("csrf_token"))])
    tamper = Tamperer(database_url)  # write access to the database: the sign-out undone in the table
    tamper.sql("UPDATE rcp_console_sessions SET ended_at = NULL, expires_at = '2999-01-01T00:00:00.000000+00:00'")
    tamper.close()
    answer = thief.request("GET", "/console/audit")
    assert answer.status == 302 and answer.headers["Location"].endswith("/console/sign-in")
    assert "console_sessions table's row" in app.integrity.first
