"""The tokens table (what authentication reads: role, revocation) held against the sealed
`Token.Issued` and `Token.Revoked` events: a role raised, a revocation undone, a token added or
removed in the table alone is named."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from application.chain import stored
from application.chain.links import as_uuid
from application.chain.readmodels.failures import Difference, differs, first_difference, table_failure
from application.chain.readmodels.rows import event_time, row_time
from application.store.chain import ChainStore
from domain.token import Token

ISSUED, REVOKED = Token.Issued.TOPIC, Token.Revoked.TOPIC
PAGE = 1000


def check_tokens(store: ChainStore, read_state, workspace: str, checked: int) -> dict | None:
    rows = store.token_rows(workspace)
    events: dict[str, dict[str, dict]] = {}
    at = f"a row of workspace {workspace!r}"
    for event in store.sealed_events([store.oid(stored.uuid(r["id"], "rcp_tokens", at, "id")) for r in rows]):
        events.setdefault(str(as_uuid(event["originator_id"])), {})[event["topic"]] = event
    position = store.position()
    for row in rows:
        sealed = events.get(row["id"], {})
        problem = _row_problem(store, read_state, row, sealed, position)
        if problem is not None:
            return _failure(checked, *problem, row["id"], sealed.get(ISSUED, {}).get("seq"))
    return _missing_row(store, workspace, checked, {r["id"] for r in rows})


def _row_problem(
    store: ChainStore, read_state, row: dict, sealed: dict, position: int
) -> tuple[str, Difference | None] | None:
    """(problem, the first column that differs), or None when the row is as its events say."""
    issued, revoked = sealed.get(ISSUED), sealed.get(REVOKED)
    if issued is None:
        return None if _pending(store, row["id"], 1, position) else ("inserted", None)
    found = {c: row[c] for c in ("secret_digest", "workspace", "name", "role", "issued_by", "revoked_by")} | {
        "issued_at": row_time(store, row["issued_at"]),
        "revoked_at": None if row["revoked_at"] is None else row_time(store, row["revoked_at"]),
    }
    state = read_state(issued["state"]) or {}
    expected = {c: state.get(c) for c in ("secret_digest", "workspace", "name", "role")}
    expected |= {"issued_by": state.get("by"), "issued_at": _event_time(state)}
    if revoked is not None:
        state = read_state(revoked["state"]) or {}
        expected |= {"revoked_at": _event_time(state), "revoked_by": state.get("by")}
    elif (row["revoked_at"], row["revoked_by"]) != (None, None) and _pending(store, row["id"], 2, position):
        # its revocation is not sealed yet: the sealer's, not a tamperer's
        expected |= {"revoked_at": found["revoked_at"], "revoked_by": row["revoked_by"]}
    else:
        expected |= {"revoked_at": None, "revoked_by": None}  # a revocation in the table alone differs
    difference = first_difference(expected, found)
    return None if difference is None else ("altered", difference)


def _pending(store: ChainStore, token_id: str, version: int, position: int) -> bool:
    at = store.stored_position(store.oid(UUID(token_id)), version)
    return at is not None and at > position


def _event_time(state: dict) -> datetime | str:
    try:
        return event_time(state)
    except (KeyError, TypeError, ValueError):  # agrees with no row
        return "(an instant that cannot be read)"


def _missing_row(store: ChainStore, workspace: str, checked: int, present: set[str]) -> dict | None:
    after = 0
    while rows := store.sealed_of_topic(workspace, ISSUED, after, PAGE):
        for row in rows:
            token_id = str(as_uuid(row["originator_id"]))
            if token_id not in present:
                return _failure(checked, "deleted", None, token_id, row["seq"])
        after = rows[-1]["seq"]
    return None


def _failure(checked: int, problem: str, difference: Difference | None, token_id: str, seq: int | None) -> dict:
    if difference is not None:
        how = differs(difference, "its sealed events", "the events say")
    else:
        how = "holds a token no sealed event issued" if problem == "inserted" else "lacks a token the chain seals"
    record = {"seq": seq, "originator_id": token_id, "originator_version": 1, "topic": ISSUED}
    return table_failure(checked, problem, "tokens", {"id": token_id}, f"token {token_id}", how, record, difference)
