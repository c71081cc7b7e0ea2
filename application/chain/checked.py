"""What authentication reads, checked against the sealed events on every use.

A token's role and revocation, a run's existence, expiry, starter and end, and a console
session's token, expiry and end are taken from their events (each checked against the chain:
`application.chain.facts`), and the read-model row written beside them in the same transaction
must say the same: the two can only differ when someone edited one of them behind the service's
back. Then the caller is refused (fail closed)
and an integrity alarm names the row, the column, what the sealed event says and what was found.
A row with no event behind it (a forged token, run or session) authenticates nobody. It is one round trip
of primary-key seeks, as the table read it replaces was; remembered callers (application.callers)
skip it and are checked again where their decisions are recorded.
"""

from __future__ import annotations

import json
from datetime import datetime

from application.chain.alarms import IntegrityAlarms
from application.chain.facts import Fact, Tampered, checked_facts
from application.store.chain import ChainStore
from application.store.reads import Denials
from domain.run import Run
from domain.session import ConsoleSession
from domain.token import Token


class CheckedReads:
    def __init__(self, store: ChainStore, read_state, alarms: IntegrityAlarms):
        self.store, self.read_state, self.alarms = store, read_state, alarms

    def caller(self, token_id: str, denials: Denials | None = None) -> dict | None:
        """The active token (id, workspace, role, name, secret_digest) with its workspace's head
        version (`head`) and, asked with `denials`, whether there is one (`denied`; else None);
        None when unknown, revoked, or not as sealed."""
        rows = self.store.caller(token_id, denials)
        facts = self._facts("token", f"token {token_id}", rows)
        issued = _first(facts, Token.Issued.TOPIC)
        if issued is None:
            return None
        revoked = _first(facts, Token.Revoked.TOPIC) is not None
        sealed = {k: issued.state.get(k) for k in ("workspace", "name", "role", "secret_digest")}
        found = rows[0] | {"row_revoked": rows[0]["row_revoked_at"] is not None}
        if self._differs("token", "tokens", token_id, sealed | {"revoked": revoked}, found, found["row_id"]):
            return None
        if revoked:
            return None
        denied = None if denials is None else bool(found["denied"])
        return {"id": token_id, **sealed, "head": found["head"], "denied": denied}

    def run(self, run_id: str) -> dict | None:
        """The run as its sealed `Run.Started` says (expiry included), `ended` when a sealed
        `Run.Ended` follows it; None when there is no such event or its row was edited."""
        rows = self.store.run(run_id)
        facts = self._facts("run", f"run {run_id}", rows)
        started = _first(facts, Run.Started.TOPIC)
        if started is None:
            return None
        state = started.state
        sealed = {
            "workspace": state.get("workspace"),
            "started_by": state.get("started_by"),
            "started_by_name": state.get("by"),
            "expires_at": _instant(state.get("expires_at")),
            "context": json.dumps(state.get("context"), sort_keys=True),
            "secret_digest": state.get("secret_digest"),
        }
        found = rows[0] | {"row_expires_at": _instant(rows[0]["row_expires_at"])}
        if self._differs("run", "runs", run_id, sealed, found, found["row_id"]):
            return None
        ended = _first(facts, Run.Ended.TOPIC) is not None
        return {"id": run_id, **sealed, "context": state.get("context") or {}, "ended": ended}

    def session(self, session_id: str) -> dict | None:
        """A console session as its sealed events say (workspace, token_id, expires_at, ended);
        None when there is no such event or its row was edited (revived, extended, moved)."""
        rows = self.store.session(session_id)
        facts = self._facts("session", f"console session {session_id}", rows)
        started = _first(facts, ConsoleSession.Started.TOPIC)
        if started is None:
            return None
        sealed = {
            "workspace": started.state.get("workspace"),
            "token_id": started.state.get("token_id"),
            "expires_at": _instant(started.state.get("expires_at")),
            "ended": _first(facts, ConsoleSession.Ended.TOPIC) is not None,
        }
        found = rows[0] | {
            "row_expires_at": _instant(rows[0]["row_expires_at"]),
            "row_ended": rows[0]["row_ended_at"] is not None,
        }
        if self._differs("session", "console_sessions", session_id, sealed, found, found["row_id"]):
            return None
        return {"id": session_id, **sealed}

    def _facts(self, kind: str, what: str, rows: list[dict]) -> list[Fact]:
        try:
            return checked_facts(rows, self.read_state, what)
        except Tampered as tampered:
            self.alarms.alarm(kind, what, f"{tampered}; it was refused")
            return []

    def _differs(self, kind: str, table: str, key: str, sealed: dict, found: dict, present) -> bool:
        if present is None:
            detail = f"the {table} table has no row for {kind} {key}, which the chain seals; refused"
            self.alarms.alarm(kind, key, detail)
            return True
        for column, expected in sealed.items():
            value = found[f"row_{column}"]
            if value != expected:
                self.alarms.alarm(
                    kind,
                    key,
                    f"the {table} table's row for {kind} {key} differs from its sealed events: {column} is "
                    f"{value!r}, sealed {expected!r}; refused",
                )
                return True
        return False


def _first(facts: list[Fact], topic: str) -> Fact | None:
    return next((f for f in facts if f.topic == topic), None)


def _instant(value) -> datetime | None:
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if isinstance(value, str) else None
