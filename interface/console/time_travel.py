"""Time travel: the policy exactly as it stood at an instant, and "was NAME allowed then?"."""

from __future__ import annotations

from datetime import UTC, datetime

from flask import render_template, request

from domain.errors import FieldError, GovernanceError, InvalidInputError
from domain.policy import LANGUAGES
from interface.console.forms import error_items, instant
from interface.console.session import blueprint, caller, governance

FIELDS = ("when", "at", "language", "name")


@blueprint.get("/time-travel")
def time_travel():
    typed = {key: request.args.get(key, "").strip() for key in FIELDS}
    typed["language"] = typed["language"] or "python"
    try:
        policy, package = _answers(typed)
    except GovernanceError as error:
        return _page(typed, None, None, error), 422
    return _page(typed, policy, package, None)


def _answers(typed: dict) -> tuple[dict | None, dict | None]:
    # The RFC 3339 field wins over the picker: it is the precise one (history links fill it).
    moment = instant(typed["at"], "at") or instant(typed["when"], "when")
    if moment is None:
        if typed["name"]:
            raise InvalidInputError(
                "pick the instant to ask about", [FieldError("when", "pick an instant, or type one in RFC 3339")]
            )
        return None, None
    workspace = caller()["workspace"]
    policy = governance().policy(workspace, moment)
    package = governance().package_at(workspace, typed["language"], typed["name"], moment) if typed["name"] else None
    return policy, package


def _page(typed, policy, package, refusal):
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return render_template(
        "console/time_travel.html",
        typed=typed,
        policy=policy,
        package=package,
        refusal=refusal,
        problems=error_items(refusal) if refusal else [],
        languages=LANGUAGES,
        now=now,
    )
