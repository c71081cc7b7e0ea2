"""Every auditor read is shaped for one index: all its leading columns bound, ordered by the rest,
so its cost follows the answer and not the history whatever the planner's statistics say.

On PostgreSQL each statement the application really sends is EXPLAINed with scans other than
index scans made unattractive (these tables are tiny; the question is whether the index *can*
serve the whole condition, not what a planner picks for ten rows)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from application.governance import Governance
from application.store import store_env

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_app(postgres_schema_url):
    app = Governance(env=store_env(postgres_schema_url))
    yield app
    app.close()


class Statements:
    """The real recorder, with the SELECTs it runs noted down (it still runs every one)."""

    def __init__(self, recorder):
        self.recorder, self.seen = recorder, []
        self._fetch = recorder.fetch
        recorder.fetch = self.fetch

    def fetch(self, statement, params=(), prepare=False):
        self.seen.append((statement, tuple(params)))
        return self._fetch(statement, params, prepare)

    def plans(self) -> list[str]:
        found = []
        with self.recorder.datastore.get_connection() as conn, conn.cursor() as curs:
            curs.execute("SET enable_seqscan = off")
            curs.execute("SET enable_bitmapscan = off")
            for statement, params in self.seen:
                curs.execute("EXPLAIN (FORMAT JSON) " + statement, params)
                found.append(json.dumps(curs.fetchone()["QUERY PLAN"]))
            curs.execute("RESET ALL")
        return found


def history_with_decisions(app) -> None:
    app.create_workspace("acme", by="founder")
    for i in range(3):
        app.change_policy(
            "acme", [{"action": "add", "language": "python", "list": "allow", "entries": [f"p{i}"]}], by="a"
        )
    for _ in range(3):
        app.evaluate("acme", "python", ["p1", "torch"])


def test_one_packages_decisions_page_on_their_index_with_the_keyset_as_an_index_condition(pg_app):
    history_with_decisions(pg_app)
    spy = Statements(pg_app.recorder)
    now = datetime.now(UTC)
    first = pg_app.decisions("acme", {"language": "python", "name": "p1"}, now - timedelta(days=30), now, limit=1)
    pg_app.decisions("acme", {"language": "python", "name": "p1"}, None, None, limit=1, cursor=first["next_cursor"])
    plan = spy.plans()[-1]
    assert "rcp_decisions_by_package" in plan and "ROW(at, id) <" in plan and "Seq Scan" not in plan


def test_history_from_an_instant_pages_on_version_after_one_seek_of_the_time_index(pg_app):
    history_with_decisions(pg_app)
    spy = Statements(pg_app.recorder)
    pg_app.history("acme", datetime.now(UTC) - timedelta(hours=1), None, limit=2)
    plans = spy.plans()
    assert any("rcp_changes_by_instant" in p for p in plans)
    page = plans[-1]
    assert "rcp_changes_pkey" in page and "version >" in page and "Sort" not in page


def test_was_it_allowed_at_t_is_index_seeks_only(pg_app):
    # (the spellings of a name are sorted for DISTINCT: that sort holds one name's changes only)
    history_with_decisions(pg_app)
    spy = Statements(pg_app.recorder)
    pg_app.package_at("acme", "python", "p1", datetime.now(UTC))
    plans = spy.plans()
    assert plans and not any("Seq Scan" in p for p in plans)
    assert any("rcp_changes_by_name" in p for p in plans) and any("rcp_changes_by_instant" in p for p in plans)


def test_the_overviews_most_denied_lists_read_only_the_denied_counts(pg_app):
    pg_app.create_workspace("acme", by="founder")
    pg_app.save_policy("acme", {"python": {"mode": "allowlist", "allow": ["p1"]}}, by="a")
    pg_app.evaluate("acme", "python", ["p1", "torch"], context={"sandbox": "s1"})
    spy = Statements(pg_app.recorder)
    today = datetime.now(UTC).date()
    answer = pg_app.overview("acme", today - timedelta(days=29), today, today - timedelta(days=6))
    assert answer["top_denied"][0]["name"] == "torch"
    denied = [p for p, (statement, _) in zip(spy.plans(), spy.seen, strict=True) if "allowed = FALSE" in statement]
    assert len(denied) == 3 and all("rcp_denied_counts" in p for p in denied)
