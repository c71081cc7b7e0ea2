"""The hot prepared reads straight through libpq (application.store.prepared) give the rows
psycopg's cursor gives, on a real PostgreSQL: the caller's read (with and without a reader's
denials) and the sealer's notifications; a statement deallocated behind their back is prepared
again; what they do not take goes through the cursor; a failure is psycopg's own error."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from application.governance import Governance
from application.index.gate import NOT_PROJECT_DENIALS
from application.store import store_env
from application.store.outage import did_not_answer
from application.store.prepared import prepared_rows
from application.store.reads import Denials
from domain.run import reader_key
from tests.support.postgres_pool import split_schema

pytestmark = pytest.mark.postgres


@pytest.fixture
def app(primed_schema_url):
    """An app on PostgreSQL alone (the reads compared are PostgreSQL's), with workspace `acme`."""
    opened = Governance(env=store_env(primed_schema_url, create_table=False))
    opened.create_workspace("acme", by="founder")
    yield opened
    opened.close()


def hot_reads(app) -> list[tuple[str, tuple]]:
    """Every prepared read the app made while authenticating a token both ways and sealing."""
    seen, fetch = [], app.recorder.fetch

    def spy(statement, params=(), prepare=False, generic=False):
        if prepare:
            seen.append((statement, tuple(params)))
        return fetch(statement, params, prepare, generic)

    app.recorder.fetch = spy
    try:
        token = app.issue_token("acme", "reader", "sandbox", by="founder")["token"]
        assert app.authenticate(token)["role"] == "sandbox"
        since = datetime.now(UTC) - timedelta(minutes=5)  # as the index reads a token's denials
        reader = reader_key(None, app.authenticate(token)["id"])
        denials = Denials(reader, since, NOT_PROJECT_DENIALS)
        assert app.authenticate(token, denials=lambda _: denials)["denied"] is False
        app.chain.store.notifications(0, 10)
    finally:
        app.recorder.fetch = fetch
    return seen


def cursors(conn, statement: str, params) -> list[dict]:
    with conn.cursor(row_factory=psycopg.rows.dict_row) as curs:
        return curs.execute(statement, params).fetchall()


def test_the_hot_reads_give_the_cursor_s_rows(app):
    reads = hot_reads(app)
    assert len({s for s, _ in reads}) >= 3  # the caller's two shapes and the notifications
    with app.recorder.datastore.get_connection() as conn:
        for statement, params in reads:
            ours = prepared_rows(conn, statement, params)
            assert ours and ours == cursors(conn, statement, params)
            assert prepared_rows(conn, statement, params) == ours  # prepared before: the same


def ours(conn) -> list[str]:
    """The statements this path prepared on the connection, by name."""
    found = conn.execute("SELECT name FROM pg_prepared_statements WHERE name LIKE 'rcp_%' ORDER BY 1")
    return [r["name"] for r in found]


def test_a_statement_deallocated_behind_its_back_is_prepared_again(app):
    reads = list(dict(hot_reads(app)).items())[:2]  # two statements
    with app.recorder.datastore.get_connection() as conn:
        first = [prepared_rows(conn, statement, params) for statement, params in reads]
        conn.execute("DEALLOCATE ALL")
        assert [prepared_rows(conn, statement, params) for statement, params in reads] == first
        kept, gone = ours(conn)  # one deallocated alone: the other is not prepared again beside it
        conn.execute(f"DEALLOCATE {gone}")
        assert [prepared_rows(conn, statement, params) for statement, params in reads] == first
        assert ours(conn)[0] == kept and len(ours(conn)) == 2


def test_what_it_does_not_take_goes_to_the_cursor(primed_schema_url):
    with psycopg.connect(split_schema(primed_schema_url)[0], autocommit=True) as conn:
        assert prepared_rows(conn, "SELECT 100 %% 7 AS n", ()) is None  # a `%` beyond `%s`
        assert prepared_rows(conn, "SELECT %(a)s AS n", {"a": 1}) is None
        with conn.pipeline():
            assert prepared_rows(conn, "SELECT %s::int AS n", (1,)) is None
        assert prepared_rows(conn, "SELECT %s::int AS n, %s::text AS t", (1, "x")) == [{"n": 1, "t": "x"}]


def test_a_failure_is_psycopg_s_error_and_a_lost_server_reads_as_an_outage(primed_schema_url):
    url = split_schema(primed_schema_url)[0]
    with psycopg.connect(url, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.DivisionByZero):
            prepared_rows(conn, "SELECT 1 / %s::int AS n", (0,))
        assert prepared_rows(conn, "SELECT 1 / %s::int AS n", (1,)) == [{"n": 1}]  # still usable
        with psycopg.connect(url, autocommit=True) as other:
            other.execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
        with pytest.raises(psycopg.OperationalError) as lost:
            prepared_rows(conn, "SELECT 1 / %s::int AS n", (1,))
        assert did_not_answer(lost.value) and conn.broken
