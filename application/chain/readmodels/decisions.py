"""The decisions table (what `/decisions` answers from) held against the sealed events it was written from.

The chain seals the event log; the API answers `/decisions` from the decisions read model. So that
a row edited, deleted or added there (the outcome an auditor actually reads) is caught too, every
row must equal the record of its sealed `Decision.Recorded` event, and every sealed decision must
have its row.
"""

from __future__ import annotations

import json

from application.chain.readmodels.rows import OneRowPerEvent, check_rows, event_time
from application.store.chain import ChainStore
from domain.decision import COLUMNS, Decision, DecisionRecord, stored_record


def row_columns(row: dict) -> tuple:
    """A decisions row's own COLUMNS, as `DecisionRecord.columns` gives them (SQLite keeps 0/1)."""
    return tuple(bool(row[c]) if c == "allowed" else row[c] for c in COLUMNS)


def _same(store: ChainStore, row: dict, state: dict) -> bool:
    """Every column: the ones `/decisions` filters on (name, kind, reason, sandbox...) as well as
    the record, or an edit there would hide a denial from the auditor's own questions."""
    record = stored_record(state)  # the row was written from the event as replay reads it: upcast
    columns = row_columns(row)
    return (
        json.loads(row["record"]) == record
        and row["workspace"] == state.get("workspace")
        and columns == DecisionRecord.columns(record)
        and store.dialect.from_ts(row["at"]) == event_time(state)
    )


DECISIONS = OneRowPerEvent("decisions", Decision.Recorded.TOPIC, "decision", ChainStore.decision_rows, _same)


def check_decisions(store: ChainStore, read_state, workspace: str, checked: int) -> dict | None:
    """None when the decisions table agrees with the chain; else the first disagreement."""
    return check_rows(DECISIONS, store, read_state, workspace, checked)
