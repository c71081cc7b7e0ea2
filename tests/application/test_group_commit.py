"""Group commit under pressure: a request answered 503 is never recorded
afterwards, and one large request cannot make others wait behind an unbounded commit.

The save is the real one on a real store, held at chosen moments so the interleaving is certain."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

import pytest

from application import decision_writer
from application.decision_writer import DecisionWriter, StoreUnavailableError
from tests.application.test_decision_writer import decision

DEADLINE = 0.3  # seconds an asker waits while its request is still queued


@pytest.fixture
def short_deadline(monkeypatch):
    monkeypatch.setattr(decision_writer, "WAIT_SECONDS", DEADLINE)


class HeldSave:
    """The store's save, where call N waits until `release(N)` (or a 10 s safety bound)."""

    def __init__(self, save):
        self.save, self.calls, self.sizes = save, 0, []
        self.entered = [threading.Event() for _ in range(8)]
        self.released = [threading.Event() for _ in range(8)]

    def __call__(self, *events, guards=()):
        number, self.calls = self.calls, self.calls + 1
        self.entered[number].set()
        self.released[number].wait(10)
        self.sizes.append(len(events))
        return self.save(*events, guards=guards)

    def release(self, number: int) -> None:
        self.released[number].set()


class Asker(threading.Thread):
    def __init__(self, writer: DecisionWriter, workspace: str, *specs: str):
        super().__init__(daemon=True)
        self.writer, self.decisions, self.outcome = writer, [decision(workspace, s) for s in specs], None
        self.start()

    def run(self):
        try:
            self.writer.record(*self.decisions)
            self.outcome = "recorded"
        except StoreUnavailableError:
            self.outcome = "503"


def stored_specs(app, workspace) -> set[str]:
    return {d["spec"] for d in app.audit.export_decisions(workspace)}


def queued(writer: DecisionWriter, count: int) -> None:
    for _ in range(1000):  # until the writer's queue holds them (the askers' threads have run)
        if writer._queue.qsize() >= count:
            return
        time.sleep(0.005)
    raise AssertionError("the requests never reached the writer")


def test_a_request_whose_commit_began_is_answered_by_its_outcome_never_503_then_recorded(
    app, workspace, short_deadline
):
    save = HeldSave(app.save)
    writer = DecisionWriter(save)
    first = Asker(writer, workspace, "first")
    save.entered[0].wait(10)
    late = [Asker(writer, workspace, f"late-{i}") for i in range(3)]
    queued(writer, 3)
    save.release(0)
    save.entered[1].wait(10)  # the three late requests are being committed together...
    time.sleep(DEADLINE * 3)  # ...and that commit outlasts their deadline
    save.release(1)
    for asker in (first, *late):
        asker.join(10)
    writer.close()
    stored = stored_specs(app, workspace)
    for asker in (first, *late):
        spec = asker.decisions[0].record["spec"]
        assert (asker.outcome, spec in stored) == ("recorded", True), (spec, asker.outcome)


def test_a_request_still_queued_at_its_deadline_is_answered_503_and_never_recorded(app, workspace, short_deadline):
    save = HeldSave(app.save)
    writer = DecisionWriter(save)
    first = Asker(writer, workspace, "first")
    save.entered[0].wait(10)
    waiting = Asker(writer, workspace, "waiting")
    waiting.join(10)  # its deadline passed while the first commit was held
    assert waiting.outcome == "503"
    save.release(0)
    first.join(10)
    after = Asker(writer, workspace, "after")  # the writer goes on; the withdrawn request stays out
    save.release(1)
    after.join(10)
    writer.close()
    assert (first.outcome, after.outcome) == ("recorded", "recorded")
    assert stored_specs(app, workspace) == {"first", "after"}


def test_a_commit_holds_a_bounded_number_of_decisions_and_requests_keep_their_order(app, workspace):
    save = HeldSave(app.save)
    for number in range(8):
        save.release(number) if number else None
    writer = DecisionWriter(save)
    first = Asker(writer, workspace, "first")
    save.entered[0].wait(10)
    large = [Asker(writer, workspace, *(f"large-{i}-{j}" for j in range(500))) for i in range(3)]
    queued(writer, 3)
    small = Asker(writer, workspace, "small")
    queued(writer, 4)
    save.release(0)
    for asker in (first, *large, small):
        asker.join(30)
    writer.close()
    assert [a.outcome for a in (first, *large, small)] == ["recorded"] * 5
    assert save.sizes[1:] and max(save.sizes) <= decision_writer.MAX_BATCH_EVENTS, save.sizes
    assert sum(save.sizes) == 1 + 3 * 500 + 1 and "small" in stored_specs(app, workspace)


def test_requests_queued_while_the_writer_waits_for_its_turn_ride_in_its_batch(app, workspace):
    """Where processes take turns at the store (SQLite), the writer takes its turn before it fills
    its batch: what is queued while another process writes is committed with what it holds."""
    waiting, let_go = threading.Event(), threading.Event()

    @contextmanager
    def turn():  # another process's write, until `let_go`
        waiting.set()
        let_go.wait(10)
        yield

    save = HeldSave(app.save)
    for number in range(8):
        save.release(number)
    writer = DecisionWriter(save, turn)
    first = Asker(writer, workspace, "first")
    waiting.wait(10)
    later = [Asker(writer, workspace, f"later-{i}") for i in range(3)]
    queued(writer, 3)
    let_go.set()
    for asker in (first, *later):
        asker.join(10)
    writer.close()
    assert [a.outcome for a in (first, *later)] == ["recorded"] * 4
    assert save.sizes == [4]  # one commit: not the first alone, then the three
