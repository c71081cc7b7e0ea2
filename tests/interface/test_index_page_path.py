"""The lean project-page path (interface.index.page_path) answers exactly as Flask's route does:
it judges and answers pages itself (from the rendered copy, with its ETag and 304), hands Flask
every refusal made before judging, and hands Flask's view what judging raised, judged once."""

from __future__ import annotations

import pytest

from interface.index.page_path import ProjectPagePath
from tests.support.index_fixtures import set_policy, start_run
from tests.support.index_live import index_live_env, sqlite_store  # noqa: F401 - fixtures live_env, database_url
from tests.support.metrics import added, labels, samples

PAGE = "/pypi/acme/simple/beta/"
JSON_ACCEPT = "application/vnd.pypi.simple.v1+json"
HEADERS = ("content-type", "content-length", "etag", "cache-control", "vary", "www-authenticate", "location")
LATENCY = "runcode_policy_request_seconds_count"
FETCHES = "runcode_policy_index_fetches_total"
ENDPOINT = "/pypi/<ws>/simple/<project>/"


def flask_only(monkeypatch) -> None:
    monkeypatch.setattr(ProjectPagePath, "_answer", lambda self, environ, ws, project: None)


def no_flask_view(live, monkeypatch) -> None:
    fail = lambda **_: pytest.fail("Flask's view ran")  # noqa: E731
    monkeypatch.setitem(live.app.view_functions, "pypi_index.project_page", fail)


def reply_of(live, path=PAGE, token=None, method="GET", **headers):
    reply = live.call(method, path, token, headers=headers)
    return reply.status, {k: reply.headers.get(k) for k in HEADERS}, reply.body


def both(live, monkeypatch, path=PAGE, token=None, method="GET", **headers):
    """The lean path's answer and Flask's own to the same request, in that order."""
    lean = reply_of(live, path, token, method, **headers)
    flask_only(monkeypatch)
    try:
        return lean, reply_of(live, path, token, method, **headers)
    finally:
        monkeypatch.undo()


def test_a_kept_page_is_answered_without_flask_as_flask_answers_it(live, app, monkeypatch):
    set_policy(app, "denylist")
    token, etags = live.tokens["sandbox"], []
    for accept in ("text/html", JSON_ACCEPT):
        lean, flask = both(live, monkeypatch, token=token, Accept=accept)
        assert lean == flask and lean[0] == 200 and lean[1]["etag"], accept
        etags.append(lean[1]["etag"])
        head = both(live, monkeypatch, token=token, method="HEAD", Accept=accept)
        assert head[0] == head[1] and head[0][1]["etag"] == lean[1]["etag"] and head[0][2] == b""
        held = both(live, monkeypatch, token=token, Accept=accept, **{"If-None-Match": lean[1]["etag"]})
        assert held[0] == held[1] and held[0][0] == 304
    no_flask_view(live, monkeypatch)
    before = samples(live)
    assert reply_of(live, token=token)[0] == 200
    assert reply_of(live, token=token, **{"If-None-Match": etags[0]})[0] == 304
    counted = added(before, samples(live), LATENCY)  # the scrape counts itself too
    assert counted[labels(method="GET", endpoint=ENDPOINT, status="200")] == 1
    assert counted[labels(method="GET", endpoint=ENDPOINT, status="304")] == 1


def sandboxes(app, count: int) -> list[str]:
    """Readers with no denial yet (a reader's first denial is its last page: it fails the rest)."""
    return [app.issue_token("acme", f"reader-{n}", "sandbox", by="founder")["token"] for n in range(count)]


def test_a_denied_project_is_judged_here_and_quarantined_as_flask_does(live, app, monkeypatch):
    set_policy(app, "denylist", python=["beta"])
    first, second, third = sandboxes(app, 3)
    lean = reply_of(live, token=first, Accept=JSON_ACCEPT)
    flask_only(monkeypatch)
    assert reply_of(live, token=second, Accept=JSON_ACCEPT) == lean
    monkeypatch.undo()
    assert lean[0] == 200 and b'"quarantined"' in lean[2] and b"/files/beta/" not in lean[2]
    no_flask_view(live, monkeypatch)
    assert reply_of(live, token=third, Accept=JSON_ACCEPT) == lean


@pytest.mark.parametrize(
    "who, path, accept, status",
    [
        ("nobody", PAGE, None, 403),  # not 401: pip must not prompt
        ("other-workspace", PAGE, None, 404),
        ("auditor", PAGE, None, 403),
        ("revoked", PAGE, None, 403),  # at once
        ("sandbox", PAGE, "application/json", 406),
        ("sandbox", "/pypi/acme/simple/BETA/", None, 200),  # 301 to the normalized name, followed
        ("sandbox", "/pypi/acme/simple/" + "b" * 4100 + "/", None, 400),
    ],
)
def test_a_refusal_before_judging_is_flasks_own(live, app, monkeypatch, who, path, accept, status):
    set_policy(app, "denylist")
    if who == "revoked":
        issued = app.issue_token("acme", "short-lived", "sandbox", by="founder")
        assert reply_of(live, token=issued["token"])[0] == 200
        app.revoke_token("acme", issued["id"], by="founder")
        token = issued["token"]
    else:
        token = live.tokens.get(who, "not-a-token")
    headers = {"Accept": accept} if accept else {}
    lean, flask = both(live, monkeypatch, path, token, **headers)
    assert lean == flask and lean[0] == status


def test_what_judging_raised_is_answered_by_flask_and_judged_once(live, app, monkeypatch):
    set_policy(app, "allowlist", python=["alpha"])
    run = start_run(live)
    assert reply_of(live, token=run["token"])[0] == 200  # quarantined: the run's first denial
    path = "/pypi/acme/simple/alpha/"
    before = samples(live)
    lean, flask = both(live, monkeypatch, path, run["token"])
    assert lean == flask and lean[0] == 403  # the run failed: every later fetch is refused
    fetches = added(before, samples(live), FETCHES)
    assert sum(fetches.values()) == 2  # one judgement each: the lean path's was not judged again by Flask
    set_policy(app, "denylist")
    before = samples(live)
    lean, flask = both(live, monkeypatch, "/pypi/acme/simple/no-such-project/", live.tokens["admin"])
    assert lean == flask and lean[0] == 404  # recorded as the upstream's 404, answered by Flask
    assert sum(added(before, samples(live), FETCHES).values()) == 2
