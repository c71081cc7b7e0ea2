"""Who may call what: one table of every route the service registers, and every role against it.

The table says, for each (method, route rule) under /api/v1, the least role that may call it and
whether the call records something (an auditor's token is read-only: it never holds a right that
records, whatever its rank). The index (/pypi, /npm, which take a run's or an API token) and the
routes that need no token are classified apart. A route the app registers that no table names
fails the first test until someone classifies it; so does a table row no route answers.
"""

from __future__ import annotations

import base64
import itertools
import string
from dataclasses import dataclass

import pytest

from tests.support.index_live import index_live_env  # noqa: F401 - the live_env fixture

RANK = ["sandbox", "auditor", "admin", "owner"]
W = "/api/v1/workspaces/<ws>"
ACME = "/api/v1/workspaces/acme"
EVALUATE = {"language": "python", "specs": ["pandas==2.1"], "context": {"sandbox": "sbx-42"}}
EGRESS = {"target": "https://docs.python.org/3/", "resolved": ["151.101.0.223"]}
ADVISORY = {"id": "MAL-ROLES", "affected": [{"package": {"ecosystem": "npm", "name": "probe"}, "versions": ["1.0.0"]}]}
_serial = itertools.count()


def unique(prefix: str) -> str:
    """A fresh name per call, so that every allowed call makes something new (no 409 for a twin)."""
    return f"{prefix}-{next(_serial)}"


@dataclass(frozen=True)
class Right:
    least: str  # the least role that may call it ("sandbox": every role of the workspace may)
    path: str  # the concrete path called; {request} and the like are made fresh for each call
    body: object = None  # a body, or a function of nothing returning one
    records: bool = False  # the call adds to the record: never with an auditor's token

    def allows(self, role: str) -> bool:
        if self.records and role == "auditor":
            return False
        return RANK.index(role) >= RANK.index(self.least)


# (method, route rule) -> who may call it, with a call that succeeds for every role allowed.
API = {
    ("GET", W + "/policy"): Right("auditor", "/policy"),
    ("PUT", W + "/policy"): Right("admin", "/policy", {"note": "x"}),
    ("POST", W + "/policy/changes"): Right(
        "admin", "/policy/changes", {"changes": [{"action": "switch-mode", "language": "node", "mode": "denylist"}]}
    ),
    ("GET", W + "/history"): Right("auditor", "/history"),
    ("POST", W + "/evaluate"): Right("sandbox", "/evaluate", EVALUATE, records=True),
    ("POST", W + "/test"): Right("auditor", "/test", {"language": "python", "specs": ["x"]}),
    ("GET", W + "/decisions"): Right("auditor", "/decisions"),
    ("GET", W + "/decisions/<decision_id>"): Right("auditor", "/decisions/{decision}"),
    ("GET", W + "/packages/<language>/<path:name>"): Right("auditor", "/packages/python/pandas"),
    ("POST", W + "/tokens"): Right("owner", "/tokens", lambda: {"name": unique("n"), "role": "auditor"}),
    ("GET", W + "/tokens"): Right("owner", "/tokens"),
    ("DELETE", W + "/tokens/<token_id>"): Right("owner", "/tokens/{token}"),
    ("POST", W + "/egress/evaluate"): Right("sandbox", "/egress/evaluate", EGRESS, records=True),
    ("POST", W + "/egress/test"): Right("admin", "/egress/test", {**EGRESS, "hostname_allowlist": ["docs.python.org"]}),
    ("POST", W + "/requests"): Right(
        "sandbox", "/requests", lambda: {"language": "python", "name": unique("zeta")}, records=True
    ),
    ("GET", W + "/requests"): Right("sandbox", "/requests"),  # a sandbox token: its own
    ("GET", W + "/requests/<request_id>"): Right("sandbox", "/requests/{request}"),
    ("POST", W + "/requests/<request_id>/approve"): Right("admin", "/requests/{request}/approve", {}),
    ("POST", W + "/requests/<request_id>/reject"): Right("admin", "/requests/{request}/reject", {}),
    ("GET", W + "/exceptions"): Right("auditor", "/exceptions"),
    ("POST", W + "/exceptions"): Right("admin", "/exceptions", lambda: {"language": "python", "name": unique("o")}),
    ("DELETE", W + "/exceptions/<exception_id>"): Right("admin", "/exceptions/{exception}"),
    ("POST", W + "/impact"): Right("admin", "/impact", {"draft": {}}),
    ("POST", W + "/runs"): Right("sandbox", "/runs", {}, records=True),
    ("GET", W + "/runs/<run_id>/decisions"): Right("sandbox", "/runs/{run}/decisions"),  # a sandbox: its runs
    ("DELETE", W + "/runs/<run_id>"): Right("sandbox", "/runs/{run}", records=True),  # a sandbox: its runs
    ("GET", W + "/audit/checkpoints"): Right("auditor", "/audit/checkpoints"),
    ("POST", W + "/audit/checkpoints"): Right("admin", "/audit/checkpoints"),
    ("GET", W + "/audit/verify"): Right("auditor", "/audit/verify"),
    ("GET", W + "/audit/proof/inclusion"): Right("auditor", "/audit/proof/inclusion?decision={sealed}"),
    ("GET", W + "/audit/proof/consistency"): Right("auditor", "/audit/proof/consistency?from={checkpointed}"),
    ("GET", W + "/runs/<run_id>/receipt"): Right("sandbox", "/runs/{run}/receipt"),  # a sandbox: its runs
    ("POST", W + "/allowlist/closure"): Right(
        "admin", "/allowlist/closure", {"language": "python", "specs": ["alpha"]}
    ),
    ("POST", W + "/allowlist/synthesis"): Right("admin", "/allowlist/synthesis", {"language": "python"}),
    ("POST", W + "/advisories"): Right("owner", "/advisories", ADVISORY),
    ("GET", W + "/advisories/<advisory>/exposure"): Right("auditor", "/advisories/{advisory}/exposure"),
    ("GET", W + "/unknown-names"): Right("auditor", "/unknown-names"),
}

