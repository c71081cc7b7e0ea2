"""Who may read the package index, and the answers that refuse them.

Package clients send the token as HTTP Basic (any user name, the token as password: pip's and
uv's `https://user:TOKEN@host/...` index URLs) or as a Bearer token (npm's `_authToken`).

Never an interactive prompt: pip asks for a user name and password on a 401 when it runs in a
terminal and has no credentials, however the 401 is worded. So the PyPI routes answer a missing or
bad token with 403 (pip reports it and stops), while the npm routes answer 401 with a Bearer
challenge (npm and pnpm print it and stop; npm prompts only for one-time passwords, which this
never asks for). A token of another workspace is 404, as on the API; an auditor's token, which
never adds to the record, is 403.
"""

from __future__ import annotations

import base64
import binascii
from contextlib import contextmanager
from functools import wraps

from flask import request

from application.index import PackageIndex, Principal, may_read
from application.races import once_more_if_stale
from domain.decision import RUN_FAILED
from domain.errors import FieldError
from domain.limits import MAX_TEXT
from domain.text import quoted
from interface.index.upstream import UpstreamProblem
from interface.problems import HTTPProblem
from interface.services import services


def judged_afresh(view):
    """An index route whose recording found the policy head moved since it judged (nothing was
    recorded) is run again from the start, its token and the head read afresh; a few times, then
    409, as `/evaluate` does."""

    @wraps(view)
    def run(*args, **kwargs):
        return once_more_if_stale(lambda _: view(*args, **kwargs), remembered=False)

    return run


def package_index() -> PackageIndex:
    return services().index


SLOT = "runcode_policy.index_slot"  # environ: the index request's slot (interface.index.bounds)


def credentials(authorization: str | None = None) -> str | None:
    """The token an `Authorization` header (default: this request's) carries, if any."""
    if authorization is None:
        authorization = request.headers.get("Authorization", "")
    scheme, _, value = authorization.partition(" ")
    value = value.strip()
    if scheme.lower() == "bearer" and value:
        return value
    if scheme.lower() == "basic" and value:
        try:
            _, _, password = base64.b64decode(value, validate=True).decode("utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        return password or None
    return None


def authenticated(authorization: str | None = None) -> Principal | None:
    """Whoever the `Authorization` header (default: this request's) names; None: nobody known."""
    secret = credentials(authorization)
    return package_index().authenticate(secret) if secret else None


def reader(workspace: str, unauthenticated_status: int) -> Principal:
    """The principal reading this workspace's index, or the refusal its client expects."""
    principal = authenticated()
    refused = refusal(principal, workspace, unauthenticated_status)
    if refused is not None:
        raise refused
    slot = request.environ.get(SLOT)
    busy = slot.rekey(principal.token) if slot is not None else None  # a run's slot is its starter's
    if busy is not None:
        raise HTTPProblem(429, "Too Many Requests", busy, headers={"Retry-After": "1"}, phrase=busy)
    return principal


def refusal(principal: Principal | None, workspace: str, unauthenticated_status: int) -> HTTPProblem | None:
    """Why `principal` may not read this workspace's index; None when it may."""
    if principal is None:
        detail = "a valid token is required: a run's token, or a sandbox, admin or owner token"
        headers = {"WWW-Authenticate": 'Bearer realm="runcode-policy"'} if unauthenticated_status == 401 else {}
        title = "Unauthorized" if unauthenticated_status == 401 else "Forbidden"
        return HTTPProblem(unauthenticated_status, title, detail, headers=headers)
    if principal.workspace != workspace:
        return HTTPProblem(404, "Not Found", f"no workspace {quoted(workspace)}")
    if not may_read(principal):
        return HTTPProblem(403, "Forbidden", "an auditor's token never adds to the record, so it cannot read the index")
    return None


def refuse_a_failed_run(verdict: dict) -> None:
    """A run that failed gets no page, packument or file, only the 403 that names its first denial
    (a denied project's page, quarantined or restricted, is for that first denial alone). The
    message is the status line's reason phrase too: pip prints only that (`403 Client Error: ...`)."""
    if verdict["reason"] == RUN_FAILED:
        raise HTTPProblem(403, "Forbidden", verdict["message"], phrase=f"Forbidden: {verdict['message']}")


def within_limits(**values: str) -> None:
    """400 naming each value longer than the limit `/evaluate` applies to a spec: nothing that
    long is judged, fetched or recorded."""
    errors = [
        FieldError(field, f"must be at most {MAX_TEXT} characters (it has {len(value)})")
        for field, value in values.items()
        if len(value) > MAX_TEXT
    ]
    if errors:
        detail = "; ".join(f"{e.field} {e.message}" for e in errors)
        raise HTTPProblem(400, "Bad Request", detail, errors, phrase=f"Bad Request: {detail}")


def record_upstream_failure(principal, language: str, name: str, request_kind: str, error: BaseException) -> None:
    """When `error` is the upstream's failure (unreachable, untrusted, too slow, a bad answer),
    record it for the reader with its detail: pip and uv print only the status line (whose
    reason phrase the server replaces by the standard one), so the gate reads it from the run."""
    if isinstance(error, UpstreamProblem):
        upstream_failure_recorder(principal, language, name, request_kind)(error)


def upstream_failure_recorder(principal, language: str, name: str, request_kind: str):
    """`record_upstream_failure`, bound now, for a failure met once the request's context is
    gone: a relayed file the upstream breaks off while its body is sent."""
    gate = package_index().gate
    return lambda error: gate.upstream_failed(principal, language, name, request_kind, error.detail)


@contextmanager
def upstream_failure_recorded(principal, language: str, name: str, request_kind: str):
    """`record_upstream_failure` for an upstream failure raised in the block."""
    try:
        yield
    except UpstreamProblem as error:
        record_upstream_failure(principal, language, name, request_kind, error)
        raise
