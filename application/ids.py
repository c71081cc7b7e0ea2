"""Ids that arrive as text (URL paths, CLI arguments): a UUID, or None for anything else."""

from __future__ import annotations

from uuid import UUID


def parse_uuid(text) -> UUID | None:
    try:
        return UUID(text)
    except (ValueError, TypeError, AttributeError):
        return None
