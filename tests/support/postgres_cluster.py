"""A throwaway PostgreSQL cluster that a test starts, stops and starts again itself.

`initdb` into a fresh temporary directory, `pg_ctl` on 127.0.0.1 and a free port, trust auth,
no fsync (nothing here must survive the machine). As root (CI) the tools run as the `postgres`
user, since PostgreSQL refuses to run as root. Without the tools the caller skips loudly, or
fails under CI=true.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile


def server_bin_dir() -> str | None:
    """Debian keeps the server tools in /usr/lib/postgresql/<major>/bin; else look on PATH."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]))
    if found:
        return os.path.dirname(found[-1])
    on_path = shutil.which("pg_ctl")
    return os.path.dirname(on_path) if on_path and shutil.which("initdb") else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Unavailable(Exception):
    """This machine cannot run a throwaway cluster (the reason says why)."""


class Cluster:
    def __init__(self):
        self.bin = server_bin_dir()
        if self.bin is None:
            raise Unavailable("no pg_ctl/initdb (Debian: apt-get install postgresql)")
        self.owner = _owner()
        # Not under pytest's tmp_path: its parents are private to root, and the server runs as postgres.
        self.root = tempfile.mkdtemp(prefix="rcp-pg-")
        self.data, self.port = os.path.join(self.root, "data"), free_port()
        if self.owner is not None:
            os.chown(self.root, self.owner.pw_uid, self.owner.pw_gid)
        self._tool("initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        log = os.path.join(self.root, "server.log")
        self._tool("pg_ctl", "-D", self.data, "-l", log, "-w", "-t", "60", "-o", options, "start")

    def stop(self) -> None:
        self._tool("pg_ctl", "-D", self.data, "-m", "fast", "-w", "-t", "60", "stop")

    def destroy(self) -> None:
        try:
            self.stop()
        except Unavailable:
            pass  # already stopped
        shutil.rmtree(self.root, ignore_errors=True)

    def _tool(self, name: str, *args: str) -> None:
        command = [os.path.join(self.bin, name), *args]
        if self.owner is not None:
            command = ["runuser", "-u", self.owner.pw_name, "--", *command]
        try:
            subprocess.run(command, check=True, capture_output=True, timeout=120)
        except subprocess.CalledProcessError as error:
            raise Unavailable(f"{name} failed: {error.stderr.decode(errors='replace')[-500:]}") from None


def _owner():
    """The user the server runs as: `postgres` when we are root, else ourselves (None)."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("postgres")
    except KeyError:
        raise Unavailable("running as root but there is no postgres user to run the server as") from None
