"""Fail closed on outage, shown: PostgreSQL stopped and started again under evaluate load.

The test starts a throwaway cluster of its own (tests/support/postgres_cluster.py), serves the
real app on loopback against it, and keeps sandboxes evaluating while it stops the server and
starts it again. While it is down: every answer is 503 (never an allow, never a 500) and
/readyz is not ready. Afterwards the same process recovers by itself, and every allow that was
ever answered is in the store.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass

import pytest

from application import decision_writer
from application.decision_writer import DecisionWriter, StoreUnavailableError
from application.governance import Governance
from application.store import postgres, store_env
from interface import create_app
from tests.application.test_decision_writer import decision
from tests.support.http_client import LiveServer
from tests.support.postgres_cluster import Cluster, Unavailable

EVALUATE = "/api/v1/workspaces/acme/evaluate"
ASKERS = 4
BOUND = 60  # seconds any phase may take before the test gives up (a bound, not a measurement)
NO_ANSWER = 0
# A short wait for a pooled connection, so that while the server is down each store call gives
# up quickly and answers stay well inside the client's timeout on a loaded machine.
POOL_WAIT = "?connect_timeout=2"


@pytest.fixture
def cluster():
    try:
        cluster = Cluster()
        cluster.start()
    except Unavailable as why:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the PostgreSQL outage test: {why}", pytrace=False)
        pytest.skip(f"SKIPPING POSTGRESQL OUTAGE TEST: {why}")
    yield cluster
    cluster.destroy()


@dataclass
class Answer:
    sent: float
    received: float
    status: int
    allowed: bool | None
    ids: tuple[str, ...]


class Load:
    """Sandboxes evaluating an allowed package in a loop, every answer kept."""

    def __init__(self, server: LiveServer, token: str):
        self.server, self.token, self.answers, self.stop = server, token, [], threading.Event()
        self.threads = [threading.Thread(target=self._ask, daemon=True) for _ in range(ASKERS)]
        for thread in self.threads:
            thread.start()

    def _ask(self):
        while not self.stop.is_set():
            sent = time.monotonic()
            try:
                reply = self.server.call("POST", EVALUATE, self.token, {"language": "python", "specs": ["pandas"]})
            except OSError:  # no answer within the client's timeout: a gate fails closed on that too
                self.answers.append(Answer(sent, time.monotonic(), NO_ANSWER, None, ()))
                continue
            body = reply.json if reply.status == 200 else {}
            ids = tuple(d["id"] for d in body.get("decisions", []))
            self.answers.append(Answer(sent, time.monotonic(), reply.status, body.get("allowed"), ids))

    def wait_for(self, count: int, after: float, status: int | None = None) -> list[Answer]:
        deadline = time.monotonic() + BOUND
        while time.monotonic() < deadline:
            found = [a for a in list(self.answers) if a.sent > after and status in (None, a.status)]
            if len(found) >= count:
                return found
            time.sleep(0.05)
        raise AssertionError(f"fewer than {count} answers (status {status}) within {BOUND} s")

    def finish(self) -> list[Answer]:
        self.stop.set()
        for thread in self.threads:
            thread.join(BOUND)
        return list(self.answers)


def test_postgres_stopped_and_started_again_under_evaluate_load(cluster, tmp_path):
    app = Governance(env=store_env(cluster.url + POOL_WAIT))
    app.create_workspace("acme", by="founder")
    sandbox = app.issue_token("acme", "sbx", "sandbox", by="founder")["token"]
    app.change_policy("acme", [{"action": "add", "language": "python", "list": "allow", "entries": ["pandas"]}], by="f")
    server = LiveServer(create_app(env={"RUNCODE_POLICY_DATA_DIR": str(tmp_path)}, governance=app))
    try:
        load = Load(server, sandbox)
        load.wait_for(20, after=0, status=200)

        cluster.stop()
        stopped = time.monotonic()
        during = load.wait_for(2 * ASKERS, after=stopped)  # answers to requests sent while it was down
        ready_while_down = server.call("GET", "/readyz")

        cluster.start()
        restarted = time.monotonic()
        load.wait_for(5, after=restarted, status=200)  # it recovers by itself: no restart of the app
        ready_after = server.call("GET", "/readyz")
        answers = load.finish()
    finally:
        server.close()

    assert {a.status for a in answers} <= {200, 503, NO_ANSWER}, "never a 500 (or anything else)"
    down = [a for a in during if a.received < restarted and a.status != NO_ANSWER]
    assert down and all(a.status == 503 for a in down), "while it is down, every answer is a denial"
    assert ready_while_down.status == 503 and ready_after.status == 200
    answered = {i for a in answers if a.status == 200 for i in a.ids}
    stored = {d["id"] for d in app.audit.export_decisions("acme")}
    assert answered <= stored, "every decision answered 200 is in the store"
    assert all(a.allowed for a in answers if a.status == 200)
    app.close()


class CountedSave:
    """The store's real save, counting the commits the writer tried."""

    def __init__(self, save):
        self.save, self.tried = save, 0

    def __call__(self, *events, guards=()):
        self.tried += 1
        return self.save(*events, guards=guards)


