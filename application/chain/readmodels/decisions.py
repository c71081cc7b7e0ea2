"""The decisions table (what `/decisions` answers from) held against the sealed events it was written from.

The chain seals the event log; the API answers `/decisions` from the decisions read model. So that
a row edited, deleted or added there (the outcome an auditor actually reads) is caught too, every
row must equal the record of its sealed `Decision.Recorded` event, and every sealed decision must
have its row. Decisions still waiting for the sealer are left for the next check.
"""

from __future__ import annotations

import json
from datetime import datetime
from uuid import UUID

from application.chain.links import as_uuid
from application.chain.readmodels.failures import table_failure
from application.store.chain import ChainStore
from domain.decision import Decision

PAGE = 1000
TOPIC = Decision.Recorded.TOPIC


def check_decisions(store: ChainStore, read_state, workspace: str, checked: int) -> dict | None:
    """None when the decisions table agrees with the chain; else the first disagreement."""
    after, position = "", store.position()
    while rows := store.decision_rows(workspace, after, PAGE):
        sealed = {str(as_uuid(r["originator_id"])): r for r in store.sealed_events([_oid(store, r) for r in rows])}
        for row in rows:
            event = sealed.get(row["id"])
            if event is None:
                stored = store.stored_position(_oid(store, row))
                if stored is None or stored <= position:  # pending events are the sealer's, not a tamperer's
                    return _failure(checked, "inserted", row["id"], None, "holds a decision no sealed event records")
            elif not _same(store, row, read_state(event["state"])):
                return _failure(checked, "altered", row["id"], event["seq"], "differs from its sealed event")
        after = rows[-1]["id"]
    return _missing_row(store, workspace, checked)


def _same(store: ChainStore, row: dict, state: dict | None) -> bool:
    try:
        record = state["record"]
        at = datetime.fromisoformat(state["timestamp"]["_data_"])
    except (KeyError, TypeError, ValueError):
        return False
    return (
        json.loads(row["record"]) == record
        and bool(row["allowed"]) == bool(record.get("allowed"))
        and store.dialect.from_ts(row["at"]) == at
    )


def _missing_row(store: ChainStore, workspace: str, checked: int) -> dict | None:
    """A sealed decision whose row is gone."""
    after = 0
    while rows := store.sealed_of_topic(workspace, TOPIC, after, PAGE):
        ids = [str(as_uuid(r["originator_id"])) for r in rows]
        present = store.decision_ids(ids)
        for row, decision_id in zip(rows, ids, strict=True):
            if decision_id not in present:
                return _failure(checked, "deleted", decision_id, row["seq"], "lacks a decision the chain seals")
        after = rows[-1]["seq"]
    return None


def _oid(store: ChainStore, row: dict):
    return store.oid(UUID(row["id"]))


def _failure(checked: int, problem: str, decision_id: str, seq: int | None, what: str) -> dict:
    record = {"seq": seq, "originator_id": decision_id, "originator_version": 1, "topic": TOPIC}
    return table_failure(checked, problem, "decisions", f"decision {decision_id}", what, record)
