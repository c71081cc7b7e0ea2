"""Verification: recompute a workspace's chain from the stored events and hold it against the
signed checkpoints. The answer names the first record that does not verify and what happened to
it (altered, deleted, inserted, reordered, truncated), or says how many records were checked.

Nothing from the chain tables is trusted: their hashes are only compared with what the stored
bytes hash to now, and a chain table rewritten to match altered events still has to meet every
signed head, which only the signing key can make.
"""

from __future__ import annotations

from application.chain.links import GENESIS, as_uuid, checkpoint_message, event_hash, link_hash
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
    rewound = position_failure(store)
    if rewound is not None:
        return rewound
    # Read in the walk's snapshot (`AuditChain.verify`): what was committed and not sealed in it
    # counts as unsealed.
    position = store.position()
    walk = _Walk(store, workspace, heads)
    failure = walk.run()
    if failure is None:
        failure = _truncation(walk, heads) or _inserted(store, read_workspace, workspace, walk.checked)
    if failure is not None:
        return failure
    return {
        "ok": True,
        "checked": walk.checked,
        "head": {"seq": walk.seq, "link": walk.link},
        "checkpoints": len(checkpoints),
        "unsealed": store.pending(position),
    }


def position_failure(store: ChainStore) -> dict | None:
    """The sealed position behind what the chain already seals: `rcp_chain_position` moved back
    (or its row removed). Sealing cannot go on (it would seal those events again), and everything
    the sealer had passed would count as unsealed, so an event inserted there would go unnamed.
    A chain row whose notification id was moved past the position is named instead."""
    bounds = store.sealed_bounds()
    position, sealed = bounds["position"] or 0, bounds["sealed"] or 0
    if sealed <= position:
        return None
    for row in store.sealed_at(sealed):  # or a chain row moved past it: its event says where it was sealed
        stored = row["stored_notification_id"]
        if stored is not None and stored != sealed:
            record = _record(row)
            return _failure(
                0,
                "altered",
                f"chain record {row['seq']} of {row['workspace']!r} ({_name(record)}) says it sealed notification "
                f"{sealed}, past the sealer's position {position}, but its event is stored at notification {stored}: "
                "the chain table (rcp_chain) was edited",
                record,
            )
    return _failure(
        0,
        "altered",
        f"the sealer's position (rcp_chain_position) is notification {position}, behind notification "
        f"{sealed}, which the chain already seals: it was moved back, and nothing is sealed until it is restored",
        {"notification_id": sealed},
    )


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

    def __init__(self, store: ChainStore, workspace: str, heads: dict[int, list[dict]]):
        self.store, self.workspace, self.heads = store, workspace, heads
        self.seq, self.link, self.checked, self.last_notification = 0, GENESIS, 0, 0

    def run(self) -> dict | None:
        while True:
            rows = self.store.walk(self.workspace, self.seq, PAGE)
            for row in rows:
                failure = self.step(row)
                if failure is not None:
                    return failure
            if len(rows) < PAGE:
                return None

    def step(self, row: dict) -> dict | None:
        record = _record(row)
        if row["seq"] != self.seq + 1:
            return self.fail(
                "deleted",
                f"chain record {self.seq + 1} is missing (the chain jumps from {self.seq} to {row['seq']})",
                {"seq": self.seq + 1},
            )
        if row["state"] is None:
            return self.fail("deleted", f"record {row['seq']} ({_name(record)}) was deleted from the store", record)
        if row["stored_notification_id"] != row["notification_id"] or row["notification_id"] <= self.last_notification:
            return self.moved(row, record)
        digest = event_hash(row["originator_id"], row["originator_version"], row["topic"], row["state"])
        if digest != row["event_hash"]:
            how = "bytes no longer hash to the sealed value" if digest else "state is not bytes (stored as text)"
            return self.fail("altered", f"record {row['seq']} ({_name(record)}) was altered: its stored {how}", record)
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

    def moved(self, row: dict, record: dict) -> dict:
        """The record is stored elsewhere than where it was sealed: whatever holds its place now
        was either sealed too (the two were reordered) or never sealed (it was inserted)."""
        occupant = self.store.event_at(row["notification_id"])
        if (
            occupant is not None
            and self.store.sealed_as(occupant["originator_id"], occupant["originator_version"]) is None
        ):
            intruder = _record(occupant) | {"seq": None}
            return self.fail(
                "inserted",
                f"notification {row['notification_id']}, where record {row['seq']} was "
                f"sealed, now holds {_name(intruder)}, which no chain sealed: it was "
                "inserted",
                intruder,
            )
        return self.fail(
            "reordered",
            f"record {row['seq']} ({_name(record)}) was sealed at notification "
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


def _inserted(store: ChainStore, read_workspace, workspace: str, checked: int) -> dict | None:
    """A stored event at a position the sealer has passed, in no chain, that belongs here (or to
    no workspace at all): inserted behind the sealer's back."""
    position, after = store.position(), 0
    while True:
        rows = store.unsealed(after, position, PAGE)
        for row in rows:
            owner = read_workspace(row["state"]) or store.origin_workspace(row["originator_id"]) or UNATTRIBUTED
            if owner in (workspace, UNATTRIBUTED):
                record = _record(row) | {"notification_id": row["notification_id"]}
                return _failure(
                    checked,
                    "inserted",
                    f"notification {row['notification_id']} ({_name(record)}) "
                    "is in the store at a sealed position but in no chain: "
                    "it was inserted",
                    record,
                )
        if len(rows) < PAGE:
            return None
        after = rows[-1]["notification_id"]


def _record(row: dict) -> dict:
    return {
        "seq": row.get("seq"),
        "notification_id": row.get("notification_id"),
        "originator_id": str(as_uuid(row["originator_id"])),
        "originator_version": row["originator_version"],
        "topic": row.get("topic"),
    }


def _name(record: dict) -> str:
    topic = f"{record['topic']} " if record.get("topic") else ""
    return f"{topic}{record['originator_id']} v{record['originator_version']}"


def _failure(checked: int, problem: str, detail: str, record: dict) -> dict:
    return {"ok": False, "checked": checked, "problem": problem, "detail": detail, "record": record}
