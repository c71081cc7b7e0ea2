"""Decision counts: rows summed per key and upserted by the audit sealer, in the transaction that
seals the decisions they count, and the queries over them.

The counts are of the sealed decisions: a sealing round of hundreds of events becomes one
multi-row upsert per table, of one row per distinct key, where the decisions' own transactions
(group commits of two or three decisions under load) paid six upserts each. Every query here
first seals what is committed (`caught_up`), so a count answered includes every decision
answered before it. See `count_schema` for the tables.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

from eventsourcing.persistence import DatetimeAsISO
from eventsourcing.utils import get_topic

from application.store.projection import ManyRows
from application.store.reads import ReadModel
from domain.decision import Decision
from domain.rules import sdist_file
from domain.specs import LANGUAGES

# The rollup's version of a download whose file's name says none (its decision's `version` null):
# all such files of a project share a row, which a draft judges alike (`index.versions.judge_unknown`).
UNKNOWN_VERSION = ""

_UPSERT = {
    "count": "INSERT INTO {decision_counts} AS c VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
    "ON CONFLICT (workspace, day, language, name, allowed, sandbox, kind) "
    "DO UPDATE SET installs = c.installs + excluded.installs",
    "name_day": "INSERT INTO {impact_names} AS c VALUES (%s, %s, %s, %s, %s, %s) "
    "ON CONFLICT (workspace, day, language, name, kind) DO UPDATE SET installs = c.installs + excluded.installs",
    # The days of the row and of the rows counted now merged: the last, and the last before it
    # ('' : none). Both SETs see the row as it was.
    "name_sandbox": "INSERT INTO {impact_sandboxes} AS c VALUES (%s, %s, %s, %s, %s, %s, %s) "
    "ON CONFLICT (workspace, language, name, kind, sandbox) DO UPDATE SET "
    "prev_day = CASE WHEN excluded.last_day > c.last_day THEN "
    "CASE WHEN c.last_day > excluded.prev_day THEN c.last_day ELSE excluded.prev_day END "
    "WHEN excluded.last_day = c.last_day THEN "
    "CASE WHEN c.prev_day > excluded.prev_day THEN c.prev_day ELSE excluded.prev_day END "
    "ELSE CASE WHEN c.prev_day > excluded.last_day THEN c.prev_day ELSE excluded.last_day END END, "
    "last_day = CASE WHEN excluded.last_day > c.last_day THEN excluded.last_day ELSE c.last_day END",
    "day": "INSERT INTO {impact_days} AS c VALUES (%s, %s, %s) "
    "ON CONFLICT (workspace, day) DO UPDATE SET installs = c.installs + excluded.installs",
    "outcome_day": "INSERT INTO {outcome_days} AS c VALUES (%s, %s, %s, %s) "
    "ON CONFLICT (workspace, day, allowed) DO UPDATE SET installs = c.installs + excluded.installs",
    # The facts of the day's first fetch are kept (as they were known then).
    "version_day": "INSERT INTO {impact_versions} AS c VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
    "ON CONFLICT (workspace, day, language, name, version, sdist, sandbox, allowed) DO UPDATE SET "
    "installs = c.installs + excluded.installs, "
    "uploaded_at = CASE WHEN excluded.first_at < c.first_at THEN excluded.uploaded_at ELSE c.uploaded_at END, "
    "install_scripts = CASE WHEN excluded.first_at < c.first_at THEN excluded.install_scripts "
    "ELSE c.install_scripts END, "
    "first_at = CASE WHEN excluded.first_at < c.first_at THEN excluded.first_at ELSE c.first_at END",
}


def count_key(e) -> tuple:
    """(workspace, day, language, name, allowed, sandbox, kind) of one recorded decision."""
    r = e.record
    language = r.get("language") or ("egress" if r["kind"] == "egress" else "")
    sandbox = (r.get("context") or {}).get("sandbox") or ""
    day = e.timestamp.astimezone(UTC).date().isoformat()
    return e.workspace, day, language, r.get("name") or "", bool(r["allowed"]), sandbox, r["kind"]


RECORDED = get_topic(Decision.Recorded)


@dataclass(frozen=True, slots=True)
class Counted:
    """What the counts read of a recorded decision."""

    workspace: str
    record: dict
    timestamp: datetime


class Uncountable(ValueError):
    """A stored decision whose state cannot be counted (`stored`: the one): no decision this code
    records is such, so it was written behind the service's back, and the sealer stops on it."""

    def __init__(self, stored):
        super().__init__(f"a {RECORDED} whose state cannot be counted")
        self.stored = stored


