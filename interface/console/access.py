"""The Requests page (approve for 1, 7 or 30 days or permanently, or reject with a note), revoking
exceptions from the packages page, and the impact preview of the unsaved draft next to Save."""

from __future__ import annotations

from flask import flash, redirect, render_template, request, url_for

from domain.access import STATUS_FILTERS
from domain.errors import FieldError, GovernanceError, InvalidInputError
from domain.specs import check_language
from domain.text import noun_for, quoted
from interface.console import packages as policy_page
from interface.console.forms import LIFT_BOXES, TITLES, desired_state, policy_form, refusal_text
from interface.console.session import blueprint, caller, governance, require
from interface.index.closure import request_closure
from interface.problems import HTTPProblem, status_of

# What the approve buttons offer (value -> ISO 8601 duration; "permanent": none).
DURATIONS = {"P1D": "1 day", "P7D": "7 days", "P30D": "30 days", "permanent": "permanently"}
IMPACT_DAYS = 30
PAGE_SIZE = 100  # requests a page shows; the older ones are a "Next page" away


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
def closure_preview(request_id: str, kept: dict | None = None):
    """What "Approve with its dependencies" would grant, shown before anything is granted
    (`kept`: what an admin typed into it that was refused, shown again)."""
    require("admin")
    asked = governance().access.request(_workspace(), request_id)
    found = request_closure(governance(), _workspace(), request_id)
    return render_template("console/closure.html", r=asked, closure=found, durations=DURATIONS, kept=kept or {})


@blueprint.post("/requests/<request_id>/approve")
def approve(request_id: str):
    require("admin")
    choice = request.form.get("duration", "")
    if choice not in DURATIONS:
        raise InvalidInputError("choose how long the exception lasts", [])
    with_dependencies = request.form.get("with_dependencies") == "yes"
    closure = request_closure(governance(), _workspace(), request_id) if with_dependencies else None
    dependencies = [n["name"] for n in closure["names"]] if closure else None
    note, lift_deny = request.form.get("note", ""), request.form.get("lift_deny") == "yes"
    try:
        decided = governance().access.approve_request(
            _workspace(),
            request_id,
            by=caller()["name"],
            duration=None if choice == "permanent" else choice,
            note=note,
            lift_deny=lift_deny,
            dependencies=dependencies,
            by_token=caller()["id"],
        )
    except GovernanceError as error:
        if isinstance(error, HTTPProblem):
            raise
        # Refused as typed: the page again with the note and the box as they were, not emptied.
        flash(_approval_refusal(error, request_id, closure), "error")
        kept = {"id": request_id, "note": note, "lift_deny": lift_deny}
        page = closure_preview(request_id, kept) if with_dependencies else requests_page(kept)
        return page, status_of(error)
    others = len(decided["granted"]) - 1
    also = (
        f" and {others} {noun_for(others, 'dependency', 'dependencies')} not allowed before"
        if with_dependencies
        else ""
    )
    unread = len(closure["unresolved"]) if closure else 0
    if unread:  # what those need is unknown: the count above is not of all the dependencies
        also += f"; {unread} {noun_for(unread, 'requirement')} could not be followed, so what they need was not granted"
    standing = governance().access.exceptions(_workspace())["exceptions"]
    lifting = sorted(e["name"] for e in standing if e["lifts_deny"] and e["request_id"] == request_id)
    flash(f"Approved {decided['name']}{also} ({DURATIONS[choice]}).{_lifted(lifting, decided['name'])}", "ok")
    return redirect(url_for("console.requests_page"))


def _lifted(names: list[str], asked: str) -> str:
    """Whose deny entries the approval lifted: a dependency's, not the package's, may be the one."""
    if not names:
        return ""
    if names == [asked]:
        return " Its deny entry is lifted until the exception ends."
    if len(names) == 1:
        return f" The deny entry of {names[0]} is lifted until its exception ends."
    return f" The deny entries of {', '.join(names)} are lifted until their exceptions end."


def _approval_refusal(error: GovernanceError, request_id: str, closure: dict | None) -> str:
    """A refusal for want of the lifting box said as the page shows it: tick that box (the API
    names its field, `lift_deny: must be true`); any other in the console's usual words."""
    if not any(e.field == "lift_deny" for e in error.errors):
        return refusal_text(error)
    asked = governance().access.request(_workspace(), request_id)
    title = TITLES[asked["language"]]
    if closure is not None:
        denied = ", ".join(n["name"] for n in closure["names"] if n["status"] == "denied")
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


@blueprint.post("/requests/<request_id>/reject")
def reject(request_id: str):
    require("admin")
    decided = governance().access.reject_request(
        _workspace(), request_id, by=caller()["name"], note=request.form.get("note", "")
    )
    flash(f"Rejected the request for {decided['name']}.", "ok")
    return redirect(url_for("console.requests_page"))


@blueprint.post(policy_page.PAGE + "/exceptions/<exception_id>/revoke")
def revoke_exception(exception_id: str):
    require("admin")
    ended = governance().access.revoke_exception(
        _workspace(), exception_id, by=caller()["name"], by_token=caller()["id"]
    )
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
