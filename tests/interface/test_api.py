"""The v1 HTTP API against a real server on loopback, on SQLite and PostgreSQL."""

from __future__ import annotations

import base64
import gzip
import http.client
import json
import re
from datetime import timedelta
from urllib.parse import quote, urlsplit

import pytest

from application.formats import iso
from domain.limits import MAX_ERRORS, MAX_INTEGER, MAX_QUOTED

P = "/api/v1/workspaces/acme"
FUTURE = "must not be in the future"
SAVE = {
    "expected_version": 0,
    "note": "approve pandas for the data team",
    "python": {"mode": "allowlist", "allow": "pandas==2.1, numpy\nscipy", "deny": []},
    "node": {"mode": "denylist", "allow": [], "deny": ["@evil/pkg"]},
}
EVALUATE = {
    "language": "python",
    "specs": ["pandas==2.1", "requests"],
    "context": {"sandbox": "sbx-42", "source": "run-code", "skill": None, "actor": "agent-7"},
}


def test_a_token_never_learns_whether_another_workspace_exists(live):
    existing = live.call("GET", "/api/v1/workspaces/other/policy", live.tokens["owner"])
    missing = live.call("GET", "/api/v1/workspaces/nowhere/policy", live.tokens["owner"])
    assert existing.status == missing.status == 404
    assert existing.json["detail"].replace("other", "X") == missing.json["detail"].replace("nowhere", "X")


def test_the_admins_save_and_the_sandboxs_evaluate(live):
    saved = live.call("PUT", P + "/policy", live.tokens["admin"], SAVE)
    assert saved.status == 200, saved.body
    assert saved.json["python"] == {"mode": "allowlist", "allow": ["numpy", "pandas", "scipy"], "deny": []}
    assert saved.json["version"] == 5 and saved.json["changed_by"] == "admin-token"
    answer = live.call("POST", P + "/evaluate", live.tokens["sandbox"], EVALUATE).json
    assert answer["allowed"] is False and answer["policy_version"] == 5
    pandas, requests = answer["decisions"]
    assert pandas["reason"] == "matches-the-allow-list" and pandas["at"].endswith("Z")
    assert requests["reason"] == "not-on-the-allow-list"
    assert "requests is not on the Python allow list of workspace acme" in requests["message"]
    one = live.call("GET", f"{P}/decisions/{requests['id']}", live.tokens["auditor"])
    assert one.json == requests


def test_a_stale_save_is_409_and_saves_nothing(live):
    live.call("PUT", P + "/policy", live.tokens["admin"], SAVE)
    again = live.call("PUT", P + "/policy", live.tokens["admin"], {**SAVE, "python": {"allow": []}})
    assert again.status == 409 and again.json["errors"][0]["field"] == "expected_version"
    assert live.call("GET", P + "/policy", live.tokens["auditor"]).json["version"] == 5
    future = live.call("PUT", P + "/policy", live.tokens["admin"], {**SAVE, "expected_version": 3082})
    assert future.status == 422 and "is not a version this policy has had (it is at version 5)" in future.json["detail"]
    assert future.json["errors"] == [
        {
            "field": "expected_version",
            "message": "must be the current version, 5: the policy has never been at version 3082",
        }
    ]
    changes = {
        "expected_version": 6,
        "changes": [{"action": "add", "language": "python", "list": "deny", "entries": ["x"]}],
    }
    assert live.call("POST", P + "/policy/changes", live.tokens["admin"], changes).status == 422


@pytest.mark.parametrize(
    "body,field,says",
    [
        ({"python": {"mode": "allowlist", "allow": None, "deny": []}}, "python.allow", "null is not a list"),
        ({"python": {"mode": "denylist", "deny": None}}, "python.deny", "null is not a list"),
        ({"python": {"mode": None, "allow": ["a"]}}, "python.mode", "null is not a mode"),
        ({"python": {"deny": ["b"]}, "node": None}, "node", "null is not a policy"),
        ({"node": {"rules": None}}, "node.rules", "null is not rules"),
        ({"known_malware": None}, "known_malware", "null is not an action"),
        ({"egress": None}, "egress", "null is not an egress setting"),
    ],
)
def test_a_save_with_a_null_is_422_naming_it_and_saves_nothing(live, body, field, says):
    """A Save is the complete desired state: a field left out keeps its saved value, and a null,
    which says neither keep nor empty, is refused rather than read as either."""
    assert live.call("PUT", P + "/policy", live.tokens["admin"], SAVE).status == 200
    reply = live.call("PUT", P + "/policy", live.tokens["admin"], body)
    assert reply.status == 422 and reply.media == "application/problem+json", reply.body
    assert [e["field"] for e in reply.json["errors"]] == [field] and says in reply.json["errors"][0]["message"]
    saved = live.call("GET", P + "/policy", live.tokens["auditor"]).json
    assert saved["version"] == 5 and saved["python"]["allow"] == ["numpy", "pandas", "scipy"]
    drafted = live.call(
        "POST", P + "/test", live.tokens["admin"], {"language": "python", "specs": ["a"], "draft": body}
    )
    if field != "egress":  # a draft has no egress
        assert drafted.status == 422 and [e["field"] for e in drafted.json["errors"]] == [f"draft.{field}"]
    # left out, each keeps its saved value (docs/walk-through.md)
    kept = live.call("PUT", P + "/policy", live.tokens["admin"], {"python": {"deny": ["b"]}})
    assert kept.status == 200 and kept.json["node"]["deny"] == ["@evil/pkg"]
    assert kept.json["python"] == {"mode": "allowlist", "allow": ["numpy", "pandas", "scipy"], "deny": ["b"]}


