"""Read models with one row per sealed event (decisions, deliveries) held against those events:
every row must equal what its sealed event says, and every sealed event must have its row.
Rows whose events still wait for the sealer are left for the next check."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from application.chain import stored
from application.chain.links import as_uuid
from application.chain.readmodels.failures import Difference, differs, first_difference, table_failure
from application.store.chain import ChainStore

PAGE = 1000


@dataclass(frozen=True)
class OneRowPerEvent:
    table: str  # as application.store.schema names it
    topic: str  # the sealed event each row is written from
    noun: str  # how a failure names a row ("decision 5f0c...")
    rows: Callable[[ChainStore, str, str, int], list[dict]]  # (store, workspace, after id, limit), by id
    # (store, row, the event's stored state) -> (what the event makes of each column, what the row holds)
    values: Callable[[ChainStore, dict, dict], tuple[dict, dict]]


def check_rows(kind: OneRowPerEvent, store: ChainStore, read_state, workspace: str, checked: int) -> dict | None:
    """None when the table agrees with the chain; else the first disagreement."""
    after, position = "", store.position()
    while rows := kind.rows(store, workspace, after, PAGE):
        found = store.sealed_events([_oid(kind, store, r, workspace) for r in rows])
        # in this workspace's chain: a row moved here from another workspace was sealed elsewhere
        sealed = {
            str(as_uuid(r["originator_id"])): r
            for r in found
            if r["topic"] == kind.topic and r["workspace"] == workspace
        }
        for row in rows:
            event = sealed.get(row["id"])
            if event is None:
                at = store.stored_position(_oid(kind, store, row, workspace))
                if at is None or at <= position:  # pending events are the sealer's, not a tamperer's
                    return _failure(
                        kind, checked, "inserted", row["id"], None, f"holds a {kind.noun} no sealed event records"
                    )
            elif (altered := _altered(kind, store, row, read_state(event["state"]), checked, event["seq"])) is not None:
                return altered
        after = rows[-1]["id"]
    return _missing_row(kind, store, workspace, checked)


def event_time(state: dict) -> datetime:
    """When a stored event was made, as the library stored it."""
    return datetime.fromisoformat(state["timestamp"]["_data_"])


def row_time(store: ChainStore, value):
    """A row's instant as the store holds it; the value itself where it is not one (so it is shown)."""
    try:
        return store.dialect.from_ts(value)
    except (AttributeError, TypeError, ValueError):
        return value


def _altered(
    kind: OneRowPerEvent, store: ChainStore, row: dict, state: dict | None, checked: int, seq: int
) -> dict | None:
    """The row's first column that differs from its sealed event, as a failure; None when none does."""
    try:
        expected, found = kind.values(store, row, state)
    except (AttributeError, KeyError, TypeError, ValueError):  # a state that cannot be read agrees with no row
        return _failure(kind, checked, "altered", row["id"], seq, "differs from its sealed event, which cannot be read")
    difference = first_difference(expected, found)
    if difference is None:
        return None
    how = differs(difference, "its sealed event", "the event says")
    return _failure(kind, checked, "altered", row["id"], seq, how, difference)


def _missing_row(kind: OneRowPerEvent, store: ChainStore, workspace: str, checked: int) -> dict | None:
    """A sealed event whose row is gone."""
    after = 0
    while rows := store.sealed_of_topic(workspace, kind.topic, after, PAGE):
        ids = [str(as_uuid(r["originator_id"])) for r in rows]
        present = store.present_ids(kind.table, workspace, ids)
        for row, row_id in zip(rows, ids, strict=True):
            if row_id not in present:
                return _failure(kind, checked, "deleted", row_id, row["seq"], f"lacks a {kind.noun} the chain seals")
        after = rows[-1]["seq"]
    return None


def _oid(kind: OneRowPerEvent, store: ChainStore, row: dict, workspace: str):
    """The row's id as the store spells an originator id (`Unreadable` when it is no UUID)."""
    return store.oid(stored.uuid(row["id"], f"rcp_{kind.table}", f"a row of workspace {workspace!r}", "id"))


def _failure(
    kind: OneRowPerEvent,
    checked: int,
    problem: str,
    row_id: str,
    seq: int | None,
    how: str,
    difference: Difference | None = None,
) -> dict:
    record = {"seq": seq, "originator_id": row_id, "originator_version": 1, "topic": kind.topic}
    return table_failure(checked, problem, kind.table, {"id": row_id}, f"{kind.noun} {row_id}", how, record, difference)
