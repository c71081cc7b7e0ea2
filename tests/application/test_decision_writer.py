"""Group commit on a real store: concurrent requests share a transaction, one bad request fails
alone (503 for it, its neighbours recorded), and nothing unrecorded is ever answered as done."""

from __future__ import annotations

import threading

from application.decision_writer import DecisionWriter, StoreUnavailableError
from domain.decision import Decision


def decision(workspace: str, spec: str) -> Decision:
    # "poison" carries a value the event transcoder cannot encode (a set), on any store.
    context = {"tags": {"x"}} if spec == "poison" else {}
    return Decision(
        workspace=workspace,
        record={
            "spec": spec,
            "language": "python",
            "name": None,
            "kind": "invalid",
            "allowed": False,
            "reason": "invalid-spec",
            "context": context,
        },
    )


def test_a_bad_request_in_a_batch_fails_alone_and_its_neighbours_are_recorded(app, workspace):
    hold, batches = threading.Event(), []

    def held_save(*aggregates, guards=()):  # the real save, held until every request has queued
        hold.wait(10)
        batches.append(len(aggregates))
        return app.save(*aggregates, guards=guards)

    writer = DecisionWriter(held_save)
    outcomes: dict[str, str] = {}

    def ask(spec: str) -> None:
        try:
            writer.record(decision(workspace, spec))
            outcomes[spec] = "recorded"
        except StoreUnavailableError:
            outcomes[spec] = "503"

    specs = ["warm-up", "a", "b", "c", "poison"]
    threads = [threading.Thread(target=ask, args=(s,)) for s in specs]
    threads[0].start()
    for t in threads[1:]:
        t.start()
    hold.set()
    for t in threads:
        t.join(20)
    writer.close()
    assert outcomes == {"warm-up": "recorded", "a": "recorded", "b": "recorded", "c": "recorded", "poison": "503"}
    stored = sorted(d["spec"] for d in app.audit.export_decisions(workspace))
    assert stored == ["a", "b", "c", "warm-up"]
    assert max(batches) > 1  # requests really were grouped
