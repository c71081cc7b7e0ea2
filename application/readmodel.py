"""Read-model tables written in the same transaction as the events that they index.

The SQL is written once; a `Dialect` adapts placeholders, table names and column types to SQLite
or PostgreSQL. Rows are derived from the domain events being saved (the `searchabletimestamps`
pattern), so a read model can never disagree with the event log it was written beside.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache

from eventsourcing.persistence import IntegrityError

from domain.decision import Decision
from domain.policy import Policy
from domain.specs import deny_key
from domain.token import Token

TABLES = ("workspaces", "changes", "decisions", "tokens")

DDL = (
    "CREATE TABLE IF NOT EXISTS {workspaces} (workspace TEXT PRIMARY KEY, "
    "created_at {ts} NOT NULL, created_by TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {changes} (workspace TEXT NOT NULL, version INTEGER NOT NULL, "
    "at {ts} NOT NULL, by_actor TEXT NOT NULL, note TEXT NOT NULL, type TEXT NOT NULL, "
    "language TEXT NOT NULL, list TEXT, name TEXT, name_key TEXT, mode TEXT, "
    "PRIMARY KEY (workspace, version))",
    "CREATE INDEX IF NOT EXISTS rcp_changes_by_time ON {changes} (workspace, at)",
    "CREATE INDEX IF NOT EXISTS rcp_changes_by_name ON {changes} "
    "(workspace, language, name_key, list, version)",
    "CREATE INDEX IF NOT EXISTS rcp_changes_by_type ON {changes} (workspace, language, type, version)",
    "CREATE TABLE IF NOT EXISTS {decisions} (id TEXT PRIMARY KEY, workspace TEXT NOT NULL, "
    "at {ts} NOT NULL, language TEXT, name TEXT, kind TEXT NOT NULL, allowed {bool} NOT NULL, "
    "reason TEXT NOT NULL, source TEXT, sandbox TEXT, record TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS rcp_decisions_by_time ON {decisions} (workspace, at, id)",
    "CREATE INDEX IF NOT EXISTS rcp_decisions_by_name ON {decisions} (workspace, language, name, at)",
    "CREATE TABLE IF NOT EXISTS {tokens} (id TEXT PRIMARY KEY, workspace TEXT NOT NULL, "
    "name TEXT NOT NULL, role TEXT NOT NULL, issued_at {ts} NOT NULL, issued_by TEXT NOT NULL, "
    "revoked_at {ts}, revoked_by TEXT, secret_digest TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS rcp_tokens_by_workspace ON {tokens} (workspace, issued_at)",
)

_INSERT = {
    "workspace": "INSERT INTO {workspaces} VALUES (%s, %s, %s)",
    "change": "INSERT INTO {changes} VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
    "decision": "INSERT INTO {decisions} VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
    "token": "INSERT INTO {tokens} VALUES (%s, %s, %s, %s, %s, %s, NULL, NULL, %s)",
    "revoke": "UPDATE {tokens} SET revoked_at = %s, revoked_by = %s WHERE id = %s",
}


@dataclass(frozen=True)
class Dialect:
    """What differs between the two stores: placeholders, qualified names, types, timestamps."""

    name: str
    schema: str | None = None
    types: dict = field(default_factory=dict)

    def table(self, short: str) -> str:
        return f'"{self.schema}".rcp_{short}' if self.schema else f"rcp_{short}"

    def sql(self, template: str) -> str:
        return _render(self, template)

    def ts(self, moment: datetime):
        """SQLite stores fixed-width UTC text, so text order is time order."""
        moment = moment.astimezone(UTC)
        if self.schema:
            return moment
        return moment.replace(tzinfo=None).isoformat(timespec="microseconds") + "+00:00"

    def from_ts(self, value) -> datetime:
        if isinstance(value, str):
            return datetime.fromisoformat(value)
        return value.astimezone(UTC)

    def __hash__(self) -> int:
        return hash((self.name, self.schema))


@lru_cache(maxsize=512)
def _render(dialect: Dialect, template: str) -> str:
    names = {t: dialect.table(t) for t in TABLES} | dialect.types
    text = template.format(**names)
    return text if dialect.schema else text.replace("%s", "?")


SQLITE = Dialect("sqlite", None, {"ts": "TEXT", "bool": "INTEGER"})


def postgres_dialect(schema: str) -> Dialect:
    return Dialect("postgres", schema, {"ts": "TIMESTAMPTZ", "bool": "BOOLEAN"})


# Revoking the last active owner token would lock a workspace's owners out. The check must see
# concurrent revocations, so on PostgreSQL the workspace row is locked first (SQLite has one writer).
_LOCK_WORKSPACE = ("SELECT workspace FROM {workspaces} WHERE workspace = "
                   "(SELECT workspace FROM {tokens} WHERE id = %s) FOR UPDATE")
_OWNERS_LEFT = ("SELECT COUNT(*) AS n FROM {tokens} WHERE role = 'owner' AND revoked_at IS NULL "
                "AND workspace = (SELECT workspace FROM {tokens} WHERE id = %s)")


def write_read_models(cursor, dialect: Dialect, saved_events, workspaces: dict) -> None:
    """Run inside the events' own transaction: the read models commit or roll back with them."""
    revoked = [str(e.originator_id) for e in saved_events if isinstance(e, Token.Revoked)]
    for token in revoked if dialect.schema else ():
        cursor.execute(dialect.sql(_LOCK_WORKSPACE), (token,))
    for statement, params in rows_for_events(saved_events, workspaces, dialect):
        cursor.execute(statement, params)
    for token in revoked:
        cursor.execute(dialect.sql(_OWNERS_LEFT), (token,))
        if cursor.fetchone()["n"] == 0:
            raise IntegrityError("revoking it would leave the workspace without an active owner token")


