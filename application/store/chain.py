"""The audit chain's tables and every SQL statement that reads or writes them (both stores).

- `chain`: one row per sealed event, (workspace, seq) unique so a chain cannot fork, and
  (originator_id, originator_version) unique so no event is sealed twice, whichever process
  seals it.
- `chain_heads`: each workspace's last (seq, link), so sealing and checkpointing never scan
  (each is held to the chain's last record as it is read: application.chain.agreement).
- `chain_position`: one row, the last notification id sealed (held to the chain's newest).
  Every sealing transaction starts by updating it, which takes the store's write lock on SQLite
  and a row lock on PostgreSQL: two sealers (threads or server processes) take turns and the
  second sees what the first sealed.
  A background round on PostgreSQL first looks with SKIP LOCKED and, finding it locked, leaves
  the sealing to the process that holds it.
- `checkpoints`: the signed heads.
"""

from __future__ import annotations

from contextlib import contextmanager
from functools import lru_cache
from uuid import UUID

from application.store.projection import ManyRows
from application.store.reads import VERSION_AT, Denials
from application.store.schema import TABLES as READ_MODEL_TABLES
from application.store.schema import Dialect

TABLES = ("chain", "chain_heads", "chain_position", "checkpoints")

DDL = (
    "CREATE TABLE IF NOT EXISTS {chain} (workspace TEXT NOT NULL, seq BIGINT NOT NULL, "
    "notification_id BIGINT NOT NULL, originator_id {uuid} NOT NULL, originator_version BIGINT NOT NULL, "
    "event_hash TEXT NOT NULL, link TEXT NOT NULL, PRIMARY KEY (workspace, seq), "
    "UNIQUE (originator_id, originator_version))",
    "CREATE INDEX IF NOT EXISTS rcp_chain_by_notification ON {chain} (notification_id)",
    "CREATE TABLE IF NOT EXISTS {chain_heads} (workspace TEXT PRIMARY KEY, seq BIGINT NOT NULL, link TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {chain_position} (singleton INTEGER PRIMARY KEY CHECK (singleton = 1), "
    "notification_id BIGINT NOT NULL)",
    # Seeded only where it is missing, by a read: an INSERT ... ON CONFLICT waits for the sealer
    # that holds the row, while this transaction's index DDL holds a lock the sealer then needs
    # (a CLI started beside `serve` on PostgreSQL: deadlock detected).
    "INSERT INTO {chain_position} SELECT 1, 0 WHERE NOT EXISTS (SELECT 1 FROM {chain_position})",
    "CREATE TABLE IF NOT EXISTS {checkpoints} (workspace TEXT NOT NULL, seq BIGINT NOT NULL, "
    "head TEXT NOT NULL, at TEXT NOT NULL, key_id TEXT NOT NULL, signature TEXT NOT NULL, "
    "PRIMARY KEY (workspace, seq))",
)

CHAIN_COLUMNS = "workspace, seq, notification_id, originator_id, originator_version, event_hash, link"
CHECKPOINT_COLUMNS = "workspace, seq, head, at, key_id, signature"

# A workspace's rcp_chain_heads row and its chain's last record, in one statement (two key seeks):
# the two must agree (application.chain.agreement).
HEAD_AND_LAST = (
    "SELECT 'head' AS part, seq, link FROM {chain_heads} WHERE workspace = %s UNION ALL "
    "SELECT 'last', seq, link FROM (SELECT seq, link FROM {chain} WHERE workspace = %s ORDER BY seq DESC LIMIT 1) c"
)
# The sealed position and the newest notification the chain seals, which it must be (one seek of
# each's index, in one statement: one snapshot).
BOUNDS = (
    "SELECT (SELECT notification_id FROM {chain_position} WHERE singleton = 1) AS position, "
    "(SELECT MAX(notification_id) FROM {chain}) AS sealed"
)


def create_statements(dialect: Dialect) -> list[str]:
    return [render(dialect, "", s) for s in DDL]


