"""Requests, exceptions and impact over the real HTTP API (SQLite and PostgreSQL)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from application.formats import iso
from domain.limits import MAX_TEXT
from domain.token import digest, token_id

P = "/api/v1/workspaces/acme"
LOCK = {"python": {"mode": "allowlist", "allow": ["pandas"]}}


def call(live, method, path, role, body=None, expect=None):
    reply = live.call(method, P + path, live.tokens[role], body)
    if expect is not None:
        assert reply.status == expect, (reply.status, reply.body)
    return reply.json if reply.body else None


def ask(live, name="beta", role="sandbox", why="needed for the report"):
    body = {
        "language": "python",
        "name": name,
        "justification": why,
        "context": {"sandbox": "sbx-42", "actor": "agent-7", "run": "r-1", "source": "gate"},
    }
    return live.call("POST", P + "/requests", live.tokens[role], body)


@pytest.fixture
def locked(live):
    call(live, "PUT", "/policy", "admin", LOCK, expect=200)
    return live


def test_a_denied_agent_asks_an_admin_approves_and_the_package_installs(locked):
    live = locked
    denied = call(live, "POST", "/evaluate", "sandbox", {"language": "python", "specs": ["beta"]})["decisions"][0]
    assert not denied["allowed"] and "runcode-policy-gate request python beta" in denied["message"]
    assert "POST /api/v1/workspaces/acme/requests" in denied["message"]
    filed = ask(live, "Beta==1.0")
    assert filed.status == 201 and filed.json["joined"] is False
    request = filed.json
    assert (request["name"], request["status"], request["requesters"]) == ("beta", "open", 1)
    assert request["askers"][0]["context"]["run"] == "r-1" and request["denied_last_30_days"] == 1
    again = ask(live, "beta", role="admin", why="the data team too")
    assert again.status == 200 and again.json["joined"] is True and again.json["id"] == request["id"]
    assert again.json["requesters"] == 2
    approved = call(
        live, "POST", f"/requests/{request['id']}/approve", "admin", {"duration": "P7D", "note": "a week"}, expect=200
    )
    assert approved["status"] == "approved" and approved["decided_by"] == "admin-token"
    ends = datetime.fromisoformat(approved["exception"]["expires_at"])
    assert timedelta(days=7) - timedelta(minutes=1) < ends - datetime.now(UTC) <= timedelta(days=7)
    allowed = call(live, "POST", "/evaluate", "sandbox", {"language": "python", "specs": ["beta"]})["decisions"][0]
    assert (allowed["allowed"], allowed["reason"]) == (True, "matches-an-exception")
    answer = call(live, "GET", "/packages/python/Beta", "auditor", expect=200)
    assert answer["reason"] == "matches-an-exception"
    assert answer["because"]["type"] == "exception-granted" and answer["because"]["by"] == "admin-token"
    assert answer["because"]["request"] == {"id": request["id"]} and answer["because"]["note"] == "a week"
    policy = call(live, "GET", "/policy", "auditor")
    assert [(e["name"], e["expires_at"], e["request_id"]) for e in policy["exceptions"]] == [
        ("beta", approved["exception"]["expires_at"], request["id"])
    ]
    history = call(live, "GET", "/history", "auditor")["changes"]
    assert history[-1]["type"] == "exception-granted" and history[-1]["name"] == "beta"


@pytest.mark.parametrize(
    "body", [{"expires_at": "DAYS"}, {"duration": "PT36H"}, {}], ids=["expires_at", "duration", "permanent"]
)
def test_each_duration_form(locked, body):
    live = locked
    request = ask(live).json
    if body.get("expires_at") == "DAYS":
        body = {"expires_at": iso(datetime.now(UTC) + timedelta(days=3))}
    approved = call(live, "POST", f"/requests/{request['id']}/approve", "admin", body, expect=200)
    ends = approved["exception"]["expires_at"]
    if "expires_at" in body:
        assert ends == body["expires_at"]
    elif "duration" in body:
        assert timedelta(hours=35) < datetime.fromisoformat(ends) - datetime.now(UTC) <= timedelta(hours=36)
    else:
        assert ends is None
    assert call(live, "GET", "/requests?status=approved", "auditor")["requests"][0]["id"] == request["id"]


def test_bad_expiries_are_422_naming_the_field(locked):
    request = ask(locked).json
    for body, field in (
        ({"duration": "P1M"}, "duration"),
        ({"duration": "soon"}, "duration"),
        ({"expires_at": "2020-01-01T00:00:00Z"}, "expires_at"),
        ({"expires_at": iso(datetime.now(UTC) + timedelta(days=1)), "duration": "P1D"}, "duration"),
    ):
        reply = locked.call("POST", f"{P}/requests/{request['id']}/approve", locked.tokens["admin"], body)
        assert reply.status == 422 and reply.json["errors"][0]["field"] == field, (body, reply.body)
    assert call(locked, "GET", f"/requests/{request['id']}", "admin")["status"] == "open"


def test_a_decided_request_cannot_be_decided_again(locked):
    live = locked
    first, second = ask(live, "beta").json, ask(live, "gamma").json
    call(live, "POST", f"/requests/{first['id']}/approve", "admin", {}, expect=200)
    call(live, "POST", f"/requests/{second['id']}/reject", "admin", {"note": "use pandas"}, expect=200)
    for request in (first, second):
        for action in ("approve", "reject"):
            reply = live.call("POST", f"{P}/requests/{request['id']}/{action}", live.tokens["admin"], {})
            assert reply.status == 409 and reply.json["errors"][0]["field"] == "request_id"
    rejected = call(live, "GET", f"/requests/{second['id']}", "auditor")
    assert (rejected["status"], rejected["note"], rejected["exception"]) == ("rejected", "use pandas", None)
    refiled = ask(live, "gamma")  # a decided request is closed: asking again opens a new one
    assert refiled.status == 201 and refiled.json["id"] != second["id"]


def _evaluate(live, name="beta") -> tuple[bool, str]:
    decision = call(live, "POST", "/evaluate", "sandbox", {"language": "python", "specs": [name]})["decisions"][0]
    return decision["allowed"], decision["reason"]


def _answers_at(live, at: str, name="beta") -> list[tuple[bool, str]]:
    """What the point-in-time answer and /test say at `at`."""
    package = call(live, "GET", f"/packages/python/{name}?at={at}", "auditor")
    tested = call(live, "POST", "/test", "auditor", {"language": "python", "specs": [name], "at": at})["decisions"][0]
    return [(package["allowed"], package["reason"]), (tested["allowed"], tested["reason"])]


@pytest.mark.parametrize("mode", ["denylist", "allowlist"])
def test_lift_deny_lifts_the_deny_entry_for_the_exceptions_window_only(live, clock, mode):
    """The deny entry stays on the list: the approved package installs while the exception is in
    force, and is denied again, with no further change, when it ends (the entry had been removed
    for good, so the package kept installing)."""
    call(live, "PUT", "/policy", "admin", {"python": {"mode": mode, "allow": ["pandas"], "deny": ["Beta"]}}, expect=200)
    request = ask(live).json
    refused = live.call("POST", f"{P}/requests/{request['id']}/approve", live.tokens["admin"], {"duration": "PT1M"})
    assert refused.status == 409 and refused.json["errors"][0]["field"] == "lift_deny"
    assert "must lift its deny entry for the exception's window" in refused.json["detail"]
    before = call(live, "GET", "/policy", "auditor")["version"]
    body = {"duration": "PT1M", "lift_deny": True}
    approved = call(live, "POST", f"/requests/{request['id']}/approve", "admin", body, expect=200)
    assert approved["exception"]["lift_deny"] is True
    ends = datetime.fromisoformat(approved["exception"]["expires_at"])
    history = call(live, "GET", "/history", "auditor")["changes"]
    assert [(c["type"], c["version"]) for c in history if c["version"] > before] == [("exception-granted", before + 1)]
    policy = call(live, "GET", "/policy", "auditor")
    assert policy["python"]["deny"] == ["beta"]
    assert [(e["name"], e["lifts_deny"]) for e in policy["exceptions"]] == [("beta", True)]
    assert _evaluate(live) == (True, "matches-an-exception")
    inside = iso(clock())
    # A draft that keeps the lists changes nothing for the lifted name, while the lift stands.
    call(live, "POST", "/evaluate", "sandbox", {"language": "python", "specs": ["beta"], "context": {"sandbox": "a"}})
    preview = call(live, "POST", "/impact", "admin", {"draft": {"python": {"mode": mode}}, "days": 1}, expect=200)
    assert (preview["would_deny"], preview["would_allow"]) == ([], [])

    clock.step(ends - clock() + timedelta(seconds=1))  # past the end: no event happens
    assert _evaluate(live) == (False, "matches-the-deny-list")
    after = iso(clock())
    assert call(live, "GET", "/policy", "auditor")["python"]["deny"] == ["beta"]
    assert call(live, "GET", "/policy", "auditor")["version"] == before + 1
    assert _answers_at(live, inside) == [(True, "matches-an-exception")] * 2
    assert _answers_at(live, after) == [(False, "matches-the-deny-list")] * 2
    lifted = call(live, "GET", f"/packages/python/beta?at={inside}", "auditor")["because"]
    assert lifted["type"] == "exception-granted" and lifted["request"] == {"id": request["id"]}
    line = call(live, "GET", f"/packages/python/beta?from={inside}&to={after}", "auditor")
    assert [i["reason"] for i in line["intervals"]] == ["matches-an-exception", "matches-the-deny-list"]
    assert line["intervals"][0]["to"] == approved["exception"]["expires_at"]
    assert call(live, "GET", f"/policy?at={inside}", "auditor")["python"]["deny"] == ["beta"]


def test_a_request_reports_what_its_exception_lifts_not_the_box_ticked(locked):
    """alpha was on no deny list: approved with lift_deny, its exception lifts nothing, and the
    request said `"lift_deny": true` where GET /exceptions said `"lifts_deny": false`."""
    live = locked
    request = ask(live, "alpha").json
    approved = call(live, "POST", f"/requests/{request['id']}/approve", "admin", {"lift_deny": True}, expect=200)
    exception = call(live, "GET", "/exceptions", "auditor")["exceptions"][0]
    assert exception["lifts_deny"] is False and approved["exception"]["lift_deny"] is False
    listed = call(live, "GET", "/requests?status=all", "auditor")["requests"][0]
    assert listed["exception"]["lift_deny"] is False
    assert call(live, "GET", f"/requests/{request['id']}", "auditor")["exception"]["lift_deny"] is False
    call(live, "PUT", "/policy", "admin", {"python": {"deny": ["gamma"]}}, expect=200)
    denied = ask(live, "gamma").json
    lifted = call(live, "POST", f"/requests/{denied['id']}/approve", "admin", {"lift_deny": True}, expect=200)
    assert lifted["exception"]["lift_deny"] is True


@pytest.mark.parametrize("mode", ["denylist", "allowlist"])
def test_a_revoked_lifting_exception_leaves_the_name_denied_again(live, mode):
    call(live, "PUT", "/policy", "admin", {"python": {"mode": mode, "deny": ["beta"]}}, expect=200)
    body = {"language": "python", "name": "Beta", "duration": "P1D", "lift_deny": True}
    granted = call(live, "POST", "/exceptions", "admin", body, expect=201)
    assert granted["lifts_deny"] is True
    assert _evaluate(live) == (True, "matches-an-exception")
    assert call(live, "GET", "/policy", "auditor")["python"]["deny"] == ["beta"]
    assert live.call("DELETE", f"{P}/exceptions/{granted['id']}", live.tokens["admin"]).status == 204
    assert _evaluate(live) == (False, "matches-the-deny-list")
    assert call(live, "GET", "/policy", "auditor")["python"]["deny"] == ["beta"]
    assert _answers_at(live, iso(datetime.now(UTC))) == [(False, "matches-the-deny-list")] * 2


def test_a_name_a_deny_pattern_denies_is_409_naming_the_pattern_which_lift_deny_never_lifts(locked):
    """The deny list wins over exceptions, so one under a deny pattern would decide nothing; and
    the pattern denies other names too, so lifting it for one name is not the admin's to ask."""
    live = locked
    request = ask(live, "omega-y").json  # filed before the pattern: it can never be approved after
    denied = [
        {"action": "add", "language": "python", "list": "deny", "entries": ["omega-*"]},
        {"action": "add", "language": "node", "list": "deny", "entries": ["@Bad/*"]},
    ]
    call(live, "POST", "/policy/changes", "admin", {"changes": denied}, expect=200)
    version = call(live, "GET", "/policy", "auditor")["version"]
    for language, name, pattern in (("python", "Omega_X", "omega-*"), ("node", "@bad/x", "@Bad/*")):
        for lift in (False, True):
            body = {"language": language, "name": name, "duration": "P1D", "lift_deny": lift}
            refused = live.call("POST", P + "/exceptions", live.tokens["admin"], body)
            assert refused.status == 409, refused.body
            assert f"deny pattern {pattern}" in refused.json["detail"]
            assert refused.json["errors"][0]["field"] == "name"
    filed = ask(live, "omega-z")  # filed after it: refused at once, naming the pattern
    assert filed.status == 409 and "no request for it can be approved" in filed.json["detail"], filed.body
    assert filed.json["errors"] == [{"field": "name", "message": "omega-z is denied by the deny pattern omega-*"}]
    for body in ({"duration": "P7D"}, {"duration": "P7D", "lift_deny": True}):
        refused = live.call("POST", f"{P}/requests/{request['id']}/approve", live.tokens["admin"], body)
        assert refused.status == 409, refused.body
        assert "omega-y is denied by the Python deny pattern omega-*" in refused.json["detail"]
    policy = call(live, "GET", "/policy", "auditor")
    assert (policy["version"], policy["python"]["deny"], policy["exceptions"]) == (version, ["omega-*"], [])
    assert call(live, "GET", f"/requests/{request['id']}", "auditor")["status"] == "open"


