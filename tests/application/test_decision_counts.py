"""The decision-count read model: written by the sealer with the links of the decisions it counts,
summed per key, on both stores."""

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
    from application.store.counts import count_statements
    from application.store.projection import ManyRows, read_model_statements
    from application.store.schema import SQLITE
    from domain.decision import Decision
    from domain.specs import parse

    version, rules = app.policies.current(workspace)
    specs = [parse("python", name) for name in ("pandas", "numpy", "scipy", "pandas")]
    records = decision_records(specs, rules, workspace, version, {"sandbox": "sbx-1"})
    events = [e for r in records for e in Decision(workspace=workspace, record=r).collect_events()]
    upserts = {s.head.split()[2]: len(s.rows) for s in count_statements(SQLITE, events)}
    # The decisions' own transaction counts nothing: the sealer does.
    assert not [s for s in read_model_statements(SQLITE, events, {}) if isinstance(s, ManyRows) and s.tail]
    # One statement per table, one row per distinct key (pandas twice is one row, counted twice).
    assert upserts == {
        "rcp_decision_counts": 3,
        "rcp_impact_names": 3,
        "rcp_impact_sandboxes": 3,
        "rcp_impact_days": 1,
        "rcp_outcome_days": 1,
    }


def _counted(app, workspace) -> list[dict]:
    return app.chain.store.table_rows("decision_counts", "workspace = %s", workspace)


def test_the_sealer_counts_what_it_seals_and_a_count_read_seals_first(app, workspace):
    decisions = app.evaluation.evaluate(workspace, "python", ["pandas", "numpy"])["decisions"]
    assert _counted(app, workspace) == []  # committed, not sealed yet: not counted
    first, last = days_of(decisions)
    rows = app.impacts.decision_counts(workspace, first, last)  # seals, then reads
    assert sorted((r["name"], r["installs"]) for r in rows) == [("numpy", 1), ("pandas", 1)]
    assert app.chain.store.pending(app.chain.store.position()) == 0
    app.evaluation.evaluate(workspace, "python", ["pandas"])
    assert app.chain.seal() == 1  # a round seals the decision and counts it, once
    assert app.chain.seal() == 0
    assert {r["name"]: r["installs"] for r in _counted(app, workspace)} == {"numpy": 1, "pandas": 2}


def test_the_sandbox_days_are_the_same_however_the_sealer_batches_them(app, workspace):
    import dataclasses
    import sqlite3
    from datetime import UTC, datetime

    from application.evaluation import decision_records
    from application.store.counts import count_statements
    from application.store.schema import DDL, SQLITE
    from domain.decision import Decision
    from domain.specs import parse

    version, rules = app.policies.current(workspace)
    (record,) = decision_records([parse("python", "pandas")], rules, workspace, version, {"sandbox": "sbx-1"})
    (event,) = Decision(workspace=workspace, record=record).collect_events()
    days = [datetime(2026, 3, d, 12, tzinfo=UTC) for d in (1, 1, 3, 5)]
    events = [dataclasses.replace(event, timestamp=at) for at in days]

    def counted(*batches) -> list:
        db = sqlite3.connect(":memory:")
        for statement in DDL:
            db.execute(SQLITE.sql(statement))
        for batch in batches:
            for item in count_statements(SQLITE, batch):
                for text, params in item.statements():
                    db.execute(text, params)
        return db.execute("SELECT last_day, prev_day FROM rcp_impact_sandboxes").fetchall()

    one_by_one = counted(*[[e] for e in events])
    assert one_by_one == [("2026-03-05", "2026-03-03")]
    for batches in ([events], [events[:3], events[3:]], [events[:1], events[1:]], [events[3:], events[:3]]):
        assert counted(*batches) == one_by_one, batches
    assert counted(events[2:3], events[3:], events[:2]) == one_by_one  # a later day counted first


def test_an_answer_over_the_counts_seals_once_and_counts_what_was_answered_before_it(app, workspace):
    from datetime import UTC, datetime

    app.chain.seal()  # the workspace's creation
    app.evaluation.evaluate(workspace, "python", ["pandas"])
    counts = app.impacts.counts
    seal, sealed = counts.caught_up, []
    counts.caught_up = lambda: sealed.append(seal())
    answer = app.impacts.impact(workspace, {"python": {"mode": "allowlist", "allow": []}}, days=1)
    assert [(p["name"], p["installs"]) for p in answer["would_deny"]] == [("pandas", 1)]
    assert sealed == [1]  # one sealing for the whole answer, which sealed (and counted) the decision
    today = datetime.now(UTC).date()
    assert app.facts.overview(workspace, today, today, today)["totals"]["allowed"] == 1
    assert sealed == [1, 0]
    app.impacts.decision_counts(workspace, today.isoformat(), today.isoformat())  # one query, its own seal
    assert sealed == [1, 0, 0]


def test_the_sealer_counts_a_decision_from_its_plain_state_as_the_mapper_decodes_it(app, workspace):
    from application.chain.sealer import state_reader
    from application.store.counts import Counted, counted
    from domain.decision import Decision

    record = {"name": "six", "allowed": True, "request": "download", "context": {"sandbox": "s", "version": "1.0"}}
    event = Decision.recorded(workspace, record)
    stored = app.mapper.to_stored_event(event)
    state = state_reader(app.mapper)(stored.state)

    def mapper(s):
        decoded.append(s)
        return app.mapper.to_domain_event(s)

    decoded: list = []
    assert counted(stored, state, mapper) == Counted(workspace, record, event.timestamp)
    assert decoded == []  # read from the plain state, not decoded again
    # A state of an older class version is upcast by the mapper; one of an unknown shape too.
    for other in ({**state, "class_version": 1}, {**state, "timestamp": "2026-03-01"}, None):
        assert counted(stored, other, mapper) == Counted(workspace, record, event.timestamp)
    assert decoded == [stored] * 3
