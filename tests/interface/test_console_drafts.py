"""A draft in the Packages page's address: only a Test posted in this session fills the form
from it (a crafted link shows the saved policy), and a Save that does not say which version
it was opened at is refused rather than overwriting what was saved meanwhile."""

from __future__ import annotations

import urllib.parse

from tests.interface.test_console import P, api, signed_in

WIPING_LINK = {"python-mode": "denylist", "node-mode": "denylist", "test-input": "pandas", "against": "saved"}


def _some_policy(live) -> dict:
    api(live, "PUT", "/policy", {"python": {"mode": "allowlist", "allow": "pandas, numpy", "deny": "requests"}})
    return api(live, "GET", "/policy")


def test_a_crafted_link_shows_the_saved_policy_in_the_form_and_its_save_changes_nothing(live):
    before = _some_policy(live)
    console = signed_in(live)
    page = console.get(P, **WIPING_LINK)
    assert page.status == 200
    form = page.form()
    assert form.get("python-mode") == "allowlist" and form.get("python-allow") == "numpy\npandas"
    assert form.get("expected_version") == str(before["version"])
    assert "not made by a Test in this session" in page.plain
    assert console.submit(page).status == 302  # Save: the form is the saved policy, so nothing changes
    assert api(live, "GET", "/policy")["version"] == before["version"]


def test_a_draft_link_cannot_be_forged_with_a_seal_of_another_session(live):
    _some_policy(live)
    other = signed_in(live)
    answer = other.submit(other.get(P), against="draft", python_allow="", python_deny="", test_input="pandas")
    link = answer.headers["Location"].split("#")[0]
    console = signed_in(live)
    query = urllib.parse.urlsplit(link).query
    page = console.get(P, **dict(urllib.parse.parse_qsl(query, keep_blank_values=True)))
    assert page.form().get("python-allow") == "numpy\npandas" and "Results against the saved policy" in page.plain


def test_an_auditor_opening_a_draft_link_gets_the_saved_policys_answer(live):
    """An admin's Test link (`against=draft`) opened by an auditor was a 403: an auditor's form is
    always the saved policy, so the draft is dropped and the specs judged against it."""
    before = _some_policy(live)
    draft = {**WIPING_LINK, "against": "draft", "python-deny": "pandas", "expected_version": str(before["version"])}
    page = signed_in(live, "auditor").get(P, **draft)
    assert page.status == 200, page.plain[:500]
    assert f"Results against the saved policy (version {before['version']})" in page.plain
    assert [r[3:5] for r in page.rows()] == [["Allowed", "matches-the-allow-list"]]  # not the draft's denial
    assert page.form().get("python-allow") == "numpy\npandas" and page.form().get("python-deny") == "requests"


def test_the_consoles_own_test_keeps_the_draft_and_says_it_is_not_the_saved_policy(live):
    before = _some_policy(live)
    console = signed_in(live)
    page = console.test(console.get(P), against="draft", python_allow="scipy", test_input="scipy")
    assert page.form().get("python-allow") == "scipy" and "Results against your unsaved draft" in page.plain
    assert f"not necessarily the saved policy (version {before['version']})" in page.plain
    assert page.form().get("expected_version") == str(before["version"])


def test_a_save_without_the_forms_version_is_refused_and_saves_nothing(live):
    before = _some_policy(live)
    console = signed_in(live)
    page = console.get(P)
    for version in ("", "  ", None):
        fields = [(n, "" if n in ("python-allow", "python-deny") else v) for n, v in page.form().fields]
        fields = [(n, v) for n, v in fields if n != "expected_version"] + (
            [] if version is None else [("expected_version", version)]
        )
        refused = console.post(P, fields)
        assert refused.status == 422, version
        assert "does not say which version of the policy it was opened at" in refused.plain
        assert "The form's version: must be the whole number the page put there" in refused.plain
    assert api(live, "GET", "/policy")["version"] == before["version"]


def test_a_test_or_preview_of_a_form_opened_before_a_save_says_the_saved_policy_moved_on(live):
    """Another admin's Save after this form was opened: its Test results and impact preview are of
    the form as it stands (which lacks that change), and say so, as its Save would."""
    before = _some_policy(live)
    console = signed_in(live)
    page = console.get(P)  # opened at `before`
    api(
        live,
        "POST",
        "/policy/changes",
        {"changes": [{"action": "remove", "language": "python", "list": "deny", "entries": ["requests"]}]},
    )
    opened, now = before["version"], before["version"] + 1
    moved = f"has moved on since this form was opened (version {opened}; it is now version {now})"
    tested = console.test(page, against="draft", test_input="requests")
    assert moved in tested.plain and f"opened at version {before['version']})" in tested.plain, tested.plain
    assert f"(version {before['version'] + 1} plus your edits)" not in tested.plain
    form = page.form()
    button = next(b for b in form.buttons if b.get("formaction", "").endswith("/impact"))
    preview = console.post(button["formaction"], form.fields)
    assert preview.status == 200 and moved in preview.plain
    saved = console.test(page, against="saved", test_input="requests")  # the form was not what it judged
    assert "has moved on" not in saved.plain and f"(version {now})" in saved.plain
    fresh = console.test(console.get(P), against="draft", test_input="requests")  # opened after it: nothing to say
    assert "has moved on" not in fresh.plain


def test_a_refusal_naming_its_fields_is_headed_in_plain_words(live):
    _some_policy(live)
    console = signed_in(live)
    form = console.get(P).form()
    fields = [(n, "3 days" if n == "node-rules-min_release_age-age" else v) for n, v in form.fields]
    refused = console.post(form.action, fields)
    assert refused.status == 422 and "Nothing was changed: fix what is marked below." in refused.plain
    assert "named in errors" not in refused.plain
