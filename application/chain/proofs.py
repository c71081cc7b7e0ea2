"""Checkpoints as signed notes, and inclusion and consistency proofs over a workspace's tree.

Each checkpoint of the chain (`AuditChain`) gets a C2SP checkpoint beside it: origin
`runcode-policy/<origin host>/<workspace>`, the tree size (= the checkpoint's `seq`) and the
tree's root, signed by the same key under the origin as key name. A new note is handed to the
witness pusher, if one is configured, which delivers it off the host by itself.

A log keeps one origin: a witness follows a log by its origin, a proof or a receipt joins two
checkpoints (or a checkpoint and a statement) of one origin only. So a process without
RUNCODE_POLICY_AUDIT_ORIGIN signs under the origin the chain's notes already carry (this host's
name only for a chain's first note: the command line beside a service that sets it, or a service
whose host was renamed, had signed the next checkpoint as another log, and every receipt and
consistency proof reaching it failed), and one whose setting names another origin signs nothing.
"""

from __future__ import annotations

import base64
import logging
import socket
from uuid import UUID

from application.chain import notes
from application.chain.links import as_uuid, stored_bytes
from application.chain.tree import MerkleTree
from application.decision_writer import StoreUnavailableError
from domain.errors import FieldError, InvalidInputError, NotFoundError

log = logging.getLogger(__name__)

ORIGIN_VAR = "RUNCODE_POLICY_AUDIT_ORIGIN"  # the setting that names an origin's middle part
PREFIX = "runcode-policy/"


def b64(digest: bytes) -> str:
    return base64.b64encode(digest).decode("ascii")


class OriginConflict(StoreUnavailableError):
    """This process's origin is not the one the chain's checkpoints carry: nothing was signed."""

    title = "Audit origin conflict"


