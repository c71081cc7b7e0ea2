"""The gate's memories keep within their shares of the worker's index memory; a run's fetch the
gate has forgotten is found in the store, so forgetting never records a decision twice."""

from __future__ import annotations

from application.index.memory import LEAST_BYTES, IndexMemory

FETCHES = 1_500  # ~1 KiB each as weighed: about three times the fetches' share of LEAST_BYTES


def test_the_gate_keeps_within_its_shares_and_a_forgotten_fetch_is_not_recorded_again(app, workspace):
    sandbox = app.authenticate(app.issue_token(workspace, "sbx", "sandbox", by="founder")["token"])
    memory = IndexMemory(LEAST_BYTES)
    app.index.gate.keep_within(memory)
    principal = app.index.authenticate(app.index.runs.start("acme", sandbox)["token"])
    first = app.index.gate.judge(principal, "python", "p0", "page")
    for n in range(1, FETCHES):
        assert app.index.gate.judge(principal, "python", f"p{n}", "page")["recorded"]
    weights = app.index.gate.weights()
    assert 0 < weights["fetches"] <= memory.share("fetches")
    assert all(weights[name] <= memory.share(name) for name in weights)
    again = app.index.gate.judge(principal, "python", "p0", "page")  # forgotten here: the store knows it
    assert first["recorded"] and not again["recorded"] and again["id"] == first["id"]
