"""PostgreSQL application recorder that also writes the read-model tables in the same transaction."""

from __future__ import annotations

from typing import Any

from eventsourcing.postgres import PostgresApplicationRecorder
from psycopg.sql import SQL

from application.store import chain
from application.store.projection import read_model_statements
from application.store.schema import DDL, postgres_dialect


class PostgresGovernanceRecorder(PostgresApplicationRecorder):
    def __init__(self, datastore, *, events_table_name: str = "stored_events"):
        # No server-side prepared statements: when a pipelined save fails (a version conflict
        # between two Saves), psycopg's cache can keep statements the server never prepared,
        # and the connection's next use fails with 'prepared statement "_pg3_N" does not exist'
        # (reproduced here with concurrent Saves and evaluates). The pool opens lazily, so every
        # connection it makes gets this setting.
        datastore.pool.kwargs["prepare_threshold"] = None
        super().__init__(datastore, events_table_name=events_table_name)
        self.dialect = postgres_dialect(datastore.schema)
        self.sql_create_statements.extend(SQL(self.dialect.sql(s)) for s in DDL)
        self.sql_create_statements.extend(SQL(s) for s in chain.create_statements(self.dialect))

    def _insert_stored_events(self, curs, stored_events, **kwargs: Any) -> None:
        # After the library has locked the events table and queued the events' insert, in the
        # same pipelined transaction: a version conflict then surfaces as the events' own
        # IntegrityError (not as an aborted pipeline on a read-model row), every writer is
        # serialised by that lock (so the last-owner check sees every committed revocation),
        # and the rows commit or roll back with the events. Own cursor: the library reads the
        # events insert's results from `curs`.
        statements = read_model_statements(self.dialect, kwargs.get("saved_events", ()), kwargs.get("workspaces", {}))
        super()._insert_stored_events(curs, stored_events, **kwargs)
        with curs.connection.cursor() as read_models:
            for statement, params in statements:
                read_models.execute(statement, params)

    def fetch(self, statement: str, params: tuple | list = (), prepare: bool = False) -> list[dict]:
        # Pool connections are in autocommit mode: a lone SELECT needs no BEGIN/ROLLBACK round
        # trips. `prepare`: a server-side prepared statement, made here outside any pipeline
        # (so the failed-pipeline case above cannot leave it unprepared).
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            curs.execute(statement, params, prepare=prepare or None)
            return list(curs.fetchall())

    def execute(self, statement: str, params: tuple | list = ()) -> None:
        """One statement, committed on its own (pool connections are in autocommit mode)."""
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            curs.execute(statement, params)
