"""What the package index delivered, recorded with each download decision: real pip and npm
through the index, the fixture upstreams refusing a file or dying mid-file. A download decision
is durable before the first byte; its delivery (served or failed, the bytes sent and their
sha256) follows when the transfer ends, so an allowed download whose bytes never arrived never
reads as a plain allow."""

from __future__ import annotations

import base64
import csv
import hashlib
import http.client
import io
import json
import time

import pytest

from domain.delivery import NOTHING_SENT
from tests.support import clients
from tests.support.fixture_server import CUT, CUT_CHUNKED
from tests.support.index_fixtures import run_decisions, set_policy, start_run, upstream_failure
from tests.support.index_live import index_live_env, sqlite_store  # noqa: F401 - fixtures live_env, database_url
from tests.support.pypi_upstream import Dist

WHEEL = "alpha-1.0-py3-none-any.whl"
GENEROUS = 30  # seconds: a bound on "eventually" (a delivery is recorded when the server closes the body)


def settled_downloads(live, run: dict) -> list[dict]:
    """The run's allowed download decisions, once each shows a delivery."""
    deadline = time.monotonic() + GENEROUS
    while True:
        downloads = [d for d in run_decisions(live, run) if d["request"] == "download" and d["allowed"]]
        if downloads and all("delivery" in d for d in downloads):
            return downloads
        assert time.monotonic() < deadline, f"no delivery recorded: {downloads}"
        time.sleep(0.05)


def pip(live, tmp_path, *args: str):
    run = start_run(live)
    return run, clients.pip_install(tmp_path, run["pypi"], run["token"], "--retries", "0", *args)


def test_a_wheel_pip_installs_reads_served_with_the_bytes_and_sha256_of_the_upstream_file(
    live, app, tmp_path, pypi_upstream
):
    set_policy(app, "allowlist", python=["alpha", "beta"])
    run, outcome = pip(live, tmp_path, "alpha")
    assert outcome.ok, outcome.output
    delivered = {d["file"]: d["delivery"] for d in settled_downloads(live, run)}
    assert set(delivered) == {WHEEL, "beta-1.1-py3-none-any.whl"}
    for filename, delivery in delivered.items():
        upstream = pypi_upstream.file(filename).data
        assert (delivery["status"], delivery["bytes"], delivery["sha256"]) == (
            "served",
            len(upstream),
            hashlib.sha256(upstream).hexdigest(),
        )


@pytest.mark.parametrize("fault", [403, 503, CUT])
def test_a_wheel_the_upstream_refuses_or_breaks_off_reads_failed_never_a_silent_allow(
    live, app, tmp_path, pypi_upstream, fault
):
    set_policy(app, "allowlist", python=["alpha", "beta"])
    pypi_upstream.faults[WHEEL] = fault
    run, outcome = pip(live, tmp_path, "alpha==1.0", "--no-deps")
    assert not outcome.ok, outcome.output
    (download,) = settled_downloads(live, run)
    # The policy allowed the file; nothing of it reached the client (a wheel is read whole
    # before it is served, to judge what it declares).
    assert (download["file"], download["allowed"]) == (WHEEL, True)
    assert download["delivery"] | {"at": None} == {"status": "failed", "bytes": 0, "sha256": NOTHING_SENT, "at": None}


def test_a_tarball_the_upstream_breaks_off_mid_file_reads_failed_with_the_bytes_sent(live, app, tmp_path, npm_upstream):
    set_policy(app, "allowlist", node=["beta"])
    tarball = "/beta/-/beta-1.0.0.tgz"
    npm_upstream.faults[tarball] = CUT
    run = start_run(live)
    outcome = clients.npm(tmp_path, run["npm"], run["token"], "install", "beta@1.0.0", "--fetch-retries=0")
    assert not outcome.ok, outcome.output
    downloads = settled_downloads(live, run)
    assert {d["file"] for d in downloads} == {"beta-1.0.0.tgz"}
    whole = npm_upstream.tarballs[tarball]
    for d in downloads:  # npm may ask again after a short body: each transfer failed
        assert all(t["status"] == "failed" and t["bytes"] < len(whole) for t in d["deliveries"]), d


