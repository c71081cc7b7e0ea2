"""The chain's own bookkeeping held against the chain: what each sealing round builds on.

- The sealed position (`rcp_chain_position`) must be the newest notification the chain seals.
  Moved back, a round would seal events again (refused by the chain's unique keys), and an event
  inserted at a passed position would pass as not yet sealed. Moved forward, the events committed
  in between would never be sealed: they could be rewritten at leisure and sealed as rewritten
  once the position was put back, while checkpoints went on being signed without them.
- Each workspace's head (`rcp_chain_heads`) must be its chain's last record: a head moved back
  would have the next round collide with the chain, one moved on would leave a gap in it, an
  edited link would start the next record from a link the chain does not hold.

Equality, not a bound, so no forged value passes. Found otherwise, nothing is sealed: the sealer
stops with an integrity alarm, an on-demand checkpoint is `503`, and `/readyz` and `audit verify`
name it, until the table is restored.
"""

from __future__ import annotations

from application.chain.stored import integer, named, record, shown
from application.decision_writer import StoreUnavailableError
from application.store.chain import ChainStore

STOPS = "nothing is sealed until it is restored"


class Disagrees(StoreUnavailableError):
    """The position or a head does not agree with the chain. `record` is the verifier's failed record."""

    title = "Audit sealing stopped"

    def __init__(self, detail: str, record: dict):
        super().__init__(detail)
        self.record = record


def position_problem(position, sealed) -> Disagrees | None:
    """`position`: the row's value (None: no row); `sealed`: the newest notification the chain
    seals, 0 when it seals none."""
    said = "the sealer's position (rcp_chain_position)"
    sealed = integer(sealed, "rcp_chain", "its newest record", "notification_id")
    if position == sealed and position is not None:
        return None
    if position is None:
        return Disagrees(f"{said} has no row: it was deleted, and {STOPS}", {"notification_id": sealed})
    if not isinstance(position, int) or isinstance(position, bool):
        detail = f"{said} is {shown(position)}, not notification {sealed}, the newest the chain seals: {STOPS}"
        return Disagrees(detail, {"notification_id": sealed})
    if position < sealed:
        return Disagrees(
            f"{said} is notification {position}, behind notification {sealed}, which the chain already seals: "
            f"it was moved back, and {STOPS}",
            {"notification_id": sealed},
        )
    return Disagrees(
        f"{said} is notification {position}, ahead of notification {sealed}, the newest the chain seals: it was "
        f"moved forward (what was committed in between would never be sealed), or the chain's newest records were "
        f"removed, and {STOPS}",
        {"notification_id": position},
    )


def head_problem(workspace: str, head: dict | None, last: dict | None) -> Disagrees | None:
    """`head`: the workspace's rcp_chain_heads row, `last`: its chain's last record (each with
    `seq` and `link`; None where there is none)."""
    if _pair(head) == _pair(last):
        if last is not None:
            integer(last["seq"], "rcp_chain", f"the last record of {workspace!r}", "seq", least=1)
        return None
    said = "has no row" if head is None else f"says record {_said(head)}"
    holds = "holds no record" if last is None else f"ends at record {_said(last)}"
    return Disagrees(
        f"the chain head of {workspace!r} (rcp_chain_heads) {said}, but its chain {holds}: the table was "
        f"edited, and {STOPS}",
        {"seq": last["seq"] if last is not None and isinstance(last["seq"], int) else None},
    )


def position_disagreement(store: ChainStore) -> Disagrees | None:
    """The position against the chain's newest notification, both read in one statement (one
    snapshot: a round sealed meanwhile cannot make them seem to disagree). A chain row whose
    notification id was moved past the position is named, not taken for the position moved back."""
    bounds = store.sealed_bounds()
    position, sealed = bounds["position"], bounds["sealed"] or 0
    if isinstance(position, int) and isinstance(sealed, int) and sealed > position:
        for row in store.sealed_at(sealed):  # its event says where it was sealed
            if (moved := _moved_past(row, sealed, position)) is not None:
                return moved
    return position_problem(position, sealed)


def _moved_past(row: dict, sealed: int, position: int) -> Disagrees | None:
    stored_at = row["stored_notification_id"]
    if stored_at is None or stored_at == sealed:
        return None
    found = record(row)
    return Disagrees(
        f"chain record {row['seq']} of {row['workspace']!r} ({named(found)}) says it sealed notification "
        f"{sealed}, past the sealer's position {position}, but its event is stored at notification {stored_at}: "
        "the chain table (rcp_chain) was edited",
        found,
    )


def first_disagreement(store: ChainStore) -> Disagrees | None:
    """The position, then the first head that disagrees with its chain. A head whose row is gone
    is found where its workspace is next sealed or verified (finding it here would read the
    whole chain)."""
    found = position_disagreement(store)
    if found is None and (workspace := store.disagreeing_head()) is not None:
        found = head_problem(workspace, *store.head_and_last(workspace))
    return found


def _said(row: dict) -> str:
    return f"{shown(row['seq'])} with link {shown(row['link'])}"


def _pair(row: dict | None) -> tuple | None:
    return None if row is None else (row["seq"], row["link"])
