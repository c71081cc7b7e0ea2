"""The one retry rule for a Save that lost a race: plan it again against the state that won.

- Retried: only a lost race, the events' own `IntegrityError` (another Save of the same aggregate
  came first; nothing was written). On PostgreSQL too: a Save is one message, not a pipeline
  (`application.store.postgres`), so the conflict is never seen later as an aborted pipeline.
  Anything else the store raises is not a race: it propagates (the store is down: a 503), after
  the PostgreSQL recorder's own tries of a lost connection (`insert_events`, as the library's).
- How many times: `ATTEMPTS` plans in all, then a `ConflictError` ("changing too fast").
- Backoff: a random pause of up to `PAUSE_SECONDS` before planning again, so the winner's readers
  get through rather than every loser replanning at once.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from eventsourcing.persistence import IntegrityError

from application.store.guards import StaleCaller
from domain.errors import ConflictError, FieldError, GovernanceError, InvalidInputError

ATTEMPTS = 50
PAUSE_SECONDS = 0.005
LOST_RACE = IntegrityError


def pause() -> None:
    time.sleep(random.uniform(0, PAUSE_SECONDS))


def saved(save: Callable[..., object], *aggregates) -> bool:
    """Save atomically; False (after the pause) when the Save lost a race, so plan again."""
    try:
        save(*aggregates)
    except LOST_RACE:
        pause()
        return False
    return True


def too_fast(what: str = "the policy", field: str = "expected_version") -> ConflictError:
    """What a caller is told when every attempt lost its race."""
    return ConflictError(
        f"{what} is changing too fast to apply this; try again", [FieldError(field, f"{what} kept moving")]
    )


def once_more_if_stale(call, remembered: bool):
    """`call(remembered)`; when the caller or the version it judged by no longer held (nothing
    was recorded), again reading the token and the head, a few times: Saves may keep landing
    between a judgement and its recording. Then 409, as for a Save that kept losing its race."""
    try:
        return call(remembered)
    except StaleCaller:
        pass
    for _ in range(ATTEMPTS):
        try:
            return call(False)
        except StaleCaller:
            continue
    raise too_fast()


def stale(expected: int, current: int) -> GovernanceError:
    """A version the policy has passed is stale (409: read it again); one it has never been at
    was not read from it (422), so no "it moved on since" is said of it."""
    rule = f"must be the current version, {current}"
    if expected > current:
        return InvalidInputError(
            f"expected_version {expected} is not a version this policy has had (it is at version {current}); "
            "nothing was saved",
            [FieldError("expected_version", f"{rule}: the policy has never been at version {expected}")],
        )
    return ConflictError(
        f"expected_version {expected} is not current ({current}); nothing was saved",
        [FieldError("expected_version", rule)],
    )
