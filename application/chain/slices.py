"""Exported slices: decisions carrying their chain links, and the check of such an export
against signed checkpoints, without the store.

An export with links holds, for each decision, its sequence number, its link and the stored event
it was sealed from (the bytes that were hashed); after the decisions come `chain_links` lines with
the event hash of every record from the oldest exported one to the head, so the verifier can walk
the chain across the records it was not given (policy changes, tokens, other decisions) and reach
a signed head. Each decision is checked three ways: its line equals what its stored event says,
the event hashes to the value in the chain, and the chain through it meets a checkpoint.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Iterator
from datetime import datetime
from itertools import islice
from uuid import UUID

from application.chain.links import GENESIS, as_uuid, event_hash, link_hash
from application.chain.proofs import NotAsSealed, stored_event
from application.chain.verify import signature_problem
from application.evaluation import decision_view
from application.index.deliveries import FOLLOW_UPS
from application.store.chain import ChainStore
from domain.decision import stored_record

PAGE = 1000
# What a decision's line shows that its check does not cover: its message, words rendered from
# the record when it was exported (`application.messages`), which a later release may word
# otherwise (the reason and parameters they are rendered from are sealed); and what was
# delivered, facts sealed as events of their own, which `audit verify` checks on the store.
NOT_VERIFIED = ("message", *FOLLOW_UPS)


def with_links(store: ChainStore, workspace: str, decisions: Iterable[dict]) -> Iterator[dict]:
    lowest = None
    rows = iter(decisions)
    while page := list(islice(rows, PAGE)):
        sealed = {
            str(as_uuid(r["originator_id"])): r for r in store.sealed_events([store.oid(UUID(d["id"])) for d in page])
        }
        # A whole page is made before its first line goes: a record that is not as sealed fails
        # the export there (in the first page, before the answer has begun), and so does a
        # decision whose row no longer says what its sealed event does.
        shown = [decision | {"chain": _chain_field(sealed.get(decision["id"]), workspace)} for decision in page]
        for decision in shown:
            if decision["chain"] is not None:
                problem = _sealed_record_problem(decision | {"chain": dict(decision["chain"])})
                if problem is not None:
                    raise NotAsSealed(f"{problem[1]}: the store's copy was altered (`audit verify` names what)")
                seq = decision["chain"]["seq"]
                lowest = seq if lowest is None else min(lowest, seq)
        yield from shown
    if lowest is not None:
        yield from _link_lines(store, workspace, lowest)


def _chain_field(row: dict | None, workspace: str) -> dict | None:
    if row is None or row["workspace"] != workspace:
        return None  # not sealed yet
    return {"seq": row["seq"], "link": row["link"], "event": stored_event(row)}


def _link_lines(store: ChainStore, workspace: str, lowest: int) -> Iterator[dict]:
    previous = store.links(workspace, lowest - 2, 1)[0]["link"] if lowest > 1 else GENESIS
    after, first = lowest - 1, True
    while rows := store.links(workspace, after, PAGE):
        line = {"workspace": workspace, "from_seq": rows[0]["seq"], "event_hashes": [r["event_hash"] for r in rows]}
        if first:
            line["previous"] = previous
        yield {"chain_links": line}
        after, first = rows[-1]["seq"], False


def verify_slice(lines: Iterable[dict], checkpoints: list[dict], keys: dict) -> dict:
    """Hold an export with links against checkpoints (each signature checked with `keys`)."""
    decisions, links = [], []
    for line in lines:
        if "chain_links" in line:
            links.append(line["chain_links"])
        else:
            decisions.append(line)
    if not decisions:
        return _failure(0, "unsealed", "the export holds no decisions, only chain links: nothing to verify")
    if not links:
        return _failure(0, "unsealed", "the export carries no chain links (export with chain=true)")
    workspace = links[0]["workspace"]
    for checkpoint in checkpoints:
        problem = signature_problem(checkpoint, workspace, keys)
        if problem:
            return _failure(0, "signature", problem)
    by_seq, ids = {}, set()
    for decision in decisions:
        problem = _sealed_record_problem(decision) or repeated(decision, by_seq, ids, "the export")
        if problem:
            return _failure(len(by_seq), *problem)
        by_seq[decision["chain"]["seq"]] = decision
        ids.add(decision["id"])
    return _walk(links, by_seq, {c["seq"]: c for c in checkpoints}, workspace)


def repeated(decision: dict, by_seq: dict, ids: set, where: str) -> tuple[str, str] | None:
    """Each record of the chain is one decision, and each decision one line: a line claiming a
    record another line holds (or repeating a decision) would otherwise stand in for it unchecked."""
    seq = decision["chain"]["seq"]
    if decision["id"] in ids:
        return "inserted", f"decision {decision['id']} appears twice in {where}"
    if seq in by_seq:
        return "inserted", f"decisions {by_seq[seq]['id']} and {decision['id']} both claim record {seq}"
    return None


def _sealed_record_problem(decision: dict) -> tuple[str, str] | None:
    chain = decision.get("chain")
    if not chain:
        return "unsealed", (
            f"decision {decision.get('id')} carries no chain link: either it was not sealed yet when "
            "exported (export again in a moment), or the store no longer holds its sealed event in this "
            "workspace's chain (deleted, or the row moved): `audit verify` on the store names which"
        )
    event = chain["event"]
    try:
        state = base64.b64decode(event["state"], validate=True)
        stored = json.loads(state)
        at = datetime.fromisoformat(stored["timestamp"]["_data_"])
        expected = decision_view(event["originator_id"], stored_record(stored), at, stored["workspace"])
    except (ValueError, KeyError, TypeError, binascii.Error):
        return "altered", f"decision {decision.get('id')}: its stored event cannot be read"
    shown = {k: v for k, v in decision.items() if k not in ("chain", *NOT_VERIFIED)}
    expected.pop("message", None)
    if expected != shown or event["originator_id"] != decision.get("id"):
        return "altered", f"decision {decision.get('id')} (record {chain['seq']}) differs from its sealed event"
    chain["event_hash"] = event_hash(event["originator_id"], event["originator_version"], event["topic"], state)
    if chain["event_hash"] is None:  # an originator, version or topic of no stored record
        return "altered", f"decision {decision.get('id')}: its stored event cannot be read"
    return None


def _walk(links: list[dict], by_seq: dict, checkpoints: dict, workspace: str) -> dict:
    seq, link, covered = links[0]["from_seq"] - 1, links[0].get("previous", GENESIS), 0
    last = seq + sum(len(line["event_hashes"]) for line in links)
    # A record before the links start or past their end would never be held against the chain.
    outside = [d for s, d in by_seq.items() if not isinstance(s, int) or not seq < s <= last]
    if outside:
        decision = outside[0]
        return _failure(
            0,
            "altered",
            f"decision {decision['id']} claims record {decision['chain']['seq']!r}, outside the exported chain",
        )
    for line in links:
        for digest in line["event_hashes"]:
            seq += 1
            decision = by_seq.get(seq)
            if decision is not None and decision["chain"]["event_hash"] != digest:
                return _failure(
                    0, "altered", f"decision {decision['id']} (record {seq}) hashes differently from the chain's record"
                )
            link = link_hash(workspace, seq, link, digest)
            checkpoint = checkpoints.get(seq)
            if checkpoint is not None:
                if checkpoint["head"] != link:
                    return _failure(
                        0,
                        "checkpoint-mismatch",
                        f"the exported chain does not reach checkpoint {seq} signed at {checkpoint['at']}",
                    )
                covered = seq
    newer = sum(1 for s in by_seq if s > covered)
    verified = {
        "ok": True,
        "complete": not newer,
        "checked": len(by_seq) - newer,
        "checkpoint": covered,
        "not_verified": list(NOT_VERIFIED),
    }
    if not newer:
        return verified
    return verified | {"newer": newer, "detail": _newer_detail(newer, verified["checked"], covered, seq, checkpoints)}


def _newer_detail(newer: int, verified: int, covered: int, last: int, checkpoints: dict) -> str:
    """Checkpoints older than some exported decisions are no sign of tampering: what they cover
    is verified, and the rest is named as not vouched for yet (nothing signed reaches it)."""
    if covered:
        given = (
            f"the newest one this export's chain reaches is record {covered}, signed at {checkpoints[covered]['at']}"
        )
    elif any(s > last for s in checkpoints):
        given = f"those given are newer than this export, whose chain ends at record {last}: export again"
    else:
        given = "none given lies within this export's chain"
    return (
        f"these decisions are newer than the newest checkpoint given: {newer} exported decision(s) after "
        f"record {covered} match their sealed events and the chain's hashes, but no signed checkpoint vouches "
        f"for them yet ({given}); {verified} decision(s) before them verified. Copy out a newer checkpoint "
        "(`audit checkpoints`) to verify them too"
    )


def _failure(checked: int, problem: str, detail: str) -> dict:
    return {"ok": False, "checked": checked, "problem": problem, "detail": detail}
