"""What the console's forms send, turned into the plain data the application takes.

Kept apart from the views so the rules (what a draft is, when pasted text is a command line,
how a field is named to a person) live in one place; instants are read in `instants`.
"""

from __future__ import annotations

import re
import shlex

from domain.entries import lines
from domain.errors import NAMED_IN_ERRORS, RULES_NAMED, FieldError, GovernanceError, InvalidInputError
from domain.policy import LANGUAGES, LISTS, MODES
from domain.specs import LANGUAGE_TITLES

# First words of install command lines; anything else pasted is read as specs. Programs the
# gate cannot judge (yarn, uv...) are still recognised, so the answer names the command.
_PROGRAMS = re.compile(r"(?:.*/)?(?:pip[\d.]*|python[\d.]*|npm|npx|pnpm|yarn|uv|pipx|poetry|conda)")
_FIELD = re.compile(r"(?P<language>python|node)\.(?P<list>allow|deny)\[(?P<index>\d+)\]")
_RULE_FIELD = re.compile(r"(?P<language>python|node)\.rules\.(?P<rule>\w+)(?:\.(?P<part>\w+))?(?:\[(?P<index>\d+)\])?")
# Changes and requests also concern egress hosts and the known-malware rule, named like languages.
TITLES = {
    **LANGUAGE_TITLES,
    "egress": "Egress",
    "known-malware": "Known malware",
    "allow": "allow list",
    "deny": "deny list",
}
# Fields named as the console's labels show them, so a message points at what a person sees.
LABELS = {
    "at": "Instant (UTC)",
    "from": "From (UTC)",
    "to": "To (UTC)",
    "name": "Package name",
    "language": "Language",
    "outcome": "Outcome",
    "reason": "Reason",
    "kind": "Kind",
    "sandbox": "Sandbox",
    "source": "Source",
    "version": "Version",
    "cursor": "Page link",  # Older, Later changes, Next page: what a person knows a cursor as
    "specs": "Specs or command line",
    "command": "Specs or command line",
    "expected_version": "The form's version",
    "coverage": "Coverage (%)",
    "note": "Note",
    "request_id": "The request",
    "exception_id": "The exception",
    "lift_deny": "Lift its deny entry while the exception lasts",  # the box of a request's approval
    "policy_version": "The page's policy version",  # what an approval with its dependencies was shown at
    "status": "Show",  # the Requests page's filter
    "import-content": "File content",
    "import-format": "File format",
    "import-language": "Language of the file",
}


# Rules whose API words name what a person never sees, as the console says them.
# The box that lifts deny entries for an approval's window: a request's own, and its closure's.
LIFT_BOXES = {"one": LABELS["lift_deny"], "closure": "Lift their deny entries while the exceptions last"}


# The rule that refuses install-time code, per language (`domain.rules`); inputs of the rules are
# named after the fields the API names in errors (`node-rules-min_release_age-age`).
REFUSING_RULE = {"python": "sdists", "node": "install_scripts"}
# The rules beyond names, their parts and actions in words: the Packages page labels its inputs
# with them, and Time travel says with them which rules were in force.
RULE_WORDS = {
    "min_release_age": "Minimum release age",
    "exempt": "Never too new",
    "versions_deny": "Denied versions",
    "sdists": "Wheels only: refuse source distributions",
    "install_scripts": "Refuse versions that run install scripts",
    "allow": "Allowed anyway",
    "enforce": "Enforce: hide the version",
    "monitor": "Monitor: serve it, record what the rule would do",
}


def _rule_inputs(language: str) -> tuple[str, ...]:
    refusing = REFUSING_RULE[language]
    return (
        "min_release_age-age",
        "min_release_age-exempt",
        "min_release_age-action",
        "versions_deny-entries",
        "versions_deny-action",
        refusing,
        f"{refusing}-allow",
        f"{refusing}-action",
    )


def policy_form(form) -> dict:
    """The policy part of a posted form, as typed: {language: {mode, allow, deny, rules}} plus note."""
    state = {
        lang: {
            "mode": form.get(f"{lang}-mode", ""),
            **{lst: form.get(f"{lang}-{lst}", "") for lst in LISTS},
            "rules": {key: form.get(f"{lang}-rules-{key}", "") for key in _rule_inputs(lang)},
        }
        for lang in LANGUAGES
    }
    return {**state, "note": form.get("note", ""), "expected_version": form.get("expected_version", "")}


