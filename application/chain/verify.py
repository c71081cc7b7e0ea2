"""Verification: recompute a workspace's chain from the stored events and hold it against the
signed checkpoints. The answer names the first record that does not verify and what happened to
it (altered, deleted, inserted, reordered, truncated), or says how many records were checked.

Nothing from the chain tables is trusted: their hashes are only compared with what the stored
bytes hash to now, and a chain table rewritten to match altered events still has to meet every
signed head, which only the signing key can make.
"""

from __future__ import annotations

from application.chain import stored
from application.chain.agreement import first_disagreement, head_problem, position_disagreement
from application.chain.links import GENESIS, checkpoint_message, event_hash, link_hash, unlike_stored
from application.chain.sealer import UNATTRIBUTED
from application.chain.signing import signature_valid
from application.store.chain import ChainStore

PAGE = 2000
# What verification can find wrong, first one named (the API publishes this closed set).
PROBLEMS = (
    "altered",
    "deleted",
    "inserted",
    "reordered",
    "truncated",
    "signature",
    "checkpoint-mismatch",
    "tree",
    "another-log",
)


def verify(store: ChainStore, read_workspace, workspace: str, checkpoints: list[dict], keys: dict) -> dict:
    """`checkpoints`: every checkpoint to hold the chain against (the store's and any copied out);
    `keys`: key id -> trusted public key."""
    heads: dict[int, list[dict]] = {}
    for checkpoint in checkpoints:
        problem = signature_problem(checkpoint, workspace, keys)
        if problem:
            return _failure(0, "signature", problem, {"seq": checkpoint.get("seq")})
        heads.setdefault(checkpoint["seq"], []).append(checkpoint)
    # Read in the walk's snapshot (`AuditChain.verify`): what was committed and not sealed in it
    # counts as unsealed.
    position = store.position()
    walk = _Walk(store, workspace, heads, position)
    failure = walk.run()
    if failure is None:
        failure = (
            _truncation(walk, heads)
            or _bookkeeping(store, workspace, walk.checked)
            or _inserted(store, read_workspace, workspace, walk.checked)
        )
    if failure is not None:
        return failure
    return {
        "ok": True,
        "checked": walk.checked,
        "head": {"seq": walk.seq, "link": walk.link},
        "checkpoints": len(checkpoints),
        "unsealed": store.pending(position),
    }


def signature_problem(checkpoint: dict, workspace: str, keys: dict) -> str | None:
    seq = checkpoint.get("seq")
    if checkpoint.get("workspace") != workspace:
        return f"checkpoint {seq} belongs to workspace {checkpoint.get('workspace')!r}, not {workspace!r}"
    key = keys.get(checkpoint.get("key_id"))
    if key is None:
        return f"checkpoint {seq} is signed by key {checkpoint.get('key_id')!r}, which is not trusted"
    message = checkpoint_message(workspace, seq, checkpoint["head"], checkpoint["at"])
    if not signature_valid(key, checkpoint.get("signature") or "", message):
        return (
            f"checkpoint {seq} (signed at {checkpoint['at']}) has a signature that does not verify: forged or altered"
        )
    return None


