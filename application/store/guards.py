"""The recording transaction's check of remembered callers (application.callers): the SQL that
finds stale guards, run after the events table's lock by both stores' recorders, and how its
refusal is told apart from any other store error."""

from __future__ import annotations

from uuid import UUID

GUARD_FAILED = "runcode-policy: a remembered caller is out of date"

# A guard holds when its token is active in its workspace and the version judged is the head.
# Active: the tokens table says so, and neither the event log nor the audit chain holds a token
# event after its issue (its revocation: revocation is final), so a revocation undone in the
# table, or its event deleted, still ends the remembered caller (application.chain.checked).
# `{id}`, `{oid}` (the originator id as the store spells it), `{workspace}` and `{version}` are
# the guard's; `{events}`, `{chain}`, `{tokens}` and `{changes}` are the tables.
HOLDS = (
    "EXISTS (SELECT 1 FROM {tokens} t WHERE t.id = {id} AND t.workspace = {workspace} AND t.revoked_at IS NULL) "
    "AND NOT EXISTS (SELECT 1 FROM {events} e WHERE e.originator_id = {oid} AND e.originator_version > 1) "
    "AND NOT EXISTS (SELECT 1 FROM {chain} k WHERE k.originator_id = {oid} AND k.originator_version > 1) "
    "AND {version} = COALESCE((SELECT c.version FROM {changes} c WHERE c.workspace = {workspace} "
    "ORDER BY c.version DESC LIMIT 1), 0)"
)

# SQLite: one statement counting the stale ones among a VALUES list of the guards (sqlite3 keeps
# the statement prepared).
_STALE_COUNT = (
    "WITH g(id, oid, workspace, version) AS (VALUES {guards}) SELECT COUNT(*) AS stale FROM g WHERE NOT ({holds})"
)

# PostgreSQL: a function per guard that refuses (aborting the transaction) when it is stale. A
# statement in the one-message transaction is planned on every run, and this one's planning (its
# four subqueries) cost the server 0.15-0.2 ms a batch where running it costs 0.03; PL/pgSQL
# keeps the plan of its query for the connection's life.
_HOLDS_FUNCTION = (
    "CREATE OR REPLACE FUNCTION {name}(_id text, _oid uuid, _workspace text, _version bigint) RETURNS boolean "
    "LANGUAGE plpgsql AS $f$ BEGIN IF {holds} THEN RETURN true; END IF; "
    "RAISE EXCEPTION USING MESSAGE = '{failed}'; END $f$"
)


class StaleCaller(Exception):
    """A guard failed in the recording transaction: nothing was recorded; judge again."""


def _holds(dialect, events_table: str, **guard: str) -> str:
    tables = {name: dialect.table(name) for name in ("tokens", "chain", "changes")}
    return HOLDS.format(events=dialect.library_table(events_table), **tables, **guard)


def guard_function(dialect, events_table: str) -> str:
    """The name of the PostgreSQL function checking one guard against `events_table`."""
    return dialect.table(f"guard_holds_{events_table}")


def guard_function_statement(dialect, events_table: str) -> str:
    """The function (created, or replaced by this release's, at every open of the store)."""
    holds = _holds(dialect, events_table, id="_id", oid="_oid", workspace="_workspace", version="_version")
    template = _HOLDS_FUNCTION.replace("{holds}", holds).replace("{failed}", GUARD_FAILED)
    return dialect.sql(template.replace("{name}", guard_function(dialect, events_table)))


def _distinct(guards) -> list[tuple]:
    return sorted({(g.token, g.workspace, g.version) for g in guards})


def stale_count_statement(dialect, events_table: str, guards) -> tuple[str, tuple]:
    """SQLite's count of stale guards among these (distinct), and its parameters."""
    distinct = _distinct(guards)
    values = ", ".join(["(%s, %s, %s, %s)"] * len(distinct))
    holds = _holds(dialect, events_table, id="g.id", oid="g.oid", workspace="g.workspace", version="g.version")
    template = _STALE_COUNT.replace("{holds}", holds).replace("{guards}", values)
    return dialect.sql(template), tuple(v for t, w, n in distinct for v in (t, UUID(t).hex, w, n))


def guards_check_statement(dialect, events_table: str, guards) -> tuple[str, tuple]:
    """PostgreSQL's check of these guards (distinct), refusing at the first stale one."""
    distinct = _distinct(guards)
    call = f"{guard_function(dialect, events_table)}(%s, %s, %s, %s)"
    return "SELECT " + ", ".join([call] * len(distinct)), tuple(v for t, w, n in distinct for v in (t, UUID(t), w, n))


def is_stale(error: BaseException | None) -> bool:
    """A failed guard: raised as itself on SQLite, as the database's refusal on PostgreSQL."""
    return isinstance(error, StaleCaller) or (error is not None and GUARD_FAILED in str(error))