def test_once_the_store_did_not_answer_requests_are_refused_without_trying_it_until_the_cool_off_ends(
    cluster, monkeypatch
):
    monkeypatch.setattr(decision_writer, "COOL_OFF_SECONDS", BOUND)  # no slow machine outlasts it
    app = Governance(env=store_env(cluster.url + POOL_WAIT))
    app.create_workspace("acme", by="founder")
    save = CountedSave(app.record_events)
    writer = DecisionWriter(save)
    writer.record(decision("acme", "before"))
    cluster.stop()
    try:
        with pytest.raises(StoreUnavailableError):
            writer.record(decision("acme", "found-down"))
        tried = save.tried
        with pytest.raises(StoreUnavailableError, match="did not answer a moment ago"):
            writer.record(decision("acme", "refused-at-once"))
        assert save.tried == tried, "refused without another commit (nor another wait for the pool)"
        cluster.start()
        monkeypatch.setattr(decision_writer, "COOL_OFF_SECONDS", 0.0)
        writer._down_until = 0.0  # the cool-off over: the next request is the next probe
        recorded_after(writer, decision("acme", "after"))
        assert save.tried > tried
    finally:
        writer.close()
    assert {d["spec"] for d in app.audit.export_decisions("acme")} == {"before", "after"}
    app.close()


def recorded_after(writer: DecisionWriter, aggregate) -> None:
    """Recorded once the pool has connected again (it retries by itself, backing off)."""
    events, deadline = aggregate.collect_events(), time.monotonic() + BOUND
    while True:
        try:
            return writer.record_events(*events)
        except StoreUnavailableError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_after_its_reconnect_window_the_pool_stops_backing_off_so_a_server_back_is_used_at_once(
    cluster, monkeypatch, caplog
):
    """psycopg's pool doubles its delay between reconnection attempts until its reconnect window
    ends (its default: 5 minutes, so a server back after 40 s was used 20 s later); the store's
    window is short, after which the next request starts connecting afresh."""
    monkeypatch.setattr(postgres, "RECONNECT_SECONDS", 1.0)  # the window, shortened for the test
    caplog.set_level(logging.WARNING, logger="psycopg.pool")
    app = Governance(env=store_env(cluster.url + POOL_WAIT))
    app.create_workspace("acme", by="founder")
    cluster.stop()
    deadline = time.monotonic() + BOUND
    while not any("reconnection attempt" in r.getMessage() for r in caplog.records):
        assert time.monotonic() < deadline, "the pool went on backing off past its window"
        with pytest.raises(StoreUnavailableError):
            app.writer.record(decision("acme", "while-down"))
        time.sleep(0.2)
    cluster.start()
    recorded_after(app.writer, decision("acme", "after"))
    assert {d["spec"] for d in app.audit.export_decisions("acme")} == {"after"}
    app.close()
