"""Benchmark: `pip install` of a 20-package tree through the service's package index, against the
ceiling of the same install straight from the same upstream, measured in the same run.

The upstream is pypiserver (a real PyPI server, [dev] extra) serving wheels made here; the
service is `runcode-policy serve` on SQLite with that upstream, every package allowed. Each
install is cold: a fresh target directory and `--no-cache-dir`, so every page and file is
fetched. Direct and proxied installs alternate; the medians are compared. Prints

    pip_install_ratio: X (ceiling direct)

where X is proxied / direct wall time (1.0 = no cost; the issue's budget is 1.3).

    .venv/bin/python bench/pip_install.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from application.governance import Governance  # noqa: E402
from application.store import store_env  # noqa: E402
from tests.support.packages import wheel  # noqa: E402

PACKAGES = 20
WORKSPACE = "bench"


def tree(directory: Path) -> None:
    """pkg00 .. pkg19, each requiring its two children in a binary tree."""
    directory.mkdir()
    for index in range(PACKAGES):
        children = [f"pkg{c:02d}" for c in (2 * index + 1, 2 * index + 2) if c < PACKAGES]
        wheel(directory, f"pkg{index:02d}", children)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def started(argv: list[str], url: str, env: dict | None = None) -> subprocess.Popen:
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return process
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit(f"{argv[0]} did not start")


def sandbox_token(database_url: str) -> str:
    app = Governance(env=store_env(database_url))
    try:
        app.create_workspace(WORKSPACE, by="bench")
        return app.issue_token(WORKSPACE, "bench-sandbox", "sandbox", by="bench")["token"]
    finally:
        app.close()


def run_index(service: str, token: str) -> str:
    """POST /runs: the run's index URL with its token as the Basic password."""
    request = urllib.request.Request(
        f"{service}/api/v1/workspaces/{WORKSPACE}/runs",
        data=b"{}",
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        run = json.load(response)
    parts = urllib.parse.urlsplit(run["pypi"])
    return urllib.parse.urlunsplit(parts._replace(netloc=f"run:{run['token']}@{parts.netloc}"))


def pip_install(index: str, work: Path) -> float:
    target = Path(tempfile.mkdtemp(dir=work))
    argv = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--no-cache-dir",
        "--disable-pip-version-check",
        "-q",
        "--target",
        str(target),
        "--index-url",
        index,
        "pkg00",
    ]
    started_at = time.perf_counter()
    subprocess.run(argv, check=True, env={**os.environ, "PIP_CONFIG_FILE": os.devnull})
    elapsed = time.perf_counter() - started_at
    installed = sorted(p.name for p in target.glob("pkg*") if p.is_dir() and "." not in p.name)
    if len(installed) != PACKAGES:
        raise SystemExit(f"installed {len(installed)} of {PACKAGES} packages from {index}")
    return elapsed


def measure(rounds: int, work: Path) -> tuple[float, float]:
    packages, database = work / "packages", f"sqlite:///{work}/store.sqlite"
    tree(packages)
    upstream_port, service_port = free_port(), free_port()
    upstream = f"http://127.0.0.1:{upstream_port}/simple/"
    pypiserver = started(
        [
            str(Path(sys.executable).parent / "pypi-server"),
            "run",
            "-p",
            str(upstream_port),
            "-i",
            "127.0.0.1",
            "--disable-fallback",
            "-a",
            ".",
            "-P",
            ".",
            str(packages),
        ],
        upstream,
    )
    token = sandbox_token(database)
    env = {
        **os.environ,
        "RUNCODE_POLICY_DATABASE_URL": database,
        "RUNCODE_POLICY_DATA_DIR": str(work),
        "RUNCODE_POLICY_PYPI_UPSTREAM": upstream,
    }
    service = f"http://127.0.0.1:{service_port}"
    server = started(
        [str(Path(sys.executable).parent / "runcode-policy"), "serve", "--port", str(service_port)],
        f"{service}/healthz",
        env,
    )
    try:
        direct, proxied = [], []
        for _ in range(rounds):
            direct.append(pip_install(upstream, work))
            proxied.append(pip_install(run_index(service, token), work))
        return statistics.median(direct), statistics.median(proxied)
    finally:
        for process in (server, pypiserver):
            process.terminate()
            process.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        direct, proxied = measure(args.rounds, Path(work))
    print(f"pip install of {PACKAGES} packages, cold: direct {direct:.2f} s, through the index {proxied:.2f} s")
    print(f"pip_install_ratio: {proxied / direct:.2f} (ceiling direct)")


if __name__ == "__main__":
    main()
