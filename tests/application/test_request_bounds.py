"""Bounded cost per request: one 64 KB command of pip short-option
clusters once expanded to 65,504 recorded decisions and a 30 MB answer. A request now yields at most
MAX_SPECS decisions after option expansion, and its answer stays below a stated size."""

from __future__ import annotations

import json
import threading

import pytest

from domain.errors import InvalidInputError
from domain.limits import MAX_ANSWER_BYTES, MAX_SPEC_CHARS, MAX_SPECS

ATTACK = ["pip", "install"] + ["-" + "I" * 4000] * 16  # the black-box reproduction, under 64 KiB


def test_a_command_that_expands_past_the_cap_is_refused_naming_the_field_and_records_nothing(app, workspace):
    for command in (ATTACK, ["pip", "install", "-" + "I" * (MAX_SPECS + 1)]):
        with pytest.raises(InvalidInputError) as refused:
            app.evaluation.evaluate(workspace, command=command)
        (error,) = refused.value.errors
        assert error.field == "command" and f"at most {MAX_SPECS} decisions" in error.message
    assert list(app.audit.export_decisions(workspace)) == []


def test_a_command_of_exactly_the_cap_is_judged_and_recorded(app, workspace):
    answer = app.evaluation.evaluate(workspace, command=["pip", "install", "-" + "I" * (MAX_SPECS - 1), "pandas"])
    assert len(answer["decisions"]) == MAX_SPECS
    assert len(list(app.audit.export_decisions(workspace))) == MAX_SPECS


def test_the_largest_answer_stays_below_the_stated_bound(live):
    """Every field a caller controls at its limit, in characters that JSON escapes the most."""
    spec = "\u2028" * (MAX_SPEC_CHARS // MAX_SPECS)
    # a label holds no separator (it is one line): its worst is a character outside the BMP (\\ud83d\\ude00)
    context = {key: "\U0001f600" * 200 for key in ("sandbox", "source", "skill", "actor")}
    cluster = "-" + "\u2028" * (MAX_SPECS - 1)
    for asked in ({"language": "node", "specs": [spec] * MAX_SPECS}, {"command": ["pip", "install", cluster, spec]}):
        body = asked | {"context": context}
        reply = live.call("POST", "/api/v1/workspaces/acme/evaluate", live.tokens["sandbox"], body)
        assert reply.status == 200 and len(reply.json["decisions"]) <= MAX_SPECS, reply.body[:300]
        assert len(reply.body) <= MAX_ANSWER_BYTES, len(reply.body)
        assert len(json.dumps(body).encode()) < 1024 * 1024  # the request itself was an ordinary one


def test_two_attack_requests_at_once_leave_another_sandbox_answered(live):
    """The reproduction over HTTP: both are refused up front, and the unrelated evaluate is answered."""
    evaluate = "/api/v1/workspaces/acme/evaluate"
    replies = {}

    def ask(key, body):
        replies[key] = live.call("POST", evaluate, live.tokens["sandbox"], body)

    threads = [threading.Thread(target=ask, args=(i, {"command": ATTACK})) for i in range(2)]
    threads.append(threading.Thread(target=ask, args=("other", {"language": "python", "specs": ["pandas"]})))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert [replies[i].status for i in range(2)] == [422, 422]
    assert replies[0].json["errors"][0]["field"] == "command"
    assert replies["other"].status == 200 and len(replies["other"].json["decisions"]) == 1
