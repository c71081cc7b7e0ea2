"""The Requests page (approve for 1, 7 or 30 days or permanently, or reject with a note), revoking
exceptions from the packages page, and the impact preview of the unsaved draft next to Save."""

from __future__ import annotations

from flask import flash, redirect, render_template, request, url_for

from domain.access import STATUS_FILTERS, PatternDenied
from domain.errors import ConflictError, FieldError, GovernanceError, InvalidInputError
from domain.specs import check_language
from domain.text import noun_for, quoted, some_of
from interface.console import packages as policy_page
from interface.console.forms import (
    LIFT_BOXES,
    TITLES,
    desired_state,
    policy_form,
    refusal_text,
    version_number,
)
from interface.console.session import blueprint, caller, governance, require
from interface.index.closure import request_closure
from interface.problems import HTTPProblem, status_of

# What the approve buttons offer (value -> ISO 8601 duration; "permanent": none).
DURATIONS = {"P1D": "1 day", "P7D": "7 days", "P30D": "30 days", "permanent": "permanently"}
IMPACT_DAYS = 30
PAGE_SIZE = 100  # requests a page shows; the older ones are a "Next page" away
SHOWN_GRANTS = 10  # names an approval's notice lists, then "and N more"


def _workspace() -> str:
    return caller()["workspace"]


@blueprint.get("/requests")
def requests_page(kept: dict | None = None):
    """`kept`: what an admin typed into one request's form that was refused, shown again."""
    status = request.args.get("status", "open")
    if status not in STATUS_FILTERS:  # said, not read as another filter (the list would not be what was asked)
        rule = f"must be one of {', '.join(STATUS_FILTERS)}"
        raise InvalidInputError(f"there is no request status {quoted(status)} to show", [FieldError("status", rule)])
    cursor = request.args.get("cursor") or None
    page = governance().access.requests(_workspace(), status, limit=PAGE_SIZE, cursor=cursor)
    return render_template(
        "console/requests.html",
        requests=page["requests"],
        next_cursor=page["next_cursor"],
        cursor=cursor,
        status=status,
        statuses=STATUS_FILTERS,
        durations=DURATIONS,
        can_edit=policy_page.can_edit(),
        kept=kept or {},
    )


@blueprint.get("/requests/<request_id>/closure")
def closure_preview(request_id: str):
    """What "Approve with its dependencies" would grant, shown before anything is granted."""
    require("admin")
    return _closure_page(request_id, request_closure(governance(), _workspace(), request_id))


def _closure_page(request_id: str, found: dict, kept: dict | None = None, moved: dict | None = None, status=200):
    """`kept`: what an admin typed that was refused, shown again; `moved`: what changed since the
    page the approval came from was worked out (`_moved`)."""
    asked = governance().access.request(_workspace(), request_id)
    shown = closure_grants(asked["name"], found)
    page = render_template(
        "console/closure.html", r=asked, closure=found, shown=shown, durations=DURATIONS, kept=kept or {}, moved=moved
    )
    return page, status


def closure_grants(requested: str, closure: dict) -> dict:
    """What approving a request with its closure grants, as `Access.approve_request` works it
    out: an exception for the requested name and each name not allowed yet (`grants`); the deny
    entries the lifting box lifts (`lifts`); and the names a deny pattern denies (`patterned`,
    each with its pattern), which no exception can let in."""
    wanting = [n for n in closure["names"] if n["status"] in ("denied", "unlisted")]
    denied = [n for n in wanting if n["status"] == "denied"]
    return {
        "version": closure["policy_version"],
        "grants": list(dict.fromkeys([requested, *(n["name"] for n in wanting)])),
        "lifts": [n["name"] for n in denied if "pattern" not in n],
        "patterned": [n for n in denied if "pattern" in n],
    }


def _form_grants(form) -> dict:
    """What the closure page the approval came from showed (its hidden fields)."""
    version = version_number(form.get("policy_version", ""))
    if version is None:
        raise InvalidInputError(
            "the form does not say which policy version its dependencies were worked out at; reload the page "
            "(nothing was granted)",
            [FieldError("policy_version", "must be the whole number the page put there")],
        )
    return {"version": version, "grants": form.getlist("grant"), "lifts": form.getlist("lift")}


