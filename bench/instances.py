"""Two `serve` instances over one PostgreSQL, as on two machines (separate process trees, the
store all they share), each driven by its own wrk at once: per instance the evaluate throughput
and p99, and CPU per decision (the instance's processes and its PostgreSQL backends); then one
instance alone, driven with all the connections, for comparison.

    .venv/bin/python -m bench.instances [--seconds 8] [--postgres-url URL]

Every answered decision is counted in the store afterwards, as in `python -m bench`.
"""

from __future__ import annotations

import argparse
import threading

from bench.__main__ import DEFAULT_POSTGRES
from bench.cpu import Meter
from bench.load import CONNECTIONS, Request, drive, require_wrk
from bench.run import Run
from bench.servers import service
from bench.service import EVALUATE, ONE_SPEC, count_decisions, prepare_workspace


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.instances", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES)
    args = parser.parse_args(argv)
    require_wrk()
    run = Run(args.postgres_url, quick=True, seconds=args.seconds, rounds=1)
    url = run.postgres("instances")
    governance = run.governance(url)
    servers = []
    try:
        request = Request(EVALUATE, ONE_SPEC, prepare_workspace(governance))
        servers = [service(f"instance-{n}", url, f"{run.workdir}/{n}").start() for n in (1, 2)]
        for server in servers:
            drive(server.url, request, 1)  # warm each (pools, caches, lazy imports)
        before = count_decisions(governance)
        answered = both(servers, request, args.seconds, CONNECTIONS // 2)
        answered += alone(servers[0], request, args.seconds)
        recorded = count_decisions(governance) - before
        if not answered <= recorded <= answered + 2 * CONNECTIONS:
            raise RuntimeError(f"{answered} answered, {recorded} recorded")
    finally:
        for server in servers:
            server.stop()
        governance.close()
        run.close()
    return 0


def both(servers, request: Request, seconds: float, connections: int) -> int:
    loads, cpus = {}, {}
    meters = {s.name: Meter(s.process.pid, run_url(s)) for s in servers}
    for meter in meters.values():
        meter.start()

    def one(server):
        loads[server.name] = drive(server.url, request, seconds, connections)
        cpus[server.name] = meters[server.name].stop()

    threads = [threading.Thread(target=one, args=(s,)) for s in servers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for server in servers:
        show(f"{server.name} (of two, {connections} connections)", loads[server.name], cpus[server.name])
    print(f"both: {sum(x.rate for x in loads.values()):.1f} req/s")
    return sum(x.answered for x in loads.values())


def alone(server, request: Request, seconds: float) -> int:
    meter = Meter(server.process.pid, run_url(server))
    meter.start()
    load = drive(server.url, request, seconds)
    show(f"{server.name} alone ({CONNECTIONS} connections)", load, meter.stop())
    return load.answered


def run_url(server) -> str:
    return server.env["RUNCODE_POLICY_DATABASE_URL"]


def show(what: str, load, cpu) -> None:
    server, postgres = (1000 * x / load.answered for x in (cpu.server, cpu.postgres))
    print(
        f"{what}: {load.rate:g} req/s, p50 {load.p50_ms} ms, p99 {load.p99_ms} ms; "
        f"cpu {server + postgres:.3f} ms/decision = server {server:.3f} + postgres {postgres:.3f}",
        flush=True,
    )


if __name__ == "__main__":
    raise SystemExit(main())
