"""The audit pages: recorded decisions (filtered, paged, exported) and the policy's change history.

Exports stream through the console with the session's token, because a browser has no bearer
token to follow a link into the JSON API with.
"""

from __future__ import annotations

from flask import redirect, render_template, request, url_for

from domain.decision import DECISION_KINDS, EGRESS_REASONS, REASONS
from domain.errors import FieldError, GovernanceError, InvalidInputError
from domain.policy import LANGUAGES
from interface import exports
from interface.console.forms import error_items
from interface.console.instants import period
from interface.console.session import blueprint, caller, governance

PAGE_SIZE = 50
FILTERS = ("language", "name", "outcome", "reason", "kind", "sandbox", "source", "from", "to")
OUTCOMES = {"allowed": True, "denied": False}


# Looked for exactly as given: the context labels are recorded as sent, and one recorded before
# `domain.text.check_context` refused blanks (" padded ", spaces alone) names only its own decisions.
VERBATIM = ("sandbox", "source")


def typed_filters(args) -> dict:
    """The filters as typed (kept in the form and in every link), empty ones dropped (any); a name
    or an instant without the blanks around it, a sandbox or source as given (VERBATIM)."""
    typed = {key: args.get(key, "") if key in VERBATIM else args.get(key, "").strip() for key in FILTERS}
    return {key: value for key, value in typed.items() if value}


def query_of(typed: dict) -> tuple[dict, object, object]:
    """(filters, start, end) for `Audit.decisions`, from the typed filters."""
    language = typed.get("language")  # checked with the other filters by the application
    outcome = typed.get("outcome")
    if outcome is not None and outcome not in OUTCOMES:
        raise InvalidInputError(f"unknown outcome {outcome!r}", [FieldError("outcome", "must be allowed or denied")])
    filters = {
        "language": language,
        "name": typed.get("name"),
        "allowed": OUTCOMES.get(outcome),
        **{k: typed.get(k) for k in ("reason", "kind", "sandbox", "source")},
    }
    return (filters, *period(typed))


@blueprint.get("/audit")
def audit():
    typed = typed_filters(request.args)
    cursor = request.args.get("cursor") or None
    try:
        filters, start, end = query_of(typed)
        page = governance().audit.decisions(caller()["workspace"], filters, start, end, PAGE_SIZE, cursor)
    except GovernanceError as error:
        return _audit_page(typed, cursor, None, error), 422
    return _audit_page(typed, cursor, page, None)


def _audit_page(typed, cursor, page, refusal):
    return render_template(
        "console/audit.html",
        typed=typed,
        cursor=cursor,
        page=page,
        refusal=refusal,
        problems=error_items(refusal) if refusal else [],
        languages=LANGUAGES,
        reasons={"Packages": REASONS, "Egress": EGRESS_REASONS},  # egress's `allowed` apart from the packages'
        kinds=DECISION_KINDS,
    )


@blueprint.get("/audit/export.<any(csv, jsonl):fmt>")
def export(fmt: str):
    try:
        filters, start, end = query_of(typed_filters(request.args))
    except GovernanceError:
        return redirect(url_for("console.audit", **request.args))  # which shows what is wrong
    workspace = caller()["workspace"]
    rows = governance().audit.export_decisions(workspace, filters, start, end)
    return exports.stream(rows, fmt, f"decisions-{workspace}")


@blueprint.get("/history")
def history():
    typed = {k: request.args.get(k, "").strip() for k in ("from", "to") if request.args.get(k, "").strip()}
    cursor = request.args.get("cursor") or None
    try:
        start, end = period(typed)
        page = governance().audit.history(caller()["workspace"], start, end, PAGE_SIZE, cursor)
        page["changes"] = governance().audit.with_rule_values(caller()["workspace"], page["changes"])
    except GovernanceError as error:
        return render_template(
            "console/history.html", typed=typed, page=None, refusal=error, problems=error_items(error)
        ), 422
    return render_template("console/history.html", typed=typed, page=page, refusal=None, problems=[])
