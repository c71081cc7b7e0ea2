"""A process opening a PostgreSQL store that another process serves (the command line beside
`serve`) runs the tables' DDL in one transaction: its index statements lock tables the running
sealer writes, so a statement in it that waited for the sealer's own transaction deadlocked the
two ("deadlock detected", the CLI refused). Seeding the sealer's position waited so: the row the
sealer holds was inserted again with ON CONFLICT, which waits for the holder to end."""

from __future__ import annotations

import threading

import psycopg

from application import Governance, store_env
from tests.support.postgres_pool import split_schema


def test_a_store_opens_while_a_sealer_holds_its_position(postgres_schema_url):
    Governance(env=store_env(postgres_schema_url)).close()  # the store exists, its position seeded
    base, schema = split_schema(postgres_schema_url)
    with psycopg.connect(base) as sealer:  # a sealing round, mid-transaction
        sealer.execute(f'UPDATE "{schema}".rcp_chain_position SET notification_id = notification_id')
        opened = []
        opening = threading.Thread(target=lambda: opened.append(Governance(env=store_env(postgres_schema_url))))
        opening.start()
        opening.join(timeout=60)  # it waited until the round ended, which here never comes
        finished = not opening.is_alive()
        sealer.rollback()
    opening.join()
    for governance in opened:
        governance.close()
    assert finished, "opening the store waited for the sealer's transaction"
