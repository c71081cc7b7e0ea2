"""The console's blueprint and who is signed in to it: sign-in, sign-out and the per-request check.

Sessions are server-side and sealed (`application.sessions`): the signed cookie holds only a
random session id, never the token, and every request reads the session and its token from their
sealed events, so signing out ends this session and revoking the token ends all of its sessions
at once, for every copy of the cookie.
"""

from __future__ import annotations

from flask import (
    Blueprint,
    current_app,
    flash,
    g,
    redirect,
    render_template,
    request,
    session,
    url_for,
)

from domain.token import role_allows
from interface.problems import HTTPProblem
from interface.services import services

blueprint = Blueprint(
    "console",
    __name__,
    url_prefix="/console",
    template_folder="templates",
    static_folder="static",
    static_url_path="/static",
)
PUBLIC = {"console.sign_in", "console.static"}
CONSOLE_ROLES = ("owner", "admin", "auditor")


def governance():
    return services().governance


def caller() -> dict:
    """The signed-in token's workspace, role and name (checked for this request)."""
    return g.console_caller


def require(role: str) -> None:
    if not role_allows(caller()["role"], role):
        signed = _a(caller()["role"])
        detail = f"this needs the {role} role or above; you are signed in with {signed} token"
        raise HTTPProblem(403, "Forbidden", detail)


def _a(word: str) -> str:
    """`an auditor`, `an admin`, `a sandbox`."""
    return f"{'an' if word[:1] in 'aeiou' else 'a'} {word}"


@blueprint.before_request
def _check_session():
    current_app.extensions["csrf"].protect()  # every console POST, sign-in included
    if request.endpoint in PUBLIC:
        return None
    session_id = session.get("sid")
    found = governance().sessions.caller(session_id) if isinstance(session_id, str) else None
    if found is None or found["role"] not in CONSOLE_ROLES:
        session.clear()
        if session_id:
            flash("Your session has ended (signed out, expired, or its token was revoked). Sign in again.", "error")
        return redirect(url_for("console.sign_in"))
    g.console_caller = found
    return None


@blueprint.context_processor
def _signed_in():
    return {"caller": g.get("console_caller")}


@blueprint.get("/")
def home():
    return redirect(url_for("console.overview"))


@blueprint.route("/sign-in", methods=["GET", "POST"])
def sign_in():
    if request.method == "GET":
        return render_template("console/sign_in.html")
    secret = request.form.get("token", "").strip()
    found = governance().authenticate(secret) if secret else None
    if found is None:
        return _refuse_sign_in(401, "That token is unknown or has been revoked.")
    if found["role"] not in CONSOLE_ROLES:
        refused = _a(found["role"]).capitalize()
        return _refuse_sign_in(
            403, f"{refused} token cannot sign in to the console; use an owner, admin or auditor token."
        )
    earlier = session.get("sid")
    if isinstance(earlier, str):  # signing in again ends the earlier session, as Sign out would
        governance().sessions.end(earlier)
    session.clear()  # a fresh session for the new identity (no fixation)
    session.permanent = True
    session["sid"] = governance().sessions.start(found, current_app.permanent_session_lifetime)
    flash(f"Signed in to workspace {found['workspace']} as {found['name']} ({found['role']}).", "ok")
    return redirect(url_for("console.overview"))


def caller_session() -> str:
    return session["sid"]  # present: _check_session let this request through


def _refuse_sign_in(status: int, message: str):
    return render_template("console/sign_in.html", error=message), status


@blueprint.post("/sign-out")
def sign_out():
    governance().sessions.end(caller_session())
    session.clear()
    flash("Signed out.", "ok")
    return redirect(url_for("console.sign_in"))
