"""One benchmark run: its stores (a fresh PostgreSQL schema or SQLite file per use), its
servers (started once, stopped at the end whatever happens), and the rounds of load figures."""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass, field

from application.governance import Governance
from application.store import store_env
from bench import ceiling, servers
from bench.cpu import Meter
from bench.figures import LoadFigure, Result
from bench.load import CONNECTIONS, drive
from bench.service import count_decisions, prepare_workspace


@dataclass
class Run:
    postgres_url: str
    quick: bool
    seconds: float
    rounds: int
    say: callable = print
    schemas: list[str] = field(default_factory=list)
    started: dict = field(default_factory=dict)  # server key -> (Server, Governance | None, token)
    workdir: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="rcp-bench-"))
    kept: dict = field(default_factory=dict)  # what figures share within the run, closed at its end

    # -- stores --------------------------------------------------------------------------------
    def postgres(self, label: str) -> str:
        """A fresh schema in the bench database (created if missing), dropped at the end."""
        import psycopg

        _create_database(self.postgres_url)
        schema = f"bench_{label}_{os.getpid()}_{int(time.time())}"
        with psycopg.connect(self.postgres_url, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
        self.schemas.append(schema)
        return f"{self.postgres_url}?schema={schema}"

    def sqlite(self, label: str) -> str:
        return f"sqlite:///{self.workdir}/{label}.sqlite"

    def governance(self, database_url: str) -> Governance:
        return Governance(env=store_env(database_url))

    def keep(self, key: str, build):
        """`build()` once per run, shared by every figure asking for `key`; closed at the end."""
        if key not in self.kept:
            self.kept[key] = build()
        return self.kept[key]

    # -- servers -------------------------------------------------------------------------------
    def server(self, key: str):
        if key not in self.started:
            self.started[key] = self._start(key)
        return self.started[key][0]

    def token(self, key: str) -> str:
        self.server(key)
        return self.started[key][2]

    def _start(self, key: str):
        if key in servers.STARTERS:
            return servers.STARTERS[key](self)
        if key == "ceiling":
            url = self.postgres("ceiling")
            ceiling.create_tables(url)
            return servers.ceiling(url, self.workdir).start(), None, None
        url = self.postgres("service") if key == "service-pg" else self.sqlite("service")
        governance = self.governance(url)  # creates the tables, as `serve` would on first start
        token = prepare_workspace(governance)
        return servers.service(key, url, self.workdir).start(), governance, token

    # -- load figures --------------------------------------------------------------------------
    def load_rounds(self, figures: list[LoadFigure]) -> dict[str, Result]:
        """Every load figure once per round, interleaved, then the median of each."""
        loads: dict[str, list] = {f.name: [] for f in figures}
        requests = {f.name: f.request(self) for f in figures}
        try:
            for f in figures:  # warm every server and path once (pools, caches, lazy imports)
                drive(self.server(f.server).url, requests[f.name], 1)
            for _ in range(self.rounds):
                for f in figures:
                    loads[f.name].append(self._load_once(f, requests[f.name]))
        finally:
            self.stop_servers()  # they hold pool connections the other figures' stores need
        return {f.name: _median(f, loads[f.name]) for f in figures}

    def _load_once(self, f: LoadFigure, request) -> tuple:
        """One load: (wrk's figures, (server ms, PostgreSQL ms) of CPU per decision or None)."""
        server, governance, _ = self.started[f.server]
        before = count_decisions(governance) if f.recorded_specs else 0
        meter = Meter(server.process.pid, self.postgres_url) if f.cpu else None
        if meter:
            meter.start()
        try:
            load = drive(server.url, request, self.seconds)
        except Exception as error:  # wrk's refusals, or the server gone: what it said is why
            raise RuntimeError(f"{f.name}: {error}\n{servers.tail_of(server)}") from error
        cpu = meter.stop() if meter else None
        if f.recorded_specs:
            recorded = count_decisions(governance) - before
            # wrk stops with requests in flight: those may be recorded without being counted.
            if not load.answered * f.recorded_specs <= recorded <= (load.answered + CONNECTIONS) * f.recorded_specs:
                raise RuntimeError(
                    f"{f.name}: {load.answered} answers x {f.recorded_specs} specs, but {recorded} decisions recorded"
                )
        decisions = load.answered * f.per_request
        return load, (cpu and (1000 * cpu.server / decisions, 1000 * cpu.postgres / decisions))

    def stop_servers(self) -> None:
        for server, governance, _ in self.started.values():
            server.stop()
            own = servers.process_of(server)
            if own and own.said_more_than_stopping():
                self.say(own.stderr_tail())  # a panic at shutdown, or errors no answer showed
            if governance is not None:
                governance.close()
        self.started.clear()

    def close(self) -> None:
        import psycopg

        self.stop_servers()
        for kept in self.kept.values():
            kept.close()
        if self.schemas:
            with psycopg.connect(self.postgres_url, autocommit=True) as conn:
                for schema in self.schemas:
                    conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        shutil.rmtree(self.workdir, ignore_errors=True)


def _median(f: LoadFigure, rounds: list) -> Result:
    loads = [load for load, _ in rounds]
    cpus = [cpu for _, cpu in rounds if cpu]
    rate = statistics.median(x.rate for x in loads) * f.per_request
    return Result(
        round(rate, 1),
        f.unit,
        round(statistics.median(x.p50_ms for x in loads), 3),
        round(statistics.median(x.p99_ms for x in loads), 3),
        cpu=tuple(round(statistics.median(c[i] for c in cpus), 3) for i in (0, 1)) if cpus else None,
    )


def _create_database(url: str) -> None:
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    with psycopg.connect(urlunsplit(parts._replace(path="/postgres")), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
