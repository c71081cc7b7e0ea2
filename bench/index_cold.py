"""`index_cold_page`: a large PyPI project page the first time the index is asked for it (judged,
recorded, fetched from upstream, checked, kept on disk and rendered with its file URLs pointing
at the index), against `index_cold_upstream`, the same kind of page fetched straight from the
same upstream.

The upstream makes up any `p<n>` page of `FILES` files, one version each, every file in a
directory of its own on the upstream's host, as PyPI keeps them (pages of thousands of files are
common there: every release of a project with native wheels adds dozens). Each page is asked
for once, one after another by one sandbox, so each is a cold fetch; the figure is the wall time
a page, with the CPU the service's processes spent on it. The service is the production `serve`
on SQLite (as `index_rss`).
"""

from __future__ import annotations

import tempfile
import time
import urllib.request

from bench import pip_install, servers
from bench.cpu import Meter
from bench.figures import Result, figure
from tests.support.many_projects import ManyProjects

FILES = 2_000
ACCEPT = "application/vnd.pypi.simple.v1+json"


def _pages(run) -> int:
    return 10 if run.quick else 30


@figure("index_cold_upstream")
def index_cold_upstream(run) -> Result:
    upstream = ManyProjects(FILES, absolute=True)
    try:
        _get(f"{upstream.url}/simple/warm/")
        began = time.perf_counter()
        for n in range(_pages(run)):
            _get(f"{upstream.url}/simple/p{n}/")
        seconds = (time.perf_counter() - began) / _pages(run)
    finally:
        upstream.close()
    return Result(round(seconds * 1000, 2), f"ms a page of {FILES:,} files, straight from the upstream")


@figure("index_cold_page", ceiling="index_cold_upstream")
def index_cold_page(run) -> Result:
    upstream = ManyProjects(FILES, absolute=True)
    database = run.sqlite("index-cold")
    token = pip_install.sandbox_tokens(database, 1)[0]
    service = servers.service(
        "index-cold",
        database,
        tempfile.mkdtemp(dir=run.workdir, prefix="cold-"),
        RUNCODE_POLICY_PYPI_UPSTREAM=f"{upstream.url}/simple/",
    ).start()
    try:
        page = f"{service.url}/pypi/{pip_install.WORKSPACE}/simple"
        _get(f"{page}/warm/", token)  # the worker's first page (its lazy imports) is not a cold page's
        meter = Meter(service.process.pid, None)
        meter.start()
        began = time.perf_counter()
        for n in range(_pages(run)):
            _get(f"{page}/p{n}/", token)
        seconds = (time.perf_counter() - began) / _pages(run)
        cpu = meter.stop().server / _pages(run)
    finally:
        service.stop()
        upstream.close()
    unit = f"ms a cold page of {FILES:,} files via the index, SQLite; {cpu * 1000:.1f} ms of the service's CPU a page"
    return Result(round(seconds * 1000, 2), unit)


def _get(url: str, token: str | None = None) -> bytes:
    request = urllib.request.Request(url, headers={"Accept": ACCEPT})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=60) as reply:
        return reply.read()
