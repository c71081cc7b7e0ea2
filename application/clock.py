"""The application's clock: where it reads "now" for what depends on the instant of asking (an
exception's expiry, the exceptions and requests in force, the days of "the last N days").

`Governance(clock=...)` hands one clock to every collaborator that reads the time, so a test can
give a fixed or steppable one; the default is the real clock. Recorded events keep the store
library's own timestamps.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from time import monotonic

from application.decision_writer import StoreUnavailableError

Clock = Callable[[], datetime]
MAX_CLOCK_SKEW = 1.0  # seconds between this machine's clock and PostgreSQL's (NTP keeps them within ms)
CLOCK_CHECK_SECONDS = 10.0  # how often a recording instance reads the store's clock again

log = logging.getLogger(__name__)


class ClockSkewed(StoreUnavailableError):
    """This instance's clock disagrees with the store's: it records nothing until they agree."""

    title = "Clock out of step with the store"


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


def skew_refusal(skew: float | None) -> str | None:
    """What is wrong with a clock `skew` seconds off the store's; None within MAX_CLOCK_SKEW."""
    if skew is None or abs(skew) <= MAX_CLOCK_SKEW:
        return None
    way = "ahead of" if skew > 0 else "behind"
    return (
        f"this machine's clock is {abs(skew):.1f} s {way} PostgreSQL's; every instance stamps what it "
        f"records by its own clock, so they must agree within {MAX_CLOCK_SKEW:g} s"
    )


class ClockWatch:
    """The start-up check, kept up while the instance runs: a clock that drifts (NTP stopped, a
    VM resumed) would stamp records out of order with other instances' and judge expiries by the
    wrong instant. Every recording asks `check()`; at most every CLOCK_CHECK_SECONDS one of them
    reads the store's clock (one round trip), and while the two disagree every recording is
    refused (503, nothing recorded) and `/readyz` says why. Events are stamped by the library
    from the system clock, so this watches the system clock whatever `Governance(clock=)` is."""

    def __init__(self, recorder, every: float = CLOCK_CHECK_SECONDS, clock: Clock = system_clock):
        self._recorder, self._every, self._clock = recorder, every, clock
        self._watched = getattr(recorder, "database_now", None) is not None  # SQLite: this machine's clock
        self._next = 0.0
        self._lock = threading.Lock()
        self.refusal: str | None = None

    def check(self) -> None:
        """Raise ClockSkewed while this clock and the store's disagree."""
        if not self._watched:
            return
        if monotonic() >= self._next and self._lock.acquire(blocking=False):  # others keep the last verdict
            try:
                self._next = monotonic() + self._every
                refusal = skew_refusal(clock_skew(self._recorder, self._clock))
            except Exception:  # the store did not answer: the recording itself will say so
                refusal = self.refusal
            finally:
                self._lock.release()
            if refusal is not None and refusal != self.refusal:
                log.error("%s: nothing is recorded until they agree", refusal)
            elif refusal is None and self.refusal is not None:
                log.warning("this machine's clock agrees with PostgreSQL's again: recording resumed")
            self.refusal = refusal
        if self.refusal is not None:
            raise ClockSkewed(self.refusal + "; nothing was recorded")