def policy_as_form(policy: dict) -> dict:
    """A saved policy shown in the form: one entry per line."""
    state = {
        lang: {
            "mode": policy[lang]["mode"],
            **{lst: "\n".join(policy[lang][lst]) for lst in LISTS},
            "rules": _rules_as_form(lang, policy[lang].get("rules") or {}),
        }
        for lang in LANGUAGES
    }
    return {**state, "note": "", "expected_version": str(policy["version"])}


def _rules_as_form(language: str, rules: dict) -> dict:
    age, deny = rules.get("min_release_age") or {}, rules.get("versions_deny") or {}
    refusing = REFUSING_RULE[language]
    refused = rules.get(refusing)
    return {
        "min_release_age-age": age.get("age", ""),
        "min_release_age-exempt": "\n".join(age.get("exempt", [])),
        "min_release_age-action": age.get("action", "enforce"),
        "versions_deny-entries": "\n".join(deny.get("entries", [])),
        "versions_deny-action": deny.get("action", "enforce"),
        refusing: "on" if refused is not None else "",
        f"{refusing}-allow": "\n".join((refused or {}).get("allow", [])),
        f"{refusing}-action": (refused or {}).get("action", "enforce"),
    }


def rules_of(language: str, typed: dict) -> dict:
    """A language's rules as the form sets them: a blank age or deny list is that rule off; the
    refusing rule is on when its box is ticked."""
    rules: dict = {}
    if typed["min_release_age-age"].strip():
        rules["min_release_age"] = {
            "age": typed["min_release_age-age"].strip(),
            "exempt": typed["min_release_age-exempt"],
            "action": typed["min_release_age-action"] or "enforce",
        }
    if typed["versions_deny-entries"].strip():
        rules["versions_deny"] = {
            "entries": typed["versions_deny-entries"],
            "action": typed["versions_deny-action"] or "enforce",
        }
    refusing = REFUSING_RULE[language]
    if typed[refusing]:
        rules[refusing] = {"allow": typed[f"{refusing}-allow"], "action": typed[f"{refusing}-action"] or "enforce"}
    return rules


def unkept(form: dict) -> list[str]:
    """Names typed for a rule the form leaves off (`rules_of` drops them): a Save says so rather
    than answer "Nothing to save" as if they had been kept."""
    said = []
    for language in LANGUAGES:
        typed, refusing, title = form[language]["rules"], REFUSING_RULE[language], TITLES[language]
        if not typed[refusing] and typed[f"{refusing}-allow"].strip():
            said.append(f"under {title} “{RULE_WORDS['allow']}”, as “{RULE_WORDS[refusing]}” is not ticked")
        if not typed["min_release_age-age"].strip() and typed["min_release_age-exempt"].strip():
            said.append(f"under {title} “{RULE_WORDS['exempt']}”, as “{RULE_WORDS['min_release_age']}” is empty")
    return said


def desired_state(form: dict) -> dict:
    """The complete desired state for `save_policy` (and a draft for `test`)."""
    errors = [
        FieldError(f"{lang}.mode", f"choose one of {', '.join(MODES)}")
        for lang in LANGUAGES
        if form[lang]["mode"] not in MODES
    ]
    if errors:
        raise InvalidInputError("choose a mode for every language; nothing was saved", errors)
    return {
        lang: {**{key: form[lang][key] for key in ("mode", *LISTS)}, "rules": rules_of(lang, form[lang]["rules"])}
        for lang in LANGUAGES
    }


# A version is a PostgreSQL bigint; Python's int() refuses a text of more than 4,300 digits.
MAX_VERSION_DIGITS = 18


def version_number(text: str) -> int | None:
    """A policy version typed or carried by a form (ASCII digits, few enough), else None."""
    text = text.strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) <= MAX_VERSION_DIGITS else None


def expected_version(form: dict) -> int:
    """The version the form was opened at. A Save without it would overwrite whatever was saved
    meanwhile (last writer wins), so a missing one is refused like a damaged one."""
    version = version_number(form["expected_version"])
    if version is None:
        raise InvalidInputError(
            "the form does not say which version of the policy it was opened at; reload the page (nothing was saved)",
            [FieldError("expected_version", "must be the whole number the page put there")],
        )
    return version


_BLANKS = " \t"  # a line of them alone is blank; a Unicode space is text, part of the spec it is in


def spec_input(language: str, text: str) -> tuple[str | None, list[str] | None, list[str] | None]:
    """(language, specs, command): a pasted install command line, or specs one per line.

    A spec line reaches the parser exactly as pasted, so the panel answers what `/test` answers
    for it (` lodash`, or `requests` and a no-break space, is no registry spec there either);
    lines break as list entries' do (`domain.entries.lines`). A line of spaces and tabs alone, or
    a comment ('#' after them), holds no spec and is skipped."""
    joined = re.sub(r"\\\r?\n", " ", text).strip()  # shell line continuations
    command = _command(joined)
    if command is not None:
        return None, None, command  # the command's program names the language
    specs = [line for line in lines(text) if line.strip(_BLANKS) and not line.lstrip(_BLANKS).startswith("#")]
    return language, specs, None


