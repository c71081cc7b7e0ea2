"""`runcode-policy serve` with several worker processes over one PostgreSQL, for real: each
worker has its own group-commit writer and policy cache, yet a Save or a revocation through one
is in force for the very next request through every other, no decision is lost or doubled, and
one scrape of /metrics sees every worker's decisions.

The module's tests share one `serve` (each start costs ~3.5 s of CPU: three workers importing the
service), each in a workspace of its own, made through the store as `runcode-policy workspace
create` makes one."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import psycopg
import pytest

from application.chain.audit_chain import POLL_SECONDS
from application.governance import Governance
from application.store import store_env
from tests.support.postgres_pool import split_schema
from tests.support.pypi_upstream import PyPIUpstream
from tests.support.sockets import children, server_side_owner

pytestmark = pytest.mark.postgres
ROOT = Path(__file__).resolve().parents[2]
WORKERS = 3


class Client:
    """One keep-alive connection, so every request on it reaches the same worker."""

    def __init__(self, port: int):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)

    def call(self, method: str, path: str, token: str | None = None, body=None) -> tuple[int, dict | str]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        if body is not None:
            headers["Content-Type"] = "application/json"
        self.conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
        reply = self.conn.getresponse()
        text = reply.read().decode()
        is_json = reply.getheader("Content-Type", "").endswith("json")
        return reply.status, json.loads(text) if is_json and text else text


def fetch_file(client: Client, path: str, token: str) -> bytes:
    """A file from the package index, through this client's worker."""
    client.conn.request("GET", path, headers={"Authorization": f"Bearer {token}"})
    reply = client.conn.getresponse()
    body = reply.read()
    assert reply.status == 200, body
    return body


class Running:
    """The `serve` process this module's tests share, and the fixture upstream its index reads."""

    def __init__(self, process, port: int, database_url: str, upstream: PyPIUpstream):
        self.process, self.port, self.database_url, self.upstream = process, port, database_url, upstream


class Service:
    """One test's workspace in the running `serve`; every client opened through it is closed at
    the test's end."""

    def __init__(self, running: Running, workspace: str, owner: str):
        self.running = running
        self.workspace, self.owner = workspace, owner
        self.w = f"/api/v1/workspaces/{workspace}"
        self.opened: list[Client] = []

    def client(self) -> Client:
        self.opened.append(Client(self.running.port))
        return self.opened[-1]

    def one_client_per_worker(self) -> list[Client]:
        """Open connections until each of the WORKERS processes holds one (bounded)."""
        found: dict[int, Client] = {}
        deadline = time.monotonic() + 60
        while len(found) < WORKERS and time.monotonic() < deadline:
            client = self.client()
            try:
                client.call("GET", "/healthz")
            except ConnectionError:
                time.sleep(0.2)  # workers still starting
                continue
            port, pid = self.running.port, self.running.process.pid
            owner = server_side_owner(port, client.conn.sock.getsockname()[1], children(pid))
            if owner is not None and owner not in found:
                found[owner] = client
        assert len(found) == WORKERS, f"reached only workers {sorted(found)}"
        return list(found.values())

    def issue(self, client: Client, name: str, role: str) -> str:
        status, body = client.call("POST", self.w + "/tokens", self.owner, {"name": name, "role": role})
        assert status == 201, body
        return body["token"]

    def stored_decision_ids(self) -> list[str]:
        """This workspace's recorded decisions."""
        return [r[0] for r in self._query("SELECT id FROM {schema}.rcp_decisions WHERE workspace = %s", self.workspace)]

    def unsealed(self) -> int:
        """How many recorded events (of every workspace) the audit chain has not sealed yet."""
        return self._query(
            "SELECT COUNT(*) FROM {schema}.governance_events WHERE notification_id > "
            "(SELECT notification_id FROM {schema}.rcp_chain_position)"
        )[0][0]

    def decisions_counted(self, client: Client) -> float:
        """What one scrape of /metrics counts as decisions, over every worker and workspace."""
        text = client.call("GET", "/metrics")[1]
        return sum(
            float(x.rsplit(" ", 1)[1]) for x in text.splitlines() if x.startswith("runcode_policy_decisions_total{")
        )

    def _query(self, template: str, *params) -> list[tuple]:
        url, schema = split_schema(self.running.database_url)
        with psycopg.connect(url) as conn:
            return conn.execute(template.format(schema=f'"{schema}"'), params).fetchall()