def rows_for_events(events, workspaces: dict, dialect: Dialect) -> list[tuple[str, tuple]]:
    """The read-model statements for the domain events of one atomic save. `workspaces` maps
    each saved aggregate's id to its workspace (policy events don't repeat it)."""
    rows = []
    for e in events:
        at = dialect.ts(e.timestamp)
        if isinstance(e, Policy.Created):
            rows.append(("workspace", (e.workspace, at, e.by)))
        elif isinstance(e, (Policy.ModeSwitched, Policy.EntryAdded, Policy.EntryRemoved)):
            rows.append(("change", _change_row(e, workspaces[e.originator_id], at)))
        elif isinstance(e, Decision.Recorded):
            rows.append(("decision", _decision_row(e, at)))
        elif isinstance(e, Token.Issued):
            rows.append(("token", (str(e.originator_id), e.workspace, e.name, e.role, at, e.by,
                                   e.secret_digest)))
        elif isinstance(e, Token.Revoked):
            rows.append(("revoke", (at, e.by, str(e.originator_id))))
    return [(dialect.sql(_INSERT[kind]), params) for kind, params in rows]


def _change_row(e, workspace: str, at) -> tuple:
    change_type, list_name, name, mode = _describe_change(e)
    key = deny_key(e.language, name) if name else None
    return (workspace, e.originator_version - 1, at, e.by, e.note, change_type, e.language,
            list_name, name, key, mode)


def _describe_change(e) -> tuple[str, str | None, str | None, str | None]:
    if isinstance(e, Policy.ModeSwitched):
        return "mode-switched", None, None, e.mode
    kind = "entry-added" if isinstance(e, Policy.EntryAdded) else "entry-removed"
    return kind, e.list_name, e.name, None


def _decision_row(e, at) -> tuple:
    r = e.record
    context = r.get("context") or {}
    return (str(e.originator_id), e.workspace, at, r.get("language"), r.get("name"), r["kind"],
            bool(r["allowed"]), r["reason"], context.get("source"), context.get("sandbox"),
            json.dumps(r, sort_keys=True))
