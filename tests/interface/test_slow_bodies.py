"""Request bodies that arrive slowly (interface.bodies.ArrivingBodies), against a real `serve`.

Twenty clients trickling a byte of a POST body every few seconds held every request thread of a
worker: `/healthz` stopped answering for a minute (a reviewer's). While its body arrives a request
holds a body slot, one client address holds all of them but one, and the threads kept for
`/healthz` and for everyone else stay free."""

from __future__ import annotations

import json
import os
import select
import socket
import time
import urllib.error
import urllib.request

import pytest

from tests.support.service import owner_token, served

SLOW_ADDRESS = "127.0.0.2"  # the trickling client's own address (all of 127/8 is this machine's)


def trickle(port: int, path: str) -> socket.socket:
    """A POST that announces 1,000 bytes of body and sends one."""
    conn = socket.create_connection(("127.0.0.1", port), source_address=(SLOW_ADDRESS, 0))
    conn.sendall(
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n ".encode()
    )
    return conn


def call(url: str, token: str | None = None, body: dict | None = None) -> int:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="POST" if data else "GET")
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:
            status = reply.status
    except urllib.error.HTTPError as error:
        status = error.code
    assert time.monotonic() - started < 1, url
    return status


def _answers(conns: list[socket.socket], expected: int, within: float = 30) -> dict:
    """The status of each connection answered, until `expected` are (or `within` seconds pass)."""
    answered: dict = {}
    deadline = time.monotonic() + within
    while len(answered) < expected and time.monotonic() < deadline:
        ready, _, _ = select.select([c for c in conns if c not in answered], [], [], 0.5)
        for conn in ready:
            answered[conn] = conn.recv(200).split(b" ", 2)[1]
    return answered


@pytest.fixture
def service(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNCODE_POLICY_")}
    env["RUNCODE_POLICY_DATA_DIR"] = str(tmp_path)
    with served(env, workers=1, threads=4) as (url, said):
        yield url, owner_token(said)


def test_bodies_trickling_in_leave_healthz_and_another_clients_evaluate_answering(service):
    url, token = service
    port = int(url.rsplit(":", 1)[1])
    evaluate = "/api/v1/workspaces/default/evaluate"
    slow = [trickle(port, evaluate) for _ in range(20)]
    try:
        time.sleep(1.5)  # past the half second a request waits for a slot
        for _ in range(5):
            assert call(url + "/healthz") == 200
            assert call(url + evaluate, token, {"language": "python", "specs": ["six"]}) == 200
        # one of them (whichever the server took first) holds its address's share, still
        # arriving; every other one is refused, at once or after the half second of a wait
        answered = _answers(slow, len(slow) - 1)
        assert sorted(answered.values()) == [b"429"] * (len(slow) - 1), answered
    finally:
        for conn in slow:
            conn.close()