class _Walk:
    """The chain rows in order, each held against the event it sealed and the signed heads."""

    def __init__(self, store: ChainStore, workspace: str, heads: dict[int, list[dict]], position: int | None):
        self.store, self.workspace, self.heads, self.position = store, workspace, heads, position
        self.seq, self.link, self.checked, self.last_notification = 0, GENESIS, 0, 0

    def run(self) -> dict | None:
        while True:
            rows = self.store.walk(self.workspace, self.seq, PAGE)
            for row in rows:
                try:
                    failure = self.step(self.read(row))
                except stored.Unreadable as unreadable:
                    failure = self.fail("altered", f"{unreadable}: it was altered", stored.record(row))
                if failure is not None:
                    return failure
            if len(rows) < PAGE:
                return None

    def read(self, row: dict) -> dict:
        """The chain row's own values, each of its kind (`Unreadable` names the one that is not)."""
        table, at = "rcp_chain", f"record {stored.shown(row['seq'])} of {self.workspace!r}"
        return row | {
            "seq": stored.integer(row["seq"], table, at, "seq", least=1),
            "notification_id": stored.integer(row["notification_id"], table, at, "notification_id"),
            "originator_id": stored.uuid(row["originator_id"], table, at, "originator_id"),
            "originator_version": stored.integer(row["originator_version"], table, at, "originator_version", least=1),
        }

    def step(self, row: dict) -> dict | None:
        record = stored.record(row)
        if row["seq"] != self.seq + 1:
            return self.fail(
                "deleted",
                f"chain record {self.seq + 1} is missing (the chain jumps from {self.seq} to {row['seq']})",
                {"seq": self.seq + 1},
            )
        if row["stored_notification_id"] is None:
            return self.fail(
                "deleted", f"record {row['seq']} ({stored.named(record)}) was deleted from the store", record
            )
        if row["stored_notification_id"] != row["notification_id"] or row["notification_id"] <= self.last_notification:
            return self.moved(row, record)
        digest = event_hash(row["originator_id"], row["originator_version"], row["topic"], row["state"])
        if digest != row["event_hash"]:
            how = "bytes no longer hash to the sealed value" if digest else self.unlike(row)
            return self.fail(
                "altered", f"record {row['seq']} ({stored.named(record)}) was altered: its stored {how}", record
            )
        link = link_hash(self.workspace, row["seq"], self.link, digest)
        if link != row["link"]:
            return self.fail(
                "altered",
                f"record {row['seq']}: the chain's stored link differs from the one "
                "recomputed from the store (the chain table was rewritten)",
                record,
            )
        self.seq, self.link, self.last_notification = row["seq"], link, row["notification_id"]
        self.checked += 1
        return self.against_checkpoints(record)

    def unlike(self, row: dict) -> str:
        """Which of the stored event's values is of no kind the library stores, and where."""
        column, value, kind = unlike_stored(row["originator_id"], row["originator_version"], row["topic"], row["state"])
        if column == "state" and isinstance(value, str):
            return "state is not bytes (stored as text)"
        return f"{column} is {stored.shown(value)} in {self.store.events_table}, not {kind}"

    def moved(self, row: dict, record: dict) -> dict:
        """The record is stored elsewhere than where it was sealed: whatever holds its place now
        was either sealed too (the two were reordered) or never sealed (it was inserted). A record
        that says it sealed a notification past the sealed position is the chain row edited: the
        position's check names it (`application.chain.agreement`), as /readyz does."""
        if isinstance(self.position, int) and row["notification_id"] > self.position:
            found = position_disagreement(self.store)
            if found is not None:
                return self.fail("altered", found.detail, found.record)
        occupant = self.store.event_at(row["notification_id"])
        if (
            occupant is not None
            and self.store.sealed_as(occupant["originator_id"], occupant["originator_version"]) is None
        ):
            intruder = stored.record(occupant) | {"seq": None}
            return self.fail(
                "inserted",
                f"notification {row['notification_id']}, where record {row['seq']} was "
                f"sealed, now holds {stored.named(intruder)}, which no chain sealed: it was "
                "inserted",
                intruder,
            )
        return self.fail(
            "reordered",
            f"record {row['seq']} ({stored.named(record)}) was sealed at notification "
            f"{row['notification_id']} but is stored at {row['stored_notification_id']}",
            record,
        )

    def against_checkpoints(self, record: dict) -> dict | None:
        for checkpoint in self.heads.get(self.seq, ()):
            if checkpoint["head"] != self.link:
                return self.fail(
                    "checkpoint-mismatch",
                    f"checkpoint {self.seq} signed at {checkpoint['at']} does not match the chain "
                    "recomputed from the store: records up to it were altered, inserted, deleted "
                    "or reordered and the chain rewritten to hide it",
                    record,
                )
        return None

    def fail(self, problem: str, detail: str, record: dict) -> dict:
        return _failure(self.checked, problem, detail, record)


def _truncation(walk: _Walk, heads: dict[int, list[dict]]) -> dict | None:
    beyond = sorted(seq for seq in heads if seq > walk.seq)
    if not beyond:
        return None
    checkpoint = heads[beyond[0]][0]
    return _failure(
        walk.checked,
        "truncated",
        f"checkpoint {checkpoint['seq']} signed at {checkpoint['at']} is beyond the chain's end at "
        f"record {walk.seq}: records {walk.seq + 1} to {checkpoint['seq']} were removed",
        {"seq": walk.seq + 1},
    )


def _bookkeeping(store: ChainStore, workspace: str, checked: int) -> dict | None:
    """The sealed position and the heads against the chain (`application.chain.agreement`): this
    workspace's head (read with its chain's last record in one statement: a round sealed after
    the walk moves both), then the position and every other head. Before the search for inserted
    events, which takes the position's word for what was sealed."""
    found = head_problem(workspace, *store.head_and_last(workspace)) or first_disagreement(store)
    return None if found is None else _failure(checked, "altered", found.detail, found.record)


def _inserted(store: ChainStore, read_workspace, workspace: str, checked: int) -> dict | None:
    """A stored event at a position the sealer has passed, in no chain, that belongs here (or to
    no workspace at all): inserted behind the sealer's back."""
    position, after = store.position(), 0
    while True:
        rows = store.unsealed(after, position, PAGE)
        for row in rows:
            owner = read_workspace(row["state"]) or store.origin_workspace(row["originator_id"]) or UNATTRIBUTED
            if owner in (workspace, UNATTRIBUTED):
                record = stored.record(row) | {"notification_id": row["notification_id"]}
                return _failure(
                    checked,
                    "inserted",
                    f"notification {row['notification_id']} ({stored.named(record)}) "
                    "is in the store at a sealed position but in no chain: "
                    "it was inserted",
                    record,
                )
        if len(rows) < PAGE:
            return None
        after = rows[-1]["notification_id"]


def altered(checked: int, detail: str, record: dict) -> dict:
    return _failure(checked, "altered", detail, record)


def _failure(checked: int, problem: str, detail: str, record: dict) -> dict:
    return {"ok": False, "checked": checked, "problem": problem, "detail": detail, "record": record}
