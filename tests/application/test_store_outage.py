"""A store that did not answer, told apart from one that answered with a refusal, on the real
PostgreSQL: only the first makes the decision writer refuse at once for a moment."""

from __future__ import annotations

import psycopg
import pytest
from eventsourcing.persistence import OperationalError
from psycopg_pool import ConnectionPool

from application.store.outage import did_not_answer, retried
from tests.support.postgres_cluster import free_port
from tests.support.postgres_pool import with_production_pool

pytestmark = pytest.mark.postgres


def raised(call) -> BaseException:
    try:
        call()
    except BaseException as error:  # noqa: BLE001 (the error is what the test looks at)
        return error
    raise AssertionError("nothing was raised")


def wrapped(error: BaseException) -> BaseException:
    """As the library raises it: its own OperationalError, from psycopg's."""
    return raised(lambda: _raise_from(error))


def _raise_from(error: BaseException):
    raise OperationalError(str(error)) from error


def test_a_refused_connection_did_not_answer():
    refused = raised(lambda: psycopg.connect(host="127.0.0.1", port=free_port(), connect_timeout=2))
    assert did_not_answer(refused) and did_not_answer(wrapped(refused))


def test_a_connection_the_server_terminated_did_not_answer(postgres_database):
    with (
        psycopg.connect(postgres_database, autocommit=True) as victim,
        psycopg.connect(postgres_database, autocommit=True) as admin,
    ):
        admin.execute("SELECT pg_terminate_backend(%s)", (victim.info.backend_pid,))
        lost = raised(lambda: victim.execute("SELECT 1"))
    assert did_not_answer(wrapped(lost))


def test_a_refusal_the_server_answered_with_is_not_an_outage(postgres_database):
    with psycopg.connect(postgres_database, autocommit=True) as conn:
        syntax = raised(lambda: conn.execute("SELEC 1"))
        zero = raised(lambda: conn.execute("SELECT 1 / 0"))
    assert syntax.sqlstate == "42601" and zero.sqlstate == "22012"
    assert not did_not_answer(wrapped(syntax)) and not did_not_answer(wrapped(zero))
    assert not did_not_answer(ValueError("not a store's error")) and not did_not_answer(None)


def as_the_library_raises(call) -> None:
    try:
        call()
    except psycopg.OperationalError as error:
        raise OperationalError(str(error)) from error


def test_a_pool_with_no_connection_to_give_is_not_waited_for_again():
    attempts = []
    with ConnectionPool(f"host=127.0.0.1 port={free_port()}", min_size=1, timeout=0.3) as pool:

        @retried(max_attempts=5, wait=0)
        def take():
            attempts.append("taken")
            as_the_library_raises(lambda: pool.getconn().close())

        with pytest.raises(OperationalError):
            take()
    assert attempts == ["taken"]


def test_a_lost_connection_is_tried_again_on_another(postgres_database):
    attempts = []
    with (
        psycopg.connect(postgres_database, autocommit=True) as lost,
        psycopg.connect(postgres_database, autocommit=True) as fresh,
    ):
        fresh.execute("SELECT pg_terminate_backend(%s)", (lost.info.backend_pid,))

        @retried(max_attempts=5, wait=0)
        def select():
            conn = lost if not attempts else fresh
            attempts.append(conn)
            as_the_library_raises(lambda: conn.execute("SELECT 1"))

        select()
    assert attempts == [lost, fresh]


def test_after_a_restart_killed_every_pooled_connection_one_request_fails_not_one_per_connection(
    primed_schema_url, postgres_database, monkeypatch
):
    """A server restart kills every idle connection at once: the first request to meet one
    fails (the store did not answer), the pool's other idle ones are checked then, and the next
    requests are answered (each had failed in turn, an idle worker's 503s lasting a minute)."""
    import time
    import uuid

    from application.governance import Governance
    from application.store import store_env

    name = f"rcp-restart-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("PGAPPNAME", name)  # libpq names every connection the pool makes
    app = Governance(env=store_env(with_production_pool(primed_schema_url)))  # several idle connections to kill
    try:
        app.create_workspace("acme", by="founder")
        pool = app.recorder.datastore.pool
        deadline = time.monotonic() + 10
        while pool.get_stats()["pool_available"] < pool.min_size and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pool.get_stats()["pool_available"] >= 4, pool.get_stats()
        with psycopg.connect(postgres_database, autocommit=True, application_name="rcp-admin") as admin:
            killed = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s", (name,)
            ).fetchall()
        assert len(killed) >= 4
        failures = 0
        for _ in range(6):
            try:
                app.readmodel.head_version("acme")
            except OperationalError:
                failures += 1
        assert failures <= 1
    finally:
        app.close()
