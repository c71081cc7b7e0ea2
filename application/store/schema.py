"""The read-model tables: their DDL, written once, and the `Dialect` that adapts placeholders,
table names and column types to SQLite or PostgreSQL."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache

from application.store.access_schema import ACCESS_DDL, ACCESS_TABLES
from application.store.count_schema import COUNT_DDL, COUNT_TABLES
from domain.decision import NOT_FOUND_UPSTREAM

TABLES = (
    "workspaces",
    "changes",
    "decisions",
    "tokens",
    "owner_guard",
    "stamp_guard",
    "runs",
    "run_decisions",
    "console_sessions",
    "change_tokens",
    "token_names",
    "deliveries",
    "read_model",
    *COUNT_TABLES,
    *ACCESS_TABLES,
)

DDL = (
    "CREATE TABLE IF NOT EXISTS {workspaces} (workspace TEXT PRIMARY KEY, "
    "created_at {ts} NOT NULL, created_by TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {changes} (workspace TEXT NOT NULL, version INTEGER NOT NULL, "
    "at {ts} NOT NULL, by_actor TEXT NOT NULL, note TEXT NOT NULL, type TEXT NOT NULL, "
    "language TEXT NOT NULL, list TEXT, name TEXT, name_key TEXT, mode TEXT, "
    "PRIMARY KEY (workspace, version))",
    # Instants to versions: "the version at T" and "the first version from T" are one seek each.
    "CREATE INDEX IF NOT EXISTS rcp_changes_by_instant ON {changes} (workspace, at, version)",
    "DROP INDEX IF EXISTS {in_schema}rcp_changes_by_time",  # superseded by rcp_changes_by_instant
    "CREATE INDEX IF NOT EXISTS rcp_changes_by_name ON {changes} (workspace, language, name_key, list, version)",
    # A language's mode switches and rule changes, each its own partial index: an index over every
    # type would also serve the list arms' (workspace, language, version) prefix, which a planner
    # without statistics picks, walking the language's whole history.
    "DROP INDEX IF EXISTS {in_schema}rcp_changes_by_type",
    "CREATE INDEX IF NOT EXISTS rcp_changes_mode_switches ON {changes} (workspace, language, version) "
    "WHERE type = 'mode-switched'",
    "CREATE INDEX IF NOT EXISTS rcp_changes_rule_changes ON {changes} (workspace, language, version) "
    "WHERE type = 'rule-changed'",
    "CREATE TABLE IF NOT EXISTS {decisions} (id TEXT PRIMARY KEY, workspace TEXT NOT NULL, "
    "at {ts} NOT NULL, language TEXT, name TEXT, kind TEXT NOT NULL, allowed {bool} NOT NULL, "
    "reason TEXT NOT NULL, source TEXT, sandbox TEXT, record TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS rcp_decisions_by_time ON {decisions} (workspace, at, id)",
    # One package's decisions, newest first, keyset-paged on (at, id): one index range per page.
    "CREATE INDEX IF NOT EXISTS rcp_decisions_by_package ON {decisions} (workspace, language, name, at, id)",
    "DROP INDEX IF EXISTS {in_schema}rcp_decisions_by_name",  # superseded by rcp_decisions_by_package
    # Names the upstream did not have (`ReadModel.reason_names`): a period's are one range of
    # this index however many other decisions it holds. Its queries spell the reason out: a
    # generic plan of a prepared statement (psycopg prepares a statement run often) cannot use a
    # partial index whose condition is a bound parameter.
    f"CREATE INDEX IF NOT EXISTS rcp_decisions_not_found ON {{decisions}} (workspace, at) "
    f"WHERE reason = '{NOT_FOUND_UPSTREAM}'",
    "CREATE TABLE IF NOT EXISTS {tokens} (id TEXT PRIMARY KEY, workspace TEXT NOT NULL, "
    "name TEXT NOT NULL, role TEXT NOT NULL, issued_at {ts} NOT NULL, issued_by TEXT NOT NULL, "
    "revoked_at {ts}, revoked_by TEXT, secret_digest TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS rcp_tokens_by_workspace ON {tokens} (workspace, issued_at)",
    "CREATE TABLE IF NOT EXISTS {owner_guard} (workspace TEXT NOT NULL, owners INTEGER NOT NULL CHECK (owners > 0))",
    "CREATE TABLE IF NOT EXISTS {stamp_guard} (workspace TEXT NOT NULL, overtaken INTEGER NOT NULL "
    "CHECK (overtaken = 0))",
    # Package-index runs (application.index): the run's token, and which decisions it made (an API
    # token's index reads without a run are grouped the same way, under domain.run.reader_key).
    "CREATE TABLE IF NOT EXISTS {runs} (id TEXT PRIMARY KEY, workspace TEXT NOT NULL, started_at {ts} NOT NULL, "
    "expires_at {ts} NOT NULL, started_by TEXT NOT NULL, started_by_name TEXT NOT NULL, context TEXT NOT NULL, "
    "secret_digest TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {run_decisions} (run TEXT NOT NULL, decision TEXT NOT NULL, allowed {bool} NOT NULL, "
    "at {ts} NOT NULL, PRIMARY KEY (run, allowed, at, decision))",
    # What each transfer a download decision allowed delivered (domain.delivery), in the order
    # they ended: a decision's deliveries are one range of this index.
    "CREATE TABLE IF NOT EXISTS {deliveries} (id TEXT PRIMARY KEY, decision TEXT NOT NULL, workspace TEXT NOT NULL, "
    "at {ts} NOT NULL, status TEXT NOT NULL, bytes BIGINT NOT NULL, sha256 TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS rcp_deliveries_by_decision ON {deliveries} (decision, at, id)",
    "CREATE INDEX IF NOT EXISTS rcp_deliveries_by_workspace ON {deliveries} (workspace, id)",
    *COUNT_DDL,
    *ACCESS_DDL,
    # Which token made a change (none for the CLI and the service): a table of its own, so stores
    # made before it need no migration.
    "CREATE TABLE IF NOT EXISTS {change_tokens} (workspace TEXT NOT NULL, version INTEGER NOT NULL, "
    "token_id TEXT NOT NULL, PRIMARY KEY (workspace, version))",
    # Every token name a workspace ever gave (compared as domain.token.name_key): two owners
    # issuing one name at once cannot both win.
    "CREATE TABLE IF NOT EXISTS {token_names} (workspace TEXT NOT NULL, name_key TEXT NOT NULL, "
    "PRIMARY KEY (workspace, name_key))",
    # Console sign-ins (application.sessions), written from their sealed events (domain.session).
    "CREATE TABLE IF NOT EXISTS {console_sessions} (id TEXT PRIMARY KEY, workspace TEXT NOT NULL, "
    "token_id TEXT NOT NULL, started_at {ts} NOT NULL, expires_at {ts} NOT NULL, ended_at {ts})",
    # Superseded by console_sessions: its sign-ins were no events, so they end (sign in again).
    "DROP TABLE IF EXISTS {in_schema}rcp_sessions",
    # The version of these tables and of the projection that fills them (application.store.upgrade).
    "CREATE TABLE IF NOT EXISTS {read_model} (version INTEGER NOT NULL)",
)


@dataclass(frozen=True)
class Dialect:
    """What differs between the two stores: placeholders, qualified names, types, timestamps."""

    name: str
    schema: str | None = None
    types: dict = field(default_factory=dict)

    def table(self, short: str) -> str:
        return f'"{self.schema}".rcp_{short}' if self.schema else f"rcp_{short}"

    def library_table(self, name: str) -> str:
        """A table of the eventsourcing library's (its events, its snapshots), qualified."""
        return f'"{self.schema}"."{name}"' if self.schema else name

    def sql(self, template: str) -> str:
        return _render(self, template)

    def ts(self, moment: datetime):
        """SQLite stores fixed-width UTC text, so text order is time order."""
        moment = moment.astimezone(UTC)
        if self.schema:
            return moment
        return moment.replace(tzinfo=None).isoformat(timespec="microseconds") + "+00:00"

    def each_key(self, where: str) -> str:
        """FROM and WHERE over `{changes} c` for each of any number of keys (one parameter,
        `keys`; `where` names the one at hand `k.key`), the keys driving: one index seek per key
        on both stores, and one statement for every count (no compound SELECT or variable limit
        to run into). PostgreSQL's planner, given an IN list, `= ANY` or a plain join, may filter
        the whole language's changes instead; a LATERAL subquery it cannot flatten (OFFSET 0) it
        runs once per key. SQLite runs the left side of a CROSS JOIN as the outer loop."""
        if self.schema:
            return (
                "FROM unnest(CAST(%s AS text[])) AS k (key) CROSS JOIN LATERAL "
                f"(SELECT * FROM {{changes}} c WHERE {where} OFFSET 0) AS c"
            )
        return f"FROM (SELECT value AS key FROM json_each(%s)) AS k CROSS JOIN {{changes}} c WHERE {where}"

    def keys(self, values) -> list | str:
        """Values as the parameter of `each_key`: an array on PostgreSQL, JSON text on SQLite."""
        return list(values) if self.schema else json.dumps(list(values))

    def from_ts(self, value) -> datetime:
        if isinstance(value, str):
            return datetime.fromisoformat(value)
        if isinstance(value, datetime):
            return value.astimezone(UTC)
        raise TypeError(f"{value!r} is not an instant")  # what SQLite was given in one's place

    def __hash__(self) -> int:
        return hash((self.name, self.schema))


@lru_cache(maxsize=512)
def _render(dialect: Dialect, template: str) -> str:
    names = {t: dialect.table(t) for t in TABLES} | dialect.types
    text = template.format(**names)
    return text if dialect.schema else text.replace("%s", "?")


SQLITE = Dialect("sqlite", None, {"ts": "TEXT", "bool": "INTEGER", "norowid": " WITHOUT ROWID", "in_schema": ""})


def postgres_dialect(schema: str) -> Dialect:
    return Dialect(
        "postgres", schema, {"ts": "TIMESTAMPTZ", "bool": "BOOLEAN", "norowid": "", "in_schema": f'"{schema}".'}
    )
