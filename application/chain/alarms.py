"""Integrity alarms: state the service found not to match the sealed record while answering.

What raised one was not used (a snapshot is rebuilt from its events, a token or run or session
refused), so enforcement stays correct; the alarm is for the operator. Each distinct finding is
logged once per process (one ERROR line, not one per request), counted by kind for the
`runcode_policy_integrity_alarms` metric, and the first one is what `/readyz` reports.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable

log = logging.getLogger("runcode_policy.integrity")

# The kinds of alarm (the metric's one label takes only these).
KINDS = ("snapshot", "event", "token", "run", "session", "chain")


class IntegrityAlarms:
    def __init__(self):
        self.counts: Counter = Counter()
        self.first: str | None = None
        self._seen: set[tuple[str, str]] = set()
        self._lock = threading.Lock()
        self.listeners: list[Callable[[str], None]] = []  # the interface's metric

    def alarm(self, kind: str, subject: str, detail: str) -> None:
        """`subject` names the tampered thing (one line per subject); `detail` says what was found."""
        with self._lock:
            if (kind, subject) in self._seen:
                return
            self._seen.add((kind, subject))
            self.counts[kind] += 1
            self.first = self.first or detail
        log.error("integrity alarm: %s", detail)
        for listener in self.listeners:
            listener(kind)
