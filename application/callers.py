"""Callers remembered per process for the evaluate hot path, checked again where it records.

A remembered caller skips the token's read before judging, and the head version's read with it:
the request is judged with the cached rules, and its decisions carry a `Guard` (the token, its
workspace, the policy version judged). The decision writer's transaction checks every guard
after taking the events table's lock, which every Save and every revocation also takes, so the
check sees all of them that committed before it (the check: `application.store.guards`). A
failed guard aborts the transaction: nothing is recorded (`StaleCaller`), and the request is
judged again the slow way, with the token and the head read from the store. So a revoked token
is refused on its next request in every process, and a Save is in force for the next evaluate
in every process, as before; and no decision is ever recorded against a version that was not
the head when it committed.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

# Each remembered caller is a few hundred bytes; past this many (a deployment's sandboxes
# rarely come close) the memory starts again, so a flood of valid tokens cannot grow it.
MAX_REMEMBERED = 4096


@dataclass(frozen=True)
class Guard:
    token: str
    workspace: str
    version: int


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
