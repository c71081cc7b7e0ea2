"""/metrics: labels come from closed sets, so no caller can grow it (issue 12, finding 2)."""

from __future__ import annotations

MADE_UP = ("M1234", "BREW", "X" * 40)


def test_a_made_up_http_method_is_counted_as_other_and_never_becomes_a_label(live):
    for method in MADE_UP:
        assert live.call(method, "/healthz").status == 405
    text = live.call("GET", "/metrics").body.decode()
    assert 'method="other",status="405"' in text
    assert not any(method in text for method in MADE_UP)


def test_decisions_are_counted_by_kind_outcome_and_reason(live):
    body = {"language": "python", "specs": ["pandas", "-r x.txt"]}
    assert live.call("POST", "/api/v1/workspaces/acme/evaluate", live.tokens["sandbox"], body).status == 200
    text = live.call("GET", "/metrics").body.decode()
    assert 'runcode_policy_decisions_total{kind="registry",outcome="allowed",reason="not-on-the-deny-list"}' in text
    assert 'kind="option",outcome="denied",reason="invalid-spec"' in text
