"""The read models checked by rebuilding them: runs, requests and their askers, exceptions, the
decision counts the overview and impact read (fetched versions with their facts too), console
sessions, the workspace's own row (who created it, when) and every token name it gave.

The workspace's stored events (those its chain seals, then any still waiting for the sealer)
are replayed, in order, through the very projection that wrote the live tables (the counts
through the sealer's, of the sealed events only), into a scratch
in-memory database with the same schema; then each live table's rows for the workspace are
compared with the rebuilt ones. The first difference is named: table, key, column, what the
events make and what was found. The projection is followed wherever it goes, so a new column is
checked without anyone teaching this module about it. The events and the tables are read in one
snapshot (`AuditChain.verify`), so what a writer or a sealer commits meanwhile is in neither.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from uuid import UUID

from eventsourcing.persistence import StoredEvent

from application.chain import stored
from application.chain.readmodels.failures import differs, first_difference, table_failure
from application.store.schema import DDL, SQLITE
from application.store.upgrade import replayed

# Table -> its key columns; every table holds a `workspace` column except run_decisions, which
# is read through the workspace's decisions.
KEYS = {
    "runs": ("id",),
    "run_decisions": ("run", "decision"),
    "requests": ("id",),
    "request_askers": ("request_id", "token_id"),
    "exceptions": ("id",),
    "decision_counts": ("day", "language", "name", "allowed", "sandbox", "kind"),
    "outcome_days": ("day", "allowed"),
    "impact_names": ("day", "language", "name", "kind"),
    "impact_days": ("day",),
    "impact_sandboxes": ("language", "name", "kind", "sandbox"),
    "impact_versions": ("day", "language", "name", "version", "sdist", "sandbox", "allowed"),
    "console_sessions": ("id",),
    "workspaces": ("workspace",),
    "token_names": ("name_key",),
}
_OF_WORKSPACE = {"run_decisions": "decision IN (SELECT id FROM {decisions} WHERE workspace = %s)"}


def check_rebuilt(store, to_domain_event, read_state, workspace: str, checked: int) -> dict | None:
    first = _difference(store, to_domain_event, read_state, workspace)
    if first is None:
        return None
    problem, table, key, difference = first
    keyed = ", ".join(f"{k}={v!r}" for k, v in key.items())
    if difference is not None:
        how = differs(difference, "the sealed events", "the events make")
    else:
        how = "lacks a row the sealed events make" if problem == "deleted" else "holds a row no sealed event makes"
    return table_failure(checked, problem, table, key, f"({keyed})", how, {"seq": None}, difference)


def _difference(store, to_domain_event, read_state, workspace: str):
    scratch = _rebuild(store, to_domain_event, read_state, workspace)
    for table, keys in KEYS.items():
        where = _OF_WORKSPACE.get(table, "workspace = %s")
        live = {_key(r, keys): r for r in map(_plain, _live_rows(store, table, where, workspace))}
        rebuilt = {_key(r, keys): r for r in _scratch_rows(scratch, table, where, workspace)}
        for key in sorted(set(live) | set(rebuilt), key=repr):
            expected, found = rebuilt.get(key), live.get(key)
            named = dict(zip(keys, key, strict=True))
            if found is None:
                return "deleted", table, named, None
            if expected is None:
                return "inserted", table, named, None
            if (difference := first_difference(expected, found)) is not None:
                return "altered", table, named, difference
    return None


def _rebuild(store, to_domain_event, read_state, workspace: str) -> sqlite3.Connection:
    scratch = sqlite3.connect(":memory:")
    for statement in DDL:
        scratch.execute(SQLITE.sql(statement))
    sealed, pending = store.workspace_events(workspace)
    ours = {str(r["originator_id"]) for r in sealed}
    pending = [
        r
        for r in pending
        if str(r["originator_id"]) in ours or (read_state(r["state"]) or {}).get("workspace") == workspace
    ]
    events = [to_domain_event(_stored(r)) for r in sealed]  # the walk found each as sealed
    events += [_pending_event(store, to_domain_event, r) for r in pending]
    workspaces = {e.originator_id: workspace for e in events}
    for i, event in enumerate(events):
        for statement, params in replayed(SQLITE, event, workspaces, i < len(sealed)):
            scratch.execute(statement, params)
    return scratch


def _stored(row: dict) -> StoredEvent:
    return StoredEvent(UUID(str(row["originator_id"])), row["originator_version"], row["topic"], row["state"])


def _pending_event(store, to_domain_event, row: dict):
    """An event not sealed yet, so not held against anything yet: one the mapper cannot read
    (written behind the service's back, as no release writes it) is named, not a crash."""
    try:
        return to_domain_event(_stored(row))
    except Exception:  # the mapper decoding what it never wrote: whatever it raises
        at = f"the event {stored.shown(row['originator_id'])} v{stored.shown(row['originator_version'])}"
        raise stored.Unreadable(store.events_table, at, "state", row["state"], f"a state of {row['topic']!r}") from None


def _live_rows(store, table: str, where: str, workspace: str) -> list[dict]:
    return store.table_rows(table, where, workspace)


def _scratch_rows(scratch: sqlite3.Connection, table: str, where: str, workspace: str) -> list[dict]:
    cursor = scratch.execute(SQLITE.sql(f"SELECT * FROM {{{table}}} WHERE {where}"), (workspace,))
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _plain(row: dict) -> dict:
    """A PostgreSQL row as SQLite stores it (instants as fixed-width UTC text, booleans as 0/1)."""
    return {
        k: SQLITE.ts(v) if isinstance(v, datetime) else int(v) if isinstance(v, bool) else v for k, v in row.items()
    }


def _key(row: dict, keys: tuple[str, ...]) -> tuple:
    return tuple(row[k] for k in keys)
