"""Console sessions, server-side and sealed: signing in and out are events, and every console
request reads its session from those events (checked against the chain, `application.chain.
checked`), never from the read-model table alone.

So signing out (this session) or revoking the token (every session made with it) ends it at
once, for every copy of the cookie; and a session revived, extended or moved to another token in
the table by someone with write access to the database lets nobody in (an integrity alarm names
the row) and is named by `audit verify`.
"""

from __future__ import annotations

import secrets
from datetime import timedelta

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import IntegrityError

from application.chain.checked import CheckedReads
from application.clock import Clock
from application.formats import iso
from domain.session import ConsoleSession, console_session_id
from domain.token import digest


class ConsoleSessions:
    def __init__(self, save, get, checked: CheckedReads, clock: Clock):
        self._save, self._get = save, get  # `get`: an aggregate from the repository, by id
        self._checked, self._clock = checked, clock

    def start(self, caller: dict, lifetime: timedelta) -> str:
        """A new session for this (already authenticated) token; returns the id for the cookie."""
        session_id = secrets.token_urlsafe(32)
        expires = iso(self._clock() + lifetime)
        self._save(
            ConsoleSession(
                session_digest=digest(session_id),
                workspace=caller["workspace"],
                token_id=caller["id"],
                expires_at=expires,
            )
        )
        return session_id

    def caller(self, session_id: str) -> dict | None:
        """The signed-in token (id, workspace, role, name), or None once the session is over."""
        found = self._checked.session(str(console_session_id(digest(session_id))))
        if found is None or found["ended"] or found["expires_at"] <= self._clock():
            return None
        token = self._checked.caller(found["token_id"])
        if token is None or token["workspace"] != found["workspace"]:
            return None
        return {k: token[k] for k in ("id", "workspace", "role", "name")}

    def end(self, session_id: str) -> None:
        try:
            session = self._get(console_session_id(digest(session_id)))
        except AggregateNotFoundError:  # no such session: nothing to end
            return
        session.end()
        try:
            self._save(session)
        except IntegrityError:  # ended at the same moment (another copy of the cookie)
            pass
