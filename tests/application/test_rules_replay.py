"""Rules beyond names over a random history: what a version was told live, at an instant, under
the policy then current, equals what the point-in-time path rebuilds for that instant (the policy
at T, its version rules, judge_version), on SQLite and PostgreSQL."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.decision import judge
from domain.policy import bind_rules
from domain.rules import VersionFacts, judge_version
from domain.specs import parse
from tests.application.test_pointintime import NAMES, PATTERNS

ACTIONS = st.sampled_from(["enforce", "monitor"])
AGES = st.sampled_from(["PT1H", "P1D", "P3D", "P10D"])


def _entries(language: str):
    names = st.sampled_from(NAMES[language])
    ranges = st.sampled_from(["==1.0", "<2", ">=2"] if language == "python" else ["@1.0.0", "@<2", "@>=2"])
    joined = st.tuples(names, ranges).map(lambda p: f"{p[0]}{p[1]}")
    return st.lists(joined, min_size=1, max_size=2, unique=True)


def _rules(language: str):
    """One language's complete rules, as a Save sends them (a rule left out is off)."""
    exempt = st.lists(st.sampled_from(NAMES[language] + PATTERNS[language]), max_size=2, unique=True)
    parts = {
        "min_release_age": st.fixed_dictionaries({"age": AGES, "exempt": exempt, "action": ACTIONS}),
        "versions_deny": st.fixed_dictionaries({"entries": _entries(language), "action": ACTIONS}),
    }
    last = "sdists" if language == "python" else "install_scripts"
    allowed = st.lists(st.sampled_from(NAMES[language]), max_size=2, unique=True)
    parts[last] = st.fixed_dictionaries({"allow": allowed, "action": ACTIONS})
    chosen = st.lists(st.sampled_from(sorted(parts)), unique=True)
    return chosen.flatmap(lambda keys: st.fixed_dictionaries({k: parts[k] for k in keys}))


LANGUAGE = st.sampled_from(["python", "node"])
RULE_SAVE = LANGUAGE.flatmap(lambda lang: st.tuples(st.just("rules"), st.just(lang), _rules(lang)))
LIST_CHANGE = LANGUAGE.flatmap(
    lambda lang: st.tuples(
        st.just("list"),
        st.just(lang),
        st.fixed_dictionaries(
            {
                "action": st.sampled_from(["add", "remove"]),
                "language": st.just(lang),
                "list": st.sampled_from(["allow", "deny"]),
                "entries": st.lists(st.sampled_from(NAMES[lang] + PATTERNS[lang]), min_size=1, max_size=1),
            }
        ),
    )
)
STEPS = st.lists(st.one_of(RULE_SAVE, LIST_CHANGE, st.just(("observe", None, None))), min_size=1, max_size=12)
UPLOADED = (None, timedelta(minutes=30), timedelta(hours=20), timedelta(days=2), timedelta(days=30))
_workspaces = itertools.count()


def facts_at(at: datetime) -> list[VersionFacts]:
    """Versions straddling every range and age above, each fact known and unknown."""
    return [
        VersionFacts(version, None if ago is None else at - ago, scripts, sdist)
        for version in ("1.0", "1.0.0", "2.5.0")
        for ago in UPLOADED
        for scripts, sdist in ((None, True), (True, False), (False, False))
    ]


def answers(rules: dict, workspace: str, at: datetime) -> dict:
    """Every name's verdict and every version's findings under `rules` bound at `at`."""
    found = {}
    for language, names in NAMES.items():
        for name in names:
            verdict = judge(rules[language], parse(language, name), workspace)
            found[(language, name)] = (verdict.allowed, verdict.reason)
            for facts in facts_at(at):
                found[(language, name, facts)] = judge_version(rules[language].version_rules, language, name, facts, at)
    return found


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS)
def test_rules_replayed_at_an_instant_answer_as_they_did_live(app, steps):
    workspace = f"w{next(_workspaces)}"
    app.create_workspace(workspace, by="founder")
    live: list[tuple[datetime, dict]] = []
    for kind, language, change in steps + [("observe", None, None)]:
        if kind == "rules":
            app.save_policy(workspace, {language: {"rules": change}}, by="alice", note="rules")
        elif kind == "list":
            app.change_policy(workspace, [change], by="bob", note="list")
        else:  # the live path: the then-current policy, judged at this instant
            at = datetime.now(UTC)
            _, rules = app.policies.current(workspace, at)
            live.append((at, answers(rules, workspace, at)))
    for at, told in live:
        rebuilt = bind_rules(app.policies.at(workspace, at).rules(), at)
        assert answers(rebuilt, workspace, at) == told, at
