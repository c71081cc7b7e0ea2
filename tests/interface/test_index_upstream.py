"""The index's upstream as production networks have it, through the real `serve` command: an
upstream signed by a private CA, an outbound proxy, file hosts on private addresses, upstreams
that trickle, clients that stop reading, and the settings that refuse to start."""

from __future__ import annotations

import base64
import http.client
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
import trustme

from interface.serve import NATIVE_STILL_RUNNING
from tests.support.clients import pip_install
from tests.support.gate import Gate
from tests.support.pypi_upstream import Dist, PyPIUpstream
from tests.support.service import owner_token, served
from tests.support.target_env import TargetEnv
from tests.support.upstream_network import BIG_FILE_BYTES, ForwardProxy, SlowUpstream, TLSFront

JSON = "application/vnd.pypi.simple.v1+json"
UNTRUSTED = "upstream TLS certificate not trusted: set RUNCODE_POLICY_UPSTREAM_CA_BUNDLE"


@pytest.fixture
def ca(tmp_path):
    authority = trustme.CA()
    authority.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    return authority


@pytest.fixture
def tls_upstream(ca):
    """The fixture index behind TLS signed by the private CA (as a TLS-inspecting proxy signs)."""
    fixture = PyPIUpstream()
    front = TLSFront(fixture, ca.issue_cert("127.0.0.1"))
    yield front
    front.close()
    fixture.close()


