"""Pasted list entries over HTTP, on SQLite and PostgreSQL: every fragment an admin typed is judged
(a Save, a change, a draft), and a bad body is told one clear thing per field."""

from __future__ import annotations

import pytest

P = "/api/v1/workspaces/acme"
EMPTY = {"mode": "denylist", "allow": [], "deny": []}


def put(live, language: str, deny):
    other = "node" if language == "python" else "python"
    body = {language: {"mode": "denylist", "allow": [], "deny": deny}, other: EMPTY}
    return live.call("PUT", P + "/policy", live.tokens["admin"], body)


def version(live) -> int:
    return live.call("GET", P + "/policy", live.tokens["auditor"]).json["version"]


@pytest.mark.parametrize(
    ("language", "deny", "refused"),
    [
        ("python", "ok, evil[x, evil-two", "evil[x"),
        ("python", ["evil[x"], "evil[x"),
        ("python", 'evil; python_version == "3', 'evil; python_version == "3'),
    ],
)
def test_an_unclosed_bracket_or_quote_in_a_save_is_422_naming_it_and_nothing_is_saved(live, language, deny, refused):
    reply = put(live, language, deny)
    assert reply.status == 422, reply.body
    (error,) = reply.json["errors"]
    assert error["field"].startswith(f"{language}.deny[") and error["message"].startswith(f"{refused!r} is not")
    assert version(live) == 0


@pytest.mark.parametrize(
    ("deny", "saved"),
    [("a(b, evil, other", ["a(b", "evil", "other"]), ("foo'bar, evil", ["evil", "foo'bar"])],
)
def test_node_names_holding_brackets_or_quotes_are_saved_with_every_entry_after_them(live, deny, saved):
    reply = put(live, "node", deny)
    assert reply.status == 200, reply.body
    assert reply.json["node"]["deny"] == saved
    judged = live.call("POST", P + "/evaluate", live.tokens["sandbox"], {"language": "node", "specs": ["evil"]})
    assert judged.json["decisions"][0]["reason"] == "matches-the-deny-list"


def test_a_change_adding_an_unclosed_entry_is_422_and_adds_nothing(live):
    change = {"action": "add", "language": "python", "list": "deny", "entries": "ok, foo[x, evil"}
    reply = live.call("POST", P + "/policy/changes", live.tokens["admin"], {"changes": [change]})
    assert reply.status == 422, reply.body
    assert [e["field"] for e in reply.json["errors"]] == ["changes[0].entries[1]"]
    assert version(live) == 0


def test_a_drafts_unclosed_entry_is_422_and_the_names_after_it_are_judged(live):
    draft = {"python": {"deny": "ok, evil[x, evil-two"}}
    body = {"language": "python", "specs": ["evil-two"], "draft": draft}
    reply = live.call("POST", P + "/test", live.tokens["admin"], body)
    assert reply.status == 422 and [e["field"] for e in reply.json["errors"]] == ["draft.python.deny[1]"]
    body["draft"] = {"node": {"deny": "x(y, evil-one"}}
    body.update(language="node", specs=["evil-one"])
    reply = live.call("POST", P + "/test", live.tokens["admin"], body)
    assert reply.status == 200 and reply.json["decisions"][0]["reason"] == "matches-the-deny-list"


@pytest.mark.parametrize(
    ("path", "body", "said"),
    [
        (
            "/policy/changes",
            {"changes": [{"action": "add", "language": "ruby", "list": "allow", "entries": "x"}]},
            {"changes[0].language": "Input should be 'python', 'node' or 'egress'"},
        ),
        (
            "/policy/changes",
            {"changes": [{"action": "switch-mode", "language": "python", "mode": "closed"}]},
            {"changes[0].mode": "must be one of allowlist, denylist; got 'closed'"},
        ),
        ("/requests", {"language": "ruby", "name": "x"}, {"language": "Input should be 'python', 'node' or 'egress'"}),
        (
            "/policy",
            {"python": {"allow": ["a" * 5000]}},
            {"python.allow[0]": f"'{'a' * 100}'… has 5000 characters; a list entry may have at most 4096"},
        ),
        (
            "/policy",
            {"python": {"allow": [1, {}]}},
            {"python.allow[0]": "must be a string, not 1", "python.allow[1]": "must be a string, not an object"},
        ),
        (
            "/policy",
            {"node": {"deny": 5}},
            {"node.deny": "must be one string of entries or a list of them, not 5"},
        ),
        (
            "/policy",
            {"python": {"rules": {"versions_deny": {"entries": [3]}}}},
            {"python.rules.versions_deny.entries[0]": "must be a string, not 3"},
        ),
    ],
)
def test_a_wrong_field_is_told_one_thing_not_each_union_members_complaint(live, path, body, said):
    method = "PUT" if path == "/policy" else "POST"
    reply = live.call(method, P + path, live.tokens["admin"], body)
    assert reply.status == 422, reply.body
    told = {e["field"]: e["message"] for e in reply.json["errors"]}
    assert told.keys() == said.keys() and all(told[f].startswith(said[f]) for f in said), told
    assert len(reply.json["errors"]) == len(said)


