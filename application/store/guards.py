"""The recording transaction's check of remembered callers (application.callers): the SQL that
counts stale guards, run after the events table's lock by both stores' recorders, and how its
refusal is told apart from any other store error."""

from __future__ import annotations

from uuid import UUID

GUARD_FAILED = "runcode-policy: a remembered caller is out of date"

# A guard holds when its token is active in its workspace and the version judged is the head.
# Active: the tokens table says so, and neither the event log nor the audit chain holds a token
# event after its issue (its revocation: revocation is final), so a revocation undone in the
# table, or its event deleted, still ends the remembered caller (application.chain.checked).
# One statement for both stores: `{guards}` becomes a VALUES list of (id, originator id as the
# store spells it, workspace, version); `{events}` and `{chain}` are the log and the chain.
STALE_GUARDS = (
    "WITH g(id, oid, workspace, version) AS (VALUES {guards}) SELECT COUNT(*) AS stale FROM g WHERE NOT ("
    "EXISTS (SELECT 1 FROM {tokens} t WHERE t.id = g.id AND t.workspace = g.workspace AND t.revoked_at IS NULL) "
    "AND NOT EXISTS (SELECT 1 FROM {events} e WHERE e.originator_id = g.oid AND e.originator_version > 1) "
    "AND NOT EXISTS (SELECT 1 FROM {chain} k WHERE k.originator_id = g.oid AND k.originator_version > 1) "
    "AND g.version = COALESCE((SELECT c.version FROM {changes} c WHERE c.workspace = g.workspace "
    "ORDER BY c.version DESC LIMIT 1), 0))"
)


class StaleCaller(Exception):
    """A guard failed in the recording transaction: nothing was recorded; judge again."""


def guards_statement(dialect, events_table: str, guards) -> tuple[str, tuple]:
    """The stale-guard count for these guards (distinct), and its parameters."""
    distinct = sorted({(g.token, g.workspace, g.version) for g in guards})
    values = ", ".join(["(%s, %s, %s, %s)"] * len(distinct))
    template = STALE_GUARDS.replace("{guards}", values).replace("{events}", dialect.library_table(events_table))
    template = template.replace("{chain}", dialect.table("chain"))
    oid = (lambda t: UUID(t)) if dialect.schema else (lambda t: UUID(t).hex)  # as each store spells it
    return dialect.sql(template), tuple(v for t, w, n in distinct for v in (t, oid(t), w, n))


def is_stale(error: BaseException | None) -> bool:
    """A failed guard: raised as itself on SQLite, as the database's refusal on PostgreSQL."""
    return isinstance(error, StaleCaller) or (error is not None and GUARD_FAILED in str(error))
