"""Settings › Governance › Run-code packages: the policy form, its Save, and its Test panel.

A refused Save or Test re-renders the form with what was typed (nothing is lost, every bad
entry is named); a successful Save redirects (post/redirect/get) so reloading never re-saves.
"""

from __future__ import annotations

from flask import flash, redirect, render_template, request, url_for

from application.formats import encode_cursor
from domain.errors import ConflictError, GovernanceError, InvalidInputError
from domain.policy import LANGUAGES, MODES
from domain.token import role_allows
from interface.console.forms import (
    desired_state,
    error_items,
    expected_version,
    policy_as_form,
    policy_form,
    spec_input,
)
from interface.console.session import blueprint, caller, governance, require

PAGE = "/settings/governance/packages"
BLANK_TEST = {"language": "python", "input": ""}


def _workspace() -> str:
    return caller()["workspace"]


def can_edit() -> bool:
    return role_allows(caller()["role"], "admin")


@blueprint.get(PAGE)
def packages():
    saved = governance().policy(_workspace())
    return _page(saved, policy_as_form(saved))


@blueprint.post(PAGE)
def save_packages():
    require("admin")
    form = policy_form(request.form)
    try:
        desired, expected = desired_state(form), expected_version(form)
        policy = governance().save_policy(
            _workspace(),
            desired,
            by=caller()["name"],
            note=form["note"],
            expected_version=expected,
            by_token=caller()["id"],
        )
    except ConflictError as error:
        return _conflict(form, error)
    except InvalidInputError as error:
        return _page(governance().policy(_workspace()), form, refusal=error, status=422)
    if policy["version"] == expected:
        flash(f"Nothing to save: the form matches the saved policy (version {expected}).", "ok")
    else:
        flash(f"Saved. The policy is now version {policy['version']}.", "ok")
    return redirect(url_for("console.packages"))


@blueprint.post(PAGE + "/test")
def test_packages():
    against = request.form.get("against", "saved")
    if against == "draft":
        require("admin")
    saved = governance().policy(_workspace())
    # Auditors cannot edit, so their form is always the saved policy, whatever was posted.
    form = policy_form(request.form) if can_edit() else policy_as_form(saved)
    tried = {"language": request.form.get("test-language", "python"), "input": request.form.get("test-input", "")}
    try:
        answer = _test(form, tried, against)
    except InvalidInputError as error:
        return _page(saved, form, tried, refusal=error, status=422)
    return _page(saved, form, tried, answer=answer, against=against)


def _test(form: dict, tried: dict, against: str) -> dict:
    language, specs, command = spec_input(tried["language"], tried["input"])
    draft = desired_state(form) if against == "draft" else None
    return governance().test(
        _workspace(), language, specs, command, context={"source": "console", "actor": caller()["name"]}, draft=draft
    )


def _conflict(form: dict, error: ConflictError):
    """Keep the edits, show what changed meanwhile, and let the next Save apply over it."""
    saved = governance().policy(_workspace())
    since = _changes_after(form["expected_version"])
    form = {**form, "expected_version": str(saved["version"])}
    return _page(saved, form, refusal=error, since=since, status=409)


def _changes_after(version_text: str) -> list[dict]:
    if not version_text.strip().isdigit():
        return []
    # A history cursor means "after this version", so it lists exactly the changes missed.
    cursor = encode_cursor(int(version_text))
    return governance().history(_workspace(), limit=100, cursor=cursor)["changes"]


def _page(
    saved: dict,
    form: dict,
    tried: dict | None = None,
    *,
    answer: dict | None = None,
    against: str | None = None,
    refusal: GovernanceError | None = None,
    since: list | None = None,
    status: int = 200,
):
    items = error_items(refusal) if refusal else []
    return render_template(
        "console/packages.html",
        saved=saved,
        form=form,
        tried=tried or BLANK_TEST,
        answer=answer,
        against=against,
        refusal=refusal,
        problems=items,
        since=since,
        invalid={i["input"] for i in items},
        can_edit=can_edit(),
        languages=LANGUAGES,
        modes=MODES,
    ), status
