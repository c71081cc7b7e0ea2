"""Stores written by earlier schemas (tests/corpus/first_schema: the first commit that had a
store, and the one that brought exceptions) opened with today's code: their events and snapshots
are upcast on reading, so the policy at each instant, the history, the exceptions, the decisions
and the tokens read back as they were written, the read models are rebuilt to today's shape
(`application.store.upgrade`), and the chain seals their events and verifies, read models too.
"""

from __future__ import annotations

import shutil
import sqlite3
from datetime import datetime
from pathlib import Path
from uuid import UUID

import pytest
from eventsourcing.persistence import StoredEvent

from application import Governance, store_env
from domain.decision import Decision
from domain.errors import ConflictError
from domain.policy import Policy, policy_id

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "first_schema"

# The acme workspace's policy after each change, as make_store.py made them.
POLICIES = [
    ({"mode": "denylist", "allow": [], "deny": []}, {"mode": "denylist", "allow": [], "deny": []}),
    ({"mode": "denylist", "allow": ["numpy"], "deny": []}, {"mode": "denylist", "allow": [], "deny": []}),
    ({"mode": "denylist", "allow": ["numpy", "requests"], "deny": []}, {"mode": "denylist", "allow": [], "deny": []}),
    (
        {"mode": "denylist", "allow": ["numpy", "requests"], "deny": []},
        {"mode": "denylist", "allow": [], "deny": ["left-pad"]},
    ),
    (
        {"mode": "allowlist", "allow": ["numpy", "requests"], "deny": []},
        {"mode": "denylist", "allow": [], "deny": ["left-pad"]},
    ),
    ({"mode": "allowlist", "allow": ["numpy"], "deny": []}, {"mode": "denylist", "allow": [], "deny": ["left-pad"]}),
]
HISTORY = [
    (1, "alice", "first lists", "entry-added", "python", "numpy"),
    (2, "alice", "first lists", "entry-added", "python", "requests"),
    (3, "alice", "first lists", "entry-added", "node", "left-pad"),
    (4, "bob", "lock down", "mode-switched", "python", None),
    (5, "alice", "drop", "entry-removed", "python", "requests"),
]
# (spec, allowed, reason, policy version), oldest first.
DECISIONS = [
    ("numpy==1.26", True, "not-on-the-deny-list", 3),
    ("evil-pkg", True, "not-on-the-deny-list", 3),
    ("numpy==1.26", True, "matches-the-allow-list", 4),
    ("evil-pkg", False, "not-on-the-allow-list", 4),
    ("git+https://example.org/x.git", False, "direct-reference", 4),
    ("left-pad@1", False, "matches-the-deny-list", 4),
    ("react", True, "not-on-the-deny-list", 4),
    ("requests", False, "not-on-the-allow-list", 5),
    ("https://pypi.org/simple/", True, "allowed", None),
]


def _stored_snapshots(app: Governance, name: str, workspace: str) -> list:
    """The snapshots the committed file holds (opening a store of an older read-model version
    drops them: they were never sealed), upcast by today's mapper."""
    with sqlite3.connect(f"file:{CORPUS / name}?mode=ro", uri=True) as db:
        rows = db.execute(
            "SELECT originator_version, topic, state FROM stored_snapshots WHERE originator_id = ?",
            (policy_id(workspace).hex,),
        ).fetchall()
    return [app.mapper.to_domain_event(StoredEvent(policy_id(workspace), *row)) for row in rows]


def _open(tmp_path, name: str):
    copy = tmp_path / name
    shutil.copyfile(CORPUS / name, copy)  # opening it writes today's tables: never into the committed file
    return Governance(env=store_env(f"sqlite:///{copy}"))


@pytest.fixture
def old(tmp_path):
    app = _open(tmp_path, "first_schema.sqlite")
    yield app
    app.close()


@pytest.fixture
def with_exceptions(tmp_path):
    app = _open(tmp_path, "exceptions_schema.sqlite")
    yield app
    app.close()


def test_the_policy_at_each_instant_and_its_history(old):
    history = old.audit.history("acme")["changes"]
    assert [(c["version"], c["by"], c["note"], c["type"], c["language"], c.get("name")) for c in history] == HISTORY
    assert all(c["by_token"] is None for c in history)
    for change in history:
        at = old.policy("acme", at=datetime.fromisoformat(change["at"]))
        assert (at["version"], at["python"], at["node"]) == (change["version"], *POLICIES[change["version"]])
    now = old.policy("acme")
    assert (now["version"], now["python"], now["node"], now["exceptions"]) == (5, *POLICIES[5], [])


def test_first_schema_events_are_upcast(old):
    """Changes recorded before tokens were named read as made by none; the Policy replays."""
    events = list(old.events.get(policy_id("acme")))
    changes = [e for e in events if isinstance(e, (Policy.ModeSwitched, Policy.EntryAdded, Policy.EntryRemoved))]
    assert len(changes) == 5 and {e.by_token for e in changes} == {None}
    policy = old.repository.get(policy_id("acme"))
    assert (policy.egress, policy.exceptions, policy.changed_by) == ({"mode": "open", "allow": []}, {}, "alice")


