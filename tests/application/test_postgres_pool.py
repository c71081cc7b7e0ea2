"""The tests' PostgreSQL schemas, reused between tests (tests/support/postgres_pool.py): a schema
goes back to the pool empty and as primed, and one whose shape a test changed is dropped."""

from __future__ import annotations

import psycopg
import pytest

from application import Governance, store_env
from tests.support.postgres_pool import schema_of

CHANGES = [
    "ALTER TABLE {s}.rcp_decisions RENAME TO rcp_gone",
    "DROP INDEX {s}.rcp_decisions_not_found",
    "ALTER TABLE {s}.rcp_runs ADD COLUMN added integer",
    "ALTER TABLE {s}.rcp_runs ALTER COLUMN workspace DROP NOT NULL",
    "UPDATE {s}.rcp_read_model SET version = 1",
]


@pytest.mark.postgres
def test_a_schema_given_back_is_handed_on_holding_no_rows_and_counting_from_one(postgres_schemas):
    url = postgres_schemas.take()
    app = Governance(env=store_env(url))
    app.create_workspace("acme", by="founder")
    app.close()
    postgres_schemas.give_back(url)
    assert postgres_schemas.take() == url  # the same schema, to the next test
    with psycopg.connect(url.split("?")[0]) as conn:
        assert conn.execute(f'SELECT count(*) FROM "{schema_of(url)}".governance_events').fetchone()[0] == 0
    app = Governance(env=store_env(url))  # a new store: its first workspace's events number from 1
    app.create_workspace("acme", by="founder")
    with psycopg.connect(url.split("?")[0]) as conn:
        first = conn.execute(f'SELECT min(notification_id) FROM "{schema_of(url)}".governance_events').fetchone()[0]
    app.close()
    assert first == 1
    postgres_schemas.give_back(url)


@pytest.mark.postgres
@pytest.mark.parametrize("change", CHANGES)
def test_a_schema_whose_shape_a_test_changed_is_dropped(postgres_schemas, change):
    url = postgres_schemas.take()
    with psycopg.connect(url.split("?")[0], autocommit=True) as conn:
        conn.execute(change.format(s=f'"{schema_of(url)}"'))
    postgres_schemas.give_back(url)
    another = postgres_schemas.take()
    postgres_schemas.give_back(another)
    assert another != url
    with psycopg.connect(url.split("?")[0]) as conn:
        found = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema_of(url),)).fetchone()
    assert found is None
