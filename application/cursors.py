"""Opaque pagination cursors: base64url JSON, validated on the way back in."""

from __future__ import annotations

import base64
import binascii
import json

from domain.errors import FieldError, InvalidInputError


def encode(value: list | int) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def decode(cursor: str, shape: type, field: str = "cursor"):
    """The value of a cursor we issued, or a 422 naming the field (never a 500)."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        value = json.loads(raw)
    except (ValueError, binascii.Error, UnicodeDecodeError, TypeError):
        value = None
    if not isinstance(value, shape) or isinstance(value, bool):
        raise refusal(field)
    return value


def refusal(field: str = "cursor") -> InvalidInputError:
    return InvalidInputError("the cursor is not one this service issued",
                             [FieldError(field, "must be a next_cursor value from a previous page")])