def test_a_deny_entry_added_later_still_wins_over_the_exception(locked):
    live = locked
    call(live, "POST", "/exceptions", "admin", {"language": "python", "name": "beta"}, expect=201)
    call(
        live,
        "POST",
        "/policy/changes",
        "admin",
        {"changes": [{"action": "add", "language": "python", "list": "deny", "entries": ["beta"]}]},
        expect=200,
    )
    decision = call(live, "POST", "/evaluate", "sandbox", {"language": "python", "specs": ["beta"]})["decisions"][0]
    assert decision["reason"] == "matches-the-deny-list"


def test_grant_without_a_request_and_revoke(locked):
    live = locked
    granted = call(
        live,
        "POST",
        "/exceptions",
        "admin",
        {"language": "python", "name": "Beta", "duration": "P30D", "note": "trial"},
        expect=201,
    )
    assert granted["name"] == "beta" and granted["request_id"] is None
    assert call(live, "POST", "/evaluate", "sandbox", {"language": "python", "specs": ["beta"]})["allowed"]
    assert [e["id"] for e in call(live, "GET", "/exceptions", "auditor")["exceptions"]] == [granted["id"]]
    assert live.call("DELETE", f"{P}/exceptions/{granted['id']}", live.tokens["admin"]).status == 204
    assert not call(live, "POST", "/evaluate", "sandbox", {"language": "python", "specs": ["beta"]})["allowed"]
    assert call(live, "GET", "/exceptions", "auditor")["exceptions"] == []
    assert live.call("DELETE", f"{P}/exceptions/{granted['id']}", live.tokens["admin"]).status == 409
    assert live.call("DELETE", f"{P}/exceptions/nope", live.tokens["admin"]).status == 404
    assert call(live, "GET", "/history", "auditor")["changes"][-1]["type"] == "exception-revoked"


