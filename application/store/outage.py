"""A store that did not answer, told apart from one that answered with a refusal.

PostgreSQL's refusals (a lock timeout, a deadlock, a constraint) carry a SQLSTATE; a server that
cannot be reached does not: the connection was refused, lost, or the pool had none to give within
its wait. Classes 08 (connection exception) and 57P (the server shutting down or starting) are
the server saying the same. Only these mean "retrying now would wait again for nothing".
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from random import random
from time import sleep

import psycopg
from eventsourcing.persistence import InterfaceError, OperationalError
from psycopg_pool import PoolTimeout

_OUTAGE_SQLSTATES = ("08", "57P")


def did_not_answer(error: BaseException | None) -> bool:
    """True when `error`, or what it was raised from, is PostgreSQL out of reach."""
    seen = 0
    while error is not None and seen < 8:  # the library wraps psycopg's error once or twice
        if isinstance(error, psycopg.Error):
            state = error.sqlstate
            return isinstance(error, PoolTimeout) or state is None or state.startswith(_OUTAGE_SQLSTATES)
        error, seen = error.__cause__ or error.__context__, seen + 1
    return False


def pool_had_none(error: BaseException) -> bool:
    """The pool itself had no connection to give within its wait (no connection was lost)."""
    return isinstance(error.__cause__, PoolTimeout)


def retried(max_attempts: int, wait: float) -> Callable:
    """The library's retry of a statement on a lost connection (the next attempt takes a fresh
    one from the pool), except when the pool itself had no connection to give: it has waited its
    whole timeout for one already, and nine more waits would hold every queued decision for
    most of a minute before the 503 that the first one already knows."""

    def decorate(func: Callable) -> Callable:
        @wraps(func)
        def attempt(*args, **kwargs):
            attempts = 1
            while True:
                try:
                    return func(*args, **kwargs)
                except (InterfaceError, OperationalError) as error:
                    if attempts >= max_attempts or pool_had_none(error):
                        raise
                attempts += 1
                sleep(wait * (1 + 0.1 * (random() - 0.5)))  # noqa: S311 (a jitter, as the library's)

        return attempt

    return decorate