@lru_cache(maxsize=256)
def render(dialect: Dialect, events_table: str, template: str) -> str:
    postgres = dialect.schema is not None
    names = {t: dialect.table(t) for t in (*TABLES, *READ_MODEL_TABLES)} | {
        "events": f'"{dialect.schema}"."{events_table}"' if postgres else events_table,
        "nid": "notification_id" if postgres else "rowid",  # SQLite's notification id is the rowid
        "uuid": "UUID" if postgres else "TEXT",
    }
    text = template.format(**names)
    return text if postgres else text.replace("%s", "?")


# An aggregate's events with their sealed hashes (application.chain.facts), then the sealed ones
# that are gone from the store.
FACTS = (
    "SELECT e.originator_id, e.originator_version, e.topic, e.state, e.{nid} AS notification_id, c.event_hash, "
    "(SELECT p.notification_id FROM {chain_position} p WHERE p.singleton = 1) AS position FROM {events} e "
    "LEFT JOIN {chain} c ON c.originator_id = e.originator_id AND c.originator_version = e.originator_version "
    "WHERE e.originator_id = %s{at_e} UNION ALL SELECT c.originator_id, c.originator_version, NULL, NULL, NULL, "
    "c.event_hash, NULL FROM {chain} c WHERE c.originator_id = %s{at_c} AND NOT EXISTS (SELECT 1 FROM {events} e "
    "WHERE e.originator_id = c.originator_id AND e.originator_version = c.originator_version)"
)

# The policy's stored events at the version at T, as `Repository.get(version=...)` reads them in
# two round trips (its last snapshot there, then the events after it), with the version and the
# facts of that snapshot's seal (as FACTS: the seal stream's event at the snapshot's version) in
# the same statement, so a snapshot this process has not checked yet costs no second round trip.
# `part` says which is which. The policy version p is the aggregate's version p + 1 (its creation
# is version 1). No row: no such workspace. {snapshots} is the library's snapshots table.
_AT_SNAPSHOT = " AND {alias}.originator_version = (SELECT originator_version FROM s)"
POLICY_AT = (
    f"WITH v AS (SELECT COALESCE(({VERSION_AT}), 0) + 1 AS version FROM {{workspaces}} WHERE workspace = %s), "
    "s AS (SELECT originator_version, topic, state FROM {snapshots} WHERE originator_id = %s "
    "AND originator_version <= (SELECT version FROM v) ORDER BY originator_version DESC LIMIT 1) "
    "SELECT 'seal' AS part, f.* FROM ("  # first: the others' NULLs take its columns' types
    + FACTS.replace("{at_e}", _AT_SNAPSHOT.format(alias="e")).replace("{at_c}", _AT_SNAPSHOT.format(alias="c"))
    + ") f UNION ALL SELECT 'snapshot', NULL, originator_version, topic, state, NULL, NULL, NULL FROM s "
    # the events after the snapshot with what the chain sealed for each, as FACTS reads them
    # (each event's sealed hash one seek of the chain's key: a join was planned as a scan of every
    # chain row of the policy)
    "UNION ALL SELECT 'event', e.originator_id, e.originator_version, e.topic, e.state, e.{nid}, "
    "(SELECT c.event_hash FROM {chain} c WHERE c.originator_id = e.originator_id "
    "AND c.originator_version = e.originator_version), "
    "(SELECT p.notification_id FROM {chain_position} p WHERE p.singleton = 1) FROM {events} e "
    "WHERE e.originator_id = %s AND e.originator_version > COALESCE((SELECT originator_version FROM s), 0) "
    "AND e.originator_version <= (SELECT version FROM v)"
)
_ANY_VERSION = FACTS.replace("{at_e}", "").replace("{at_c}", "")
_CALLER_COLUMNS = (
    "SELECT f.*, t.id AS row_id, t.workspace AS row_workspace, t.name AS row_name, t.role AS row_role, "
    "t.secret_digest AS row_secret_digest, t.revoked_at AS row_revoked_at, COALESCE((SELECT c.version "
    "FROM {changes} c WHERE c.workspace = t.workspace ORDER BY c.version DESC LIMIT 1), 0) AS head"
)
_CALLER_FROM = f" FROM ({_ANY_VERSION}) f LEFT JOIN {{tokens}} t ON t.id = %s"
CALLER = _CALLER_COLUMNS + _CALLER_FROM
RUN = (
    "SELECT f.*, r.id AS row_id, r.workspace AS row_workspace, r.started_by AS row_started_by, "
    "r.started_by_name AS row_started_by_name, r.expires_at AS row_expires_at, r.context AS row_context, "
    f"r.secret_digest AS row_secret_digest FROM ({_ANY_VERSION}) f LEFT JOIN {{runs}} r ON r.id = %s"
)

