"""The console's blueprint and who is signed in to it: sign-in, sign-out and the per-request check.

The session cookie holds the pasted API token, encrypted (Flask's cookie is only signed, and a
readable bearer token would outlive sign-out), and every request re-checks it through
`Governance.authenticate`, so revoking the token ends its console sessions at once.
"""

from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken
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
_SEAL_CONTEXT = b"runcode-policy console session token\x00"


def governance():
    return current_app.extensions["governance"]


def caller() -> dict:
    """The signed-in token's workspace, role and name (checked for this request)."""
    return g.console_caller


def require(role: str) -> None:
    if not role_allows(caller()["role"], role):
        raise HTTPProblem(
            403, "Forbidden", f"this needs the {role} role or above; you are signed in with a {caller()['role']} token"
        )


def _fernet() -> Fernet:
    # A key of its own, derived from the app's secret key (never the signing key itself).
    digest = hashlib.sha256(_SEAL_CONTEXT + current_app.secret_key.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def _seal(secret: str) -> str:
    return _fernet().encrypt(secret.encode()).decode()


def _unseal(sealed: str) -> str | None:
    try:
        return _fernet().decrypt(sealed.encode()).decode()
    except (InvalidToken, ValueError):
        return None


@blueprint.before_request
def _check_session():
    current_app.extensions["csrf"].protect()  # every console POST, sign-in included
    if request.endpoint in PUBLIC:
        return None
    sealed = session.get("token")
    secret = _unseal(sealed) if isinstance(sealed, str) else None
    found = governance().authenticate(secret) if secret else None
    if found is None or found["role"] not in CONSOLE_ROLES:
        session.clear()
        if sealed:
            flash("Your session has ended: the token was revoked or is no longer valid. Sign in again.", "error")
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
        return _refuse_sign_in(
            403, f"A {found['role']} token cannot sign in to the console; use an owner, admin or auditor token."
        )
    session.clear()  # a fresh session for the new identity (no fixation)
    session.permanent = True
    session["token"] = _seal(secret)
    flash(f"Signed in to workspace {found['workspace']} as {found['name']} ({found['role']}).", "ok")
    return redirect(url_for("console.overview"))


def _refuse_sign_in(status: int, message: str):
    return render_template("console/sign_in.html", error=message), status


@blueprint.post("/sign-out")
def sign_out():
    session.clear()
    flash("Signed out.", "ok")
    return redirect(url_for("console.sign_in"))
