"""Access requests and time-boxed exceptions: filing and joining, deciding, granting, revoking.

An approval and the exception it grants (with `lift_deny`, one that lifts the deny entries naming
the package for its window, the entries staying on the list) are one atomic save of the request
and the policy. Exceptions are Policy events, so the policy cache, `evaluate`, the index, `/test`
and every point-in-time answer see them without further wiring, and judge them at an instant:
expiry (and with it a lift's end) is data in the grant, never a later event.
"""

from __future__ import annotations

import functools
from datetime import datetime
from uuid import uuid4

from eventsourcing.application import AggregateNotFoundError

from application.access_views import exception_views, request_view
from application.clock import Clock, system_clock
from application.formats import (
    check_limit,
    cursor_id,
    cursor_instant,
    cursor_refusal,
    decode_cursor,
    iso,
    paged,
    parse_uuid,
)
from application.impact import Impact
from application.policies import Policies
from application.races import ATTEMPTS, LOST_RACE, pause, saved, stale, too_fast
from application.store.access_reads import AccessReads
from domain.access import (
    STATUS_FILTERS,
    AccessRequest,
    already_decided,
    check_requestable,
    expiry,
    not_allowed,
    plan_closure_grants,
    plan_grant,
    requested_package,
)
from domain.egress.workspace import EGRESS
from domain.errors import ConflictError, FieldError, InvalidInputError, NotFoundError
from domain.policy import Change, bind_rules, exception_end
from domain.text import check_context, check_text, quoted

DENIALS_WINDOW_DAYS = 30