@pytest.mark.parametrize("fault", [CUT, CUT_CHUNKED])
def test_a_file_relayed_unverified_that_the_upstream_breaks_off_reads_failed_and_the_run_says_why(
    live, pypi_upstream, fault
):
    """A file its page gives no digest for is relayed as it arrives (Python: an npm tarball with
    none is refused, as nothing verifies what the index reads of it). When the upstream breaks
    off (short of the length it announced, or with no last chunk), so does the client's transfer,
    the delivery reads failed with the bytes that went out, and the run records why."""
    pypi_upstream.add(Dist("unhashed", "1.0", files=("sdist",), hashed=False))
    file = pypi_upstream.file("unhashed-1.0.tar.gz")
    file.data += bytes(300_000)  # large enough that some of it goes out before the break
    pypi_upstream.faults[file.filename] = fault
    path = f"/pypi/acme/files/unhashed/{file.filename}"
    run = start_run(live)
    received = received_until_broken_off(live, run, path)
    (download,) = settled_downloads(live, run)
    delivery = download["delivery"]
    assert (delivery["status"], delivery["bytes"]) == ("failed", len(received)) and received
    assert delivery["sha256"] == hashlib.sha256(received).hexdigest()
    why = upstream_failure(live, run)
    assert (why["name"], why["request"], why["allowed"]) == ("unhashed", "download", False)
    assert why["message"] == "the upstream stopped answering (127.0.0.1: RemoteProtocolError)"


def received_until_broken_off(live, run: dict, path: str) -> bytes:
    """What a client reads of `path` before its transfer breaks off (it must)."""
    connection = http.client.HTTPConnection(live.url.removeprefix("http://"), timeout=GENEROUS)
    try:
        connection.request("GET", path, headers={"Authorization": f"Bearer {run['token']}"})
        reply = connection.getresponse()
        assert reply.status == 200
        with pytest.raises(http.client.IncompleteRead) as broken:
            reply.read()
        return broken.value.partial
    finally:
        connection.close()


def test_a_tarball_npm_installs_reads_served_with_its_bytes_and_sha256(live, app, tmp_path, npm_upstream):
    set_policy(app, "allowlist", node=["beta"])
    run = start_run(live)
    outcome = clients.npm(tmp_path, run["npm"], run["token"], "install", "beta@1.0.0")
    assert outcome.ok, outcome.output
    (download,) = settled_downloads(live, run)
    whole = npm_upstream.tarballs["/beta/-/beta-1.0.0.tgz"]
    assert (download["delivery"]["status"], download["delivery"]["bytes"]) == ("served", len(whole))
    assert download["delivery"]["sha256"] == hashlib.sha256(whole).hexdigest()


def test_metadata_fetches_and_head_probes_are_metadata_and_deliver_nothing(live, app, tmp_path):
    set_policy(app, "allowlist", python=["alpha", "beta"])
    run, outcome = pip(live, tmp_path, "--dry-run", "alpha")  # resolves from PEP 658 metadata only
    assert outcome.ok, outcome.output
    auth = "Basic " + base64.b64encode(f"uv:{run['token']}".encode()).decode()
    probe = live.call("HEAD", "/pypi/acme/files/beta/beta-1.0-py3-none-any.whl", headers={"Authorization": auth})
    assert probe.status == 200
    decisions = run_decisions(live, run)
    assert {d["request"] for d in decisions} == {"page", "metadata"}
    metadata = {(d["name"], d["file"]) for d in decisions if d["request"] == "metadata"}
    assert metadata == {("alpha", "alpha-1.0-py3-none-any.whl"), ("beta", "beta-1.1-py3-none-any.whl")}
    assert not [d for d in decisions if "delivery" in d]


def test_the_delivery_is_shown_by_the_decisions_api_its_exports_and_the_console(live, app, tmp_path, pypi_upstream):
    from tests.interface.test_console import signed_in

    set_policy(app, "allowlist", python=["alpha"])
    run, outcome = pip(live, tmp_path, "alpha==1.0", "--no-deps")
    assert outcome.ok, outcome.output
    (download,) = settled_downloads(live, run)
    delivery = download["delivery"]
    assert download["deliveries"] == [delivery]
    decisions = "/api/v1/workspaces/acme/decisions"
    auditor = live.tokens["auditor"]
    assert live.call("GET", f"{decisions}/{download['id']}", auditor).json == download
    (listed,) = [d for d in live.call("GET", f"{decisions}?source=index", auditor).json["decisions"] if "delivery" in d]
    assert listed == download
    exported = live.call("GET", f"{decisions}?source=index&format=csv", auditor).body.decode()
    (row,) = [r for r in csv.DictReader(io.StringIO(exported)) if r["request"] == "download"]
    assert (row["delivery_status"], row["delivery_bytes"], row["delivery_sha256"], row["deliveries"]) == (
        "served",
        str(len(pypi_upstream.file(WHEEL).data)),
        delivery["sha256"],
        "1",
    )
    lines = live.call("GET", f"{decisions}?source=index&format=jsonl", auditor).body.decode().splitlines()
    assert download in [json.loads(line) for line in lines]
    rows = signed_in(live, "auditor").get("/console/audit", source="index").rows()
    shown = next(r for r in rows if WHEEL in r[3])
    assert shown[-1].startswith(f"served {len(pypi_upstream.file(WHEEL).data):,} bytes")
    assert f"sha256 {delivery['sha256'][:16]}" in shown[-1]
