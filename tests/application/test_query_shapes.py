"""Every auditor read is shaped for one index: all its leading columns bound, ordered by the rest,
so its cost follows the answer and not the history whatever the planner's statistics say.

On PostgreSQL each statement the application really sends is EXPLAINed with scans other than
index scans made unattractive (these tables are tiny; the question is whether the index *can*
serve the whole condition, not what a planner picks for ten rows); a statement planned once for
every value (`generic`) is EXPLAINed as that one plan, with its parameters unknown."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from application.governance import Governance
from application.store import store_env
from domain.rules import VersionFacts

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_app(postgres_schema_url):
    app = Governance(env=store_env(postgres_schema_url))
    yield app
    app.close()


class Statements:
    """The real recorder, with the SELECTs it runs noted down (it still runs every one)."""

    def __init__(self, recorder):
        self.recorder, self.seen, self.generic = recorder, [], set()
        self._fetch = recorder.fetch
        recorder.fetch = self.fetch

    def fetch(self, statement, params=(), prepare=False, generic=False):
        if generic:
            self.generic.add(len(self.seen))
        self.seen.append((statement, tuple(params)))
        return self._fetch(statement, params, prepare, generic)

    def plans(self) -> list[str]:
        found = []
        with self.recorder.datastore.get_connection() as conn, conn.cursor() as curs:
            curs.execute("SET enable_seqscan = off")
            curs.execute("SET enable_bitmapscan = off")
            curs.execute("SET plan_cache_mode = force_generic_plan")
            for n, (statement, params) in enumerate(self.seen):
                if n in self.generic:  # the plan it runs with: one for every value, made without them
                    first, *rest = statement.split("%s")
                    curs.execute("PREPARE shape AS " + first + "".join(f"${i}{part}" for i, part in enumerate(rest, 1)))
                    values = ", ".join(["%s"] * len(params))
                    curs.execute(
                        "EXPLAIN (FORMAT JSON) "
                        + psycopg.ClientCursor(conn).mogrify(f"EXECUTE shape({values})", params)
                    )
                    found.append(json.dumps(curs.fetchone()["QUERY PLAN"]))
                    curs.execute("DEALLOCATE shape")
                else:
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
        app.evaluation.evaluate("acme", "python", ["p1", "torch"])


def test_one_packages_decisions_page_on_their_index_with_the_keyset_as_an_index_condition(pg_app):
    history_with_decisions(pg_app)
    spy = Statements(pg_app.recorder)
    now = datetime.now(UTC)
    first = pg_app.audit.decisions("acme", {"language": "python", "name": "p1"}, now - timedelta(days=30), now, limit=1)
    pg_app.audit.decisions(
        "acme", {"language": "python", "name": "p1"}, None, None, limit=1, cursor=first["next_cursor"]
    )
    page, events = spy.plans()[-2:]  # the page, then its decisions' events (each row's instant is held to its event's)
    assert "rcp_decisions_by_package" in page and "ROW(at, id) <" in page and "Seq Scan" not in page
    assert "governance_events_pkey" in events and "Seq Scan" not in events


def test_a_name_of_any_kind_pages_on_one_range_of_the_package_index_for_each_kinds_spelling(pg_app):
    """`name=` without a language: each language's spelling among its decisions and the host's
    among the egress decisions (language NULL), one backward range each, the keyset in every one;
    one `name IN (...)` over every kind had bound no language (every decision of the name sorted)."""
    history_with_decisions(pg_app)
    pg_app.egress.evaluate_egress("acme", "https://p1/", ["93.184.216.34"])
    spy = Statements(pg_app.recorder)
    first = pg_app.audit.decisions("acme", {"name": "P1"}, None, None, limit=1)
    pg_app.audit.decisions("acme", {"name": "P1"}, None, None, limit=1, cursor=first["next_cursor"])
    page = spy.plans()[-2]
    ranges = [n for n in scans(page) if n.get("Relation Name", "").endswith("rcp_decisions")]
    bound = sorted(" AND ".join(n["Index Cond"].split(" AND ")[1:3]) for n in ranges)  # after the workspace
    assert bound == [  # the text as given, and each kind's own spelling of it
        "(language = 'node'::text) AND (name = 'P1'::text)",
        "(language = 'python'::text) AND (name = 'P1'::text)",
        "(language = 'python'::text) AND (name = 'p1'::text)",
        "(language IS NULL) AND (name = 'P1'::text)",
        "(language IS NULL) AND (name = 'p1'::text)",
    ]
    for node in ranges:
        assert node["Index Name"].endswith("rcp_decisions_by_package"), node
        assert node["Scan Direction"] == "Backward" and "ROW(at, id) <" in node["Index Cond"], node


def test_history_from_an_instant_pages_on_version_after_one_seek_of_the_time_index(pg_app):
    history_with_decisions(pg_app)
    spy = Statements(pg_app.recorder)
    pg_app.audit.history("acme", datetime.now(UTC) - timedelta(hours=1), None, limit=2)
    plans = spy.plans()
    assert any("rcp_changes_by_instant" in p for p in plans)
    page = plans[-1]
    assert "rcp_changes_pkey" in page and "version >" in page and "Sort" not in page


# The leading columns each index of the changes must have bound (with `version` or `at` a range
# after them) for its scan to follow the answer: an index scan filtering the rest walks history.
LEADING = {  # each index's leading columns, as bound (either way where a read binds it two ways)
    "rcp_changes_by_instant": [("workspace =", "at <=")],
    "rcp_changes_by_name": [
        ("workspace =", "language =", "name_key =", "list =", "version <="),
        # one key's entries of both lists (name_key = k.key: one seek per key, `Dialect.each_key`)
        ("workspace =", "language =", "name_key = k.key", "version <="),
    ],
    "rcp_changes_mode_switches": [("workspace =", "language =", "version <=")],
    "rcp_changes_rule_changes": [("workspace =", "language =", "version <=")],
    "governance_snapshots_pkey": [("originator_id =", "originator_version <=")],
    "governance_events_pkey": [
        ("originator_id =", "originator_version >", "originator_version <="),
        ("originator_id =", "originator_version ="),
    ],
    "rcp_chain_originator_id_originator_version_key": [("originator_id =", "originator_version =")],
    "rcp_chain_position_pkey": [("singleton =",)],
}


def scans(plan: str) -> list[dict]:
    """Every scan of a table in a plan, with its subplans'."""
    found, todo = [], [json.loads(plan)[0]["Plan"]]
    while todo:
        node = todo.pop()
        todo.extend(node.get("Plans", ()))
        if "Relation Name" in node or "Index Name" in node:
            found.append(node)
    return found


