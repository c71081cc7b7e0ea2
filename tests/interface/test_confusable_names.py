"""Names that identify someone cannot be made to look like another's (domain.names), over HTTP."""

from __future__ import annotations

import pytest

P = "/api/v1/workspaces/acme"


def issue(live, name):
    return live.call("POST", P + "/tokens", live.tokens["owner"], {"name": name, "role": "sandbox"})


def test_a_name_that_looks_like_an_existing_one_is_409_naming_which(live):
    assert issue(live, "alice").status == 201
    for lookalike in (
        "\u0430lice",
        "\u0410LICE",
        "\uff41lice",
        "al\u0456ce",
        "\u0391lice",
    ):  # Cyrillic, fullwidth, Greek
        reply = issue(live, lookalike)
        assert reply.status == 409 and reply.media == "application/problem+json", (lookalike, reply.status)
        assert "(looks the same as 'alice')" in reply.json["detail"]
        assert reply.json["errors"][0]["field"] == "name"
    assert issue(live, "alicia").status == 201  # a different name is fine


@pytest.mark.parametrize("name", ["al\u200bice", "c\u200bli:bob", "bob\u2060", "\u202eecila", "ali\ufe0fce", "a\u3164"])
def test_a_name_with_an_invisible_character_is_refused_naming_field_and_rule(live, name):
    reply = issue(live, name)
    assert reply.status == 422 and reply.media == "application/problem+json", reply.status
    (error,) = reply.json["errors"]
    assert error["field"] == "name" and error["message"].startswith("must not contain invisible characters")


def test_a_service_name_spelled_with_lookalike_letters_is_still_reserved(live):
    reply = issue(live, "\u0441li:bob")  # Cyrillic es
    assert reply.status == 422 and "is reserved" in reply.json["errors"][0]["message"]


def test_an_actor_or_sandbox_with_an_invisible_character_is_refused(live):
    for key in ("actor", "sandbox"):
        body = {"language": "python", "specs": ["pandas"], "context": {key: "agent\u200b-7"}}
        reply = live.call("POST", P + "/evaluate", live.tokens["sandbox"], body)
        assert reply.status == 422 and reply.json["errors"][0]["field"] == f"context.{key}"