@pytest.fixture(scope="module")
def running(postgres_schemas, tmp_path_factory):
    """The production command with 3 workers on a schema with a store's tables (made before they
    start) and a data directory of its own (the index cache the workers share is in it), its
    package index in front of a fixture upstream."""
    upstream = PyPIUpstream()
    database_url = postgres_schemas.take()
    data = tmp_path_factory.mktemp("serve")
    env = {
        **os.environ,
        "RUNCODE_POLICY_DATABASE_URL": database_url,
        "RUNCODE_POLICY_DATA_DIR": str(data / "data"),
        "RUNCODE_POLICY_PYPI_UPSTREAM": upstream.url + "/simple/",
    }
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    command = ["-m", "interface.cli", "serve", "--port", "0", "--workers", str(WORKERS), "--threads", "4"]
    stderr = data / "serve.stderr"  # read at the end: no worker may die on the way out
    with stderr.open("w") as written:
        process = subprocess.Popen(
            [sys.executable, *command], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=written, text=True
        )
    said: list[str] = []
    try:
        while not said or not said[-1].startswith("runcode-policy listening on "):
            line = process.stdout.readline()
            assert line, f"serve exited: {said}"
            said.append(line.strip())
        yield Running(process, int(said[-1].split()[3].rsplit(":", 1)[1]), database_url, upstream)
    finally:
        process.terminate()
        process.wait(timeout=60)
        process.stdout.close()
        upstream.close()
        postgres_schemas.give_back(database_url)
    said_on_stderr = stderr.read_text()
    assert "panicked" not in said_on_stderr and "Traceback" not in said_on_stderr, said_on_stderr


@pytest.fixture
def service(running):
    """A workspace of this test's own in the running `serve`, and its owner token."""
    workspace = f"w-{uuid.uuid4().hex[:10]}"
    governance = Governance(env=store_env(running.database_url))
    try:
        owner = governance.create_workspace(workspace, by="test")["token"]
    finally:
        governance.close()
    opened = Service(running, workspace, owner)
    yield opened
    for client in opened.opened:
        client.conn.close()


def test_a_save_is_in_force_for_the_next_evaluate_through_every_other_worker(service):
    clients = service.one_client_per_worker()
    admin = service.issue(clients[0], "admin", "admin")
    sandbox = service.issue(clients[0], "sandbox", "sandbox")
    for i, saver in enumerate(clients):
        mode = "allowlist" if i % 2 == 0 else "denylist"  # pandas: denied in allowlist mode, else allowed
        status, saved = saver.call("PUT", service.w + "/policy", admin, {"python": {"mode": mode, "allow": []}})
        assert status == 200, saved
        for other in clients:
            status, answer = other.call(
                "POST", service.w + "/evaluate", sandbox, {"language": "python", "specs": ["pandas"]}
            )
            assert status == 200, answer
            assert (answer["policy_version"], answer["allowed"]) == (saved["version"], mode == "denylist")


def test_a_token_revoked_through_one_worker_is_refused_by_every_worker_at_once(service):
    clients = service.one_client_per_worker()
    doomed = clients[0].call("POST", service.w + "/tokens", service.owner, {"name": "doomed", "role": "auditor"})[1]
    for client in clients:  # every worker has seen it valid (and may have cached whatever it caches)
        assert client.call("GET", service.w + "/policy", doomed["token"])[0] == 200
    assert clients[-1].call("DELETE", service.w + f"/tokens/{doomed['id']}", service.owner)[0] == 204
    assert [c.call("GET", service.w + "/policy", doomed["token"])[0] for c in clients] == [401] * WORKERS


def test_a_sandbox_revoked_through_one_worker_is_refused_by_every_worker_at_once(service):
    # Evaluate remembers its callers per worker (application.callers): the recording checks them.
    clients = service.one_client_per_worker()
    doomed = clients[0].call(
        "POST", service.w + "/tokens", service.owner, {"name": "doomed-sandbox", "role": "sandbox"}
    )[1]
    ask = {"language": "python", "specs": ["pandas"]}
    for client in clients:
        for _ in range(2):  # seen valid twice: the second time it is the remembered caller
            assert client.call("POST", service.w + "/evaluate", doomed["token"], ask)[0] == 200
    assert clients[-1].call("DELETE", service.w + f"/tokens/{doomed['id']}", service.owner)[0] == 204
    assert [c.call("POST", service.w + "/evaluate", doomed["token"], ask)[0] for c in clients] == [401] * WORKERS