def test_bad_entries_are_422_naming_every_one(live):
    body = {"python": {"allow": ["pandas", "https://evil/x.tgz", "numpy", "-r req.txt"]}}
    reply = live.call("PUT", P + "/policy", live.tokens["admin"], body)
    assert reply.status == 422 and reply.media == "application/problem+json"
    assert [e["field"] for e in reply.json["errors"]] == ["python.allow[1]", "python.allow[3]"]


@pytest.mark.parametrize(
    "body,field",
    [
        ({"language": "ruby", "specs": ["x"]}, "language"),
        ({"language": "python", "specs": "pandas"}, "specs"),
        ({"language": "python", "specs": ["x"], "surprise": 1}, "surprise"),
        ({"language": "python", "specs": []}, "specs"),
        ({"language": "python", "specs": [1]}, "specs[0]"),
        ({"language": "python"}, "specs"),
        ({"specs": ["x"]}, "language"),
    ],
)
def test_wrong_bodies_are_422_with_the_field(live, body, field):
    reply = live.call("POST", P + "/evaluate", live.tokens["sandbox"], body)
    assert reply.status == 422, reply.body
    assert field in [e["field"] for e in reply.json["errors"]]


def test_malformed_huge_and_mistyped_bodies_are_refused_clearly(live):
    token = live.tokens["sandbox"]
    assert live.call("POST", P + "/evaluate", token, raw=b"{nope").status == 400
    assert live.call("POST", P + "/evaluate", token, raw=b"{}", headers={"Content-Type": "text/plain"}).status == 415
    twice = live.call("POST", P + "/evaluate", token, raw=b'{"language": "python", "specs": ["evil"], "specs": ["ok"]}')
    assert twice.status == 400 and "the key 'specs' appears twice" in twice.json["detail"]
    nested = b'{"python": {"deny": ["dupdeny"]}, "python": {"allow": ["dupallow"]}}'
    assert live.call("PUT", P + "/policy", live.tokens["admin"], raw=nested).status == 400
    huge = b'{"language": "python", "specs": ["' + b"a" * (1024 * 1024) + b'"]}'
    reply = live.call("POST", P + "/evaluate", token, raw=huge)
    assert reply.status == 413 and reply.media == "application/problem+json"
    plain = b'{"language": "python", "specs": ["six"]}'
    for body in (gzip.compress(plain), plain):  # compressed, or only said to be: refused alike, unread
        reply = live.call("POST", P + "/evaluate", token, raw=body, headers={"Content-Encoding": "gzip"})
        assert reply.status == 415 and "Content-Encoding 'gzip' is not accepted" in reply.json["detail"], reply.body


def test_nan_and_infinity_are_no_json_and_are_refused_as_malformed(live):
    """Python's reader had taken them: `"exempt": NaN` had been saved as the name `nan`."""
    for word in ("NaN", "Infinity", "-Infinity"):
        body = '{"python": {"rules": {"min_release_age": {"age": "P3D", "exempt": WORD}}}}'.replace("WORD", word)
        reply = live.call("PUT", P + "/policy", live.tokens["admin"], raw=body.encode())
        assert reply.status == 400 and reply.media == "application/problem+json", reply.body
        assert reply.json["detail"] == f"the body is not valid JSON: {word} is not a JSON number"
        specs = '{"language": "python", "specs": ["six"], "context": {"n": WORD}}'.replace("WORD", word)
        assert live.call("POST", P + "/evaluate", live.tokens["sandbox"], raw=specs.encode()).status == 400
    assert live.call("GET", P + "/policy", live.tokens["auditor"]).json["version"] == 0