def rollups(dialect, to_domain_event):
    """What a sealing round writes beside its links: the counts of the decisions among the stored
    events it seals, read from their states as the sealer already decoded them (plain JSON);
    `Uncountable` for one that cannot be read so."""

    def statements(stored, states) -> list[ManyRows]:
        found = []
        for s, state in zip(stored, states, strict=True):
            if s.topic == RECORDED:
                try:
                    found.append(countable(counted(s, state, to_domain_event)))
                except Exception:  # a state the mapper never wrote, or a record of another shape
                    raise Uncountable(s) from None
        return count_statements(dialect, found)

    return statements


def counted(stored, state: dict | None, to_domain_event) -> Counted:
    """A decision's counted fields from its plain JSON state: the library's mapper (an event
    object, its timestamp transcoded back) cost a round more than the rest of the counting. A
    state of another class version (to be upcast) or of another shape is decoded by the mapper."""
    if (
        isinstance(state, dict)
        and state.get("class_version") == Decision.Recorded.class_version
        and isinstance(state.get("workspace"), str)
        and isinstance(state.get("record"), dict)
        and (instant := _instant(state.get("timestamp"))) is not None
    ):
        return Counted(state["workspace"], state["record"], instant)
    event = to_domain_event(stored)
    return Counted(event.workspace, event.record, event.timestamp)


_DATETIME = DatetimeAsISO()
_TEXT = (str, type(None))


def countable(found: Counted) -> Counted:
    """The decision, once every field the counts read is of its kind (they are keys and columns)."""
    r = found.record
    context = r.get("context") or {}
    if not (
        isinstance(found.workspace, str)
        and isinstance(r.get("kind"), str)
        and isinstance(r.get("allowed"), bool)
        and all(isinstance(r.get(k), _TEXT) for k in ("language", "name", "request", "file"))
        and isinstance(context, dict)
        and all(isinstance(context.get(k), _TEXT) for k in ("sandbox", "uploaded_at"))
    ):
        raise ValueError("not a decision's record")
    return found


def _instant(value) -> datetime | None:
    """A timestamp as the library's JSON transcoder writes it, decoded by its own transcoding."""
    if isinstance(value, dict) and value.get("_type_") == _DATETIME.name and isinstance(value.get("_data_"), str):
        try:
            return _DATETIME.decode(value["_data_"])
        except ValueError:
            return None
    return None


def count_statements(dialect, decisions) -> list[ManyRows]:
    """One multi-row upsert per rollup table these recorded decisions touch (`Counted` or
    `Decision.Recorded`), each table's rows summed per key first: no key comes twice
    (PostgreSQL refuses a statement that updates one row twice)."""
    counts: Counter = Counter(count_key(e) for e in decisions)
    rows = [("count", (*key, n)) for key, n in counts.items()]
    names, days, outcomes = Counter(), Counter(), Counter()
    sandboxes: dict = {}  # key -> the days it was installed on
    for (workspace, day, language, name, allowed, sandbox, kind), n in counts.items():
        outcomes[(workspace, day, allowed)] += n
        if language in LANGUAGES and name:
            names[(workspace, day, language, name, kind)] += n
            days[(workspace, day)] += n
            sandboxes.setdefault((workspace, language, name, kind, sandbox), set()).add(day)
    rows += [("name_day", (*key, n)) for key, n in names.items()]
    rows += [("name_sandbox", (*key, *_last_two(seen))) for key, seen in sandboxes.items()]
    rows += [("day", (*key, n)) for key, n in days.items()]
    rows += [("outcome_day", (*key, n)) for key, n in outcomes.items()]
    rows += [("version_day", params) for params in _version_rows(decisions)]
    tables: dict[str, list[tuple]] = {}
    for kind, params in rows:
        tables.setdefault(kind, []).append(params)
    return [ManyRows.of(dialect.sql(_UPSERT[kind]), tuple(found)) for kind, found in tables.items()]


