"""Which process holds a TCP connection's server side, read from /proc (Linux): with several
worker processes listening on one port (SO_REUSEPORT), this tells a test which worker answers
a given client connection, so it can address every worker on purpose."""

from __future__ import annotations

import os
from pathlib import Path


def children(pid: int) -> list[int]:
    """The direct child processes of `pid`."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found += [int(p) for p in text]
    return found


def server_side_owner(server_port: int, client_port: int, candidates: list[int]) -> int | None:
    """The pid among `candidates` whose socket is the server end of 127.0.0.1:client_port."""
    inode = _server_inode(server_port, client_port)
    if inode is None:
        return None
    target = f"socket:[{inode}]"
    for pid in candidates:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except FileNotFoundError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                    return pid
            except FileNotFoundError:
                continue
    return None


def _server_inode(server_port: int, client_port: int) -> str | None:
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, inode = fields[1], fields[2], fields[9]
        if int(local.split(":")[1], 16) == server_port and int(remote.split(":")[1], 16) == client_port:
            return inode
    return None
