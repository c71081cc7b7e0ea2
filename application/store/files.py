"""Private files: the SQLite store holds token digests and the whole audit log, so its database
and journals are 0600 and the directories made for it (and the service's data directory) 0700,
whatever the process umask."""

from __future__ import annotations

import os
from pathlib import Path

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
JOURNALS = ("-wal", "-shm", "-journal")  # SQLite gives these the database file's mode when it makes them
WRITERS = "-writers"  # beside the store: the write turn its processes take (application.store.sqlite)


def make_private_dirs(path: Path) -> list[Path]:
    """Create the missing directories of `path`, each 0700; existing ones are left alone (the
    store may live in /tmp or a home directory that is not ours to change). The ones it made."""
    missing = []
    while not path.exists():
        missing.append(path)
        path = path.parent
    for directory in reversed(missing):
        directory.mkdir(mode=PRIVATE_DIR, exist_ok=True)
        os.chmod(directory, PRIVATE_DIR)  # mkdir's mode is filtered by the umask
    return missing


def tighten_dir(path: str | Path) -> None:
    """Make the service's own data directory 0700 (never the working or the root directory)."""
    path = Path(path)
    if path.resolve() in (Path.cwd().resolve(), Path(path.anchor or "/")):
        return
    make_private_dirs(path)
    if os.stat(path).st_mode & 0o077:
        os.chmod(path, PRIVATE_DIR)


def make_private_store(path: str) -> None:
    """Create the SQLite file 0600 before the library opens it, and tighten an existing one."""
    store = Path(path)
    make_private_dirs(store.parent)
    os.close(os.open(store, os.O_CREAT | os.O_WRONLY, PRIVATE_FILE))
    for file in (store, *(store.with_name(store.name + suffix) for suffix in JOURNALS)):
        if file.exists() and os.stat(file).st_mode & 0o077:
            os.chmod(file, PRIVATE_FILE)
