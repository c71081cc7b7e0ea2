"""Decisions record reason codes and parameters; their messages are rendered whenever they are shown
(`application.messages`), with the same words for new decisions as when the text was stored, and
decisions recorded with their text (`Decision.Recorded` version 1) still render."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID, uuid4

import pytest
from eventsourcing.persistence import StoredEvent

import application.messages
from application import Governance, store_env
from application.messages import render_message
from domain.decision import (
    Decision,
    DecisionRecord,
    Verdict,
    known_malware,
    not_found_upstream,
    stored_record,
    upstream_failed,
)
from domain.rules import VersionFacts, judge_version, read_rules
from domain.specs import parse

PLACE = "Settings \u203a Governance \u203a Run-code packages"
HINT = (
    'To ask for it, run: runcode-policy-gate request python {name} --why "..." '
    "(or POST /api/v1/workspaces/acme/requests)."
)
# (spec, python mode, python deny, the message `/evaluate` answered when the text was stored)
LISTS = [
    (
        "gamma",
        "allowlist",
        [],
        f"gamma is not on the Python allow list of workspace acme; an admin can change this under {PLACE} by "
        f"adding it to the allow list. {HINT.format(name='gamma')}",
    ),
    (
        "evil",
        "denylist",
        ["evil"],
        f"evil is on the Python deny list of workspace acme; an admin can change this under {PLACE} if it should "
        f"be allowed. {HINT.format(name='evil')}",
    ),
    (  # a pattern's denial cannot be lifted by an exception: no request to suggest
        "evil-x",
        "denylist",
        ["evil-*", "evil-x"],
        f"evil-x is denied by the Python deny pattern evil-* of workspace acme, so no request for it can be "
        f"approved; an admin can narrow or remove the pattern under {PLACE}.",
    ),
    (
        "beta @ https://x.example/beta-1.0.tar.gz",
        "allowlist",
        [],
        "'beta @ https://x.example/beta-1.0.tar.gz' installs from a url source, which is refused in workspace acme: "
        "the allow list vouches for registry names only. Install the package from the registry by name instead.",
    ),
    (
        "evil @ https://x.example/evil-1.0.tar.gz",
        "denylist",
        ["evil"],
        "'evil @ https://x.example/evil-1.0.tar.gz' installs from a url source, which is refused in workspace acme: "
        "evil is on the Python deny list. Install the package from the registry by name instead.",
    ),
    (
        "git+https://x.example/x.git",
        "denylist",
        [],
        "'git+https://x.example/x.git' installs from a vcs source, which is refused in workspace acme: its package "
        "name cannot be known before it is fetched or built. Install the package from the registry by name instead.",
    ),
    (
        "--index-url=https://evil.example/simple",
        "denylist",
        [],
        "'--index-url=https://evil.example/simple' cannot be judged, so it is refused: {detail}.",
    ),
]


def _policy(app, mode: str, deny: list[str]) -> None:
    app.save_policy("acme", {"python": {"mode": mode, "allow": [], "deny": deny}}, by="x")


@pytest.mark.parametrize("spec, mode, deny, expected", LISTS)
def test_evaluate_and_decisions_answer_each_list_reason_in_todays_words(app, workspace, spec, mode, deny, expected):
    _policy(app, mode, deny)
    (answered,) = app.evaluation.evaluate("acme", "python", [spec])["decisions"]
    expected = expected.format(detail=answered.get("detail"))
    assert not answered["allowed"] and answered["message"] == expected
    assert app.audit.decision("acme", answered["id"])["message"] == expected
    assert app.evaluation.test("acme", "python", [spec])["decisions"][0]["message"] == expected


def _recorded(app, verdict: Verdict, name: str = "alpha", version: str | None = "1.0") -> dict:
    """A refusal the index records, as `/decisions` answers it."""
    record = DecisionRecord.for_spec(parse("python", name), verdict, 1, {"source": "index"})
    record = record.fetched("download", None, None, version)
    decision = Decision(workspace="acme", record=record.to_dict())
    app.save(decision)
    return app.audit.decision("acme", str(decision.id))


NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
RULES = {
    "min_release_age": {"age": "P3D"},
    "versions_deny": {"entries": ["alpha<2"]},
    "sdists": {},
}
# reason -> (the file's facts, the message)
FINDINGS = {
    "version-denied": (
        VersionFacts("1.0", NOW - timedelta(days=30)),
        "alpha 1.0 matches the version deny entry 'alpha<2'",
    ),
    "too-new": (
        VersionFacts("2.0", NOW - timedelta(days=1, hours=12)),
        "alpha 2.0 was uploaded 1 day 12 hours ago (2026-05-31T00:00:00Z), less than min_release_age (P3D)",
    ),
    "sdist-refused": (
        VersionFacts("3.0", NOW - timedelta(days=30), sdist=True),
        "alpha 3.0: this file is a source distribution (its build runs at install time): sdists allows those "
        "only for the names in its allow list",
    ),
}


@pytest.mark.parametrize("reason", FINDINGS)
def test_each_python_rule_reason_renders_from_its_parameters(app, workspace, reason):
    facts, expected = FINDINGS[reason]
    (finding,) = [
        f for f in judge_version(read_rules("python", RULES, "r"), "python", "alpha", facts, NOW) if f.reason == reason
    ]
    assert _recorded(app, Verdict(False, reason, dict(finding.params)), version=facts.version)["message"] == expected


@pytest.mark.parametrize(
    "scripts, said",
    [
        (True, "runs code at install time (a preinstall, install or postinstall script)"),
        (None, "may run code at install time (the upstream does not say)"),
    ],
)
def test_the_install_scripts_reason_renders_from_its_parameters(scripts, said):
    rules = read_rules("node", {"install_scripts": {}}, "r")
    (finding,) = judge_version(rules, "node", "sharp", VersionFacts("1.0.0", NOW, install_scripts=scripts), NOW)
    record = DecisionRecord.for_spec(
        parse("node", "sharp"), Verdict(False, finding.reason, dict(finding.params)), 1, None
    )
    assert render_message(record, "acme") == (
        f"sharp 1.0.0 {said}: install_scripts allows it only for the names in its allow list"
    )


def test_the_index_refusals_render_from_their_parameters(app, workspace):
    malware = _recorded(app, known_malware("alpha", "1.0", ["MAL-1", "GHSA-x"]))
    assert malware["message"] == (
        "alpha==1.0 is known malware (MAL-1, GHSA-x): this workspace refuses it; "
        "use another version or another package."
    )
    assert malware["params"] == {"name": "alpha", "version": "1.0", "advisories": ["MAL-1", "GHSA-x"]}
    assert _recorded(app, not_found_upstream(), "nope", None)["message"] == (
        "the Python upstream has no package 'nope'."
    )
    why = "the upstream pypi.org is untrusted: set RUNCODE_POLICY_INDEX_CA"
    assert _recorded(app, upstream_failed(why))["message"] == why


def test_a_run_failed_refusal_names_its_first_denial_rendered_now(app, workspace, monkeypatch):
    _policy(app, "allowlist", [])
    sandbox = app.authenticate(app.issue_token(workspace, "sbx", "sandbox", by="founder")["token"])
    principal = app.index.authenticate(app.index.runs.start("acme", sandbox)["token"])
    app.index.gate.judge(principal, "python", "gamma", "page")
    refused = app.index.gate.judge(principal, "python", "alpha", "page")
    expected = (
        "this run already failed: gamma (python) was denied \u2014 not-on-the-allow-list: gamma is not on the "
        f"Python allow list of workspace acme; an admin can change this under {PLACE} by adding it to the allow "
        f"list. {HINT.format(name='gamma')[:-1]}; nothing more is served to it"
    )
    assert refused["message"] == expected
    assert app.audit.decision("acme", refused["id"])["message"] == expected
    assert app.audit.decision("acme", refused["id"])["params"]["first"]["reason"] == "not-on-the-allow-list"
    monkeypatch.setattr(application.messages, "CONSOLE_PLACE", "Admin \u203a Packages")
    assert "under Admin \u203a Packages by adding" in app.audit.decision("acme", refused["id"])["message"]


def test_a_recorded_decision_stores_no_words_and_renders_a_renamed_place(app, workspace, monkeypatch):
    _policy(app, "allowlist", [])
    (answered,) = app.evaluation.evaluate("acme", "python", ["gamma"])["decisions"]
    (stored,) = app.events.get(UUID(answered["id"]))
    assert "message" not in stored.record and PLACE not in json.dumps(stored.record, ensure_ascii=False)
    monkeypatch.setattr(application.messages, "CONSOLE_PLACE", "Admin \u203a Packages")
    monkeypatch.setattr(application.messages, "GATE_REQUEST", "rcp ask {language} {name}")
    shown = app.audit.decision("acme", answered["id"])["message"]
    assert "under Admin \u203a Packages by adding" in shown and "run: rcp ask python gamma (or POST" in shown
    assert PLACE not in shown
    exported = next(app.audit.export_decisions("acme"))
    assert exported["message"] == shown


CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "first_schema"


def test_first_schema_decisions_render_in_todays_words(tmp_path, monkeypatch):
    """Version 1 records stored their text: a list's or a direct reference's renders today's words
    (its console place renamed too), the direct reference's mode read from the text."""
    shutil.copyfile(CORPUS / "first_schema.sqlite", tmp_path / "old.sqlite")
    app = Governance(env=store_env(f"sqlite:///{tmp_path / 'old.sqlite'}"))
    try:
        monkeypatch.setattr(application.messages, "CONSOLE_PLACE", "Admin \u203a Packages")
        shown = {d["spec"]: d for d in app.audit.decisions("acme")["decisions"] if not d["allowed"]}
        assert shown["requests"]["message"] == (
            "requests is not on the Python allow list of workspace acme; an admin can change this under "
            f"Admin \u203a Packages by adding it to the allow list. {HINT.format(name='requests')}"
        )
        assert "params" not in shown["requests"]
        assert shown["git+https://example.org/x.git"]["params"] == {"mode": "allowlist"}
        assert "the allow list vouches for registry names only" in shown["git+https://example.org/x.git"]["message"]
        assert shown["left-pad@1"]["message"].startswith("left-pad is on the Node deny list of workspace acme")
    finally:
        app.close()