def _command(text: str) -> list[str] | None:
    # A command's first line starts with a program and a word or option (`pip install`,
    # `python -m pip`); a spec never does, even one with spaces (`pip >= 23`, `pip ; extra`).
    words = lines(text)[0].split()
    if len(words) < 2 or not _PROGRAMS.fullmatch(words[0]) or not (words[1][0].isalnum() or words[1][0] == "-"):
        return None
    try:
        return shlex.split(text)
    except ValueError as error:  # an unclosed quote
        raise InvalidInputError(
            "the command line cannot be split", [FieldError("command", f"{error} (check the quotes)")]
        ) from None


# What the API says in its own terms (`next_cursor`), said the console's way: a field's rule, and
# a refusal's detail when that field is all it names.
OWN_RULES = {
    "cursor": "must be an Older, Later changes or Next page link as the page gave it: start again from the first page"
}
OWN_DETAILS = {"cursor": "This page's link is damaged or was not made by this console"}


def refusal_text(error) -> str:
    """A refusal in the console's words: its detail, then each field it names by its label."""
    detail = plain_detail(error)
    said = [detail.rstrip(".") + "."] if detail else []
    return " ".join(said + [f"{field_label(e.field)}: {_rule(e)}." for e in error.errors])


def plain_detail(error: GovernanceError) -> str | None:
    """A refusal's detail as the console says it, or None when it says nothing its fields do not
    (`note must be at most 2000 characters`, beside the field `note` and that rule, or a pointer
    at them): a field it starts with is named by its label, and a pointer at the API's `errors`
    points at the fields listed with it."""
    fields = list(dict.fromkeys(e.field for e in error.errors))
    if len(fields) == 1 and fields[0] in OWN_DETAILS:
        return OWN_DETAILS[fields[0]]
    restated = len(error.errors) == 1 and error.detail == f"{error.errors[0].field} {error.errors[0].message}"
    if restated or RULES_NAMED in error.detail:
        return None
    detail = next(
        (field_label(f) + error.detail[len(f) :] for f in fields if error.detail.startswith(f + " ")), error.detail
    )
    return detail.replace(NAMED_IN_ERRORS, "listed below")


def _rule(error: FieldError) -> str:
    return OWN_RULES.get(error.field, error.message)


def field_label(field: str) -> str:
    """`python.allow[2]` -> `Python allow list, entry 3` (people count from one)."""
    found = _FIELD.fullmatch(field)
    if found:
        return f"{TITLES[found['language']]} {TITLES[found['list']]}, entry {int(found['index']) + 1}"
    found = _RULE_FIELD.fullmatch(field)
    if found:
        return f"{TITLES[found['language']]} {_rule_label(found['rule'], found['part'], found['index'])}"
    language, _, rest = field.partition(".")
    if language in LANGUAGES and rest:
        return f"{TITLES[language]} {TITLES.get(rest, rest)}"
    return LABELS.get(field, field)


def _rule_label(rule: str, part: str | None, index: str | None) -> str:
    """A rule's part as the Packages page labels its input (`min_release_age.exempt`: Never too new)."""
    words = RULE_WORDS.get(rule, rule)
    label = {"exempt": RULE_WORDS["exempt"], "allow": RULE_WORDS["allow"], "action": f"{words}: action"}.get(
        part or "", words
    )
    return f"{label}, entry {int(index) + 1}" if index is not None else label


def heading(error: GovernanceError) -> str:
    """A refusal's heading in plain words (`plain_detail`), unless it says only what its fields
    do (the fields are listed under the heading, labelled as the page labels its inputs)."""
    return plain_detail(error) or "Nothing was changed: fix what is marked below."


def error_items(error: GovernanceError) -> list[dict]:
    """Every named field of a refusal, labelled for people and keyed for the form's inputs (the
    form is the draft, so a draft's `draft.` prefix names the same inputs)."""
    fields = [(e.field.removeprefix("draft."), _rule(e)) for e in error.errors]
    return [{"field": f, "label": field_label(f), "message": m, "input": input_of(f)} for f, m in fields]


def input_of(field: str) -> str:
    """The form input a field error belongs to (`python.allow[2]` -> `python-allow`)."""
    base = field.split("[", 1)[0]
    if base in ("specs", "command", "language"):
        return "test-input" if base != "language" else "test-language"
    return base.replace(".", "-")
