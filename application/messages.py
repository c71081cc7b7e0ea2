"""What a decision says to its reader, rendered from what it records whenever it is shown.

A decision records facts: its reason and the parameters that reason needs (`DecisionRecord.params`).
The words - and where to go about it: the console's place, the gate's command, the API's route -
are written here, once, for every answer that shows a decision (`/evaluate`, `/decisions`, the
index's refusals, run summaries, the console, exports). So renaming a screen or a command changes
what every decision, old or new, says; none of it is in the store. Rendering reads nothing but the
record: the `/evaluate` hot path stays free of reads.

Decisions recorded before parameters were (`Decision.Recorded` version 1) kept their text; the
upcaster (`domain.decision.upcast_record`) keeps the parameters of the reasons it can re-derive and
the text only for the others (`LEGACY`), which this shows as it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from domain.decision import (
    KNOWN_MALWARE,
    LEGACY,
    NOT_FOUND_UPSTREAM,
    RUN_FAILED,
    UPSTREAM_FAILED,
    VERSION_UNKNOWN,
    DecisionRecord,
)
from domain.declared import version_label
from domain.rules import INSTALL_SCRIPTS, SDIST_REFUSED, TOO_NEW, VERSION_DENIED, Finding
from domain.specs import LANGUAGE_TITLES

CONSOLE_PLACE = "Settings › Governance › Run-code packages"
GATE_REQUEST = 'runcode-policy-gate request {language} {name} --why "..."'
REQUESTS_ROUTE = "/api/v1/workspaces/{workspace}/requests"


def render_message(record: DecisionRecord, workspace: str) -> str | None:
    """What a refusal says (None for what was allowed, and for egress decisions, whose `detail`
    says it): what was refused, by which rule, and what to ask for."""
    if record.allowed or record.kind == "egress":
        return None
    params = record.params or {}
    if LEGACY in params:
        return str(params[LEGACY])
    if record.declared_by is not None:
        return _hidden(record, params, workspace)
    reason = record.reason
    if reason == RUN_FAILED:
        return _run_failed(params, workspace)
    if reason == UPSTREAM_FAILED:
        return str(params.get("why", ""))
    if reason == NOT_FOUND_UPSTREAM:
        return f"the {LANGUAGE_TITLES[record.language or 'python']} upstream has no package {record.name!r}."
    if reason in (KNOWN_MALWARE, VERSION_UNKNOWN) or reason in _RULES:
        return finding_message(reason, params, record.language or "python")
    return _denial(record, params, workspace)


def finding_message(reason: str, params: Mapping[str, Any], language: str) -> str:
    """Why a version (or a file) is hidden: known malware, a rule beyond names (`domain.rules`),
    or a name that does not say its version."""
    name, version = params.get("name"), params.get("version")
    if reason == VERSION_UNKNOWN and params.get("another_project"):
        return (
            f"{params.get('file')!r} is listed for {name}, but its name names another project: it would "
            f"install that project, not {name}, so it is refused; install a project by its own name."
        )
    if reason == VERSION_UNKNOWN:
        return unknown_version_message(str(name), str(params.get("file")))
    if reason == KNOWN_MALWARE:
        label = version_label(language, str(name), str(version))
        return (
            f"{label} is known malware ({', '.join(params.get('advisories') or ())}): this workspace refuses "
            "it; use another version or another package."
        )
    return _RULES[reason](f"{name} {version}", params)


def unknown_version_message(name: str, file: str) -> str:
    """Why a file whose version nothing says is refused while its project's versions are judged."""
    return (
        f"{file!r} of {name}: its name does not say which version it is, and this project's versions "
        "are judged (a rule beyond names or an advisory), so it is refused; use a file whose name "
        "follows the packaging standards."
    )


def message_of(finding: Finding, language: str) -> str:
    return finding_message(finding.reason, finding.params, language)


