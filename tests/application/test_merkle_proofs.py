"""The workspace's Merkle tree against RFC 6962 itself: roots, audit paths and consistency
proofs checked with an implementation written here from the RFC's definitions (nothing of it is
imported from the service), over a real store, at every size from 1 to past 64."""

from __future__ import annotations

import base64
import hashlib
import random

import pytest

from application.chain import merkle
from application.chain.links import as_uuid

# -- RFC 6962 §2.1, written from the text -------------------------------------------------------


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def mth(leaves: list[bytes]) -> bytes:
    """MTH(D[n]): the empty string's hash, SHA-256(0x00 || d(0)), or split at k, the largest
    power of two smaller than n."""
    n = len(leaves)
    if n == 0:
        return sha256(b"")
    if n == 1:
        return sha256(b"\x00" + leaves[0])
    k = 1
    while k * 2 < n:
        k *= 2
    return sha256(b"\x01" + mth(leaves[:k]) + mth(leaves[k:]))


def path(m: int, leaves: list[bytes]) -> list[bytes]:
    """PATH(m, D[n]) of §2.1.1."""
    n = len(leaves)
    if n == 1:
        return []
    k = 1
    while k * 2 < n:
        k *= 2
    if m < k:
        return path(m, leaves[:k]) + [mth(leaves[k:])]
    return path(m - k, leaves[k:]) + [mth(leaves[:k])]


def subproof(m: int, leaves: list[bytes], complete: bool) -> list[bytes]:
    """SUBPROOF(m, D[n], b) of §2.1.2."""
    n = len(leaves)
    if m == n:
        return [] if complete else [mth(leaves)]
    k = 1
    while k * 2 < n:
        k *= 2
    if m <= k:
        return subproof(m, leaves[:k], complete) + [mth(leaves[k:])]
    return subproof(m - k, leaves[k:], False) + [mth(leaves[:k])]


SIZES = (1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 70)  # powers of two and neighbours


# -- the store ----------------------------------------------------------------------------------


@pytest.fixture
def chain(app, workspace):
    """A workspace whose chain holds 70 records: sizes 1 to 70 cover 1, 2, every power of two up
    to 64 and their neighbours."""
    app.evaluation.evaluate(workspace, "python", [f"package-{i}" for i in range(70)], None, {})
    app.chain.seal()
    leaves = [bytes.fromhex(r["event_hash"]) for r in app.chain.store.links(workspace, 0, 1000)][:70]
    assert len(leaves) == 70
    return app.chain.proofs, leaves


def decoded(values: list[str]) -> list[bytes]:
    return [base64.b64decode(v) for v in values]


def test_the_root_at_every_size_is_the_rfc_tree_hash_of_the_chain_records(chain, workspace):
    proofs, leaves = chain
    proofs.tree.extend(workspace)
    for size in range(1, 71):
        assert proofs.tree.root(workspace, size) == mth(leaves[:size]), size


def test_every_audit_path_is_the_rfcs_path_and_leads_to_the_root(chain, workspace, app):
    proofs, leaves = chain
    proofs.tree.extend(workspace)
    for size in SIZES:
        for index in range(size):
            leaf, audit_path, root = proofs.tree.inclusion(workspace, index, size)
            assert audit_path == path(index, leaves[:size]), (index, size)
            assert root == mth(leaves[:size]) and leaf == sha256(b"\x00" + leaves[index])
            assert merkle.inclusion_root(index, size, leaf, audit_path) == root
    record = app.chain.store.walk(workspace, 40, 1)[0]  # leaf 40 is record 41
    answer = proofs.inclusion(workspace, str(as_uuid(record["originator_id"])), 64)
    assert (answer["leaf_index"], answer["tree_size"]) == (40, 64)
    assert decoded(answer["proof"]) == path(40, leaves[:64]) and decoded([answer["root"]]) == [mth(leaves[:64])]


def test_every_consistency_proof_is_the_rfcs_and_verifies(chain, workspace):
    proofs, leaves = chain
    proofs.tree.extend(workspace)
    for new in SIZES:
        for old in range(1, new + 1):
            old_root, proof, new_root = proofs.tree.consistency(workspace, old, new)
            assert proof == subproof(old, leaves[:new], True), (old, new)
            assert merkle.consistent(old, new, old_root, new_root, proof)


def test_a_proof_with_any_hash_changed_or_a_wrong_size_is_refused(chain, workspace):
    proofs, leaves = chain
    proofs.tree.extend(workspace)
    rng = random.Random(6962)
    for _ in range(200):
        new = rng.randint(2, 70)
        old, index = rng.randint(1, new - 1), rng.randrange(new)
        leaf, audit_path, root = proofs.tree.inclusion(workspace, index, new)
        if audit_path:
            broken = list(audit_path)
            broken[rng.randrange(len(broken))] = sha256(b"forged")
            assert merkle.inclusion_root(index, new, leaf, broken) != root
        assert merkle.inclusion_root(index, new + 1, leaf, audit_path) != mth(leaves[: new + 1])
        old_root, proof, new_root = proofs.tree.consistency(workspace, old, new)
        assert not merkle.consistent(old, new, sha256(b"another history"), new_root, proof)
        if proof:
            forged = list(proof)
            forged[rng.randrange(len(forged))] = sha256(b"forged")
            assert not merkle.consistent(old, new, old_root, new_root, forged)


def test_the_pure_functions_agree_with_the_rfc_on_random_larger_trees():
    rng = random.Random(9162)
    for size in [1, 2, 3, 127, 128, 129, 255, 256, 257, *(rng.randint(1, 600) for _ in range(6))]:
        leaves = [rng.randbytes(32) for _ in range(size)]
        hashes = {}  # every perfect subtree, as the store keeps them
        for level in range(size.bit_length()):
            for idx in range(size >> level):
                hashes[(level, idx)] = mth(leaves[idx << level : (idx + 1) << level])
        assert merkle.range_hash(0, size, hashes) == mth(leaves)
        index, old = rng.randrange(size), rng.randint(1, size)
        assert [merkle.range_hash(a, b, hashes) for a, b in merkle.inclusion_ranges(index, size)] == path(index, leaves)
        assert [merkle.range_hash(a, b, hashes) for a, b in merkle.consistency_ranges(old, size)] == subproof(
            old, leaves, True
        )
