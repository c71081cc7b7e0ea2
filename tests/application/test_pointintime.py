"""Point-in-time answers from the indexes agree with a naive full replay of the event log."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from application.formats import iso
from application.store import SNAPSHOT_INTERVAL
from domain.decision import judge
from domain.policy import policy_id, rules_from_state
from domain.specs import parse

NAMES = {
    "python": ["pandas", "numpy", "scipy", "requests", "django-rest-framework", "django"],
    "node": ["left-pad", "Left-Pad", "express", "@s/p", "@S/p"],
}
# Pattern entries the random histories also add and remove (never judged as names themselves).
PATTERNS = {"python": ["django-*", "django-rest-*"], "node": ["@s/*", "@S/*"]}


def replay_until(app, workspace: str, at):
    """The naive answer: fold every stored policy event with a timestamp <= at."""
    policy = None
    for event in app.events.get(policy_id(workspace)):
        if policy is not None and event.timestamp > at:
            break
        policy = event.mutate(policy)
    return policy


def random_history(app, workspace: str, steps: int, seed: int):
    """Saves of one to three changes each (a multi-change save is one atomic instant)."""
    rng = random.Random(seed)
    for _ in range(steps):
        changes = [random_change(rng) for _ in range(rng.choice([1, 1, 2, 3]))]
        app.change_policy(workspace, changes, by=rng.choice(["alice", "bob"]), note="random")


def random_change(rng) -> dict:
    language = rng.choice(["python", "node"])
    if rng.random() < 0.15:
        return {"action": "switch-mode", "language": language, "mode": rng.choice(["allowlist", "denylist"])}
    return {
        "action": rng.choice(["add", "remove"]),
        "language": language,
        "list": rng.choice(["allow", "deny"]),
        "entries": [rng.choice(NAMES[language] + PATTERNS[language])],
    }


def instants(app, workspace, rng, count):
    stamps = [e.timestamp for e in app.events.get(policy_id(workspace))]
    picks = [rng.choice(stamps) + timedelta(microseconds=rng.choice([-1, 0, 1])) for _ in range(count)]
    return picks + [stamps[0] - timedelta(seconds=1), stamps[-1] + timedelta(days=1)]


def test_policy_and_package_answers_match_a_full_replay(app, workspace):
    random_history(app, workspace, steps=180, seed=7)
    rng = random.Random(11)
    for at in instants(app, workspace, rng, 40):
        naive = replay_until(app, workspace, at)
        view = app.policy(workspace, at=at)
        assert view["version"] == naive.policy_version
        assert {k: view[k] for k in ("python", "node")} == naive.state
        rules = rules_from_state(naive.state)
        for language, names in NAMES.items():
            for name in names:
                answer = app.audit.package_at(workspace, language, name, at)
                expected = judge(rules[language], parse(language, name), workspace)
                assert (answer["allowed"], answer["reason"]) == (expected.allowed, expected.reason), (at, name)
                assert answer["policy_version"] == naive.policy_version


def test_because_names_the_change_that_decided_the_answer(app, workspace):
    app.change_policy(
        workspace,
        [{"action": "add", "language": "python", "list": "allow", "entries": ["pandas"]}],
        by="alice",
        note="data team",
    )
    app.change_policy(
        workspace, [{"action": "switch-mode", "language": "python", "mode": "allowlist"}], by="bob", note="lock down"
    )
    added = app.audit.history(workspace)["changes"]
    from datetime import datetime

    now = datetime.now(UTC)
    answer = app.audit.package_at(workspace, "python", "Pandas==2.1", now)
    assert answer["allowed"] and answer["reason"] == "matches-the-allow-list"
    assert answer["because"]["by"] == "bob" and answer["because"]["type"] == "mode-switched"
    app.change_policy(
        workspace,
        [{"action": "add", "language": "python", "list": "deny", "entries": ["pandas"]}],
        by="carol",
        note="CVE",
    )
    denied = app.audit.package_at(workspace, "python", "pandas", datetime.now(UTC))
    assert (denied["allowed"], denied["because"]["by"], denied["because"]["note"]) == (False, "carol", "CVE")
    before = app.audit.package_at(workspace, "python", "pandas", now - timedelta(days=1))
    assert before["because"] is None and before["policy_version"] == 0 and added[0]["version"] == 1


def test_a_timeline_shows_each_interval_and_the_decisions_in_the_period(app, workspace):
    from datetime import datetime

    start = datetime.now(UTC)
    app.evaluation.evaluate(workspace, "python", ["numpy"])
    deny_numpy = {"action": "add", "language": "python", "list": "deny", "entries": ["numpy"]}
    app.change_policy(workspace, [deny_numpy], by="a")
    app.evaluation.evaluate(workspace, "python", ["numpy"])
    app.evaluation.evaluate(workspace, "python", ["numpy"])
    app.change_policy(workspace, [{**deny_numpy, "action": "remove"}], by="a")
    end = datetime.now(UTC) + timedelta(seconds=1)
    line = app.audit.package_timeline(workspace, "python", "NumPy", start, end)
    assert [(i["allowed"], i["reason"]) for i in line["intervals"]] == [
        (True, "not-on-the-deny-list"),
        (False, "matches-the-deny-list"),
        (True, "not-on-the-deny-list"),
    ]
    assert line["intervals"][0]["from"] == iso(start) and line["intervals"][-1]["to"] == iso(end)
    assert line["decisions"] == {"allowed": 1, "denied": 2}


@pytest.mark.parametrize("steps", [400])
def test_point_in_time_reads_do_not_replay_the_whole_history(app, workspace, steps):
    """With snapshots, loading the policy at any version replays at most one interval of events:
    the snapshot before it and the events after that, all that is read (in one statement, with
    the snapshot's seal)."""
    random_history(app, workspace, steps=steps, seed=3)
    stored = list(app.events.get(policy_id(workspace)))
    middle = stored[len(stored) // 2].timestamp
    loaded = []
    original = app.chain.store.policy_at

    def counting_read(*args, **kwargs):
        rows = original(*args, **kwargs)
        loaded.append(sorted(r["part"] for r in rows))
        return rows

    app.chain.store.policy_at = counting_read
    try:
        view = app.policy(workspace, at=middle)
    finally:
        app.chain.store.policy_at = original
    assert len(loaded) == 1 and loaded[0][-2:] == ["seal", "snapshot"]
    assert 0 < len(loaded[0]) - 1 <= SNAPSHOT_INTERVAL
    assert view["version"] == replay_until(app, workspace, middle).policy_version


def test_one_save_is_one_instant_so_no_read_sees_it_half_applied(app, workspace):
    app.save_policy(workspace, {"python": {"mode": "allowlist", "allow": "pandas, numpy, scipy"}}, by="alice")
    changes = app.audit.history(workspace)["changes"]
    assert len(changes) == 4 and len({c["at"] for c in changes}) == 1
    from datetime import datetime

    saved_at = datetime.fromisoformat(changes[0]["at"].replace("Z", "+00:00"))
    just_before = app.policy(workspace, at=saved_at - timedelta(microseconds=1))
    at_the_save = app.policy(workspace, at=saved_at)
    assert (just_before["version"], just_before["python"]["mode"]) == (0, "denylist")
    assert (at_the_save["version"], at_the_save["python"]["allow"]) == (4, ["numpy", "pandas", "scipy"])
    line = app.audit.package_timeline(
        workspace, "python", "torch", saved_at - timedelta(seconds=1), saved_at + timedelta(seconds=1)
    )
    assert [(i["allowed"], i["reason"], i["policy_version"]) for i in line["intervals"]] == [
        (True, "not-on-the-deny-list", 0),
        (False, "not-on-the-allow-list", 4),
    ]


def test_a_writer_with_a_slow_clock_cannot_put_a_change_before_the_one_it_follows(app, workspace, monkeypatch):
    from domain.policy import Policy

    add = {"action": "add", "language": "python", "list": "deny", "entries": ["numpy"]}
    app.change_policy(workspace, [add], by="fast-clock")
    real = Policy.Event.create_timestamp
    monkeypatch.setattr(Policy.Event, "create_timestamp", staticmethod(lambda: real() - timedelta(seconds=5)))
    app.change_policy(workspace, [{**add, "action": "remove"}], by="slow-clock")
    first, second = app.audit.history(workspace)["changes"]
    assert second["at"] > first["at"]
    between = datetime.fromisoformat(first["at"].replace("Z", "+00:00"))
    naive = replay_until(app, workspace, between)
    assert app.policy(workspace, at=between)["version"] == naive.policy_version == 1


def test_a_timeline_agrees_with_a_full_replay_when_patterns_come_and_go(app, workspace):
    start = datetime.now(UTC)
    random_history(app, workspace, steps=60, seed=5)
    end = datetime.now(UTC) + timedelta(seconds=1)
    for language, name in (("python", "django-rest-framework"), ("node", "@s/p")):
        line = app.audit.package_timeline(workspace, language, name, start, end)
        for interval in line["intervals"]:
            at = datetime.fromisoformat(interval["from"].replace("Z", "+00:00"))
            rules = rules_from_state(replay_until(app, workspace, at).state)
            expected = judge(rules[language], parse(language, name), workspace)
            assert (interval["allowed"], interval["reason"]) == (expected.allowed, expected.reason), (name, at)


def test_because_names_the_pattern_entry_that_decided_the_answer(app, workspace):
    app.save_policy(workspace, {"python": {"mode": "allowlist", "allow": ["flask"]}}, by="alice", note="lock")
    app.change_policy(
        workspace,
        [{"action": "add", "language": "python", "list": "allow", "entries": ["Django_*"]}],
        by="bob",
        note="the django family",
    )
    now = datetime.now(UTC)
    allowed = app.audit.package_at(workspace, "python", "django-rest-framework", now)
    assert (allowed["allowed"], allowed["reason"]) == (True, "matches-the-allow-list")
    assert (allowed["because"]["name"], allowed["because"]["note"]) == ("django-*", "the django family")
    itself = app.audit.package_at(workspace, "python", "django", now)  # the prefix alone is not matched
    assert (itself["allowed"], itself["reason"]) == (False, "not-on-the-allow-list")
    app.change_policy(
        workspace, [{"action": "add", "language": "node", "list": "deny", "entries": ["@Evil/*"]}], by="carol", note="x"
    )
    denied = app.audit.package_at(workspace, "node", "@evil/steal", datetime.now(UTC))
    assert (denied["reason"], denied["because"]["name"], denied["because"]["by"]) == (
        "matches-the-deny-list",
        "@Evil/*",
        "carol",
    )


def test_a_decision_stamped_after_a_saves_change_but_recorded_before_it_makes_the_save_plan_again(
    app, workspace, monkeypatch
):
    """A Save stamps its events before its transaction takes the lock; a decision judged by the
    version before it, stamped later, recorded first, was then at an instant "the policy at T"
    gave to the Save: the record contradicted what was answered (the reviewer's race, made here
    in order)."""
    deny = [{"action": "add", "language": "python", "list": "deny", "entries": ["numpy"]}]
    real_save, answered = app.save, []

    def racing_save(*aggregates, **options):
        if not answered:  # the Save's events are stamped: a decision overtakes them
            answered.append(app.evaluation.evaluate(workspace, "python", ["numpy"])["decisions"][0])
        return real_save(*aggregates, **options)

    monkeypatch.setattr(app, "save", racing_save)
    app.change_policy(workspace, deny, by="alice")
    [decision] = answered
    assert (decision["allowed"], decision["policy_version"]) == (True, 0)
    [change] = app.audit.history(workspace)["changes"]
    assert change["at"] > decision["at"]  # planned again, freshly stamped
    at = datetime.fromisoformat(decision["at"].replace("Z", "+00:00"))
    then = app.audit.package_at(workspace, "python", "numpy", at)
    assert (then["allowed"], then["policy_version"]) == (True, 0)
    assert replay_until(app, workspace, at).policy_version == 0


def test_a_name_of_four_thousand_characters_and_two_thousand_dashes_is_answered_in_as_many_statements(app, workspace):
    """Each dash of a Python name makes a pattern that could match it (`a-*`, `a-b-*`, ...): their
    keys are one parameter of one statement, never an arm each (2,000 arms broke SQLite's limit on
    a compound SELECT, and took PostgreSQL a minute to plan)."""
    name, deep = "a" + "-b" * 2000, "a" + "-b" * 1500 + "-*"
    app.save_policy(workspace, {"python": {"mode": "allowlist", "allow": ["a-*"]}}, by="alice", note="the a family")
    middle = datetime.now(UTC)
    app.change_policy(
        workspace, [{"action": "add", "language": "python", "list": "deny", "entries": [deep]}], by="bob", note="deep"
    )
    statements, fetch = [], app.recorder.fetch

    def counting(*args, **kwargs):
        statements.append(args[0])
        return fetch(*args, **kwargs)

    app.recorder.fetch = counting
    try:
        before = app.audit.package_at(workspace, "python", name, middle)
        short = len(statements)
        now = app.audit.package_at(workspace, "python", name, datetime.now(UTC))
        assert len(statements) == 2 * short
        app.audit.package_at(workspace, "python", "a-b", datetime.now(UTC))
        assert statements[-short:] == statements[:short]  # the same statements as for a short name
        line = app.audit.package_timeline(workspace, "python", name, middle - timedelta(hours=1), datetime.now(UTC))
    finally:
        app.recorder.fetch = fetch
    assert (before["allowed"], before["because"]["name"]) == (True, "a-*")
    assert (now["allowed"], now["reason"], now["because"]["name"]) == (False, "matches-the-deny-list", deep)
    assert [(i["allowed"], i["reason"]) for i in line["intervals"]][-2:] == [
        (True, "matches-the-allow-list"),
        (False, "matches-the-deny-list"),
    ]
    for answer, at in ((before, middle), (now, datetime.now(UTC))):
        expected = judge(
            rules_from_state(replay_until(app, workspace, at).state)["python"], parse("python", name), workspace
        )
        assert (answer["allowed"], answer["reason"]) == (expected.allowed, expected.reason)