@pytest.mark.parametrize(("entries", "said"), [(None, "null"), (False, "false"), (0, "0"), ({}, "an object")])
def test_entries_that_are_no_list_are_refused_not_read_as_none(live, entries, said):
    """`"entries": null` (false, 0, {}) had been 200 and changed nothing, for egress hosts too."""
    admin = live.tokens["admin"]
    listed = {"changes": [{"action": "add", "language": "python", "list": "deny", "entries": "evil"}]}
    assert live.call("POST", P + "/policy/changes", admin, listed).status == 200
    for action in ("add", "remove"):
        changes = [
            {"action": action, "language": "python", "list": "deny", "entries": entries},
            {"action": action, "language": "egress", "list": "allow", "entries": entries},
        ]
        reply = live.call("POST", P + "/policy/changes", admin, {"changes": changes})
        assert reply.status == 422 and reply.media == "application/problem+json", reply.body
        assert reply.json["errors"] == [
            {"field": "changes[0].entries", "message": f"must be one string of entries or a list of them, not {said}"},
            {
                "field": "changes[1].entries",
                "message": f"must be a list of hostnames such as api.github.com or *.example.org, not {said}",
            },
        ]
    assert version(live) == 1


def test_a_refusal_names_a_wrong_value_in_jsons_words_and_quotes_at_most_a_hundred_characters(live):
    """`got True`, `got None`, `got {'a': 1}`, `got nan` and `None is not a string but NoneType`
    had been the answer, and a 100,000-character mode had been quoted back whole."""
    changes = [
        {"action": "switch-mode", "language": "python", "mode": True},
        {"action": "switch-mode", "language": "node", "mode": {"a": 1}},
        {"action": "set-known-malware", "known_malware": None},
        {"action": "add", "language": "python", "list": "deny", "entries": [None, 2.5]},
        {"action": "switch-mode", "language": "python", "mode": "x" * 100_000},
    ]
    reply = live.call("POST", P + "/policy/changes", live.tokens["admin"], {"changes": changes})
    assert reply.status == 422 and len(reply.body) < 2000, reply.body[:300]
    told = {e["field"]: e["message"].split(";")[:2] for e in reply.json["errors"]}
    assert told == {
        "changes[0].mode": ["must be one of allowlist, denylist", " got true"],
        "changes[1].mode": ["must be one of allowlist, denylist", " got an object"],
        "changes[2].known_malware": ["must be one of enforce, monitor", " got null"],
        "changes[3].entries[0]": ["must be a string, not null", " a list entry must be the plain name of a registry "
                                  "package (or a pattern: Python 'name-*', Node '@scope/*')"],
        "changes[3].entries[1]": ["must be a string, not 2.5", " a list entry must be the plain name of a "
                                  "registry package (or a pattern: Python 'name-*', Node '@scope/*')"],
        "changes[4].mode": ["must be one of allowlist, denylist", f" got '{'x' * 100}'…"],
    }  # fmt: skip


@pytest.mark.parametrize("line_break", ["\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u2029"])
def test_no_name_hides_in_a_comment_past_a_character_that_ends_a_line_for_pip(live, line_break):
    """`pandas # x\u2028evil` had saved `pandas` alone: pip (and the Import of a requirements
    file) reads `evil` on a line of its own. The entry is refused, naming the character."""
    for deny in (f"pandas # x{line_break}evil", [f"# x{line_break}evil"]):
        reply = put(live, "python", deny)
        assert reply.status == 422, reply.body
        (error,) = reply.json["errors"]
        assert error["field"] == "python.deny[0]" and f"U+{ord(line_break):04X}" in error["message"], error
    assert version(live) == 0
    saved = put(live, "python", "pandas  # for the data team\nnumpy\t# pinned")
    assert saved.status == 200 and saved.json["python"]["deny"] == ["numpy", "pandas"], saved.body
