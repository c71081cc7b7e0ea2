"""The admin console: a small server-rendered UI over the Governance application, at /console.

`install(app)` is the one call the app factory makes. It configures what the console alone
needs (its signing key, cookie rules, CSRF, security headers) and maps refusals once:
a `GovernanceError` becomes a flash message and a redirect back, never a 500.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from urllib.parse import urlsplit

from flask import Flask, flash, make_response, redirect, render_template, request, url_for
from flask.sessions import SecureCookieSessionInterface
from flask_wtf.csrf import CSRFError, CSRFProtect
from markupsafe import Markup
from werkzeug.exceptions import HTTPException, MethodNotAllowed, NotFound, RequestEntityTooLarge

from domain.errors import GovernanceError
from domain.limits import MAX_NOTE
from domain.text import noun_for
from interface.console import (  # noqa: F401 - importing a page module registers its routes
    access,
    audit,
    imports,
    links,
    overview,
    package_page,
    packages,
    time_travel,
)
from interface.console.forms import LIFT_BOXES, RULE_WORDS, TITLES, field_label, heading, refusal_text
from interface.console.session import blueprint
from interface.problems import HTTPProblem, http_problem, status_of
from interface.services import services
from interface.settings import MAX_BODY_BYTES

SESSION_LIFETIME = timedelta(hours=8)
SECURITY_HEADERS = {
    # No scripts at all: the console works without JavaScript, so none may run in it either.
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",  # policy pages must not linger in caches after sign-out
}


class ConsoleSessions(SecureCookieSessionInterface):
    """The console's cookie sessions, marked Secure whenever the console is served over HTTPS.

    Only the console has sessions: the API takes bearer tokens, so its requests get Flask's
    null session without reading a cookie or building a signer (per-request work saved on the
    hot path)."""

    def open_session(self, app: Flask, request):
        if not request.path.startswith(app.config["SESSION_COOKIE_PATH"]):
            return None  # Flask then uses its null session, and saves nothing
        return super().open_session(app, request)

    def get_cookie_secure(self, app: Flask) -> bool:
        return bool(app.config["SESSION_COOKIE_SECURE"] or request.is_secure)


def install(app: Flask) -> None:
    app.secret_key = services(app).settings.console_secret_key()
    app.config.update(
        SESSION_COOKIE_NAME="runcode_console",
        SESSION_COOKIE_PATH="/console",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        PERMANENT_SESSION_LIFETIME=SESSION_LIFETIME,
        # CSRF is checked by the console's own before_request only: the JSON API takes bearer
        # tokens, never cookies, so it has no CSRF to defend against.
        WTF_CSRF_CHECK_DEFAULT=False,
        WTF_CSRF_TIME_LIMIT=None,
    )
    app.session_interface = ConsoleSessions()
    CSRFProtect(app)
    app.jinja_env.filters.update(
        when=when, full_stop=full_stop, field_label=field_label, heading=heading, noun_for=noun_for
    )
    # The note's limit is the server's own, so the form never allows less or more than a save takes.
    app.jinja_env.globals.update(titles=TITLES, rule_words=RULE_WORDS, max_note=MAX_NOTE, lift_boxes=LIFT_BOXES)
    app.register_blueprint(blueprint)
    # A wrong method is refused while routing, before any blueprint is known, so the blueprint's
    # handlers never see it: the app's handler gives the console's addresses a console page.
    app.register_error_handler(MethodNotAllowed, _wrong_method)
    # A person opening the service's address lands in the console (its sign-in when signed out).
    app.add_url_rule("/", "root", lambda: redirect(url_for("console.home")))


def when(text: str | None) -> str:
    """`2026-03-03T14:05:00.123456Z` -> `2026-03-03 14:05:00 UTC` for people."""
    if not text:
        return "—"
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return f"{moment.year:04}-{moment:%m-%d %H:%M:%S} UTC"  # strftime's %Y drops the zeros of year 1


def full_stop(sentence: Markup) -> Markup:
    """A sentence ended once: a change's words may end in their own (a rule's "Enforce: hide the
    version.")."""
    return sentence if str(sentence).rstrip().endswith(".") else sentence + "."


@blueprint.after_request
def _security_headers(response):
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    return response


@blueprint.errorhandler(CSRFError)
def _csrf_refused(error: CSRFError):
    return _error_page(
        400,
        "The form could not be accepted",
        "It was not sent from this console, or it is too old. Nothing was changed: reload the page and try again.",
    )


@blueprint.get("/<path:unknown>")
def not_found(unknown: str):
    """Any other console address: an HTML page that says so (the JSON API keeps problem+json)."""
    raise NotFound("There is no such page in the console. Check the address, or start again from the overview.")


def _wrong_method(error: MethodNotAllowed):
    """POST to a page, PUT to a form: an HTML page with the way back on the console's addresses
    (keeping `Allow`), problem+json on the API's."""
    if request.path != blueprint.url_prefix and not request.path.startswith(f"{blueprint.url_prefix}/"):
        return http_problem(error)
    page, status = _error_page(
        405,
        "This page cannot be used that way",
        f"A {request.method} request is not how this address is used, so nothing was changed. Use the "
        "console's own links and buttons.",
    )
    response = make_response(page, status)
    response.headers["Allow"] = ", ".join(error.valid_methods or ())
    return _security_headers(response)  # the blueprint's own after_request does not run either


@blueprint.errorhandler(RequestEntityTooLarge)
def _too_large(error: RequestEntityTooLarge):
    """A form past the body limit is refused before it is read, so its draft cannot be shown again."""
    return _error_page(
        413,
        "The form was too large to send",
        f"What the form sent is more than {MAX_BODY_BYTES // 2**20} MiB ({MAX_BODY_BYTES:,} bytes), the most the "
        "service takes in one form, so nothing was changed, and what you typed could not be kept here: your "
        "browser's Back button usually brings it back. Send it in smaller parts (a list or a pasted file at a "
        "time).",
    )


@blueprint.errorhandler(HTTPException)
def _http_refused(error: HTTPException):
    return _error_page(error.code or 500, error.name, error.description or error.name)


@blueprint.errorhandler(GovernanceError)
def _refused(error: GovernanceError):
    if isinstance(error, HTTPProblem):
        return _error_page(error.status, error.title, error.detail)
    message = refusal_text(error)
    if request.method != "POST":  # pages show their own refusals; this is the safety net
        return _error_page(status_of(error), error.title, message)
    flash(message, "error")
    return redirect(_back())


def _back() -> str:
    """The page the form was on (this console only, never elsewhere), else the policy page."""
    referrer = urlsplit(request.referrer or "")
    if referrer.netloc == request.host and referrer.path.startswith("/console/"):
        return referrer.path + (f"?{referrer.query}" if referrer.query else "")
    return url_for("console.overview")


def _error_page(status: int, title: str, detail: str):
    return render_template("console/error.html", status=status, title=title, detail=detail), status
