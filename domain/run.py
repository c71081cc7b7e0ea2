"""Runs: one install through the package index, with its own short-lived, index-only token.

A sandbox starts a run before it installs and hands the run's token, not its own, to pip, uv,
npm or pnpm. The run groups that install's decisions, and its expiry is data recorded with it
(the clock is read by the application, never here). Like API tokens, the secret is never stored:
the run's id is derived from the secret's digest, so authenticating is one lookup by id.
"""

from __future__ import annotations

import secrets
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate, event

RUN_SECRET_PREFIX = "rcr_"  # distinct from API tokens' prefix: one lookup decides which table
_NAMESPACE = uuid5(NAMESPACE_URL, "https://runcode-policy/runs")


def reader_key(run: str | None, token: str | None) -> str | None:
    """Whose index reads a decision belongs to, as the read model groups them: its run, or, for an
    API token reading the index without one, `token:<id>` (no run id has that shape)."""
    return run or (f"token:{token}" if token else None)


def new_run_secret() -> str:
    return RUN_SECRET_PREFIX + secrets.token_urlsafe(32)


def run_id(secret_digest: str) -> UUID:
    return uuid5(_NAMESPACE, secret_digest)


class Run(Aggregate):
    """Started by a token of the workspace; its token reads the package index until it expires or
    the run is ended (the gate ends it when the install is over): ending is an event and final."""

    TOPIC = "runcode_policy:Run"

    class Created(Aggregate.Created):
        # Unused base "created" class; the library requires an explicit topic on it too.
        TOPIC = "runcode_policy:Run.Created"

    @staticmethod
    def create_id(secret_digest: str, **_: Any) -> UUID:
        return run_id(secret_digest)

    @event("Started", topic="runcode_policy:Run.Started")
    def __init__(
        self, secret_digest: str, workspace: str, started_by: str, by: str, expires_at: str, context: dict[str, Any]
    ):
        # `expires_at` is an RFC 3339 instant worked out by the application: replay only assigns.
        self.secret_digest = secret_digest
        self.workspace = workspace
        self.started_by = started_by  # the id of the token that started it
        self.by = by  # that token's name
        self.expires_at = expires_at
        self.context = context
        self.ended_by: str | None = None

    def end(self, by: str) -> None:
        if self.ended_by is None:
            self._end(by)

    @event("Ended", topic="runcode_policy:Run.Ended")
    def _end(self, by: str) -> None:
        self.ended_by = by  # the id of the token that ended it