def test_a_version_1_refusal_whose_parameters_were_not_recorded_shows_its_text(app, workspace):
    """Hand-written in the version 1 shape: a rule's refusal kept only its words, shown as they were."""
    text = "alpha 1.0 was uploaded 2 hours ago (2026-01-01T00:00:00Z), less than min_release_age (P3D)"
    record = {
        "spec": "alpha",
        "language": "python",
        "name": "alpha",
        "kind": "registry",
        "allowed": False,
        "reason": "too-new",
        "policy_version": 1,
        "context": {},
        "message": text,
        "package_version": "1.0",
    }
    state = {
        "timestamp": {"_type_": "datetime_iso", "_data_": "2026-01-01T02:00:00+00:00"},
        "originator_topic": "runcode_policy:Decision",
        "workspace": "acme",
        "record": record,
    }
    stored = StoredEvent(uuid4(), 1, Decision.Recorded.TOPIC, json.dumps(state).encode())
    event = app.mapper.to_domain_event(stored)
    assert "message" not in event.record and event.record == stored_record(state)
    assert render_message(DecisionRecord.from_dict(event.record), "acme") == text
    listed = dict(record, reason="not-on-the-allow-list", message="old words")
    assert render_message(DecisionRecord.from_dict(stored_record({**state, "record": listed})), "acme").startswith(
        "alpha is not on the Python allow list of workspace acme"
    )


