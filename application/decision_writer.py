"""Group commit for decisions: what concurrent requests ask to record is saved in one transaction.

On PostgreSQL every event-inserting transaction locks the events table, so one transaction per
decision caps throughput near a thousand a second; one `save(*many)` writes tens of thousands.
A request enqueues its decisions and waits until the batch that holds them is durable.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

from domain.errors import GovernanceError

MAX_BATCH = 1000
WAIT_SECONDS = 30


class StoreUnavailableError(GovernanceError):
    """The decisions could not be recorded: the answer must be treated as a denial (503)."""

    title = "Decision store unavailable"


class _Pending:
    __slots__ = ("aggregates", "done", "error")

    def __init__(self, aggregates: tuple):
        self.aggregates = aggregates
        self.done = threading.Event()
        self.error: BaseException | None = None


class DecisionWriter:
    def __init__(self, save: Callable[..., object]):
        self._save = save
        self._queue: queue.SimpleQueue[_Pending | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def record(self, *aggregates) -> None:
        """Block until these aggregates are durable; raise StoreUnavailableError otherwise."""
        pending = _Pending(aggregates)
        self._ensure_started()
        self._queue.put(pending)
        if not pending.done.wait(WAIT_SECONDS):
            raise StoreUnavailableError("timed out waiting for the decision store")
        if pending.error is not None:
            raise StoreUnavailableError(f"decisions were not recorded: {pending.error}") from pending.error

    def close(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout=WAIT_SECONDS)

    def _ensure_started(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="decision-writer", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < MAX_BATCH:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._queue.put(None)  # finish this batch, then stop
                    break
                batch.append(item)
            self._commit(batch)

    def _commit(self, batch: list[_Pending]) -> None:
        try:
            self._save(*(a for pending in batch for a in pending.aggregates))
        except Exception as error:  # any failure means "not recorded": every waiter must know
            for pending in batch:
                pending.error = error
        for pending in batch:
            pending.done.set()
