"""The deliveries table (what a download decision shows as delivered) held against the sealed
`Delivery.Recorded` events it was written from: a failed transfer turned into a served one in
the table alone, or a delivery added or removed there, is named like a tampered event."""

from __future__ import annotations

from application.chain.readmodels.rows import OneRowPerEvent, check_rows, event_time, row_time
from application.store.chain import ChainStore
from domain.delivery import Delivery


def _values(store: ChainStore, row: dict, state: dict) -> tuple[dict, dict]:
    sealed = {
        "decision": state["decision"],
        "workspace": state["workspace"],
        "status": state["status"],
        "bytes": state["size"],
        "sha256": state["sha256"],
        "at": event_time(state),
    }
    shown = {column: row[column] for column in sealed if column != "at"} | {"at": row_time(store, row["at"])}
    return sealed, shown


DELIVERIES = OneRowPerEvent("deliveries", Delivery.Recorded.TOPIC, "delivery", ChainStore.delivery_rows, _values)


def check_deliveries(store: ChainStore, read_state, workspace: str, checked: int) -> dict | None:
    """None when the deliveries table agrees with the chain; else the first disagreement."""
    return check_rows(DELIVERIES, store, read_state, workspace, checked)
