"""How a read-model table's disagreement with the chain is reported (like a chain failure): with
the row, by its table and key, and for a row that differs the first column that does, what the
sealed events make there and what the table holds."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from application.formats import iso

_ABSENT = object()  # a key one side of a compared JSON value lacks

Difference = tuple[str, Any, Any]  # (column, what the sealed events make, what the table holds)


def first_difference(expected: dict, found: dict) -> Difference | None:
    """The first column, in `expected`'s order, whose value the table does not hold; inside a JSON
    value, the first key that differs (`record.allowed`). Instants are shown as the API shows them."""
    for column in [*expected, *(c for c in found if c not in expected)]:
        value, held = expected.get(column, _ABSENT), found.get(column, _ABSENT)
        if value == held:
            continue
        if isinstance(value, dict) and isinstance(held, dict):
            inner = first_difference(value, held)
            if inner is not None:
                return f"{column}.{inner[0]}", inner[1], inner[2]
        return column, _shown(value), _shown(held)
    return None


def differs(difference: Difference, source: str, says: str) -> str:
    """`source` as the failure's words name what the row is held against ("its sealed event"),
    `says` as they introduce its value ("the event says")."""
    column, expected, found = difference
    return f"differs from {source} in {column}: found {found!r}, {says} {expected!r}"


def table_failure(
    checked: int,
    problem: str,
    table: str,
    key: dict,
    what: str,
    how: str,
    record: dict,
    difference: Difference | None = None,
) -> dict:
    column, expected, found = difference or (None, None, None)
    return {
        "ok": False,
        "checked": checked,
        "problem": problem,
        "record": record,
        "detail": f"the {table} table {how}: {what}",
        "row": {"table": table, "key": key, "column": column, "expected": expected, "found": found},
    }


def _shown(value: Any) -> Any:
    if value is _ABSENT:
        return None
    return iso(value) if isinstance(value, datetime) else value