def test_deciding_again_a_request_whose_exception_ended_names_the_status_it_is_shown_with(locked):
    """Its exception revoked, an approved request reads `expired`: the 409 said "it is approved"."""
    live = locked
    asked = ask(live).json
    approved = call(live, "POST", f"/requests/{asked['id']}/approve", "admin", {"duration": "P1D"}, expect=200)
    assert live.call("DELETE", f"{P}/exceptions/{approved['exception']['id']}", live.tokens["admin"]).status == 204
    assert call(live, "GET", f"/requests/{asked['id']}", "admin")["status"] == "expired"
    for verb in ("approve", "reject"):
        again = live.call("POST", f"{P}/requests/{asked['id']}/{verb}", live.tokens["admin"], {})
        assert again.status == 409, again.body
        assert "already expired" in again.json["detail"] and "a new request asks again" in again.json["detail"]
        assert again.json["errors"] == [{"field": "request_id", "message": "must be an open request (it is expired)"}]


def test_approvals_grants_and_revocations_name_the_token_that_made_them_in_the_history(locked):
    """Who changed the policy, by token as every other change is: an approval (with the deny entry
    lifted), a grant and a revocation had been recorded with no token."""
    live = locked
    admin = str(token_id(digest(live.tokens["admin"])))
    call(live, "PUT", "/policy", "admin", {"python": {"deny": ["beta"]}}, expect=200)
    asked = ask(live).json
    call(live, "POST", f"/requests/{asked['id']}/approve", "admin", {"duration": "P1D", "lift_deny": True}, expect=200)
    granted = call(live, "POST", "/exceptions", "admin", {"language": "python", "name": "gamma"}, expect=201)
    assert live.call("DELETE", f"{P}/exceptions/{granted['id']}", live.tokens["admin"]).status == 204
    changes = call(live, "GET", "/history", "auditor")["changes"][-3:]
    assert [(c["type"], c["by_token"]) for c in changes] == [
        ("exception-granted", admin),
        ("exception-granted", admin),
        ("exception-revoked", admin),
    ]


