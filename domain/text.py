"""Free text that gets stored (notes, token names, request context): bounded and printable.

PostgreSQL refuses NUL in text, and control characters in an audit trail only hide things, so
both stores refuse them the same way: a 422 naming the field, never a store error.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from domain.errors import FieldError, InvalidInputError
from domain.limits import MAX_LABEL, MAX_NOTE, MAX_QUOTED
from domain.names import check_visible

IDENTITY_KEYS = ("actor", "sandbox")  # context values that name someone, like a token's name
_WRITTEN_BITS = 300  # an integer a refusal writes out: at most 91 digits, within MAX_QUOTED
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # tab, LF and CR are fine in notes
# A label (a token's name, a context value) is one line wherever it is shown: no control
# character at all, C1 (NEL, U+0085) included, nor the line and paragraph separators.
_LABEL_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# A context value is recorded and looked for as sent (the audit log's filters, the Overview's
# sandboxes), so one of blanks alone, or with blanks around it, would be shown as no value or
# as another one (" padded " read as padded) while it names other decisions than both.
CONTEXT_VALUE_RULE = "must not be blank nor begin or end with whitespace"


def noun_for(count: int, singular: str, plural: str | None = None) -> str:
    """The noun for `count` of it, as a sentence says it: `1 checkpoint`, `2 checkpoints` (`plural`
    when it is not the singular and an s: dependency, dependencies)."""
    return singular if count == 1 else plural or singular + "s"


def quoted(value: object) -> str:
    """A caller's value as a refusal quotes it back: text as its repr, any other JSON value in
    JSON's words (`null`, `true`, `[1]`: a caller sent JSON, not Python's None or True); past
    MAX_QUOTED characters cut with an ellipsis (a 404 had echoed an id of 5,000 characters whole)."""
    if isinstance(value, str):
        return f"{value[:MAX_QUOTED]!r}…" if len(value) > MAX_QUOTED else repr(value)
    try:
        text = json.dumps(value)
    except (TypeError, ValueError, RecursionError):  # not JSON, or a number past Python's digits
        text = json_kind(value) if isinstance(value, (int, float, list, dict)) else repr(value)
    return f"{text[:MAX_QUOTED]}…" if len(text) > MAX_QUOTED else text


def json_kind(value: object) -> str:
    """What a JSON value is, in JSON's words: `a string`, `an array`, `null` (never `NoneType`,
    `list` or `dict`), for a refusal saying what was sent instead of what was asked."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    for kind, word in (
        (str, "a string"),
        (int, "a number"),
        (float, "a number"),
        ((list, tuple), "an array"),
        (dict, "an object"),
    ):
        if isinstance(value, kind):
            return word
    return type(value).__name__


def json_words(value: object) -> str:
    """A value sent as JSON as a refusal names what was sent instead of what was asked: a scalar
    as written (`true`, `null`, `5`, text `quoted`), a container by its kind (`an object`, `an
    array`), a number past float's range or a hundred digits as `a number`."""
    if isinstance(value, (dict, list, tuple)):
        return json_kind(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "a number"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > _WRITTEN_BITS:
        return "a number"
    return quoted(value)


def some_of(names: list[str], shown: int) -> str:
    """The first `shown` names, then how many more: `a, b, c and 4 more`."""
    more = len(names) - shown
    return ", ".join(names) if more <= 0 else f"{', '.join(names[:shown])} and {more} more"


def check_text(value: object, field: str, max_length: int = MAX_NOTE) -> str:
    if not isinstance(value, str):
        raise _refuse(field, "must be a string")
    if len(value) > max_length:
        raise _refuse(field, f"must be at most {max_length} characters")
    if _CONTROL.search(value):
        raise _refuse(field, "must not contain NUL or other control characters")
    return value


def check_label(value: object, field: str, max_length: int = MAX_LABEL) -> str:
    """A token's name, a context value or a filter: bounded, printable and on one line."""
    text = check_text(value, field, max_length)
    if _LABEL_CONTROL.search(text):
        raise _refuse(field, "must be one line without control characters (no tab, line break, line separator or NUL)")
    return text


def check_context(context: dict[str, Any] | None) -> dict[str, Any]:
    """The request context recorded with a decision: string (or null) values only, each trimmed
    and not blank (CONTEXT_VALUE_RULE); the ones that name who asked hold no invisible characters
    (domain.names)."""
    context = dict(context or {})
    for key, value in context.items():
        if value is not None:
            check_label(value, f"context.{key}")
            if not value or value != value.strip():
                raise _refuse(f"context.{key}", CONTEXT_VALUE_RULE)
            if key in IDENTITY_KEYS:
                check_visible(value, f"context.{key}")
    return context


def _refuse(field: str, rule: str) -> InvalidInputError:
    return InvalidInputError(f"{field} {rule}", [FieldError(field, rule)])