def test_a_run_refused_a_project_through_one_worker_is_refused_everything_by_every_worker(service):
    clients = service.one_client_per_worker()
    admin, sandbox = service.issue(clients[0], "admin", "admin"), service.issue(clients[0], "sandbox", "sandbox")
    assert (
        clients[0].call("PUT", service.w + "/policy", admin, {"python": {"mode": "allowlist", "allow": ["alpha"]}})[0]
        == 200
    )
    status, run = clients[0].call("POST", service.w + "/runs", sandbox, {})
    assert status == 201, run
    page = f"/pypi/{service.workspace}/simple/alpha/"
    assert [c.call("GET", page, run["token"])[0] for c in clients] == [200] * WORKERS  # each: not failed yet
    assert (
        clients[-1].call("GET", f"/pypi/{service.workspace}/simple/beta/", run["token"])[0] == 200
    )  # quarantined: denied
    for client in clients:
        status, refused = client.call("GET", page, run["token"])
        assert status == 403 and refused["detail"].startswith("this run already failed: beta (python) was denied")


def test_no_decision_is_lost_or_doubled_across_workers_and_one_scrape_counts_them_all(service):
    clients = service.one_client_per_worker()
    sandbox = service.issue(clients[0], "sandbox", "sandbox")
    answered: list[str] = []
    lock = threading.Lock()

    def hammer(client: Client) -> None:
        for _ in range(40):
            body = {"language": "python", "specs": ["pandas", "numpy==1.0"]}
            status, answer = client.call("POST", service.w + "/evaluate", sandbox, body)
            assert status == 200, answer
            with lock:
                answered.extend(d["id"] for d in answer["decisions"])

    connections = clients + [service.client() for _ in range(3)]  # several requests at once per worker
    counted_before = service.decisions_counted(clients[0])  # the module's earlier tests' decisions
    threads = [threading.Thread(target=hammer, args=(c,)) for c in connections]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(answered) == 2 * 40 * len(threads) == len(set(answered))
    assert sorted(service.stored_decision_ids()) == sorted(answered)  # none lost, doubled or unanswered
    for client in clients:  # whichever worker answers the scrape, it counts every worker's decisions
        assert service.decisions_counted(client) - counted_before == len(answered)


def test_one_file_fetched_through_every_worker_in_one_run_is_one_decision_delivered_by_each(service):
    clients = service.one_client_per_worker()
    admin, sandbox = service.issue(clients[0], "admin", "admin"), service.issue(clients[0], "sandbox", "sandbox")
    assert (
        clients[0].call("PUT", service.w + "/policy", admin, {"python": {"mode": "allowlist", "allow": ["alpha"]}})[0]
        == 200
    )
    status, run = clients[0].call("POST", service.w + "/runs", sandbox, {})
    assert status == 201, run
    wheel = service.running.upstream.file("alpha-1.0-py3-none-any.whl")
    for client in clients:  # each worker judges the fetch afresh: none remembers the others' decision
        assert (
            fetch_file(client, f"/pypi/{service.workspace}/files/alpha/" + wheel.filename, run["token"]) == wheel.data
        )
    deadline = time.monotonic() + 30
    while True:
        status, answer = clients[0].call("GET", f"{service.w}/runs/{run['id']}/decisions", sandbox)
        assert status == 200, answer
        (decision,) = answer["decisions"]  # one decision for the run's file, whichever worker made it
        if len(decision.get("deliveries", ())) == WORKERS:
            break
        assert time.monotonic() < deadline, decision
        time.sleep(0.05)
    assert service.stored_decision_ids() == [decision["id"]]
    # The first worker fetches the file upstream and keeps it on the disk every worker shares; the
    # others send that verified copy: one delivery per transfer, each with the bytes sent.
    assert sorted((d["status"], d["bytes"], d["sha256"]) for d in decision["deliveries"]) == [
        ("cached", len(wheel.data), wheel.sha256)
    ] * (WORKERS - 1) + [("served", len(wheel.data), wheel.sha256)]


def test_serve_s_own_process_seals_what_every_worker_records_and_no_worker_seals(service):
    """The workers run no sealer (it would share their request threads' GIL): with serve's own
    process stopped, what they record stays unsealed; once it runs again, it seals it all."""
    clients = service.one_client_per_worker()
    sandbox = service.issue(clients[0], "sandbox", "sandbox")
    assert _all_sealed_within_a_minute(service)
    os.kill(service.running.process.pid, signal.SIGSTOP)
    try:
        for client in clients:
            status, answer = client.call(
                "POST", service.w + "/evaluate", sandbox, {"language": "python", "specs": ["pandas"]}
            )
            assert status == 200, answer
        time.sleep(5 * POLL_SECONDS)  # five rounds of a sealer's poll: one in any worker would have sealed
        assert service.unsealed() == WORKERS
    finally:
        os.kill(service.running.process.pid, signal.SIGCONT)
    assert _all_sealed_within_a_minute(service)


def _all_sealed_within_a_minute(service: Service) -> bool:
    deadline = time.monotonic() + 60  # a bound on waiting, not a measure of speed
    while service.unsealed() and time.monotonic() < deadline:
        time.sleep(0.05)
    return service.unsealed() == 0
