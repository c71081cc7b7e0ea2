"""Group commit for decisions: what concurrent requests ask to record is saved in one transaction.

On PostgreSQL every event-inserting transaction locks the events table, so one transaction per
decision caps throughput near a thousand a second; one `save(*many)` writes tens of thousands.
A request enqueues its decisions and waits until the batch that holds them is durable.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

from eventsourcing.persistence import InterfaceError, OperationalError

from domain.errors import GovernanceError

MAX_BATCH = 1000
# Below the gate's default timeout (10 s): answer 503 while the asker still listens.
WAIT_SECONDS = 8

log = logging.getLogger(__name__)
STORE_DOWN = (OperationalError, InterfaceError)  # retrying a batch piecemeal would not help


class StoreUnavailableError(GovernanceError):
    """The decisions could not be recorded: the answer must be treated as a denial (503)."""

    title = "Decision store unavailable"


class _Pending:
    __slots__ = ("events", "done", "error", "abandoned", "lock")

    def __init__(self, aggregates: tuple):
        # The events, taken out once: a failed save has already drained an aggregate's pending
        # events, so a retry must save these again, not the (now empty) aggregates.
        self.events = tuple(e for aggregate in aggregates for e in aggregate.collect_events())
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.abandoned = False  # its asker got a 503 already: never record it afterwards
        self.lock = threading.Lock()


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
            with pending.lock:
                pending.abandoned = not pending.done.is_set()
            if pending.abandoned:
                raise StoreUnavailableError("timed out waiting for the decision store")
        if pending.error is not None:
            log.error("decisions not recorded: %r", pending.error)
            raise StoreUnavailableError("the decisions could not be recorded") from pending.error

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
        live = [p for p in batch if not p.abandoned]
        error = self._try(live)
        if error is None or len(live) == 1 or isinstance(error, STORE_DOWN):
            self._finish(live, error)
            return
        for pending in live:  # one bad request must not fail its neighbours: retry one by one
            if not pending.abandoned:
                self._finish([pending], self._try([pending]))

    def _try(self, batch: list[_Pending]) -> Exception | None:
        try:
            self._save(*(e for pending in batch for e in pending.events))
        except Exception as error:  # any failure means "not recorded": the asker must know
            return error
        return None

    @staticmethod
    def _finish(batch: list[_Pending], error: BaseException | None) -> None:
        for pending in batch:
            with pending.lock:
                pending.error = error
                pending.done.set()
                if pending.abandoned and error is None:
                    log.warning("decisions recorded after their asker was answered 503")
