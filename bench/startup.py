"""`startup`: seconds from spawning `serve` (the production command, its defaults, PostgreSQL)
to its first `/healthz` 200, on an idle machine: measured after the load figures, once their
servers are stopped. The store is one an earlier start prepared (tables and workspace exist), as
on every restart, and the service's modules byte-compiled, as an installed wheel or any earlier
start leaves them (not where PYTHONDONTWRITEBYTECODE is set: an editable install then never gets
them, and every process of every start compiles the sources again, ~0.4 s of CPU each). The
median of 3 starts (`--quick`: 1). Its ceiling is the target, 3 s."""

from __future__ import annotations

import compileall
import statistics

from bench import servers
from bench.figures import Result, figure

TARGET_SECONDS = 3.0
PACKAGES = ("domain", "application", "interface")


@figure("startup", ceiling=f"the {TARGET_SECONDS:g} s target")
def startup(run) -> Result:
    url = run.postgres("startup")
    for package in PACKAGES:
        compileall.compile_dir(servers.ROOT / package, quiet=1)
    servers.service("startup", url, run.workdir).start().stop()  # the first start creates the tables
    seconds = []
    for _ in range(1 if run.quick else 3):
        server = servers.service("startup", url, run.workdir).start()
        server.stop()
        seconds.append(server.ready_seconds)
    value = round(statistics.median(seconds), 2)
    return Result(
        value, "s to the first /healthz 200 (serve, idle, PostgreSQL)", ratio=round(value / TARGET_SECONDS, 3)
    )