def test_an_exception_that_expires_answers_differently_before_and_after(locked, clock):
    live = locked
    granted = call(
        live, "POST", "/exceptions", "admin", {"language": "python", "name": "beta", "duration": "PT1H"}, expect=201
    )
    ends = datetime.fromisoformat(granted["expires_at"])
    before = call(live, "POST", "/evaluate", "sandbox", {"language": "python", "specs": ["beta"]})["decisions"][0]
    judged_before = iso(clock())  # an instant after that judgement, and before the expiry
    clock.step(ends - clock() + timedelta(seconds=1))  # past the instant itself: no clock-driven event happens
    after = call(live, "POST", "/evaluate", "sandbox", {"language": "python", "specs": ["beta"]})["decisions"][0]
    judged_after = iso(clock())
    assert (before["allowed"], before["reason"]) == (True, "matches-an-exception")
    assert (after["allowed"], after["reason"]) == (False, "not-on-the-allow-list")
    # The point-in-time answers agree with what evaluate said then (the application's instants:
    # the store stamps the decisions with the real time, which the test clock moved past).
    for decision, at in ((before, judged_before), (after, judged_after)):
        package = call(live, "GET", f"/packages/python/beta?at={at}", "auditor")
        assert (package["allowed"], package["reason"]) == (decision["allowed"], decision["reason"])
        policy = call(live, "GET", f"/policy?at={at}", "auditor")
        assert bool(policy["exceptions"]) == decision["allowed"]
        tested = call(live, "POST", "/test", "auditor", {"language": "python", "specs": ["beta"], "at": at})
        assert tested["decisions"][0]["reason"] == decision["reason"]
    line = call(live, "GET", f"/packages/python/beta?from={before['at']}&to={iso(clock())}", "auditor")
    assert [i["reason"] for i in line["intervals"]] == ["matches-an-exception", "not-on-the-allow-list"]
    assert line["intervals"][0]["to"] == granted["expires_at"]
    assert call(live, "GET", "/requests?status=expired", "auditor")["requests"] == []


