"""Bearer-token authentication and the role checks: each route declares its least role.

Order matters: no or unknown token is 401; a token of another workspace is 404 (it never learns
whether that workspace exists); a known token without the role is 403.
"""

from __future__ import annotations

from flask import request

from domain.text import quoted
from domain.token import READ_ONLY_ROLES, RECORDING_RIGHT, role_allows
from interface.problems import HTTPProblem


def bearer_caller(governance, header: str, remembered: bool = False) -> dict | None:
    """The caller an `Authorization` header's bearer token names; None for none or a bad one."""
    scheme, _, secret = header.partition(" ")
    return (
        governance.authenticate(secret.strip(), remembered) if scheme.lower() == "bearer" and secret.strip() else None
    )


def authenticate(governance, remembered: bool = False) -> dict:
    caller = bearer_caller(governance, request.headers.get("Authorization", ""), remembered)
    if caller is None:
        raise HTTPProblem(
            401,
            "Unauthorized",
            "a valid bearer token is required",
            headers={"WWW-Authenticate": 'Bearer realm="runcode-policy"'},
        )
    return caller


def authorize(caller: dict, workspace: str, role: str) -> None:
    if caller["workspace"] != workspace:
        raise HTTPProblem(404, "Not Found", f"no workspace {quoted(workspace)}")
    if not role_allows(caller["role"], role):
        raise HTTPProblem(403, "Forbidden", refusal(role, caller["role"]))


def refusal(needed: str, role: str) -> str:
    if needed == RECORDING_RIGHT and role in READ_ONLY_ROLES:
        return f"an {role} token is read-only: it never adds to the record"
    return f"this needs the {needed} role or above; the token is {role}"
