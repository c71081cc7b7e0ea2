"""The decisions table (what `/decisions` answers from) held against the sealed events it was written from.

The chain seals the event log; the API answers `/decisions` from the decisions read model. So that
a row edited, deleted or added there (the outcome an auditor actually reads) is caught too, every
row must equal the record of its sealed `Decision.Recorded` event, and every sealed decision must
have its row.
"""

from __future__ import annotations

import json

from application.chain.readmodels.rows import OneRowPerEvent, check_rows, event_time, row_time
from application.store.chain import ChainStore
from domain.decision import COLUMNS, Decision, DecisionRecord, stored_record


def row_columns(row: dict) -> tuple:
    """A decisions row's own COLUMNS, as `DecisionRecord.columns` gives them (SQLite keeps 0/1)."""
    return tuple(bool(row[c]) if c == "allowed" else row[c] for c in COLUMNS)


def _values(store: ChainStore, row: dict, state: dict) -> tuple[dict, dict]:
    """Every column: the ones `/decisions` filters on (name, kind, reason, sandbox...) as well as
    the record, or an edit there would hide a denial from the auditor's own questions."""
    record = stored_record(state)  # the row was written from the event as replay reads it: upcast
    sealed = {
        "workspace": state.get("workspace"),
        **dict(zip(COLUMNS, DecisionRecord.columns(record), strict=True)),
        "at": event_time(state),
        "record": record,
    }
    shown = {
        "workspace": row["workspace"],
        **dict(zip(COLUMNS, row_columns(row), strict=True)),
        "at": row_time(store, row["at"]),
        "record": _json(row["record"]),
    }
    return sealed, shown


def _json(text: str):
    """The record column's JSON; the text itself where it is not JSON (so it is shown)."""
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


DECISIONS = OneRowPerEvent("decisions", Decision.Recorded.TOPIC, "decision", ChainStore.decision_rows, _values)


def check_decisions(store: ChainStore, read_state, workspace: str, checked: int) -> dict | None:
    """None when the decisions table agrees with the chain; else the first disagreement."""
    return check_rows(DECISIONS, store, read_state, workspace, checked)
