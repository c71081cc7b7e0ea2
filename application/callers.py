"""Callers remembered per process for the evaluate hot path, checked again where it records.

A remembered caller skips the token's read before judging, and the head version's read with it:
the request is judged with the cached rules, and its decisions carry a `Guard` (the token, its
workspace, the policy version judged). The decision writer's transaction checks every guard
after taking the events table's lock, which every Save and every revocation also takes, so the
check sees all of them that committed before it. A failed guard aborts the transaction: nothing
is recorded (`StaleCaller`), and the request is judged again the slow way, with the token and
the head read from the store. So a revoked token is refused on its next request in every
process, and a Save is in force for the next evaluate in every process, as before; and no
decision is ever recorded against a version that was not the head when it committed.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from uuid import UUID

# Each remembered caller is a few hundred bytes; past this many (a deployment's sandboxes
# rarely come close) the memory starts again, so a flood of valid tokens cannot grow it.
MAX_REMEMBERED = 4096
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


@dataclass(frozen=True)
class Guard:
    token: str
    workspace: str
    version: int


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


class Callers:
    """Authenticated callers by token digest (never a secret, never a refusal)."""

    def __init__(self):
        self._known: dict[str, dict] = {}
        self._lock = threading.Lock()

    def get(self, secret_digest: str) -> dict | None:
        return self._known.get(secret_digest)

    def remember(self, secret_digest: str, caller: dict) -> None:
        with self._lock:
            if len(self._known) >= MAX_REMEMBERED:
                self._known.clear()
            self._known[secret_digest] = caller

    def forget(self, secret_digest: str) -> None:
        with self._lock:
            self._known.pop(secret_digest, None)
