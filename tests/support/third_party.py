"""Third-party upstreams for the index, run as real processes on loopback: pypiserver (a real
PyPI server, HTML pages only) and verdaccio 6.8.0 (a real npm registry, on Node 20). The
fixtures `pypiserver_upstream` and `verdaccio_upstream` (a pytest plugin of the root conftest)
serve tests/support/packages.py's TREE, verdaccio also a scoped pair (SCOPED).

pypiserver comes with the [dev] extra; verdaccio is installed by .ci/run into .ci/node_tools/
(ignored by git). Without one of them the tests that need it skip loudly, except under CI=true,
where they fail: CI must never pass with them skipped.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.packages import SCOPED, TREE, npm_tree, wheels

REPO = Path(__file__).resolve().parents[2]
VERDACCIO = REPO / ".ci" / "node_tools" / "node_modules" / ".bin" / "verdaccio"  # installed by .ci/run
VERDACCIO_CONFIG = """storage: {storage}
auth:
  htpasswd:
    file: {root}/htpasswd
    max_users: -1
uplinks: {{}}
packages:
  '**':
    access: $all
    publish: $authenticated
listen: 127.0.0.1:{port}
log: {{type: stdout, format: pretty, level: warn}}
web: {{enable: false}}
"""


# One server of each per test worker, not per test: the tests only read from them (no upload or
# publish, no stop, no look at their logs; each test's service keeps its own index cache), and a
# start is a process to wait for (verdaccio's about a second of CPU and two of wall time).
@pytest.fixture(scope="session")
def pypiserver_upstream(tmp_path_factory):
    root = tmp_path_factory.mktemp("pypiserver")
    server = pypiserver(wheels(root / "wheels"), root)
    yield server
    server.close()


@pytest.fixture(scope="session")
def verdaccio_upstream(tmp_path_factory):
    server = verdaccio(npm_tree({**TREE, **SCOPED}), tmp_path_factory.mktemp("verdaccio"))
    yield server
    server.close()


def require(tool: str, found: bool, how: str) -> None:
    """Skip loudly (locally) or fail (under CI=true) when a third-party upstream is missing."""
    if found:
        return
    message = f"{tool} is not installed ({how})"
    if os.environ.get("CI"):
        pytest.fail(f"{message}; CI must run the third-party upstream tests", pytrace=False)
    pytest.skip(f"SKIPPING {tool.upper()} TESTS: {message}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# What a server says when another process bound its port between `free_port` and its own bind
# (the suite's workers run in parallel).
PORT_TAKEN = ("EADDRINUSE", "Address already in use")
PORT_TRIES = 3


class PortTaken(RuntimeError):
    pass


def on_a_free_port(start: Callable[[int], Upstream]) -> Upstream:
    """`start(port)` on a fresh free port, again on another if that one was taken meanwhile."""
    for _ in range(PORT_TRIES - 1):
        try:
            return start(free_port())
        except PortTaken:
            continue
    return start(free_port())


class Upstream:
    """A server process on 127.0.0.1:port, stopped (and waited for) by `close`."""

    def __init__(self, argv: list[str], port: int, ready_path: str, log: Path, env: dict | None = None):
        self.port, self.url = port, f"http://127.0.0.1:{port}"
        self.packages: Path | None = None  # the folder of files it serves, where it serves one
        self._log = log.open("wb")
        self._process = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                self._log.close()
                said = log.read_text()[-2000:]
                if any(sign in said for sign in PORT_TAKEN):
                    raise PortTaken(f"{argv[0]} could not listen on {port}: {said}")
                raise RuntimeError(f"{argv[0]} exited: {said}")
            try:
                urllib.request.urlopen(self.url + ready_path, timeout=2).close()
                return
            except OSError:
                time.sleep(0.2)
        self.close()
        raise RuntimeError(f"{argv[0]} did not answer within 60 s: {log.read_text()[-2000:]}")

    def close(self) -> None:
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._log.close()


def pypiserver(packages: Path, root: Path) -> Upstream:
    """pypiserver serving the wheels and sdists in `packages`; never falls back to a public index."""
    require(
        "pypiserver",
        shutil.which("pypi-server", path=str(Path(sys.executable).parent)) is not None,
        "pip install -e '.[dev]'",
    )

    def start(port: int) -> Upstream:
        argv = [
            str(Path(sys.executable).parent / "pypi-server"),
            "run",
            "-p",
            str(port),
            "-i",
            "127.0.0.1",
            "--disable-fallback",
            "-a",
            ".",
            "-P",
            ".",
            "--backend",
            "simple-dir",
            str(packages),
        ]
        return Upstream(argv, port, "/simple/", root / "pypiserver.log")

    server = on_a_free_port(start)
    server.packages = packages
    return server


def verdaccio(tarballs: dict[str, dict], root: Path) -> Upstream:
    """verdaccio serving `{name: {version: (tgz bytes, dependencies)}}` from a storage written here
    (its own on-disk format), with no uplink: it never reaches a public registry."""
    require("verdaccio", VERDACCIO.exists(), "bash .ci/run installs it into .ci/node_tools")
    storage, config = root / "storage", root / "verdaccio.yaml"

    def start(port: int) -> Upstream:
        shutil.rmtree(storage, ignore_errors=True)  # the tarballs' URLs name the port
        root.mkdir(parents=True, exist_ok=True)
        for name, versions in tarballs.items():
            write_package(storage, name, versions, f"http://127.0.0.1:{port}")
        config.write_text(VERDACCIO_CONFIG.format(storage=storage, root=root, port=port))
        return Upstream([str(VERDACCIO), "--config", str(config)], port, "/-/ping", root / "verdaccio.log")

    return on_a_free_port(start)


def write_package(storage: Path, name: str, versions: dict, url: str) -> None:
    """One package in verdaccio's storage layout: `<name>/package.json` and its tarballs."""
    folder = storage / name
    folder.mkdir(parents=True)
    packument = {
        "name": name,
        "versions": {},
        "dist-tags": {},
        "time": {},
        "_distfiles": {},
        "_attachments": {},
        "_uplinks": {},
        "_rev": "1-0",
        "readme": "",
    }
    for version, (blob, dependencies) in versions.items():
        filename = f"{name.rpartition('/')[2]}-{version}.tgz"
        (folder / filename).write_bytes(blob)
        shasum = hashlib.sha1(blob).hexdigest()
        integrity = "sha512-" + base64.b64encode(hashlib.sha512(blob).digest()).decode()
        packument["versions"][version] = {
            "name": name,
            "version": version,
            "dependencies": dependencies,
            "dist": {"tarball": f"{url}/{name}/-/{filename}", "shasum": shasum, "integrity": integrity},
        }
        packument["dist-tags"]["latest"] = version
        packument["time"][version] = "2026-01-01T00:00:00.000Z"
        packument["_attachments"][filename] = {"shasum": shasum, "version": version}
    (folder / "package.json").write_text(json.dumps(packument))
