"""Console sessions: one aggregate per sign-in, so that what lets a browser in is a sealed fact.

The browser's cookie carries only a random session id; the aggregate's id is derived from that
id's SHA-256 digest (a reader of the store cannot sign in with it), and its events say which
token signed in, until when, and when it was signed out. Expiry is data worked out by the
application (the clock is read there, never here)."""

from __future__ import annotations

from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate, event

_NAMESPACE = uuid5(NAMESPACE_URL, "https://runcode-policy/console-sessions")


def console_session_id(session_digest: str) -> UUID:
    return uuid5(_NAMESPACE, session_digest)


class ConsoleSession(Aggregate):
    """Started by signing in with a token of the workspace; ended by signing out (final)."""

    TOPIC = "runcode_policy:ConsoleSession"

    class Created(Aggregate.Created):
        # Unused base "created" class; the library requires an explicit topic on it too.
        TOPIC = "runcode_policy:ConsoleSession.Created"

    @staticmethod
    def create_id(session_digest: str, **_: object) -> UUID:
        return console_session_id(session_digest)

    @event("Started", topic="runcode_policy:ConsoleSession.Started")
    def __init__(self, session_digest: str, workspace: str, token_id: str, expires_at: str):
        # The digest only names the aggregate; `expires_at` is an RFC 3339 instant.
        self.workspace = workspace
        self.token_id = token_id
        self.expires_at = expires_at
        self.ended = False

    def end(self) -> None:
        if not self.ended:
            self._end()

    @event("Ended", topic="runcode_policy:ConsoleSession.Ended")
    def _end(self) -> None:
        self.ended = True