class Proofs:
    def __init__(self, chain, recorder):
        self.chain = chain
        self.tree = MerkleTree(recorder)
        self.origin_host: str | None = None  # RUNCODE_POLICY_AUDIT_ORIGIN, when the deployment sets it
        self.witness = None  # an object with push(workspace, size, note) and close(), set by the deployment

    def origin(self, workspace: str) -> str:
        """The origin this process signs the chain's notes under (`signing_origin` checks it)."""
        if self.origin_host is None:
            return self.chain_origin(workspace) or f"{PREFIX}{socket.gethostname()}/{workspace}"
        return f"{PREFIX}{self.origin_host}/{workspace}"

    def chain_origin(self, workspace: str) -> str | None:
        """The origin the chain's newest signed note carries (None before its first)."""
        latest = self.tree.latest_note(workspace)
        return notes.origin_of(latest[1]) if latest else None

    def signing_origin(self, workspace: str) -> str:
        """This process's origin for the chain, once it is the one the chain's notes carry; else
        OriginConflict, naming the setting to give it."""
        ours, theirs = self.origin(workspace), self.chain_origin(workspace)
        if theirs is None or theirs == ours:
            return ours
        host = theirs.removeprefix(PREFIX).removesuffix(f"/{workspace}")
        raise OriginConflict(
            f"the checkpoints of {workspace!r} are signed as {theirs} and this process's origin is {ours}: a log "
            f"keeps one origin, so nothing was signed; set {ORIGIN_VAR}={host}, as where they were signed"
        )

    # -- notes --------------------------------------------------------------------------------
    def with_notes(self, checkpoints: list[dict], make: bool = True) -> list[dict]:
        """The checkpoints, each with its signed note (`make`: made now for one signed before
        notes were; else None). A note stored blank is the store's, not none: verification names it."""
        if not checkpoints:
            return checkpoints
        workspace = checkpoints[0]["workspace"]
        found = self.tree.notes(workspace, [c["seq"] for c in checkpoints])
        made = self._note if make else lambda workspace, size: None
        return [c | {"note": found[c["seq"]] if c["seq"] in found else made(workspace, c["seq"])} for c in checkpoints]

    def _note(self, workspace: str, size: int) -> str | None:
        key = self.chain.key
        if key is None:
            return None
        origin = self.signing_origin(workspace)
        self.tree.extend(workspace)
        note = notes.sign(
            notes.checkpoint_text(origin, size, self.tree.root(workspace, size)), origin, key.public, key.sign
        )
        self.tree.store.add_note(workspace, size, note)
        stored = self.tree.notes(workspace, [size])[size]  # another process may have noted it first
        if self.witness is not None and stored == note:
            self.witness.push(workspace, size, note)
        return stored

    # -- proofs -------------------------------------------------------------------------------
    def inclusion(self, workspace: str, decision: str, size: int | None) -> dict:
        try:
            originator = UUID(decision)
        except (ValueError, TypeError):
            raise InvalidInputError(
                "decision is not an id", [FieldError("decision", "must be a decision id (a UUID)")]
            ) from None
        store = self.chain.store
        rows = [r for r in store.sealed_events([store.oid(originator)]) if r["originator_version"] == 1]
        if not rows or rows[0]["workspace"] != workspace:
            raise NotFoundError(f"no sealed record {decision} in workspace {workspace!r} (yet)")
        row = rows[0]
        size = self._size(workspace, size, "size", lowest=row["seq"])
        leaf, path, root = self.tree.inclusion(workspace, row["seq"] - 1, size)
        return {
            "workspace": workspace,
            "decision": decision,
            "leaf_index": row["seq"] - 1,
            "tree_size": size,
            "event_hash": row["event_hash"],
            "event": stored_event(row),
            "leaf_hash": b64(leaf),
            "proof": [b64(h) for h in path],
            "root": b64(root),
            "checkpoint": self.tree.notes(workspace, [size]).get(size),
        }

    def consistency(self, workspace: str, old: int, new: int | None) -> dict:
        new = self._size(workspace, new, "to", lowest=1)
        if not 1 <= old <= new:
            raise InvalidInputError("from out of range", [FieldError("from", f"must be from 1 to {new}")])
        old_root, path, new_root = self.tree.consistency(workspace, old, new)
        found = self.tree.notes(workspace, [old, new])
        return {
            "workspace": workspace,
            "from": old,
            "to": new,
            "proof": [b64(h) for h in path],
            "from_root": b64(old_root),
            "to_root": b64(new_root),
            "from_checkpoint": found.get(old),
            "to_checkpoint": found.get(new),
        }

    def _size(self, workspace: str, size: int | None, field: str, lowest: int) -> int:
        """The tree size asked for (default: the newest signed checkpoint's, else the whole tree)."""
        self.chain.require_workspace(workspace)
        whole = self.tree.extend(workspace)
        if size is None:
            latest = self.tree.latest_note(workspace)
            size = latest[0] if latest and latest[0] >= lowest else whole
        if not lowest <= size <= whole:
            raise InvalidInputError(
                f"{field} out of range", [FieldError(field, f"must be from {lowest} to the tree's size, {whole}")]
            )
        return size


class NotAsSealed(StoreUnavailableError):
    title = "Stored record not as sealed"


def stored_event(row: dict) -> dict:
    """A sealed record's stored event, as proofs, receipts and exports carry it (the bytes that
    were hashed); NotAsSealed (503) when its state is no longer bytes at all."""
    event = {
        "originator_id": str(as_uuid(row["originator_id"])),
        "originator_version": row["originator_version"],
        "topic": row["topic"],
    }
    state = stored_bytes(row["state"])
    if state is None:
        raise NotAsSealed(
            f"record {row['seq']} of {row['workspace']!r} ({row['topic']} {event['originator_id']} "
            f"v{row['originator_version']}) was altered: its stored state is not bytes (stored as text); "
            "`audit verify` names it"
        )
    return event | {"state": base64.b64encode(state).decode("ascii")}
