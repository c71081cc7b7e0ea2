"""Group commit for decisions: what concurrent requests ask to record is saved in one transaction.

On PostgreSQL every event-inserting transaction locks the events table, so one transaction per
decision caps throughput near a thousand a second; one `save(*many)` writes tens of thousands.
A request enqueues its decisions and waits until the batch that holds them is durable.

Two promises hold under pressure:
- A request answered 503 is never recorded afterwards. While its decisions wait in the queue the
  asker may withdraw them at its deadline (503, and the writer drops them); once their commit has
  begun, only the commit's outcome can say whether they were recorded, so the asker waits for it
  (the store's own timeouts bound that wait) and answers with what really happened.
- Fairness: requests are committed in arrival order, and a batch holds at most MAX_BATCH_EVENTS
  decisions, so a commit's time is bounded and a large request delays others by one bounded
  commit, not by an unbounded one (the evaluation caps a request at MAX_SPECS decisions).
- Where processes take turns at the store (SQLite: application.store.sqlite), the writer takes
  its turn before it fills a batch, so what is queued while another process writes rides in it.
- Fail fast while the store is out of reach: once a commit found the store not answering (not a
  refusal it answered with: application.store.outage), requests are refused at once for
  COOL_OFF_SECONDS, queued ones included, instead of each waiting out the connection pool's wait
  or its own deadline for the same 503; the first batch after that is the next probe.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from time import monotonic

from eventsourcing.persistence import IntegrityError, InterfaceError, OperationalError

from application.callers import Guard
from application.store.guards import StaleCaller, is_stale
from application.store.outage import did_not_answer
from domain.errors import GovernanceError

MAX_BATCH_EVENTS = 1000
# Below the gate's default timeout (10 s): answer 503 while the asker still listens.
WAIT_SECONDS = 8
COOL_OFF_SECONDS = 1.0  # after the store did not answer, before the next commit tries it again

log = logging.getLogger(__name__)
STORE_DOWN = (OperationalError, InterfaceError)  # retrying a batch piecemeal would not help
QUEUED, COMMITTING, WITHDRAWN = "queued", "committing", "withdrawn"
_DOWN = "the decision store did not answer a moment ago; nothing was recorded"


class StoreUnavailableError(GovernanceError):
    """The decisions could not be recorded: the answer must be treated as a denial (503)."""

    title = "Decision store unavailable"


class AlreadyRecorded(Exception):
    """An aggregate of these is already in the store (a decision whose id names what it decides,
    recorded first by another worker): nothing was recorded; the earlier record stands."""


class _Done:
    """Set once by the writer, waited for by the one asker: a lock held until set. A
    `threading.Event` is a Condition whose set and wait are Python code taking its lock, each a
    turn for the GIL among the request threads; this is one C call each."""

    __slots__ = ("_lock", "_set")

    def __init__(self):
        self._lock = threading.Lock()
        self._lock.acquire()
        self._set = False

    def set(self) -> None:
        if not self._set:
            self._set = True
            self._lock.release()

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout: float = -1) -> bool:
        if self._lock.acquire(timeout=timeout):
            self._lock.release()  # set stays set: a later wait returns at once
            return True
        return self._set


class _Pending:
    __slots__ = ("events", "guard", "done", "error", "state", "lock")

    def __init__(self, events: tuple, guard: Guard | None):
        # The events, not their aggregates: a failed save has already drained an aggregate's
        # pending events, so a retry must save these again, not the (now empty) aggregates.
        self.events = events
        self.guard = guard  # what the transaction must find still true to record these
        self.done = _Done()
        self.error: BaseException | None = None
        self.state = QUEUED
        self.lock = threading.Lock()  # guards `state`: the asker withdraws, the writer claims

    def withdraw(self) -> bool:
        """At the asker's deadline: True if the writer had not begun committing it (it never will)."""
        with self.lock:
            if self.state == QUEUED:
                self.state = WITHDRAWN
            return self.state == WITHDRAWN

    def claim(self) -> bool:
        """For the writer, just before the commit: False if its asker withdrew it."""
        with self.lock:
            if self.state == QUEUED:
                self.state = COMMITTING
            return self.state == COMMITTING