def test_impact_of_a_draft_over_http(locked):
    live = locked
    for spec, sandbox in (("pandas", "a"), ("pandas", "b"), ("scipy", "a")):
        call(
            live,
            "POST",
            "/evaluate",
            "sandbox",
            {"language": "python", "specs": [spec], "context": {"sandbox": sandbox}},
        )
    draft = {"python": {"mode": "allowlist", "allow": ["scipy"]}}
    answer = call(live, "POST", "/impact", "admin", {"draft": draft, "days": 30}, expect=200)
    assert answer["would_deny"] == [{"language": "python", "name": "pandas", "installs": 2, "sandboxes": 2}]
    assert answer["would_allow"] == [{"language": "python", "name": "scipy", "installs": 1, "sandboxes": 1}]
    assert answer["unchanged"] == 0 and answer["days"] == 30
    bad = live.call("POST", P + "/impact", live.tokens["admin"], {"draft": {"python": {"allow": ["-r x"]}}})
    assert bad.status == 422 and bad.json["errors"][0]["field"] == "draft.python.allow[0]"


def test_the_impact_of_a_draft_counts_the_direct_references_its_save_would_deny(live):
    """The allow list vouches for registry names only: a direct reference allowed under the deny
    list is previewed as denied by an allowlist naming it, as /test says and Save then does."""
    url = "urlpkg @ https://x.example/urlpkg-1.0-py3-none-any.whl"
    evaluated = call(live, "POST", "/evaluate", "sandbox", {"language": "python", "specs": [url]}, expect=200)
    assert evaluated["decisions"][0]["allowed"] and evaluated["decisions"][0]["kind"] == "url"
    draft = {"python": {"mode": "allowlist", "allow": ["urlpkg"], "deny": []}, "node": {"mode": "denylist"}}
    tested = call(live, "POST", "/test", "admin", {"language": "python", "specs": [url], "draft": draft}, expect=200)
    assert tested["decisions"][0]["reason"] == "direct-reference" and not tested["allowed"]
    answer = call(live, "POST", "/impact", "admin", {"draft": draft, "days": 1}, expect=200)
    assert answer["would_deny"] == [{"language": "python", "name": "urlpkg", "installs": 1, "sandboxes": 0}]
    assert (answer["would_allow"], answer["unchanged"]) == ([], 0)
    call(live, "PUT", "/policy", "admin", draft, expect=200)
    again = call(live, "POST", "/evaluate", "sandbox", {"language": "python", "specs": [url]}, expect=200)
    assert again["decisions"][0]["reason"] == "direct-reference" and not again["allowed"]


