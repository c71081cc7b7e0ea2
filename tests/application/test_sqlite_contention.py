"""SQLite under many concurrent writers, shown: no "database is locked" reaches a client.

Two applications open one SQLite file, as two worker processes would (each with its own
connections, so SQLite's file locks really are contended), each served on loopback. Sandboxes
evaluate, admins add entries and an owner issues tokens through both at once. Every request is
answered as if it were alone, every acknowledged decision is in the store, and no added entry
is lost.
"""

from __future__ import annotations

import threading

from application.governance import Governance
from application.store import store_env
from interface import create_app
from tests.support.http_client import LiveServer

W = "/api/v1/workspaces/acme"


def test_many_writers_on_one_sqlite_file_never_see_database_is_locked(tmp_path):
    url = f"sqlite:///{tmp_path}/store.sqlite"
    apps = [Governance(env=store_env(url)), Governance(env=store_env(url))]
    owner = apps[0].create_workspace("acme", by="founder")["token"]
    sandbox = apps[0].issue_token("acme", "sbx", "sandbox", by="founder")["token"]
    admin = apps[0].issue_token("acme", "adm", "admin", by="founder")["token"]
    servers = [LiveServer(create_app(env={"RUNCODE_POLICY_DATA_DIR": str(tmp_path)}, governance=a)) for a in apps]
    replies, acknowledged = [], []

    def evaluate(server, i):
        for j in range(30):
            reply = server.call("POST", W + "/evaluate", sandbox, {"language": "python", "specs": [f"p{i}-{j}", "x"]})
            replies.append(reply)
            if reply.status == 200:
                acknowledged.extend(d["id"] for d in reply.json["decisions"])

    def add(server, i):
        for j in range(12):
            change = {"action": "add", "language": "python", "list": "allow", "entries": [f"s{i}-{j}"]}
            replies.append(server.call("POST", W + "/policy/changes", admin, {"changes": [change]}))

    def issue(server, i):
        for j in range(6):
            replies.append(server.call("POST", W + "/tokens", owner, {"name": f"t{i}-{j}", "role": "sandbox"}))

    work = [(evaluate, 8), (add, 4), (issue, 2)]
    threads = [threading.Thread(target=f, args=(servers[i % 2], i)) for f, n in work for i in range(n)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    finally:
        for server in servers:
            server.close()
    assert len(replies) == 8 * 30 + 4 * 12 + 2 * 6
    assert all(r.status in (200, 201) for r in replies), [(r.status, r.body[:200]) for r in replies if r.status > 201]
    assert not [r for r in replies if b"locked" in r.body]
    stored = {d["id"] for d in apps[1].audit.export_decisions("acme")}
    assert set(acknowledged) <= stored and len(acknowledged) == 8 * 30 * 2
    allow = set(apps[1].policy("acme")["python"]["allow"])
    assert allow == {f"s{i}-{j}" for i in range(4) for j in range(12)}  # no lost update
    for app in apps:
        app.close()
