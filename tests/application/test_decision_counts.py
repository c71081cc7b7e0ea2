"""The decision-count read model: written with the decisions, summed per key, on both stores."""

from __future__ import annotations

import random
from collections import Counter
from datetime import date, timedelta

import pytest

from domain.errors import InvalidInputError

NAMES = ["pandas", "NumPy", "scipy", "requests==2.0", "-r req.txt", "https://x.example/p.tgz"]


def days_of(decisions: list[dict]) -> tuple[str, str]:
    """The first and last UTC day the store stamped these decisions with: the days to ask about,
    never a "today" read afterwards, which midnight may have moved on."""
    days = sorted(d["at"][:10] for d in decisions)
    return days[0], days[-1]


def test_counts_match_the_recorded_decisions_key_by_key(app, workspace):
    app.change_policy(
        workspace, [{"action": "add", "language": "python", "list": "deny", "entries": ["scipy"]}], by="a"
    )
    rng = random.Random(5)
    for _ in range(40):  # concurrent-looking batches: one evaluate records several decisions at once
        specs = rng.sample(NAMES, rng.randint(1, 4))
        app.evaluation.evaluate(workspace, "python", specs, context={"sandbox": rng.choice(["sbx-1", "sbx-2", None])})
    app.egress.evaluate_egress(workspace, "https://pypi.org/simple/", ["151.101.0.223"], {"sandbox": "sbx-1"})
    recorded = app.audit.decisions(workspace, limit=1000)["decisions"]
    expected = Counter(
        (d["at"][:10], d["language"] or "egress", d["name"] or "", d["allowed"], d["context"].get("sandbox") or "")
        for d in recorded
    )
    first, last = days_of(recorded)
    rows = app.impacts.decision_counts(workspace, first, last)
    assert {(r["day"], r["language"], r["name"], r["allowed"], r["sandbox"]): r["installs"] for r in rows} == expected
    assert sum(r["installs"] for r in rows) == len(recorded)
    denied = app.impacts.decision_counts(workspace, first, last, language="python", allowed=False)
    assert {r["name"] for r in denied} == {"scipy", ""} and all(not r["allowed"] for r in denied)
    assert [r["name"] for r in app.impacts.decision_counts(workspace, first, last, language="egress")] == ["pypi.org"]


def test_counts_outside_the_period_and_bad_days(app, workspace):
    day, _ = days_of(app.evaluation.evaluate(workspace, "python", ["pandas"])["decisions"])
    yesterday = (date.fromisoformat(day) - timedelta(days=1)).isoformat()
    assert app.impacts.decision_counts(workspace, yesterday, yesterday) == []
    with pytest.raises(InvalidInputError) as refused:
        app.impacts.decision_counts(workspace, "2026-13-01", day)
    assert refused.value.errors[0].field == "start_day"


def test_a_batch_upserts_each_rollup_table_in_one_statement(app, workspace):
    from application.evaluation import decision_records
    from application.store.projection import ManyRows, read_model_statements
    from application.store.schema import SQLITE
    from domain.decision import Decision
    from domain.specs import parse

    version, rules = app.policies.current(workspace)
    specs = [parse("python", name) for name in ("pandas", "numpy", "scipy", "pandas")]
    records = decision_records(specs, rules, workspace, version, {"sandbox": "sbx-1"})
    events = [e for r in records for e in Decision(workspace=workspace, record=r).collect_events()]
    upserts = {
        s.head.split()[2]: len(s.rows)
        for s in read_model_statements(SQLITE, events, {})
        if isinstance(s, ManyRows) and "ON CONFLICT" in s.tail
    }
    # One statement per table, one row per distinct key (pandas twice is one row, counted twice).
    assert upserts == {
        "rcp_decision_counts": 3,
        "rcp_impact_names": 3,
        "rcp_impact_sandboxes": 3,
        "rcp_impact_days": 1,
        "rcp_outcome_days": 1,
    }