def test_a_sandbox_reads_only_the_requests_it_asked_for(live):
    theirs = ask(live, "beta", role="admin").json
    mine = ask(live, "gamma").json
    listed = call(live, "GET", "/requests", "sandbox")["requests"]
    assert [r["id"] for r in listed] == [mine["id"]]
    assert live.call("GET", f"{P}/requests/{theirs['id']}", live.tokens["sandbox"]).status == 404
    assert live.call("GET", f"{P}/requests/{mine['id']}", live.tokens["sandbox"]).status == 200
    assert {r["id"] for r in call(live, "GET", "/requests", "auditor")["requests"]} == {theirs["id"], mine["id"]}
    joined = ask(live, "beta")  # joining makes it one of the sandbox's own
    assert (
        joined.status == 200 and live.call("GET", f"{P}/requests/{theirs['id']}", live.tokens["sandbox"]).status == 200
    )


def _pages(live, query: str, role: str) -> list[list[str]]:
    """The ids of each page of GET /requests, following next_cursor to the end."""
    pages, cursor = [], None
    while True:
        answer = call(live, "GET", f"/requests?{query}" + (f"&cursor={cursor}" if cursor else ""), role, expect=200)
        pages.append([r["id"] for r in answer["requests"]])
        if (cursor := answer["next_cursor"]) is None:
            return pages