def service_env(database_url: str, pypi: str, **settings: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNCODE_POLICY_")}
    return {**env, "RUNCODE_POLICY_DATABASE_URL": database_url, "RUNCODE_POLICY_PYPI_UPSTREAM": pypi, **settings}


def fetch(url: str, token: str, accept: str = JSON, timeout: float = 30, method: str = "GET", body=None):
    """(status, reason phrase, headers, body) of one request, refusals included."""
    request = urllib.request.Request(url, method=method, data=body, headers={"Authorization": f"Bearer {token}"})
    request.add_header("Accept", accept)
    if body is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return reply.status, reply.reason, reply.headers, reply.read()
    except urllib.error.HTTPError as error:
        return error.code, error.reason, error.headers, error.read()


# -- trust ---------------------------------------------------------------------------------------
def test_an_upstream_signed_by_a_private_ca_is_refused_with_the_reason_until_its_bundle_is_set(
    database_url, tls_upstream, tmp_path
):
    env = service_env(database_url, tls_upstream.url + "/simple/", RUNCODE_POLICY_NPM_UPSTREAM=tls_upstream.url + "/")
    with (service := served(env)) as (url, said):
        token = owner_token(said)
        status, _, _, body = fetch(f"{url}/pypi/default/simple/alpha/", token)
        assert status == 502 and UNTRUSTED in json.loads(body)["detail"]
        status, _, _, body = fetch(f"{url}/npm/default/left-pad", token, accept="application/json")
        assert status == 502 and UNTRUSTED in json.loads(body)["error"]  # what npm prints
        refused = pip_install(tmp_path / "refused", f"{url}/pypi/default/simple/", token, "--retries", "0", "alpha")
        assert not refused.ok and "alpha" in refused.output
    assert NATIVE_STILL_RUNNING not in service.log  # the failures' requests ended: the stop did not wait them out
    trusted = {**env, "RUNCODE_POLICY_UPSTREAM_CA_BUNDLE": str(tmp_path / "ca.pem")}
    with served(trusted) as (url, said):
        installed = pip_install(tmp_path / "pip", f"{url}/pypi/default/simple/", token, "alpha")
        assert installed.ok, installed.output
        assert (tmp_path / "pip" / "site" / "alpha").is_dir() and (tmp_path / "pip" / "site" / "beta").is_dir()


def test_the_gate_prints_why_the_upstream_failed_an_install_and_the_log_says_why(database_url, tls_upstream, tmp_path):
    """pip prints only the status line of the index's 502 (the server sends the standard reason
    phrase): the gate reads the run's recorded upstream failure and prints its reason."""
    target = TargetEnv(tmp_path / "venv")
    gate = Gate(tmp_path, installer_path=f"{target.bin}:/usr/bin:/bin")
    service = served(service_env(database_url, tls_upstream.url + "/simple/"))
    with service as (url, said):
        (tmp_path / "home").mkdir()
        env = {"RUNCODE_POLICY_URL": url, "RUNCODE_POLICY_TOKEN": owner_token(said), "HOME": str(tmp_path / "home")}
        done = gate("--", "pip", "install", "--retries", "0", "alpha", env=env, cwd=tmp_path)
    assert done.returncode == 1 and "alpha" not in target.installed(), done.stderr  # pip's own status stands
    printed = [line for line in done.stderr.splitlines() if line.startswith("runcode-policy-gate: upstream failed")]
    assert len(printed) == 1 and "alpha (python)" in printed[0] and UNTRUSTED in printed[0], done.stderr
    logged = [line for line in service.log.splitlines() if "upstream fetch failed" in line]
    assert logged and all(UNTRUSTED in line for line in logged), service.log


def test_the_system_trust_store_is_used_so_ssl_cert_file_is_honoured(database_url, tls_upstream, tmp_path):
    env = service_env(database_url, tls_upstream.url + "/simple/", SSL_CERT_FILE=str(tmp_path / "ca.pem"))
    with served(env) as (url, said):
        status, _, _, body = fetch(f"{url}/pypi/default/simple/alpha/", owner_token(said))
        assert status == 200 and json.loads(body)["name"] == "alpha"


def test_the_trust_is_built_once_per_process_and_anew_when_the_bundle_changes(ca, tmp_path):
    from interface.settings import trust

    def trusted(context) -> set[str]:  # the private CAs a context trusts, by serial number
        return {c["serialNumber"] for c in context.get_ca_certs() if "trustme" in str(c["subject"])}

    bundle = tmp_path / "ca.pem"
    first = trust(str(bundle))
    assert trust(str(bundle)) is first  # the system's store is loaded once, not per upstream or app
    replacement = trustme.CA()
    replacement.cert_pem.write_to_path(str(bundle))
    later = bundle.stat().st_mtime_ns + 10**9
    os.utime(bundle, ns=(later, later))  # replaced by the operator, a moment later
    assert trusted(trust(str(bundle))) == trusted(ssl_context_of(bundle)) != trusted(first)


def ssl_context_of(bundle):
    import ssl

    context = ssl.create_default_context()
    context.load_verify_locations(cafile=str(bundle))
    return context


# -- the proxy -----------------------------------------------------------------------------------
def test_the_upstream_proxy_carries_every_upstream_fetch_when_it_is_set(database_url, tls_upstream, tmp_path):
    proxy = ForwardProxy()
    plain = PyPIUpstream()
    try:
        env = service_env(
            database_url,
            plain.url + "/simple/",
            RUNCODE_POLICY_NPM_UPSTREAM=tls_upstream.url + "/",
            RUNCODE_POLICY_UPSTREAM_PROXY=proxy.url,
            RUNCODE_POLICY_UPSTREAM_CA_BUNDLE=str(tmp_path / "ca.pem"),
        )
        with served(env) as (url, said):
            token = owner_token(said)
            assert fetch(f"{url}/pypi/default/simple/alpha/", token)[0] == 200
            wheel = next(f for f in plain.projects["alpha"].files if f.filename.endswith(".whl"))
            status, _, _, body = fetch(f"{url}/pypi/default/files/alpha/{wheel.filename}", token, accept="*/*")
            assert status == 200 and body == wheel.data
            fetch(f"{url}/npm/default/left-pad", token, accept="application/json")
        assert f"GET {plain.url}/simple/alpha/" in proxy.seen
        assert any(line.startswith("GET ") and line.endswith(wheel.filename) for line in proxy.seen)
        assert f"CONNECT {tls_upstream.url.removeprefix('https://')}" in proxy.seen  # TLS: tunnelled
        proxy.close()
        with served(env) as (url, said):  # the proxy is gone: the answer says so
            status, _, _, body = fetch(f"{url}/pypi/default/simple/beta/", token)
            assert status == 503 and "the upstream proxy 127.0.0.1 cannot be reached" in json.loads(body)["detail"]
            assert "RUNCODE_POLICY_UPSTREAM_PROXY" in json.loads(body)["detail"]
    finally:
        plain.close()


# -- file hosts ----------------------------------------------------------------------------------
def test_files_fetched_one_after_another_never_find_the_previous_one_still_holding_its_slot(database_url):
    """Two slots, both a token's share: granian asked a streamed body past its last bytes only
    when it dropped it, seconds later, so a client fetching one file after another (pip, npm)
    found its previous request still counted, 429, and npm failed the install (a reviewer's)."""
    upstream = PyPIUpstream()
    try:
        wheel = next(f for f in upstream.projects["alpha"].files if f.filename.endswith(".whl"))
        with served(service_env(database_url, upstream.url + "/simple/"), workers=1, threads=4) as (url, said):
            token = owner_token(said)
            answers = [
                fetch(f"{url}/pypi/default/files/alpha/{wheel.filename}", token, accept="*/*") for _ in range(40)
            ]
        assert [status for status, *_ in answers] == [200] * 40
        assert all(body == wheel.data for *_, body in answers)
    finally:
        upstream.close()


def test_a_file_host_on_a_private_address_is_fetched_only_when_the_operator_vouches_for_it(database_url):
    """`localhost` (127.0.0.1) stands in for a mirror's file host on a private address."""
    upstream = PyPIUpstream(dists=())
    upstream.add(Dist("gamma", "0.1", files=("wheel",)), host="localhost")
    upstream.other_port = upstream.port  # localhost:<port> is this very server
    wheel = upstream.projects["gamma"].files[0]
    token = None
    try:
        for vouched in ("", "mirror.example, localhost"):
            env = service_env(database_url, upstream.url + "/simple/", RUNCODE_POLICY_UPSTREAM_FILE_HOSTS=vouched)
            with served(env) as (url, said):
                token = token or owner_token(said)  # printed on the first start only
                page = json.loads(fetch(f"{url}/pypi/default/simple/gamma/", token)[3])
                status, _, _, body = fetch(f"{url}/pypi/default/files/gamma/{wheel.filename}", token, accept="*/*")
            if vouched:
                assert [f["filename"] for f in page["files"]] == [wheel.filename]
                assert status == 200 and body == wheel.data
            else:
                assert page["files"] == []
                assert status == 403 and "egress rules refuse" in json.loads(body)["detail"]
    finally:
        upstream.close()


def test_a_file_host_is_judged_by_every_address_it_resolves_to_however_many(app, monkeypatch):
    """The service's own fetch from a file host judges the whole DNS answer: past 64 addresses it
    was refused with a 422 about `resolved` (a caller's field); an answer too long to judge whole
    is refused, fail closed. No local DNS serves 100 records: the system resolver is stood in for."""
    from interface.index.upstream import Upstream, UpstreamProblem

    answers = {
        "mixed.example": [f"93.185.0.{i}" for i in range(1, 101)] + ["10.1.1.1"],  # the private one last
        "public.example": [f"93.185.{i // 250}.{i % 250 + 1}" for i in range(100)],
        "huge.example": [f"93.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}" for i in range(2000)],
    }
    monkeypatch.setattr(
        socket, "getaddrinfo", lambda host, port, **_: [(2, 1, 6, "", (a, port)) for a in answers[host]]
    )
    upstream = Upstream("http://127.0.0.1:9/simple/", app.egress.judge_upstream_egress)
    try:
        with pytest.raises(UpstreamProblem) as refused:
            upstream._request("GET", "http://mixed.example/files/a.whl", {})
        assert refused.value.status == 403 and "private-range" in refused.value.detail
        pinned = upstream._request("GET", "http://public.example/files/a.whl", {})
        assert pinned.url.host == "93.185.0.1" and pinned.headers["Host"] == "public.example"
        with pytest.raises(UpstreamProblem) as unjudged:
            upstream._request("GET", "http://huge.example/files/a.whl", {})
        assert unjudged.value.status == 503 and "more than 1024 addresses" in unjudged.value.detail
    finally:
        upstream.close()


def test_the_gate_says_the_file_host_was_refused_when_the_page_offers_no_file_of_it(database_url, tmp_path):
    """A page whose files all lie on a refused host offers none of them: pip said only "from
    versions: none", the run held an allowed page decision and nothing saying why."""
    upstream = PyPIUpstream(dists=())
    upstream.add(Dist("gamma", "0.1", files=("wheel",)), host="localhost")
    upstream.other_port = upstream.port
    target = TargetEnv(tmp_path / "venv")
    gate = Gate(tmp_path, installer_path=f"{target.bin}:/usr/bin:/bin")
    try:
        with served(service_env(database_url, upstream.url + "/simple/")) as (url, said):
            (tmp_path / "home").mkdir()
            env = {"RUNCODE_POLICY_URL": url, "RUNCODE_POLICY_TOKEN": owner_token(said), "HOME": str(tmp_path / "home")}
            done = gate("--", "pip", "install", "--retries", "0", "gamma", env=env, cwd=tmp_path)
    finally:
        upstream.close()
    assert done.returncode == 1 and "gamma" not in target.installed(), done.stderr
    printed = [line for line in done.stderr.splitlines() if line.startswith("runcode-policy-gate: upstream failed")]
    assert len(printed) == 1 and "gamma (python)" in printed[0], done.stderr
    assert "files on localhost, which the egress rules refuse" in printed[0]
    assert "RUNCODE_POLICY_UPSTREAM_FILE_HOSTS" in printed[0], printed


# -- settings that refuse to start ---------------------------------------------------------------
def test_bad_upstream_settings_refuse_the_start_naming_each_one(database_url, tmp_path):
    env = service_env(
        database_url,
        "https://pypi.org/simple/",
        RUNCODE_POLICY_UPSTREAM_CA_BUNDLE=str(tmp_path / "missing.pem"),
        RUNCODE_POLICY_UPSTREAM_PROXY="socks5://proxy.example:1080",
        RUNCODE_POLICY_UPSTREAM_FILE_HOSTS="files.example, https://files.example/, 10.0.0.7",
        RUNCODE_POLICY_UPSTREAM_FILE_DEADLINE="forever",
    )
    done = subprocess.run(
        [sys.executable, "-m", "interface.cli", "serve", "--port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[0] == "Error: invalid upstream settings (the service does not start):"
    assert lines[1:] == [
        f"  RUNCODE_POLICY_UPSTREAM_CA_BUNDLE: no such file '{tmp_path / 'missing.pem'}'",
        "  RUNCODE_POLICY_UPSTREAM_PROXY: socks5://proxy.example is not an http:// or https:// proxy URL "
        "(http://proxy:3128)",
        "  RUNCODE_POLICY_UPSTREAM_FILE_HOSTS[1]: 'https://files.example/' is not a hostname: write the host name "
        "alone (files.example.com), not a URL or an address",
        "  RUNCODE_POLICY_UPSTREAM_FILE_HOSTS[2]: '10.0.0.7' is not a hostname: IP literals are not allowed "
        "(the entry ends in a number)",
        "  RUNCODE_POLICY_UPSTREAM_FILE_DEADLINE: 'forever' is not a whole number of seconds from 1 to 3600",
    ]


# -- deadlines and bounded threads ---------------------------------------------------------------
@pytest.fixture
def slow_upstream():
    upstream = SlowUpstream()
    yield upstream
    upstream.close()


def test_a_trickling_upstream_is_cut_at_the_page_and_file_deadlines(database_url, slow_upstream):
    env = service_env(
        database_url,
        slow_upstream.url + "/simple/",
        RUNCODE_POLICY_UPSTREAM_PAGE_DEADLINE="2",
        RUNCODE_POLICY_UPSTREAM_FILE_DEADLINE="3",
    )
    with served(env) as (url, said):
        token = owner_token(said)
        started = time.monotonic()
        status, _, _, body = fetch(f"{url}/pypi/default/simple/slow/", token)
        assert status == 504 and 2 <= time.monotonic() - started < 5
        assert json.loads(body)["detail"] == (
            "the upstream took longer than 2 s to send a page (127.0.0.1); "
            "the limit is RUNCODE_POLICY_UPSTREAM_PAGE_DEADLINE"
        )
        started = time.monotonic()
        request = urllib.request.Request(
            f"{url}/pypi/default/files/drip/drip-1.0.tar.gz", headers={"Authorization": f"Bearer {token}"}
        )
        with urllib.request.urlopen(request, timeout=30) as reply:  # headers in time, then a trickle
            assert reply.status == 200
            with pytest.raises(http.client.IncompleteRead):
                reply.read()
        assert 3 <= time.monotonic() - started < 7  # cut at the file deadline: a short body, refused by hash
        started = time.monotonic()  # a file its page gives a digest for: fetched whole into the cache first
        status, _, headers, body = fetch(f"{url}/pypi/default/files/hashed-drip/hashed-drip-1.0.tar.gz", token)
        assert status == 504 and 3 <= time.monotonic() - started < 7, body
        assert json.loads(body)["detail"].startswith("the upstream took longer than 3 s to send a file")


def test_a_page_kept_before_is_served_while_the_upstream_trickles_past_its_deadline(database_url, slow_upstream):
    """Too slow is as failed as unreachable: what was kept is served, not a 504."""
    env = service_env(
        database_url,
        slow_upstream.url + "/simple/",
        RUNCODE_POLICY_UPSTREAM_PAGE_DEADLINE="2",
        RUNCODE_POLICY_CACHE_PAGE_SECONDS="0",  # every request revalidates
    )
    server = served(env)
    with server as (url, said):
        token = owner_token(said)
        status, _, _, kept = fetch(f"{url}/pypi/default/simple/later/", token)
        assert status == 200
        slow_upstream.trickled.add("later")
        started = time.monotonic()
        status, _, _, body = fetch(f"{url}/pypi/default/simple/later/", token)
        assert (status, body) == (200, kept) and time.monotonic() - started >= 2  # asked, then gave up
        status, _, _, _ = fetch(f"{url}/pypi/default/simple/slow/", token)
        assert status == 504  # never kept: nothing to serve instead
    assert "took longer than 2 s to send a page (127.0.0.1); the limit is" in server.log
    assert "serving the copy of " + slow_upstream.url + "/simple/later/ kept before" in server.log


def test_stalled_downloads_and_a_trickling_upstream_leave_healthz_and_evaluate_answering(database_url, slow_upstream):
    """Ten clients open the 48 MiB file and stop reading, ten ask for a page that trickles: the
    service's own endpoints still answer within a second, and once the stalled clients are cut
    (RUNCODE_POLICY_STALLED_CLIENT_SECONDS) the file downloads whole again."""
    env = service_env(
        database_url,
        slow_upstream.url + "/simple/",
        RUNCODE_POLICY_STALLED_CLIENT_SECONDS="3",
        RUNCODE_POLICY_UPSTREAM_PAGE_DEADLINE="5",  # a trickle that got a slot ends within the test
    )
    with served(env) as (url, said):
        token = owner_token(said)
        assert fetch(f"{url}/pypi/default/simple/big/", token)[0] == 200
        port = int(url.rsplit(":", 1)[1])
        path = "/pypi/default/files/big/big-1.0.tar.gz"
        # The first stalled client takes a slot (once the page's request has let its slot go);
        # nine more then find every slot this token may hold taken.
        stalled = [_stall_holding_a_slot(port, token, path), *(_stall(port, token, path) for _ in range(9))]
        try:
            _hold(url, token, stalled)
        finally:
            for connection in stalled:
                connection.close()


DRIP = "/pypi/acme/files/drip/drip-1.0.tar.gz"  # a file the slow upstream trickles


@pytest.fixture
def three_slots(open_app, tmp_path, slow_upstream):
    """(app, server, its port, the owner token, another sandbox's token): a worker of three index
    slots, two a token may hold, over the trickling upstream."""
    from interface import create_app
    from tests.support.http_client import LiveServer

    env = {
        "RUNCODE_POLICY_DATA_DIR": str(tmp_path),
        "RUNCODE_POLICY_PYPI_UPSTREAM": slow_upstream.url + "/simple/",
        "RUNCODE_POLICY_REQUEST_THREADS": "5",  # 3 index slots, 2 per token
        "RUNCODE_POLICY_UPSTREAM_FILE_DEADLINE": "20",  # the trickles end soon after the test
    }
    app = open_app()
    owner = app.create_workspace("acme", by="founder")["token"]
    other = app.issue_token("acme", "other", "sandbox", by="founder")["token"]
    server = LiveServer(create_app(env=env, governance=app))
    yield app, server, int(server.url.rsplit(":", 1)[1]), owner, other
    server.close()


def _holding(port: int, credentials: list[str]) -> list:
    """Downloads of the trickling file that each hold a slot (past the page fetch: the download
    holds its slot while the file trickles)."""
    held = []
    for spelled in credentials:
        held.append(_asking(port, spelled, DRIP))
        time.sleep(0.5)
    return held


def _refused_as_over_its_share(port: int, spelled: str) -> None:
    asked = _asking(port, spelled, DRIP)
    try:
        assert _status_line(asked) == 429, spelled
    finally:
        asked.close()


def test_one_token_holds_its_share_of_the_slots_however_its_credential_is_spelled(three_slots):
    """Three slots, two a token may hold: two trickling downloads hold this token's share, and the
    same token spelled otherwise (the scheme's case, spaces, Basic's user name) is refused, not
    given the last slot, which another token still gets."""
    _, server, port, token, other = three_slots
    held = _holding(port, [f"Bearer {token}", spellings(token)[-1]])
    try:
        for spelled in spellings(token)[:-1]:
            _refused_as_over_its_share(port, spelled)
        assert server.call("GET", "/pypi/acme/simple/other/", other).status == 200
    finally:
        for connection in held:
            connection.close()


def test_one_sandboxs_runs_together_hold_one_tokens_share_of_the_slots(three_slots):
    """A sandbox may start 120 runs a minute: each run's token held a share of its own, and one
    sandbox held every index slot of a worker (a reviewer's). Three slots, two a token may hold:
    two runs of one sandbox hold its share, its third run is refused, another sandbox still served."""
    app, server, port, _, other = three_slots
    sandbox = app.issue_token("acme", "sbx", "sandbox", by="founder")["token"]

    def run_token() -> str:
        return "Bearer " + server.call("POST", "/api/v1/workspaces/acme/runs", sandbox, {}).json["token"]

    held = _holding(port, [run_token(), run_token()])
    try:
        _refused_as_over_its_share(port, run_token())
        assert server.call("GET", "/pypi/acme/simple/other/", other).status == 200
    finally:
        for connection in held:
            connection.close()


def test_exports_read_slowly_hold_a_tokens_share_of_the_slots_not_every_thread(tmp_path):
    """An export streams its rows as they are sent, so a client that reads slowly holds a thread:
    twenty by one auditor token held them all, and another sandbox's /evaluate waited a minute.
    They take the index's slots: the token's share, then 429, and /evaluate still answers."""
    from application.governance import Governance
    from application.index import registry_spec
    from application.store import store_env
    from domain.decision import Decision, DecisionRecord, Verdict

    url = f"sqlite:///{tmp_path / 'store.db'}"
    app = Governance(env=store_env(url))
    app.create_workspace("acme", by="founder")
    auditor = app.issue_token("acme", "audit", "auditor", by="founder")["token"]
    sandbox = app.issue_token("acme", "sbx", "sandbox", by="founder")["token"]
    verdict = Verdict(True, "not-on-the-deny-list")
    record = DecisionRecord.for_spec(registry_spec("python", "x" * 2000), verdict, 0, {}).to_dict()
    for _ in range(6):  # a CSV of over 20 MB: far more than the socket buffers hold unread
        app.writer.record(*(Decision(workspace="acme", record=record) for _ in range(1000)))
    app.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNCODE_POLICY_")}
    server = served({**env, "RUNCODE_POLICY_DATABASE_URL": url}, workers=1, threads=5)  # 3 slots, 2 a token
    with server as (base, _):
        port = int(base.rsplit(":", 1)[1])
        path = "/api/v1/workspaces/acme/decisions?format=csv"
        held = [_stall(port, auditor, path) for _ in range(5)]  # all five threads, unbounded
        try:
            assert sorted(_status_line(c) for c in held) == [200, 200, 429, 429, 429]
            body = json.dumps({"language": "python", "specs": ["six"]}).encode()
            asked = fetch(f"{base}/api/v1/workspaces/acme/evaluate", sandbox, timeout=15, method="POST", body=body)
            assert asked[0] == 200
        finally:
            for connection in held:
                connection.close()


def _asking(port: int, authorization: str, path: str) -> socket.socket:
    """A request sent, its answer left unread."""
    connection = socket.create_connection(("127.0.0.1", port))
    connection.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: {authorization}\r\n\r\n".encode())
    return connection


def _hold(url: str, token: str, stalled: list) -> None:
    """While the stalled clients and trickling pages hold what they can: the service's own
    endpoints answer within a second; after the stalled-client cut, the file downloads whole."""
    with ThreadPoolExecutor(10) as pool:
        trickling = [pool.submit(fetch, f"{url}/pypi/default/simple/slow/", token) for _ in range(10)]
        time.sleep(1)
        for _ in range(5):
            for path, method, body in (
                ("/healthz", "GET", None),
                (
                    "/api/v1/workspaces/default/evaluate",
                    "POST",
                    json.dumps({"language": "python", "specs": ["x"]}).encode(),
                ),
            ):
                started = time.monotonic()
                status = fetch(url + path, token, accept="application/json", timeout=5, method=method, body=body)[0]
                assert status == 200 and time.monotonic() - started < 1, path
            time.sleep(0.2)
        statuses = [200, *(_status_line(s) for s in stalled[1:])]  # the first one's was read when it stalled
        assert set(statuses) <= {200, 429, 503}, statuses  # 429: one token's share; 503: every slot taken
        busy = [f.result()[0] for f in trickling]
        assert set(busy) <= {429, 503, 504}, busy  # refused at once, or cut at the page deadline
    deadline = time.monotonic() + 30  # the stalled clients are cut after 3 s: their slots come back
    while True:
        status, _, headers, body = fetch(f"{url}/pypi/default/files/big/big-1.0.tar.gz", token, "*/*", 60)
        if status == 200 or time.monotonic() > deadline:
            break
        time.sleep(int(headers["Retry-After"]))
    assert status == 200 and len(body) == BIG_FILE_BYTES, (status, body[:300])


def _stall(port: int, token: str, path: str) -> socket.socket:
    """A client that asks for a file and never reads past the first bytes."""
    connection = _asking(port, f"Bearer {token}", path)
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    return connection


def _stall_holding_a_slot(port: int, token: str, path: str, within: float = 30) -> socket.socket:
    """A stalled client whose request got a slot (200), asked again while the slot is still busy."""
    deadline = time.monotonic() + within
    while True:
        connection = _stall(port, token, path)
        status = _status_line(connection)
        if status == 200:
            return connection
        connection.close()
        assert status in (429, 503) and time.monotonic() < deadline, status
        time.sleep(0.2)


def _status_line(connection: socket.socket) -> int:
    connection.settimeout(5)
    return int(connection.recv(64).split(b" ", 2)[1])


# -- names and rates -----------------------------------------------------------------------------
def test_a_name_longer_than_evaluate_allows_is_refused_and_never_recorded(live, app):
    before = len(app.audit.decisions("acme", limit=1000)["decisions"])
    name = "a" * 60_000
    for path, field in ((f"/pypi/acme/simple/{name}/", "project"), (f"/npm/acme/{name}", "name")):
        reply = live.call("GET", path, live.tokens["sandbox"])
        assert reply.status == 400 and reply.media == "application/problem+json"
        assert reply.json["errors"] == [{"field": field, "message": "must be at most 4096 characters (it has 60000)"}]
    assert len(app.audit.decisions("acme", limit=1000)["decisions"]) == before


def test_starting_runs_past_the_per_token_rate_is_429_with_retry_after(live):
    from domain.limits import RUN_STARTS_PER_MINUTE

    started, allowed = time.monotonic(), 0
    while (reply := live.call("POST", "/api/v1/workspaces/acme/runs", live.tokens["sandbox"], {})).status == 201:
        allowed += 1
        assert allowed <= 2 * RUN_STARTS_PER_MINUTE
    refilled = (time.monotonic() - started) * RUN_STARTS_PER_MINUTE / 60
    assert RUN_STARTS_PER_MINUTE <= allowed <= RUN_STARTS_PER_MINUTE + refilled + 1
    assert reply.status == 429 and int(reply.headers["retry-after"]) >= 1
    assert "at most 120 a minute" in reply.json["detail"]
    for spelled in spellings(live.tokens["sandbox"]):  # the same token, however its header spells it
        # A slot comes back every half second, and a busy machine may take that long between two
        # requests: one or two of four may get through. A spelling with a bucket of its own gets all four.
        statuses = [
            live.call("POST", "/api/v1/workspaces/acme/runs", body={}, headers={"Authorization": spelled}).status
            for _ in range(4)
        ]
        assert statuses.count(429) >= 2, (spelled, statuses)
    assert live.call("POST", "/api/v1/workspaces/acme/runs", live.tokens["admin"], {}).status == 201  # per token


def spellings(token: str) -> list[str]:
    """Every `Authorization` header that carries `token`, but its plainest one."""
    basic = [base64.b64encode(f"{user}:{token}".encode()).decode() for user in ("run", "pip")]
    return [f"bearer {token}", f"BEARER   {token}", f"Bearer {token}  ", *(f"Basic {b}" for b in basic)]


def test_bad_cache_settings_refuse_the_start_naming_each_one_once(database_url):
    env = service_env(
        database_url,
        "https://pypi.org/simple/",
        RUNCODE_POLICY_CACHE_PAGE_SECONDS="abc",
        RUNCODE_POLICY_CACHE_MAX_BYTES="0",
    )
    done = subprocess.run(
        [sys.executable, "-m", "interface.cli", "serve", "--port", "0"], env=env, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "Error: invalid index cache settings (the service does not start):",
        "  RUNCODE_POLICY_CACHE_MAX_BYTES: '0' is not a whole number of at least 1",
        "  RUNCODE_POLICY_CACHE_PAGE_SECONDS: 'abc' is not a whole number from 0 to 86400",
    ]
