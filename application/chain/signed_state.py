"""What verification holds against the chain once the chain itself verifies: the signed notes'
roots, the stored Merkle tree proofs are served from, and the stored policy snapshots.

- Each checkpoint's signed note (C2SP checkpoint) must be signed by a trusted key under an
  origin of this workspace, and its root must be the RFC 6962 root recomputed here from the
  chain's event hashes (which the walk has just held against the stored events), never from the
  stored tree. A note re-signed with the key over a false root is named.
- The stored tree's nodes must give that same root at each checkpoint's size: inclusion and
  consistency proofs are read from them.
- Each stored snapshot must hash to the digest its sealed `SnapshotSealed` event holds (the
  check loading a snapshot makes, `application.chain.snapshots`), so a snapshot edited where no
  request has loaded it yet is named too.

A log keeps one origin (`application.chain.proofs`). Before the walk, a copied checkpoint whose
note names an origin none of the store's notes do is named as another log's (it had been called
a rewritten chain); a store's note that is no checkpoint of the workspace (garbled, blanked)
names no origin there, and is named as altered after the walk. After it, a store whose notes
name several origins says which.
"""

from __future__ import annotations

from typing import NamedTuple

from application.chain import notes
from application.chain.merkle import EMPTY_ROOT, leaf_hash, node_hash
from application.chain.snapshots import SnapshotCheck
from application.chain.tree import MerkleTree

PAGE = 5000


def check_notes(tree: MerkleTree, workspace: str, checkpoints: list[dict], keys: dict, checked: int) -> dict | None:
    """`checkpoints` with their `note` (None for one signed before notes were); `keys`: trusted."""
    noted = sorted((c for c in checkpoints if c.get("note") is not None), key=lambda c: c["seq"])
    roots = _roots(tree, workspace, {c["seq"] for c in noted})
    stored_size = tree.size(workspace)
    for checkpoint in noted:
        size, record = checkpoint["seq"], {"seq": checkpoint["seq"]}
        opened = _open(checkpoint["note"], workspace, keys.values())
        if isinstance(opened, Unopened):
            return _failure(checked, opened.problem, f"the signed note of checkpoint {size} {opened.how}", record)
        _, note_size, root = opened
        if note_size != size or root != roots.get(size):
            return _failure(
                checked,
                "checkpoint-mismatch",
                f"the signed note of checkpoint {size} (size {note_size}) has a root that is not the Merkle "
                "root recomputed from the chain: it was signed over another history",
                record,
            )
        if size <= stored_size and tree.root(workspace, size) != root:
            return _failure(
                checked,
                "altered",
                f"the stored Merkle tree differs from the one recomputed from the chain at size {size}: "
                "proofs served from it would not verify (the merkle_nodes table was edited)",
                record,
            )
    differs = tree.first_difference(workspace) if noted else None
    if differs is not None:
        level, idx = differs
        return _failure(
            checked,
            "altered",
            f"the stored Merkle tree's node at level {level}, index {idx} differs from the one recomputed from "
            "the chain (or is gone): proofs served from it would not verify (the merkle_nodes table was edited)",
            {"seq": None},
        )
    return None


def origins(checkpoints: list[dict]) -> list[str]:
    """The origins the checkpoints' signed notes name, in the order of their sizes."""
    found: list[str] = []
    for checkpoint in sorted(checkpoints, key=lambda c: c["seq"]):
        origin = _origin(checkpoint)
        if origin is not None and origin not in found:
            found.append(origin)
    return found


def another_log(stored: list[dict], copied: list[dict]) -> dict | None:
    """The first copied checkpoint of another log than the store's (by the origin its note names)."""
    ours = origins(stored)
    for checkpoint in copied:
        origin = _origin(checkpoint)
        if ours and origin is not None and origin not in ours:
            seq = checkpoint.get("seq")
            return _failure(
                0,
                "another-log",
                f"copied checkpoint {seq} is of another log: its signed note names {origin}, this store's "
                f"checkpoints {', '.join(ours)} (copied from another deployment, or this store's checkpoints "
                "were signed again under another origin); it says nothing about this chain",
                {"seq": seq},
            )
    return None


def _origin(checkpoint: dict) -> str | None:
    """The origin a checkpoint's note names, if it is a checkpoint of the workspace at all: a note
    garbled or blanked in the store names no log (it was altered: `check_notes` says so)."""
    try:
        origin = _parsed(checkpoint.get("note"))[0]
    except notes.NoteError:
        return None
    return origin if _of_workspace(origin, checkpoint.get("workspace")) else None


def _parsed(note) -> tuple[str, int, bytes]:
    """(origin, size, root) of a well-formed note, its signatures unchecked; else NoteError."""
    if not isinstance(note, str):
        raise notes.NoteError("the note is not text")
    return notes.parse_checkpoint(notes.split(note)[0])


def _of_workspace(origin: str, workspace) -> bool:
    """The origin's host part is the deployment's own, so any is accepted."""
    return origin.startswith("runcode-policy/") and origin.endswith(f"/{workspace}")


def check_snapshots(check: SnapshotCheck, snapshots: list, checked: int) -> dict | None:
    """`snapshots`: the workspace policy's stored snapshots (the library's records)."""
    for stored in snapshots:
        problem = check.problem(stored)
        if problem is not None:
            record = {
                "seq": None,
                "originator_id": str(stored.originator_id),
                "originator_version": stored.originator_version,
                "topic": stored.topic,
            }
            return _failure(checked, "altered", f"{problem}: the service will not use it", record)
    return None


def _roots(tree: MerkleTree, workspace: str, sizes: set[int]) -> dict[int, bytes]:
    """The RFC 6962 root at each of `sizes`, from the chain's event hashes in one pass: the right
    edge holds one perfect subtree per set bit of the size so far."""
    roots, edge, size = {0: EMPTY_ROOT} if 0 in sizes else {}, [], 0
    last = max(sizes, default=0)
    while size < last and (hashes := tree.event_hashes(workspace, size, min(PAGE, last - size))):
        for event in hashes:
            digest, height = leaf_hash(event), 0
            while edge and edge[-1][0] == height:  # two subtrees of one height make their parent
                digest, height = node_hash(edge.pop()[1], digest), height + 1
            edge.append((height, digest))
            size += 1
            if size in sizes:
                root = edge[-1][1]
                for _, left in reversed(edge[:-1]):
                    root = node_hash(left, root)
                roots[size] = root
    return roots


class Unopened(NamedTuple):
    problem: str  # as verification names it
    how: str


def _open(note: str, workspace: str, keys) -> tuple[str, int, bytes] | Unopened:
    """(origin, size, root) of a note a trusted key signed under an origin of this workspace; else
    what is wrong."""
    try:
        origin = _parsed(note)[0]
    except notes.NoteError as error:
        return Unopened("altered", f"is not a signed checkpoint ({error}): it was altered")
    if not _of_workspace(origin, workspace):
        return Unopened("signature", f"names origin {origin!r}, not one of workspace {workspace!r}")
    for public in keys:
        try:
            return notes.open_checkpoint(note, public)
        except notes.NoteError:
            continue
    return Unopened("signature", "is not signed by a trusted key under its origin: forged or altered")


def _failure(checked: int, problem: str, detail: str, record: dict) -> dict:
    return {"ok": False, "checked": checked, "problem": problem, "detail": detail, "record": record}
