"""A clock a test can move forward: the real time plus an offset the test steps.

Given to `Governance(clock=...)`, it moves every instant the application reads (an exception's
expiry, "now" in a point-in-time answer) without waiting. It never stands still or goes back, so
events the store stamps with the real time stay in the past of the application's "now".
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class SteppableClock:
    def __init__(self) -> None:
        self.offset = timedelta(0)

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.offset

    def step(self, delta: timedelta) -> datetime:
        """Move the clock forward by `delta`; returns the new now."""
        assert delta > timedelta(0), "a clock only moves forward"
        self.offset += delta
        return self()
