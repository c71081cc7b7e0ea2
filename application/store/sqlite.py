"""SQLite application recorder that also writes the read-model tables in the same transaction.

Several processes write one SQLite file under `serve` (its workers, and its own process, which
seals): their write transactions take turns through a lock file (`writer_turns`)."""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import partial
from typing import Any

from eventsourcing.sqlite import SQLiteApplicationRecorder

from application.store import chain, merkle
from application.store.files import PRIVATE_FILE, WRITERS
from application.store.guards import GUARD_FAILED, StaleCaller, stale_count_statement
from application.store.pinned import Pins
from application.store.projection import ManyRows, read_model_statements
from application.store.schema import DDL, SQLITE


class SQLiteGovernanceRecorder(SQLiteApplicationRecorder):
    dialect = SQLITE

    def __init__(self, datastore, *, events_table_name: str = "stored_events"):
        super().__init__(datastore, events_table_name=events_table_name)
        wrapped = getattr(datastore.transaction, "takes_turns", False)  # one turn per transaction, never two
        self.hold_turn: Callable[[], AbstractContextManager] = nullcontext  # an in-memory store: one process
        if not datastore.pool.is_sqlite_memory_mode:
            turns = datastore.pool.db_name + WRITERS  # the lock file beside the store
            if not wrapped:
                datastore.transaction = writer_turns(datastore.transaction, turns)
            self.hold_turn = partial(held_turn, turns)
        self.pins = Pins()
        datastore.transaction = held_or_own(datastore.transaction, self.pins)

    def construct_create_table_statements(self) -> list[str]:
        return (
            super().construct_create_table_statements()
            + [SQLITE.sql(s) for s in DDL]
            + chain.create_statements(SQLITE)
            + merkle.create_statements(SQLITE)
        )

    def _insert_events(self, c, stored_events, **kwargs: Any):
        notification_ids = super()._insert_events(c, stored_events, **kwargs)
        if guards := kwargs.get("guards"):  # remembered callers (application.store.guards)
            c.execute(*stale_count_statement(SQLITE, self.events_table_name, guards))
            if c.fetchone()[0]:
                raise StaleCaller(GUARD_FAILED)  # rolls the transaction back
        for item in read_model_statements(SQLITE, kwargs.get("saved_events", ()), kwargs.get("workspaces", {})):
            for statement, params in item.statements() if isinstance(item, ManyRows) else (item,):
                c.execute(statement, params)
        return notification_ids

    def fetch(
        self, statement: str, params: tuple | list = (), prepare: bool = False, generic: bool = False
    ) -> list[dict]:
        # sqlite3 keeps its own statement cache and plans a statement once: `prepare` and
        # `generic` have nothing to add here.
        with self.datastore.transaction(commit=False) as c:
            c.execute(statement, params)
            return [dict(row) for row in c.fetchall()]

    def execute(self, statement: str, params: tuple | list = ()) -> None:
        """One statement in its own write transaction (state outside the event log)."""
        with self.datastore.transaction(commit=True) as c:
            c.execute(statement, params)

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Every read this thread makes inside sees one snapshot of the store, in one read
        transaction on one connection (application.store.pinned)."""
        if self.pins.held() is not None:  # already in one
            yield
            return
        with self.datastore.get_connection(commit=False) as conn, conn.transaction(commit=False):
            with self.pins.holding(conn):
                yield


def held_or_own(transaction, pins: Pins):
    """`transaction`, but a read (commit=False) in a thread holding a snapshot (`snapshot`) is a
    cursor in that snapshot's transaction."""

    @contextmanager
    def read_or_write(*, commit: bool) -> Iterator:
        held = pins.held()
        if held is None or commit:
            with transaction(commit=commit) as cursor:
                yield cursor
            return
        cursor = held.cursor()
        with cursor:  # closed after, as the library's own
            yield cursor

    read_or_write.takes_turns = getattr(transaction, "takes_turns", False)  # type: ignore[attr-defined]
    return read_or_write


# The lock files whose turn this thread holds (`held_turn`): its transactions inside take no other.
_held = threading.local()


def writer_turns(transaction, path: str):
    """`transaction`, its write transactions taken in turn by every process on this store: each
    locks (flock) the `-writers` file beside it (`path`) first, so a process waiting for its turn
    is woken by the kernel the moment the turn is let go, not by SQLite's busy handler, which
    sleeps 1, 2, 5 ... up to 100 ms between tries. The wait is as long as the holder's transaction: the turn
    is only ever held around this store's own write transactions (whose wait for SQLite's
    lock, should any other program hold it, SQLite's timeout bounds), and a process that dies
    lets it go with its descriptors."""

    @contextmanager
    def turn(*, commit: bool) -> Iterator:
        with held_turn(path) if commit else nullcontext(), transaction(commit=commit) as cursor:
            yield cursor

    turn.takes_turns = True  # type: ignore[attr-defined]
    return turn


@contextmanager
def held_turn(path: str) -> Iterator[None]:
    """This process's turn at the store (the flock of `path`), held by this thread until the end;
    the write transactions it makes meanwhile take no other (`writer_turns`)."""
    holding = _holding()
    if path in holding:
        yield
        return
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE)  # its own lock, per turn
    except OSError:  # no lock file to be had here (a read-only directory): SQLite's lock alone
        descriptor = None
    try:
        if descriptor is not None:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
        holding.add(path)
        yield
    finally:
        holding.discard(path)
        if descriptor is not None:
            os.close(descriptor)  # lets the turn go


def _holding() -> set[str]:
    if not hasattr(_held, "paths"):
        _held.paths = set()
    return _held.paths