def test_an_export_of_version_1_decisions_verifies_and_its_words_are_not_sealed(tmp_path, monkeypatch):
    """Exported lines carry today's record shape and words; the slice check reads the sealed
    version 1 events as replay does (upcast), and a message worded otherwise since still verifies."""
    from application.chain import AuditKey
    from application.chain.slices import verify_slice

    shutil.copyfile(CORPUS / "first_schema.sqlite", tmp_path / "old.sqlite")
    app = Governance(env=store_env(f"sqlite:///{tmp_path / 'old.sqlite'}"))
    try:
        app.chain.use_key(AuditKey.generate())
        app.chain.checkpoint("acme")
        lines = json.loads(json.dumps(list(app.chain.with_links("acme", app.audit.export_decisions("acme")))))
        checkpoints, keys = app.chain.all_checkpoints("acme"), app.chain.trusted_keys()
        assert any("message" in line and "message" not in line.get("params", {}) for line in lines if "id" in line)
        assert verify_slice(lines, checkpoints, keys)["ok"]
        renamed = [dict(line, message="reworded") if line.get("message") else line for line in lines]
        assert verify_slice(renamed, checkpoints, keys)["ok"]
        denied = next(line for line in renamed if line.get("spec") == "requests")
        denied["params"] = {"mode": "denylist"}
        assert verify_slice(renamed, checkpoints, keys)["problem"] == "altered"
    finally:
        app.close()
