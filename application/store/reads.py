"""Indexed reads over the read-model tables. Every lookup is a B-tree seek (O(log n)), never a
scan of history; the point-in-time logic built on them lives in `application.pointintime`."""

from __future__ import annotations

from datetime import datetime

from domain.specs import deny_key

CHANGE_COLUMNS = "version, at, by_actor, note, type, language, list, name, mode"
# The token that made a change, by its primary key (a page holds at most MAX_PAGE rows).
_BY_TOKEN = (
    "(SELECT token_id FROM {change_tokens} a WHERE a.workspace = {changes}.workspace "
    "AND a.version = {changes}.version) AS by_token"
)
DECISION_FILTERS = ("language", "name", "allowed", "reason", "source", "sandbox", "kind")


class ReadModel:
    """Thin query layer; `recorder` is one of our recorders (it knows its dialect and connection)."""

    def __init__(self, recorder):
        self.recorder = recorder
        self.dialect = recorder.dialect

    def _rows(self, template: str, params: list | tuple = (), prepare: bool = False) -> list[dict]:
        rows = self.recorder.fetch(self.dialect.sql(template), params, prepare)
        for row in rows:
            for column in ("at", "created_at", "issued_at", "revoked_at", "started_at", "expires_at"):
                if row.get(column) is not None:
                    row[column] = self.dialect.from_ts(row[column])
        return rows

    def _first(self, template: str, params, prepare: bool = False) -> dict | None:
        rows = self._rows(template, params, prepare)
        return rows[0] if rows else None

    def _ts(self, moment: datetime):
        return self.dialect.ts(moment)

    # -- workspaces and versions ---------------------------------------------------------
    def workspace(self, workspace: str) -> dict | None:
        return self._first("SELECT * FROM {workspaces} WHERE workspace = %s", (workspace,))

    def has_workspaces(self) -> bool:
        return bool(self._rows("SELECT 1 AS one FROM {workspaces} LIMIT 1"))

    def workspaces(self) -> list[str]:
        return [r["workspace"] for r in self._rows("SELECT workspace FROM {workspaces} ORDER BY workspace")]

    def head_version(self, workspace: str) -> int:
        row = self._first(
            "SELECT version FROM {changes} WHERE workspace = %s ORDER BY version DESC LIMIT 1", (workspace,)
        )
        return row["version"] if row else 0

    def version_at(self, workspace: str, at: datetime) -> int:
        row = self._first(
            "SELECT version FROM {changes} WHERE workspace = %s AND at <= %s ORDER BY at DESC, version DESC LIMIT 1",
            (workspace, self._ts(at)),
        )
        return row["version"] if row else 0

    def change(self, workspace: str, version: int) -> dict | None:
        return self._first(
            f"SELECT {CHANGE_COLUMNS} FROM {{changes}} WHERE workspace = %s AND version = %s", (workspace, version)
        )

    # -- what decided one name ------------------------------------------------------------
    def last_mode_switch(self, workspace: str, language: str, version: int) -> dict | None:
        return self._first(
            f"SELECT {CHANGE_COLUMNS} FROM {{changes}} WHERE workspace = %s AND language = %s "
            "AND type = 'mode-switched' AND version <= %s ORDER BY version DESC LIMIT 1",
            (workspace, language, version),
        )

    def last_entry_change(self, workspace: str, language: str, list_name: str, name: str, version: int) -> dict | None:
        return self._first(
            f"SELECT {CHANGE_COLUMNS} FROM {{changes}} WHERE workspace = %s AND language = %s "
            "AND name_key = %s AND list = %s AND name = %s AND version <= %s "
            "ORDER BY version DESC LIMIT 1",
            (workspace, language, deny_key(language, name), list_name, name, version),
        )

    def spellings(self, workspace: str, language: str, list_name: str, name: str) -> list[str]:
        """Every entry ever listed under the same deny key (Node deny lists ignore case)."""
        rows = self._rows(
            "SELECT DISTINCT name FROM {changes} WHERE workspace = %s AND "
            "language = %s AND name_key = %s AND list = %s",
            (workspace, language, deny_key(language, name), list_name),
        )
        return sorted(r["name"] for r in rows)

    def changes_for_name(self, workspace: str, language: str, name: str, after: int, until: datetime) -> list[dict]:
        """Mode switches and entry changes of this name's key, after a version, before an instant."""
        params = (workspace, language, after, self._ts(until))
        entries = self._rows(
            f"SELECT {CHANGE_COLUMNS} FROM {{changes}} WHERE workspace = %s AND language = %s "
            "AND name_key = %s AND version > %s AND at < %s",
            (workspace, language, deny_key(language, name), after, self._ts(until)),
        )
        modes = self._rows(
            f"SELECT {CHANGE_COLUMNS} FROM {{changes}} WHERE workspace = %s AND language = %s "
            "AND type = 'mode-switched' AND version > %s AND at < %s",
            params,
        )
        return sorted(entries + modes, key=lambda r: r["version"])

    def history(
        self, workspace: str, start: datetime | None, end: datetime | None, after_version: int, limit: int
    ) -> list[dict]:
        """Oldest first, paged on version. The instants become versions first (one seek each on
        the time index), so a page is one range of the primary key whatever the history's size:
        a Save is stamped after the version it follows was committed, so versions and instants
        grow together. The instant bounds stay in the query as a guard."""
        low, high = after_version, None
        if start is not None:
            first = self._first_version_from(workspace, start)
            if first is None:
                return []
            low = max(low, first - 1)
        if end is not None:
            high = self._first_version_from(workspace, end)
        where, params = ["workspace = %s", "version > %s"], [workspace, low]
        for clause, value in (("version < %s", high), ("at >= %s", start), ("at < %s", end)):
            if value is not None:
                where.append(clause)
                params.append(value if isinstance(value, int) else self._ts(value))
        return self._rows(
            f"SELECT {CHANGE_COLUMNS}, {_BY_TOKEN} FROM {{changes}} WHERE {' AND '.join(where)} "
            "ORDER BY version LIMIT %s",
            params + [limit],
        )

    def _first_version_from(self, workspace: str, moment: datetime) -> int | None:
        row = self._first(
            "SELECT version FROM {changes} WHERE workspace = %s AND at >= %s ORDER BY at, version LIMIT 1",
            (workspace, self._ts(moment)),
        )
        return row["version"] if row else None

    # -- decisions ---------------------------------------------------------------------------
    def decisions(
        self,
        workspace: str,
        filters: dict,
        start: datetime | None,
        end: datetime | None,
        before: tuple[datetime, str] | None,
        limit: int,
    ) -> list[dict]:
        """Newest first; keyset pagination on (at, id) so deep pages cost the same as the first."""
        where, params = ["workspace = %s"], [workspace]
        for column in DECISION_FILTERS:
            value = filters.get(column)
            if isinstance(value, tuple):  # any of several spellings
                where.append(f"{column} IN ({', '.join(['%s'] * len(value))})")
                params.extend(value)
            elif value is not None:
                where.append(f"{column} = %s")
                params.append(value)
        for clause, moment in (("at >= %s", start), ("at < %s", end)):
            if moment is not None:
                where.append(clause)
                params.append(self._ts(moment))
        if before is not None:  # a row-value bound: both stores turn it into one index range
            where.append("(at, id) < (%s, %s)")
            params += [self._ts(before[0]), before[1]]
        return self._rows(
            f"SELECT id, at, record FROM {{decisions}} WHERE {' AND '.join(where)} ORDER BY at DESC, id DESC LIMIT %s",
            params + [limit],
        )

    def decision(self, workspace: str, decision_id: str) -> dict | None:
        return self._first(
            "SELECT id, at, record FROM {decisions} WHERE workspace = %s AND id = %s", (workspace, decision_id)
        )

    def decision_counts(
        self, workspace: str, language: str, name: str, start: datetime, end: datetime
    ) -> dict[str, int]:
        rows = self._rows(
            "SELECT allowed, COUNT(*) AS n FROM {decisions} WHERE workspace = %s "
            "AND language = %s AND name = %s AND at >= %s AND at < %s "
            "GROUP BY allowed",
            (workspace, language, name, self._ts(start), self._ts(end)),
        )
        counts = {"allowed": 0, "denied": 0}
        for row in rows:
            counts["allowed" if row["allowed"] else "denied"] += row["n"]
        return counts

    # -- tokens -------------------------------------------------------------------------------
    def token(self, token_id: str) -> dict | None:
        return self._first("SELECT * FROM {tokens} WHERE id = %s", (token_id,))

    def caller(self, token_id: str) -> dict | None:
        """The token's row with its workspace's head version (`head`): what every authenticated
        request needs, in one round trip of two index seeks (the token's primary key, then the
        last entry of the changes' primary key). Prepared on PostgreSQL (each pool connection
        parses and plans it once): it runs before every authenticated request."""
        return self._first(
            "SELECT t.*, COALESCE((SELECT c.version FROM {changes} c WHERE c.workspace = t.workspace "
            "ORDER BY c.version DESC LIMIT 1), 0) AS head FROM {tokens} t WHERE t.id = %s",
            (token_id,),
            prepare=True,
        )

    def tokens(self, workspace: str) -> list[dict]:
        return self._rows("SELECT * FROM {tokens} WHERE workspace = %s ORDER BY issued_at, id", (workspace,))

    # -- package-index runs ---------------------------------------------------------------------
    def run(self, run_id: str) -> dict | None:
        return self._first("SELECT * FROM {runs} WHERE id = %s", (run_id,))

    def run_decisions(self, run_id: str, limit: int = 10_000) -> list[dict]:
        """Denied first (false sorts before true in both stores), then in the order they were made."""
        return self._rows(
            "SELECT d.id, d.at, d.record FROM {run_decisions} r JOIN {decisions} d ON d.id = r.decision "
            "WHERE r.run = %s ORDER BY r.allowed, r.at, r.decision LIMIT %s",
            (run_id, limit),
        )
