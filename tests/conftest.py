"""Fixtures that run the same tests on SQLite and on a real PostgreSQL server.

PostgreSQL comes from RUNCODE_POLICY_TEST_POSTGRES_URL (default: the local server on
127.0.0.1:5432, database runcode_policy_test, created if missing). Each test gets its own schema:
one with a new store's tables, emptied afterwards for the worker's next test, or an empty one.
Without a server the PostgreSQL tests skip loudly, except under CI=true, where they fail: CI must
never pass with them skipped.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from hypothesis import settings

from application import Governance, store_env

# PYTHONDONTWRITEBYTECODE (this machine's sessions set it) also stops pytest from keeping the test
# modules it rewrote for assert: every worker of every run rewrote and compiled all of them again at
# collection (about 6 s of CPU a worker, four workers). The suite's own processes write bytecode
# (into __pycache__, ignored by git; pytest's files are tagged with its version); the processes the
# tests start still see the variable.
sys.dont_write_bytecode = False

# The package index's fixture upstreams; pypiserver and verdaccio as real third-party upstreams.
pytest_plugins = ("tests.support.index_fixtures", "tests.support.third_party")

DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/runcode_policy_test"


# No deadlines: speed is measured by bench/, never by a test that fails when the machine is busy.
settings.register_profile("runcode-policy", deadline=None)
settings.load_profile("runcode-policy")


@pytest.fixture(autouse=True)
def _outside_the_working_tree(tmp_path, monkeypatch):
    """Every test runs in its own directory, so a default `./var/` never lands in the checkout."""
    monkeypatch.chdir(tmp_path)


def postgres_url() -> str:
    return os.environ.get("RUNCODE_POLICY_TEST_POSTGRES_URL", DEFAULT_PG)


def _admin_connect(url: str):
    import psycopg

    parts = urlsplit(url)
    admin = urlunsplit(parts._replace(path="/postgres"))
    return psycopg.connect(admin, autocommit=True, connect_timeout=3), parts.path.lstrip("/")


@pytest.fixture(scope="session")
def postgres_database() -> str:
    """The test database's URL, created once per run; skip (or fail under CI) without a server."""
    import psycopg

    url = postgres_url()
    try:
        conn, dbname = _admin_connect(url)
    except psycopg.OperationalError as error:
        message = f"PostgreSQL is not reachable at {url}: {error}"
        if os.environ.get("CI"):
            pytest.fail(f"{message} (CI must run the PostgreSQL tests)", pytrace=False)
        pytest.skip(f"SKIPPING POSTGRESQL TESTS: {message}")
    with conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (dbname,)).fetchone()
        if not exists:
            try:
                conn.execute(f'CREATE DATABASE "{dbname}"')
            except psycopg.errors.UniqueViolation:  # another test worker created it first
                pass
    return url


@pytest.fixture(scope="session")
def postgres_schemas(postgres_database):
    """This worker's schemas: empty ones, and ones with a store's tables, emptied between tests
    (tests.support.postgres_pool)."""
    from tests.support.postgres_pool import SchemaPool

    pool = SchemaPool(postgres_database)
    yield pool
    pool.close()


@pytest.fixture
def postgres_schema_url(postgres_schemas):
    """A URL whose schema is private to this test and empty; the schema is dropped afterwards."""
    url = postgres_schemas.fresh()
    yield url
    postgres_schemas.drop(url)


# The stores this worker's tests were handed with their tables made (a primed schema, a copied
# SQLite store): `open_app` opens them as a worker of `serve` does, without the DDL's ~60
# statements (10 ms of PostgreSQL's CPU an open); any other store it opens makes its tables.
PRIMED: set[str] = set()


@pytest.fixture
def primed_schema_url(postgres_schemas):
    """A URL whose schema is private to this test and holds a new store's tables, no rows."""
    url = postgres_schemas.take()
    PRIMED.add(url)
    yield url
    PRIMED.discard(url)
    postgres_schemas.give_back(url)


@pytest.fixture(scope="session")
def sqlite_store_template(tmp_path_factory) -> Path:
    """A new SQLite store's file, made once per worker: a copy of it is what opening a new file
    makes (its tables and their first rows; nothing in it names the store), without the DDL's
    statements and fsyncs, which every SQLite test paid anew."""
    folder = tmp_path_factory.mktemp("sqlite-template")
    Governance(env=store_env(f"sqlite:///{folder}/store.sqlite")).close()
    return folder / "store.sqlite"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request, tmp_path):
    if request.param != "sqlite":
        yield request.getfixturevalue("primed_schema_url")
        return
    shutil.copy(request.getfixturevalue("sqlite_store_template"), tmp_path / "store.sqlite")  # its mode too
    url = f"sqlite:///{tmp_path}/store.sqlite"
    PRIMED.add(url)
    yield url
    PRIMED.discard(url)


@pytest.fixture
def open_app(database_url):
    """Opens applications on this test's store (several, to test restarts and other processes)."""
    opened = []

    def _open(**options) -> Governance:
        app = Governance(env=store_env(database_url, create_table=database_url not in PRIMED), **options)
        opened.append(app)
        return app

    yield _open
    for app in opened:
        app.close()


@pytest.fixture
def clock():
    """The clock of `app` (and so of `live`): the real time until a test steps it forward."""
    from tests.support.clock import SteppableClock

    return SteppableClock()


@pytest.fixture
def app(open_app, clock) -> Governance:
    return open_app(clock=clock)


@pytest.fixture
def workspace(app) -> str:
    app.create_workspace("acme", by="founder")
    return "acme"


@pytest.fixture
def live_env() -> dict:
    """Extra settings for the `live` service; a test module overrides it (e.g. index upstreams)."""
    return {}


@pytest.fixture
def live(app, tmp_path, live_env):
    """The real service on a loopback port, with workspace `acme` and a token per role."""
    from interface import create_app
    from tests.support.http_client import LiveServer

    owner = app.create_workspace("acme", by="founder")["token"]
    tokens = {"owner": owner}
    for role in ("admin", "auditor", "sandbox"):
        tokens[role] = app.issue_token("acme", f"{role}-token", role, by="founder")["token"]
    app.create_workspace("other", by="someone")
    tokens["other-workspace"] = app.issue_token("other", "intruder", "owner", by="someone")["token"]
    server = LiveServer(create_app(env={"RUNCODE_POLICY_DATA_DIR": str(tmp_path), **live_env}, governance=app))
    server.tokens = tokens
    yield server
    server.close()


def pytest_report_header(config) -> list[str]:
    from tests.support.optional import report

    return report()
