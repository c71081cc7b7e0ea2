"""Benchmark: `pip install` of a 20-package tree through the service's package index, against the
ceiling of the same install straight from the same upstream, measured in the same run.

The upstream is pypiserver (a real PyPI server, [dev] extra) serving wheels made here; the
service is `runcode-policy serve` on SQLite with that upstream, every package allowed. pip is
always cold (a fresh target directory and `--no-cache-dir`); the index is cold too (a new,
empty cache: every page and file fetched from upstream, verified and kept), then warm (the same
install again in a new run: pages and files from the index's cache, judged and recorded all the
same). Direct, cold and warm installs alternate; the medians are compared. Prints

    pip_install_ratio: X (ceiling direct)
    pip_install_warm_ratio: Y (ceiling direct)

where X and Y are proxied / direct wall time (1.0 = no cost; budgets: cold 1.3, warm 0.8).
With `--rtt MS` the upstream is that round trip away (a forwarder holds each chunk for half of it
each way), as PyPI is from a sandbox: direct installs and the index's upstream fetches pay it, a
warm index does not.

    .venv/bin/python bench/pip_install.py [--rounds 3] [--rtt 20]

`python -m bench` reports the same measure as its `pip_install_ratio` figure (bench/index.py).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from application.governance import Governance  # noqa: E402
from application.store import store_env  # noqa: E402
from tests.support.clients import pip_install  # noqa: E402
from tests.support.packages import wheel  # noqa: E402
from tests.support.tcp_forwarder import Forwarder  # noqa: E402
from tests.support.third_party import Upstream, free_port, pypiserver  # noqa: E402

PACKAGES = 20
WORKSPACE = "bench"


def tree(directory: Path) -> None:
    """pkg00 .. pkg19, each requiring its two children in a binary tree."""
    directory.mkdir()
    for index in range(PACKAGES):
        children = [f"pkg{c:02d}" for c in (2 * index + 1, 2 * index + 2) if c < PACKAGES]
        wheel(directory, f"pkg{index:02d}", children)


def sandbox_token(database_url: str) -> str:
    return sandbox_tokens(database_url, 1)[0]


def sandbox_tokens(database_url: str, count: int) -> list[str]:
    """`count` sandbox tokens of the bench workspace (made here): one per sandbox."""
    app = Governance(env=store_env(database_url))
    try:
        app.create_workspace(WORKSPACE, by="bench")
        return [app.issue_token(WORKSPACE, f"bench-sandbox-{n}", "sandbox", by="bench")["token"] for n in range(count)]
    finally:
        app.close()


def start_run(service: str, token: str) -> dict:
    """POST /runs: the run's index URL and its token."""
    request = urllib.request.Request(
        f"{service}/api/v1/workspaces/{WORKSPACE}/runs",
        data=b"{}",
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def timed_install(index: str, token: str, work: Path, *more: str) -> float:
    """One cold install (fresh target, no cache) of the whole tree; its wall time. `more`: pip's
    further arguments."""
    target = Path(tempfile.mkdtemp(dir=work))
    started_at = time.perf_counter()
    outcome = pip_install(target, index, token, "-q", *more, "pkg00")
    elapsed = time.perf_counter() - started_at
    installed = [p for p in (target / "site").glob("pkg*") if p.is_dir() and "." not in p.name]
    if not outcome.ok or len(installed) != PACKAGES:
        raise SystemExit(f"installed {len(installed)} of {PACKAGES} packages from {index}: {outcome.output}")
    return elapsed


def timed_floor(index: str, packages: Path, work: Path) -> float:
    """The same install with no server at all (`--no-index --find-links` of the same wheels):
    pip's own start, resolution and install, the least an install through any index can take."""
    return timed_install(index, "unused", work, "--no-index", "--find-links", str(packages))


def measure(rounds: int, work: Path, rtt: float = 0.0) -> tuple[float, float, float, float]:
    """Median wall times: direct (before and after each round's two), through a cold index,
    through the same index warm, and with no server at all; the upstream `rtt` seconds away."""
    packages, database = work / "packages", f"sqlite:///{work}/store.sqlite"
    tree(packages)
    upstream = pypiserver(packages, work)
    distance = Forwarder(upstream.port, delay=rtt / 2)
    simple, token = f"http://127.0.0.1:{distance.port}/simple/", sandbox_token(database)
    try:
        direct, cold, warm, floor = [], [], [], []
        for round_ in range(rounds):
            floor.append(timed_floor(simple, packages, work))  # `--no-index`: the index is never asked
            direct.append(timed_install(simple, "unused", work))  # pypiserver ignores the password
            port = free_port()
            env = {
                **os.environ,
                "RUNCODE_POLICY_DATABASE_URL": database,
                "RUNCODE_POLICY_DATA_DIR": str(work),
                "RUNCODE_POLICY_PYPI_UPSTREAM": simple,
                "RUNCODE_POLICY_CACHE_DIR": str(work / f"cache-{round_}"),  # empty: a cold index
            }
            serve = [str(Path(sys.executable).parent / "runcode-policy"), "serve", "--port", str(port)]
            service = Upstream(serve, port, "/healthz", work / f"serve-{round_}.log", env)
            try:
                for times in (cold, warm):
                    run = start_run(service.url, token)
                    times.append(timed_install(run["pypi"], run["token"], work))
            finally:
                service.close()
            # Direct again, after: on a shared machine the load drifts, and each ratio's two sides
            # should meet the same drift (the median of both sides of every round).
            direct.append(timed_install(simple, "unused", work))
        return tuple(statistics.median(times) for times in (direct, cold, warm, floor))
    finally:
        distance.cut()
        upstream.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rtt", type=float, default=0.0, help="the upstream's round trip, ms")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        direct, cold, warm, floor = measure(args.rounds, Path(work), args.rtt / 1000)
    print(
        f"{PACKAGES} packages: direct {direct:.2f} s, through the index {cold:.2f} s cold, {warm:.2f} s warm, "
        f"with no server {floor:.2f} s"
    )
    print(f"pip_install_ratio: {cold / direct:.2f} (ceiling direct)")
    print(f"pip_install_warm_ratio: {warm / direct:.2f} (ceiling direct)")
    print(f"pip_install_floor_ratio: {floor / direct:.2f} (ceiling direct)")


if __name__ == "__main__":
    main()
