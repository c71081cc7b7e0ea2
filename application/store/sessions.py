"""Console sessions, recorded server-side so that signing out really ends them.

The browser's cookie carries only a random session id; the store keeps its SHA-256 digest (a
reader of the database cannot sign in with it), the token it was signed in with, and when it
expires or was ended. Every console request looks the session up together with its token, so
signing out (this session) or revoking the token (every session made with it) ends it at once,
for every copy of the cookie. Sessions are operational state, not part of the audit record.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime, timedelta

_FIND = (
    "SELECT t.id, t.workspace, t.role, t.name FROM {sessions} s JOIN {tokens} t ON t.id = s.token_id "
    "WHERE s.id = %s AND s.ended_at IS NULL AND s.expires_at > %s AND t.revoked_at IS NULL"
)
_START = "INSERT INTO {sessions} (id, token_id, created_at, expires_at, ended_at) VALUES (%s, %s, %s, %s, NULL)"
_END = "UPDATE {sessions} SET ended_at = %s WHERE id = %s AND ended_at IS NULL"
_PURGE = "DELETE FROM {sessions} WHERE expires_at < %s"


class ConsoleSessions:
    def __init__(self, recorder):
        self.recorder = recorder
        self.dialect = recorder.dialect

    def start(self, token_id: str, lifetime: timedelta) -> str:
        """A new session for this (already authenticated) token; returns the id for the cookie."""
        session_id, now = secrets.token_urlsafe(32), datetime.now(UTC)
        self._run(_PURGE, (self.dialect.ts(now),))  # keep the table to sessions not yet expired
        self._run(_START, (_digest(session_id), token_id, self.dialect.ts(now), self.dialect.ts(now + lifetime)))
        return session_id

    def caller(self, session_id: str) -> dict | None:
        """The signed-in token (id, workspace, role, name), or None once the session is over."""
        now = self.dialect.ts(datetime.now(UTC))
        rows = self.recorder.fetch(self.dialect.sql(_FIND), (_digest(session_id), now))
        return dict(rows[0]) if rows else None

    def end(self, session_id: str) -> None:
        self._run(_END, (self.dialect.ts(datetime.now(UTC)), _digest(session_id)))

    def _run(self, template: str, params: tuple) -> None:
        self.recorder.execute(self.dialect.sql(template), params)


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()
