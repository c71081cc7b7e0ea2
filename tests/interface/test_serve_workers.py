"""`serve`'s workers as an operator meets them when a process dies: a worker killed outright is
replaced while the others go on answering, and workers never outlive a `serve` killed outright
(they would answer with nothing sealing, and hold the port against a restart)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.support.service import owner_token, served, wait_until_healthy
from tests.support.sockets import children

ROOT = Path(__file__).resolve().parents[2]
GENEROUS = 30  # seconds: a respawn or an exit takes about one, far less than this on a loaded machine


def serve_env(tmp_path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNCODE_POLICY_")}
    return {**env, "RUNCODE_POLICY_DATABASE_URL": f"sqlite:///{tmp_path / 'store.db'}"}


def workers_of(pid: int) -> set[int]:
    """The worker processes of a `serve` (its children running the service, not helpers)."""
    return {child for child in children(pid) if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes()}


def both_workers(pid: int, without: int | None = None) -> set[int] | None:
    """Its two workers, once it has two (and `without` is not one of them)."""
    found = workers_of(pid)
    return found if len(found) == 2 and without not in found else None


def until(condition, what: str):
    deadline = time.monotonic() + GENEROUS
    while not (found := condition()):
        assert time.monotonic() < deadline, f"still not {what} after {GENEROUS} s"
        time.sleep(0.1)
    return found


def evaluate(url: str, token: str) -> int:
    request = urllib.request.Request(
        url + "/api/v1/workspaces/default/evaluate",
        data=json.dumps({"language": "python", "specs": ["six"]}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=GENEROUS) as reply:
        return reply.status


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_a_worker_killed_outright_is_replaced_and_the_service_goes_on(tmp_path):
    server = served(serve_env(tmp_path), workers=2)
    with server as (url, said):
        token = owner_token(said)
        first = until(lambda: both_workers(server.process.pid), "two workers")
        victim = min(first)
        os.kill(victim, signal.SIGKILL)
        replaced = until(lambda: both_workers(server.process.pid, victim), "a worker in the killed one's place")
        assert server.process.poll() is None and replaced - first  # the same serve, a new worker
        wait_until_healthy(url)  # a connection the killed worker had accepted is lost with it
        assert all(evaluate(url, token) == 200 for _ in range(10))


def test_workers_exit_when_serve_is_killed_outright_so_a_restart_gets_the_port(tmp_path):
    env = serve_env(tmp_path)
    server = served(env, workers=2)
    url, _ = server.__enter__()
    workers = until(lambda: both_workers(server.process.pid), "two workers")
    server.process.kill()
    server.process.wait()
    server.process.stdout.close()
    server.process.stderr.close()
    until(lambda: not any(alive(w) for w in workers), "gone: the workers outlived their serve")
    port = url.rsplit(":", 1)[1]
    restarted = subprocess.run(  # the port is free again: a new serve binds it (and is stopped at once)
        [sys.executable, "-c", f"from interface.serve import check_port_free; check_port_free('127.0.0.1', {port})"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=GENEROUS,
    )
    assert restarted.returncode == 0, restarted.stderr


def test_a_connection_accepted_before_the_listener_got_the_stalled_client_cut_gets_it_too():
    """The cut is set on a worker's listener by a thread that can run late on a busy machine: a
    connection accepted before then did not inherit it, and a client that stopped reading held
    its thread (and the index's slot) for as long as it stayed."""
    import socket

    from interface.serve import cut_stalled_clients

    option = socket.TCP_USER_TIMEOUT
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        accepted, _ = listener.accept()
        with client, accepted:
            assert accepted.getsockopt(socket.IPPROTO_TCP, option) == 0
            cut_stalled_clients(7)
            assert listener.getsockopt(socket.IPPROTO_TCP, option) == 7000
            assert accepted.getsockopt(socket.IPPROTO_TCP, option) == 7000
            assert client.getsockopt(socket.IPPROTO_TCP, option) == 0  # not this server's side


def test_a_console_exports_share_is_keyed_by_its_session_alone():
    """Keyed by the whole Cookie header, another cookie added to each request made a new key."""
    from interface.index.bounds import IndexBounds

    bounds = IndexBounds(None, 5, "runcode_console")
    one = bounds._session({"HTTP_COOKIE": "runcode_console=abc; x=1"})
    other = bounds._session({"HTTP_COOKIE": "x=2; runcode_console=abc; theme=dark"})
    assert one == other == "abc"
    assert bounds._session({"HTTP_COOKIE": "x=1"}) == bounds._session({}) == ""
