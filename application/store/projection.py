"""Read-model tables written in the same transaction as the events that they index.

The tables and their `Dialect` are in `schema`. Rows are derived from the domain events being
saved (the `searchabletimestamps` pattern), so a read model can never disagree with the event log it was written beside.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from datetime import datetime

from application.store.access_projection import access_statements
from application.store.jsontext import sorted_text
from application.store.literals import Bind, binder
from application.store.schema import Dialect
from domain.decision import Decision, DecisionRecord
from domain.delivery import Delivery
from domain.egress.workspace import EGRESS
from domain.policy import KNOWN_MALWARE, RULE_CHANGED, Policy
from domain.run import Run, reader_key
from domain.session import ConsoleSession
from domain.specs import deny_key
from domain.token import Token, name_key

_INSERT = {
    "workspace": "INSERT INTO {workspaces} VALUES (%s, %s, %s)",
    "change": "INSERT INTO {changes} VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
    "change_token": "INSERT INTO {change_tokens} VALUES (%s, %s, %s)",
    "decision": "INSERT INTO {decisions} VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
    "token": "INSERT INTO {tokens} VALUES (%s, %s, %s, %s, %s, %s, NULL, NULL, %s)",
    "token_name": "INSERT INTO {token_names} VALUES (%s, %s)",
    "revoke": "UPDATE {tokens} SET revoked_at = %s, revoked_by = %s WHERE id = %s",
    "run": "INSERT INTO {runs} VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
    "run_decision": "INSERT INTO {run_decisions} VALUES (%s, %s, %s, %s)",
    "delivery": "INSERT INTO {deliveries} VALUES (%s, %s, %s, %s, %s, %s, %s)",
    "session": "INSERT INTO {console_sessions} VALUES (%s, %s, %s, %s, %s, NULL)",
    "session_end": "UPDATE {console_sessions} SET ended_at = %s WHERE id = %s",
}


def read_model_statements(dialect: Dialect, saved_events, workspaces: dict) -> list:
    """Everything to run in the events' own transaction, worked out before anything is sent.

    Every refusal must be the database's (a constraint, the owner and stamp guards): a Python exception here
    would only stop the save before anything is sent."""
    statements = rows_for_events(saved_events, workspaces, dialect)
    statements += access_statements(dialect, saved_events, workspaces)
    for e in saved_events:
        if isinstance(e, Token.Revoked):
            statements += [(dialect.sql(s), (str(e.originator_id),)) for s in _OWNER_GUARD]
    for workspace, stamped in _first_change_stamps(saved_events, workspaces).items():
        check, clear = (dialect.sql(s) for s in _STAMP_GUARD)
        statements += [(check, (workspace, workspace, dialect.ts(stamped))), (clear, (workspace,))]
    return statements


# Revoking the last active owner token would lock a workspace's owners out. The count runs after
# the events' insert, whose lock serialises writers (one writer on SQLite; the events table lock
# on PostgreSQL), and a CHECK constraint turns a count of 0 into the database's own
# IntegrityError, which aborts the whole transaction.
_OWNER_GUARD = (
    "INSERT INTO {owner_guard} (workspace, owners) SELECT t.workspace, (SELECT COUNT(*) FROM {tokens} o "
    "WHERE o.workspace = t.workspace AND o.role = 'owner' AND o.revoked_at IS NULL) "
    "FROM {tokens} t WHERE t.id = %s",
    "DELETE FROM {owner_guard} WHERE workspace = (SELECT workspace FROM {tokens} WHERE id = %s)",
)


# A Save's events are stamped before its transaction takes the events' lock, and a decision
# judged by the version before it may commit in between with a later stamp: "the policy at T"
# (the version stamped last before T) would then contradict what was answered at T. So, under the
# lock, a Save finds no decision of its workspace stamped at or after its first change (a CHECK
# makes a count above 0 the database's IntegrityError: the Save lost a race and is planned
# again, freshly stamped; application.races). A decision stamped before it and recorded after
# it is refused by its own guard, the head having moved (application.store.guards).
_STAMP_GUARD = (
    "INSERT INTO {stamp_guard} (workspace, overtaken) SELECT %s, COUNT(*) FROM {decisions} "
    "WHERE workspace = %s AND at >= %s",
    "DELETE FROM {stamp_guard} WHERE workspace = %s",
)


def _first_change_stamps(events, workspaces: dict) -> dict:
    """Each workspace whose policy these events change, and the first change's stamp."""
    first: dict = {}
    for e in events:
        if isinstance(e, POLICY_CHANGES):
            workspace = workspaces[e.originator_id]
            first[workspace] = min(first.get(workspace, e.timestamp), e.timestamp)
    return first


