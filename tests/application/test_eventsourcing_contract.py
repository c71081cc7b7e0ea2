"""The eventsourcing library's private hooks this project relies on, each as it is used.

pyproject.toml pins the library to one minor version; an upgrade that changes one of these
fails here first, naming the hook and the module that relies on it, before the behaviour that
depends on it breaks somewhere less clear. Read the library's new code of that hook, adapt the
project's use, then change the expected shape here.
"""

from __future__ import annotations

import inspect

import pytest
from eventsourcing.application import Application, ProcessingEvent, Repository
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import JSONTranscoder
from eventsourcing.postgres import PostgresApplicationRecorder
from eventsourcing.sqlite import SQLiteApplicationRecorder

from application import Governance, store_env

# (class, hook, its parameters, who relies on it and how)
HOOKS = [
    (Application, "_record", ["self", "processing_event"], "application/governance.py overrides and calls it"),
    (Application, "_notify", ["self", "recordings"], "application/governance.py calls it (record_events)"),
    (Application, "_take_snapshots", ["self", "processing_event"], "application/governance.py overrides it"),
    (
        Repository,
        "_reconstruct_aggregate",
        ["self", "aggregate_id", "version", "projector_func"],
        "application/chain/snapshots.py (SealedRepository) overrides it",
    ),
    (
        SQLiteApplicationRecorder,
        "_insert_events",
        ["self", "c", "stored_events", "_"],
        "application/store/sqlite.py overrides it to write the read models in the same transaction",
    ),
    (
        PostgresApplicationRecorder,
        "_fetch_ids_after_insert_events",
        ["self", "curs", "stored_events", "_"],
        "application/store/postgres.py calls it after its one-message insert",
    ),
    (
        PostgresApplicationRecorder,
        "insert_events",
        ["self", "stored_events", "kwargs"],
        "application/store/postgres.py replaces it (lock, events, guards, read models in one message)",
    ),
    (
        Aggregate,
        "_create",
        ["event_class", "id", "kwargs"],
        "domain/decision.py and domain/advisories.py create aggregates with ids worked out by the caller",
    ),
    (
        JSONTranscoder,
        "_encode_obj",
        ["self", "o"],
        "application/store/jsontext.py hands orjson the transcoder's tagging of instants",
    ),
]


@pytest.mark.parametrize(("cls", "hook", "parameters", "used"), HOOKS, ids=[f"{c.__name__}.{h}" for c, h, *_ in HOOKS])
def test_each_private_hook_is_there_with_the_signature_used(cls, hook, parameters, used):
    where = f"eventsourcing's {cls.__name__}.{hook}"
    assert hasattr(cls, hook), f"{where} is gone; {used}"
    found = list(inspect.signature(getattr(cls, hook)).parameters)
    assert found == parameters, f"{where} now takes {found}, not {parameters}; {used}"


def test_a_processing_event_carries_what_the_save_hooks_read_and_write():
    """application/governance.py reads `events` and `aggregates`, and passes `saved_kwargs` on
    to the recorder (the read models' rows, the guards)."""
    processing_event = ProcessingEvent()
    for attribute, kind in (("events", list), ("aggregates", dict), ("saved_kwargs", dict)):
        assert isinstance(getattr(processing_event, attribute, None), kind), (
            f"eventsourcing's ProcessingEvent.{attribute} is no longer a {kind.__name__}; application/governance.py "
            "relies on it"
        )


@pytest.mark.postgres
def test_the_postgres_lock_statements_are_those_the_recorder_replaces(postgres_schema_url):
    """application/store/postgres.py replaces the library's `lock_table_statements` (its lock
    timeout, the table lock) with one statement and leaves out its NOTIFY, which only the
    library's subscriptions listen for: if the library takes more or other steps before an
    insert, the replacement would silently skip them; and a subscription on this recorder,
    which would never be woken, is refused."""
    app = Governance(env=store_env(postgres_schema_url))
    try:
        library = PostgresApplicationRecorder(app.recorder.datastore, events_table_name="stored_events")
        statements = [s.as_string(None) for s in library.lock_table_statements]
        assert len(statements) == 2 and "lock_timeout" in statements[0] and "LOCK TABLE" in statements[1], (
            f"eventsourcing's lock_table_statements are now {statements}; application/store/postgres.py replaces them"
        )
        steps = inspect.getsource(PostgresApplicationRecorder._insert_stored_events)
        assert "_lock_table" in steps and "_notify_channel" in steps, (
            "the library's steps before an insert are no longer the lock and the NOTIFY it replaces"
        )
        with pytest.raises(NotImplementedError, match="NOTIFY"):
            app.recorder.subscribe()
    finally:
        app.close()
