"""Evaluation: judge specs against the current policy (recorded) or a draft/past one (not).

The hot path reads the rules from the per-process cache in `Policies`.
"""

from __future__ import annotations

from application.callers import Guard
from application.decision_writer import DecisionWriter
from application.formats import iso
from application.messages import render_message
from application.policies import Policies
from domain.decision import Decision, DecisionRecord, judge
from domain.errors import FieldError, InvalidInputError
from domain.limits import MAX_SPEC_CHARS, MAX_SPECS
from domain.policy import LanguageRules, bind_rules, shadowed_entries
from domain.specs import LANGUAGE_TITLES, Spec, check_language, parse
from domain.specs.commands import parse_command
from domain.text import check_context


class Evaluation:
    """Judges specs: recorded against the current policy, or unrecorded against a draft or a past one."""

    def __init__(self, policies: Policies, writer: DecisionWriter):
        self.policies = policies
        self.writer = writer

    def evaluate(
        self,
        workspace: str,
        language: str | None = None,
        specs: list[str] | None = None,
        command: list[str] | None = None,
        context: dict | None = None,
        head: int | None = None,
        remembered: str | None = None,
        token: str | None = None,
    ) -> dict:
        """Judge and durably record every decision before answering (fail closed otherwise).
        `head`: the workspace's head version when the caller has just read it (with the token).
        `remembered`: the token's id when the caller came from the process's memory: the cached
        rules are used as they are. With either it or `token` (the caller's token id), the
        recording checks under the events' lock that the token is still active and the version
        judged still the head (StaleCaller if either moved): a decision is never recorded after
        a newer version, whichever way the caller came."""
        language, parsed = specs_of(language, specs, command)
        context = check_context(context)
        version, rules = self.policies.current(workspace, head=head, cached=remembered is not None)
        records = decision_records(parsed, rules, workspace, version, context)
        now = Decision.Recorded.create_timestamp()  # decided together: one instant, formatted once
        decisions = [Decision.recorded(workspace, r, at=now) for r in records]
        checked = remembered or token
        self.writer.record_events(*decisions, guard=Guard(checked, workspace, version) if checked else None)
        at = iso(now)
        return answer(version, [decision_view(str(d.originator_id), d.record, at, workspace) for d in decisions])

    def test(
        self,
        workspace: str,
        language: str | None = None,
        specs: list[str] | None = None,
        command: list[str] | None = None,
        context: dict | None = None,
        draft: dict | None = None,
        at=None,
    ) -> dict:
        """The Test panel: the same answer against a draft or a past policy; nothing recorded."""
        language, parsed = specs_of(language, specs, command)
        context = check_context(context)
        if draft is not None and at is not None:
            raise InvalidInputError(
                "test against a draft or a past policy, not both", [FieldError("at", "must not be given with draft")]
            )
        if draft is not None:
            version, rules = self.policies.draft_rules(workspace, draft)
        elif at is not None:
            past = self.policies.at(workspace, at)
            version, rules = past.policy_version, bind_rules(past.rules(), at)
        else:
            version, rules = self.policies.current(workspace)
        records = decision_records(parsed, rules, workspace, version, context)
        found = answer(version, [decision_view(None, r, None, workspace) for r in records])
        return found if draft is None else {**found, "shadowed": shadowed_entries(rules)}


def decision_records(parsed: list[Spec], rules: dict, workspace: str, version: int, context: dict) -> list[dict]:
    return [decision_record(spec, rules[spec.language], workspace, version, context) for spec in parsed]


def answer(version: int, views: list[dict]) -> dict:
    """Allowed only if there is something to allow and every decision allows it."""
    return {"allowed": bool(views) and all(v["allowed"] for v in views), "policy_version": version, "decisions": views}


def specs_of(language: str | None, specs: list[str] | None, command: list[str] | None):
    """Either a language with specs, or a command line (whose program names the language)."""
    if (specs is None) == (command is None):
        raise InvalidInputError(
            "give either specs or command", [FieldError("specs", "exactly one of specs and command is required")]
        )
    field, texts = ("specs", specs) if command is None else ("command", command)
    if sum(len(t) for t in texts if isinstance(t, str)) > MAX_SPEC_CHARS:
        raise InvalidInputError(
            f"{field} are too long to judge",
            [FieldError(field, f"must hold at most {MAX_SPEC_CHARS} characters in all")],
        )
    if command is not None:
        found, parsed = parse_command(command)
        if len(parsed) > MAX_SPECS:  # `-IIII…` is one word but one decision per letter
            raise InvalidInputError(
                f"the command expands to {len(parsed)} decisions",
                [FieldError("command", f"must expand to at most {MAX_SPECS} decisions (options and specs)")],
            )
        if language is not None and language != found:
            raise InvalidInputError(
                f"the command installs {LANGUAGE_TITLES[found]} packages, not {LANGUAGE_TITLES[language]}",
                [FieldError("language", f"must match the command ({found})")],
            )
        return found, parsed
    check_language(language)
    if not specs:
        raise InvalidInputError("no specs to judge", [FieldError("specs", "must hold at least one spec")])
    if len(specs) > MAX_SPECS:
        raise InvalidInputError("too many specs", [FieldError("specs", f"at most {MAX_SPECS} per request")])
    return language, [parse(language, s) for s in specs]


def decision_record(spec: Spec, rules: LanguageRules, workspace: str, version: int, context: dict | None) -> dict:
    return DecisionRecord.for_spec(spec, judge(rules, spec, workspace), version, context).to_dict()


def decision_view(decision_id: str | None, record: dict, at, workspace: str) -> dict:
    """A recorded decision as it is answered: its record, its id and instant (`at`: an instant,
    or one `iso` wrote already), and the message rendered now from its reason and parameters
    (`application.messages`), never read."""
    view = {"id": decision_id, **record, "at": at if isinstance(at, str) else iso(at)}
    if decision_id is None:
        del view["id"]
    if not record["allowed"]:  # only refusals have a message: an allowed one is not even typed
        message = render_message(DecisionRecord.from_dict(record), workspace)
        if message is not None:
            view["message"] = message
    return view