def _last_two(days: set[str]) -> tuple[str, str]:
    """(last day, the last before it or '')."""
    last, *before = sorted(days, reverse=True)
    return last, before[0] if before else ""


def _version_rows(decisions) -> list[tuple]:
    """Downloads whose decision recorded the facts judged (`context.version`; null, a file whose
    name says none, is kept as ''), allowed or refused, summed per key, each key with the facts and
    instant of its first fetch among these."""
    found: dict[tuple, list] = {}
    for e in decisions:
        r, context = e.record, e.record.get("context") or {}
        version = context.get("version", False)  # absent: no facts were judged
        if r.get("request") != "download" or r.get("language") not in LANGUAGES or not r.get("name"):
            continue
        if version is None:
            version = UNKNOWN_VERSION
        if not isinstance(version, str):
            continue
        at = e.timestamp.astimezone(UTC)
        sdist = r["language"] == "python" and sdist_file(r.get("file") or "")
        key = (
            e.workspace,
            at.date().isoformat(),
            r["language"],
            r["name"],
            version,
            sdist,
            context.get("sandbox") or "",
            bool(r["allowed"]),
        )
        scripts = context.get("install_scripts")
        facts = [
            context.get("uploaded_at") or "",
            "" if scripts is None else str(bool(scripts)).lower(),
            at.isoformat(),
        ]
        known = found.get(key)
        if known is None:
            found[key] = [*facts, 1]
        else:
            known[3] += 1
            if facts[2] < known[2]:
                known[:3] = facts
    return [(*key, *values) for key, values in found.items()]


