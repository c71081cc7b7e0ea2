"""What a download's delivery counts as sent, through the real `serve` (granian, as production
runs it): a client gone before its first byte reads `failed` with nothing sent (not the chunk the
server had taken but could not write), and a transfer read to its end reads whole, with the bytes
and sha256 of what was sent: from the upstream, from the kept copy, or a range."""

from __future__ import annotations

import hashlib
import json
import random
import socket
import struct
import threading
import time
import urllib.request

import pytest

from domain.delivery import NOTHING_SENT
from tests.interface.test_index_upstream import service_env
from tests.support.index_live import sqlite_store  # noqa: F401 - the database_url fixture
from tests.support.pypi_upstream import Dist
from tests.support.service import owner_token, served

W = "/api/v1/workspaces/default"
GENEROUS = 30  # seconds: a bound on "eventually" (a delivery is recorded when the server closes the body)
BIG = "big-1.0-py3-none-any.whl"  # 4 MiB: sent in many chunks
SMALL = "alpha-1.0-py3-none-any.whl"  # sent in one
RELAYED = "unhashed-1.0.tar.gz"  # its page gives no digest: relayed as it arrives, not read first


@pytest.fixture
def service(database_url, pypi_upstream):
    """(its URL, the owner token) of `serve` in front of the fixture upstream."""
    pypi_upstream.add(Dist("big", "1.0", files=("wheel",), more=(("big/blob", random.Random(0).randbytes(4 << 20)),)))
    pypi_upstream.add(Dist("unhashed", "1.0", files=("sdist",), hashed=False))
    with served(service_env(database_url, pypi_upstream.url + "/simple/"), workers=1, threads=4) as (url, said):
        yield url, owner_token(said)


def test_a_client_gone_before_its_first_byte_reads_failed_with_nothing_sent(service, pypi_upstream):
    """The client resets its connection once the index has its request (the upstream holds the
    file until then): granian takes the body's first chunk, cannot write it, and closes the
    body. That chunk was never sent: 0 bytes and the hash of nothing, whether the file is one
    chunk or many, verified first or relayed as it arrives."""
    for filename in (BIG, SMALL, RELAYED):
        run = start_run(service)
        with upstream_holding(pypi_upstream, filename) as asked:
            client = socket.create_connection(address(service))
            asking = f"GET {file_path(filename)} HTTP/1.1\r\nHost: index\r\nAuthorization: Bearer {run['token']}\r\n"
            client.sendall(asking.encode() + b"\r\n")
            assert asked.wait(GENEROUS), filename
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            client.close()  # with no lingering: a reset
        assert settled(service, run) | {"at": None} == {
            "status": "failed",
            "bytes": 0,
            "sha256": NOTHING_SENT,
            "at": None,
        }, filename


def test_a_file_read_to_its_end_reads_whole_with_the_bytes_and_sha256_sent(service, pypi_upstream):
    for filename, whole in ((BIG, "served"), (BIG, "cached"), (SMALL, "served"), (RELAYED, "served")):
        received, delivered = download(service, filename)
        assert received == pypi_upstream.file(filename).data
        assert delivered | {"at": None} == {
            "status": whole,
            "bytes": len(received),
            "sha256": hashlib.sha256(received).hexdigest(),
            "at": None,
        }, filename
    part, delivered = download(service, BIG, Range="bytes=1000-99999")  # kept: the range of the copy
    assert part == pypi_upstream.file(BIG).data[1000:100_000]
    assert (delivered["status"], delivered["bytes"], delivered["sha256"]) == (
        "cached",
        len(part),
        hashlib.sha256(part).hexdigest(),
    )


class upstream_holding:
    """The fixture upstream holds its answer for `filename` until the block ends; the block's
    value is set once the index asked for it (it has the client's request, judged and recorded)."""

    def __init__(self, upstream, filename: str):
        self.upstream, self.filename = upstream, filename
        self.asked, self.release = threading.Event(), threading.Event()

    def __enter__(self) -> threading.Event:
        respond = self.upstream.respond

        def holding(path: str, accept: str):
            if path.endswith("/" + self.filename):
                self.asked.set()
                self.release.wait(GENEROUS)
            return respond(path, accept)

        self.upstream.respond = holding
        return self.asked

    def __exit__(self, *exc) -> None:
        self.release.set()
        del self.upstream.respond  # the class's own again


def download(service, filename: str, **headers: str) -> tuple[bytes, dict]:
    """What a client reading `filename` to its end in a run of its own received, and its delivery."""
    run = start_run(service)
    status, body = call(service, file_path(filename), run["token"], headers)
    assert status in (200, 206), body
    return body, settled(service, run)


def start_run(service) -> dict:
    status, body = call(service, W + "/runs", service[1], {"Content-Type": "application/json"}, b"{}")
    assert status == 201, body
    return json.loads(body)


def settled(service, run: dict) -> dict:
    """The run's one download's delivery, once recorded."""
    deadline = time.monotonic() + GENEROUS
    while True:
        status, body = call(service, f"{W}/runs/{run['id']}/decisions", service[1])
        assert status == 200, body
        downloads = [d for d in json.loads(body)["decisions"] if d["request"] == "download"]
        if downloads and "delivery" in downloads[0]:
            (download,) = downloads
            return download["delivery"]
        assert time.monotonic() < deadline, f"no delivery recorded: {downloads}"
        time.sleep(0.05)


def call(service, path: str, token: str, headers: dict | None = None, body: bytes | None = None):
    request = urllib.request.Request(service[0] + path, data=body, headers={"Authorization": f"Bearer {token}"})
    for key, value in (headers or {}).items():
        request.add_header(key, value)
    with urllib.request.urlopen(request, timeout=GENEROUS) as reply:
        return reply.status, reply.read()


def address(service) -> tuple[str, int]:
    host, port = service[0].removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def file_path(filename: str) -> str:
    return f"/pypi/default/files/{filename.split('-')[0]}/{filename}"
