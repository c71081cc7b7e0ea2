"""How a read-model table's disagreement with the chain is reported (like a chain failure)."""

from __future__ import annotations


def table_failure(checked: int, problem: str, table: str, what: str, how: str, record: dict) -> dict:
    return {
        "ok": False,
        "checked": checked,
        "problem": problem,
        "record": record,
        "detail": f"the {table} table {how}: {what}",
    }