def _denial(record: DecisionRecord, params: Mapping[str, Any], workspace: str) -> str:
    """Written for the asker, a person or an agent: what, which rule, what to ask for."""
    reason, language = record.reason, record.language or "python"
    lang = LANGUAGE_TITLES[language]
    who = record.name or record.spec
    ask = f"an admin can change this under {CONSOLE_PLACE}"
    if reason == "matches-the-deny-list" and params.get("pattern"):
        return (
            f"{who} is denied by the {lang} deny pattern {params['pattern']} of workspace {workspace}, so no "
            f"request for it can be approved; an admin can narrow or remove the pattern under {CONSOLE_PLACE}."
        )
    if reason == "matches-the-deny-list":
        return (
            f"{who} is on the {lang} deny list of workspace {workspace}; {ask} if it should be allowed. "
            + request_hint(language, who, workspace)
        )
    if reason == "not-on-the-allow-list":
        return (
            f"{who} is not on the {lang} allow list of workspace {workspace}; {ask} by adding it to the "
            f"allow list. " + request_hint(language, who, workspace)
        )
    if reason == "direct-reference":
        why = (
            "the allow list vouches for registry names only"
            if params.get("mode") == "allowlist"
            else "its package name cannot be known before it is fetched or built"
            if record.name is None
            else f"{record.name} is on the {lang} deny list"
        )
        return (
            f"{record.spec!r} installs from a {record.kind} source, which is refused in workspace "
            f"{workspace}: {why}. Install the package from the registry by name instead."
        )
    detail = record.detail or "it cannot be judged"
    return f"{record.spec!r} cannot be judged, so it is refused: {detail}."


def request_hint(language: str, name: str, workspace: str) -> str:
    """How an agent asks for a denied package: the gate's command, or the API call it makes."""
    command = GATE_REQUEST.format(language=language, name=name)
    return f"To ask for it, run: {command} (or POST {REQUESTS_ROUTE.format(workspace=workspace)})."


def _hidden(record: DecisionRecord, params: Mapping[str, Any], workspace: str) -> str:
    """A version hidden for a dependency it declares: the dependency's own refusal, rendered as
    the same spec on the command line would be (its detail is the spec's, not the record's)."""
    own = {k: v for k, v in params.items() if k not in ("field", "spec_detail")}
    dependency = DecisionRecord(
        record.spec, record.language, record.name, record.kind, False, record.reason, None, None,
        detail=params.get("spec_detail"), params=own or None,
    )  # fmt: skip
    return (
        f"{record.declared_by} is not offered because of a dependency it declares in {params.get('field')}: "
        f"{render_message(dependency, workspace)} "
        "An older or newer version that does not declare it may still be installed."
    )


def _run_failed(params: Mapping[str, Any], workspace: str) -> str:
    """Every fetch after a run's first project denial: refused, naming that denial."""
    first = params.get("first") or {}
    window = params.get("window_minutes")
    who = "run" if window is None else f"token (reading the index without a run, for {window} minutes after a denial)"
    denied = (
        f"{first.get('name') or first.get('spec')} ({first.get('language')}) was denied \u2014 {first.get('reason')}"
    )
    shown = render_message(DecisionRecord.from_dict({"allowed": False, **first}), workspace) if first else None
    why = f": {shown.rstrip('.')}" if shown else ""
    return f"this {who} already failed: {denied}{why}; nothing more is served to it"


_ONLY_ALLOWED = "only for the names in its allow list"
_SCRIPTS = {
    True: "runs code at install time (a preinstall, install or postinstall script): install_scripts allows it "
    + _ONLY_ALLOWED,
    None: f"may run code at install time (the upstream does not say): install_scripts allows it {_ONLY_ALLOWED}",
}
_SDIST = f"this file is a source distribution (its build runs at install time): sdists allows those {_ONLY_ALLOWED}"


def _too_new(what: str, params: Mapping[str, Any]) -> str:
    rule = f"min_release_age ({params.get('min_release_age')})"
    uploaded = params.get("uploaded_at")
    if uploaded is None:
        return f"{what} has no upload time from the upstream: {rule} takes it as too new"
    at, uploaded_at = datetime.fromisoformat(params["judged_at"]), datetime.fromisoformat(uploaded)
    age = at - uploaded_at
    ago = f"{_plain(age)} ago" if age > timedelta(0) else "after the instant judged"
    return f"{what} was uploaded {ago} ({uploaded_at.strftime('%Y-%m-%dT%H:%M:%SZ')}), less than {rule}"


def _plain(length: timedelta) -> str:
    """A span in plain words, to the minute: `2 days 3 hours`, `40 minutes`."""
    minutes = int(length.total_seconds() // 60)
    days, hours, minutes = minutes // 1440, minutes // 60 % 24, minutes % 60
    parts = [
        f"{n} {unit}{'s' if n != 1 else ''}" for n, unit in ((days, "day"), (hours, "hour"), (minutes, "minute")) if n
    ]
    return " ".join(parts[:2]) or "under a minute"


_RULES = {
    TOO_NEW: _too_new,
    VERSION_DENIED: lambda what, p: f"{what} matches the version deny entry {p.get('entry')!r}",
    INSTALL_SCRIPTS: lambda what, p: f"{what} {_SCRIPTS[p.get('install_scripts')]}",
    SDIST_REFUSED: lambda what, p: f"{what}: {_SDIST}",
}