def test_a_refusal_of_countless_unknown_keys_names_the_first_hundred_and_no_more(live):
    context = {f"k{i}": "v" for i in range(50_000)}  # a 739 KB body: within the size bound
    for path, body in (
        ("/evaluate", {"language": "python", "specs": ["six"], "context": context}),
        ("/egress/evaluate", {"target": "example.com", "context": context}),
    ):
        reply = live.call("POST", P + path, live.tokens["sandbox"], body)
        errors = reply.json["errors"]
        assert reply.status == 422 and len(errors) == MAX_ERRORS + 1 and len(reply.body) < 20_000, path
        assert errors[0] == {"field": "context.k0", "message": "Extra inputs are not permitted"}
        assert f"only the first {MAX_ERRORS} errors are named" in errors[-1]["message"]
    query = "&".join(f"name{i}=x" for i in range(3000))
    reply = live.call("GET", f"{P}/decisions?{query}", live.tokens["auditor"])
    assert reply.status == 422 and len(reply.json["errors"]) == MAX_ERRORS + 1
    twice = "&".join(f"name{i}=x&name{i}=y" for i in range(1000))
    reply = live.call("GET", f"{P}/decisions?{twice}", live.tokens["auditor"])
    assert reply.status == 422 and len(reply.json["errors"]) == MAX_ERRORS + 1
    assert reply.json["detail"] == "1000 query parameters given more than once"


