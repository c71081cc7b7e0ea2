"""The evaluate hot path's remembered callers (application.callers), on both stores.

A second application on the same store stands for another worker process: what it saves or
revokes must stop the first one's remembered caller at its very next recording, and nothing
may be recorded against a version that was not the head, or for a token that was revoked."""

from __future__ import annotations

import threading

import pytest

from application.callers import MAX_REMEMBERED, Callers
from application.store.guards import StaleCaller

ALLOW_PANDAS = {"python": {"mode": "allowlist", "allow": ["pandas"]}}


def recorded(app, workspace) -> list[tuple[str, int]]:
    return sorted((d["spec"], d["policy_version"]) for d in app.audit.export_decisions(workspace))


@pytest.fixture
def sandbox(app, workspace) -> tuple[str, str]:
    issued = app.issue_token(workspace, "ci-sandbox", "sandbox", by="founder")
    return issued["token"], issued["id"]


def remembered_evaluate(app, workspace, token, spec):
    caller = app.authenticate(token, remembered=True)
    assert caller["remembered"], "the first, read, authentication should have been remembered"
    return app.evaluation.evaluate(workspace, "python", [spec], head=caller["head_version"], remembered=caller["id"])


def test_a_remembered_caller_is_recorded_with_the_cached_version_while_nothing_moved(app, workspace, sandbox):
    token, _ = sandbox
    assert app.authenticate(token, remembered=True)["remembered"] is False  # never seen: read
    answer = remembered_evaluate(app, workspace, token, "pandas")
    assert answer["policy_version"] == 0
    assert recorded(app, workspace) == [("pandas", 0)]


def test_a_save_elsewhere_stops_the_remembered_version_and_nothing_is_recorded(open_app, app, workspace, sandbox):
    token, _ = sandbox
    app.authenticate(token)
    app.evaluation.evaluate(workspace, "python", ["numpy"])  # caches version 0 (the default) here
    other = open_app()  # another worker process
    other.save_policy(workspace, ALLOW_PANDAS, by="alice")
    with pytest.raises(StaleCaller):
        remembered_evaluate(app, workspace, token, "torch")
    assert recorded(app, workspace) == [("numpy", 0)]
    # Judged again the slow way (what the API does on StaleCaller): the new head, in force.
    caller = app.authenticate(token)
    answer = app.evaluation.evaluate(workspace, "python", ["torch"], head=caller["head_version"])
    assert (answer["allowed"], answer["policy_version"]) == (False, 2)


def test_a_caller_read_just_before_a_save_elsewhere_is_not_recorded_after_it(open_app, app, workspace, sandbox):
    """Not remembered: the token and the head read together, then a Save commits elsewhere before
    the recording. Such decisions had been recorded after the newer version, carrying the older
    (807 of 3,334 under concurrent Saves at two instances)."""
    token, _ = sandbox
    app.evaluation.evaluate(workspace, "python", ["numpy"])  # caches version 0 here
    caller = app.authenticate(token)  # reads the token and the head: version 0
    open_app().save_policy(workspace, ALLOW_PANDAS, by="alice")  # another process commits version 2
    with pytest.raises(StaleCaller):
        app.evaluation.evaluate(workspace, "python", ["torch"], head=caller["head_version"], token=caller["id"])
    assert recorded(app, workspace) == [("numpy", 0)]


def test_a_revocation_elsewhere_stops_the_remembered_token_and_nothing_is_recorded(open_app, app, workspace, sandbox):
    token, token_id = sandbox
    app.authenticate(token)
    open_app().revoke_token(workspace, token_id, by="founder")
    with pytest.raises(StaleCaller):
        remembered_evaluate(app, workspace, token, "pandas")
    assert recorded(app, workspace) == []
    assert app.authenticate(token) is None
    assert app.authenticate(token, remembered=True) is None  # forgotten once the read refused it


def test_in_one_batch_only_the_stale_request_fails_and_its_neighbour_is_recorded(open_app, app, workspace):
    stale = app.issue_token(workspace, "stale", "sandbox", by="founder")
    fresh = app.issue_token(workspace, "fresh", "sandbox", by="founder")
    for t in (stale, fresh):
        app.authenticate(t["token"])
    app.evaluation.evaluate(workspace, "python", ["warm"])
    open_app().revoke_token(workspace, stale["id"], by="founder")
    hold, release = threading.Event(), threading.Event()
    save = app.writer._save

    def held(*events, guards=()):  # both requests queue behind a held first commit
        if not hold.is_set():
            hold.set()
            release.wait(10)
        return save(*events, guards=guards)

    app.writer._save = held
    outcomes = {}

    def ask(name, token, spec):
        try:
            remembered_evaluate(app, workspace, token, spec)
            outcomes[name] = "recorded"
        except StaleCaller:
            outcomes[name] = "stale"

    first = threading.Thread(target=ask, args=("first", fresh["token"], "first"))
    first.start()
    hold.wait(10)
    askers = [threading.Thread(target=ask, args=(n, t["token"], n)) for n, t in (("s", stale), ("f", fresh))]
    for a in askers:
        a.start()
    while app.writer._queue.qsize() < 2:
        threading.Event().wait(0.005)
    release.set()
    for a in (first, *askers):
        a.join(10)
    assert outcomes == {"first": "recorded", "s": "stale", "f": "recorded"}
    assert [spec for spec, _ in recorded(app, workspace)] == ["f", "first", "warm"]


def test_the_memory_is_bounded():
    callers = Callers()
    for n in range(MAX_REMEMBERED + 10):
        callers.remember(f"digest-{n}", {"id": str(n)})
    assert len(callers._known) <= MAX_REMEMBERED
    assert callers.get(f"digest-{MAX_REMEMBERED + 9}") == {"id": str(MAX_REMEMBERED + 9)}
