"""PostgreSQL application recorder that also writes the read-model tables in the same transaction."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from datetime import datetime
from typing import Any

import psycopg
from eventsourcing.persistence import InterfaceError, OperationalError
from eventsourcing.postgres import PostgresApplicationRecorder
from psycopg.pq import TransactionStatus
from psycopg.sql import SQL

from application.store import chain, merkle
from application.store.guards import guard_function_statement, guards_check_statement
from application.store.literals import Bind, binder
from application.store.outage import did_not_answer, pool_had_none, retried
from application.store.pinned import Pins
from application.store.prepared import prepared_rows
from application.store.projection import ManyRows, read_model_statements
from application.store.schema import DDL, postgres_dialect

EVENT_COLUMNS = "originator_id, originator_version, topic, state"
LOCK_STATEMENTS = 2  # lock_statements: the lock timeout, the table lock
RECONNECT_SECONDS = 10.0


def idle_checked_after_loss(get_connection, pool):
    """The datastore's connections, with the pool's idle ones checked once one was found lost:
    a server restart kills every pooled connection at once, and each would otherwise fail the
    request that next takes it (an idle worker answered 503 for a minute after PostgreSQL was
    back). Checking on loss costs nothing while connections work, where a check on every
    checkout (the library's `pre_ping`) costs a round trip each."""

    @contextmanager
    def connection():
        try:
            with get_connection() as conn:
                yield conn
        except (OperationalError, InterfaceError) as error:
            if did_not_answer(error) and not pool_had_none(error):
                pool.check()  # drops the dead ones, and the pool makes new ones in the background
            raise

    return connection


def held_or_pooled(get_connection, pins: Pins):
    """The connection this thread's reads are held to (`snapshot`), else one from the pool."""

    @contextmanager
    def connection():
        held = pins.held()
        if held is not None:
            yield held
            return
        with get_connection() as conn:
            yield conn

    return connection


class PostgresGovernanceRecorder(PostgresApplicationRecorder):
    # No turns to take here: the events table's lock orders every writer (`insert_events`).
    hold_turn = staticmethod(nullcontext)

    def __init__(self, datastore, *, events_table_name: str = "stored_events"):
        # Server-side prepared statements only where a read asks (`fetch(..., prepare=True)`, outside
        # any pipeline), never automatically: when a pipelined transaction fails (reproduced with
        # Saves when they were pipelined; psycopg's executemany, which the audit chain's sealing
        # uses, still pipelines), psycopg's cache can keep statements the server never prepared,
        # and the connection's next use fails with 'prepared statement "_pg3_N" does not exist'.
        # A threshold no statement reaches does that (None would turn the asked-for ones off too,
        # and the hot reads would be planned again on every request). The pool opens lazily, so
        # every connection it makes gets this setting.
        datastore.pool.kwargs["prepare_threshold"] = sys.maxsize
        # After an outage the pool reconnects by itself, with a delay that doubles after each
        # failed attempt until `reconnect_timeout` (the library's default: 5 minutes), so a server
        # back after 40 s was used again 20 s later. With a short window the pool gives up its
        # backoff and the next request (the decision writer's probe, each second) starts afresh.
        datastore.pool.reconnect_timeout = RECONNECT_SECONDS
        datastore.get_connection = idle_checked_after_loss(datastore.get_connection, datastore.pool)
        self.pins = Pins()
        datastore.get_connection = held_or_pooled(datastore.get_connection, self.pins)
        super().__init__(datastore, events_table_name=events_table_name)
        # The library's statements before the insert (its lock timeout, the table lock), plain:
        # in one simple-query message they cost no round trip, and an anonymous `DO` block,
        # compiled again on every run, cost more server CPU. Not its NOTIFY: only the library's
        # subscriptions LISTEN, the service uses none (its sealer polls), and a NOTIFY is work
        # at every commit (the server's notification queue, under a database-wide lock).
        self.dialect = postgres_dialect(datastore.schema)
        events = self.dialect.library_table(events_table_name)
        self.lock_statements = (
            f"SET LOCAL lock_timeout = '{int(datastore.lock_timeout)}s'; LOCK TABLE {events} IN EXCLUSIVE MODE"
        )
        self._events_head = f"INSERT INTO {events} ({EVENT_COLUMNS})"
        self.sql_create_statements.extend(SQL(self.dialect.sql(s)) for s in DDL)
        self.sql_create_statements.extend(SQL(s) for s in chain.create_statements(self.dialect))
        self.sql_create_statements.extend(SQL(s) for s in merkle.create_statements(self.dialect))
        self.sql_create_statements.append(SQL(guard_function_statement(self.dialect, events_table_name)))

    def create_table(self) -> None:
        """The library's DDL, one process at a time per schema: processes opening a new store
        together (CLI commands beside `serve`, two instances starting) collided in the catalog
        ("tuple concurrently updated"). The lock is the session's, on a connection of its own."""
        key = (f"runcode-policy schema {self.datastore.schema}",)
        with self.datastore.get_connection() as conn:
            conn.execute("SELECT pg_advisory_lock(hashtext(%s))", key)
            try:
                super().create_table()
            finally:
                conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", key)

    def database_now(self) -> datetime:
        """PostgreSQL's own clock, now (not the transaction's start)."""
        with self.datastore.get_connection() as conn:
            row = conn.execute("SELECT clock_timestamp() AS now").fetchone()
        return row["now"]

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Every read this thread makes inside sees one snapshot of the store, in one REPEATABLE
        READ READ ONLY transaction on one connection (application.store.pinned)."""
        if self.pins.held() is not None:  # already in one
            yield
            return
        with self.datastore.get_connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            with self.pins.holding(conn):
                yield

    def subscribe(self, gt=None, topics=()):
        """The library's subscriptions wait for a NOTIFY this recorder does not send (above):
        refused, rather than a subscriber that would never wake."""
        raise NotImplementedError("this recorder sends no NOTIFY: follow the notification log by polling")

    @retried(max_attempts=10, wait=0.2)  # as the library's, but for a pool with no connection to give
    def insert_events(self, stored_events, **kwargs: Any):
        """The library's transaction as one message: BEGIN, the lock, the events, the guards of
        remembered callers, every read-model row and COMMIT, bound client-side (libpq's quoting)
        and sent as one simple query, so the server runs them back to back.

        The library syncs a pipeline before its COMMIT, so the events table's lock (which
        serialises every writer of every process) was held across a client round trip; and in
        a pipeline each statement costs the client a wait on the socket, each wait a fresh turn
        for the GIL, which the writer thread loses to the request threads under load. One
        message: one wait, and the lock held only while the server works. Measured: two
        processes recording through their writers, 2,950 → 3,900 decisions/s here.

        A refusal still aborts everything: the server skips the rest of the message after the
        first error, which raises here (a lost race: the events' own IntegrityError), and the
        connection is rolled back before the pool has it back."""
        if not stored_events:
            return None
        with self.datastore.get_connection() as conn:
            curs = psycopg.ClientCursor(conn)
            bind = binder(curs)
            text = "; ".join(
                ["BEGIN", *(self._bound(bind, s) for s in self._statements(stored_events, kwargs)), "COMMIT"]
            )
            try:
                curs.execute(text)  # no parameters: the simple query protocol, several statements
            except BaseException:
                if conn.pgconn.transaction_status in (TransactionStatus.INTRANS, TransactionStatus.INERROR):
                    conn.rollback()
                raise
            for _ in range(1 + LOCK_STATEMENTS):  # past BEGIN and the lock, to the events' insert (RETURNING their ids)
                curs.nextset()
            return self._fetch_ids_after_insert_events(curs, stored_events, **kwargs)

    def _statements(self, stored_events, kwargs: dict) -> list:
        """In order: the lock (before anything is read or written), the events (so a version
        conflict is their own IntegrityError), the guards, then the read models (after the lock:
        the last-owner check sees every committed revocation)."""
        events = ManyRows(
            self._events_head,
            "(%s, %s, %s, %s)",
            tuple((e.originator_id, e.originator_version, e.topic, e.state) for e in stored_events),
            " RETURNING notification_id",
        )
        statements = [self.lock_statements, events]
        if guards := kwargs.get("guards"):  # remembered callers (application.store.guards)
            statements.append(guards_check_statement(self.dialect, self.events_table_name, guards))
        return statements + read_model_statements(
            self.dialect, kwargs.get("saved_events", ()), kwargs.get("workspaces", {})
        )

    @staticmethod
    def _bound(bind: Bind, statement) -> str:
        """A statement's text: `ManyRows` bound row by row, a (template, params) pair bound
        whole, a text as it is."""
        if isinstance(statement, ManyRows):
            return statement.bound(bind)
        return statement if isinstance(statement, str) else bind(*statement)

    def fetch(
        self, statement: str, params: tuple | list = (), prepare: bool = False, generic: bool = False
    ) -> list[dict]:
        # Pool connections are in autocommit mode: a lone SELECT needs no BEGIN/ROLLBACK round
        # trips. `prepare`: a server-side prepared statement, made and run straight through libpq
        # (application.store.prepared), outside any pipeline. `generic`: prepared and
        # planned once (`_generic`), in a pipeline of its own, where psycopg forgets a statement
        # whose pipeline failed (it prepares it again, under another name).
        with self.datastore.get_connection() as conn:
            if prepare and not generic and (rows := prepared_rows(conn, statement, params)) is not None:
                return rows
            with conn.cursor() as curs:
                if generic:
                    return self._generic(conn, curs, statement, params)
                curs.execute(statement, params, prepare=prepare or None)
                return list(curs.fetchall())

    @staticmethod
    def _generic(conn, curs, statement: str, params) -> list[dict]:
        """`statement` prepared and planned once for every value of its parameters, from its
        first execution on this connection: for a read whose arms each bind their index's leading
        columns (no value can change its plan) and whose planning costs more than running it.
        PostgreSQL would plan each of a statement's first five executions per connection again
        with their values, and a pool hands its connections out in turn, so a read that is not
        asked for all the time (the point-in-time answers) would pay that planning nearly always.
        The setting, the statement (its Parse too, the first time) and the setting put back are
        one round trip, and one implicit transaction: a failure rolls the setting back with it."""
        with conn.pipeline():
            conn.execute(_GENERIC_PLANS)
            curs.execute(statement, params, prepare=True)
            conn.execute(_PLANS_AS_USUAL)
        return list(curs.fetchall())

    def execute(self, statement: str, params: tuple | list = ()) -> None:
        """One statement, committed on its own (pool connections are in autocommit mode)."""
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            curs.execute(statement, params)


_GENERIC_PLANS = "SET plan_cache_mode = force_generic_plan"
_PLANS_AS_USUAL = "RESET plan_cache_mode"
