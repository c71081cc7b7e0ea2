"""Two `runcode-policy serve` instances over one PostgreSQL, as on two machines: separate process
trees (their own sessions), separate data directories, no shared memory. The store is all they
share, yet a Save through one is in force at the next evaluate through the other, concurrent
evaluates through both lose or double no decision, and the workspace keeps one chain that verifies."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest

from tests.support.postgres_pool import split_schema

pytestmark = pytest.mark.postgres
ROOT = Path(__file__).resolve().parents[2]
W = "/api/v1/workspaces/default"
EVALUATES = 30  # per connection
CONNECTIONS = 3  # per instance


def call(port: int, method: str, path: str, token: str, body=None) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
        reply = conn.getresponse()
        return reply.status, json.loads(reply.read() or b"null")
    finally:
        conn.close()


class Instance:
    """One `serve` in its own session and data directory; what it printed while starting."""

    def __init__(self, database_url: str, data_dir: Path, **more_env: str):
        env = {
            **os.environ,
            "RUNCODE_POLICY_DATABASE_URL": database_url,
            "RUNCODE_POLICY_DATA_DIR": str(data_dir),
            **more_env,
        }
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "interface.cli", "serve", "--port", "0", "--workers", "2", "--threads", "4"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,  # its own process tree, as on another machine
        )
        self.said: list[str] = []
        while not self.said or not self.said[-1].startswith("runcode-policy listening on "):
            line = self.process.stdout.readline()
            assert line, f"serve exited: {self.said}"
            self.said.append(line.strip())
        self.port = int(self.said[-1].split()[3].rsplit(":", 1)[1])

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=90)
        self.process.stdout.close()


@pytest.fixture
def instances(postgres_schema_url, tmp_path):
    """(first, second, owner token): the first start made the workspace `default` and printed its
    owner token; the second found the store in use."""
    started = []
    try:
        started.append(Instance(postgres_schema_url, tmp_path / "one"))
        started.append(Instance(postgres_schema_url, tmp_path / "two"))
        owner = next(s for s in started[0].said if s.startswith("owner token")).rsplit(" ", 1)[1]
        assert not any(s.startswith("owner token") for s in started[1].said)
        yield started[0], started[1], owner
    finally:
        for instance in started:
            instance.stop()


def issue(instance: Instance, owner: str, role: str) -> str:
    status, body = call(instance.port, "POST", W + "/tokens", owner, {"name": role, "role": role})
    assert status == 201, body
    return body["token"]


def test_a_save_through_one_instance_is_in_force_at_the_next_evaluate_through_the_other(instances):
    one, two, owner = instances
    admin, sandbox = issue(one, owner, "admin"), issue(two, owner, "sandbox")
    ask = {"language": "python", "specs": ["pandas"]}
    for saver, asker, mode in ((one, two, "allowlist"), (two, one, "denylist"), (one, two, "allowlist")):
        status, saved = call(saver.port, "PUT", W + "/policy", admin, {"python": {"mode": mode, "allow": []}})
        assert status == 200, saved
        status, answer = call(asker.port, "POST", W + "/evaluate", sandbox, ask)
        assert status == 200, answer
        assert (answer["policy_version"], answer["allowed"]) == (saved["version"], mode == "denylist")


def test_concurrent_evaluates_through_both_are_each_recorded_once_in_one_chain_that_verifies(
    instances, postgres_schema_url
):
    one, two, owner = instances
    sandbox, auditor = issue(one, owner, "sandbox"), issue(two, owner, "auditor")
    answered: list[str] = []
    failures: list = []
    lock = threading.Lock()

    def hammer(instance: Instance) -> None:
        for _ in range(EVALUATES):
            body = {"language": "python", "specs": ["pandas", "numpy==1.0"]}
            status, answer = call(instance.port, "POST", W + "/evaluate", sandbox, body)
            with lock:
                if status != 200:
                    failures.append(answer)
                    return
                answered.extend(d["id"] for d in answer["decisions"])

    threads = [threading.Thread(target=hammer, args=(i,)) for i in (one, two) for _ in range(CONNECTIONS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not failures
    assert len(answered) == 2 * EVALUATES * len(threads) == len(set(answered))
    url, schema = split_schema(postgres_schema_url)
    with psycopg.connect(url) as conn:
        stored = [r[0] for r in conn.execute(f'SELECT id FROM "{schema}".rcp_decisions')]
    assert sorted(stored) == sorted(answered)  # none lost, none doubled, none unanswered

    # Both instances' sealers follow the same store: each event is sealed once, in one chain.
    deadline = time.monotonic() + 120
    while True:
        status, verdict = call(two.port, "GET", W + "/audit/verify", auditor)
        assert status in (200, 429) and (status == 429 or verdict["ok"] is True), verdict  # 429: their own rate
        if status == 200 and not verdict["unsealed"]:
            break
        assert time.monotonic() < deadline, f"the sealers did not catch up: {verdict}"
        time.sleep(1 if status == 429 else 0.05)
    with psycopg.connect(url) as conn:
        seqs = [r[0] for r in conn.execute(f"SELECT seq FROM \"{schema}\".rcp_chain WHERE workspace = 'default'")]
    assert sorted(seqs) == list(range(1, verdict["checked"] + 1))  # one chain: 1..n, no gap, no fork
    assert verdict["checked"] >= len(answered)
    assert call(one.port, "GET", W + "/audit/verify", auditor)[1]["checked"] == verdict["checked"]


def required_faketime() -> str:
    faketime = shutil.which("faketime")
    if faketime is None:
        message = "faketime is not installed (make test-deps installs it)"
        if os.environ.get("CI"):
            pytest.fail(f"{message}; CI must run the clock tests", pytrace=False)
        pytest.skip(f"SKIPPING THE CLOCK TESTS: {message}")
    return faketime


@pytest.mark.parametrize("offset", ["-10s", "+3s"])
def test_an_instance_whose_clock_disagrees_with_postgresql_refuses_to_start_recording_nothing(
    postgres_schema_url, tmp_path, offset
):
    """An instance stamps what it records, and judges expiries, by its own clock: one 10 s behind
    recorded an allow by a Save as made before that Save, and allowed past an exception's end."""
    faketime = required_faketime()
    env = {**os.environ, "RUNCODE_POLICY_DATABASE_URL": postgres_schema_url, "RUNCODE_POLICY_DATA_DIR": str(tmp_path)}
    done = subprocess.run(
        [faketime, "-f", offset, sys.executable, "-m", "interface.cli", "serve", "--port", "0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    way = "behind" if offset.startswith("-") else "ahead of"
    assert done.returncode == 1 and f"s {way} PostgreSQL's" in done.stderr, done.stderr
    assert "synchronise it (NTP)" in done.stderr and "owner token" not in done.stdout
    right = Instance(postgres_schema_url, tmp_path / "right")  # nothing was recorded by the skewed one:
    right.stop()  # a start on the right clock finds an empty store and makes the workspace itself
    assert any(line.startswith('owner token for workspace "default"') for line in right.said), right.said


def test_an_instance_whose_clock_drifts_while_it_runs_records_nothing_and_says_it_is_not_ready(
    postgres_schema_url, tmp_path
):
    """Checked at start only, a clock that drifted later (NTP stopped, a VM resumed) stamped
    records out of order with the other instances' and judged expiries by the wrong instant."""
    said = subprocess.run([required_faketime(), "-f", "+0s", "env"], capture_output=True, text=True, check=True)
    preload = next(line.split("=", 1)[1] for line in said.stdout.splitlines() if line.startswith("LD_PRELOAD="))
    offset = tmp_path / "offset"
    offset.write_text("+0s\n")  # libfaketime reads it again every second
    drifting = Instance(
        postgres_schema_url,
        tmp_path / "one",
        LD_PRELOAD=preload,
        FAKETIME_TIMESTAMP_FILE=str(offset),
        FAKETIME_CACHE_DURATION="1",
    )
    try:
        owner = next(s for s in drifting.said if s.startswith("owner token")).rsplit(" ", 1)[1]
        sandbox = issue(drifting, owner, "sandbox")
        ask = {"language": "python", "specs": ["pandas"]}
        assert call(drifting.port, "POST", W + "/evaluate", sandbox, ask)[0] == 200
        offset.write_text("+10s\n")
        deadline = time.monotonic() + 60  # its clock jumps 10 s: the next check is due at once
        # Each worker reads the offset file when its own second is up, so one may refuse while
        # another still records: counted once twenty answers in a row (any worker) are refusals.
        refused_in_a_row = 0
        while refused_in_a_row < 20:
            assert time.monotonic() < deadline, "the drifted clock was never noticed by every worker"
            refused = call(drifting.port, "POST", W + "/evaluate", sandbox, ask)[0] == 503
            refused_in_a_row = refused_in_a_row + 1 if refused else 0
            if not refused:
                time.sleep(0.2)
        url, schema = split_schema(postgres_schema_url)
        with psycopg.connect(url) as conn:
            recorded = conn.execute(f'SELECT COUNT(*) FROM "{schema}".rcp_decisions').fetchone()[0]
        for _ in range(5):  # every worker refuses, and records nothing
            status, answer = call(drifting.port, "POST", W + "/evaluate", sandbox, ask)
            assert status == 503 and answer["title"] == "Clock out of step with the store", answer
            assert "s ahead of PostgreSQL's" in answer["detail"] and "nothing was recorded" in answer["detail"]
        status, ready = call(drifting.port, "GET", "/readyz", "")
        assert status == 503 and "ahead of PostgreSQL's" in ready["detail"], ready
        with psycopg.connect(url) as conn:
            assert conn.execute(f'SELECT COUNT(*) FROM "{schema}".rcp_decisions').fetchone()[0] == recorded
    finally:
        drifting.stop()
