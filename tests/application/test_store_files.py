"""The SQLite store holds token digests and the whole audit log: its data directory is 0700 and
the database (with its WAL and shared-memory files) 0600, whatever the umask (it
was once created world-readable)."""

from __future__ import annotations

import os
import stat

import pytest

from application.governance import Governance
from application.store import store_env


@pytest.fixture(autouse=True)
def permissive_umask():
    previous = os.umask(0o022)  # the usual default, which made the store 0644
    yield
    os.umask(previous)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_new_store_and_the_directories_made_for_it_are_private(tmp_path):
    store = tmp_path / "data" / "deeper" / "store.sqlite"
    app = Governance(env=store_env(f"sqlite:///{store}"))
    try:
        app.create_workspace("acme", by="founder")
        journals = [p for p in store.parent.iterdir() if p.name != store.name]
        assert journals, "WAL mode keeps -wal and -shm files beside the store"
        assert {p.name: mode(p) for p in [store, *journals]} == {p.name: 0o600 for p in [store, *journals]}
        assert mode(tmp_path / "data") == mode(store.parent) == 0o700
    finally:
        app.close()


def test_an_existing_world_readable_store_is_made_private(tmp_path):
    store = tmp_path / "store.sqlite"
    Governance(env=store_env(f"sqlite:///{store}")).close()
    os.chmod(store, 0o644)
    Governance(env=store_env(f"sqlite:///{store}")).close()
    assert mode(store) == 0o600


def test_the_services_data_directory_is_private(tmp_path):
    from interface import create_app
    from interface.services import services

    data = tmp_path / "var"
    data.mkdir(mode=0o755)
    app = create_app(env={"RUNCODE_POLICY_DATA_DIR": str(data)})
    try:
        assert mode(data) == 0o700
        assert mode(data / "runcode-policy.sqlite") == 0o600 and mode(data / "secret_key") == 0o600
    finally:
        services(app).governance.close()
