"""The tokens table (what authentication reads: role, revocation) held against the sealed
`Token.Issued` and `Token.Revoked` events: a role raised, a revocation undone, a token added or
removed in the table alone is named."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from application.chain.links import as_uuid
from application.chain.readmodels.failures import table_failure
from application.store.chain import ChainStore
from domain.token import Token

ISSUED, REVOKED = Token.Issued.TOPIC, Token.Revoked.TOPIC
PAGE = 1000


def check_tokens(store: ChainStore, read_state, workspace: str, checked: int) -> dict | None:
    rows = store.token_rows(workspace)
    events: dict[str, dict[str, dict]] = {}
    for event in store.sealed_events([store.oid(UUID(r["id"])) for r in rows]):
        events.setdefault(str(as_uuid(event["originator_id"])), {})[event["topic"]] = event
    position = store.position()
    for row in rows:
        sealed = events.get(row["id"], {})
        problem = _row_problem(store, read_state, row, sealed, position)
        if problem is not None:
            return _failure(checked, problem, row["id"], sealed.get(ISSUED, {}).get("seq"))
    return _missing_row(store, workspace, checked, {r["id"] for r in rows})


def _row_problem(store: ChainStore, read_state, row: dict, sealed: dict, position: int) -> str | None:
    issued, revoked = sealed.get(ISSUED), sealed.get(REVOKED)
    if issued is None:
        return None if _pending(store, row["id"], 1, position) else "inserted"
    state = read_state(issued["state"]) or {}
    fields = ("secret_digest", "workspace", "name", "role")
    if (
        any(row[f] != state.get(f) for f in fields)
        or row["issued_by"] != state.get("by")
        or not _same_time(store, row["issued_at"], state)
    ):
        return "altered"
    if revoked is None:
        revoked_in_table = row["revoked_at"] is not None or row["revoked_by"] is not None
        if revoked_in_table and not _pending(store, row["id"], 2, position):
            return "altered"  # revoked (or a revoker named) in the table alone
        return None
    state = read_state(revoked["state"]) or {}
    if (
        row["revoked_at"] is None
        or row["revoked_by"] != state.get("by")
        or not _same_time(store, row["revoked_at"], state)
    ):
        return "altered"  # a sealed revocation the table no longer shows
    return None


def _pending(store: ChainStore, token_id: str, version: int, position: int) -> bool:
    stored = store.stored_position(store.oid(UUID(token_id)), version)
    return stored is not None and stored > position


def _same_time(store: ChainStore, value, state: dict) -> bool:
    try:
        return store.dialect.from_ts(value) == datetime.fromisoformat(state["timestamp"]["_data_"])
    except (KeyError, TypeError, ValueError):
        return False


def _missing_row(store: ChainStore, workspace: str, checked: int, present: set[str]) -> dict | None:
    after = 0
    while rows := store.sealed_of_topic(workspace, ISSUED, after, PAGE):
        for row in rows:
            token_id = str(as_uuid(row["originator_id"]))
            if token_id not in present:
                return _failure(checked, "deleted", token_id, row["seq"])
        after = rows[-1]["seq"]
    return None


def _failure(checked: int, problem: str, token_id: str, seq: int | None) -> dict:
    how = {
        "inserted": "holds a token no sealed event issued",
        "deleted": "lacks a token the chain seals",
        "altered": "differs from its sealed events",
    }[problem]
    record = {"seq": seq, "originator_id": token_id, "originator_version": 1, "topic": ISSUED}
    return table_failure(checked, problem, "tokens", f"token {token_id}", how, record)
