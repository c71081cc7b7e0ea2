"""SQLite application recorder that also writes the read-model tables in the same transaction."""

from __future__ import annotations

from typing import Any

from eventsourcing.sqlite import SQLiteApplicationRecorder

from application.store import chain, merkle
from application.store.guards import GUARD_FAILED, StaleCaller, guards_statement
from application.store.projection import ManyRows, read_model_statements
from application.store.schema import DDL, SQLITE


class SQLiteGovernanceRecorder(SQLiteApplicationRecorder):
    dialect = SQLITE

    def construct_create_table_statements(self) -> list[str]:
        return (
            super().construct_create_table_statements()
            + [SQLITE.sql(s) for s in DDL]
            + chain.create_statements(SQLITE)
            + merkle.create_statements(SQLITE)
        )

    def _insert_events(self, c, stored_events, **kwargs: Any):
        notification_ids = super()._insert_events(c, stored_events, **kwargs)
        if guards := kwargs.get("guards"):  # remembered callers (application.store.guards)
            c.execute(*guards_statement(SQLITE, self.events_table_name, guards))
            if c.fetchone()[0]:
                raise StaleCaller(GUARD_FAILED)  # rolls the transaction back
        for item in read_model_statements(SQLITE, kwargs.get("saved_events", ()), kwargs.get("workspaces", {})):
            for statement, params in item.statements() if isinstance(item, ManyRows) else (item,):
                c.execute(statement, params)
        return notification_ids

    def fetch(
        self, statement: str, params: tuple | list = (), prepare: bool = False, generic: bool = False
    ) -> list[dict]:
        # sqlite3 keeps its own statement cache and plans a statement once: `prepare` and
        # `generic` have nothing to add here.
        with self.datastore.transaction(commit=False) as c:
            c.execute(statement, params)
            return [dict(row) for row in c.fetchall()]

    def execute(self, statement: str, params: tuple | list = ()) -> None:
        """One statement in its own write transaction (state outside the event log)."""
        with self.datastore.transaction(commit=True) as c:
            c.execute(statement, params)