POLICY_CHANGES = (
    Policy.ModeSwitched,
    Policy.EntryAdded,
    Policy.EntryRemoved,
    Policy.ExceptionGranted,
    Policy.ExceptionRevoked,
    Policy.EgressChanged,
    Policy.RuleChanged,
    Policy.KnownMalwareSet,
)


def rows_for_events(events, workspaces: dict, dialect: Dialect) -> list:
    """The read-model statements for the domain events of one atomic save. `workspaces` maps
    each saved aggregate's id to its workspace (policy events don't repeat it)."""
    return batched(dialect, read_model_rows(events, workspaces, dialect))


def read_model_rows(events, workspaces: dict, dialect: Dialect) -> list[tuple[str, tuple]]:
    """(kind, row) for each read-model row the events make, before batching: what the audit
    chain's read-model check compares a table with."""
    rows = []
    for e in events:
        at = dialect.ts(e.timestamp)
        if isinstance(e, Policy.Created):
            rows.append(("workspace", (e.workspace, at, e.by)))
        elif isinstance(e, POLICY_CHANGES):
            rows.append(("change", _change_row(e, workspaces[e.originator_id], at)))
            if e.by_token:  # None for the CLI and the service, and in changes made before tokens were named
                rows.append(("change_token", (workspaces[e.originator_id], e.originator_version - 1, e.by_token)))
        elif isinstance(e, Decision.Recorded):
            rows.append(("decision", _decision_row(e, at)))
            reader = reader_key(e.record.get("run"), e.record.get("token"))
            if reader:  # made through the package index, during a run or for a token without one
                rows.append(("run_decision", (reader, str(e.originator_id), bool(e.record["allowed"]), at)))
        elif isinstance(e, Token.Issued):
            rows.append(("token", (str(e.originator_id), e.workspace, e.name, e.role, at, e.by, e.secret_digest)))
            rows.append(("token_name", (e.workspace, name_key(e.name))))
        elif isinstance(e, Token.Revoked):
            rows.append(("revoke", (at, e.by, str(e.originator_id))))
        elif isinstance(e, Run.Started):
            rows.append(("run", _run_row(e, at, dialect)))
        elif isinstance(e, Delivery.Recorded):
            rows.append(("delivery", delivery_row(e, at)))
        elif isinstance(e, ConsoleSession.Started):
            expires = dialect.ts(_instant(e.expires_at))
            rows.append(("session", (str(e.originator_id), e.workspace, e.token_id, at, expires)))
        elif isinstance(e, ConsoleSession.Ended):
            rows.append(("session_end", (at, str(e.originator_id))))
    return rows


# Rows per INSERT on SQLite: 500 decision rows bind 5,500 parameters, within SQLite's 32,766.
BATCH_ROWS = 500
# Kinds that come many to a save (a group commit's decisions, a Save's changes): one INSERT each.
_MANY = frozenset(("decision", "change", "delivery"))


