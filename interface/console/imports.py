"""The Packages page's import: a pasted requirements file or lockfile added to the form's list
as an unsaved draft, shown with its impact (the Preview impact answer) so nothing is saved
before the admin reviews it and presses Save."""

from __future__ import annotations

from flask import request

from application.imports import imported_names
from domain.errors import InvalidInputError
from interface.console import packages as policy_page
from interface.console.access import IMPACT_DAYS, impact_summary
from interface.console.forms import desired_state, policy_form
from interface.console.session import blueprint, caller, governance, require


@blueprint.post(policy_page.PAGE + "/import")
def import_file():
    require("admin")
    workspace = caller()["workspace"]
    saved = governance().policy(workspace)
    form = policy_form(request.form)
    language, fmt = request.form.get("import-language", ""), request.form.get("import-format", "")
    content = request.form.get("import-content", "")
    try:
        names = imported_names(language, fmt, content, "import-")
        typed = form[language]["allow"]
        have = set(typed.replace(",", "\n").split())
        added = [n for n in names if n not in have]
        form[language]["allow"] = "\n".join(filter(None, [typed.rstrip(), *added]))
        impact = governance().impacts.impact(workspace, desired_state(form), IMPACT_DAYS)
    except InvalidInputError as error:  # the file as pasted and chosen, to correct rather than paste again
        kept = {"language": language, "format": fmt, "content": content}
        return policy_page._page(saved, form, refusal=error, import_kept=kept, status=422)
    imported = {"format": fmt, "language": language, "listed": len(names), "added": added}
    return policy_page._page(saved, form, impact=impact_summary(impact), imported=imported)
