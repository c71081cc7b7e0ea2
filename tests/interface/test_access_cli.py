"""`runcode-policy requests list|approve|reject` and `runcode-policy exceptions list|grant|revoke`
against a real store (SQLite file and PostgreSQL)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from application.formats import iso
from application.governance import Governance
from application.store import store_env
from tests.interface.test_cli import ME, acme, cli  # noqa: F401 - fixtures


def file_request(database_url: str, name: str) -> str:
    app = Governance(env=store_env(database_url))
    try:
        sandbox = app.issue_token("acme", f"sbx-{name}", "sandbox", by="x")
        caller = app.authenticate(sandbox["token"])
        return app.access.file_request(
            "acme", "python", name, "needed", {"sandbox": "s"}, by=caller["name"], token_id=caller["id"]
        )["id"]
    finally:
        app.close()


def test_requests_list_approve_and_reject(cli, acme, database_url):  # noqa: F811
    beta, gamma = file_request(database_url, "beta"), file_request(database_url, "gamma")
    listed = cli("requests", "list", "-w", "acme")
    assert listed.exit_code == 0 and beta in listed.stdout and "needed" in listed.stdout
    as_json = json.loads(cli("requests", "list", "-w", "acme", "--json").stdout)
    assert {r["name"] for r in as_json} == {"beta", "gamma"}
    approved = cli("requests", "approve", "-w", "acme", beta, "--for", "P7D", "--note", "a week")
    assert approved.exit_code == 0, approved.output
    assert json.loads(approved.stdout)["decided_by"] == ME and "exception until 20" in approved.stderr
    rejected = cli("requests", "reject", "-w", "acme", gamma, "--note", "no")
    assert rejected.exit_code == 0 and json.loads(rejected.stdout)["status"] == "rejected"
    again = cli("requests", "approve", "-w", "acme", gamma)
    assert again.exit_code == 1 and "already rejected" in again.output
    assert cli("requests", "list", "-w", "acme").stdout.strip().splitlines()[1:] == []


def test_requests_list_shows_every_request_past_the_first_page(cli, acme, database_url):  # noqa: F811
    """It showed the first 100, the open requests waiting longest never among them."""
    app = Governance(env=store_env(database_url))
    try:
        caller = app.authenticate(app.issue_token("acme", "sbx", "sandbox", by="x")["token"])
        filed = {
            app.access.file_request(
                "acme", "python", f"pkg{i}", "needed", None, by=caller["name"], token_id=caller["id"]
            )["id"]
            for i in range(101)
        }
    finally:
        app.close()
    listed = json.loads(cli("requests", "list", "-w", "acme", "--json").stdout)
    assert {r["id"] for r in listed} == filed and len(listed) == 101


def test_exceptions_grant_list_and_revoke(cli, acme):  # noqa: F811
    cli("policy", "add", "-w", "acme", "python", "deny", "beta")
    refused = cli("exceptions", "grant", "-w", "acme", "python", "Beta")
    assert refused.exit_code == 1 and "  lift_deny (--lift-deny): must be true" in refused.output
    far = cli("exceptions", "grant", "-w", "acme", "python", "beta", "--lift-deny", "--until", "2999-01-01T00:00:00Z")
    assert far.exit_code == 1 and "at most 3660 days ahead" in far.output  # as long as a duration may say
    unread = cli("exceptions", "grant", "-w", "acme", "python", "beta", "--lift-deny", "--until", "tomorrow")
    assert unread.exit_code == 1 and "expires_at (--until): " in unread.output, unread.output
    until = (datetime.now(UTC) + timedelta(days=30)).replace(microsecond=0)
    granted = cli("exceptions", "grant", "-w", "acme", "python", "Beta", "--lift-deny", "--until", until.isoformat())
    assert granted.exit_code == 0, granted.output
    exception = json.loads(granted.stdout)
    assert (exception["name"], exception["expires_at"]) == ("beta", iso(until))
    shown = json.loads(cli("exceptions", "list", "-w", "acme", "--json").stdout)
    assert [e["id"] for e in shown] == [exception["id"]]
    ahead = cli("exceptions", "list", "-w", "acme", "--at", (until - timedelta(days=1)).isoformat())
    assert ahead.exit_code == 1 and "must not be in the future" in ahead.output  # had listed it, as if known
    assert exception["lifts_deny"] is True
    listed = cli("exceptions", "list", "-w", "acme").stdout.splitlines()
    assert "DENY ENTRY" in listed[0] and "lifts deny" in listed[1]
    assert json.loads(cli("policy", "show", "-w", "acme").stdout)["python"]["deny"] == ["beta"]  # lifted, kept
    assert cli("exceptions", "revoke", "-w", "acme", exception["id"]).exit_code == 0
    assert json.loads(cli("exceptions", "list", "-w", "acme", "--json").stdout) == []
    assert cli("exceptions", "revoke", "-w", "acme", exception["id"]).exit_code == 1