SESSION = (
    "SELECT f.*, s.id AS row_id, s.workspace AS row_workspace, s.token_id AS row_token_id, "
    "s.expires_at AS row_expires_at, s.ended_at AS row_ended_at "
    f"FROM ({_ANY_VERSION}) f LEFT JOIN {{console_sessions}} s ON s.id = %s"
)


class ChainStore:
    """Queries over one of our recorders (it knows its dialect, its connection and its events)."""

    def __init__(self, recorder):
        self.recorder = recorder
        self.dialect: Dialect = recorder.dialect
        self.postgres = self.dialect.schema is not None
        self.events_table = recorder.events_table_name

    def oid(self, originator_id: UUID):
        """An originator id as this store spells it (PostgreSQL uuid; SQLite hex text)."""
        return originator_id if self.postgres else originator_id.hex

    def _rows(self, template: str, params=(), prepare: bool = False, generic: bool = False) -> list[dict]:
        return self.recorder.fetch(render(self.dialect, self.events_table, template), params, prepare, generic)

    def snapshot(self):
        """A context in which every read this thread makes sees one snapshot of the store
        (application.store.pinned): what is committed meanwhile, sealed or not, is seen by none."""
        return self.recorder.snapshot()

    @contextmanager
    def sealing(self):
        """A write transaction holding the sealing lock; yields it, the sealed position (None: its
        row is gone) and the newest notification the chain seals (0: none), read under the lock."""
        with self.recorder.datastore.transaction(commit=True) as cursor:
            tx = _Transaction(cursor, self.dialect, self.events_table)
            tx.run("UPDATE {chain_position} SET notification_id = notification_id WHERE singleton = 1")
            bounds = tx.rows(BOUNDS)[0]
            yield tx, bounds["position"], bounds["sealed"] or 0

    # -- reads for the sealer and the checkpointer ---------------------------------------------
    def position(self, skip_locked: bool = False) -> int | None:
        """The sealed position. `skip_locked` (PostgreSQL): None while another sealer holds its
        lock, found without waiting (the row lock is taken and let go within the statement)."""
        lock = " FOR UPDATE SKIP LOCKED" if skip_locked and self.postgres else ""
        rows = self._rows("SELECT notification_id FROM {chain_position} WHERE singleton = 1" + lock)
        return rows[0]["notification_id"] if rows else (None if lock else 0)

    def sealed_bounds(self) -> dict:
        """The sealed position and the newest notification any chain seals, in one statement (so
        one snapshot: a round sealed in between cannot make them disagree)."""
        return self._rows(BOUNDS)[0]

    def sealed_at(self, notification_id: int) -> list[dict]:
        """The chain rows that say they sealed this notification, each with where its event is
        stored now (None where it is gone) and its topic."""
        return self._rows(
            "SELECT c.workspace, c.seq, c.notification_id, c.originator_id, c.originator_version, "
            "e.{nid} AS stored_notification_id, e.topic FROM {chain} c LEFT JOIN {events} e "
            "ON e.originator_id = c.originator_id AND e.originator_version = c.originator_version "
            "WHERE c.notification_id = %s",
            (notification_id,),
        )

    def disagreeing_head(self) -> str | None:
        """The first workspace whose rcp_chain_heads row is not its chain's last record (two key
        seeks a workspace), or None."""
        rows = self._rows(
            "SELECT h.workspace FROM {chain_heads} h WHERE NOT EXISTS (SELECT 1 FROM {chain} c WHERE "
            "c.workspace = h.workspace AND c.seq = h.seq AND c.link = h.link) OR EXISTS (SELECT 1 FROM {chain} c "
            "WHERE c.workspace = h.workspace AND c.seq > h.seq) ORDER BY h.workspace LIMIT 1"
        )
        return rows[0]["workspace"] if rows else None

    def head_and_last(self, workspace: str) -> tuple[dict | None, dict | None]:
        """The workspace's rcp_chain_heads row and its chain's last record (None where none is)."""
        return _head_and_last(self._rows(HEAD_AND_LAST, (workspace, workspace)))

    def heads_without_checkpoint(self) -> list[dict]:
        return self._rows(
            "SELECT h.workspace, h.seq, h.link FROM {chain_heads} h WHERE h.seq > "
            "COALESCE((SELECT MAX(k.seq) FROM {checkpoints} k WHERE k.workspace = h.workspace), 0)"
        )

    # -- checkpoints -----------------------------------------------------------------------------
    def add_checkpoint(self, checkpoint: dict) -> None:
        with self.recorder.datastore.transaction(commit=True) as cursor:
            _Transaction(cursor, self.dialect, self.events_table).run(
                f"INSERT INTO {{checkpoints}} ({CHECKPOINT_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s) "
                "ON CONFLICT DO NOTHING",
                tuple(checkpoint[c] for c in CHECKPOINT_COLUMNS.split(", ")),
            )

    def checkpoint(self, workspace: str, seq: int) -> dict | None:
        rows = self._rows(
            f"SELECT {CHECKPOINT_COLUMNS} FROM {{checkpoints}} WHERE workspace = %s AND seq = %s", (workspace, seq)
        )
        return rows[0] if rows else None

    def checkpoints(self, workspace: str, after: int, limit: int) -> list[dict]:
        return self._rows(
            f"SELECT {CHECKPOINT_COLUMNS} FROM {{checkpoints}} WHERE workspace = %s AND seq > %s ORDER BY seq LIMIT %s",
            (workspace, after, limit),
        )

    # -- reads for verification ------------------------------------------------------------------
    def walk(self, workspace: str, after: int, limit: int) -> list[dict]:
        """Chain rows in order, each with the stored event it sealed (None where it is gone)."""
        return self._rows(
            "SELECT c.seq, c.notification_id, c.originator_id, c.originator_version, c.event_hash, c.link, "
            "e.{nid} AS stored_notification_id, e.topic, e.state FROM {chain} c LEFT JOIN {events} e "
            "ON e.originator_id = c.originator_id AND e.originator_version = c.originator_version "
            "WHERE c.workspace = %s AND c.seq > %s ORDER BY c.seq LIMIT %s",
            (workspace, after, limit),
        )

    def event_at(self, notification_id: int) -> dict | None:
        rows = self._rows(
            "SELECT {nid} AS notification_id, originator_id, originator_version, topic FROM {events} WHERE {nid} = %s",
            (notification_id,),
        )
        return rows[0] if rows else None

    def sealed_as(self, originator_id, originator_version: int) -> dict | None:
        rows = self._rows(
            "SELECT workspace, seq FROM {chain} WHERE originator_id = %s AND originator_version = %s",
            (originator_id, originator_version),
        )
        return rows[0] if rows else None

    def origin_workspace(self, originator_id) -> str | None:
        rows = self._rows("SELECT workspace FROM {chain} WHERE originator_id = %s LIMIT 1", (originator_id,))
        return rows[0]["workspace"] if rows else None

    def moved_after(self, originator_id, version: int) -> bool:
        """Whether the aggregate has an event after `version`, stored or sealed (two key seeks)."""
        return bool(
            self._rows(
                "SELECT 1 AS found FROM {events} WHERE originator_id = %s AND originator_version > %s "
                "UNION ALL SELECT 1 FROM {chain} WHERE originator_id = %s AND originator_version > %s LIMIT 1",
                (originator_id, version) * 2,
            )
        )

    def unsealed(self, after: int, up_to: int, limit: int) -> list[dict]:
        """Stored events at sealed positions that no chain holds: inserted behind the sealer."""
        return self._rows(
            "SELECT e.{nid} AS notification_id, e.originator_id, e.originator_version, e.topic, e.state "
            "FROM {events} e WHERE e.{nid} > %s AND e.{nid} <= %s AND NOT EXISTS (SELECT 1 FROM {chain} c "
            "WHERE c.originator_id = e.originator_id AND c.originator_version = e.originator_version) "
            "ORDER BY e.{nid} LIMIT %s",
            (after, up_to, limit),
        )

    def notifications(self, after: int, limit: int) -> list[dict]:
        """The stored events after a notification id, as stored (the sealer reads each value
        itself: the library's read turns a SQLite originator id into a UUID, and fails on one that
        is none)."""
        return self._rows(
            "SELECT {nid} AS notification_id, originator_id, originator_version, topic, state FROM {events} "
            "WHERE {nid} > %s ORDER BY {nid} LIMIT %s",
            (after, limit),
            prepare=True,
        )

    def pending(self, position: int) -> int:
        return self._rows("SELECT COUNT(*) AS n FROM {events} WHERE {nid} > %s", (position,))[0]["n"]

    # -- reads for checks on use (application.chain.facts) ---------------------------------------
    def facts(self, originator_id, version: int | None = None, after: int | None = None) -> list[dict]:
        """One aggregate's stored events (or its one event at `version`, or those `after` one),
        each with the hash the chain sealed for it (None: not sealed) and the sealer's position;
        and every chain row whose event is gone from the store (state None). One round trip of
        primary-key seeks."""
        if version is not None:
            at, params = " AND {alias}.originator_version = %s", (originator_id, version)
        elif after is not None:
            at, params = " AND {alias}.originator_version > %s", (originator_id, after)
        else:
            at, params = "", (originator_id,)
        return self._rows(
            FACTS.replace("{at_e}", at.format(alias="e")).replace("{at_c}", at.format(alias="c")), params * 2
        )

    def policy_at(self, workspace: str, at, policy, seal, snapshots: str) -> list[dict]:
        """The rows of POLICY_AT for the policy `policy` at instant `at`, its snapshot's seal being
        the stream `seal` (both ids as this store spells them), `snapshots` the library's table."""
        template = POLICY_AT.replace("{snapshots}", self.dialect.library_table(snapshots))
        params = (workspace, self.dialect.ts(at), workspace, policy, seal, seal, policy)
        return self._rows(template, params, generic=True)

    def caller(self, token_id: str, denials: Denials | None = None) -> list[dict]:
        """A token's facts (as `facts`), each with its tokens-table row (`row_*`, None when there is
        none) and its workspace's head version: what every authenticated request reads, in one round
        trip of primary-key seeks, prepared on PostgreSQL (it runs before every such request).
        With `denials` (a package index read), `denied` too: whether the reader has one (a seek of
        run_decisions' primary key in the same round trip)."""
        oid = self.oid(UUID(token_id))
        if denials is None:
            return self._rows(CALLER, (oid, oid, token_id), prepare=True)
        template = f"{_CALLER_COLUMNS}, EXISTS (SELECT 1 {denials.sql()}) AS denied{_CALLER_FROM}"
        return self._rows(template, (*denials.params(self.dialect), oid, oid, token_id), prepare=True)

    def run(self, run_id: str) -> list[dict]:
        """A run's facts (as `facts`), each with its runs-table row (`row_*`)."""
        oid = self.oid(UUID(run_id))
        return self._rows(RUN, (oid, oid, run_id))

    def session(self, session_id: str) -> list[dict]:
        """A console session's facts (as `facts`), each with its console_sessions row (`row_*`)."""
        oid = self.oid(UUID(session_id))
        return self._rows(SESSION, (oid, oid, session_id))

    # -- reads for exports with links ------------------------------------------------------------
    def sealed_events(self, originator_ids: list) -> list[dict]:
        if not originator_ids:
            return []
        marks = ", ".join(["%s"] * len(originator_ids))
        return self._rows(
            "SELECT c.workspace, c.seq, c.originator_id, c.originator_version, c.event_hash, c.link, e.topic, "
            f"e.state FROM {{chain}} c JOIN {{events}} e ON e.originator_id = c.originator_id AND "
            f"e.originator_version = c.originator_version WHERE c.originator_id IN ({marks})",
            list(originator_ids),
        )

    def first_states(self, originator_ids: list) -> dict[str, bytes | str]:
        """The stored state of each of these aggregates' first event (a decision's one event),
        sealed yet or not, by the id as text (as stored: bytes, or text where it was altered so)."""
        if not originator_ids:
            return {}
        marks = ", ".join(["%s"] * len(originator_ids))
        rows = self._rows(
            f"SELECT originator_id, state FROM {{events}} WHERE originator_id IN ({marks}) AND originator_version = 1",
            [self.oid(UUID(i)) for i in originator_ids],
        )
        return {str(UUID(str(r["originator_id"]))): r["state"] for r in rows}

    # -- reads for the checks of read models with one row per event (decisions, deliveries) ------
    def decision_rows(self, workspace: str, after: str, limit: int) -> list[dict]:
        return self._rows(
            "SELECT id, workspace, at, language, name, kind, allowed, reason, source, sandbox, record "
            "FROM {decisions} WHERE workspace = %s AND id > %s ORDER BY id LIMIT %s",
            (workspace, after, limit),
        )

    def delivery_rows(self, workspace: str, after: str, limit: int) -> list[dict]:
        return self._rows(
            "SELECT id, decision, workspace, at, status, bytes, sha256 FROM {deliveries} "
            "WHERE workspace = %s AND id > %s ORDER BY id LIMIT %s",
            (workspace, after, limit),
        )

    def present_ids(self, table: str, workspace: str, ids: list[str]) -> set[str]:
        """Which of these ids `table` (decisions or deliveries) holds in `workspace`."""
        marks = ", ".join(["%s"] * len(ids))
        template = f"SELECT id FROM {{{table}}} WHERE workspace = %s AND id IN ({marks})"
        return {r["id"] for r in self._rows(template, [workspace, *ids])} if ids else set()

    def sealed_of_topic(self, workspace: str, topic: str, after: int, limit: int) -> list[dict]:
        return self._rows(
            "SELECT c.seq, c.originator_id FROM {chain} c JOIN {events} e ON e.originator_id = "
            "c.originator_id AND e.originator_version = c.originator_version WHERE c.workspace = %s "
            "AND e.topic = %s AND c.seq > %s ORDER BY c.seq LIMIT %s",
            (workspace, topic, after, limit),
        )

    def stored_position(self, originator_id, version: int = 1) -> int | None:
        rows = self._rows(
            "SELECT {nid} AS notification_id FROM {events} WHERE originator_id = %s AND originator_version = %s",
            (originator_id, version),
        )
        return rows[0]["notification_id"] if rows else None

    def change_rows(self, workspace: str) -> list[dict]:
        return self._rows("SELECT * FROM {changes} WHERE workspace = %s ORDER BY version", (workspace,))

    def change_token_rows(self, workspace: str) -> list[dict]:
        return self._rows("SELECT * FROM {change_tokens} WHERE workspace = %s ORDER BY version", (workspace,))

    def token_rows(self, workspace: str) -> list[dict]:
        return self._rows(
            "SELECT id, workspace, name, role, issued_at, issued_by, revoked_at, revoked_by, "
            "secret_digest FROM {tokens} WHERE workspace = %s ORDER BY id",
            (workspace,),
        )

    def workspace_events(self, workspace: str) -> tuple[list[dict], list[dict]]:
        """The workspace's sealed events in chain order, and every event still waiting for the
        sealer (of any workspace: the caller picks its own)."""
        sealed = self._rows(
            "SELECT e.originator_id, e.originator_version, e.topic, e.state FROM {chain} c JOIN {events} e "
            "ON e.originator_id = c.originator_id AND e.originator_version = c.originator_version "
            "WHERE c.workspace = %s ORDER BY c.seq",
            (workspace,),
        )
        return sealed, self._rows(
            "SELECT e.originator_id, e.originator_version, e.topic, e.state FROM {events} e WHERE e.{nid} > "
            "(SELECT notification_id FROM {chain_position} WHERE singleton = 1) ORDER BY e.{nid}"
        )

    def table_rows(self, table: str, where: str, workspace: str) -> list[dict]:
        """A read-model table's rows for one workspace (`where` names it by one parameter)."""
        return self._rows(f"SELECT * FROM {{{table}}} WHERE {where}", (workspace,))

    def links(self, workspace: str, after: int, limit: int) -> list[dict]:
        return self._rows(
            "SELECT seq, event_hash, link FROM {chain} WHERE workspace = %s AND seq > %s ORDER BY seq LIMIT %s",
            (workspace, after, limit),
        )


