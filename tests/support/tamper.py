"""Tampering with a store from outside the service, as someone with write access to the database
would: raw SQL on the SQLite file or the PostgreSQL schema, never through the application."""

from __future__ import annotations

import sqlite3
import uuid
from urllib.parse import parse_qs, urlsplit, urlunsplit

# What seals the log: the chain, its heads, checkpoints and their Merkle tree and notes.
SEALS = (
    "rcp_chain",
    "rcp_chain_heads",
    "rcp_checkpoints",
    "rcp_merkle_nodes",
    "rcp_merkle_size",
    "rcp_checkpoint_notes",
)


class Tamperer:
    def __init__(self, database_url: str):
        parts = urlsplit(database_url)
        self.postgres = parts.scheme.startswith("postgres")
        if self.postgres:
            import psycopg

            schema = parse_qs(parts.query)["schema"][0]
            self.conn = psycopg.connect(urlunsplit(parts._replace(query="")), autocommit=True)
            self.conn.execute(f'SET search_path TO "{schema}"')
        else:
            self.conn = sqlite3.connect(parts.path[1:], isolation_level=None)
        self.nid = "notification_id" if self.postgres else "rowid"
        self.events = "governance_events" if self.postgres else "stored_events"  # the library's names
        self.snapshots = "governance_snapshots" if self.postgres else "stored_snapshots"

    def close(self) -> None:
        self.conn.close()

    def sql(self, statement: str, params=()) -> list[tuple]:
        statement = statement.replace("{nid}", self.nid).replace("stored_events", self.events)
        if not self.postgres:
            statement = statement.replace("%s", "?")
        cursor = self.conn.execute(statement, params)
        return list(cursor.fetchall()) if cursor.description else []

    def oid(self, originator_id: str):
        return uuid.UUID(originator_id) if self.postgres else uuid.UUID(originator_id).hex

    def notification_of(self, originator_id: str, version: int = 1) -> int:
        return self.sql(
            "SELECT {nid} FROM stored_events WHERE originator_id = %s AND originator_version = %s",
            (self.oid(originator_id), version),
        )[0][0]

    def contents(self) -> dict[str, list[tuple]]:
        """Every table of the store and its rows, in one order: what a reader must leave as found."""
        if self.postgres:
            names = "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        else:
            names = "SELECT name FROM sqlite_master WHERE type = 'table'"
        tables = sorted(name for (name,) in self.sql(names))
        return {t: sorted(map(tuple, self.conn.execute(f'SELECT * FROM "{t}"').fetchall()), key=repr) for t in tables}

    # -- the attacks ----------------------------------------------------------------------------
    def replace_in_state(self, originator_id: str, old: str, new: str) -> None:
        if self.postgres:
            statement = (
                "UPDATE stored_events SET state = convert_to(replace(convert_from(state, 'UTF8'), %s, %s), "
                "'UTF8') WHERE originator_id = %s"
            )
        else:
            statement = (
                "UPDATE stored_events SET state = CAST(replace(CAST(state AS TEXT), %s, %s) AS BLOB) "
                "WHERE originator_id = %s"
            )
        self.sql(statement, (old, new, self.oid(originator_id)))

    def replace_in_snapshot(self, originator_id: str, old: str, new: str) -> None:
        """Edit the newest snapshot of an aggregate where it is stored (outside the event log)."""
        table = self.snapshots
        edited = (
            "convert_to(replace(convert_from(state, 'UTF8'), %s, %s), 'UTF8')"
            if self.postgres
            else "CAST(replace(CAST(state AS TEXT), %s, %s) AS BLOB)"
        )
        newest = f"(SELECT MAX(originator_version) FROM {table} WHERE originator_id = %s)"
        statement = f"UPDATE {table} SET state = {edited} WHERE originator_id = %s AND originator_version = {newest}"
        self.sql(statement, (old, new, self.oid(originator_id), self.oid(originator_id)))

    def delete_event(self, originator_id: str, version: int = 1) -> None:
        self.sql(
            "DELETE FROM stored_events WHERE originator_id = %s AND originator_version = %s",
            (self.oid(originator_id), version),
        )

    def insert_forged_copy(self, originator_id: str, old: str, new: str) -> str:
        """A forged event made from a real one (another id, `old` replaced by `new`), slipped in
        right after it: later events are renumbered one up to make room."""
        after = self.notification_of(originator_id)
        forged = str(uuid.uuid4())
        self.sql("UPDATE stored_events SET {nid} = {nid} + 1000000 WHERE {nid} > %s", (after,))
        self.sql("UPDATE stored_events SET {nid} = {nid} - 999999 WHERE {nid} > 1000000")
        columns = "originator_id, originator_version, topic, state"
        self.sql(
            f"INSERT INTO stored_events ({self.nid}, {columns}) SELECT %s, %s, originator_version, topic, "
            "state FROM stored_events WHERE originator_id = %s",
            (after + 1, self.oid(forged), self.oid(originator_id)),
        )
        self.replace_in_state(forged, old, new)
        return forged

    def swap(self, first: str, second: str) -> None:
        a, b = self.notification_of(first), self.notification_of(second)
        self.sql("UPDATE stored_events SET {nid} = -1 WHERE {nid} = %s", (a,))
        self.sql("UPDATE stored_events SET {nid} = %s WHERE {nid} = %s", (a, b))
        self.sql("UPDATE stored_events SET {nid} = %s WHERE {nid} = -1", (b,))

    def truncate_chain(self, workspace: str, keep: int) -> None:
        """Remove the workspace's records after `keep` from the events, the decisions table and the
        chain alike, and wind its head back, as someone hiding the tail would."""
        oids = self.sql(
            "SELECT originator_id, originator_version FROM rcp_chain WHERE workspace = %s AND seq > %s",
            (workspace, keep),
        )
        for originator_id, version in oids:
            self.sql(
                "DELETE FROM stored_events WHERE originator_id = %s AND originator_version = %s",
                (originator_id, version),
            )
            self.sql("DELETE FROM rcp_decisions WHERE id = %s", (str(uuid.UUID(str(originator_id))),))
        self.sql("DELETE FROM rcp_chain WHERE workspace = %s AND seq > %s", (workspace, keep))
        self.sql(
            "UPDATE rcp_chain_heads SET seq = %s, link = (SELECT link FROM rcp_chain WHERE workspace = %s "
            "AND seq = %s) WHERE workspace = %s",
            (keep, workspace, keep, workspace),
        )

    def rewrite_history(self, decision_id: str) -> None:
        """An attacker holding the database and the key: turn a denied decision into an allowed
        one and drop every seal, so the service re-seals (and re-signs) the rewritten log."""
        self.sql("BEGIN")
        self.replace_in_state(decision_id, '"reason":"not-on-the-deny-list"', '"reason":"matches-the-allow-list"')
        for table in SEALS:
            self.sql(f"DELETE FROM {table}")
        self.sql("UPDATE rcp_chain_position SET notification_id = 0")
        self.sql("COMMIT")
