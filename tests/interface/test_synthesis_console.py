"""The Packages page's "Synthesise from the record": a draft switched to Allowlist with the
synthesised list and its impact, never saved without a click on Save; deny patterns that
shadow allow entries are said in the draft's Test results (SQLite, PostgreSQL)."""

from __future__ import annotations

from tests.interface.test_console import P, api, signed_in


def test_synthesis_fills_a_previewed_draft_and_saves_nothing_until_save(live):
    for name in ("pandas", "pandas", "pandas", "scipy"):
        body = {"language": "python", "specs": [name], "context": {"sandbox": "s"}}
        api(live, "POST", "/evaluate", body, role="sandbox")
    console = signed_in(live)
    page = console.get(P)
    button = next(b for b in page.form().buttons if b.get("formaction", "").endswith("/synthesis"))
    form = dict(page.form().fields) | {"synthesis-language": "python", "synthesis-coverage": "75"}
    shown = console.post(button["formaction"], list(form.items()))
    assert shown.status == 200
    assert "Draft: Python switched to Allowlist with the 1 package that would have allowed 75.0%" in shown.plain
    assert "It would have denied 1 of 4 installs in the last 30 days: scipy ×1" in shown.plain
    drafted = shown.form()
    assert (drafted.get("python-mode"), drafted.get("python-allow")) == ("allowlist", "pandas")
    assert api(live, "GET", "/policy")["version"] == 0  # nothing saved
    saved = console.follow(console.post(drafted.action, drafted.fields))
    assert "Saved." in saved.plain and api(live, "GET", "/policy")["python"]["allow"] == ["pandas"]


def test_the_drafts_test_results_say_which_allow_entries_a_deny_pattern_shadows(live):
    console = signed_in(live)
    page = console.get(P)
    draft = dict(page.form().fields) | {
        "python-mode": "allowlist",
        "python-allow": "django-rest-framework\nflask",
        "python-deny": "django-*",
        "test-language": "python",
        "test-input": "flask",
        "against": "draft",
    }
    shown = console.follow(console.post("/console/settings/governance/packages/test", list(draft.items())))
    assert "The Python deny pattern django-* shadows allow entries (the deny list wins): django-rest-framework" in (
        shown.plain
    )


def test_a_coverage_outside_a_percentage_is_refused_in_the_forms_own_unit(live):
    console = signed_in(live)
    page = console.get(P)
    button = next(b for b in page.form().buttons if b.get("formaction", "").endswith("/synthesis"))
    for typed in ("150", "0", "nan", "lots"):
        form = dict(page.form().fields) | {"synthesis-language": "python", "synthesis-coverage": typed}
        shown = console.post(button["formaction"], list(form.items()))
        assert shown.status == 422, typed
        assert "Coverage (%): must be a percentage above 0 and at most 100, such as 99" in shown.plain, typed
    assert api(live, "GET", "/policy")["version"] == 0


def test_a_deny_listed_name_is_neither_proposed_nor_counted_as_covered(live):
    for name in ("pandas", "requests", "requests", "numpy"):
        api(live, "POST", "/evaluate", {"language": "python", "specs": [name]}, role="sandbox")
    api(live, "PUT", "/policy", {"python": {"mode": "denylist", "deny": "requests"}})
    answer = api(live, "POST", "/allowlist/synthesis", {"language": "python", "coverage": 0.99})
    assert answer["allow"] == ["numpy", "pandas"] and answer["denied"] == ["requests"]
    assert answer["coverage"] == 0.5
    console = signed_in(live)
    page = console.get(P)
    button = next(b for b in page.form().buttons if b.get("formaction", "").endswith("/synthesis"))
    form = dict(page.form().fields) | {"synthesis-language": "python", "synthesis-coverage": "99"}
    shown = console.post(button["formaction"], list(form.items()))
    assert "with the 2 packages that would have allowed 50.0%" in shown.plain
    assert "Not added, as the draft's deny list denies them (their installs count as not covered): requests" in (
        shown.plain
    )
    assert shown.form().get("python-allow") == "numpy\npandas" and shown.form().get("python-deny") == "requests"
