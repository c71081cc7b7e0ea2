"""Reads that see one snapshot of the store (`audit verify`): while a thread holds one, every read
it makes through the datastore, by any recorder on it (the library's snapshot recorder too), goes
to one connection in one read-only transaction, so a writer or a sealer committing meanwhile is
seen by none of them, and no two of them disagree. Other threads read as usual.

Each store's recorder opens the transaction (`snapshot()`: on PostgreSQL REPEATABLE READ READ
ONLY, on SQLite a read transaction, whose WAL snapshot is taken at its first read) and sends its
datastore's reads to the connection held here. Neither blocks a writer; the cost is the server's
(PostgreSQL's vacuum, SQLite's WAL checkpoints) keeping the rows that snapshot sees until it ends.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Pins:
    """The connection this thread's reads are held to, if any."""

    def __init__(self) -> None:
        self._local = threading.local()

    def held(self) -> Any:
        return getattr(self._local, "connection", None)

    @contextmanager
    def holding(self, connection) -> Iterator[None]:
        self._local.connection = connection
        try:
            yield
        finally:
            self._local.connection = None
