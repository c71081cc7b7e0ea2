"""Read-model rows for requests and exceptions, written in their events' own transaction.

Derived from the domain events of one atomic save (see `access_schema` for the tables), so they
cannot drift from the log. A policy's exception events also get a row in the change index (see
`projection`), which keeps versions, history and the cache's head in step.
"""

from __future__ import annotations

import json
from datetime import datetime

from domain.access import AccessRequest
from domain.policy import Policy

_SQL = {
    "filed": "INSERT INTO {requests} VALUES (%s, %s, %s, %s, 'open', %s, %s, %s, %s, %s, "
    "NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    "asked": "INSERT INTO {request_askers} AS a VALUES (%s, %s, %s, %s, %s, 1, %s, %s, %s) "
    "ON CONFLICT (request_id, token_id) DO UPDATE SET last_at = excluded.last_at, "
    "asks = a.asks + 1, justification = excluded.justification, context = excluded.context",
    "joined": "UPDATE {requests} SET last_asked_at = %s WHERE id = %s",
    "approved": "UPDATE {requests} SET status = 'approved', decided_at = %s, decided_by = %s, "
    "note = %s, exception_id = %s, expires_at = %s, lift_deny = %s WHERE id = %s",
    "rejected": "UPDATE {requests} SET status = 'rejected', decided_at = %s, decided_by = %s, note = %s WHERE id = %s",
    "granted": "INSERT INTO {exceptions} VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, NULL, NULL, NULL, %s)",
    "revoked": "UPDATE {exceptions} SET revoked_version = %s, revoked_at = %s, revoked_by = %s WHERE id = %s",
    "request_revoked": "UPDATE {requests} SET revoked_at = %s WHERE exception_id = %s",
}
_ACCESS_EVENTS = (
    AccessRequest.Filed,
    AccessRequest.Joined,
    AccessRequest.Approved,
    AccessRequest.Rejected,
    Policy.ExceptionGranted,
    Policy.ExceptionRevoked,
)


def access_statements(dialect, events, workspaces: dict) -> list[tuple[str, tuple]]:
    """Rows for request and exception events."""
    rows = []
    for e in events:
        if not isinstance(e, _ACCESS_EVENTS):  # most saves are decisions: no stamp rendered for them
            continue
        at = dialect.ts(e.timestamp)
        if isinstance(e, AccessRequest.Filed):
            rows += _filed(e, at)
        elif isinstance(e, AccessRequest.Joined):
            rows += [("joined", (at, str(e.originator_id))), _asked(e, e.asked, workspaces, at)]
        elif isinstance(e, AccessRequest.Approved):
            rows.append(
                (
                    "approved",
                    (
                        at,
                        e.by,
                        e.note,
                        e.exception_id,
                        _end(dialect, e.expires_at),
                        bool(e.lift_deny),
                        str(e.originator_id),
                    ),
                )
            )
        elif isinstance(e, AccessRequest.Rejected):
            rows.append(("rejected", (at, e.by, e.note, str(e.originator_id))))
        elif isinstance(e, Policy.ExceptionGranted):
            rows.append(
                (
                    "granted",
                    (
                        e.exception_id,
                        workspaces[e.originator_id],
                        e.language,
                        e.name,
                        e.originator_version - 1,
                        at,
                        e.by,
                        e.note,
                        _end(dialect, e.expires_at),
                        e.request_id,
                        bool(e.lifts_deny),
                    ),
                )
            )
        elif isinstance(e, Policy.ExceptionRevoked):
            rows += [
                ("revoked", (e.originator_version - 1, at, e.by, e.exception_id)),
                ("request_revoked", (at, e.exception_id)),
            ]
    return [(dialect.sql(_SQL[kind]), params) for kind, params in rows]


def _filed(e, at) -> list[tuple[str, tuple]]:
    asked = e.asked
    request = (
        str(e.originator_id),
        e.workspace,
        e.language,
        e.name,
        at,
        asked["by"],
        asked["justification"],
        json.dumps(asked["context"], sort_keys=True),
        at,
    )
    return [("filed", request), _asked(e, asked, {e.originator_id: e.workspace}, at)]


def _asked(e, asked: dict, workspaces: dict, at) -> tuple[str, tuple]:
    return (
        "asked",
        (
            str(e.originator_id),
            asked["token_id"],
            workspaces[e.originator_id],
            at,
            at,
            asked["by"],
            asked["justification"],
            json.dumps(asked["context"], sort_keys=True),
        ),
    )


def _end(dialect, expires_at: str | None):
    return None if expires_at is None else dialect.ts(datetime.fromisoformat(expires_at))
