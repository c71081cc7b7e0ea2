"""The servers a run drives: the real service (the production `serve` command) on PostgreSQL
and on SQLite, and the ceiling app under the same server configuration.

Each is a process started here on a free 127.0.0.1 port, awaited on /healthz, and stopped with
SIGTERM (a graceful stop) at the end of the run, whatever happens. Its stderr goes to a file in
the run's work directory: its tail is shown when the server does not start, dies, or a load on it
fails, and whatever it wrote besides its stop line is shown once it stopped (a worker's panic).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from bench.cpu import process_tree

ROOT = Path(__file__).resolve().parents[1]
START_SECONDS = 60
TAIL_LINES = 40
QUIET_STOP = "runcode-policy stopped"  # what a server says on stderr when all went well
# Servers a figure module brings (key -> start(run) -> (server, governance or None, token)): e.g.
# the service in front of a package upstream. Anything with `.url` and `.stop()` is a server.
STARTERS: dict = {}


@dataclass
class Server:
    name: str
    command: list[str]
    env: dict[str, str]
    directory: str  # where its stderr file goes: the run's work directory
    process: subprocess.Popen | None = None
    url: str = ""
    log: list[str] = field(default_factory=list)
    ready_seconds: float = 0.0  # from spawning the process to its first /healthz 200
    stderr_path: str = ""

    def start(self) -> Server:
        spawned = time.monotonic()
        handle, self.stderr_path = tempfile.mkstemp(dir=self.directory, prefix=f"{self.name}-", suffix=".stderr")
        with os.fdopen(handle, "w") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, *self.command, "--host", "127.0.0.1", "--port", "0"],
                cwd=ROOT,
                env=os.environ | self.env,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_SECONDS
        for line in self.process.stdout:  # the URL it really listens on (it chose a free port)
            self.log.append(line.rstrip())
            if line.startswith("runcode-policy listening on "):
                self.url = line.split()[3]
                break
            if time.monotonic() > deadline:
                break
        if not self.url:
            self.stop()
            raise RuntimeError(f"{self.name} did not start: {self.log}\n{self.stderr_tail()}")
        _await_health(self.url, deadline)
        self.ready_seconds = time.monotonic() - spawned
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:  # the whole tree: serve's workers leave its process group
                for pid in process_tree(self.process.pid):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                self.process.wait(timeout=10)

    def died(self) -> bool:
        return self.process is not None and self.process.poll() is not None

    def stderr_tail(self) -> str:
        """The last lines the server wrote on stderr, headed by its name and exit status."""
        lines = _read_lines(self.stderr_path)[-TAIL_LINES:]
        status = self.process.poll() if self.process is not None else None
        state = "running" if status is None else f"exit status {status}"
        return f"--- {self.name} stderr ({state}, {self.stderr_path}) ---\n" + "\n".join(lines)

    def said_more_than_stopping(self) -> bool:
        return any(line.strip() not in ("", QUIET_STOP) for line in _read_lines(self.stderr_path))


def process_of(server) -> Server | None:
    """The process a started server runs in (a figure's server may wrap the service), if any."""
    inner = getattr(server, "service", server)
    return inner if isinstance(inner, Server) else None


def tail_of(server) -> str:
    own = process_of(server)
    return own.stderr_tail() if own else ""


def _read_lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as stderr:
            return stderr.read().splitlines()
    except OSError:
        return []


def service(name: str, database_url: str, data_dir: str, **env: str) -> Server:
    """`runcode-policy serve` exactly as production runs it (its defaults for workers/threads)."""
    return Server(
        name,
        ["-m", "interface.cli", "serve"],
        {"RUNCODE_POLICY_DATABASE_URL": database_url, "RUNCODE_POLICY_DATA_DIR": data_dir, **env},
        data_dir,
    )


def ceiling(database_url: str, directory: str) -> Server:
    """The ceiling app (bench.ceiling), served by the same server runner with the same defaults."""
    return Server("ceiling", ["-m", "bench.ceiling"], {"BENCH_CEILING_DATABASE_URL": database_url}, directory)


def _await_health(url: str, deadline: float) -> None:
    while True:
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{url} never became healthy") from None
        time.sleep(0.02)
