"""Roles: an auditor's token is read-only, so it never adds to the record (an auditor could once
evaluate, and its decisions were recorded)."""

from __future__ import annotations

import pytest

P = "/api/v1/workspaces/acme"
RECORDING = [
    ("/evaluate", {"language": "python", "specs": ["pandas"]}),
    ("/egress/evaluate", {"target": "https://pypi.org/simple/", "resolved": ["151.101.0.223"]}),
]


@pytest.mark.parametrize("path,body", RECORDING, ids=[p for p, _ in RECORDING])
def test_an_auditor_is_refused_every_right_that_records(live, path, body):
    refused = live.call("POST", P + path, live.tokens["auditor"], body)
    assert refused.status == 403 and refused.media == "application/problem+json", refused.body
    assert "auditor" in refused.json["detail"]
    assert live.call("GET", P + "/decisions", live.tokens["auditor"]).json["decisions"] == []
    for role in ("sandbox", "admin", "owner"):  # every other role that may evaluate still may
        assert live.call("POST", P + path, live.tokens[role], body).status == 200, role