def test_the_requests_list_is_paged_in_its_own_order_so_the_longest_waiting_are_reached(live):
    filed = [ask(live, f"pkg-{i}").json["id"] for i in range(7)]
    call(live, "POST", f"/requests/{filed[3]}/reject", "admin", {"note": "no"}, expect=200)
    call(live, "POST", f"/requests/{filed[5]}/approve", "admin", {"duration": "P7D"}, expect=200)
    for query, role in (("status=all", "auditor"), ("status=open", "admin"), ("status=all", "sandbox")):
        whole = call(live, "GET", f"/requests?{query}", role)
        assert whole["next_cursor"] is None and len(whole["requests"]) in (5, 7)
        pages = _pages(live, query + "&limit=2", role)
        assert [len(p) for p in pages[:-1]] == [2] * (len(pages) - 1), pages
        assert sum(pages, []) == [r["id"] for r in whole["requests"]], query  # the same order, none twice
    open_first = sum(_pages(live, "status=all&limit=3", "auditor"), [])
    assert open_first == [*reversed([f for f in filed if f not in (filed[3], filed[5])]), filed[5], filed[3]]
    assert sum(_pages(live, "status=open&limit=1", "admin"), [])[-1] == filed[0]  # waiting longest: last, reached
    for cursor in ("abc", "WzEsICJ4IiwgInkiXQ", "W3RydWUsICIyMDI2LTAxLTAxVDAwOjAwOjAwWiIsICJ4Il0"):
        refused = live.call("GET", f"{P}/requests?cursor={cursor}", live.tokens["admin"])
        assert refused.status == 422 and refused.json["errors"][0]["field"] == "cursor", cursor
    assert live.call("GET", f"{P}/requests?limit=1001", live.tokens["admin"]).status == 422


def test_a_joining_sandbox_sees_only_its_own_justification_and_context(live):
    first = ask(live, "beta", role="admin", why="SECRET: the payroll migration").json
    other = call(live, "POST", "/tokens", "owner", {"name": "sandbox-two", "role": "sandbox"}, expect=201)["token"]
    body = {"language": "python", "name": "beta", "justification": "ci needs it", "context": {"sandbox": "sbx-2"}}
    joined = live.call("POST", P + "/requests", other, body)
    again = live.call("POST", P + "/requests", live.tokens["sandbox"], {"language": "python", "name": "beta"})
    for reply, token, requesters in ((joined, other, 2), (again, live.tokens["sandbox"], 3)):
        assert reply.status == 200 and reply.json["id"] == first["id"] and reply.json["requesters"] == requesters
        for shown in (reply.json, live.call("GET", f"{P}/requests/{first['id']}", token).json):
            text = str(shown)
            assert "payroll" not in text and "sbx-42" not in text and "agent-7" not in text, text
            assert len(shown["askers"]) == 1
        listed = live.call("GET", P + "/requests", token).json["requests"]
        assert len(listed[0]["askers"]) == 1 and "payroll" not in str(listed)
    seen = live.call("GET", P + "/requests/" + first["id"], other).json
    assert (seen["justification"], seen["context"]["sandbox"]) == ("ci needs it", "sbx-2")
    # its own asking is the filing it sees: not who asked first (another token's name), nor when
    assert (seen["filed_by"], seen["filed_at"]) == ("sandbox-two", seen["askers"][0]["first_at"])
    assert seen["filed_at"] > first["filed_at"]
    for role in ("admin", "auditor"):  # who decides still reads every asker
        full = call(live, "GET", f"/requests/{first['id']}", role, expect=200)
        assert full["justification"] == "SECRET: the payroll migration" and len(full["askers"]) == 3
        assert (full["filed_by"], full["filed_at"]) == (first["filed_by"], first["filed_at"])
    older = ask(live, "epsilon", role="admin").json  # filed first by another; joined last by this one
    own = live.call("POST", P + "/requests", other, {"language": "python", "name": "zeta"}).json
    live.call("POST", P + "/requests", other, {"language": "python", "name": "epsilon"})
    listed = live.call("GET", P + "/requests", other).json["requests"]  # newest first, by what it is shown
    assert [r["filed_at"] for r in listed] == sorted((r["filed_at"] for r in listed), reverse=True)
    assert [r["id"] for r in listed][:2] == [older["id"], own["id"]]