# The package index: any token that may record (a run's, sandbox, admin, owner), never an
# auditor's. A missing token is 403 for pip (which would prompt on a 401) and 401 for npm.
# (method, route rule) -> (a path under it, what an allowed call answers, the answer without a token)
INDEX = {
    ("GET", "/pypi/<ws>/simple/"): ("/pypi/acme/simple/", 200, 403),
    ("GET", "/pypi/<ws>/simple/<project>"): ("/pypi/acme/simple/Alpha", 200, 403),  # 301 to the page
    ("GET", "/pypi/<ws>/simple/<project>/"): ("/pypi/acme/simple/alpha/", 200, 403),
    ("GET", "/pypi/<ws>/files/<project>/<filename>"): ("/pypi/acme/files/alpha/alpha-1.0-py3-none-any.whl", 200, 403),
    ("GET", "/pypi/<ws>/"): ("/pypi/acme/", 404, 403),  # declared so that uploads are 405, not 404
    ("GET", "/pypi/<ws>/<path:rest>"): ("/pypi/acme/legacy/", 404, 403),
    ("GET", "/npm/<ws>/"): ("/npm/acme/", 404, 401),  # no package named
    ("GET", "/npm/<ws>/<path:rest>"): ("/npm/acme/alpha", 200, 401),
}

# No token: operations, the published document and key, and the front page (it sends to the console).
PUBLIC = {
    ("GET", "/healthz"),
    ("GET", "/readyz"),
    ("GET", "/metrics"),
    ("GET", "/api/v1/openapi.json"),
    ("GET", "/api/v1/audit/public-key"),
    ("GET", "/"),
}


# Deployment-wide, any workspace's token of the role (owner: 201; admin: 403; none: 401), shown in
# tests/interface/test_index_advisories.py::test_advisories_import_at_the_deployments_own_path_with_an_owner_token,
# and the deployment's own chain (auditor+), in
# tests/interface/test_audit_api.py::test_any_workspaces_auditor_verifies_the_deployments_own_chain_of_advisory_imports.
DEPLOYMENT = {("POST", "/api/v1/advisories"), ("GET", "/api/v1/audit/checkpoints"), ("GET", "/api/v1/audit/verify")}


def registered(app) -> set[tuple[str, str]]:
    """Every (method, rule) the app answers, but the console's (signed in by session, tested with
    its pages) and Flask's static files."""
    return {
        (method, rule.rule)
        for rule in app.url_map.iter_rules()
        if not rule.endpoint.startswith("console.") and rule.endpoint != "static"
        for method in rule.methods - {"HEAD", "OPTIONS"}
    }