class DecisionWriter:
    def __init__(self, save: Callable[..., object], turn: Callable[[], AbstractContextManager] = nullcontext):
        self._save = save
        self._turn = turn  # the store's turn for this process's writes, where processes take turns
        self._queue: queue.SimpleQueue[_Pending | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._down_until = 0.0  # monotonic time until which requests are refused at once

    def record(self, *aggregates, guard: Guard | None = None, named: bool = False) -> None:
        """Block until these aggregates are durable; raise StoreUnavailableError otherwise,
        StaleCaller when `guard` no longer held, or (`named`) AlreadyRecorded when one of them is
        in the store already (nothing recorded in any of these cases).

        `named`: their ids are worked out from what they record, so a refused insert means that
        record exists. Otherwise their ids are fresh and cannot collide: a refused insert is a
        store that would not record them, and the caller must deny (fail closed)."""
        self.record_events(
            *(e for aggregate in aggregates for e in aggregate.collect_events()), guard=guard, named=named
        )

    def record_events(self, *events, guard: Guard | None = None, named: bool = False) -> None:
        """`record`, for new aggregates' events made without their aggregates."""
        if monotonic() < self._down_until:
            raise StoreUnavailableError(_DOWN)
        pending = _Pending(events, guard)
        self._ensure_started()
        self._queue.put(pending)
        if not pending.done.wait(WAIT_SECONDS):
            if pending.withdraw():
                raise StoreUnavailableError("timed out waiting for the decision store; nothing was recorded")
            pending.done.wait()  # its commit has begun: answer with its outcome, not a guess
        if is_stale(pending.error):
            raise StaleCaller(str(pending.error)) from pending.error
        if named and isinstance(pending.error, IntegrityError):  # retried alone, so this request's own
            raise AlreadyRecorded(str(pending.error)) from pending.error
        if isinstance(pending.error, StoreUnavailableError):
            # refused while the store was down (the commit that found it logged why), or the writer stopped
            raise type(pending.error)(pending.error.detail) from None
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
        carried: _Pending | None = None  # the request that did not fit the last batch goes first
        while True:
            first = carried if carried is not None else self._queue.get()
            if first is None:
                return
            with self._turn():  # then the batch: what queued while another process wrote rides in it
                batch, carried = self._fill([first])
                self._commit(batch)

    def _fill(self, batch: list[_Pending]) -> tuple[list[_Pending], _Pending | None]:
        """Take queued requests in arrival order while the batch has room for all of theirs."""
        size = len(batch[0].events)
        while size < MAX_BATCH_EVENTS:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                self._queue.put(None)  # finish this batch, then stop
                break
            if size + len(item.events) > MAX_BATCH_EVENTS:
                return batch, item
            batch.append(item)
            size += len(item.events)
        return batch, None

    def _commit(self, batch: list[_Pending]) -> None:
        live = [p for p in batch if p.claim()]
        try:
            if live and monotonic() < self._down_until:  # queued before the store was found down
                self._finish(live, StoreUnavailableError(_DOWN))
                return
            error = self._try(live) if live else None
            self._down_until = monotonic() + COOL_OFF_SECONDS if did_not_answer(error) else 0.0
            # Refused whole (the store down, or this instance's clock out of step): so would each one be.
            if error is None or len(live) == 1 or isinstance(error, (*STORE_DOWN, StoreUnavailableError)):
                self._finish(live, error)
                return
            # One bad request (or one out-of-date guard) must not fail its neighbours: one by one.
            for pending in live:
                self._finish([pending], self._try([pending]))
        finally:  # whatever escaped (the thread is stopping), no asker waits for an outcome forever
            self._finish([p for p in live if not p.done.is_set()], StoreUnavailableError("the writer stopped"))

    def _try(self, batch: list[_Pending]) -> Exception | None:
        try:
            guards = tuple(p.guard for p in batch if p.guard is not None)
            self._save(*(e for pending in batch for e in pending.events), guards=guards)
        except Exception as error:  # any failure means "not recorded": the asker must know
            return error
        return None

    @staticmethod
    def _finish(batch: list[_Pending], error: BaseException | None) -> None:
        for pending in batch:
            pending.error = error
            pending.done.set()
