"""A network namespace whose only ways out are the services a test bridges in over Unix sockets.

`Sandbox(bridges)` runs commands under `unshare --net` (a namespace with nothing but a loopback
interface, brought up inside). For each bridged port, a relay inside listens on 127.0.0.1:PORT
and carries every connection over a Unix socket (a file, so it crosses namespaces) to a relay
outside, which connects to the real service on 127.0.0.1:PORT in the test's own namespace. No
address other than loopback is ever used, on either side; anything not bridged is unreachable.

Needs root (or user namespaces) and `unshare` from util-linux. `namespaces_or_skip()` skips
loudly where they are missing, and fails under CI=true, where the lockdown test must run.

The outside end (the bridges, and a proxy a test runs in-process) is in the test's own namespace,
which may have a route out; `connects()` records every address this process connects to, so a
test can show that nothing but loopback was dialled.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.netns_inside import relay

INSIDE = Path(__file__).with_name("netns_inside.py")


def namespaces_or_skip() -> None:
    """Skip (locally) or fail (under CI=true) unless `unshare --net` works here."""
    problem = None
    if shutil.which("unshare") is None:
        problem = "`unshare` (util-linux) is not installed"
    else:
        done = subprocess.run(["unshare", "--net", "true"], capture_output=True, text=True, timeout=30)
        if done.returncode:
            problem = f"`unshare --net` fails here: {done.stderr.strip() or done.returncode}"
    if problem is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{problem} (CI runs as root and must run the network-namespace tests)", pytrace=False)
    pytest.skip(f"SKIPPING NETWORK-NAMESPACE TESTS: {problem}")


_RECORDERS: list[list] = []
_HOOKED: list[bool] = []


def _on_audit(event: str, args: tuple) -> None:
    if event == "socket.connect" and _RECORDERS:
        for seen in _RECORDERS:
            seen.append(args[1])


@contextmanager
def connects() -> Iterator[list]:
    """The address of every `connect` this process makes (any thread) while the block runs.

    Read from Python's audit events ("socket.connect", raised before the system call), so even a
    connection attempt that fails is seen. An audit hook cannot be removed: one is added per
    process, and it records only while a block is running.
    """
    if not _HOOKED:
        sys.addaudithook(_on_audit)
        _HOOKED.append(True)
    seen: list = []
    _RECORDERS.append(seen)
    try:
        yield seen
    finally:
        _RECORDERS.remove(seen)


class UnixBridge:
    """Outside end: a Unix socket whose every connection is relayed to 127.0.0.1:port."""

    def __init__(self, path: Path, port: int):
        self.path, self.port = path, port
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(path))
        self._listener.listen(64)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.port), timeout=10)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            relay(client, upstream)

    def close(self) -> None:
        self._listener.close()


class Sandbox:
    """Runs commands in a fresh network namespace that reaches only the bridged ports."""

    def __init__(self, directory: Path, ports: list[int]):
        directory.mkdir(parents=True, exist_ok=True)
        self.bridges = [UnixBridge(directory / f"{port}.sock", port) for port in ports]

    def run(self, command: list[str], *, env: dict, cwd: Path, timeout: float = 300):
        forwards = [f"{b.port}={b.path}" for b in self.bridges]
        argv = ["unshare", "--net", "--", sys.executable, "-I", str(INSIDE), *forwards, "--", *command]
        return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)

    def close(self) -> None:
        for bridge in self.bridges:
            bridge.close()