def test_filing_requests_past_the_per_token_rate_is_429_with_retry_after(live):
    from domain.limits import REQUESTS_FILED_PER_MINUTE

    started, filed = time.monotonic(), 0
    while (reply := ask(live, f"pkg-{filed}")).status in (200, 201):
        filed += 1
        assert filed <= 2 * REQUESTS_FILED_PER_MINUTE
    refilled = (time.monotonic() - started) * REQUESTS_FILED_PER_MINUTE / 60
    assert REQUESTS_FILED_PER_MINUTE <= filed <= REQUESTS_FILED_PER_MINUTE + refilled + 1
    assert reply.status == 429 and reply.media == "application/problem+json"
    assert int(reply.headers["retry-after"]) >= 1
    assert (
        f"too many requests filed with this token: at most {REQUESTS_FILED_PER_MINUTE} a minute" in reply.json["detail"]
    )
    assert ask(live, "other", role="admin").status == 201  # per token


def test_the_openapi_document_says_a_request_may_be_joined_filed_or_refused(live):
    document = live.call("GET", "/api/v1/openapi.json").json
    filed = document["paths"]["/api/v1/workspaces/{ws}/requests"]["post"]["responses"]
    assert {"200", "201", "403"} <= set(filed)  # joined: 200; filed: 201; auditors: 403


def test_a_name_as_long_as_a_list_entry_may_be_can_be_requested_and_excepted(locked):
    """Lists and /evaluate take names up to MAX_TEXT, and every denial of a name that could be
    approved tells the agent to request it: requests and exceptions take the same names."""
    live = locked
    name = "a" * (MAX_TEXT - 1)
    denied = call(live, "POST", "/evaluate", "sandbox", {"language": "python", "specs": [name]})["decisions"][0]
    assert not denied["allowed"] and f"runcode-policy-gate request python {name}" in denied["message"]
    filed = ask(live, name)
    assert filed.status == 201, filed.body
    call(live, "POST", f"/requests/{filed.json['id']}/approve", "admin", {"duration": "P1D"}, expect=200)
    allowed = call(live, "POST", "/evaluate", "sandbox", {"language": "python", "specs": [name]})["decisions"][0]
    assert (allowed["allowed"], allowed["reason"]) == (True, "matches-an-exception")
    granted = {"language": "python", "name": "b" * MAX_TEXT, "duration": "P1D"}
    assert call(live, "POST", "/exceptions", "admin", granted, expect=201)["name"] == "b" * MAX_TEXT
    too_long = live.call("POST", P + "/exceptions", live.tokens["admin"], granted | {"name": "b" * (MAX_TEXT + 1)})
    assert too_long.status == 422 and too_long.json["errors"][0]["field"] == "name"