class CountReads(ReadModel):
    """Queries over the count tables (plain rows, no timestamps to convert). `caught_up` seals
    what is committed (the audit chain's `seal`), so the counts read include it: before each
    query, or once for all the queries of an answer made `within_one_seal`."""

    def __init__(self, recorder, caught_up: Callable[[], object]):
        super().__init__(recorder)
        self.caught_up = caught_up
        self._sealed = threading.local()  # this thread's answer has sealed first

    @contextmanager
    def within_one_seal(self) -> Iterator[None]:
        """The queries of one answer see the counts as of one sealing, paid once (a sealing round
        when something waits, two indexed reads when nothing does)."""
        if getattr(self._sealed, "on", False):
            yield
            return
        self.caught_up()
        self._sealed.on = True
        try:
            yield
        finally:
            self._sealed.on = False

    def _rows(self, template: str, params: list | tuple = (), prepare: bool = False) -> list[dict]:
        if not getattr(self._sealed, "on", False):
            self.caught_up()
        return self.recorder.fetch(self.dialect.sql(template), params, prepare)

    def decision_counts(
        self, workspace: str, start_day: str, end_day: str, language: str | None, allowed: bool | None
    ) -> list[dict]:
        where, params = ["workspace = %s", "day >= %s", "day <= %s"], [workspace, start_day, end_day]
        for column, value in (("language", language), ("allowed", allowed)):
            if value is not None:
                where.append(f"{column} = %s")
                params.append(value)
        rows = self._rows(  # a key's kinds summed: one row per key, as before kinds were counted apart
            "SELECT day, language, name, allowed, sandbox, SUM(installs) AS installs FROM {decision_counts} "
            f"WHERE {' AND '.join(where)} GROUP BY day, language, name, allowed, sandbox "
            "ORDER BY day, language, name, allowed, sandbox",
            params,
        )
        return [{**row, "allowed": bool(row["allowed"]), "installs": int(row["installs"])} for row in rows]

    def denied_installs(self, workspace: str, start_day: str, language: str, name: str) -> int:
        row = self._first(
            "SELECT SUM(installs) AS n FROM {decision_counts} WHERE workspace = %s AND day >= %s "
            "AND language = %s AND name = %s AND allowed = %s",
            (workspace, start_day, language, name, False),
        )
        return int(row["n"] or 0) if row else 0

    def installs_by_name(self, workspace: str, start_day: str, end_day: str) -> list[dict]:
        """Installs per python/node package and kind over [start_day, end_day] (from one row per
        package, kind and day)."""
        return self._rows(
            "SELECT language, name, kind, SUM(installs) AS installs FROM {impact_names} "
            "WHERE workspace = %s AND day >= %s AND day <= %s GROUP BY language, name, kind",
            (workspace, start_day, end_day),
        )

    def day_installs(self, workspace: str, start_day: str, end_day: str) -> int:
        row = self._first(
            "SELECT SUM(installs) AS n FROM {impact_days} WHERE workspace = %s AND day >= %s AND day <= %s",
            (workspace, start_day, end_day),
        )
        return int(row["n"] or 0) if row else 0

    def sandboxes_since(self, workspace: str, start_day: str) -> list[dict]:
        """(language, name, kind, sandbox) of every named sandbox that installed a package (by that
        kind) from `start_day` on."""
        return self._rows(
            "SELECT language, name, kind, sandbox FROM {impact_sandboxes} WHERE workspace = %s "
            "AND last_day >= %s AND sandbox <> ''",
            (workspace, start_day),
        )

    def sandboxes_new_today(self, workspace: str, start_day: str, today: str) -> list[dict]:
        """The keys installed today that had not been installed since `start_day` before today."""
        return self._rows(
            "SELECT language, name, kind, sandbox FROM {impact_sandboxes} WHERE workspace = %s AND last_day = %s "
            "AND prev_day < %s AND sandbox <> ''",
            (workspace, today, start_day),
        )

    def fetched_versions(
        self,
        workspace: str,
        start_day: str,
        end_day: str,
        languages: list[str] | None = None,
        names: list[tuple[str, str]] | None = None,
    ) -> list[dict]:
        """Downloads over [start_day, end_day] per day, version (None: the file's name says none),
        sandbox and outcome, with the facts judged; only of these `languages`, and only of these
        (language, name) `names` (a range of rcp_impact_versions_by_name each), when given."""
        if (names is not None and not names) or (languages is not None and not languages):
            return []
        of = "" if names is None else " AND (" + " OR ".join(["(language = %s AND name = %s)"] * len(names)) + ")"
        of += "" if languages is None else f" AND language IN ({', '.join(['%s'] * len(languages))})"
        rows = self._rows(
            "SELECT language, name, version, sdist, sandbox, allowed, uploaded_at, install_scripts, first_at, installs "
            f"FROM {{impact_versions}} WHERE workspace = %s AND day >= %s AND day <= %s{of}",
            (workspace, start_day, end_day, *[v for pair in names or () for v in pair], *(languages or ())),
        )
        return [
            {
                **row,
                "version": row["version"] or None,  # UNKNOWN_VERSION: the file's name says none
                "sdist": bool(row["sdist"]),
                "allowed": bool(row["allowed"]),
                "installs": int(row["installs"]),
            }
            for row in rows
        ]

    def allowed_by_name_and_sandbox(self, workspace: str, start_day: str, end_day: str, language: str) -> list[dict]:
        """Allowed decisions of one language (or 'egress') over [start_day, end_day], summed per
        (name, sandbox, kind): what allowlist synthesis weighs. One range of the counts' primary key."""
        rows = self._rows(
            "SELECT name, sandbox, kind, SUM(installs) AS installs FROM {decision_counts} WHERE workspace = %s "
            "AND day >= %s AND day <= %s AND language = %s AND allowed = %s GROUP BY name, sandbox, kind",
            (workspace, start_day, end_day, language, True),
        )
        return [{**row, "installs": int(row["installs"])} for row in rows]
