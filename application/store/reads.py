"""Indexed reads over the read-model tables. Every lookup is a B-tree seek (O(log n)), never a
scan of history; the point-in-time logic built on them lives in `application.pointintime`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache

from application.store.schema import Dialect
from domain.decision import COLUMNS, INDEX_SOURCE, NOT_FOUND_UPSTREAM
from domain.limits import MAX_RUN_DECISIONS
from domain.patterns import patterns_for
from domain.specs import deny_key

CHANGE_COLUMNS = "version, at, by_actor, note, type, language, list, name, mode"
# The token that made a change, by its primary key (a page holds at most MAX_PAGE rows).
_BY_TOKEN = (
    "(SELECT token_id FROM {change_tokens} a WHERE a.workspace = {changes}.workspace "
    "AND a.version = {changes}.version) AS by_token"
)
DECISION_FILTERS = COLUMNS
# A name filter of several spellings, each for its own kind's rows: a language's spellings of it
# for that language's decisions, None's for egress decisions (which have no language).
NameSpellings = dict[str | None, tuple[str, ...]]
# A decision as answers read it: its record, and the columns filters select it by, which an
# answer holds against the record (application.audit).
_DECISION = f"SELECT id, at, record, {', '.join(COLUMNS)} FROM {{decisions}}"
# The reasons whose decisions have a partial index (`schema`), written into its queries as is.
PARTIAL_REASONS = (NOT_FOUND_UPSTREAM,)


# "The version at T": the last change made at or before T (one seek of rcp_changes_by_instant).
VERSION_AT = "SELECT version FROM {changes} WHERE workspace = %s AND at <= %s ORDER BY at DESC, version DESC LIMIT 1"

# One name's rules at the version at T, as one statement of index seeks (both stores): the
# version (no row: no such workspace) with whether the name ever had an exception, then the
# language's last mode switch, its last rule change (`domain.rules`: with one, the policy then is
# read for its rules), and the last change of each allow- and deny-list entry under the name's
# deny key or the key of a pattern that matches it (`domain.patterns`; Node deny lists ignore
# case, so every spelling under a key is read, and an allow entry of another spelling decides
# nothing: `pointintime.NameState.apply`). Each arm binds all the leading columns of its index
# and reads it backwards from the version, so its cost follows the answer and not the history.
# The keys are one parameter (`Dialect.each_key`), one seek each: the statement is the same for every
# name, and a Python name's one key per dash (at most 2,048 for a name of 4,096 characters) costs
# that many seeks, never as many arms to parse and plan.
_UNTIL = "version <= (SELECT version FROM v)"


def _arm(part: str, where: str) -> str:
    return (
        f" UNION ALL SELECT * FROM (SELECT '{part}', {CHANGE_COLUMNS}, FALSE AS grants FROM {{changes}} c "
        f"WHERE workspace = %s AND language = %s AND {where}) AS {part}_rows"
    )


# The last change of each entry (list and spelling) under a key, up to the version.
_LAST_LISTED = (
    f"c.workspace = %s AND c.language = %s AND c.name_key = k.key AND c.list IN ('allow', 'deny') AND c.{_UNTIL} "
    "AND c.version = (SELECT d.version FROM {changes} d WHERE d.workspace = c.workspace "
    "AND d.language = c.language AND d.name_key = c.name_key AND d.list = c.list AND d.name = c.name "
    f"AND d.{_UNTIL} ORDER BY d.version DESC LIMIT 1)"
)


@lru_cache(maxsize=64)
def name_at_sql(dialect: Dialect) -> str:
    return (
        f"WITH v AS (SELECT COALESCE(({VERSION_AT}), 0) AS version, EXISTS (SELECT 1 FROM {{exceptions}} "
        "WHERE workspace = %s AND language = %s AND name = %s) AS grants FROM {workspaces} WHERE workspace = %s) "
        "SELECT 'version' AS part, version, NULL AS at, NULL AS by_actor, NULL AS note, NULL AS type, "
        "NULL AS language, NULL AS list, NULL AS name, NULL AS mode, grants FROM v"
        + _arm("mode", f"type = 'mode-switched' AND {_UNTIL} ORDER BY version DESC LIMIT 1")
        + _arm("rules", f"type = 'rule-changed' AND {_UNTIL} ORDER BY version DESC LIMIT 1")
        + f" UNION ALL SELECT 'entries', {CHANGE_COLUMNS}, FALSE AS grants {dialect.each_key(_LAST_LISTED)}"
    )


def name_keys(language: str, name: str) -> tuple[str, ...]:
    """The deny keys of a name and of the patterns that match it: every key whose entries can
    decide it."""
    return tuple(dict.fromkeys(deny_key(language, e) for e in (name, *patterns_for(language, name))))


@dataclass(frozen=True)
class NameRows:
    version: int  # the version at T
    grants: bool  # whether an exception was ever granted for the name (then read them)
    changes: list[dict]  # the rows that decide it, oldest first
    ruled: bool = False  # whether the language had a rule beyond names by then (then read them)


# A record naming the version that declares it (its JSON as the decisions row keeps it: compact,
# as `jsontext.sorted_text` writes it, or with a space after the colon in rows written before):
# no other record has the key, and inside a JSON string a quote is escaped, so only the key matches.
DECLARED = '%"declared_by":%'


@dataclass(frozen=True)
class Denials:
    """One reader's (domain.run.reader_key) denied decisions made at or after `since`, but for the
    reasons in `passing` (refusals that are not project denials), those not about a registry
    project, and those on what a version declares (a refused URL dependency or bundled name hides
    that version; it denies no project, as the gate counts it): what fails a run.
    Read on its own (`first_project_denial`), whether there is one with the reader's token
    (application.store.chain.ChainStore.caller), or to list them first (`run_decisions`)."""

    reader: str
    since: datetime | None
    passing: tuple[str, ...]

    def sql(self) -> str:
        """FROM and WHERE, as a template of the read-model tables, `r` the run_decisions row."""
        skip = "".join(" AND d.reason <> %s" for _ in self.passing)
        return (
            "FROM {run_decisions} r JOIN {decisions} d ON d.id = r.decision "
            f"WHERE r.run = %s AND r.allowed = %s AND r.at >= %s AND d.kind = %s{skip} AND d.record NOT LIKE %s"
        )

    def params(self, dialect) -> tuple:
        since = dialect.ts(self.since or datetime.min.replace(tzinfo=UTC))
        return (self.reader, False, since, "registry", *self.passing, DECLARED)


class ReadModel:
    """Thin query layer; `recorder` is one of our recorders (it knows its dialect and connection)."""

    def __init__(self, recorder):
        self.recorder = recorder
        self.dialect = recorder.dialect

    def _rows(
        self, template: str, params: list | tuple = (), prepare: bool = False, generic: bool = False
    ) -> list[dict]:
        """`prepare` and `generic`: as the recorder's `fetch`."""
        rows = self.recorder.fetch(self.dialect.sql(template), params, prepare, generic)
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

    def has_tables(self) -> bool:
        """Whether the store's tables were made (by this code, or by whoever manages the schema):
        asked of the catalog, as a query of a missing table fails differently on each store."""
        if self.dialect.schema:
            template, name = "SELECT to_regclass(%s) IS NOT NULL AS found", self.dialect.table("workspaces")
        else:
            template, name = (
                "SELECT count(*) > 0 AS found FROM sqlite_master WHERE type = 'table' AND name = %s",
                (self.dialect.table("workspaces")),
            )
        return bool(self._rows(template, (name,))[0]["found"])

    def has_workspace(self, workspace: str) -> bool:
        """Whether the workspace exists (its row, whatever else the row holds)."""
        return bool(self._rows("SELECT 1 AS one FROM {workspaces} WHERE workspace = %s", (workspace,)))

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
        row = self._first(f"SELECT COALESCE(({VERSION_AT}), 0) AS version", (workspace, self._ts(at)))
        return row["version"]

    def change(self, workspace: str, version: int) -> dict | None:
        return self._first(
            f"SELECT {CHANGE_COLUMNS} FROM {{changes}} WHERE workspace = %s AND version = %s", (workspace, version)
        )

    # -- what decided one name ------------------------------------------------------------
    def name_at(self, workspace: str, language: str, name: str, at: datetime) -> NameRows | None:
        """Everything that can decide `name` at instant `at`, in one round trip of index seeks (see
        `name_at_sql`); None when there is no such workspace."""
        ws_lang = (workspace, language)
        rows = self._rows(
            name_at_sql(self.dialect),
            (workspace, self._ts(at), workspace, language, name, workspace)
            + ws_lang
            + ws_lang
            + (self.dialect.keys(name_keys(language, name)), *ws_lang),
            generic=True,  # on PostgreSQL, planning it costs more than running it (so for chain.POLICY_AT)
        )
        head = next((r for r in rows if r["part"] == "version"), None)
        if head is None:
            return None
        ruled = any(r["part"] == "rules" for r in rows)
        changes = sorted((r for r in rows if r["part"] not in ("version", "rules")), key=lambda r: r["version"])
        return NameRows(head["version"], bool(head["grants"]), changes, ruled)

    def changes_for_name(self, workspace: str, language: str, name: str, after: int, until: datetime) -> list[dict]:
        """Mode switches and entry changes of this name's keys (its own, its patterns'), after a
        version, before an instant."""
        params = (workspace, language, after, self._ts(until))
        entries = self._rows(
            f"SELECT {CHANGE_COLUMNS} "
            + self.dialect.each_key(
                "c.workspace = %s AND c.language = %s AND c.name_key = k.key AND c.version > %s AND c.at < %s"
            ),
            (self.dialect.keys(name_keys(language, name)), workspace, language, after, self._ts(until)),
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
        """Newest first; keyset pagination on (at, id) so deep pages cost the same as the first.
        A name in several spellings (`NameSpellings`) is one arm a language and spelling, each one
        range of rcp_decisions_by_package read from its newest end, the page taken from their
        merge (a `name IN (…)` of every kind, or an OR of the arms, walked the workspace's
        decisions by time on SQLite and sorted every decision of the name on PostgreSQL)."""
        where, params = ["workspace = %s"], [workspace]
        for column in DECISION_FILTERS:
            value = filters.get(column)
            if value is not None and not isinstance(value, dict):  # a name's spellings: the arms below
                where.append(f"{column} = %s")
                params.append(value)
        for clause, moment in (("at >= %s", start), ("at < %s", end)):
            if moment is not None:
                where.append(clause)
                params.append(self._ts(moment))
        if before is not None:  # a row-value bound: both stores turn it into one index range
            where.append("(at, id) < (%s, %s)")
            params += [self._ts(before[0]), before[1]]
        spellings = filters.get("name")
        if not isinstance(spellings, dict):
            return self._rows(
                f"{_DECISION} WHERE {' AND '.join(where)} ORDER BY at DESC, id DESC LIMIT %s",
                params + [limit],
            )
        arms, values = [], []
        for language, names in spellings.items():
            kind = "language = %s" if language is not None else "language IS NULL"  # an egress decision's
            for name in names:
                # Ordered as the index is: PostgreSQL takes `= %s`, not IS NULL, as one value of its order.
                arms.append(
                    f"{_DECISION} WHERE {' AND '.join(where)} AND {kind} AND name = %s "
                    "ORDER BY language DESC, name DESC, at DESC, id DESC LIMIT %s"
                )
                values.append([*params, *([language] if language is not None else []), name, limit])
        if not arms:  # a name no kind spells (an empty one): no decision has it
            return []
        if len(arms) == 1:
            return self._rows(arms[0], values[0])
        merged = " UNION ALL ".join(f"SELECT * FROM ({arm}) AS arm{n}" for n, arm in enumerate(arms))
        return self._rows(
            f"SELECT * FROM ({merged}) AS arms ORDER BY at DESC, id DESC LIMIT %s",
            [value for arm in values for value in arm] + [limit],
        )

    def reason_names(self, workspace: str, reason: str, since: datetime, limit: int) -> list[dict]:
        """The names decided with one reason since an instant: when first, how often, and by
        which sandboxes (one range of the reason's partial index, `PARTIAL_REASONS`, grouped)."""
        if reason not in PARTIAL_REASONS:
            raise ValueError(f"no index of the decisions with reason {reason!r}")
        rows = self._rows(
            "SELECT language, name, sandbox, MIN(at) AS at, COUNT(*) AS n FROM {decisions} "
            f"WHERE workspace = %s AND at >= %s AND reason = '{reason}' GROUP BY language, name, sandbox",
            (workspace, self._ts(since)),
        )
        names: dict[tuple, dict] = {}
        for row in rows:
            first = {"language": row["language"], "name": row["name"], "first_asked": row["at"], "count": 0}
            found = names.setdefault((row["language"], row["name"]), {**first, "sandboxes": []})
            found["first_asked"] = min(found["first_asked"], row["at"])
            found["count"] += int(row["n"])
            if row["sandbox"] is not None:
                found["sandboxes"].append(row["sandbox"])
        ordered = sorted(names.values(), key=lambda n: (n["first_asked"], n["language"], n["name"]))
        for found in ordered:
            found["sandboxes"].sort()
        return ordered[:limit]

    def newest_index_decision(self, workspace: str, language: str, name: str) -> dict | None:
        """The newest decision the package index recorded on one package (`allowed`, `reason`):
        one range of rcp_decisions_by_package, read from its newest end."""
        return self._first(
            "SELECT allowed, reason FROM {decisions} WHERE workspace = %s AND language = %s AND name = %s "
            "AND source = %s ORDER BY at DESC, id DESC LIMIT 1",
            (workspace, language, name, INDEX_SOURCE),
        )

    def decision(self, workspace: str, decision_id: str) -> dict | None:
        return self._first(f"{_DECISION} WHERE workspace = %s AND id = %s", (workspace, decision_id))

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

    def first_project_denial(self, denials: Denials) -> dict | None:
        """The first of a reader's project denials (`Denials`): one seek of run_decisions' primary
        key (reader, allowed, at, ...), each row's decision by its own key."""
        return self._first(
            f"SELECT d.at, d.record {denials.sql()} ORDER BY r.at, r.decision LIMIT 1", denials.params(self.dialect)
        )

    def run_decisions(self, denials: Denials, limit: int = MAX_RUN_DECISIONS) -> tuple[list[dict], bool]:
        """A run's decisions, at most `limit`, and whether it has more: its project denials first
        (`denials`, read as what fails the run), then its other refusals (false sorts before true
        in both stores), then its allows, each in the order they were made. Two ranges of
        run_decisions' primary key; the second leaves out the first's rows."""
        first = self._rows(
            f"SELECT d.id, d.at, d.record {denials.sql()} ORDER BY r.at, r.decision LIMIT %s",
            (*denials.params(self.dialect), limit + 1),
        )
        taken = {row["id"] for row in first}
        rest = self._rows(
            "SELECT d.id, d.at, d.record FROM {run_decisions} r JOIN {decisions} d ON d.id = r.decision "
            "WHERE r.run = %s ORDER BY r.allowed, r.at, r.decision LIMIT %s",
            (denials.reader, limit + 1 + len(first)),
        )
        rows = first + [row for row in rest if row["id"] not in taken]
        return rows[:limit], len(rows) > limit

    # -- deliveries (domain.delivery) -------------------------------------------------------------
    def deliveries(self, decision_ids: list[str]) -> list[dict]:
        """What was delivered for these decisions, each decision's in the order they ended: one
        range of rcp_deliveries_by_decision per decision (a page holds at most MAX_PAGE)."""
        if not decision_ids:
            return []
        marks = ", ".join(["%s"] * len(decision_ids))
        return self._rows(
            f"SELECT decision, at, status, bytes, sha256 FROM {{deliveries}} WHERE decision IN ({marks}) "
            "ORDER BY decision, at, id",
            list(decision_ids),
        )
