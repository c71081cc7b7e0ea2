"""Links every page shares: a number to the audit log filtered to what it counts, and a package
name to its own page. Registered as template globals, so every template links the same way."""

from __future__ import annotations

from flask import url_for

from interface.console.session import blueprint

EGRESS = "egress"  # the "language" of egress hosts in changes, requests and decisions


@blueprint.app_template_global()
def audit_url(**filters) -> str:
    """The audit log filtered to exactly the decisions a number counts (blank filters dropped)."""
    return url_for("console.audit", **{k: v for k, v in filters.items() if v not in (None, "")})


@blueprint.app_template_global()
def package_url(language: str, name: str, **period) -> str:
    """A package's page (its status, timeline and recent decisions). An egress host has no such
    page (changes and requests name hosts too), so it opens the host's egress decisions."""
    if language == EGRESS:
        return audit_url(kind=EGRESS, name=name)
    return url_for("console.package", language=language, name=name, **period)


@blueprint.app_template_filter()
def instant_text(text: str | None) -> str:
    """`2026-03-03T14:05:00.123456Z` -> `2026-03-03 14:05:00.123456`: what the instant input reads back."""
    return (text or "").replace("T", " ").removesuffix("Z")


@blueprint.app_template_filter()
def context_value(value: object) -> str:
    """A recorded context value (a sandbox, a source, an actor) told apart from every other: blanks
    alone read `(blank)`, blanks around it are quoted (`“ padded ”`, not padded), as values
    recorded before `domain.text.check_context` refused them may be; none (not in the context) is ''."""
    if not isinstance(value, str):
        return ""
    if not value.strip():
        return "(blank)"
    return f"“{value}”" if value != value.strip() else value
