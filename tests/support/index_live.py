"""Fixture overrides the index test modules import (`from tests.support.index_live import ...`):
`live` pointed at the fixture upstreams, and, for tests whose subject does not touch the store,
SQLite only (the clients behave the same on either store; the store's side runs on both)."""

from __future__ import annotations

import pytest

from tests.support.index_fixtures import index_env


@pytest.fixture(name="live_env")
def index_live_env(pypi_upstream, npm_upstream) -> dict:
    return index_env(pypi_upstream, npm_upstream)


@pytest.fixture(name="database_url")
def sqlite_store(tmp_path) -> str:
    return f"sqlite:///{tmp_path}/store.sqlite"
