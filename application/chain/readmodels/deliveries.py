"""The deliveries table (what a download decision shows as delivered) held against the sealed
`Delivery.Recorded` events it was written from: a failed transfer turned into a served one in
the table alone, or a delivery added or removed there, is named like a tampered event."""

from __future__ import annotations

from application.chain.readmodels.rows import OneRowPerEvent, check_rows, event_time
from application.store.chain import ChainStore
from domain.delivery import Delivery


def _same(store: ChainStore, row: dict, state: dict) -> bool:
    expected = (state["decision"], state["workspace"], state["status"], state["size"], state["sha256"])
    shown = (row["decision"], row["workspace"], row["status"], row["bytes"], row["sha256"])
    return shown == expected and store.dialect.from_ts(row["at"]) == event_time(state)


DELIVERIES = OneRowPerEvent("deliveries", Delivery.Recorded.TOPIC, "delivery", ChainStore.delivery_rows, _same)


def check_deliveries(store: ChainStore, read_state, workspace: str, checked: int) -> dict | None:
    """None when the deliveries table agrees with the chain; else the first disagreement."""
    return check_rows(DELIVERIES, store, read_state, workspace, checked)