def assert_seeks_only(plan: str, tables: tuple[str, ...]) -> set[str]:
    """Every scan of `tables` is an index scan with all its index's leading columns bound; the
    indexes used."""
    used = set()
    for node in scans(plan):
        table = node.get("Relation Name")
        if table is not None and table not in tables:
            continue
        assert node["Node Type"] in ("Index Scan", "Index Only Scan", "Bitmap Index Scan"), node
        condition = node["Index Cond"].replace("(", "").replace(")", "")
        name = node["Index Name"]
        assert any(all(bound in condition for bound in bounds) for bounds in LEADING[name]), (name, condition)
        used.add(name)
    return used


def test_was_it_allowed_at_t_is_one_statement_of_index_seeks(pg_app):
    history_with_decisions(pg_app)
    changes = [{"action": "add", "language": "node", "list": "deny", "entries": [n]} for n in ("Left-Pad", "left-pad")]
    pg_app.change_policy("acme", changes + [{"action": "switch-mode", "language": "node", "mode": "allowlist"}], by="a")
    pg_app.change_policy("acme", [{**changes[0], "action": "remove"}], by="a")
    spy = Statements(pg_app.recorder)
    answer = pg_app.audit.package_at("acme", "node", "left-pad", datetime.now(UTC))
    assert answer["reason"] == "matches-the-deny-list"
    assert len(spy.seen) == 1  # the version, the mode, the name's entries, each spelling's: one round trip
    (plan,) = spy.plans()
    assert "Seq Scan" not in plan and "Sort" not in plan
    used = assert_seeks_only(plan, ("rcp_changes",))
    assert used == {
        "rcp_changes_by_instant",
        "rcp_changes_by_name",
        "rcp_changes_mode_switches",
        "rcp_changes_rule_changes",
    }


