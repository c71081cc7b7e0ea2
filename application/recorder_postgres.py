"""PostgreSQL application recorder that also writes the read-model tables in the same transaction."""

from __future__ import annotations

from typing import Any

from eventsourcing.postgres import PostgresApplicationRecorder
from psycopg.sql import SQL

from application.readmodel import DDL, postgres_dialect, write_read_models


class PostgresGovernanceRecorder(PostgresApplicationRecorder):
    def __init__(self, datastore, *, events_table_name: str = "stored_events"):
        super().__init__(datastore, events_table_name=events_table_name)
        self.dialect = postgres_dialect(datastore.schema)
        self.sql_create_statements.extend(SQL(self.dialect.sql(s)) for s in DDL)

    def _insert_events(self, curs, stored_events, **kwargs: Any) -> None:
        # Runs inside the library's transaction, before the events themselves are inserted:
        # a conflict on the events rolls these rows back too.
        write_read_models(curs, self.dialect, kwargs.get("saved_events", ()), kwargs.get("workspaces", {}))

    def fetch(self, statement: str, params: tuple | list = ()) -> list[dict]:
        # Pool connections are in autocommit mode: a lone SELECT needs no BEGIN/ROLLBACK round
        # trips. Prepared, because the hot path repeats the same few statements.
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            curs.execute(statement, params, prepare=True)
            return list(curs.fetchall())
