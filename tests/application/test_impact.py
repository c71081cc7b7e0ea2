"""Impact of a draft: counts from the read model against counts computed here, independently."""

from __future__ import annotations

import random
from collections import defaultdict

import pytest

from domain.decision import judge
from domain.errors import InvalidInputError
from domain.specs import parse

NAMES = {"python": ["pandas", "numpy", "scipy", "torch", "requests"], "node": ["left-pad", "express", "lodash"]}
SANDBOXES = ["sbx-1", "sbx-2", "sbx-3", None]


def seeded_history(app, workspace, seed: int):
    """Evaluates of random names from random sandboxes; returns what was recorded, as counted here."""
    rng = random.Random(seed)
    installs, sandboxes = defaultdict(int), defaultdict(set)
    for _ in range(60):
        language = rng.choice(list(NAMES))
        names = rng.sample(NAMES[language], rng.randint(1, 3))
        sandbox = rng.choice(SANDBOXES)
        app.evaluation.evaluate(
            workspace, language, [f"{n}>=1" if language == "python" else n for n in names], context={"sandbox": sandbox}
        )
        for name in names:
            installs[(language, name)] += 1
            if sandbox:
                sandboxes[(language, name)].add(sandbox)
    app.evaluation.evaluate(workspace, "python", ["-r req.txt", "https://x.example/a.whl"])  # no name: not installs
    return installs, sandboxes


def expected(installs, sandboxes, before, after) -> dict:
    """`before`/`after`: (language, name) -> allowed, written out by hand for this test's policies."""
    out = {"would_deny": [], "would_allow": [], "unchanged": 0}
    for key, n in installs.items():
        if before(key) == after(key):
            out["unchanged"] += n
        else:
            package = {"language": key[0], "name": key[1], "installs": n, "sandboxes": len(sandboxes[key])}
            out["would_deny" if before(key) else "would_allow"].append(package)
    for side in ("would_deny", "would_allow"):
        out[side].sort(key=lambda p: (-p["installs"], p["language"], p["name"]))
    return out


def test_impact_matches_counts_computed_independently(app, workspace):
    app.change_policy(
        workspace, [{"action": "add", "language": "python", "list": "deny", "entries": ["torch"]}], by="a"
    )
    installs, sandboxes = seeded_history(app, workspace, seed=3)
    draft = {
        "python": {"mode": "allowlist", "allow": ["pandas", "torch", "numpy"], "deny": []},
        "node": {"deny": ["express"]},
    }
    answer = app.impacts.impact(workspace, draft, 30)

    def before(key):  # saved: denylist everywhere, torch denied
        return key != ("python", "torch")

    def after(key):
        language, name = key
        if language == "python":
            return name in ("pandas", "torch", "numpy")
        return name != "express"

    assert {k: answer[k] for k in ("would_deny", "would_allow", "unchanged")} == expected(
        installs, sandboxes, before, after
    )
    assert answer["would_deny"] and answer["would_allow"]


def test_an_exception_counts_on_both_sides(app, workspace):
    app.change_policy(workspace, [{"action": "switch-mode", "language": "python", "mode": "allowlist"}], by="a")
    app.access.grant_exception(workspace, "python", "scipy", by="a", duration="P1D")
    installs, sandboxes = seeded_history(app, workspace, seed=4)
    same = app.impacts.impact(workspace, {"python": {"mode": "allowlist", "allow": []}}, 30)
    assert same["would_deny"] == same["would_allow"] == []
    denied = app.impacts.impact(workspace, {"python": {"deny": ["scipy"]}}, 30)
    assert [(p["name"], p["installs"]) for p in denied["would_deny"]] == [("scipy", installs[("python", "scipy")])]


def test_an_empty_history_changes_nothing(app, workspace):
    answer = app.impacts.impact(workspace, {"python": {"mode": "allowlist"}}, 30)
    assert (answer["would_deny"], answer["would_allow"], answer["unchanged"]) == ([], [], 0)


def test_a_draft_identical_to_the_saved_policy_changes_nothing(app, workspace):
    app.save_policy(
        workspace, {"python": {"mode": "allowlist", "allow": "pandas, scipy"}, "node": {"deny": "lodash"}}, by="a"
    )
    installs, _ = seeded_history(app, workspace, seed=5)
    saved = app.policy(workspace)
    draft = {lang: {k: saved[lang][k] for k in ("mode", "allow", "deny")} for lang in NAMES}
    answer = app.impacts.impact(workspace, draft, 30)
    assert (answer["would_deny"], answer["would_allow"]) == ([], [])
    assert answer["unchanged"] == sum(installs.values())


@pytest.mark.parametrize("days", [0, 367, True, "30"])
def test_days_out_of_range(app, workspace, days):
    with pytest.raises(InvalidInputError) as refused:
        app.impacts.impact(workspace, {}, days)
    assert refused.value.errors[0].field == "days"


