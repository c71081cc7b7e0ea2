"""Run receipts: a run's decisions, each with its stored event and an RFC 6962 inclusion proof
against one signed checkpoint, and a signed statement listing exactly those decisions, so the
receipt checks offline with the public key alone and no decision can be dropped from it.

The statement is a signed note (same key, the checkpoint's origin as key name) whose text is

    runcode-policy/receipt/v1
    <origin>
    run <run id>
    size <tree size>
    <leaf index> <base64 leaf hash>      (one line per decision)

Its first line keeps it from ever reading as a checkpoint (whose second line is a number).
"""

from __future__ import annotations

import base64
import binascii
from uuid import UUID

from application.chain import notes
from application.chain.merkle import inclusion_root, leaf_hash
from application.chain.proofs import b64, stored_event
from application.chain.slices import _sealed_record_problem as sealed_record_problem
from application.chain.slices import repeated

KIND = "runcode-policy/receipt/v1"


def receipt(chain, workspace: str, run: dict) -> dict:
    """`run`: the run's decisions as `Runs.decisions` answers them (access already checked).
    Seals and signs the head first, so every decision read is covered by the checkpoint."""
    checkpoint = chain.checkpoint(workspace)
    size, origin = checkpoint["seq"], notes.origin_of(checkpoint["note"])  # the statement's is the checkpoint's
    store, tree = chain.store, chain.proofs.tree
    sealed = {
        str(UUID(str(r["originator_id"]))): r
        for r in store.sealed_events([store.oid(UUID(d["id"])) for d in run["decisions"]])
        if r["workspace"] == workspace and r["originator_version"] == 1
    }
    decisions, lines = [], []
    for decision in run["decisions"]:
        row = sealed[decision["id"]]
        leaf, path, _ = tree.inclusion(workspace, row["seq"] - 1, size)
        decisions.append(
            decision | {"chain": {"seq": row["seq"], "event": stored_event(row), "inclusion": [b64(h) for h in path]}}
        )
        lines.append(f"{row['seq'] - 1} {b64(leaf)}\n")
    text = f"{KIND}\n{origin}\nrun {run['run']['id']}\nsize {size}\n" + "".join(lines)
    return {
        "receipt": KIND,
        "workspace": workspace,
        "run": run["run"],
        "allowed": run["allowed"],
        "key_id": checkpoint["key_id"],
        "checkpoint": checkpoint["note"],
        "statement": notes.sign(text, origin, chain.key.public, chain.key.sign),
        "decisions": decisions,
    }


class ReceiptError(ValueError):
    """The receipt does not verify; the message names what differs."""


def verify_receipt(document: dict, public) -> dict:
    """Check a receipt with only the public key; the facts it proves, or ReceiptError."""
    try:
        return _verify(document, public)
    except notes.NoteError as error:
        raise ReceiptError(str(error)) from None
    except (KeyError, TypeError, ValueError, AttributeError, binascii.Error) as error:
        if isinstance(error, ReceiptError):
            raise
        raise ReceiptError(f"the receipt is malformed ({type(error).__name__}: {error})") from None


def _verify(document: dict, public) -> dict:
    if document.get("receipt") != KIND:
        raise ReceiptError(f"not a run receipt (its receipt field is not {KIND!r})")
    origin, size, root = notes.open_checkpoint(document["checkpoint"], public)
    workspace, run = document["workspace"], document["run"]["id"]
    if not origin.endswith("/" + workspace):
        raise ReceiptError(f"the checkpoint is for {origin}, not workspace {workspace}")
    stated = document["statement"].split("\n")[1:2]  # the statement's origin line
    if stated and stated[0] != origin:  # its signature would be looked for under the checkpoint's, in vain
        raise ReceiptError(
            f"the signed statement is of {stated[0]} and the checkpoint of {origin}: a receipt joins one log's"
        )
    listed = _statement(notes.open_note(document["statement"], origin, public), origin, run, size)
    proven, by_seq, ids = set(), {}, set()
    for decision in document["decisions"]:
        # a decision listed twice was one leaf of the statement, and counted (and said) twice
        problem = sealed_record_problem(decision) or repeated(decision, by_seq, ids, "the receipt")
        if problem:
            raise ReceiptError(problem[1])
        chain = decision["chain"]
        by_seq[chain["seq"]] = decision
        ids.add(decision["id"])
        if decision.get("run") != run:
            raise ReceiptError(f"decision {decision['id']} belongs to run {decision.get('run')}, not {run}")
        leaf = leaf_hash(bytes.fromhex(chain["event_hash"]))
        index = chain["seq"] - 1
        proof = [base64.b64decode(h, validate=True) for h in chain["inclusion"]]
        if inclusion_root(index, size, leaf, proof) != root:
            raise ReceiptError(
                f"decision {decision['id']}: its inclusion proof does not lead to the checkpoint's root "
                f"(tree size {size})"
            )
        proven.add((index, b64(leaf)))
    if proven != listed:
        raise ReceiptError(
            f"the receipt carries {len(proven)} decision(s) but its signed statement lists {len(listed)}: "
            "decisions were removed or added"
        )
    return _summary(document["decisions"], document, run, size)


def _statement(text: str, origin: str, run: str, size: int) -> set[tuple[int, str]]:
    lines = text.split("\n")[:-1]
    if lines[:4] != [KIND, origin, f"run {run}", f"size {size}"]:
        raise ReceiptError("the signed statement is for another run, origin or checkpoint")
    listed = set()
    for line in lines[4:]:
        index, _, leaf = line.partition(" ")
        listed.add((int(index), leaf))
    return listed


def _summary(decisions: list[dict], document: dict, run: str, size: int) -> dict:
    allowed = [d for d in decisions if d["allowed"]]
    refused = len(decisions) - len(allowed)
    if document.get("allowed") != (refused == 0):
        raise ReceiptError("the receipt's allowed field disagrees with its decisions")
    versions = sorted({d["policy_version"] for d in allowed if d.get("policy_version") is not None})
    if not allowed:
        message = f"run {run}: nothing was allowed, so nothing was installed through the index"
    else:
        policy = ", ".join(f"v{v}" for v in versions) or "its egress rules"
        message = f"everything this run installed was allowed by policy {policy}"
    if refused:
        message += f" ({refused} refused fetch(es) installed nothing)"
    return {
        "ok": True,
        "run": run,
        "workspace": document["workspace"],
        "tree_size": size,
        "decisions": len(decisions),
        "refused": refused,
        "policy_versions": versions,
        "message": message,
    }
