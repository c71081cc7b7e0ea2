"""Each workspace's RFC 6962 tree as stored: extended from the chain, and read for roots and proofs.

Extending reads the chain's event hashes after the stored size (one range scan of its primary
key, in pages) and writes every perfect subtree they complete; the right edge it starts from is
the stored perfect subtrees of the old size (one per set bit). A root or a proof then reads the
O(log n) perfect subtrees it is made of, in one query (`application.chain.merkle`). Every stored
value is read totally (`application.chain.stored`): a size, node, note or event hash not of its
kind is named (`Unreadable`), never a crash of the proof, checkpoint or verification reading it.
"""

from __future__ import annotations

from application.chain import stored
from application.chain.merkle import (
    MissingNode,
    consistency_ranges,
    inclusion_ranges,
    leaf_hash,
    node_hash,
    perfect_parts,
    range_hash,
)
from application.store.merkle import MerkleStore

PAGE = 5000


class MerkleTree:
    def __init__(self, recorder):
        self.store = MerkleStore(recorder)

    def extend(self, workspace: str) -> int:
        """Bring the workspace's tree up to its chain's head; the tree's size."""
        size, head = self.size(workspace), self.chain_size(workspace)
        if size >= head:
            return size
        parts = perfect_parts(0, size)
        edge = self.nodes(workspace, set(parts))  # the old size's right edge
        for level, idx in parts:
            if (level, idx) not in edge:
                raise MissingNode(f"the stored Merkle tree has no node at level {level}, index {idx} ({size} leaves)")
        frontier = {level: edge[(level, idx)] for level, idx in edge}
        extended = size
        for added, extended in self.completed(workspace, size, head, frontier):
            self.store.add(workspace, added, extended)
        return extended

    def completed(self, workspace: str, size: int, end: int, frontier: dict[int, bytes]):
        """From the chain's event hashes after `size` up to `end`: each page's perfect subtrees
        (level, index, hash) it completes, with the size after it. `frontier`: the right edge at
        `size` (level -> hash), updated as it goes."""
        while size < end:
            hashes = self.event_hashes(workspace, size, min(PAGE, end - size))
            if not hashes:
                return
            added = []
            for event in hashes:
                index, digest, level = size, leaf_hash(event), 0
                added.append((0, index, digest))
                while index & 1:  # a right child completes its parent: fold up while it does
                    digest = node_hash(frontier.pop(level), digest)
                    level, index = level + 1, index >> 1
                    added.append((level, index, digest))
                frontier[level] = digest
                size += 1
            yield added, size

    def first_difference(self, workspace: str) -> tuple[int, int] | None:
        """The first stored perfect subtree (level, index) that differs from the one recomputed
        from the chain, or is missing; None when every one agrees. A root reads only the few
        subtrees of its size: an edited other one would go unseen, and only the proofs served
        from it would fail."""
        for added, _ in self.completed(workspace, 0, self.size(workspace), {}):
            found: dict[tuple[int, int], bytes] = {}
            for level in {level for level, _, _ in added}:  # one range a level: a page's nodes are contiguous
                indexes = [idx for at, idx, _ in added if at == level]
                found.update(_nodes(workspace, self.store.level_range(workspace, level, min(indexes), max(indexes))))
            for level, idx, digest in added:
                if found.get((level, idx)) != digest:
                    return level, idx
        return None

    def root(self, workspace: str, size: int) -> bytes:
        return range_hash(0, size, self.nodes(workspace, set(perfect_parts(0, size))))

    def inclusion(self, workspace: str, index: int, size: int) -> tuple[bytes, list[bytes], bytes]:
        """(leaf hash, audit path, root) for leaf `index` in the tree of `size` leaves."""
        return self._hashes(workspace, [(index, index + 1), *inclusion_ranges(index, size), (0, size)])

    def consistency(self, workspace: str, old: int, new: int) -> tuple[bytes, list[bytes], bytes]:
        """(old root, consistency proof, new root)."""
        return self._hashes(workspace, [(0, old), *consistency_ranges(old, new), (0, new)])

    def _hashes(self, workspace: str, ranges: list[tuple[int, int]]) -> tuple[bytes, list[bytes], bytes]:
        nodes = self.nodes(workspace, {part for start, end in ranges for part in perfect_parts(start, end)})
        hashes = [range_hash(start, end, nodes) for start, end in ranges]
        return hashes[0], hashes[1:-1], hashes[-1]

    # -- the stored values, each read as its kind ---------------------------------------------
    def size(self, workspace: str) -> int:
        return stored.integer(self.store.size(workspace), "rcp_merkle_size", f"workspace {workspace!r}", "size")

    def chain_size(self, workspace: str) -> int:
        at = f"the last record of {workspace!r}"
        return stored.integer(self.store.chain_size(workspace), "rcp_chain", at, "seq")

    def event_hashes(self, workspace: str, after: int, limit: int) -> list[bytes]:
        """The chain's event hashes from record `after + 1` on, as bytes."""
        return [
            stored.sha256(row["event_hash"], "rcp_chain", f"record {row['seq']} of {workspace!r}", "event_hash")
            for row in self.store.event_hashes(workspace, after, limit)
        ]

    def nodes(self, workspace: str, parts: set[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
        """The stored hashes of these perfect subtrees (absent ones are left out)."""
        return _nodes(workspace, self.store.nodes(workspace, parts))

    def notes(self, workspace: str, sizes: list[int]) -> dict[int, str]:
        return {
            size: stored.text(note, "rcp_checkpoint_notes", f"the note of size {size} of {workspace!r}", "note")
            for size, note in self.store.notes(workspace, sizes).items()
        }

    def latest_note(self, workspace: str) -> tuple[int, str] | None:
        latest = self.store.latest_note(workspace)
        if latest is None:
            return None
        (size, note), table = latest, "rcp_checkpoint_notes"
        at = f"the note of size {stored.shown(size)} of {workspace!r}"
        return stored.integer(size, table, at, "size"), stored.text(note, table, at, "note")


def _nodes(workspace: str, rows: list[dict]) -> dict[tuple[int, int], bytes]:
    return {
        (r["level"], r["idx"]): stored.sha256(
            r["hash"], "rcp_merkle_nodes", f"the node at level {r['level']}, index {r['idx']} of {workspace!r}", "hash"
        )
        for r in rows
    }
