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
