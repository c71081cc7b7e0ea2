"""Large pages through the index, each against the same kind of page straight from its upstream:

- `index_cold_page`: a PyPI project page of `FILES` files the first time the index is asked for
  it (judged, recorded, fetched from upstream, checked, kept on disk and rendered with its file
  URLs pointing at the index); its ceiling `index_cold_upstream`. The upstream makes up any
  `p<n>` page, one version a file, every file in a directory of its own on the upstream's host,
  as PyPI keeps them (pages of thousands of files are common there). Each page is asked for
  once, one after another by one sandbox, so each is a cold fetch.
- `index_packument`: an npm packument of `VERSIONS` versions asked for again and again, kept (an
  npm packument is read, rewritten and written for every request: no rendered copy is kept, since
  what it offers depends on the versions the gate hides); its ceiling `index_packument_upstream`.

Each figure is the wall time a page, with the CPU the service's processes spent on it in the
unit. The service is the production `serve` on SQLite (as `index_rss`).
"""

from __future__ import annotations

import tempfile
import time
import urllib.request

from bench import pip_install, servers
from bench.cpu import Meter
from bench.figures import Result, figure
from tests.support.many_projects import ManyPackages, ManyProjects

FILES = 2_000
VERSIONS = 2_000
PYPI_JSON = "application/vnd.pypi.simple.v1+json"
NPM_ABBREVIATED = "application/vnd.npm.install-v1+json"


def _pages(run) -> int:
    return 30 if run.quick else 100


@figure("index_cold_upstream")
def index_cold_upstream(run) -> Result:
    seconds = _straight(run, ManyProjects(FILES, absolute=True), "simple/p{n}/", PYPI_JSON)
    return Result(round(seconds * 1000, 2), f"ms a page of {FILES:,} files, straight from the upstream")


@figure("index_cold_page", ceiling="index_cold_upstream")
def index_cold_page(run) -> Result:
    upstream = ManyProjects(FILES, absolute=True)
    seconds, cpu = _through_the_index(run, upstream, "RUNCODE_POLICY_PYPI_UPSTREAM", "/simple/", "simple/p{n}/")
    unit = f"ms a cold page of {FILES:,} files via the index, SQLite; {cpu * 1000:.1f} ms of the service's CPU a page"
    return Result(round(seconds * 1000, 2), unit)


@figure("index_packument_upstream")
def index_packument_upstream(run) -> Result:
    seconds = _straight(run, ManyPackages(VERSIONS), "big", NPM_ABBREVIATED)
    return Result(round(seconds * 1000, 2), f"ms a packument of {VERSIONS:,} versions, straight from the upstream")


@figure("index_packument", ceiling="index_packument_upstream")
def index_packument(run) -> Result:
    upstream = ManyPackages(VERSIONS)
    seconds, cpu = _through_the_index(run, upstream, "RUNCODE_POLICY_NPM_UPSTREAM", "/", "big", kept=True)
    unit = f"ms a kept packument of {VERSIONS:,} versions via the index, SQLite; {cpu * 1000:.1f} ms of its CPU each"
    return Result(round(seconds * 1000, 2), unit)


def _straight(run, upstream, path: str, media: str) -> float:
    """Seconds a request for `path` ({n}: a page of its own each) straight from `upstream`, closed after."""
    try:
        return _timed(run, lambda n: _get(f"{upstream.url}/{path.format(n=n)}", media))
    finally:
        upstream.close()


def _through_the_index(run, upstream, setting: str, upstream_path: str, path: str, kept: bool = False):
    """(seconds, CPU seconds of the service) a request for `path` ({n}: a page of its own each)
    through the index in front of `upstream`, closed after."""
    npm = setting == "RUNCODE_POLICY_NPM_UPSTREAM"
    media = NPM_ABBREVIATED if npm else PYPI_JSON
    service = None
    try:
        database = run.sqlite(f"index-large-{setting.lower()}")
        token = pip_install.sandbox_tokens(database, 1)[0]
        work = tempfile.mkdtemp(dir=run.workdir, prefix="large-")
        service = servers.service("index-large", database, work, **{setting: upstream.url + upstream_path}).start()
        at = f"{service.url}/{'npm' if npm else 'pypi'}/{pip_install.WORKSPACE}/"
        # The worker's first page (its lazy imports) is no page's own cost; a kept page kept.
        _get(at + (path if kept else path.format(n="warm")), media, token)
        meter = Meter(service.process.pid, None)
        meter.start()
        seconds = _timed(run, lambda n: _get(at + path.format(n=n), media, token))
        return seconds, meter.stop().server / _pages(run)
    finally:
        if service is not None:
            service.stop()
        upstream.close()


def _timed(run, fetch) -> float:
    began = time.perf_counter()
    for n in range(_pages(run)):
        fetch(n)
    return (time.perf_counter() - began) / _pages(run)


def _get(url: str, accept: str, token: str | None = None) -> bytes:
    request = urllib.request.Request(url, headers={"Accept": accept})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=60) as reply:
        return reply.read()