def test_a_first_schema_snapshot_is_upcast(old):
    """The bulk policy's snapshot (version 50) was taken of the first aggregate shape."""
    snapshots = _stored_snapshots(old, "first_schema.sqlite", "bulk")
    assert [s.originator_version for s in snapshots] == [50]
    assert list(old.snapshots.get(policy_id("bulk"))) == []  # unsealed: dropped when the store was opened
    restored = snapshots[0].mutate(None)
    assert restored.state["python"]["allow"][-1] == "pkg-48"
    assert (restored.egress, restored.exceptions) == ({"mode": "open", "allow": []}, {})
    assert restored.rules()["python"].allows("pkg-48") and restored.egress_rules().passes("example.org")
    assert old.policy("bulk")["python"]["allow"] == [f"pkg-{i:02d}" for i in range(60)]


def test_decisions_and_tokens_read_back(old):
    decisions = list(reversed(old.audit.decisions("acme", limit=100)["decisions"]))
    assert [(d["spec"], d["allowed"], d["reason"], d["policy_version"]) for d in decisions] == DECISIONS
    denied = {d["spec"]: d for d in decisions if not d["allowed"]}
    assert "evil-pkg is not on the Python allow list of workspace acme" in denied["evil-pkg"]["message"]
    assert denied["git+https://example.org/x.git"]["message"].startswith("'git+https://example.org/x.git' installs")
    for d in decisions:  # the Decision aggregates themselves, replayed
        recorded = old.repository.get(UUID(d["id"]))
        assert isinstance(recorded, Decision) and recorded.decision.spec == d["spec"]
    tokens = old.list_tokens("acme")
    assert [(t["name"], t["role"], t["revoked_by"]) for t in tokens] == [
        ("owner", "owner", None),
        ("ci", "sandbox", "alice"),
    ]


def test_the_chain_seals_and_verifies_the_first_schema_events_and_the_rebuilt_read_models(old):
    old.chain.seal()
    for workspace, events in (("acme", 18), ("bulk", 62)):
        result = old.chain.verify(workspace)
        assert (result["ok"], result["checked"], result["unsealed"]) == (True, events, 0), result


def test_tokens_are_issued_and_authenticated_on_a_first_schema_store(old):
    """The token table gained the digest authentication reads, and token names their own table."""
    issued = old.issue_token("acme", "new", "admin", by="alice")
    assert old.authenticate(issued["token"])["name"] == "new"
    with pytest.raises(ConflictError):
        old.issue_token("acme", "ci", "sandbox", by="alice")  # a revoked token's name is never given again


def test_exceptions_recorded_before_tokens_were_named_read_back(with_exceptions):
    app = with_exceptions
    events = list(app.events.get(policy_id("acme")))
    grants = [e for e in events if isinstance(e, (Policy.ExceptionGranted, Policy.ExceptionRevoked))]
    assert [(type(e).__name__, e.name, e.by, e.by_token) for e in grants] == [
        ("ExceptionGranted", "leftpad", "alice", None),
        ("ExceptionGranted", "six", "alice", None),
        ("ExceptionGranted", "attrs", "bob", None),
        ("ExceptionRevoked", "attrs", "bob", None),
    ]
    history = app.audit.history("acme")["changes"]
    assert [(c["version"], c["type"], c.get("name"), c["by_token"]) for c in history[2:]] == [
        (3, "exception-granted", "leftpad", None),
        (4, "exception-granted", "six", None),
        (5, "exception-granted", "attrs", None),
        (6, "exception-revoked", "attrs", None),
    ]
    standing = {5: {"leftpad", "six", "attrs"}, 6: {"leftpad", "six"}}
    for change in history[4:]:
        at = app.policy("acme", at=datetime.fromisoformat(change["at"]))
        assert {e["name"] for e in at["exceptions"]} == standing[change["version"]]
    leftpad = next(e for e in at["exceptions"] if e["name"] == "leftpad")
    assert leftpad["request_id"] and leftpad["expires_at"] and leftpad["granted_version"] == 3
    decisions = app.audit.decisions("acme")["decisions"]
    assert sorted((d["spec"], d["allowed"], d["reason"]) for d in decisions) == [
        ("attrs", False, "not-on-the-allow-list"),
        ("leftpad", True, "matches-an-exception"),
        ("six", True, "matches-an-exception"),
    ]


def test_a_snapshot_taken_before_the_egress_allowlist_is_upcast(with_exceptions):
    (snapshot,) = _stored_snapshots(with_exceptions, "exceptions_schema.sqlite", "bulk")
    restored = snapshot.mutate(None)
    assert restored.egress == {"mode": "open", "allow": []}
    assert [g["name"] for g in restored.exceptions.values()] == ["six"]
    with_exceptions.chain.seal()
    result = with_exceptions.chain.verify("bulk")
    assert (result["ok"], result["checked"]) == (True, 58), result  # its events and its owner token