@blueprint.post("/requests/<request_id>/approve")
def approve(request_id: str):
    require("admin")
    choice = request.form.get("duration", "")
    if choice not in DURATIONS:
        raise InvalidInputError("choose how long the exception lasts", [])
    with_dependencies = request.form.get("with_dependencies") == "yes"
    # With its dependencies: exactly what the page showed is granted, or nothing (`_moved`).
    shown = _form_grants(request.form) if with_dependencies else None
    closure = request_closure(governance(), _workspace(), request_id) if with_dependencies else None
    note, lift_deny = request.form.get("note", ""), request.form.get("lift_deny") == "yes"
    kept = {"id": request_id, "note": note, "lift_deny": lift_deny}
    try:
        decided = governance().access.approve_request(
            _workspace(),
            request_id,
            by=caller()["name"],
            duration=None if choice == "permanent" else choice,
            note=note,
            lift_deny=lift_deny,
            dependencies=[n["name"] for n in closure["names"]] if closure else None,
            by_token=caller()["id"],
            expected_version=shown["version"] if shown else None,
            expected_names=shown["grants"] if shown else None,
        )
    except GovernanceError as error:
        if isinstance(error, HTTPProblem):
            raise
        if shown is not None and any(e.field in ("expected_version", "expected_names") for e in error.errors):
            return _moved(request_id, closure, shown, kept)
        # Refused as typed: the page again with the note and the box as they were, not emptied.
        flash(_approval_refusal(error, request_id, closure), "error")
        if closure is not None:
            return _closure_page(request_id, closure, kept, status=status_of(error))
        return requests_page(kept), status_of(error)
    flash(_approved(decided, closure, DURATIONS[choice], request_id), "ok")
    return redirect(url_for("console.requests_page"))


def _moved(request_id: str, closure: dict, shown: dict, kept: dict):
    """Nothing was granted: the policy moved on, or approving would now grant other names (an
    upstream release needing one more, a name denied or allowed since). The page again, worked
    out now, with what changed; the lifting box is cleared if it would now lift other entries."""
    asked = governance().access.request(_workspace(), request_id)
    now = closure_grants(asked["name"], closure)
    head = governance().policy(_workspace())["version"]
    lifts_moved = set(now["lifts"]) != set(shown["lifts"])
    moved = {
        "versions": (shown["version"], head) if shown["version"] != head else None,
        "since": policy_page.changes_after(shown["version"]) if shown["version"] < head else None,
        "added": [n for n in now["grants"] if n not in shown["grants"]],
        "dropped": [n for n in shown["grants"] if n not in now["grants"]],
        "denied": [n for n in now["lifts"] if n not in shown["lifts"]],
        "undenied": [n for n in shown["lifts"] if n not in now["lifts"]],
        "cleared": kept["lift_deny"] and lifts_moved,
    }
    kept = {**kept, "lift_deny": kept["lift_deny"] and not lifts_moved}
    return _closure_page(request_id, closure, kept, moved, status=409)


def _approved(decided: dict, closure: dict | None, duration: str, request_id: str) -> str:
    """The notice of an approval: with its dependencies, which names it granted (the first
    SHOWN_GRANTS), and what could not be followed."""
    said = f"Approved {decided['name']}"
    others = [n for n in decided["granted"] if n != decided["name"]]
    if closure is None:
        said += f" ({duration})."
    elif others:
        dependencies = noun_for(len(others), "dependency", "dependencies")
        said += f" and {len(others)} {dependencies} not allowed before ({duration}): {some_of(others, SHOWN_GRANTS)}."
    else:
        said += f" ({duration}). None of its dependencies needed an exception."
    unread = len(closure["unresolved"]) if closure else 0
    if unread:  # what those need is unknown: the names above are not all the dependencies
        said += f" {unread} {noun_for(unread, 'requirement')} could not be followed, so what they need was not granted."
    standing = governance().access.exceptions(_workspace())["exceptions"]
    lifting = sorted(e["name"] for e in standing if e["lifts_deny"] and e["request_id"] == request_id)
    return said + _lifted(lifting, decided["name"])


def _lifted(names: list[str], asked: str) -> str:
    """Whose deny entries the approval lifted: a dependency's, not the package's, may be the one."""
    if not names:
        return ""
    if names == [asked]:
        return " Its deny entry is lifted until the exception ends."
    if len(names) == 1:
        return f" The deny entry of {names[0]} is lifted until its exception ends."
    return f" The deny entries of {some_of(names, SHOWN_GRANTS)} are lifted until their exceptions end."


def _approval_refusal(error: GovernanceError, request_id: str, closure: dict | None) -> str:
    """A refusal said as the page shows it: for want of the lifting box, tick that box (the API
    names its field, `lift_deny: must be true`); under a deny pattern, that no box can help;
    a request decided meanwhile, by whom; any other in the console's usual words."""
    asked = governance().access.request(_workspace(), request_id)
    if isinstance(error, PatternDenied):
        return pattern_refusal(error)
    if any(e.field == "request_id" for e in error.errors):
        return decided_already(asked)
    if not any(e.field == "lift_deny" for e in error.errors):
        return refusal_text(error)
    title = TITLES[asked["language"]]
    if closure is not None:
        denied = ", ".join(closure_grants(asked["name"], closure)["lifts"])
        return (
            f"What {asked['name']} needs includes {denied}, on the {title} deny list, which wins over exceptions: "
            f"to approve, tick “{LIFT_BOXES['closure']}”. The entries stay on the list and deny again when "
            "the exceptions end or are revoked."
        )
    return (
        f"{asked['name']} is on the {title} deny list, which wins over exceptions: to approve it, tick "
        f"“{LIFT_BOXES['one']}”. The entry stays on the list and denies it again when the exception ends "
        "or is revoked."
    )


