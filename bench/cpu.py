"""CPU spent serving a load: user+system time of every process of a server's tree (granian's
parent and its workers) and of the PostgreSQL backends serving that tree, read from /proc (Linux).

CPU per decision is stable on a shared machine where throughput is not: other work steals wall
time from a server, not the CPU the server itself spends on each request.

A server's PostgreSQL backends are found by their client port: the tree's TCP connections to the
database port (from /proc/<pid>/fd and /proc/net/tcp) matched to `pg_stat_activity.client_port`.
So other users of the same PostgreSQL (other runs, other tests) are never counted.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Cpu:
    server: float  # seconds of the server's own processes
    postgres: float  # seconds of the PostgreSQL backends serving it


class Meter:
    """`start()` before a load, `stop()` after it: what the load cost."""

    def __init__(self, root_pid: int, postgres_url: str | None, postgres_port: int = 5432):
        self.root_pid, self.postgres_url, self.postgres_port = root_pid, postgres_url, postgres_port
        self.server = 0.0
        self.backends: dict[int, float] = {}  # backend pid -> its CPU at start()

    def start(self) -> None:
        tree = process_tree(self.root_pid)
        self.server = sum(cpu_seconds(pid) for pid in tree)
        self.backends = {pid: cpu_seconds(pid) for pid in self._backends(tree)}

    def stop(self) -> Cpu:
        tree = process_tree(self.root_pid)
        server = sum(cpu_seconds(pid) for pid in tree) - self.server
        # a backend first met now started during the load: all of its CPU counts
        postgres = sum(cpu_seconds(pid) - self.backends.get(pid, 0.0) for pid in self._backends(tree))
        return Cpu(server, postgres)

    def _backends(self, tree: list[int]) -> list[int]:
        if not self.postgres_url:
            return []
        return backends(self.postgres_url, client_ports(tree, self.postgres_port))


def cpu_seconds(pid: int) -> float:
    """utime + stime of one process (all its threads); 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rpartition(")")[2].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK  # fields 14 and 15 of proc(5)


def process_tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", encoding="ascii") as f:
                    ppid = int(f.read().rpartition(")")[2].split()[1])
            except (FileNotFoundError, ProcessLookupError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(name))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def client_ports(pids: list[int], server_port: int) -> set[int]:
    """Local ports of the processes' TCP connections to `server_port`."""
    inodes = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as f:
                rows = f.read().splitlines()[1:]
        except FileNotFoundError:
            continue
        for row in rows:
            cols = row.split()
            if cols[9] in inodes and int(cols[2].rsplit(":", 1)[1], 16) == server_port:
                ports.add(int(cols[1].rsplit(":", 1)[1], 16))
    return ports


def backends(postgres_url: str, ports: set[int]) -> list[int]:
    if not ports:
        return []
    import psycopg

    with psycopg.connect(postgres_url.split("?")[0], autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE client_port = ANY(%s) AND client_addr IN ('127.0.0.1', '::1')",
            (list(ports),),
        ).fetchall()
    return [pid for (pid,) in rows]
