"""Telling a Save that lost a race (plan it again) from a store that failed (give up)."""

from __future__ import annotations

from eventsourcing.persistence import IntegrityError, OperationalError

# What a lost race can raise: the version conflict itself, or on PostgreSQL an aborted pipeline
# (the conflict seen at the pipeline's end, not on the events' insert).
SAVE_ERRORS = (IntegrityError, OperationalError)


def lost_race(error: Exception) -> bool:
    """Nothing was written, so the caller may plan again against the state that won."""
    return isinstance(error, IntegrityError) or "pipeline aborted" in str(error)
