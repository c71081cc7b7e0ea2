"""The console speaks plain words: refusals name what the page shows, never the API's fields and
terms; languages are Python and Node; counts agree with their nouns (SQLite, PostgreSQL)."""

from __future__ import annotations

from urllib.parse import quote

from interface.console import when
from tests.interface.test_access_console import ask
from tests.interface.test_console import P, api, signed_in

API_TERMS = ("named in errors", "expected_version", "next_cursor", "exception_id", "request_id", "must be a standing")


def plain_words(page) -> str:
    for term in API_TERMS:
        assert term not in page.plain, (term, page.plain)
    return page.plain


def test_revoking_an_exception_revoked_meanwhile_says_so_in_words(live):
    granted = api(live, "POST", "/exceptions", {"language": "python", "name": "beta"}, role="admin")
    console = signed_in(live)
    page = console.get(P)
    api(live, "DELETE", f"/exceptions/{granted['id']}", role="admin")  # another tab, another admin
    revoke = page.form(f"{P}/exceptions/{granted['id']}/revoke")
    again = console.follow(console.post(revoke.action, revoke.fields))
    said = "That exception is no longer in force (it was revoked, or it ended): nothing was changed."
    assert said in plain_words(again) and granted["id"] not in again.plain


def test_deciding_a_request_decided_meanwhile_says_who_decided_it(live):
    request = ask(live, "beta")
    console = signed_in(live)
    form = console.get("/console/requests").form(f"/console/requests/{request['id']}/approve")
    api(live, "POST", f"/requests/{request['id']}/reject", {"note": "no"}, role="admin")
    approved = console.post(form.action, [*form.fields, ("duration", "P1D")])
    assert approved.status == 409
    said = "The request for beta was already rejected by admin-token: nothing was changed."
    assert said in plain_words(approved)
    reject = next(b for b in form.buttons if b.get("formaction", "").endswith("/reject"))
    rejected = console.follow(console.post(reject["formaction"], form.fields))
    assert said in plain_words(rejected)


def test_a_note_too_long_is_said_once_by_its_label(live):
    from domain.limits import MAX_NOTE

    request = ask(live, "beta")
    console = signed_in(live)
    form = console.get("/console/requests").form(f"/console/requests/{request['id']}/approve")
    fields = [(n, "x" * (MAX_NOTE + 1) if n == "note" else v) for n, v in form.fields]
    refused = console.post(form.action, [*fields, ("duration", "P1D")])
    assert refused.status == 422
    assert plain_words(refused).count(f"must be at most {MAX_NOTE} characters") == 1, refused.plain
    assert f"Note: must be at most {MAX_NOTE} characters." in refused.plain


def test_a_damaged_page_link_or_filter_is_refused_in_words(live):
    console = signed_in(live, "auditor")
    for page in ("/console/requests", "/console/audit", "/console/history"):
        damaged = console.get(page, cursor="not-a-cursor")
        assert damaged.status == 422, page
        assert "This page's link is damaged or was not made by this console" in plain_words(damaged), page
        assert "start again from the first page" in damaged.plain
    status = console.get("/console/requests", status="bogus")
    assert "Show: must be one of open, approved, rejected, expired, all" in plain_words(status)


def test_a_form_version_the_policy_never_had_is_said_in_words(live):
    console = signed_in(live)
    form = console.get(P).form()
    page = console.post(form.action, [(n, "99999" if n == "expected_version" else v) for n, v in form.fields])
    assert page.status == 422 and "The form's version 99999 is not a version this policy has had" in (plain_words(page))


def test_an_import_refusal_names_the_languages_and_points_at_the_lines_listed(live):
    console = signed_in(live)
    fields = [(n, v) for n, v in console.get(P).form().fields if not n.startswith("import-")]

    def imported(language, fmt, content):
        more = [("import-language", language), ("import-format", fmt), ("import-content", content)]
        return console.post(P + "/import", fields + more)

    lines = imported("python", "requirements.txt", "./a\nok\n./b\n./c\n")
    assert "(and 2 more, listed below)" in plain_words(lines), lines.plain
    wrong = imported("python", "package.json", "{}")
    assert "'package.json' is not a Python format" in plain_words(wrong)
    names = imported("node", "package.json", '{"dependencies": {"Bad Name": "1"}}')
    assert "'Bad Name' is not a Node package name" in plain_words(names)


def test_list_entries_are_refused_naming_the_languages_and_a_node_name_as_a_name(live):
    console = signed_in(live)
    page = console.submit(console.get(P), node_allow="café", python_deny="django*")
    assert page.status == 422
    said = plain_words(page)
    assert "'café' is not a valid Node package name" in said and "dist-tag" not in said
    assert "(or a pattern: Python 'name-*', Node '@scope/*')" in said
    assert "a Python pattern is a package name followed by '-*'" in said


def test_a_package_page_names_the_language_and_counts_installs_in_good_english(live):
    bad = signed_in(live, "auditor").get("/console/packages/python/" + quote("\u017fcipy"))
    assert bad.status == 422 and "'\u017fcipy' is not a Python package name" in plain_words(bad)
    api(live, "POST", "/evaluate", {"language": "python", "specs": ["one"]}, role="sandbox")
    page = signed_in(live, "auditor").get("/console/packages/python/one")
    assert "1 allowed install and 0 denied installs" in page.plain, page.plain


def test_the_first_year_is_printed_with_its_zeros(live):
    assert when("0001-01-01T00:00:00Z") == "0001-01-01 00:00:00 UTC"
    page = signed_in(live, "auditor").get("/console/time-travel", at="0001-01-01", name="pandas")
    assert page.status == 200 and "0001-01-01 00:00:00 UTC" in page.plain, page.plain
    assert " 1-01-01" not in page.plain


def test_a_form_too_large_to_send_gets_a_console_page_saying_the_limit(live):
    console = signed_in(live)
    form = console.get(P).form()
    huge = console.post(form.action, [(n, "x\n" * 600_000 if n == "python-allow" else v) for n, v in form.fields])
    assert huge.status == 413
    said = plain_words(huge)
    assert "The form was too large to send" in said and "more than 1 MiB (1,048,576 bytes)" in said
    assert "nothing was changed, and what you typed could not be kept here" in said
    assert "Request Entity Too Large" not in said and api(live, "GET", "/policy")["version"] == 0


def test_names_typed_for_a_rule_left_off_are_said_not_kept(live):
    console = signed_in(live)

    def save(**typed):
        form = console.get(P).form()
        return console.follow(console.post(form.action, [(n, typed.get(n, v)) for n, v in form.fields]))

    done = save(**{"python-rules-sdists-allow": "numpy"})
    said = (
        "Nothing to save: the form matches the saved policy (version 0). The names typed for a rule that is off "
        "were not kept: under Python “Allowed anyway”, as “Wheels only: refuse source distributions” is not ticked."
    )
    assert said in done.plain, done.plain
    saved = save(**{"python-mode": "allowlist", "node-rules-min_release_age-exempt": "@acme/*"})
    assert "Saved. The policy is now version 1." in saved.plain
    assert "under Node “Never too new”, as “Minimum release age” is empty" in saved.plain
    assert "not kept" not in console.get(P).plain  # said once, with that Save
