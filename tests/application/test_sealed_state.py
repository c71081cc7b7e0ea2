"""Enforcement reads only sealed state: what someone with write access to the database (and not
the service's key) changes outside the event log is never used, on SQLite and PostgreSQL alike.
Each tamper is raw SQL on the store (tests/support/tamper.py), as that attacker would do it."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest

from application.chain import AuditKey
from domain.policy import policy_id
from tests.support.tamper import Tamperer

# Enough entries that one Save crosses the snapshot interval: its snapshot is what a new process loads.
DENY = "\n".join(["beta", *(f"pkg{i}" for i in range(60))])


@pytest.fixture
def tamper(database_url):
    tamperer = Tamperer(database_url)
    yield tamperer
    tamperer.close()


@pytest.fixture
def snapshotted(app):
    app.chain.use_key(AuditKey.generate())
    app.create_workspace("acme", by="founder")
    app.save_policy("acme", {"python": {"mode": "denylist", "deny": DENY}}, by="alice", note="no beta")
    app.chain.checkpoint("acme")
    return app


def reason(app, name: str) -> tuple[int, str]:
    answer = app.evaluate("acme", "python", [name], None, {})
    return answer["policy_version"], answer["decisions"][0]["reason"]


def test_a_snapshot_edited_in_the_store_is_never_enforced_and_raises_one_alarm(snapshotted, open_app, tamper, caplog):
    version, _ = reason(snapshotted, "beta")
    tamper.replace_in_snapshot(str(policy_id("acme")), '"beta",', "")
    fresh = open_app()  # another worker: its rules cache is empty, it loads the snapshot
    with caplog.at_level(logging.ERROR, logger="runcode_policy.integrity"):
        assert reason(fresh, "beta") == (version, "matches-the-deny-list")
        assert fresh.policy("acme", at=datetime.now(UTC))["python"]["deny"][0] == "beta"
        assert reason(fresh, "beta") == (version, "matches-the-deny-list")
    alarms = [r.getMessage() for r in caplog.records if r.name == "runcode_policy.integrity"]
    assert len(alarms) == 1 and "did not verify" in alarms[0] and f"policy version {version}" in alarms[0], alarms
    assert fresh.integrity.counts["snapshot"] == 1 and "did not verify" in fresh.integrity.first


def test_a_snapshot_without_a_seal_is_not_used(snapshotted, open_app, tamper):
    tamper.sql("DELETE FROM stored_events WHERE topic = 'runcode_policy:SnapshotSeal.Sealed'")
    tamper.replace_in_snapshot(str(policy_id("acme")), '"beta",', "")
    fresh = open_app()
    assert reason(fresh, "beta")[1] == "matches-the-deny-list"
    assert "has no seal" in fresh.integrity.first or "gone from the store" in fresh.integrity.first


def test_an_untouched_snapshot_is_used_without_an_alarm(snapshotted, open_app):
    fresh = open_app()
    assert reason(fresh, "beta")[1] == "matches-the-deny-list"
    assert fresh.policy("acme", at=datetime.now(UTC))["python"]["deny"][0] == "beta"
    assert fresh.integrity.first is None
    assert fresh.chain.verify("acme", keys=snapshotted.chain.trusted_keys())["ok"]