class _Transaction:
    def __init__(self, cursor, dialect: Dialect, events_table: str):
        self.cursor = cursor
        self.postgres = dialect.schema is not None
        self.render = lambda template: render(dialect, events_table, template)

    def run(self, template: str, params=()) -> None:
        self.cursor.execute(self.render(template), params)

    def rows(self, template: str, params=()) -> list[dict]:
        self.run(template, params)
        return [dict(row) for row in self.cursor.fetchall()]

    def many(self, template: str, params: list) -> None:
        """One `INSERT … VALUES (…)` template, many rows, as one statement (`ManyRows`: psycopg
        parsed a statement of thousands of placeholders again on every round, a third of a
        sealing round's CPU)."""
        if params:
            ManyRows.of(self.render(template), tuple(params)).run(self.cursor, self.postgres)

    def head_and_last(self, workspace: str) -> tuple[dict | None, dict | None]:
        return _head_and_last(self.rows(HEAD_AND_LAST, (workspace, workspace)))

    def origin_workspace(self, originator_id) -> str | None:
        rows = self.rows("SELECT workspace FROM {chain} WHERE originator_id = %s LIMIT 1", (originator_id,))
        return rows[0]["workspace"] if rows else None

    def seal(self, rows: list[tuple], heads: dict[str, tuple[int, str]], position: int, rolled=()) -> None:
        """The links, the heads they move and the position, with what else the round writes
        (`rolled`: `ManyRows`, already rendered)."""
        for item in rolled:
            item.run(self.cursor, self.postgres)
        self.many(f"INSERT INTO {{chain}} ({CHAIN_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s)", rows)
        self.many(
            "INSERT INTO {chain_heads} (workspace, seq, link) VALUES (%s, %s, %s) ON CONFLICT (workspace) "
            "DO UPDATE SET seq = excluded.seq, link = excluded.link",
            [(ws, seq, link) for ws, (seq, link) in heads.items()],
        )
        self.run("UPDATE {chain_position} SET notification_id = %s WHERE singleton = 1", (position,))


def _head_and_last(rows: list[dict]) -> tuple[dict | None, dict | None]:
    parts = {row["part"]: row for row in rows}
    return parts.get("head"), parts.get("last")
