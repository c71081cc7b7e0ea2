"""`index_rss`: the service's resident memory after 10,000 distinct PyPI project pages, against
its memory after the first 1,000 (its ceiling): flat, because pages are kept on disk within
`RUNCODE_POLICY_CACHE_MAX_BYTES`, and what each worker keeps in memory for the index within
`RUNCODE_POLICY_INDEX_MEMORY_BYTES`.

The upstream makes any `p<n>` project page up (24 files, ~6 KiB of JSON) so that 10,000 pages
are ~60 MiB, four times the disk bound set here and fifteen times the memory bound: both evict
as they go, and the memory is full within the first 1,000 pages. The service is the
production `serve` (its default workers and threads) on SQLite; every page is judged and
recorded (10,000 decisions). Memory is the sum of VmRSS over the serve process and its workers.
"""

from __future__ import annotations

import tempfile
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench import pip_install, servers
from bench.cpu import process_tree
from bench.figures import Result, figure
from tests.support.many_projects import ManyProjects

PAGES, FIRST = 10_000, 1_000
BOUND = 16 * 1024 * 1024
MEMORY = 4 * 1024 * 1024  # per worker
CLIENTS = 4  # fewer than a worker's index slots: even all on one worker, none is refused busy
RETRIES = 30


def rss_mib(pid: int) -> float:
    """VmRSS of the process tree of `pid` (serve and its workers, which leave its process group), in MiB."""
    total = 0
    for member in process_tree(pid):
        try:
            status = Path(f"/proc/{member}/status").read_text()
        except OSError:
            continue
        total += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return total / 1024


@figure("index_rss", ceiling=f"RSS after {FIRST:,} pages")
def index_rss(run) -> Result:
    work = tempfile.mkdtemp(dir=run.workdir, prefix="rss-")
    upstream = ManyProjects()
    database = run.sqlite("index-rss")
    # One token per client thread, as many sandboxes would be: the index bounds what one token
    # may hold at once and how fast it may fetch (interface.index.bounds).
    tokens = pip_install.sandbox_tokens(database, CLIENTS)
    service = servers.service(
        "index-rss",
        database,
        work,
        RUNCODE_POLICY_PYPI_UPSTREAM=f"{upstream.url}/simple/",
        RUNCODE_POLICY_CACHE_MAX_BYTES=str(BOUND),
        RUNCODE_POLICY_INDEX_MEMORY_BYTES=str(MEMORY),
    ).start()
    try:
        with ThreadPoolExecutor(CLIENTS) as pool:
            list(pool.map(_get(service.url, tokens), range(FIRST)))
            first = rss_mib(service.process.pid)
            list(pool.map(_get(service.url, tokens), range(FIRST, PAGES)))
        last = rss_mib(service.process.pid)
        kept = sum(f.stat().st_size for f in (Path(work) / "cache").rglob("*") if f.is_file() and f.name != "lock")
        run.say(f"  RSS after {FIRST:,} pages {first:.0f} MiB, after {PAGES:,} {last:.0f} MiB")
        bounds = f"cache bound {BOUND // 2**20} MiB, {kept / 2**20:.1f} MiB kept; memory {MEMORY // 2**20} MiB a worker"
        unit = f"MiB RSS after {PAGES:,} distinct pages ({bounds})"
        return Result(round(last, 1), unit, ratio=round(last / first, 3))
    finally:
        service.stop()
        upstream.close()


def _get(base: str, tokens: list[str]):
    def fetch(n: int) -> None:
        request = urllib.request.Request(f"{base}/pypi/{pip_install.WORKSPACE}/simple/p{n}/")
        request.add_header("Accept", "application/vnd.pypi.simple.v1+json")
        request.add_header("Authorization", f"Bearer {tokens[n % len(tokens)]}")
        for _ in range(RETRIES):  # a busy index says when to come back (429, 503), as pip and npm heed
            try:
                with urllib.request.urlopen(request, timeout=60) as reply:
                    reply.read()
                    return
            except urllib.error.HTTPError as error:
                if error.code not in (429, 503) or "Retry-After" not in error.headers:
                    raise RuntimeError(f"p{n}: {error.code} {error.read()[:300]!r}") from None
                time.sleep(float(error.headers["Retry-After"]))
        raise RuntimeError(f"p{n}: the index stayed busy")

    return fetch
