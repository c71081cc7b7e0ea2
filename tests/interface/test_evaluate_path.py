"""The lean evaluate path (interface.api.evaluate_path) answers exactly as Flask's route does:
it answers successful evaluates itself, hands Flask every refusal made before recording, and
answers a failed recording itself with the same problem+json."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from application import StoreUnavailableError
from interface.api.evaluate_path import EvaluatePath, json_answer
from tests.support.metrics import added, labels, samples

P = "/api/v1/workspaces/acme/evaluate"
BODY = {"language": "python", "specs": ["pandas==2.1", "-r x.txt"], "context": {"sandbox": "sbx"}}
LATENCY = "runcode_policy_request_seconds_count"
HEADERS = ("content-type", "content-length", "www-authenticate", "retry-after")


def flask_only(monkeypatch) -> None:
    monkeypatch.setattr(EvaluatePath, "_size", lambda self, environ: None)


def reply_of(live, token, body=None, raw=None, headers=None):
    reply = live.call("POST", P, token, body, raw=raw, headers=headers)
    return reply.status, {k: reply.headers.get(k) for k in HEADERS}, reply.body


def header_names(live) -> set[str]:
    return set(live.call("POST", P, live.tokens["sandbox"], BODY).headers)


def without_ids(answer: dict) -> dict:
    return {**answer, "decisions": [{**d, "id": "-", "at": "-"} for d in answer["decisions"]]}


def test_a_successful_evaluate_is_answered_without_flask_as_flask_answers_it(live, monkeypatch):
    status, headers, body = reply_of(live, live.tokens["sandbox"], BODY)
    flask_only(monkeypatch)
    flask_status, flask_headers, flask_body = reply_of(live, live.tokens["sandbox"], BODY)
    assert (
        (status, headers["content-type"]) == (flask_status, flask_headers["content-type"]) == (200, "application/json")
    )
    assert len(body) == len(flask_body) and body.endswith(b"}\n")
    assert without_ids(json.loads(body)) == without_ids(json.loads(flask_body))
    flasks = header_names(live)
    monkeypatch.undo()
    assert header_names(live) == flasks  # no header more or fewer than Flask's answer sends
    # Flask's view is not what answers it.
    monkeypatch.setitem(live.app.view_functions, "api.post_evaluate", lambda **_: pytest.fail("Flask's view ran"))
    before = samples(live)
    assert live.call("POST", P, live.tokens["sandbox"], BODY).status == 200
    endpoint = "/api/v1/workspaces/<ws>/evaluate"
    counted = added(before, samples(live), LATENCY)  # the scrape counts itself too
    assert counted[labels(method="POST", endpoint=endpoint, status="200")] == 1


@pytest.mark.parametrize(
    "who, body, raw, headers",
    [
        ("nobody", BODY, None, None),  # 401
        ("other-workspace", BODY, None, None),  # 404
        ("auditor", BODY, None, None),  # 403
        ("sandbox", None, b"{nope", None),  # 400
        ("sandbox", None, b"{}", {"Content-Type": "text/plain"}),  # 415
        ("sandbox", {"language": "python", "specs": "pandas"}, None, None),  # 422, the schema
        ("sandbox", {"language": "python", "specs": []}, None, None),  # 422, the evaluation
        ("sandbox", {"language": "cobol", "specs": ["x"]}, None, None),  # 422
    ],
)
def test_a_refusal_before_recording_is_flasks_own(live, monkeypatch, app, who, body, raw, headers):
    token = live.tokens.get(who, "not-a-token")
    lean = reply_of(live, token, body, raw, headers)
    flask_only(monkeypatch)
    assert lean == reply_of(live, token, body, raw, headers) and lean[0] >= 400
    assert app.audit.decisions("acme", limit=10)["decisions"] == []


def test_a_failed_recording_is_answered_once_as_flask_answers_it(live, app, monkeypatch):
    calls = []

    def refuse(*events, **_):
        calls.append(len(events))
        raise StoreUnavailableError("the decisions could not be recorded")

    monkeypatch.setattr(app.evaluation.writer, "record_events", refuse)
    lean = reply_of(live, live.tokens["sandbox"], BODY)
    assert calls == [2]  # judged and recorded once, never handed to Flask to record again
    flask_only(monkeypatch)
    assert lean == reply_of(live, live.tokens["sandbox"], BODY) and lean[0] == 503


@pytest.mark.parametrize(
    "answer",
    [
        {"allowed": True, "policy_version": 3, "decisions": [{"spec": "pandas==2.1", "name": None, "n": -1}]},
        {"message": "naïve “quoted” — 名前 › 😀"},  # non-ASCII: escaped by the app, raw by orjson
        {"😀": ["\U0010ffff", "\ud7ff\ue000", "\x80"]},  # past U+FFFF (a surrogate pair), at the edges
        {"spec": 'a\x7fb\x00\x1f"\\/\u2028'},  # DEL: the same
        {"big": 2**70},  # past orjson's integers
        {"at": datetime(2026, 3, 3, tzinfo=UTC)},  # an instant: each writes its own way
    ],
)
def test_the_answer_s_json_is_the_app_s_byte_for_byte(live, answer):
    with live.app.app_context():
        assert json_answer(live.app, answer) == live.app.json.response(answer).get_data()


def test_a_real_answer_s_json_is_the_app_s_byte_for_byte(live, app):
    specs = ["pandas==2.1", "-r x.txt", "left-pad", "bad spec ###", "numpy[extra]>=1; python_version>'3'"]
    answer = app.evaluation.evaluate("acme", "python", specs, context={"sandbox": "sbx", "actor": "agent-1"})
    with live.app.app_context():
        assert json_answer(live.app, answer) == live.app.json.response(answer).get_data()
