"""Opening one new PostgreSQL store from several processes at once (CLI commands beside `serve`,
two instances starting): each makes the tables it finds missing, and they take turns."""

from __future__ import annotations

import threading

import pytest

from application import Governance, store_env

OPENERS = 8


@pytest.mark.postgres
def test_openers_of_one_new_store_at_once_take_turns_making_its_tables(postgres_schema_url):
    """Eight at once failed with 'tuple concurrently updated' (PostgreSQL's catalog rows changed
    by two transactions' DDL), up to four of them each time."""
    failures: list[BaseException] = []
    start = threading.Barrier(OPENERS)

    def open_store() -> None:
        start.wait()
        try:
            Governance(env=store_env(postgres_schema_url)).close()
        except Exception as error:  # noqa: BLE001 - each failure is the finding
            failures.append(error)

    openers = [threading.Thread(target=open_store) for _ in range(OPENERS)]
    for opener in openers:
        opener.start()
    for opener in openers:
        opener.join()
    assert failures == []
    app = Governance(env=store_env(postgres_schema_url))
    try:
        app.create_workspace("acme", by="founder")  # the store they made works
    finally:
        app.close()
