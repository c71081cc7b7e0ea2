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

from domain.decision import Decision
from domain.policy import Policy
from domain.specs import deny_key
from domain.token import Token

TABLES = ("workspaces", "changes", "decisions", "tokens", "owner_guard")

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
    "CREATE TABLE IF NOT EXISTS {owner_guard} (workspace TEXT NOT NULL, owners INTEGER NOT NULL "
    "CHECK (owners > 0))",
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


def read_model_statements(dialect: Dialect, saved_events, workspaces: dict) -> list[tuple[str, tuple]]:
    """Everything to run in the events' own transaction, worked out before anything is sent.

    Every refusal must be the database's: on PostgreSQL the library commits the transaction when
    a Python exception interrupts it after statements were sent."""
    statements = rows_for_events(saved_events, workspaces, dialect)
    for e in saved_events:
        if isinstance(e, Token.Revoked):
            statements += [(dialect.sql(s), (str(e.originator_id),)) for s in _OWNER_GUARD]
    return statements


# Revoking the last active owner token would lock a workspace's owners out. The count runs after
# the events' insert, whose lock serialises writers (one writer on SQLite; the events table lock
# on PostgreSQL), and a CHECK constraint turns a count of 0 into the database's own
# IntegrityError, which aborts the whole transaction.
_OWNER_GUARD = (
    "INSERT INTO {owner_guard} (workspace, owners) SELECT t.workspace, (SELECT COUNT(*) FROM {tokens} o "
    "WHERE o.workspace = t.workspace AND o.role = 'owner' AND o.revoked_at IS NULL) "
    "FROM {tokens} t WHERE t.id = %s",
    "DELETE FROM {owner_guard} WHERE workspace = (SELECT workspace FROM {tokens} WHERE id = %s)",
)


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
