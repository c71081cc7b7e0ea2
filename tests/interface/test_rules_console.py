"""The Packages page edits the rules beyond names, over a real server on SQLite and PostgreSQL."""

from __future__ import annotations

from tests.interface.test_console import P, Page, api, signed_in

NODE_RULES = {
    "min_release_age": {"age": "P3D", "exempt": ["@acme/*"], "action": "enforce"},
    "versions_deny": {"entries": ["axios@1.14.1"], "action": "monitor"},
    "install_scripts": {"allow": ["esbuild"], "action": "enforce"},
}


def submit(console, page: Page, **typed: str) -> Page:
    """The policy form as a browser sends it, with fields (named as the page names them) changed."""
    form = page.form()
    fields = [(n, typed.pop(n, v)) for n, v in form.fields] + list(typed.items())
    return console.post(form.action, fields)


def test_an_admin_saves_rules_with_the_form_and_sees_them_saved(live):
    console = signed_in(live)
    page = console.get(P)
    assert "rules beyond names" in page.plain and "Monitor: serve it" in page.plain
    answer = submit(
        console,
        page,
        **{
            "node-rules-min_release_age-age": "p3d",
            "node-rules-min_release_age-exempt": "@acme/*",
            "node-rules-versions_deny-entries": "axios@1.14.1",
            "node-rules-versions_deny-action": "monitor",
            "node-rules-install_scripts": "on",
            "node-rules-install_scripts-allow": "esbuild",
            "note": "cool down",
        },
    )
    assert answer.status == 302, answer.plain
    saved = console.follow(answer)
    assert "Saved. The policy is now version 3." in saved.plain
    policy = api(live, "GET", "/policy")
    assert policy["node"]["rules"] == NODE_RULES and "rules" not in policy["python"]
    form = saved.form()
    assert form.get("node-rules-min_release_age-age") == "P3D"
    assert form.get("node-rules-versions_deny-action") == "monitor"
    assert form.get("node-rules-install_scripts") == "on"
    # saving the form as shown changes nothing; emptying the age turns that rule off
    assert "Nothing to save" in console.follow(submit(console, saved)).plain
    off = console.follow(submit(console, saved, **{"node-rules-min_release_age-age": ""}))
    assert "version 4" in off.plain
    assert "min_release_age" not in api(live, "GET", "/policy")["node"]["rules"]


def test_bad_rules_are_named_in_the_form_and_nothing_is_saved(live):
    console = signed_in(live)
    typed = {"python-rules-min_release_age-age": "P1M", "python-rules-versions_deny-entries": "requests"}
    page = submit(console, console.get(P), **typed)
    assert page.status == 422
    assert "Python Minimum release age: months and years" in page.plain  # the words of the input's label
    assert "Python Denied versions, entry 1:" in page.plain
    assert page.form().get("python-rules-min_release_age-age") == "P1M"
    assert 'id="python-rules-min_release_age-age" name="python-rules-min_release_age-age" value="P1M"' in page.text
    assert api(live, "GET", "/policy")["version"] == 0


def test_an_auditor_sees_the_rules_read_only(live):
    api(live, "PUT", "/policy", {"node": {"rules": NODE_RULES}})
    page = signed_in(live, "auditor").get(P)
    form = page.form()
    assert form.get("node-rules-min_release_age-age") == "P3D"
    assert "node-rules-versions_deny-entries" in form.readonly


def test_the_impact_preview_names_the_downloads_a_drafted_rule_would_have_hidden(live, app):
    from tests.application.test_rules_impact import download

    download(app, "acme", "node", "sharp", "0.34.0", "sharp-0.34.0.tgz", "sbx-1", "2020-01-01T00:00:00Z", True)
    console = signed_in(live)
    page = console.get(P)
    form = page.form()
    fields = [(n, v) for n, v in form.fields] + [("node-rules-install_scripts", "on")]
    button = next(b for b in form.buttons if b.get("formaction", "").endswith("/impact"))
    preview = console.post(button["formaction"], fields)
    assert preview.status == 200
    assert "Its rules beyond names would have hidden 1 download of versions" in preview.plain
    assert "sharp 0.34.0 (install-scripts) ×1" in preview.plain
    # its rules change something, its lists nothing: "Nothing" had been said all the same
    assert "Nothing: the draft" not in preview.plain and "the same answer" not in preview.plain, preview.plain
    assert "Its lists and modes change nothing: each of the 1 install of the last 30 days" in preview.plain
    assert api(live, "GET", "/policy")["version"] == 0


def test_the_change_history_says_which_rule_changed(live):
    api(live, "PUT", "/policy", {"note": "cool down", "node": {"rules": NODE_RULES}, "known_malware": "monitor"})
    api(live, "PUT", "/policy", {"node": {"rules": {}}})
    page = signed_in(live, "auditor").get("/console/history")
    assert page.status == 200
    # In the Packages page's words, with what was set (the rule's name and action alone said little).
    assert "Node: set the rule Minimum release age: P3D; never too new: @acme/*. Enforce: hide the version." in (
        page.plain
    )
    assert "Node: set the rule Denied versions: axios@1.14.1. Monitor: serve it, record what" in page.plain
    assert "Node: turned the rule Refuse versions that run install scripts off" in page.plain
    assert "min_release_age" not in page.plain
    version = next(r[0] for r in page.rows() if "Minimum release age" in r[3])
    one = signed_in(live, "auditor").get("/console/time-travel", version=version)
    assert "set the rule Minimum release age: P3D" in one.plain
    assert "known malware: switched to monitor" in page.plain
