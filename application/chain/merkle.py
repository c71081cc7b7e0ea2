"""RFC 6962 Merkle tree hashing, and the shape and checking of its two proofs.

A workspace's tree has one leaf per sealed record, in chain order (leaf index = seq - 1). The
leaf's data is the record's `event_hash` (the 32 bytes of SHA-256 over the canonical bytes of
`application.chain.links`), so leaf hash = SHA-256(0x00 || event_hash) and an interior node is
SHA-256(0x01 || left || right); the empty tree's hash is SHA-256 of nothing (RFC 6962 §2.1).

Proofs are built from subtree hashes named by their leaf range [start, end). Every range the
RFC's recursion visits is either a perfect subtree (a power-of-two size at a multiple of it, which
the store keeps: `application.store.merkle`) or a right edge made of at most 64 of those, so a
proof costs O(log n) stored nodes, never a pass over the leaves. Checking follows RFC 9162
§2.1.3.2 (inclusion) and §2.1.4.2 (consistency), with hashes as raw bytes.
"""

from __future__ import annotations

import hashlib

EMPTY_ROOT = hashlib.sha256(b"").digest()


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def split(n: int) -> int:
    """The largest power of two smaller than n (n > 1): the RFC's k."""
    return 1 << ((n - 1).bit_length() - 1)


def perfect_parts(start: int, end: int) -> list[tuple[int, int]]:
    """The perfect subtrees, as (level, index), that make up the range [start, end) of a tree the
    RFC's recursion visits, left to right: one per set bit of its size, largest first."""
    parts, at = [], start
    for level in range((end - start).bit_length() - 1, -1, -1):
        if (end - start) >> level & 1:
            parts.append((level, at >> level))
            at += 1 << level
    return parts


class MissingNode(LookupError):
    """A node the tree's stored state should hold is not there (removed, or a size it never had)."""


def range_hash(start: int, end: int, nodes: dict[tuple[int, int], bytes]) -> bytes:
    """MTH(D[start:end]) from the perfect subtrees it is made of: the right edge folds from the
    smallest part upwards, as the RFC's split at the largest power of two does."""
    try:
        hashes = [nodes[part] for part in perfect_parts(start, end)]
    except KeyError as missing:
        level, index = missing.args[0]
        raise MissingNode(
            f"the stored Merkle tree has no node at level {level}, index {index} (of {end} leaves)"
        ) from None
    if not hashes:
        return EMPTY_ROOT
    folded = hashes[-1]
    for left in reversed(hashes[:-1]):
        folded = node_hash(left, folded)
    return folded


def inclusion_ranges(index: int, size: int) -> list[tuple[int, int]]:
    """PATH(m, D[0:n]) of RFC 6962 §2.1.1 as the ranges whose hashes it lists, deepest first."""
    if not 0 <= index < size:
        raise ValueError(f"leaf {index} is not in a tree of {size}")
    ranges, start, end = [], 0, size
    while end - start > 1:
        k = split(end - start)
        if index - start < k:
            ranges.append((start + k, end))
            end = start + k
        else:
            ranges.append((start, start + k))
            start += k
    return ranges[::-1]


def consistency_ranges(old: int, new: int) -> list[tuple[int, int]]:
    """PROOF(m, D[0:n]) of RFC 6962 §2.1.2 as ranges; empty when m is 0 or m equals n."""
    if not 0 <= old <= new:
        raise ValueError(f"no consistency proof from {old} to {new}")
    if old in (0, new):
        return []
    ranges, start, end, m, complete = [], 0, new, old, True
    while True:
        n = end - start
        if m == n:
            if not complete:
                ranges.append((start, end))
            return ranges[::-1]
        k = split(n)
        if m <= k:
            ranges.append((start + k, end))
            end = start + k
        else:
            ranges.append((start, start + k))
            start, m, complete = start + k, m - k, False


def inclusion_root(index: int, size: int, leaf: bytes, proof: list[bytes]) -> bytes | None:
    """The root an inclusion proof leads to (RFC 9162 §2.1.3.2), or None if it is malformed."""
    if not 0 <= index < size:
        return None
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            return None
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    return r if sn == 0 else None


def consistent(old: int, new: int, old_root: bytes, new_root: bytes, proof: list[bytes]) -> bool:
    """RFC 9162 §2.1.4.2; the empty tree is consistent with every tree, a tree only with itself."""
    if not 0 <= old <= new:
        return False
    if old == 0:
        return not proof
    if old == new:
        return not proof and old_root == new_root
    if old & (old - 1) == 0:  # a power of two: the old root is itself the first node of the path
        proof = [old_root, *proof]
    if not proof:
        return False
    fn, sn = old - 1, new - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = proof[0]
    for c in proof[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    return fr == old_root and sr == new_root and sn == 0
