"""Impact of a draft: counts from the read model against counts computed here, independently."""

from __future__ import annotations

import random
from collections import defaultdict

import pytest

from domain.errors import InvalidInputError

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
