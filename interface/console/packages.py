"""Settings › Governance › Run-code packages: the policy form, its Save, and its Test panel.

A refused Save re-renders the form with what was typed (nothing is lost, every bad entry is
named); a successful Save redirects (post/redirect/get) so reloading never re-saves. A Test is
a question that changes nothing, so its post redirects to the page's own address with the form
in the query and `#results`: the answer is in view, and reloading asks again instead of
re-posting. That address is sealed to this session (`drafts`): a link made elsewhere shows
the saved policy in the form, never a draft someone else chose for the next Save.
"""

from __future__ import annotations

from urllib.parse import urlencode

from flask import flash, redirect, render_template, request, url_for

from application.formats import encode_cursor
from application.imports import FORMATS as IMPORT_FORMATS
from domain.errors import ConflictError, GovernanceError, InvalidInputError
from domain.policy import LANGUAGES, MODES
from domain.token import role_allows
from interface.console.drafts import seal_holds, sealed
from interface.console.forms import (
    REFUSING_RULE,
    desired_state,
    error_items,
    expected_version,
    policy_as_form,
    policy_form,
    spec_input,
    unkept,
    version_number,
)
from interface.console.session import blueprint, caller, governance, require

PAGE = "/settings/governance/packages"
BLANK_TEST = {"language": "python", "input": ""}
MAX_TEST_URL = 8000  # beyond this (a huge draft) the answer is shown in the post's own reply


def _workspace() -> str:
    return caller()["workspace"]


def can_edit() -> bool:
    return role_allows(caller()["role"], "admin")


@blueprint.get(PAGE)
def packages():
    saved = governance().policy(_workspace())
    if "against" in request.args:  # a Test's answer (see test_packages)
        return _tested(saved, request.args, trusted=seal_holds(request.args))
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
    said = (
        f"Nothing to save: the form matches the saved policy (version {expected})."
        if policy["version"] == expected
        else f"Saved. The policy is now version {policy['version']}."
    )
    if dropped := unkept(form):
        said += f" The names typed for a rule that is off were not kept: {'; '.join(dropped)}."
    flash(said, "ok")
    return redirect(url_for("console.packages"))


@blueprint.post(PAGE + "/test")
def test_packages():
    if request.form.get("against") == "draft":
        require("admin")
    fields = [(k, v) for k, v in request.form.items(multi=True) if k != "csrf_token"]
    target = f"{url_for('console.packages')}?{urlencode(sealed(fields))}#results"
    if len(target) > MAX_TEST_URL:
        return _tested(governance().policy(_workspace()), request.form, trusted=True)
    return redirect(target, 303)


def _tested(saved: dict, values, trusted: bool):
    """A Test's answer. Only a trusted draft (this session's own post) fills the form; otherwise
    the form is the saved policy and the specs are judged against it. Auditors cannot edit, so
    their form is always the saved policy, whatever the address says (a link an admin shared)."""
    drafted = can_edit() and trusted
    against = values.get("against", "saved") if drafted else "saved"
    form = policy_form(values) if drafted else policy_as_form(saved)
    tried = {"language": values.get("test-language", "python"), "input": values.get("test-input", "")}
    notice = _draft_notice(saved) if drafted else (UNTRUSTED if can_edit() else None)
    try:
        answer = _test(form, tried, against)
    except InvalidInputError as error:
        return _page(saved, form, tried, refusal=error, notice=notice, status=422)
    return _page(saved, form, tried, answer=answer, against=against, notice=notice)


def moved_notice(opened: int, version: int) -> str:
    """What a Test, a preview or a synthesis of a form opened before the last Save judged."""
    return (
        f"The saved policy has moved on since this form was opened (version {opened}; it is now version "
        f"{version}): a draft here is the form as it stands, without the changes saved since. Save shows "
        "them and keeps your edits; reload the page to start from the saved policy."
    )


UNTRUSTED = (
    "This address was not made by a Test in this session, so the form shows the saved policy "
    "and the specs were judged against it."
)


def _draft_notice(saved: dict) -> str:
    return (
        "The form holds your draft as it was when you pressed Test (whichever policy it tested), not "
        f"necessarily the saved policy (version {saved['version']}): Save replaces the saved policy with "
        "exactly what the form shows."
    )


def _test(form: dict, tried: dict, against: str) -> dict:
    language, specs, command = spec_input(tried["language"], tried["input"])
    draft = desired_state(form) if against == "draft" else None
    return governance().evaluation.test(
        _workspace(), language, specs, command, context={"source": "console", "actor": caller()["name"]}, draft=draft
    )


def _conflict(form: dict, error: ConflictError):
    """Keep the edits, show what changed meanwhile, and let the next Save apply over it."""
    saved = governance().policy(_workspace())
    since = changes_after(version_number(form["expected_version"]))
    opened = form["expected_version"].strip()
    # Every change since made with this very token (a second tab, Save pressed twice): said so,
    # rather than blamed on someone else. A token may be shared, so it is named, not "you".
    mine = [c.get("by_token") == caller()["id"] for c in since["changes"]]
    own = bool(mine) and all(mine) and not since["not_shown"]
    who, how = ("Someone else saved the policy", "")
    if own:
        who = f"The policy was saved with the token you signed in with ({caller()['name']})"
        how = "another tab, a second press of Save, or someone sharing the token; "
    plain = ConflictError(
        f"{who} after you opened this page ({how}you started from version {opened}; "
        f"it is now version {saved['version']}). Nothing was saved."
    )
    form = {**form, "expected_version": str(saved["version"])}
    return _page(saved, form, refusal=plain, since=since, status=409)


def changes_after(version: int | None) -> dict:
    """What a page shown at `version` missed: the newest changes since (`Audit.changes_since`),
    how many before them are not shown, and the change history from the first of those."""
    if version is None:
        return {"changes": [], "not_shown": 0}
    since = governance().audit.changes_since(_workspace(), version)
    return {**since, "history_url": url_for("console.history", cursor=encode_cursor(version))}


def _page(
    saved: dict,
    form: dict,
    tried: dict | None = None,
    *,
    answer: dict | None = None,
    against: str | None = None,
    refusal: GovernanceError | None = None,
    since: list | None = None,
    impact: dict | None = None,
    imported: dict | None = None,
    import_kept: dict | None = None,
    notice: str | None = None,
    status: int = 200,
):
    items = error_items(refusal) if refusal else []
    opened = version_number(form.get("expected_version", ""))
    # A conflict says it itself; a Test against the saved policy did not use the form.
    # (A version past the saved one was never read from it: refused, not said to have moved on.)
    if since is None and against != "saved" and opened is not None and opened < saved["version"]:
        notice = " ".join(filter(None, (moved_notice(opened, saved["version"]), notice)))
    return render_template(
        "console/packages.html",
        saved=saved,
        form=form,
        tried=tried or BLANK_TEST,
        answer=answer,
        against=against,
        impact=impact,
        imported=imported,
        import_kept=import_kept or {},
        notice=notice,
        import_formats=IMPORT_FORMATS,
        refusal=refusal,
        problems=items,
        since=since,
        invalid={i["input"] for i in items},
        can_edit=can_edit(),
        languages=LANGUAGES,
        modes=MODES,
        refusing_rule=REFUSING_RULE,
    ), status
