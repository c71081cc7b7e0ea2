"""Indexed reads over the request and exception tables (see `access_schema`)."""

from __future__ import annotations

from datetime import datetime

from application.store.reads import ReadModel

_TIMES = (
    "filed_at",
    "listed_at",
    "last_asked_at",
    "decided_at",
    "expires_at",
    "revoked_at",
    "granted_at",
    "first_at",
    "last_at",
)
# `lift_deny` is what the request's exception lifts (its `lifts_deny`), not the box its approver
# ticked: a tick over a name no entry denied lifts nothing. (In the subquery `id` is the
# exception's, `exception_id` the request's: the exceptions table has no column of that name.)
REQUEST_COLUMNS = (
    "id, workspace, language, name, status, filed_at, filed_by, justification, context, "
    "last_asked_at, decided_at, decided_by, note, exception_id, expires_at, "
    "(SELECT lifts_deny FROM {exceptions} WHERE id = exception_id) AS lift_deny, revoked_at"
)
EXCEPTION_COLUMNS = (
    "id, language, name, granted_version, granted_at, granted_by, note, expires_at, "
    "request_id, revoked_version, revoked_at, revoked_by, lifts_deny"
)
# "expired": approved, and its exception is over (its expiry passed, or it was revoked).
_STATUS_WHERE = {
    "open": "status = 'open'",
    "rejected": "status = 'rejected'",
    "approved": "status = 'approved' AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > %s)",
    "expired": "status = 'approved' AND (revoked_at IS NOT NULL OR expires_at <= %s)",
    "all": "1 = 1",
}


class AccessReads(ReadModel):
    def _rows(self, template: str, params: list | tuple = (), prepare: bool = False) -> list[dict]:
        rows = super()._rows(template, params, prepare)
        for row in rows:
            for column in _TIMES:
                if row.get(column) is not None:
                    row[column] = self.dialect.from_ts(row[column])
            for flag in ("lift_deny", "lifts_deny"):
                if row.get(flag) is not None:
                    row[flag] = bool(row[flag])
        return rows

    # -- requests -------------------------------------------------------------------------------
    def open_request(self, workspace: str, language: str, name: str) -> dict | None:
        return self._first(
            f"SELECT {REQUEST_COLUMNS} FROM {{requests}} WHERE workspace = %s AND "
            "language = %s AND name = %s AND status = 'open'",
            (workspace, language, name),
        )

    def request(self, workspace: str, request_id: str) -> dict | None:
        return self._first(
            f"SELECT {REQUEST_COLUMNS} FROM {{requests}} WHERE workspace = %s AND id = %s", (workspace, request_id)
        )

    def requests(
        self,
        workspace: str,
        status: str,
        now: datetime,
        token_id: str | None,
        limit: int,
        after: tuple[int, datetime, str] | None = None,
    ) -> list[dict]:
        """Open ones first, then newest first; a token id limits them to what it asked for, newest
        by its own first asking (what it is shown as the filing: `request_view`). Keyset-paged on
        (`opened`, `listed_at`, id), the order's own terms, each row carrying them: `after` is the
        last row of the page before."""
        where, params = [_STATUS_WHERE[status]], [self._ts(now)] if "%s" in _STATUS_WHERE[status] else []
        filed, by = "filed_at", []
        if token_id is not None:
            where.append("id IN (SELECT request_id FROM {request_askers} WHERE workspace = %s AND token_id = %s)")
            params += [workspace, token_id]
            filed, by = "(SELECT first_at FROM {request_askers} WHERE request_id = id AND token_id = %s)", [token_id]
        opened = "CASE WHEN status = 'open' THEN 0 ELSE 1 END"
        if after is not None:
            where.append(f"({opened} > %s OR ({opened} = %s AND ({filed} < %s OR ({filed} = %s AND id > %s))))")
            at = self._ts(after[1])
            params += [after[0], after[0], *by, at, *by, at, after[2]]
        return self._rows(
            f"SELECT {REQUEST_COLUMNS}, {opened} AS opened, {filed} AS listed_at FROM {{requests}} "
            f"WHERE workspace = %s AND {' AND '.join(where)} ORDER BY opened, listed_at DESC, id LIMIT %s",
            [*by, workspace, *params, limit],
        )

    def askers(self, request_ids: list[str]) -> list[dict]:
        if not request_ids:
            return []
        marks = ", ".join(["%s"] * len(request_ids))
        return self._rows(
            f"SELECT request_id, token_id, first_at, last_at, asks, by_actor, justification, "
            f"context FROM {{request_askers}} WHERE request_id IN ({marks}) "
            "ORDER BY first_at, token_id",
            request_ids,
        )

    # -- exceptions -----------------------------------------------------------------------------
    def exception(self, workspace: str, exception_id: str) -> dict | None:
        return self._first(
            f"SELECT {EXCEPTION_COLUMNS} FROM {{exceptions}} WHERE workspace = %s AND id = %s",
            (workspace, exception_id),
        )

    def exceptions_for_name(self, workspace: str, language: str, name: str) -> list[dict]:
        """Every exception ever granted for this name (a handful), oldest first."""
        return self._rows(
            f"SELECT {EXCEPTION_COLUMNS} FROM {{exceptions}} WHERE workspace = %s AND "
            "language = %s AND name = %s ORDER BY granted_version",
            (workspace, language, name),
        )