def test_every_registered_route_is_classified_once_and_every_classified_route_exists(live):
    tables = [set(API), set(INDEX), PUBLIC, DEPLOYMENT]
    classified = set().union(*tables)
    assert sum(len(t) for t in tables) == len(classified), "a route is in two tables"
    routes = registered(live.app)
    assert routes - classified == set(), "registered routes no table classifies: say who may call them"
    assert classified - routes == set(), "classified routes the app does not register"


class Maker:
    """Makes, for one call, the fresh resources its path names ({request}, {run}, ...), so that
    an allowed call can succeed (decide a request, revoke a token) for every role in turn."""

    def __init__(self, live):
        self.live = live

    def call(self, role: str, method: str, path: str, body=None):
        reply = self.live.call(method, ACME + path, self.live.tokens[role], body)
        assert 200 <= reply.status < 300, (method, path, reply.status, reply.body)
        return reply.json

    def request(self) -> str:  # filed by the sandbox token, so that it may read it
        return self.call("sandbox", "POST", "/requests", {"language": "python", "name": unique("beta")})["id"]

    def exception(self) -> str:
        return self.call("admin", "POST", "/exceptions", {"language": "python", "name": unique("beta")})["id"]

    def token(self) -> str:
        return self.call("owner", "POST", "/tokens", {"name": unique("t"), "role": "sandbox"})["id"]

    def decision(self) -> str:
        return self.call("sandbox", "POST", "/evaluate", EVALUATE)["decisions"][0]["id"]

    def sealed(self) -> str:  # a decision a checkpoint covers, so that it can be proven
        decision = self.decision()
        self.call("admin", "POST", "/audit/checkpoints")
        return decision

    def checkpointed(self) -> str:  # a tree of at least one sealed record: a consistency proof from 1
        self.sealed()
        return "1"

    def advisory(self) -> str:  # imported by the owner token: every workspace's, so acme's too
        self.call("owner", "POST", "/advisories", ADVISORY)
        return ADVISORY["id"]

    def run(self) -> str:  # started by the sandbox token, so that it may read its decisions
        return self.call("sandbox", "POST", "/runs", {})["id"]

    def path(self, right: Right) -> str:
        names = [field for _, field, _, _ in string.Formatter().parse(right.path) if field]
        return ACME + right.path.format(**{name: getattr(self, name)() for name in names})

    def body(self, right: Right):
        return right.body() if callable(right.body) else right.body


@pytest.mark.parametrize("method,rule", sorted(API), ids=lambda v: v.removeprefix(W))
def test_every_role_against_every_api_route(live, method, rule):
    right, make = API[(method, rule)], Maker(live)
    for role in RANK:
        reply = live.call(method, make.path(right), live.tokens[role], make.body(right))
        if right.allows(role):
            assert 200 <= reply.status < 300, (role, reply.status, reply.body)
        else:
            assert reply.status == 403 and reply.media == "application/problem+json", (role, reply.status)
    for token, status in ((None, 401), ("rcp_unknown", 401), (live.tokens["other-workspace"], 404)):
        reply = live.call(method, make.path(right), token, make.body(right))
        assert reply.status == status and reply.media == "application/problem+json", (token, reply.status)


def test_testing_a_draft_needs_an_admin_although_testing_the_saved_policy_does_not(live):
    body = {"language": "python", "specs": ["x"], "draft": {}}
    for role in RANK:
        reply = live.call("POST", ACME + "/test", live.tokens[role], body)
        assert reply.status == (200 if RANK.index(role) >= RANK.index("admin") else 403), (role, reply.status)


def basic(token: str) -> dict:
    return {"Authorization": "Basic " + base64.b64encode(f"pip:{token}".encode()).decode()}


@pytest.mark.parametrize("method,rule", sorted(INDEX), ids=lambda v: v)
def test_every_role_against_every_index_route(live, method, rule):
    path, allowed, unauthenticated = INDEX[(method, rule)]
    for role in RANK:
        reply = live.call(method, path, headers=basic(live.tokens[role]))
        assert reply.status == (403 if role == "auditor" else allowed), (role, reply.status, reply.body)
    for headers, status in (({}, unauthenticated), (basic("rcp_unknown"), unauthenticated)):
        assert live.call(method, path, headers=headers).status == status
    assert live.call(method, path, headers=basic(live.tokens["other-workspace"])).status == 404


@pytest.mark.parametrize("method,path", sorted(PUBLIC))
def test_the_public_routes_answer_without_a_token(live, method, path):
    reply = live.call(method, path)
    assert reply.status == 200, (path, reply.status, reply.body)
