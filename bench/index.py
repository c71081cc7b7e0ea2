"""The package index's figures: `index_page`, the PyPI project page through the real service under
wrk; `pip_install_ratio` and `pip_install_warm_ratio`, a `pip install` of a 20-package tree
through the index (its cache empty, then full) against the same install straight from the same
upstream (bench/pip_install.py), that upstream on this machine; `pip_install_remote_ratio` and
`pip_install_remote_warm_ratio`, the same with the upstream `REMOTE_RTT` away, as PyPI is from a
sandbox; `pip_install_floor_ratio`, the same install with no server at all (pip's own share);
`index_rss`, the service's memory after 10,000 distinct pages.

For `index_page` the upstream is the tests' fixture PyPI index (tests/support/pypi_upstream.py,
PEP 503/691 pages on a threaded server in this process): pypiserver, which `pip_install_ratio`
installs from, answers ~300 req/s here with seconds-long tails, and under the proxy's 16
connections some requests came back non-2xx. The service is the production `serve` on PostgreSQL,
read by 16 sandboxes (one token per wrk connection: the index bounds what one token may hold at
once), each of which fetched the page once before the load (recorded; the page kept). Every page
request authenticates the token (one read, which brings the policy head), judges the project on
the current policy and answers from the page the index keeps (fetched once, revalidated with
upstream after its freshness window); the gate records a token's fetch of a page once (it
remembers what a token was told), so the figure is the judged, cached path. Its ceiling is
`index_upstream`, the same page served by the same upstream directly, under the same load in the
same rounds: the target is at least 1.0 (the index from its cache no slower than upstream).
"""

from __future__ import annotations

import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from bench import pip_install, servers
from bench.figures import LoadFigure, Result, figure, register
from bench.load import CONNECTIONS, Request
from tests.support.pypi_upstream import PyPIUpstream

SERVER, UPSTREAM = "service-index", "index-upstream"
PROJECT = "beta"  # three releases, five files (one yanked, one requires-python)
PAGE = f"/pypi/{pip_install.WORKSPACE}/simple/{PROJECT}/"
REMOTE_RTT = 0.020  # seconds: a nearby CDN's round trip; the local upstream's is ~0


@dataclass
class _Proxied:
    """The service and its upstream: stopped together."""

    service: servers.Server
    upstream: object

    @property
    def url(self) -> str:
        return self.service.url

    @property
    def process(self):  # the service's, whose tree and PostgreSQL backends the CPU figure meters
        return self.service.process

    def stop(self) -> None:
        self.service.stop()
        self.upstream.close()


def _start(run):
    work = Path(tempfile.mkdtemp(dir=run.workdir, prefix="index-"))
    upstream = PyPIUpstream()  # threads of this process, idle while wrk runs
    database = run.postgres("index")
    # The default policy: every package allowed. One token per connection, as many sandboxes
    # would be: the index bounds what one token may hold at once (interface.index.bounds).
    tokens = tuple(pip_install.sandbox_tokens(database, CONNECTIONS))
    governance = run.governance(database)
    try:
        service = servers.service(
            SERVER, database, str(work), RUNCODE_POLICY_PYPI_UPSTREAM=f"{upstream.url}/simple/"
        ).start()
        for token in tokens:  # each sandbox's first fetch (recorded, and the page kept) before the load
            _fetch(f"{service.url}{PAGE}", token)
    except BaseException:
        governance.close()
        upstream.close()
        raise
    return _Proxied(service, upstream), governance, tokens


def _fetch(url: str, token: str) -> None:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=60) as reply:
        reply.read()


@dataclass
class _Direct:
    """The service's own upstream, driven directly: stopped with the service."""

    url: str

    def stop(self) -> None:
        pass


servers.STARTERS[SERVER] = _start
servers.STARTERS[UPSTREAM] = lambda run: (_Direct(run.server(SERVER).upstream.url), None, None)
register(
    LoadFigure("index_upstream", UPSTREAM, lambda run: Request(f"/simple/{PROJECT}/"), "req/s (the same page, direct)")
)
register(
    LoadFigure(
        "index_page",
        SERVER,
        lambda run: Request(PAGE, tokens=run.token(SERVER)),
        "req/s (PyPI project page via the fixture upstream, PostgreSQL)",
        ceiling="index_upstream",
        cpu=True,  # CPU per request: steadier than the rate on a shared machine
    )
)


def _pip_installs(run, rtt: float) -> tuple[float, float, float, float]:
    """Direct, cold, warm and no-server medians, measured once per run and upstream distance for
    all the figures of that distance."""

    def measure():
        work = Path(tempfile.mkdtemp(dir=run.workdir, prefix="pip-"))
        direct, cold, warm, floor = pip_install.measure(1 if run.quick else 3, work, rtt)
        run.say(
            f"  pip install of {pip_install.PACKAGES} packages, upstream {rtt * 1000:g} ms away: "
            f"direct {direct:.2f} s, via the index cold {cold:.2f} s, warm {warm:.2f} s; no server {floor:.2f} s"
        )
        return _Closed((direct, cold, warm, floor))

    return run.keep(f"pip-installs-{rtt}", measure).value


@dataclass
class _Closed:
    """A value `run.keep` can close at the end of the run."""

    value: tuple

    def close(self) -> None:
        pass


def _pip_ratio(run, which: int, label: str, rtt: float = 0.0) -> Result:
    times = _pip_installs(run, rtt)
    rounds = "1 round" if run.quick else "median of 3 rounds"
    where = f"the upstream {rtt * 1000:g} ms away" if rtt else "the upstream on this machine"
    ratio = round(times[which] / times[0], 3)
    unit = f"× direct ({label} {where}, {rounds})"
    return Result(ratio, unit, ratio=ratio)


INSTALL = f"pip install of {pip_install.PACKAGES} packages"
COLD = f"cold: the index's cache empty, {INSTALL} via the index,"
WARM = f"warm: pages and files from the index's cache, {INSTALL} via the index,"
FLOOR = f"no server at all: the same {INSTALL} from a directory of its wheels, pip's own share, against direct from"


@figure("pip_install_ratio", ceiling="direct")  # its own ceiling: the same install, direct
def pip_install_ratio(run) -> Result:
    return _pip_ratio(run, 1, COLD)


@figure("pip_install_warm_ratio", ceiling="direct")
def pip_install_warm_ratio(run) -> Result:
    return _pip_ratio(run, 2, WARM)


# What an index answering instantly would still cost: the warm figure's floor on this machine.
@figure("pip_install_floor_ratio", ceiling="direct")
def pip_install_floor_ratio(run) -> Result:
    return _pip_ratio(run, 3, FLOOR)


@figure("pip_install_remote_ratio", ceiling="direct")
def pip_install_remote_ratio(run) -> Result:
    return _pip_ratio(run, 1, COLD, REMOTE_RTT)


@figure("pip_install_remote_warm_ratio", ceiling="direct")
def pip_install_remote_warm_ratio(run) -> Result:
    return _pip_ratio(run, 2, WARM, REMOTE_RTT)