def chunked(live, method: str, path: str, token: str, body: bytes) -> tuple[int, dict]:
    """One request whose body is sent in 64 KiB chunks, with no Content-Length."""
    parts = urlsplit(live.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    try:
        conn.request(method, path, body=(body[i : i + 65536] for i in range(0, len(body), 65536)), headers=headers)
        reply = conn.getresponse()
        return reply.status, json.loads(reply.read())
    finally:
        conn.close()


def test_a_chunked_body_past_the_bound_is_refused_whole_not_cut_and_acted_on(live):
    spec = json.dumps({"language": "python", "specs": ["cut-off"], "context": {"sandbox": "chunked"}}).encode()
    status, answer = chunked(live, "POST", P + "/evaluate", live.tokens["sandbox"], spec + b" " * (2 * 1024 * 1024))
    assert status == 413 and "nothing was done" in answer["detail"]
    saved = json.dumps({"python": {"deny": ["cut-off"]}}).encode() + b" " * (2 * 1024 * 1024)
    assert chunked(live, "PUT", P + "/policy", live.tokens["admin"], saved)[0] == 413
    decisions = live.call("GET", P + "/decisions?sandbox=chunked", live.tokens["auditor"]).json
    assert decisions["decisions"] == [] and b"cut-off" not in live.call("GET", P + "/policy", live.tokens["admin"]).body
    status, answer = chunked(live, "POST", P + "/evaluate", live.tokens["sandbox"], spec + b" " * 1000)
    assert status == 200 and answer["decisions"][0]["spec"] == "cut-off"  # within the bound: as any other


@pytest.mark.parametrize("query,field", [("at=yesterday", "at"), ("at=2026-03-03T10:00:00", "at")])
def test_bad_timestamps_are_422(live, query, field):
    reply = live.call("GET", f"{P}/policy?{query}", live.tokens["auditor"])
    assert reply.status == 422 and reply.json["errors"][0]["field"] == field


def test_an_offset_past_rfc_3339s_or_a_leap_second_is_refused_never_read_as_another_instant(live):
    """`+00:99` had been read as 99 minutes, `+12:75` and `+00:60` alike, wherever an instant is taken."""
    token = live.tokens["auditor"]
    where = {"/policy?at=": "at", "/packages/python/x?at=": "at", "/decisions?from=": "from", "/history?to=": "to"}
    for offset in ("+00:99", "+12:75", "+00:60", "-24:00"):
        for path, field in where.items():
            reply = live.call("GET", P + path + quote("2026-12-07T06:56:35.842563" + offset), token)
            rule = "has an offset RFC 3339 does not allow: hours 00 to 23, minutes 00 to 59"
            assert reply.status == 422 and reply.json["errors"] == [{"field": field, "message": rule}], (path, offset)
    keyset = live.call("GET", P + "/decisions?cursor=" + cursor_of('["2026-12-07T06:56:35+00:99", "x"]'), token)
    assert keyset.status == 422 and keyset.json["errors"][0]["field"] == "cursor"
    leap = live.call("GET", P + "/decisions?to=2016-12-31T23:59:60Z", token)
    assert leap.status == 422 and "leap second" in leap.json["errors"][0]["message"]
    furthest = live.call("GET", P + "/policy?at=" + quote("2020-01-01T00:00:00+23:59"), token)
    assert furthest.status == 200 and furthest.json["at"] == "2019-12-31T00:01:00.000000Z"


def test_bad_cursors_and_limits_are_422(live):
    token = live.tokens["auditor"]
    assert live.call("GET", P + "/decisions?cursor=%%%", token).status == 422
    assert live.call("GET", P + "/decisions?limit=5000", token).status == 422
    assert live.call("GET", P + "/history?cursor=abc", token).status == 422
    # A NUL inside a well-formed cursor, and in a run id: PostgreSQL's text refuses it (had been 500).
    nul = base64.urlsafe_b64encode(json.dumps(["2026-12-06T06:04:33Z", "\x00"]).encode()).decode().rstrip("=")
    assert live.call("GET", P + f"/decisions?cursor={nul}", token).status == 422
    for path in ("/runs/x%00/decisions", "/runs/x%00/receipt"):
        assert live.call("GET", P + path, token).status == 404


def cursor_of(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def test_a_cursor_is_only_one_a_page_issues_never_a_number_past_the_stores(live):
    """A history cursor past the stores' integers had been a 500 on SQLite (the console's too); a
    negative one, one with a space, and a requests cursor with 0.0 had been taken."""
    from tests.interface.test_console import signed_in

    token = live.tokens["auditor"]
    for text in (str(MAX_INTEGER + 1), "-5", " 5", "5.0", "05", "true"):
        reply = live.call("GET", P + "/history?cursor=" + cursor_of(text), token)
        assert reply.status == 422 and reply.json["errors"][0]["field"] == "cursor", text
    last = live.call("GET", P + "/history?cursor=" + cursor_of(str(MAX_INTEGER)), token)
    assert last.status == 200 and last.json == {"changes": [], "next_cursor": None}
    uid, at = "5f0c2a4e-8d1b-4c3e-9f6a-1b2c3d4e5f60", "2026-01-01T00:00:00.000000Z"
    # only as a page writes them: an instant as iso writes it, an id as str(UUID) does (another
    # spelling of either, or base64 padded, of the other alphabet or with stray bits, was taken)
    forged = {
        "/requests": (
            f'[0.0, "{at}", "{uid}"]',
            f'[0,"{at}","{uid}"]',
            f'[0, "2026-01-01T00:00:00Z", "{uid}"]',
            f'[0, "{at}", "x"]',
            f'[0, "{at}", "{uid.upper()}"]',
        ),
        "/decisions": (f'["2026-01-01 00:00:00.000000Z", "{uid}"]', f'["{at}", ""]', f'["{at}", "x"]'),
    }
    for route, texts in forged.items():
        for text in texts:
            reply = live.call("GET", P + route + "?cursor=" + cursor_of(text), token)
            assert reply.status == 422 and reply.json["errors"][0]["field"] == "cursor", (route, text)
    for route, text in (("/requests", f'[0, "{at}", "{uid}"]'), ("/decisions", f'["{at}", "{uid}"]')):
        issued = cursor_of(text)
        assert live.call("GET", P + route + "?cursor=" + issued, token).status == 200, (route, text)
        for spelt in {issued + "==", issued.replace("_", "/").replace("-", "+"), issued + "!!"} - {issued}:
            reply = live.call("GET", P + route + "?cursor=" + spelt, token)
            assert reply.status == 422, (route, spelt)
    for spelt in ("Mg==", "Mh", "Mg!!"):  # 2, padded; 2 with stray bits; with junk
        assert live.call("GET", P + "/history?cursor=" + spelt, token).status == 422, spelt
    assert signed_in(live, "auditor").get("/console/history", cursor=cursor_of(str(MAX_INTEGER + 1))).status == 422


def test_no_refusal_quotes_back_more_than_max_quoted_characters_of_what_it_was_sent(live):
    """A 404 had echoed a decision id of 5,000 characters whole (an advisory's, a run's, a
    request's, an instant's too): every path segment and query string, 5,000 characters long."""
    sent = "x" * 5000
    asked = []
    for method, path, operation in operations(live):
        params = operation.get("parameters", [])
        filled = path.replace("{workspace}", "acme").replace("{ws}", "acme")
        for name in (p["name"] for p in params if p["in"] == "path" and p["name"] not in ("workspace", "ws")):
            asked.append((method, re.sub(r"\{\w+\}", "x", filled.replace("{" + name + "}", sent))))
        asked += [(method, f"{filled}?{p['name']}={sent}") for p in params if p["in"] == "query" and "{" not in filled]
    asked.append(("get", f"/api/v1/workspaces/{sent}/policy"))
    for method, path in asked:
        reply = live.call(method.upper(), path, live.tokens["owner"], {} if method in ("post", "put") else None)
        if reply.status >= 400:
            assert "x" * (MAX_QUOTED + 1) not in reply.body.decode(), (method, path[:80], reply.body[:200])


def operations(live) -> list[tuple[str, str, dict]]:
    """(method, path, operation) of every route the service's OpenAPI document describes."""
    paths = live.call("GET", "/api/v1/openapi.json").json["paths"]
    return [(method, path, operation) for path, ops in paths.items() for method, operation in ops.items()]


def test_a_query_parameter_a_route_does_not_take_is_refused_on_every_get_route(live):
    """`/audit/verify?foo=1` had been answered (200) where `/decisions?foo=1` is 422: a route
    without a query schema ignored what it was sent."""
    for method, path, _ in operations(live):
        if method == "get":
            filled = re.sub(r"\{(\w+)\}", lambda m: "acme" if m[1] in ("workspace", "ws") else "x", path)
            reply = live.call("GET", filled + "?foo=1", live.tokens["owner"])
            unknown = {"field": "foo", "message": "Extra inputs are not permitted"}
            assert reply.status == 422 and unknown in reply.json["errors"], (path, reply.status)


def test_the_auditors_question_was_pandas_allowed_then(live):
    before = live.call("GET", P + "/packages/python/Pandas==2.1?at=2020-01-01T00:00:00Z", live.tokens["auditor"]).json
    assert before["allowed"] is True and before["reason"] == "not-on-the-deny-list" and before["because"] is None
    live.call("PUT", P + "/policy", live.tokens["admin"], SAVE)
    now = live.call("GET", P + "/packages/python/pandas", live.tokens["auditor"]).json
    assert now["reason"] == "matches-the-allow-list" and now["because"]["by"] == "admin-token"
    scoped = live.call("GET", P + "/packages/node/@evil/pkg", live.tokens["auditor"]).json
    assert scoped["name"] == "@evil/pkg" and scoped["reason"] == "matches-the-deny-list"
    day = live.call("GET", P + "/packages/python/pandas?on=" + now["at"][:10], live.tokens["auditor"]).json
    assert [i["allowed"] for i in day["intervals"]][-1] is True and "decisions" in day


def test_a_point_in_time_question_about_the_future_is_refused_and_todays_timeline_ends_now(live, clock):
    """An answer for a later instant had been given as fact (`allowed`, version 0) and changed once
    a Save came before that instant; a timeline of today had been drawn to midnight."""
    later = iso(clock() + timedelta(minutes=10))
    asked = {
        ("GET", "/packages/python/httpx?at=" + quote(later)): None,
        ("GET", "/policy?at=2099-01-01T00:00:00Z"): None,
        ("GET", "/exceptions?at=" + quote(later)): None,
        ("POST", "/test"): {"language": "python", "specs": ["httpx"], "at": later},
        ("POST", "/egress/test"): {"target": "example.com", "at": later},
    }
    for (method, path), body in asked.items():
        reply = live.call(method, P + path, live.tokens["admin"], body)
        assert reply.status == 422 and reply.json["errors"] == [{"field": "at", "message": FUTURE}], path
    auditor = live.tokens["auditor"]
    assert live.call("GET", P + "/decisions?to=2099-01-01", auditor).status == 200  # a range's end may lie ahead
    before = iso(clock())
    today = live.call("GET", f"{P}/packages/python/httpx?on={before[:10]}", auditor).json
    assert before <= today["to"] <= iso(clock()) and today["intervals"][-1]["to"] == today["to"]
    ahead = live.call("GET", f"{P}/packages/python/httpx?from={later}&to=2099-01-01", auditor)
    assert ahead.status == 422 and ahead.json["errors"] == [{"field": "from", "message": FUTURE}]
    clock.step(timedelta(minutes=11))  # the same instant, once it is past, is answered
    assert live.call("GET", P + "/packages/python/httpx?at=" + quote(later), auditor).json["at"] == later


def test_because_is_the_mode_switch_not_a_deny_list_removal_for_a_name_off_the_allow_list(live):
    """Added to the deny list and removed again in allowlist mode: the removal had been `because`."""
    admin, auditor = live.tokens["admin"], live.tokens["auditor"]
    locked = live.call("PUT", P + "/policy", admin, {"note": "lock", "python": {"mode": "allowlist"}}).json
    for version, deny in ((2, ["zzzdemo"]), (3, [])):
        saved = live.call("PUT", P + "/policy", admin, {"expected_version": version - 1, "python": {"deny": deny}})
        assert saved.status == 200 and saved.json["version"] == version, saved.body
    answer = live.call("GET", P + "/packages/python/zzzdemo", auditor).json
    assert (answer["reason"], answer["policy_version"]) == ("not-on-the-allow-list", 3)
    assert answer["because"] == {
        "version": 1,
        "at": locked["changed_at"],
        "by": "admin-token",
        "note": "lock",
        "type": "mode-switched",
        "language": "python",
        "mode": "allowlist",
    }


def test_history_and_decision_exports(live):
    live.call("PUT", P + "/policy", live.tokens["admin"], SAVE)
    for _ in range(3):
        live.call("POST", P + "/evaluate", live.tokens["sandbox"], EVALUATE)
    history = live.call("GET", P + "/history?limit=2", live.tokens["auditor"]).json
    assert [c["version"] for c in history["changes"]] == [1, 2] and history["next_cursor"]
    rest = live.call("GET", P + "/history?cursor=" + history["next_cursor"], live.tokens["auditor"]).json
    assert [c["version"] for c in rest["changes"]] == [3, 4, 5]
    csv = live.call("GET", P + "/decisions?format=csv&allowed=false", live.tokens["auditor"])
    assert csv.media == "text/csv" and csv.body.decode().count("\n") == 4
    jsonl = live.call("GET", P + "/decisions?format=jsonl&name=PANDAS&language=python", live.tokens["auditor"])
    assert jsonl.body.decode().count('"name": "pandas"') == 3


def test_tokens_are_shown_once_and_revoked_at_once(live):
    issued = live.call("POST", P + "/tokens", live.tokens["owner"], {"name": "ci-sandbox", "role": "sandbox"})
    assert issued.status == 201
    secret = issued.json["token"]
    assert live.call("POST", P + "/evaluate", secret, EVALUATE).status == 200
    listed = live.call("GET", P + "/tokens", live.tokens["owner"]).json["tokens"]
    assert all("token" not in t for t in listed) and secret not in str(listed)
    assert live.call("DELETE", f"{P}/tokens/{issued.json['id']}", live.tokens["owner"]).status == 204
    assert live.call("POST", P + "/evaluate", secret, EVALUATE).status == 401


def test_operations_endpoints_need_no_token(live):
    assert live.call("GET", "/healthz").json == {"status": "ok"}
    assert live.call("GET", "/readyz").status == 200
    assert live.call("GET", "/metrics").media == "text/plain"  # what it counts: test_metrics
    assert live.call("GET", "/api/v1/openapi.json").json["openapi"] == "3.1.0"


def test_unknown_routes_and_methods_are_problems(live):
    assert live.call("GET", "/api/v1/nothing").media == "application/problem+json"
    reply = live.call("PATCH", P + "/policy", live.tokens["owner"], {})
    assert reply.status == 405 and reply.media == "application/problem+json"


@pytest.mark.postgres
def test_when_the_store_goes_away_answers_are_503_and_the_sandbox_fails_closed(postgres_schema_url):
    from urllib.parse import urlsplit

    from interface import create_app
    from interface.services import services
    from tests.support.http_client import LiveServer
    from tests.support.tcp_forwarder import Forwarder

    parts = urlsplit(postgres_schema_url)
    forwarder = Forwarder(parts.port or 5432)
    url = parts._replace(netloc=f"{parts.username}@127.0.0.1:{forwarder.port}").geturl() + "&connect_timeout=1"
    server = LiveServer(create_app(env={"RUNCODE_POLICY_DATABASE_URL": url}))
    governance = services(server.app).governance
    sandbox = governance.issue_token(governance.create_workspace("acme")["workspace"], "s", "sandbox", by="t")
    try:
        assert server.call("POST", P + "/evaluate", sandbox["token"], EVALUATE).status == 200
        forwarder.cut()
        assert server.call("GET", "/healthz").status == 200
        assert server.call("GET", "/readyz").status == 503
        reply = server.call("POST", P + "/evaluate", sandbox["token"], EVALUATE)
        assert reply.status == 503 and reply.media == "application/problem+json"
        assert reply.headers["retry-after"] == "1"  # the sandbox's client knows when to ask again
    finally:
        server.close()
        governance.close()


def test_hostile_bodies_and_instants_are_4xx_never_500(live):
    deep = b"[" * 5000 + b"]" * 5000
    assert live.call("POST", P + "/evaluate", live.tokens["sandbox"], raw=deep).status == 400
    long = live.call("POST", P + "/evaluate", live.tokens["sandbox"], raw=b'{"n": ' + b"1" * 5000 + b"}")
    assert long.status == 400 and "more digits than any field takes" in long.json["detail"]
    nameless = live.call("POST", P + "/evaluate", live.tokens["sandbox"], {"specs": ["six"]})
    assert nameless.status == 422 and nameless.json["detail"].startswith("no language given"), nameless.body
    for query in ("at=0001-01-01T00:00:00%2B01:00", "at=9999-12-31T23:59:59-01:00", "at=2026-11-30T11:59Z"):
        reply = live.call("GET", f"{P}/policy?{query}", live.tokens["auditor"])
        assert reply.status == 422 and reply.json["errors"][0]["field"] == "at", query
    assert live.call("GET", P + "/packages/python/pandas?on=2026-W48", live.tokens["auditor"]).status == 422
    early = live.call("GET", P + "/packages/python/pandas?at=0001-01-01T00:00:00Z", live.tokens["auditor"])
    assert early.json["at"] == "0001-01-01T00:00:00.000000Z"
    # The last day there is can end a range: it ends at the last instant there is (a timeline, now).
    last = (
        "/decisions?to=9999-12-31",
        "/history?from=0001-01-01&to=9999-12-31",
        "/packages/python/x?from=2020-01-01&to=9999-12-31",
    )
    for path in last:
        assert live.call("GET", P + path, live.tokens["auditor"]).status == 200, path
    # A parameter given twice is refused, as a JSON key named twice is: readers differ on which counts.
    for path, key in (("/policy?version=1&version=0", "version"), ("/decisions?allowed=false&allowed=true", "allowed")):
        reply = live.call("GET", P + path, live.tokens["auditor"])
        assert reply.status == 422 and reply.json["errors"] == [{"field": key, "message": "must be given once"}], path
    # A period with nothing in it is refused alike everywhere, not answered with an empty list.
    empty = "from=2026-12-07&to=2026-12-06"
    for path in ("/decisions?", "/history?", "/packages/python/x?", "/decisions?format=jsonl&"):
        reply = live.call("GET", P + path + empty, live.tokens["auditor"])
        assert reply.status == 422 and reply.json["errors"][0]["message"] == "must come after from", (path, reply.body)


@pytest.mark.parametrize(
    "method,path,body,field",
    [
        ("POST", "/tokens", {"name": "a\u0000b", "role": "sandbox"}, "name"),
        ("PUT", "/policy", {"note": "a\u0000b"}, "note"),
        ("POST", "/evaluate", {**EVALUATE, "context": {"sandbox": "a\u0000b"}}, "context.sandbox"),
        # a label is one line wherever it is shown: no tab, line break or C1 control either
        ("POST", "/tokens", {"name": "ci\nsandbox", "role": "sandbox"}, "name"),
        ("POST", "/evaluate", {**EVALUATE, "context": {"sandbox": "a\tb"}}, "context.sandbox"),
        ("POST", "/evaluate", {**EVALUATE, "context": {"actor": "agent\r7"}}, "context.actor"),
        ("POST", "/evaluate", {**EVALUATE, "context": {"run": "r\u00851"}}, "context.run"),
        ("POST", "/tokens", {"name": "a\u2028Revoked by owner", "role": "sandbox"}, "name"),
        ("POST", "/evaluate", {**EVALUATE, "context": {"sandbox": "a\u2029b"}}, "context.sandbox"),
        ("GET", "/decisions?sandbox=a%00b", None, "sandbox"),
        ("GET", "/decisions?reason=bogus", None, "reason"),
        # a change's action is the union's tag: the path names the change, not the tag
        (
            "POST",
            "/policy/changes",
            {"changes": [{"action": "set-rules", "language": "node", "rules": 5}]},
            "changes[0].rules",
        ),
        (
            "POST",
            "/policy/changes",
            {"changes": [{"action": "set-known-malware", "known_malware": 5}]},
            "changes[0].known_malware",
        ),
    ],
)
def test_nul_bytes_and_unknown_values_are_422_on_every_store(live, method, path, body, field):
    reply = live.call(method, P + path, live.tokens["owner"], body)
    assert reply.status == 422 and field in [e["field"] for e in reply.json["errors"]], reply.body
    assert live.call("GET", P + "/decisions/%00", live.tokens["owner"]).status == 404


def test_http_details_allow_header_empty_204_and_metrics_type(live):
    reply = live.call("DELETE", P + "/policy", live.tokens["owner"])
    assert reply.status == 405 and "GET" in reply.headers["allow"]
    issued = live.call("POST", P + "/tokens", live.tokens["owner"], {"name": "x", "role": "auditor"}).json
    revoked = live.call("DELETE", f"{P}/tokens/{issued['id']}", live.tokens["owner"])
    assert revoked.status == 204 and "content-type" not in revoked.headers
    assert live.call("GET", "/metrics").headers["content-type"].count("charset") == 1


def test_exports_cannot_carry_spreadsheet_formulas_and_names_match_any_spelling(live):
    specs = ['=HYPERLINK("http://evil","x")', "+1", "Pandas"]
    live.call(
        "POST",
        P + "/evaluate",
        live.tokens["sandbox"],
        {"language": "python", "specs": specs, "context": {"sandbox": "@SUM(1)"}},
    )
    csv = live.call("GET", P + "/decisions?format=csv", live.tokens["auditor"]).body.decode()
    assert "'=HYPERLINK" in csv and "'+1" in csv and "'@SUM(1)" in csv
    assert ",true," in csv or ",false," in csv
    found = live.call("GET", P + "/decisions?name=PANDAS", live.tokens["auditor"]).json["decisions"]
    assert [d["name"] for d in found] == ["pandas"]


def test_a_bare_date_as_to_includes_that_whole_day(live):
    live.call("PUT", P + "/policy", live.tokens["admin"], SAVE)
    today = live.call("GET", P + "/history", live.tokens["auditor"]).json["changes"][0]["at"][:10]
    reply = live.call("GET", f"{P}/history?from={today}&to={today}", live.tokens["auditor"]).json
    assert len(reply["changes"]) == 5


def test_a_timeline_claims_no_policy_before_the_workspace_existed(live):
    token = live.tokens["auditor"]
    created = live.call("GET", P + "/history", token).json
    year_before = live.call("GET", P + "/packages/python/pandas?from=2020-01-01&to=2021-01-01", token).json
    assert year_before["intervals"] == [] and year_before["from"] == "2020-01-01T00:00:00.000000Z"
    since = live.call("GET", P + "/packages/python/pandas?from=2020-01-01&to=2099-01-01", token).json
    first = since["intervals"][0]
    assert first["from"] > "2026" and first["reason"] == "not-on-the-deny-list", (since, created)


# Every route that takes a caller's context, with a body it would otherwise accept.
CONTEXT_ROUTES = [
    ("/evaluate", "sandbox", {"language": "python", "specs": ["a"]}),
    ("/test", "auditor", {"language": "python", "specs": ["a"]}),
    ("/egress/evaluate", "sandbox", {"target": "example.com"}),
    ("/egress/test", "admin", {"target": "example.com", "hostname_allowlist": None}),
    ("/runs", "sandbox", {}),
    ("/requests", "sandbox", {"language": "python", "name": "a"}),
]


@pytest.mark.parametrize("path,role,body", CONTEXT_ROUTES, ids=[p for p, _, _ in CONTEXT_ROUTES])
def test_a_caller_never_labels_its_context_with_a_source_the_service_records_under(live, path, role, body):
    """`index` and `egress-proxy` mark the decisions the package index and the egress proxy record
    themselves: a caller's decision labelled so, or so as to look so, would pass for one of theirs."""
    from domain.decision import SERVICE_SOURCES

    recorded = live.call("GET", P + "/decisions?limit=500", live.tokens["auditor"]).json["decisions"]
    # spelled as the service does, or so as to look it: cased, spaced, fullwidth, Cyrillic, an
    # invisible character, a dotless or dotted i, another dash
    looks = (" Index ", "ｉｎｄｅｘ", "іndex", "index\u200b", "ındex", "İndex", "egress\u2011proxy", "egress-proxу")
    for source in (*SERVICE_SOURCES, *looks):
        reply = live.call("POST", P + path, live.tokens[role], {**body, "context": {"source": source}})
        assert reply.status == 422 and reply.media == "application/problem+json", reply.body
        assert reply.json["errors"] == [
            {"field": "context.source", "message": "must not be index or egress-proxy, the labels of the "
             "service's own recordings"}
        ]  # fmt: skip
    assert live.call("GET", P + "/decisions?limit=500", live.tokens["auditor"]).json["decisions"] == recorded
    labelled = live.call("POST", P + path, live.tokens[role], {**body, "context": {"source": "indexer"}})
    assert labelled.status in (200, 201), labelled.body


@pytest.mark.parametrize("path,role,body", CONTEXT_ROUTES, ids=[p for p, _, _ in CONTEXT_ROUTES])
def test_a_context_value_blank_or_with_blanks_around_it_is_refused_on_every_route(live, path, role, body):
    """A context value is recorded and looked for as sent: " padded " was shown as padded on the
    Overview while its link opened the other sandbox's decisions, and a sandbox of spaces alone
    was an invisible link no filter could open."""
    from domain.text import CONTEXT_VALUE_RULE

    recorded = live.call("GET", P + "/decisions?limit=500", live.tokens["auditor"]).json["decisions"]
    for key in ("sandbox", "actor", "source", "skill"):
        for value in (" padded ", "padded ", "\u00a0padded", "padded\u3000", "   ", ""):
            reply = live.call("POST", P + path, live.tokens[role], {**body, "context": {key: value}})
            assert reply.status == 422 and reply.media == "application/problem+json", (key, value, reply.body)
            assert reply.json["errors"] == [{"field": f"context.{key}", "message": CONTEXT_VALUE_RULE}], reply.body
            assert f"context.{key} must not be blank nor begin or end with whitespace" in reply.json["detail"]
    assert live.call("GET", P + "/decisions?limit=500", live.tokens["auditor"]).json["decisions"] == recorded
    trimmed = {"sandbox": "sbx 1", "actor": "agent 7", "source": "run code", "skill": "x"}  # blanks within are fine
    assert live.call("POST", P + path, live.tokens[role], {**body, "context": trimmed}).status in (200, 201)


def test_the_openapi_document_states_the_context_value_rule(live):
    from domain.text import CONTEXT_VALUE_RULE

    schemas = live.call("GET", "/api/v1/openapi.json").json["components"]["schemas"]
    for model in ("Context", "RequestContext"):
        for key, field in schemas[model]["properties"].items():
            described = field.get("description") or field["anyOf"][0].get("description", "")
            assert CONTEXT_VALUE_RULE in described, (model, key, field)