def test_days_before_today_are_summed_once_and_rechecked_when_they_move(open_app, monkeypatch):
    from datetime import UTC, datetime, timedelta

    from domain.decision import Decision

    real = Decision.Recorded.create_timestamp
    # The application's today is the one the decisions are stamped from, 26 days ago (so the
    # installs of "5 days ago" are outside the real last 30 days): only its clock agrees with
    # that, and it does not move on at midnight between two reads.
    now = datetime.now(UTC) - timedelta(days=26)
    app = open_app(clock=lambda: now)
    workspace = app.create_workspace("acme", by="founder")["workspace"]

    def on(days_ago: int, specs: list[str], sandbox: str):
        stamp = now - timedelta(days=days_ago)
        monkeypatch.setattr(Decision.Recorded, "create_timestamp", staticmethod(lambda: stamp))
        app.evaluation.evaluate(workspace, "python", specs, context={"sandbox": sandbox})
        monkeypatch.setattr(Decision.Recorded, "create_timestamp", real)

    on(40, ["pandas"], "old")  # outside the 30 days
    on(5, ["pandas", "scipy"], "a")
    on(1, ["pandas"], "b")
    draft = {"python": {"mode": "allowlist", "allow": []}}

    def denied():
        answer = app.impacts.impact(workspace, draft, 30)
        return {(p["name"], p["installs"], p["sandboxes"]) for p in answer["would_deny"]}

    assert denied() == {("pandas", 2, 2), ("scipy", 1, 1)}
    on(0, ["pandas", "numpy"], "c")  # today: read fresh on every call
    on(0, ["pandas"], "a")
    assert denied() == {("pandas", 4, 3), ("scipy", 1, 1), ("numpy", 1, 1)}
    on(2, ["scipy"], "late")  # a past day moves (a write that committed late): summed again
    assert denied() == {("pandas", 4, 3), ("scipy", 2, 2), ("numpy", 1, 1)}


# A name installed from the registry and by direct reference, direct references of other names
# (url, vcs, path), one of unknown name (not an install), and node's registry names and aliases.
MIXED = {
    "python": [
        ("urlpkg @ https://x.example/urlpkg-1.0-py3-none-any.whl", "sbx-1"),
        ("urlpkg @ https://x.example/urlpkg-1.0-py3-none-any.whl", None),
        ("urlpkg", "sbx-2"),
        ("gitpkg @ git+https://x.example/gitpkg.git", "sbx-1"),
        ("localpkg @ file:///tmp/localpkg", "sbx-3"),
        ("pandas", "sbx-1"),
        ("evil @ https://x.example/evil.whl", "sbx-2"),
        ("./local/dir", "sbx-1"),
    ],
    "node": [("left-pad", "sbx-1"), ("alias@npm:lodash", "sbx-2"), ("lodash", "sbx-1")],
}


def replayed(app, workspace, draft) -> dict:
    """Every recorded decision that names a package, its spec parsed again from the record and
    judged under the saved policy and under the draft, as `/evaluate` and `/test` judge it."""
    _, saved = app.policies.current(workspace)
    _, drafted = app.policies.draft_rules(workspace, draft)
    moved: dict = {"would_deny": {}, "would_allow": {}}
    unchanged = 0
    for d in app.audit.decisions(workspace, limit=1000)["decisions"]:
        if d["language"] not in NAMES or not d["name"]:
            continue
        spec = parse(d["language"], d["spec"])
        before = judge(saved[d["language"]], spec, workspace).allowed
        if before == judge(drafted[d["language"]], spec, workspace).allowed:
            unchanged += 1
            continue
        found = moved["would_deny" if before else "would_allow"].setdefault((d["language"], d["name"]), [0, set()])
        found[0] += 1
        found[1] |= {d["context"]["sandbox"]} if d["context"].get("sandbox") else set()
    out: dict = {"unchanged": unchanged}
    for side, found in moved.items():
        rows = [{"language": k[0], "name": k[1], "installs": n, "sandboxes": len(s)} for k, (n, s) in found.items()]
        out[side] = sorted(rows, key=lambda p: (-p["installs"], p["language"], p["name"]))
    return out


@pytest.mark.parametrize(
    "saved,draft",
    [
        # the allow list vouches for registry names only: urlpkg's direct references would be denied
        (
            {"python": {"mode": "denylist", "deny": ["evil"]}},
            {"python": {"mode": "allowlist", "allow": ["urlpkg", "gitpkg", "pandas"]}, "node": {"mode": "allowlist"}},
        ),
        ({"python": {"mode": "denylist", "deny": ["evil"]}}, {"node": {"mode": "allowlist", "allow": ["lodash"]}}),
        # and the reverse: back to a deny list lets the direct references in again
        (
            {"python": {"mode": "allowlist", "allow": ["urlpkg", "pandas"]}},
            {"python": {"mode": "denylist", "deny": ["gitpkg"]}},
        ),
    ],
)
def test_each_install_is_judged_by_its_kind_as_a_replay_of_the_decisions_judges_it(app, workspace, saved, draft):
    app.save_policy(workspace, saved, by="a")
    for language, specs in MIXED.items():
        for spec, sandbox in specs:
            app.evaluation.evaluate(workspace, language, [spec], context={"sandbox": sandbox})
    answer = app.impacts.impact(workspace, draft, 30)
    assert {k: answer[k] for k in ("would_deny", "would_allow", "unchanged")} == replayed(app, workspace, draft)
    assert answer["would_deny"] or answer["would_allow"]


def test_a_direct_reference_allowed_under_a_deny_list_would_be_denied_by_an_allow_list_naming_it(app, workspace):
    """What an allowlist draft's Save then does: /test with the draft denies the direct reference."""
    url = "urlpkg @ https://x.example/urlpkg-1.0-py3-none-any.whl"
    (recorded,) = app.evaluation.evaluate(workspace, "python", [url], context={"sandbox": "sbx-1"})["decisions"]
    assert (recorded["allowed"], recorded["kind"]) == (True, "url")
    draft = {"python": {"mode": "allowlist", "allow": ["urlpkg"], "deny": []}}
    (tested,) = app.evaluation.test(workspace, "python", [url], None, None, draft=draft)["decisions"]
    assert (tested["allowed"], tested["reason"]) == (False, "direct-reference")
    answer = app.impacts.impact(workspace, draft, 30)
    assert answer["would_deny"] == [{"language": "python", "name": "urlpkg", "installs": 1, "sandboxes": 1}]
    assert (answer["would_allow"], answer["unchanged"]) == ([], 0)