@dataclass(frozen=True)
class ManyRows:
    """One INSERT of many rows of one kind, bound as suits each store: SQLite as statements of
    BATCH_ROWS rows with every value a parameter; PostgreSQL (application.store.postgres) with
    each row bound on its own through its short `values` template (application.store.literals;
    psycopg re-parses a long statement of thousands of placeholders on every call)."""

    head: str  # INSERT INTO t (columns)
    values: str  # (%s, %s, ...)
    rows: tuple[tuple, ...]
    tail: str = ""  # RETURNING ..., ON CONFLICT ...

    @classmethod
    def of(cls, statement: str, rows: tuple[tuple, ...]) -> ManyRows:
        """From a one-row statement, `head VALUES (values) tail`."""
        head, rest = statement.split(" VALUES ", 1)
        values, tail = rest.split(")", 1)
        return cls(head, values + ")", rows, tail)

    def statements(self) -> list[tuple[str, tuple]]:
        """SQLite: statements of at most BATCH_ROWS rows, every value a parameter."""
        chunks = [self.rows[i : i + BATCH_ROWS] for i in range(0, len(self.rows), BATCH_ROWS)]
        return [(self._text([self.values] * len(c)), tuple(v for r in c for v in r)) for c in chunks]

    def bound(self, bind: Bind) -> str:
        """PostgreSQL: one statement, each row bound on its own by `bind(values, row)`."""
        return self._text([bind(self.values, row) for row in self.rows])

    def _text(self, rows: list[str]) -> str:
        return f"{self.head} VALUES {', '.join(rows)}{self.tail}"

    def run(self, cursor, postgres: bool) -> None:
        """Sent on a store's own cursor, in its transaction, as suits the store (above)."""
        if not postgres:
            for text, params in self.statements():
                cursor.execute(text, params)
            return
        from psycopg import ClientCursor  # only a PostgreSQL cursor comes here

        cursor.execute(self.bound(binder(ClientCursor(cursor.connection))))  # values bound: no parameters


def batched(dialect: Dialect, rows: list[tuple[str, tuple]]) -> list:
    """Consecutive rows of one kind become one INSERT (`ManyRows`): a group commit's decisions
    are one statement beside their events, not one statement per decision. Order is kept (a
    token issued and revoked in one save stays in that order)."""
    statements = []
    for kind, group in itertools.groupby(rows, key=lambda row: row[0]):
        params = [p for _, p in group]
        if kind in _MANY:
            statements.append(ManyRows.of(dialect.sql(_INSERT[kind]), tuple(params)))
        else:  # workspaces, tokens, revocations: rare, one statement each
            statements += [(dialect.sql(_INSERT[kind]), p) for p in params]
    return statements


def _change_row(e, workspace: str, at) -> tuple:
    change_type, list_name, name, mode = _describe_change(e)
    language = EGRESS if isinstance(e, Policy.EgressChanged) else getattr(e, "language", KNOWN_MALWARE)
    # Exception rows have no name key: the list lookups of point-in-time answers skip them.
    # Egress hosts are stored normalised, so a host is its own key.
    key = (name if language == EGRESS else deny_key(language, name)) if name and list_name else None
    return (workspace, e.originator_version - 1, at, e.by, e.note, change_type, language, list_name, name, key, mode)


def _describe_change(e) -> tuple[str, str | None, str | None, str | None]:
    if isinstance(e, Policy.EgressChanged):
        return e.change, None if e.change == "mode-switched" else "allow", e.host, e.mode
    if isinstance(e, Policy.ModeSwitched):
        return "mode-switched", None, None, e.mode
    if isinstance(e, Policy.KnownMalwareSet):  # switched like a mode, for every language at once
        return "mode-switched", None, None, e.action
    if isinstance(e, Policy.RuleChanged):  # the rule, and its action (None: turned off)
        return RULE_CHANGED, None, e.rule, e.value["action"] if e.value else None
    if isinstance(e, (Policy.ExceptionGranted, Policy.ExceptionRevoked)):
        kind = "exception-granted" if isinstance(e, Policy.ExceptionGranted) else "exception-revoked"
        return kind, None, e.name, None
    kind = "entry-added" if isinstance(e, Policy.EntryAdded) else "entry-removed"
    return kind, e.list_name, e.name, None


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _run_row(e, at, dialect: Dialect) -> tuple:
    expires = dialect.ts(_instant(e.expires_at))
    context = json.dumps(e.context, sort_keys=True)
    return (str(e.originator_id), e.workspace, at, expires, e.started_by, e.by, context, e.secret_digest)


def delivery_row(e, at) -> tuple:
    """A delivery's row, as the projection writes it and the audit chain's check expects it."""
    return (str(e.originator_id), e.decision, e.workspace, at, e.status, e.size, e.sha256)


def _decision_row(e, at) -> tuple:
    return (str(e.originator_id), e.workspace, at, *DecisionRecord.columns(e.record), sorted_text(e.record))