class Access:
    """Requests and exceptions. `save` is the application's atomic save of several aggregates."""

    def __init__(
        self, repository, save, policies: Policies, reads: AccessReads, impacts: Impact, clock: Clock = system_clock
    ):
        self.repository = repository
        self.clock = clock
        self.save = save
        self.policies = policies
        self.access_reads = reads
        self.impacts = impacts
        self.require_workspace = policies.require_workspace
        self.load_policy = policies.load_policy

    # -- requests -------------------------------------------------------------------------------
    def file_request(
        self,
        workspace: str,
        language: str,
        name: str,
        justification: str,
        context: dict | None,
        by: str,
        token_id: str,
        only_own: bool = False,
    ) -> dict:
        """File a request, or join the open one for the same package (`joined` says which).
        `only_own`: the answer shows only this token's own asking (a sandbox's view)."""
        self.require_workspace(workspace)
        language, name = requested_package(language, name)
        check_requestable(self.load_policy(workspace).state, language, name)
        asked = {
            "by": by,
            "token_id": token_id,
            "context": check_context(context),
            "justification": check_text(justification or "", "justification"),
        }
        for _ in range(ATTEMPTS):
            row = self.access_reads.open_request(workspace, language, name)
            try:
                if row is None:
                    request = AccessRequest(workspace=workspace, language=language, name=name, asked=asked)
                else:
                    request = self._get_request(workspace, row["id"])
                    request.join(asked)  # ConflictError if it was decided since the row was read
                self.save(request)
            except (LOST_RACE, ConflictError):
                pause()  # another filer or decider won: read again
                continue
            viewer = token_id if only_own else None
            return {**self.request(workspace, str(request.id), viewer), "joined": row is not None}
        raise too_fast("the open request", "name")

    def request(self, workspace: str, request_id: str, token_id: str | None = None) -> dict:
        """One request; with `token_id`, only if that token asked for it (else 404), and only
        its own asking shown."""
        row = self.access_reads.request(workspace, request_id) if parse_uuid(request_id) else None
        asked = self.access_reads.askers([request_id]) if row else []
        if row is None or (token_id is not None and token_id not in {a["token_id"] for a in asked}):
            raise NotFoundError(f"no request {quoted(request_id)} in this workspace")
        return request_view(row, asked, self.clock(), self._denials(row), viewer=token_id)

    def requests(
        self,
        workspace: str,
        status: str = "open",
        token_id: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
    ) -> dict:
        """A page of requests, open first then newest first; `next_cursor` reaches the older ones."""
        self.require_workspace(workspace)
        if status not in STATUS_FILTERS:
            raise InvalidInputError(
                f"unknown status {quoted(status)}",
                [FieldError("status", f"must be one of {', '.join(STATUS_FILTERS)}")],
            )
        after = _request_cursor(cursor) if cursor else None
        now = self.clock()
        rows = self.access_reads.requests(workspace, status, now, token_id, check_limit(limit) + 1, after)
        page, next_cursor = paged(rows, limit, lambda last: [last["opened"], iso(last["listed_at"]), last["id"]])
        askers = self.access_reads.askers([r["id"] for r in page])
        return {
            "requests": [
                request_view(r, [a for a in askers if a["request_id"] == r["id"]], now, self._denials(r), token_id)
                for r in page
            ],
            "next_cursor": next_cursor,
        }

    def approve_request(
        self,
        workspace: str,
        request_id: str,
        by: str,
        expires_at: datetime | None = None,
        duration: str | None = None,
        note: str = "",
        lift_deny: bool = False,
        dependencies: list[str] | None = None,
        by_token: str | None = None,
        expected_version: int | None = None,
        expected_names: list[str] | None = None,
    ) -> dict:
        """Grant the exception (until `expires_at`, for `duration`, or permanently) in one save.

        `dependencies`: the names of the request's dependency closure (`application.closure`);
        each one the policy does not allow yet gets an exception on the same terms, in the same
        save, under the same note. Exceptions rather than allow entries: they expire with the
        approval, name the request they came from, and can be revoked one by one.

        `expected_version` and `expected_names`: what the approver saw (a closure's policy
        version, the names it would grant). If the policy has moved on, or the approval would now
        grant other names (an upstream release needing one more, a name allowed or denied since),
        nothing is granted (409): a lift or a grant nobody was shown is never made. At the same
        version the deny entries are those the approver saw, so whose entries a lift lifts is
        settled by the two."""
        check_text(note or "", "note")
        for _ in range(ATTEMPTS):
            request = self._get_request(workspace, request_id)
            policy = self.load_policy(workspace)
            if expected_version is not None and expected_version != policy.policy_version:
                raise stale(expected_version, policy.policy_version)
            now = self.clock()
            others: list[str] = []
            if request.language != EGRESS:  # a host has no dependency closure, and no package rules
                rules = bind_rules(policy.rules(), now)[request.language]
                others = not_allowed(rules, [n for n in dependencies or () if n != request.name], workspace)
            if expected_names is not None:
                _check_expected(expected_names, [request.name, *others])
            self._check_open(workspace, request_id, request)
            exception_id, until = str(uuid4()), expiry(now, expires_at, duration)
            request.approve(by, note or "", exception_id, iso(until), bool(lift_deny))  # 409 if decided
            changes = plan_grant(
                policy.state, request.language, request.name, _grant(exception_id, until, request_id), lift_deny
            )
            if others:
                terms = functools.partial(_dependency_grant, until=until, request_id=request_id)
                changes += plan_closure_grants(rules, policy.state, others, terms, lift_deny, workspace)
            policy.record(changes, by, note or "", by_token=by_token)
            if saved(self.save, policy, request):
                granted = [c.name for c in changes if c.type == "exception-granted"]
                return {**self.request(workspace, request_id), "granted": granted}
        raise too_fast()

    def reject_request(self, workspace: str, request_id: str, by: str, note: str = "") -> dict:
        check_text(note or "", "note")
        for _ in range(ATTEMPTS):
            request = self._get_request(workspace, request_id)
            self._check_open(workspace, request_id, request)
            request.reject(by, note or "")
            if saved(self.save, request):
                return self.request(workspace, request_id)
        raise too_fast()

    def _check_open(self, workspace: str, request_id: str, request: AccessRequest) -> None:
        """409 for a decided request, naming the status the API shows for it (the aggregate
        knows it was approved, not whether the exception it granted has ended since)."""
        if request.status != "open":
            raise already_decided(self.request(workspace, request_id)["status"])

    def _get_request(self, workspace: str, request_id: str) -> AccessRequest:
        request_uuid = parse_uuid(request_id)
        try:
            request = self.repository.get(request_uuid) if request_uuid else None
        except AggregateNotFoundError:
            request = None
        if not isinstance(request, AccessRequest) or request.workspace != workspace:
            raise NotFoundError(f"no request {quoted(request_id)} in this workspace")
        return request

    def _denials(self, row: dict) -> int:
        return self.impacts.denied_recently(row["workspace"], row["language"], row["name"], DENIALS_WINDOW_DAYS)

    # -- exceptions -----------------------------------------------------------------------------
    def grant_exception(
        self,
        workspace: str,
        language: str,
        name: str,
        by: str,
        expires_at: datetime | None = None,
        duration: str | None = None,
        note: str = "",
        lift_deny: bool = False,
        by_token: str | None = None,
    ) -> dict:
        """An exception without a request (an admin's own decision). `by_token`: as for a change of
        the policy (`Governance.change_policy`), the id of the token that asked."""
        check_text(note or "", "note")
        language, name = requested_package(language, name)
        for _ in range(ATTEMPTS):
            policy = self.load_policy(workspace)
            exception_id, until = str(uuid4()), expiry(self.clock(), expires_at, duration)
            grant = plan_grant(policy.state, language, name, _grant(exception_id, until, None), lift_deny)
            policy.record(grant, by, note or "", by_token=by_token)
            if saved(self.save, policy):
                return next(e for e in exception_views(policy) if e["id"] == exception_id)
        raise too_fast()

    def revoke_exception(
        self, workspace: str, exception_id: str, by: str, note: str = "", by_token: str | None = None
    ) -> dict:
        check_text(note or "", "note")
        for _ in range(ATTEMPTS):
            policy = self.load_policy(workspace)
            grant = policy.exceptions.get(exception_id)
            if grant is None:
                row = self.access_reads.exception(workspace, exception_id) if parse_uuid(exception_id) else None
                if row is not None:
                    raise ConflictError(
                        f"exception {exception_id} was already revoked",
                        [FieldError("exception_id", "must be a standing exception")],
                    )
                raise NotFoundError(f"no exception {quoted(exception_id)} in this workspace")
            ended = exception_end(grant)
            if ended is not None and ended <= self.clock():  # nothing left to revoke: record nothing
                raise ConflictError(
                    f"exception {exception_id} already ended at {iso(ended)}",
                    [FieldError("exception_id", "must be a standing exception")],
                )
            change = Change(
                "exception-revoked", grant["language"], name=grant["name"], exception={"exception_id": exception_id}
            )
            policy.record([change], by, note or "", by_token=by_token)
            if saved(self.save, policy):
                return {"language": grant["language"], "name": grant["name"]}
        raise too_fast()

    def exceptions(self, workspace: str, at: datetime | None = None) -> dict:
        """The exceptions in force at `at` (default now), soonest expiry first."""
        policy = self.load_policy(workspace) if at is None else self.policies.at(workspace, at)
        return {"exceptions": exception_views(policy, at or self.clock())}


