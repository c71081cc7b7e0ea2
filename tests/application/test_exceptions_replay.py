"""Exceptions and their expiry: every point-in-time answer is a pure function of the events and
the instant, and agrees with a naive full replay (SQLite and PostgreSQL)."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from application.access_views import exception_views
from domain.decision import judge
from domain.errors import ConflictError
from domain.policy import bind_rules, rules_from_state
from domain.specs import parse
from tests.application.test_pointintime import NAMES, random_change, replay_until


def random_history(app, workspace: str, steps: int, seed: int) -> list[datetime]:
    """List changes, exceptions (some expiring within the history, some permanent) and
    revocations; returns every expiry, so the probes can straddle them."""
    rng = random.Random(seed)
    ends = []
    for _ in range(steps):
        roll = rng.random()
        if roll < 0.55:
            app.change_policy(workspace, [random_change(rng) for _ in range(rng.choice([1, 2]))], by="alice")
            continue
        standing = app.access.exceptions(workspace)["exceptions"]
        if roll < 0.7 and standing:
            try:
                app.access.revoke_exception(workspace, rng.choice(standing)["id"], by="bob")
            except ConflictError:  # it ended since it was listed: nothing to revoke, nothing recorded
                pass
            continue
        language = rng.choice(["python", "node"])
        lasts = None if rng.random() < 0.2 else f"PT0.{rng.randint(5, 400):03d}S"  # some end within the history
        try:
            granted = app.access.grant_exception(
                workspace,
                language,
                rng.choice(NAMES[language]),
                by="carol",
                duration=lasts,
                lift_deny=rng.random() < 0.5,
            )
        except ConflictError:  # a deny-listed name without lift_deny
            continue
        if granted["expires_at"]:
            ends.append(datetime.fromisoformat(granted["expires_at"]))
    return ends


def probes(app, workspace, ends, rng) -> list[datetime]:
    from domain.policy import policy_id

    stamps = [e.timestamp for e in app.events.get(policy_id(workspace))]
    around = [t + timedelta(microseconds=d) for t in rng.sample(stamps, 25) + ends for d in (-1, 0, 1)]
    return around + [stamps[-1] + timedelta(seconds=5)]


def test_answers_with_exceptions_and_expiries_match_a_full_replay(app, workspace):
    ends = random_history(app, workspace, steps=90, seed=13)
    assert ends, "the history must hold expiring exceptions"
    rng = random.Random(17)
    for at in probes(app, workspace, ends, rng):
        naive = replay_until(app, workspace, at)
        rules = bind_rules(rules_from_state(naive.state, naive.exceptions), at)
        view = app.policy(workspace, at=at)
        assert view["version"] == naive.policy_version
        assert view["exceptions"] == exception_views(naive, at), at
        for language, names in NAMES.items():
            tested = app.evaluation.test(workspace, language, names, at=at)["decisions"]
            for name, decision in zip(names, tested, strict=True):
                expected = judge(rules[language], parse(language, name), workspace)
                answer = app.audit.package_at(workspace, language, name, at)
                assert (answer["allowed"], answer["reason"]) == (expected.allowed, expected.reason), (at, name)
                assert (decision["allowed"], decision["reason"]) == (expected.allowed, expected.reason)
                if expected.reason == "matches-an-exception":
                    assert answer["because"]["type"] == "exception-granted"
