"""Rows bound client-side into SQL text, as psycopg's `ClientCursor.mogrify` binds them, faster.

On PostgreSQL a recording is one simple-query message (application.store.postgres), so every
row it writes (events, decisions, rollups) and every link the sealer writes is rendered into
the text. `mogrify` renders each value through psycopg's adapters, about 0.6 µs of Python per
value: a tenth of a worker's GIL time under the evaluate load, on the group-commit writer's
thread. The few types this store writes are rendered here, byte for byte as psycopg renders
them; a row with any other value (a float, a naive datetime, a text with a NUL, which psycopg
refuses) and a template with anything but plain `%s` placeholders go to `mogrify` whole.

A text is quoted as libpq's PQescapeLiteral quotes it: quotes doubled and, when there is a
backslash, backslashes doubled in an `E''` literal, so it means the same whatever the server's
`standard_conforming_strings`. That is only sound in an encoding where no multi-byte character
holds a quote or a backslash byte: the fast path is taken for UTF-8 connections only.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime
from functools import lru_cache
from uuid import UUID

Bind = Callable[[str, tuple], str]  # (template, row) -> the template with the row's literals


def _text(value: str) -> str | None:
    if "\x00" in value:
        return None  # psycopg's own refusal
    if "\\" in value:
        return " E'" + value.replace("\\", "\\\\").replace("'", "''") + "'"
    return "'" + value.replace("'", "''") + "'"


def _int(value: int) -> str:
    return str(value) if value >= 0 else " " + str(value)  # a space: `- -1` must not become `--1`


def _datetime(value: datetime) -> str | None:
    return _utc(value) if value.tzinfo is UTC else None


@lru_cache(maxsize=1024)  # a batch's rows repeat their decisions' instant (one per evaluate)
def _utc(value: datetime) -> str:
    return f"'{value}'::timestamptz"


_RENDER: dict[type, Callable] = {
    str: _text,
    int: _int,
    bool: lambda value: "true" if value else "false",
    type(None): lambda value: "NULL",
    bytes: lambda value: "'\\x" + value.hex() + "'::bytea",
    UUID: lambda value: "'" + value.hex + "'::uuid",
    datetime: _datetime,
    date: lambda value: "'" + value.isoformat() + "'::date",
}
_PARTS: dict[str, list[str] | None] = {}  # template -> its text around each `%s` (None: not plain)
MAX_TEMPLATES = 256


def binder(cursor) -> Bind:
    """How rows are bound for statements sent on `cursor`'s connection (a psycopg ClientCursor)."""
    mogrify = cursor.mogrify
    if cursor.connection.info.encoding != "utf-8":
        return mogrify

    def bind(template: str, row: tuple) -> str:
        parts = plain_parts(template)
        if parts is None or len(parts) != len(row) + 1:
            return mogrify(template, row)
        out = [parts[0]]
        for value, after in zip(row, parts[1:], strict=True):
            render = _RENDER.get(type(value))
            literal = render(value) if render is not None else None
            if literal is None:
                return mogrify(template, row)
            out.append(literal)
            out.append(after)
        return "".join(out)

    return bind


def plain_parts(template: str) -> list[str] | None:
    """The template's text around each `%s`; None when it holds any other `%` (`%%`, `%(name)s`,
    `%b`, `%t`). Remembered per template."""
    try:
        return _PARTS[template]
    except KeyError:
        pass
    plain = "%" not in template.replace("%s", "")  # no `%%`, no `%(name)s`, no `%b`/`%t`
    if len(_PARTS) >= MAX_TEMPLATES:
        _PARTS.clear()
    parts = _PARTS[template] = template.split("%s") if plain else None
    return parts