def test_was_it_allowed_at_t_seeks_each_key_in_a_long_history_without_statistics(pg_app):
    """20,000 list changes and no ANALYZE (as a young store on a server without autovacuum): each
    list arm still binds its key, rather than walking the language's history by version."""
    history_with_decisions(pg_app)
    with pg_app.recorder.datastore.transaction(commit=True) as curs:
        curs.execute(
            f"INSERT INTO {pg_app.readmodel.dialect.sql('{changes}')} (workspace, version, at, by_actor, note, type, "
            "language, list, name, name_key, mode) SELECT 'acme', 100 + n, now(), 'a', '', 'entry-added', "
            "'python', CASE WHEN n % 2 = 0 THEN 'deny' ELSE 'allow' END, 'pkg-' || (n % 2000), "
            "'pkg-' || (n % 2000), NULL FROM generate_series(1, 20000) AS n"
        )
    spy = Statements(pg_app.recorder)
    pg_app.audit.package_at("acme", "python", "pkg-7", datetime.now(UTC))
    (plan,) = spy.plans()
    assert "Sort" not in plan
    used = assert_seeks_only(plan, ("rcp_changes",))
    assert "rcp_changes_by_name" in used


def test_the_policy_at_t_is_one_statement_of_index_seeks(pg_app):
    history_with_decisions(pg_app)
    spy = Statements(pg_app.recorder)
    assert pg_app.policy("acme", at=datetime.now(UTC))["version"] == 3
    assert len(spy.seen) == 1  # the version, the snapshot, its seal and the events after it
    (plan,) = spy.plans()
    assert "Seq Scan" not in plan
    tables = ("rcp_changes", "governance_events", "governance_snapshots", "rcp_chain", "rcp_chain_position")
    used = assert_seeks_only(plan, tables)
    assert {
        "rcp_changes_by_instant",
        "governance_snapshots_pkey",
        "governance_events_pkey",
        "rcp_chain_originator_id_originator_version_key",
    } <= used


def test_the_overviews_most_denied_lists_read_only_the_denied_counts(pg_app):
    pg_app.create_workspace("acme", by="founder")
    pg_app.save_policy("acme", {"python": {"mode": "allowlist", "allow": ["p1"]}}, by="a")
    pg_app.evaluation.evaluate("acme", "python", ["p1", "torch"], context={"sandbox": "s1"})
    spy = Statements(pg_app.recorder)
    today = datetime.now(UTC).date()
    answer = pg_app.facts.overview("acme", today - timedelta(days=29), today, today - timedelta(days=6))
    assert answer["top_denied"][0]["name"] == "torch"
    denied = [p for p, (statement, _) in zip(spy.plans(), spy.seen, strict=True) if "allowed = FALSE" in statement]
    assert len(denied) == 3 and all("rcp_denied_counts" in p for p in denied)


def test_whether_a_run_already_failed_is_one_seek_of_its_decisions_primary_key(pg_app):
    pg_app.create_workspace("acme", by="founder")
    pg_app.save_policy("acme", {"python": {"mode": "allowlist", "allow": ["p1"]}}, by="a")
    sandbox = pg_app.authenticate(pg_app.issue_token("acme", "sbx", "sandbox", by="a")["token"])
    for _ in range(3):  # other runs' decisions, failed and not, to walk past
        other = pg_app.index.authenticate(pg_app.index.runs.start("acme", sandbox)["token"])
        pg_app.index.gate.judge(other, "python", "p1", "page")
        pg_app.index.gate.judge(other, "python", "torch", "page")
    token = pg_app.index.runs.start("acme", sandbox)["token"]
    spy = Statements(pg_app.recorder)  # the run's denials are looked for with its token, in that read
    assert pg_app.index.gate.judge(pg_app.index.authenticate(token), "python", "p1", "page")["allowed"]
    (lookup,) = [p for p, (statement, _) in zip(spy.plans(), spy.seen, strict=True) if "run_decisions" in statement]
    assert "Seq Scan" not in lookup and "Sort" not in lookup
    (seek,) = [n for n in scans(lookup) if n.get("Relation Name", "").endswith("run_decisions")]
    assert seek["Index Name"].endswith("run_decisions_pkey")
    assert all(bound in seek["Index Cond"] for bound in ("run =", "allowed =", "at >="))


