"""Read models rebuilt from the events when a store's were made by older code.

The read-model tables are written with their events (`application.store.projection`), so each
row has the shape the code that saved its event gave it, and a table added later is empty for
the events saved before it. When the tables or the projection change, `READ_MODEL_VERSION` goes
up by one. Opening a store with table creation on compares it with the store's: a store of an
older version (1: every store made before the version was kept) has its derived tables dropped
and filled again from every stored event, in order, in one transaction, by the projection that
writes them live (console sessions too: signing in and out are events), and the decision counts
from the events sealed so far (the sealer counts the rest as it seals them). The audit chain seals
the events themselves and is not touched. Stored snapshots are dropped with the read models:
they are caches, those taken before snapshots were sealed would never be used again (an unsealed
snapshot is refused and raises an alarm), and the next Saves take sealed ones.
"""

from __future__ import annotations

from itertools import groupby
from uuid import UUID

from eventsourcing.persistence import StoredEvent

from application.store.counts import count_statements
from application.store.projection import ManyRows, read_model_statements
from application.store.schema import DDL, TABLES
from domain.decision import Decision
from domain.errors import ConflictError

# 3: impact_versions, and the changes rows of rules beyond names; 4: console sessions are a read
# model of their events; 5: decisions' records in their version 2 shape (`params`, no `message`);
# 6: impact_versions keeps allowed and refused downloads apart; 7: the counts are of the sealed
# decisions, written by the sealer; 8: exceptions say whether they lift deny entries (lifts_deny);
# 9: the decision counts and impact's rollups keep each decision's kind (a direct reference is
# judged apart from its name's registry installs)
READ_MODEL_VERSION = 9
DERIVED = tuple(t for t in TABLES if t != "read_model")
BATCH = 1000


def upgrade_read_models(recorder, mapper, snapshots_table: str | None = None) -> bool:
    """Bring the store's read models to this code's version; True if they were rebuilt.
    `snapshots_table`: the library's table of stored snapshots, in the same database."""
    dialect = recorder.dialect
    events = dialect.library_table(recorder.events_table_name)
    with recorder.datastore.transaction(commit=True) as curs:
        # Taken first, so a second process opening the store waits here, then finds it done.
        lock = "LOCK TABLE {read_model} IN EXCLUSIVE MODE" if dialect.schema else "DELETE FROM {read_model} WHERE 0"
        curs.execute(dialect.sql(lock))
        curs.execute(dialect.sql("SELECT version FROM {read_model}"))
        found = [row["version"] for row in curs.fetchall()]
        if found == [READ_MODEL_VERSION]:
            return False
        if any(version > READ_MODEL_VERSION for version in found):  # never rebuilt back: newer code runs on it
            raise OtherReadModels(
                f"the store's read models are version {max(found)}, newer than this code's ({READ_MODEL_VERSION}): "
                "nothing was changed; run the release that wrote the store, or a newer one"
            )
        curs.execute(f"SELECT 1 FROM {events} LIMIT 1")
        rebuild = curs.fetchone() is not None
        # Made again even when empty: a table whose columns changed is not altered by its DDL.
        for table in DERIVED:
            curs.execute(f"DROP TABLE IF EXISTS {dialect.table(table)}")
        for statement in DDL:
            curs.execute(dialect.sql(statement))
        if rebuild:
            _replay(curs, dialect, events, mapper)
            if snapshots_table is not None:
                curs.execute(f"DELETE FROM {dialect.library_table(snapshots_table)}")
        curs.execute(dialect.sql("DELETE FROM {read_model}"))
        curs.execute(dialect.sql("INSERT INTO {read_model} (version) VALUES (%s)"), (READ_MODEL_VERSION,))
    return rebuild


class OtherReadModels(ConflictError):
    title = "Read models of another version"


def require_current(recorder) -> None:
    """Refuse (OtherReadModels) unless the store's read models are this code's version: what
    holds them against the events must not rebuild them first (`upgrade_read_models` drops the
    tables it would check, and the snapshots), nor compare another version's rows with this
    code's projection."""
    found = [row["version"] for row in recorder.fetch(recorder.dialect.sql("SELECT version FROM {read_model}"))]
    if found != [READ_MODEL_VERSION]:
        said = ", ".join(map(str, found)) or "none"
        raise OtherReadModels(
            f"the store's read models are version {said}, this code's are {READ_MODEL_VERSION}: nothing was "
            "verified (rebuilding them first would rewrite the tables verification checks); verify with the "
            "release that wrote the store, or upgrade it by starting the service on it"
        )


def _replay(curs, dialect, events: str, mapper) -> None:
    """Every stored event through the projection, in order: a run of decisions as the live
    projection writes a batch of them (one multi-row insert a table: a statement per decision
    took minutes on PostgreSQL for a hundred thousand), anything else one at a time as
    `rebuilt` checks them (a Save's guards must see only what was recorded before it)."""
    workspaces: dict[UUID, str] = {}  # policy changes name no workspace: their Policy's creation does
    after, position = 0, "notification_id" if dialect.schema else "rowid"  # as each store numbers events
    curs.execute(f"SELECT notification_id FROM {dialect.table('chain_position')}")
    sealed = max([row["notification_id"] for row in curs.fetchall()], default=0)
    select = dialect.sql(
        f"SELECT {position} AS position, originator_id, originator_version, topic, state FROM {events} "
        f"WHERE {position} > %s ORDER BY {position} LIMIT {BATCH}"
    )
    while True:
        curs.execute(select, (after,))
        rows = curs.fetchall()
        if not rows:
            return
        read = []
        for row in rows:
            stored = StoredEvent(UUID(str(row["originator_id"])), row["originator_version"], row["topic"], row["state"])
            event = mapper.to_domain_event(stored)
            if isinstance(getattr(event, "workspace", None), str):
                workspaces.setdefault(event.originator_id, event.workspace)
            read.append((event, row["position"] <= sealed))
        for decisions, run in groupby(read, key=lambda pair: isinstance(pair[0], Decision.Recorded)):
            run = list(run)
            if decisions:
                items = read_model_statements(dialect, [e for e, _ in run], workspaces)
                for item in items + count_statements(dialect, [e for e, counted in run if counted]):
                    if isinstance(item, ManyRows):
                        item.run(curs, dialect.schema is not None)
                    else:
                        curs.execute(*item)
                continue
            for event, counted in run:
                for statement, params in replayed(dialect, event, workspaces, counted):
                    curs.execute(statement, params)
        after = rows[-1]["position"]


def replayed(dialect, event, workspaces: dict, sealed: bool) -> list[tuple[str, tuple]]:
    """What the projections write for one stored event replayed alone, as (statement, params):
    its read-model rows, and its counts if it is `sealed` (the sealer counts the rest)."""
    items = read_model_statements(dialect, [event], workspaces)
    items += count_statements(dialect, [event]) if sealed and isinstance(event, Decision.Recorded) else []
    return [s for item in items for s in (item.statements() if isinstance(item, ManyRows) else (item,))]
