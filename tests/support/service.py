"""`runcode-policy serve` as a real process, for tests that need the service as a reader runs it."""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


class served:
    """`python -m interface.cli serve --port 0` as a process; yields its URL and stdout lines."""

    # One worker unless a test asks for more: each spawned worker imports the whole service at start
    # (about a second of CPU), and the suite starts `serve` dozens of times.
    def __init__(self, env: dict, cwd: Path | None = None, workers: int = 1, threads: int = 2):
        more = ["--workers", str(workers)]  # cwd None: the test's own directory (conftest)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "interface.cli", "serve", "--port", "0", "--threads", str(threads), *more],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(
            target=lambda: [self.lines.put(x.rstrip("\n")) for x in self.process.stdout], daemon=True
        ).start()

    def __enter__(self):
        said = []
        try:
            while not said or not said[-1].startswith("runcode-policy listening on "):
                said.append(self.lines.get(timeout=60))
            url = said[-1].split()[3]
            wait_until_healthy(url)
        except BaseException:
            self.process.kill()
            self.process.wait()
            pytest.fail(f"serve did not start: {said} {self.process.stderr.read()}")
        return url, said

    def __exit__(self, *exc):
        self.process.terminate()  # SIGTERM: a graceful stop, exit status 0
        try:
            # granian gives its workers 30 s to finish their requests before it kills them
            assert self.process.wait(timeout=90) == 0
            self.log = self.process.stderr.read()  # the server's log, for tests to read after the stop
            assert "runcode-policy stopped" in self.log
        finally:
            self.process.stdout.close()
            self.process.stderr.close()


def owner_token(said: list[str]) -> str:
    """The owner token a first start on an empty store printed."""
    return next(line for line in said if line.startswith("owner token for workspace")).rsplit(" ", 1)[1]


def wait_until_healthy(url: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=5) as reply:
                if reply.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError):
            if time.monotonic() > deadline:
                raise
        time.sleep(0.1)
