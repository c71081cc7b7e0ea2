"""/metrics counts exactly what happened: each decision once under its kind, outcome and reason,
each index fetch once, each request once in the latency histogram. Labels come from closed sets,
so no caller can grow it.

The registry is shared by every test of the process, so each test compares the scrape before and
after its action (tests.support.metrics) rather than looking for a series."""

from __future__ import annotations

import base64

from tests.support.index_fixtures import set_policy, start_run
from tests.support.index_live import index_live_env  # noqa: F401 - the live_env fixture
from tests.support.metrics import added, labels, samples

P = "/api/v1/workspaces/acme"
DECISIONS = "runcode_policy_decisions_total"
INDEX = "runcode_policy_index_fetches_total"
LATENCY = "runcode_policy_request_seconds_count"
MADE_UP = ("M1234", "BREW", "X" * 40)


def decision(kind: str, outcome: str, reason: str) -> tuple:
    return labels(kind=kind, outcome=outcome, reason=reason)


def index_fetch(language: str, request: str, outcome: str, recorded: str) -> tuple:
    return labels(language=language, request=request, outcome=outcome, recorded=recorded)


def fetch(live, path: str, run: dict):
    auth = "Basic " + base64.b64encode(f"pip:{run['token']}".encode()).decode()
    return live.call("GET", path, headers={"Authorization": auth})


def test_a_made_up_http_method_is_counted_as_other_and_never_becomes_a_label(live):
    before = samples(live)
    for method in MADE_UP:
        assert live.call(method, "/healthz").status == 405
    text = live.call("GET", "/metrics").body.decode()
    assert not any(method in text for method in MADE_UP)
    assert added(before, samples(live), LATENCY)[labels(method="other", endpoint="unmatched", status="405")] == 3


def test_every_decision_of_an_evaluation_is_counted_once_by_kind_outcome_and_reason(live, app):
    set_policy(app, "allowlist", python=["pandas"])
    body = {"language": "python", "specs": ["pandas", "requests", "flask", "-r x.txt"]}
    for _ in range(2):  # the second time starts from non-zero counts
        before = samples(live)
        assert live.call("POST", P + "/evaluate", live.tokens["sandbox"], body).status == 200
        assert added(before, samples(live), DECISIONS) == {
            decision("registry", "allowed", "matches-the-allow-list"): 1,
            decision("registry", "denied", "not-on-the-allow-list"): 2,
            decision("option", "denied", "invalid-spec"): 1,
        }


def test_a_test_against_a_draft_records_nothing_and_counts_no_decision(live):
    before = samples(live)
    body = {"language": "python", "specs": ["pandas", "requests"]}
    assert live.call("POST", P + "/test", live.tokens["auditor"], body).status == 200
    assert added(before, samples(live), DECISIONS) == {}


def test_egress_decisions_are_counted_once_each(live):
    before = samples(live)
    for _ in range(2):
        live.call("POST", P + "/egress/evaluate", live.tokens["sandbox"], {"target": "http://127.0.0.1/"})
    assert added(before, samples(live), DECISIONS) == {decision("egress", "denied", "loopback"): 2}


def test_index_fetches_are_counted_new_or_repeat_and_only_new_ones_as_decisions(live, app):
    set_policy(app, "allowlist", python=["alpha"])
    run = start_run(live)
    before = samples(live)
    for _ in range(3):  # a resolver asking again: one decision, then repeats
        assert fetch(live, "/pypi/acme/simple/alpha/", run).status == 200
    assert fetch(live, "/pypi/acme/files/alpha/alpha-1.0-py3-none-any.whl", run).status == 200
    # last: a run fails closed at its first denial, so nothing is served to it after this page
    assert fetch(live, "/pypi/acme/simple/gamma/", run).status == 200  # a quarantined page
    after = samples(live)
    assert added(before, after, INDEX) == {
        index_fetch("python", "page", "allowed", "new"): 1,
        index_fetch("python", "page", "allowed", "repeat"): 2,
        index_fetch("python", "page", "denied", "new"): 1,
        index_fetch("python", "download", "allowed", "new"): 1,
    }
    assert added(before, after, DECISIONS) == {
        decision("registry", "allowed", "matches-the-allow-list"): 2,
        decision("registry", "denied", "not-on-the-allow-list"): 1,
    }


def test_each_request_is_observed_once_under_its_route_rule_method_and_status(live):
    before = samples(live)
    for _ in range(3):
        assert live.call("GET", "/healthz").status == 200
    assert live.call("GET", P + "/policy", live.tokens["auditor"]).status == 200
    assert live.call("GET", P + "/policy", live.tokens["sandbox"]).status == 403
    assert live.call("GET", P + "/policy").status == 401
    policy = P.replace("acme", "<ws>") + "/policy"
    assert added(before, samples(live), LATENCY) == {
        labels(method="GET", endpoint="/healthz", status="200"): 3,
        labels(method="GET", endpoint=policy, status="200"): 1,
        labels(method="GET", endpoint=policy, status="403"): 1,
        labels(method="GET", endpoint=policy, status="401"): 1,
        labels(method="GET", endpoint="/metrics", status="200"): 1,  # the first scrape, seen by the second
    }