def test_synthesis_reads_the_decision_counts_and_never_the_decisions(pg_app):
    pg_app.create_workspace("acme", by="founder")
    for sandbox in ("s1", "s2"):
        pg_app.evaluation.evaluate("acme", "python", ["p1", "p1", "torch"], context={"sandbox": sandbox})
    spy = Statements(pg_app.recorder)
    answer = pg_app.synthesis.synthesise("acme", "python", coverage=0.6)
    assert answer["allow"] == ["p1"]
    assert not [
        s for s, _ in spy.seen if "rcp_decisions " in s or "rcp_decisions\n" in s or s.endswith("rcp_decisions")
    ]
    (plan,) = [p for p, (s, _) in zip(spy.plans(), spy.seen, strict=True) if "allowed = " in s and "GROUP BY name" in s]
    (seek,) = [n for n in scans(plan) if n.get("Relation Name", "").endswith("decision_counts")]
    assert seek["Node Type"] in ("Index Scan", "Index Only Scan") and seek["Index Name"].endswith(
        "decision_counts_pkey"
    )
    assert all(bound in seek["Index Cond"] for bound in ("workspace =", "day >=", "day <="))


def test_the_overviews_watch_lists_read_the_not_found_index_and_the_named_packages_fetch_rollup(pg_app):
    pg_app.create_workspace("acme", by="founder")
    sandbox = pg_app.authenticate(pg_app.issue_token("acme", "sbx", "sandbox", by="a")["token"])
    pg_app.evaluation.evaluate("acme", "python", ["p1", "torch"], context={"sandbox": "s1"})  # other decisions
    principal = pg_app.index.authenticate(pg_app.index.runs.start("acme", sandbox)["token"])
    pg_app.index.gate.not_found(principal, "python", "slop", "page")
    wheel, facts = "evil-1.0-py3-none-any.whl", VersionFacts("1.0", datetime.now(UTC) - timedelta(days=9))
    assert pg_app.index.gate.judge(principal, "python", "evil", "download", wheel, "1.0", lambda: facts)["allowed"]
    affected = [{"package": {"ecosystem": "PyPI", "name": "evil"}, "versions": ["1.0"]}]
    pg_app.advisories.import_records([{"id": "MAL-1", "affected": affected}], by="a")
    spy = Statements(pg_app.recorder)
    today = datetime.now(UTC).date()
    answer = pg_app.facts.overview("acme", today - timedelta(days=29), today, today - timedelta(days=6))
    assert [n["name"] for n in answer["unknown"]["shown"]] == ["slop"]
    assert [(e["advisory"], e["fetches"]) for e in answer["exposures"]["shown"]] == [("MAL-1", 1)]
    plans = dict(zip((s for s, _ in spy.seen), spy.plans(), strict=True))
    (unknown,) = [p for s, p in plans.items() if "reason =" in s and "GROUP BY" in s]
    (seek,) = [n for n in scans(unknown) if n.get("Relation Name", "").endswith("rcp_decisions")]
    assert seek["Index Name"] == "rcp_decisions_not_found" and "at >=" in seek["Index Cond"]
    (rollup,) = [p for s, p in plans.items() if "impact_versions" in s]
    (seek,) = [n for n in scans(rollup) if n.get("Relation Name", "").endswith("impact_versions")]
    assert seek["Index Name"] == "rcp_impact_versions_by_name"
    assert all(bound in seek["Index Cond"] for bound in ("workspace =", "language =", "name =", "day >="))
