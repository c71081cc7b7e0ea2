"""An export of decisions that carries its chain links, checked against signed checkpoints without
the store: the slice verifies, and an edited line, a dropped link or a missing checkpoint does not."""

from __future__ import annotations

import base64
import copy
import json

import pytest

from application.chain import AuditKey
from application.chain.slices import verify_slice


@pytest.fixture
def exported(app):
    app.chain.use_key(AuditKey.generate())
    app.create_workspace("acme", by="founder")
    app.save_policy("acme", {"python": {"mode": "allowlist", "allow": "pandas"}}, by="alice")
    app.evaluation.evaluate("acme", "python", ["pandas", "requests"], None, {"sandbox": "s1"})
    app.issue_token("acme", "ci", "sandbox", by="alice")
    app.evaluation.evaluate("acme", "python", ["numpy"], None, {})
    app.chain.checkpoint("acme")
    lines = list(app.chain.with_links("acme", app.audit.export_decisions("acme")))
    return app, json.loads(json.dumps(lines)), app.chain.all_checkpoints("acme")


def test_an_exported_slice_verifies_against_a_checkpoint(exported):
    app, lines, checkpoints = exported
    assert all(line["chain"]["seq"] > 0 for line in lines if "id" in line)
    result = verify_slice(lines, checkpoints, app.chain.trusted_keys())
    assert result == {
        "ok": True,
        "checked": 3,
        "checkpoint": checkpoints[-1]["seq"],
        "complete": True,
        "not_verified": ["message", "delivery", "deliveries"],
    }


def test_a_slice_with_an_edited_outcome_fails(exported):
    app, lines, checkpoints = exported
    edited = copy.deepcopy(lines)
    denied = next(line for line in edited if line.get("name") == "requests")
    denied["allowed"] = True
    result = verify_slice(edited, checkpoints, app.chain.trusted_keys())
    assert (result["ok"], result["problem"]) == (False, "altered") and denied["id"] in result["detail"]


def test_a_decision_without_its_link_is_refused_saying_it_may_be_gone_not_only_late(exported):
    app, lines, checkpoints = exported
    gone = copy.deepcopy(lines)
    bare = next(line for line in gone if line.get("name") == "requests")
    bare["chain"] = None  # as an export carries a decision whose sealed event the store lost
    result = verify_slice(gone, checkpoints, app.chain.trusted_keys())
    assert (result["ok"], result["problem"]) == (False, "unsealed")
    assert "not sealed yet" in result["detail"] and "no longer holds its sealed event" in result["detail"]


def test_a_slice_whose_links_were_tampered_with_misses_the_checkpoint(exported):
    app, lines, checkpoints = exported
    edited = copy.deepcopy(lines)
    links = next(line["chain_links"] for line in edited if "chain_links" in line)
    links["previous"] = "0" * 64  # the link before the oldest exported record, which nothing else vouches for
    result = verify_slice(edited, checkpoints, app.chain.trusted_keys())
    assert result["problem"] == "checkpoint-mismatch"


def test_a_slice_newer_than_every_checkpoint_is_not_vouched_for(exported):
    app, lines, checkpoints = exported
    result = verify_slice(lines, [], app.chain.trusted_keys())
    # Nothing is vouched for: every decision is named as newer than the (absent) checkpoints.
    assert (result["complete"], result["checked"], result["newer"]) == (False, 0, 3)
    assert "newer than the newest checkpoint given" in result["detail"]


def _forged(line: dict) -> dict:
    """The line and its sealed event rewritten together to say "allowed", consistent with each other:
    only the chain's hash, which the signed heads vouch for, can tell."""
    forged = copy.deepcopy(line)
    state = base64.b64decode(forged["chain"]["event"]["state"]).decode()
    state = state.replace('"allowed":false', '"allowed":true').replace(line["reason"], "matches-the-allow-list")
    forged["chain"]["event"]["state"] = base64.b64encode(state.encode()).decode()
    forged |= {"allowed": True, "reason": "matches-the-allow-list"}
    return forged


@pytest.mark.parametrize("where", ["another-lines-record", "before-the-links", "past-the-links", "not-a-number"])
def test_a_forged_line_claiming_a_record_it_does_not_hash_to_is_refused_not_skipped(exported, where):
    app, lines, checkpoints = exported
    edited = copy.deepcopy(lines)
    index = next(i for i, line in enumerate(edited) if line.get("name") == "requests")
    forged = edited[index] = _forged(edited[index])
    decisions = [line for line in edited if "id" in line]
    links = next(line["chain_links"] for line in edited if "chain_links" in line)
    last = links["from_seq"] + len(links["event_hashes"]) - 1
    claims = {
        # the line after it: read first, the forged line was replaced by that line unchecked
        "another-lines-record": decisions[decisions.index(forged) + 1]["chain"]["seq"],
        "before-the-links": links["from_seq"] - 1,
        "past-the-links": last + 1,
        "not-a-number": str(forged["chain"]["seq"]),
    }
    forged["chain"]["seq"] = claims[where]
    result = verify_slice(edited, checkpoints, app.chain.trusted_keys())
    assert result["ok"] is False and forged["id"] in result["detail"], result


def test_a_repeated_line_and_an_export_of_links_alone_are_refused(exported):
    app, lines, checkpoints = exported
    twice = [lines[0], *lines]
    result = verify_slice(twice, checkpoints, app.chain.trusted_keys())
    assert (result["ok"], result["problem"]) == (False, "inserted") and "appears twice" in result["detail"]
    links_alone = [line for line in lines if "chain_links" in line]
    assert verify_slice(links_alone, checkpoints, app.chain.trusted_keys())["ok"] is False