def pattern_refusal(error: PatternDenied) -> str:
    names, patterns = error.names, error.patterns
    return (
        f"{' and '.join(names)} {'is' if len(names) == 1 else 'are'} denied by the {TITLES[error.language]} deny "
        f"{noun_for(len(patterns), 'pattern')} {', '.join(patterns)}. A pattern denies other names too, so no "
        "exception can lift it: remove or narrow it on the Run-code packages page first, or reject the request. "
        "Nothing was granted."
    )


def decided_already(asked: dict) -> str:
    """A request someone decided meanwhile (another tab, another admin)."""
    by = f" by {asked['decided_by']}" if asked["decided_by"] else ""
    return f"The request for {asked['name']} was already {asked['status']}{by}: nothing was changed."


@blueprint.post("/requests/<request_id>/reject")
def reject(request_id: str):
    require("admin")
    try:
        decided = governance().access.reject_request(
            _workspace(), request_id, by=caller()["name"], note=request.form.get("note", "")
        )
    except ConflictError as error:
        if not any(e.field == "request_id" for e in error.errors):
            raise
        flash(decided_already(governance().access.request(_workspace(), request_id)), "error")
        return redirect(url_for("console.requests_page"))
    flash(f"Rejected the request for {decided['name']}.", "ok")
    return redirect(url_for("console.requests_page"))


@blueprint.post(policy_page.PAGE + "/exceptions/<exception_id>/revoke")
def revoke_exception(exception_id: str):
    require("admin")
    try:
        ended = governance().access.revoke_exception(
            _workspace(), exception_id, by=caller()["name"], by_token=caller()["id"]
        )
    except ConflictError as error:
        if not any(e.field == "exception_id" for e in error.errors):
            raise
        # Revoked from another tab or by another admin, or expired since the page was shown.
        flash(
            "That exception is no longer in force (it was revoked, or it ended): nothing was changed. "
            "The exceptions listed below are those in force now.",
            "error",
        )
        return redirect(url_for("console.packages"))
    flash(f"Exception for {ended['name']} ({TITLES[ended['language']]}) revoked: it no longer allows it.", "ok")
    return redirect(url_for("console.packages"))


@blueprint.post(policy_page.PAGE + "/impact")
def preview_impact():
    """The packages page again, with the form as typed and what it would change."""
    require("admin")
    saved = governance().policy(_workspace())
    form = policy_form(request.form)
    try:
        impact = governance().impacts.impact(_workspace(), desired_state(form), IMPACT_DAYS)
    except InvalidInputError as error:
        return policy_page._page(saved, form, refusal=error, status=422)
    return policy_page._page(saved, form, impact=impact_summary(impact))


@blueprint.post(policy_page.PAGE + "/synthesis")
def synthesise_draft():
    """Switch the draft of one language to Allowlist with the list synthesised from the record,
    with its impact: a draft in the form, never saved until Save is clicked."""
    require("admin")
    saved = governance().policy(_workspace())
    form = policy_form(request.form)
    language = request.form.get("synthesis-language", "")
    try:
        check_language(language)  # the console's form holds package lists only
        share = _share(request.form.get("synthesis-coverage", ""))
        found = governance().synthesis.synthesise(
            _workspace(), language, IMPACT_DAYS, share, "installs", draft=desired_state(form)
        )
    except InvalidInputError as error:
        return policy_page._page(saved, form, refusal=error, status=422)
    form[language] = {**form[language], "mode": "allowlist", "allow": "\n".join(found["allow"])}
    denied = (
        f" Not added, as the draft's deny list denies them (their installs count as not covered): "
        f"{', '.join(found['denied'])}."
        if found["denied"]
        else ""
    )
    flash(
        f"Draft: {TITLES[language]} switched to Allowlist with the {len(found['allow'])} "
        f"{noun_for(len(found['allow']), 'package')} that would have "
        f"allowed {found['coverage']:.1%} of the last {IMPACT_DAYS} days' allowed installs.{denied} "
        "Nothing is saved until you press Save.",
        "ok",
    )
    return policy_page._page(saved, form, impact=impact_summary(found["impact"]))


def _share(text: str) -> float:
    """A percentage as typed (`99`, `99.5`), as the share the synthesis takes (the API's
    `coverage` is a share, such as 0.99: its refusal would give advice in the wrong unit)."""
    try:
        percent = float(text)
    except ValueError:
        percent = float("nan")
    if not 0 < percent <= 100:  # NaN too
        rule = "must be a percentage above 0 and at most 100, such as 99"
        raise InvalidInputError(f"coverage {text!r} is not a percentage", [FieldError("coverage", rule)])
    return percent / 100


def impact_summary(impact: dict, shown: int = 5) -> dict:
    """Numbers and words for the preview: "would have denied 41 of 1,203 installs: scipy ×17 …"."""
    moved = {k: sum(p["installs"] for p in impact[k]) for k in ("would_deny", "would_allow")}
    total = impact["unchanged"] + moved["would_deny"] + moved["would_allow"]
    return {**impact, "total": total, "denied": moved["would_deny"], "allowed": moved["would_allow"], "shown": shown}
