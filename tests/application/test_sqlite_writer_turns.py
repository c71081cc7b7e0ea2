"""Processes writing one SQLite store take turns through its `-writers` lock file: a write waits
while another process holds the turn and goes through the moment it is let go; a write that
fails lets the turn go too. The other process here is a real one, holding the lock file."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading

import pytest

from application.governance import Governance
from application.store import store_env
from domain.errors import ConflictError

HOLDER = """
import fcntl, os, sys
descriptor = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(descriptor, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()  # until the test closes it
"""
GENEROUS = 30  # a bound on waiting for threads, not a measure of speed


@pytest.fixture
def store(tmp_path):
    app = Governance(env=store_env(f"sqlite:///{tmp_path / 'store.sqlite'}"))
    yield app, tmp_path / "store.sqlite-writers"
    app.close()


def test_a_write_waits_for_the_turn_another_process_holds_and_goes_through_once_it_is_let_go(store):
    app, writers = store
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(writers)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline() == "held\n"
        done = threading.Event()
        writing = threading.Thread(target=lambda: (app.create_workspace("acme", by="founder"), done.set()))
        writing.start()
        assert not done.wait(0.5), "the write went through while another process held the turn"
        holder.stdin.close()  # the holder exits: its turn is let go with its descriptor
        writing.join(GENEROUS)
        assert done.is_set()
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
    assert app.readmodel.has_workspaces()


def test_a_write_that_fails_lets_the_turn_go(store):
    app, writers = store
    app.create_workspace("acme", by="founder")
    with pytest.raises(ConflictError):
        app.create_workspace("acme", by="someone else")
    descriptor = os.open(writers, os.O_RDWR)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError if it were still held
    finally:
        os.close(descriptor)


def test_where_no_lock_file_can_be_made_writes_go_through_on_sqlite_s_own_lock(tmp_path):
    (tmp_path / "store.sqlite-writers").mkdir()  # what a read-only directory would refuse: no file there
    app = Governance(env=store_env(f"sqlite:///{tmp_path / 'store.sqlite'}"))
    try:
        app.create_workspace("acme", by="founder")
        assert app.readmodel.has_workspaces()
    finally:
        app.close()
