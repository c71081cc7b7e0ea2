"""Runs: start one (a recorded event with its expiry), authenticate its token, list its decisions,
end it (a recorded event: its token reads the index no more)."""

from __future__ import annotations

import hmac
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from eventsourcing.persistence import IntegrityError

from application.chain.checked import CheckedReads
from application.evaluation import decision_view
from application.formats import iso, parse_uuid
from application.index.deliveries import with_deliveries
from application.index.gate import NOT_PROJECT_DENIALS, Principal
from application.store.reads import Denials, ReadModel
from domain.errors import FieldError, InvalidInputError, NotFoundError
from domain.limits import MAX_RUN_DECISIONS
from domain.run import RUN_SECRET_PREFIX, Run, new_run_secret, run_id
from domain.text import check_context, quoted
from domain.token import digest, role_allows

DEFAULT_RUN_SECONDS = 30 * 60
MAX_RUN_SECONDS = 24 * 60 * 60


class Runs:
    def __init__(self, save, get, readmodel: ReadModel, checked: CheckedReads):
        self._save, self._get = save, get  # `get`: an aggregate from the repository, by id
        self._readmodel = readmodel
        self._checked = checked  # a run and its starter, as the chain seals them

    def start(self, workspace: str, caller: dict, context: dict | None = None, seconds: int | None = None) -> dict:
        """A new run and its secret (shown once); `caller` is the authenticated API token."""
        context = check_context(context)
        seconds = DEFAULT_RUN_SECONDS if seconds is None else seconds
        if isinstance(seconds, bool) or not isinstance(seconds, int) or not 60 <= seconds <= MAX_RUN_SECONDS:
            raise InvalidInputError(
                "a run lasts 60 seconds to a day",
                [FieldError("ttl_seconds", f"must be a whole number from 60 to {MAX_RUN_SECONDS}")],
            )
        secret = new_run_secret()
        expires = datetime.now(UTC) + timedelta(seconds=seconds)
        run = Run(
            secret_digest=digest(secret),
            workspace=workspace,
            started_by=caller["id"],
            by=caller["name"],
            expires_at=iso(expires),
            context=context,
        )
        self._save(run)
        return {"id": str(run.id), "token": secret, "expires_at": iso(expires)}

    def authenticate(self, secret: str, denials: Callable[[str, str], Denials | None]) -> Principal | None:
        """The run whose secret this is, unless it is unknown, ended or expired (or its starter
        revoked). `denials(run, starter)`: what fails the run, looked for with its starter's token."""
        if not secret.startswith(RUN_SECRET_PREFIX):
            return None
        secret_digest = digest(secret)
        row = self._checked.run(str(run_id(secret_digest)))
        if row is None or row["ended"] or not hmac.compare_digest(row["secret_digest"], secret_digest):
            return None
        left = (row["expires_at"] - datetime.now(UTC)).total_seconds()
        if left <= 0:  # expired
            return None
        starter = self._checked.caller(row["started_by"], denials(row["id"], row["started_by"]))
        if starter is None:  # its starter revoked
            return None
        context = row["context"]
        return Principal(
            workspace=row["workspace"],
            token=row["started_by"],
            name=row["started_by_name"],
            run=row["id"],
            sandbox=context.get("sandbox"),
            actor=context.get("actor"),
            expires=time.monotonic() + left,
            head=starter["head"],  # read with the starter's token: no second read of the policy head
            denied=starter["denied"],
        )

    def end(self, workspace: str, run: str, caller: dict) -> None:
        """End the run: its token is refused from then on. Its starter may end it, and admin+
        tokens of its workspace; ending an ended run changes nothing (ending is final)."""
        run_uuid = parse_uuid(run)
        row = self._checked.run(str(run_uuid)) if run_uuid else None
        if row is None or row["workspace"] != workspace:
            raise NotFoundError(f"no run {quoted(run)} in this workspace")
        if row["started_by"] != caller["id"] and not role_allows(caller["role"], "admin"):
            raise NotFoundError(f"no run {quoted(run)} in this workspace")  # a sandbox sees only its own runs
        if row["ended"]:
            return
        found = self._get(run_uuid)
        found.end(caller["id"])
        try:
            self._save(found)
        except IntegrityError:  # ended at the same moment by someone else
            if not self._checked.run(str(run_uuid))["ended"]:
                raise

    def decisions(self, workspace: str, run: str, caller: dict, limit: int = MAX_RUN_DECISIONS) -> dict:
        """That run's decisions, at most `limit`: its project denials first, then its other
        refusals, then its allows, and whether it has more (`truncated`); a sandbox token sees
        only the runs it started."""
        run_uuid = parse_uuid(run)  # a run id is a UUID: any other text names no run (a NUL had been a 500)
        row = self._readmodel.run(str(run_uuid)) if run_uuid else None
        if (
            row is None
            or row["workspace"] != workspace
            or (caller["role"] == "sandbox" and row["started_by"] != caller["id"])
        ):
            raise NotFoundError(f"no run {quoted(run)} in this workspace")
        rows, truncated = self._readmodel.run_decisions(Denials(str(run_uuid), None, NOT_PROJECT_DENIALS), limit)
        decisions = with_deliveries(
            self._readmodel, [decision_view(r["id"], json.loads(r["record"]), r["at"], workspace) for r in rows]
        )
        allowed = all(d["allowed"] for d in decisions)  # refusals come first: any there is, is listed
        return {"run": run_view(row), "allowed": allowed, "decisions": decisions, "truncated": truncated}


def run_view(row: dict) -> dict:
    return {
        "id": row["id"],
        "started_at": iso(row["started_at"]),
        "expires_at": iso(row["expires_at"]),
        "started_by": row["started_by_name"],
        "context": json.loads(row["context"] or "{}"),
    }
