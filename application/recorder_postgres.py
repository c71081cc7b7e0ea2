"""PostgreSQL application recorder that also writes the read-model tables in the same transaction."""

from __future__ import annotations

from typing import Any

from eventsourcing.postgres import PostgresApplicationRecorder
from psycopg.sql import SQL

from application.readmodel import DDL, postgres_dialect, write_read_models


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

    def _insert_events(self, curs, stored_events, **kwargs: Any) -> None:
        # Runs inside the library's transaction, before the events themselves are inserted:
        # a conflict on the events rolls these rows back too.
        write_read_models(curs, self.dialect, kwargs.get("saved_events", ()), kwargs.get("workspaces", {}))

    def fetch(self, statement: str, params: tuple | list = ()) -> list[dict]:
        # Pool connections are in autocommit mode: a lone SELECT needs no BEGIN/ROLLBACK round
        # trips.
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            curs.execute(statement, params)
            return list(curs.fetchall())