def _check_expected(expected: list[str], granting: list[str]) -> None:
    """The approval grants exactly the names its approver expected, or nothing."""
    missing, more = sorted(set(expected) - set(granting)), sorted(set(granting) - set(expected))
    if not missing and not more:
        return
    said = "; ".join(
        filter(None, (more and f"it would also grant {', '.join(more)}", missing and f"not {', '.join(missing)}"))
    )
    rule = f"must be the names this approval grants now: {', '.join(granting)}"
    raise ConflictError(
        f"the approval no longer grants the names expected ({said}); nothing was granted",
        [FieldError("expected_names", rule)],
    )


def _grant(exception_id: str, until: datetime | None, request_id: str | None) -> dict:
    return {"exception_id": exception_id, "expires_at": iso(until), "request_id": request_id}


def _dependency_grant(name: str, until: datetime | None, request_id: str) -> dict:
    return _grant(str(uuid4()), until, request_id)  # one exception per name of the closure


def _request_cursor(cursor: str) -> tuple[int, datetime, str]:
    """The (open?, listed at, id) a page of requests ended on, as `requests` issued it."""
    value = decode_cursor(cursor, list)
    opened, *rest = value if len(value) == 3 else (None,)
    if opened not in (0, 1) or not all(isinstance(v, str) for v in rest):  # True or 0.0: refused by decode_cursor
        raise cursor_refusal()
    return opened, cursor_instant(rest[0]), cursor_id(rest[1])
