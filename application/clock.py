"""The application's clock: where it reads "now" for what depends on the instant of asking (an
exception's expiry, the exceptions and requests in force, the days of "the last N days").

`Governance(clock=...)` hands one clock to every collaborator that reads the time, so a test can
give a fixed or steppable one; the default is the real clock. Recorded events keep the store
library's own timestamps.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    """Now, in UTC."""
    return datetime.now(UTC)


def clock_skew(recorder, clock: Clock = system_clock) -> float | None:
    """Seconds this machine's clock is ahead of the store's (behind: negative), read against the
    midpoint of the round trip; None for a store with no clock of its own (SQLite: this machine's).
    Every instance stamps what it records and judges expiries by its own clock, so instances
    sharing one PostgreSQL must agree with it."""
    database_now = getattr(recorder, "database_now", None)
    if database_now is None:
        return None
    before = clock()
    theirs = database_now()
    after = clock()
    return ((before + (after - before) / 2) - theirs).total_seconds()
