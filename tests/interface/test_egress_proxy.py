"""The enforcing egress proxy, on loopback only: a real upstream HTTP server on 127.0.0.1, a fake
resolver, and a TEST-ONLY allowance of 127.0.0.1 (EgressConfig.allow_addresses).

These run on SQLite only: the proxy reaches the store through `EgressJudge.evaluate_egress` and
its group-commit writer, which the API tests run on both backends; PostgreSQL would add time, not
coverage.
"""

from __future__ import annotations

import http.client
import logging
import socket
import sqlite3
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from click.testing import CliRunner

from application.egress import EgressConfig
from application.governance import Governance
from domain.limits import MAX_LABEL, MAX_LOOKUP_ADDRESSES, MAX_RESOLVED, MAX_TEXT
from interface.cli.egress_proxy import egress_proxy_command, parse_listen
from interface.egress_proxy import EgressProxy, ProxyLimits
from tests.support.background import serve_in_background

LOOPBACK_ONLY = EgressConfig(allow_addresses=("127.0.0.1",))  # test-only: our upstream is local
NAMES = {
    "upstream.test": ["127.0.0.1"],
    "private.test": ["10.0.0.5"],
    "meta.test": ["169.254.169.254"],
    "mixed.test": ["127.0.0.1", "10.0.0.5"],
}
WAIT = 5.0


class FakeResolver:
    def __init__(self):
        self.calls: list[str] = []

    def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append(host)
        if host not in NAMES:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return NAMES[host]


class _UpstreamHandler(BaseHTTPRequestHandler):
    timeout = WAIT  # a held-open tunnel must not keep this thread forever

    def do_GET(self):
        self.server.seen.append((self.path, dict(self.headers)))
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "http://169.254.169.254/latest/meta-data/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = b"hello from upstream"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def upstream():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _UpstreamHandler)
    server.daemon_threads = True
    server.seen = []
    serve_in_background(server)
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def database_url(tmp_path) -> str:
    """SQLite only: the proxy records through the same writer the API tests run on both stores."""
    return f"sqlite:///{tmp_path}/store.sqlite"


@pytest.fixture
def open_governance(open_app):
    return lambda config=LOOPBACK_ONLY: open_app(egress=config)


@pytest.fixture
def governance(open_governance) -> Governance:
    governance = open_governance()
    governance.create_workspace("acme", by="founder")
    return governance


@pytest.fixture
def resolver() -> FakeResolver:
    return FakeResolver()


@pytest.fixture
def start_proxy(resolver):
    started = []

    def _start(governance: Governance, **limits) -> EgressProxy:
        limits = {"connect_timeout": 2.0, "idle_timeout": 3.0, **limits}
        proxy = EgressProxy(
            governance, "acme", ("127.0.0.1", 0), resolver=resolver, limits=ProxyLimits(**limits), sandbox="sbx-1"
        ).start(poll_interval=0.05)
        started.append(proxy)
        return proxy

    yield _start
    for proxy in started:
        proxy.close()


@pytest.fixture
def proxy(start_proxy, governance) -> EgressProxy:
    return start_proxy(governance)


# -- small clients -----------------------------------------------------------------------------
def _read_until_closed(sock: socket.socket) -> bytes:
    data, deadline = b"", time.monotonic() + WAIT
    while time.monotonic() < deadline:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def _connect(proxy: EgressProxy, authority: str) -> tuple[socket.socket, str]:
    """Send CONNECT; return the socket and the proxy's answer head."""
    sock = socket.create_connection(proxy.server_address[:2], timeout=WAIT)
    sock.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head and len(head) < 65536:
        chunk = sock.recv(1)
        if not chunk:
            break
        head += chunk
    return sock, head.decode("latin-1")


def _get(proxy: EgressProxy, url: str) -> http.client.HTTPResponse:
    """Plain HTTP through the proxy (absolute-form); http.client never follows redirects."""
    conn = http.client.HTTPConnection(*proxy.server_address[:2], timeout=WAIT)
    conn.request("GET", url, headers={"Proxy-Connection": "keep-alive", "X-Kept": "yes"})
    response = conn.getresponse()
    response.body = response.read()
    conn.close()
    return response


def _decisions(governance: Governance) -> list[dict]:
    return list(reversed(governance.audit.decisions("acme", {"kind": "egress"})["decisions"]))


# -- what gets through -------------------------------------------------------------------------
def test_an_allowed_upstream_is_reached_through_a_connect_tunnel(proxy, governance, upstream, resolver):
    port = upstream.server_address[1]
    sock, head = _connect(proxy, f"upstream.test:{port}")
    with sock:
        assert head.startswith("HTTP/1.1 200 ")
        sock.sendall(b"GET /through-the-tunnel HTTP/1.0\r\nHost: upstream.test\r\n\r\n")
        assert b"hello from upstream" in _read_until_closed(sock)
    assert [path for path, _ in upstream.seen] == ["/through-the-tunnel"]
    assert resolver.calls == ["upstream.test"]  # resolved once, by the proxy
    (decision,) = _decisions(governance)
    assert (decision["allowed"], decision["name"], decision["port"]) == (True, "upstream.test", port)
    assert decision["resolved"] == ["127.0.0.1"] and decision["context"]["source"] == "egress-proxy"
    assert decision["context"]["sandbox"] == "sbx-1" and decision["spec"] == f"upstream.test:{port}"


def test_an_allowed_upstream_is_reached_with_plain_http(proxy, governance, upstream):
    port = upstream.server_address[1]
    response = _get(proxy, f"http://upstream.test:{port}/ok?token=secret")
    assert response.status == 200 and response.body == b"hello from upstream"
    ((path, headers),) = upstream.seen
    assert path == "/ok?token=secret"  # origin-form: the proxy does not pass absolute URLs on
    assert headers["Host"] == f"upstream.test:{port}" and headers["X-Kept"] == "yes"
    assert "Proxy-Connection" not in headers and headers["Connection"] == "close"
    (decision,) = _decisions(governance)
    assert decision["spec"] == f"http://upstream.test:{port}/"  # the origin; no query in the log


def test_a_redirect_from_upstream_is_relayed_to_the_client_not_followed(proxy, governance, upstream):
    response = _get(proxy, f"http://upstream.test:{upstream.server_address[1]}/redirect")
    assert response.status == 302
    assert response.getheader("Location") == "http://169.254.169.254/latest/meta-data/"
    assert len(upstream.seen) == 1 and len(_decisions(governance)) == 1


# -- what does not -----------------------------------------------------------------------------
def test_the_metadata_address_is_refused_with_its_reason(proxy, governance, upstream, resolver):
    response = _get(proxy, "http://169.254.169.254/latest/meta-data/")
    assert response.status == 403 and response.getheader("X-Runcode-Policy-Reason") == "cloud-metadata"
    assert b"cloud-metadata" in response.body and b"169.254.169.254" in response.body
    sock, head = _connect(proxy, "169.254.169.254:80")
    sock.close()
    assert head.startswith("HTTP/1.1 403 ") and "X-Runcode-Policy-Reason: cloud-metadata" in head
    assert resolver.calls == [] and upstream.seen == []
    assert [d["reason"] for d in _decisions(governance)] == ["cloud-metadata", "cloud-metadata"]
    assert response.getheader("X-Runcode-Policy-Decision") == _decisions(governance)[0]["id"]


@pytest.mark.parametrize(
    "name,reason", [("private.test", "private-range"), ("meta.test", "cloud-metadata"), ("mixed.test", "private-range")]
)
def test_a_name_that_resolves_to_a_forbidden_address_is_refused(proxy, governance, upstream, name, reason):
    port = upstream.server_address[1]
    sock, head = _connect(proxy, f"{name}:{port}")
    body = _read_until_closed(sock).decode()
    sock.close()
    assert head.startswith("HTTP/1.1 403 ") and f"X-Runcode-Policy-Reason: {reason}" in head
    assert reason in body
    # mixed.test also resolves to the upstream's own address: failing closed means never dialling it
    assert upstream.seen == []
    (decision,) = _decisions(governance)
    assert decision["reason"] == reason and decision["resolved"] == NAMES[name]


def test_a_name_off_the_allowlist_is_refused_without_being_resolved(open_governance, start_proxy, resolver, upstream):
    config = EgressConfig(hostname_allowlist=("*.example.org",), allow_addresses=("127.0.0.1",))
    governance = open_governance(config)
    governance.create_workspace("acme", by="founder")
    proxy = start_proxy(governance)
    sock, head = _connect(proxy, f"upstream.test:{upstream.server_address[1]}")
    sock.close()
    assert head.startswith("HTTP/1.1 403 ") and "not-on-hostname-allowlist" in head
    assert resolver.calls == []  # a refused name is never looked up (DNS can exfiltrate)
    assert [d["reason"] for d in _decisions(governance)] == ["not-on-hostname-allowlist"]


def test_a_port_off_the_deployments_port_policy_is_refused_before_any_lookup(
    open_governance, start_proxy, resolver, upstream
):
    port = upstream.server_address[1]
    governance = open_governance(EgressConfig(ports=(443, port), allow_addresses=("127.0.0.1",)))
    governance.create_workspace("acme", by="founder")
    proxy = start_proxy(governance)
    refused, head = _connect(proxy, "upstream.test:22")
    body = _read_until_closed(refused).decode()
    refused.close()
    assert head.startswith("HTTP/1.1 403 ") and "port 22 is not allowed" in body
    assert resolver.calls == [] and upstream.seen == []
    assert _get(proxy, f"http://upstream.test:{port}/on-a-listed-port").status == 200
    assert [d["reason"] for d in _decisions(governance)] == ["port-not-allowed", "allowed"]


@pytest.mark.parametrize("authority", ["registry.npmjs.org:443", "files.pythonhosted.org:443", "PyPI.org.:443"])
def test_a_public_package_registry_is_refused_by_name_pointing_at_the_index(proxy, governance, resolver, authority):
    sock, head = _connect(proxy, authority)
    body = _read_until_closed(sock).decode()
    sock.close()
    assert head.startswith("HTTP/1.1 403 ") and "X-Runcode-Policy-Reason: package-registry" in head
    assert "public package registry" in body and "package index" in body and "runcode-policy-gate" in body
    assert resolver.calls == []  # refused before any lookup
    (decision,) = _decisions(governance)
    assert (decision["allowed"], decision["reason"]) == (False, "package-registry")


def test_plain_http_to_a_registry_is_refused_even_when_allowlisted(open_governance, start_proxy, resolver):
    proxy = start_proxy(open_governance(EgressConfig(hostname_allowlist=("pypi.org",))))
    response = _get(proxy, "http://pypi.org/simple/requests/")
    assert response.status == 403 and response.getheader("X-Runcode-Policy-Reason") == "package-registry"
    assert resolver.calls == []


def test_the_proxy_refuses_to_dial_itself_and_records_the_refusal(proxy, governance, monkeypatch):
    """The decision was recorded `allowed` before the dial found the loop and answered 508: now
    the loop is found before, and the record says it was refused."""
    port = proxy.server_address[1]
    monkeypatch.setitem(NAMES, "proxy.test", ["127.0.0.1"])
    for authority in (f"127.0.0.1:{port}", f"proxy.test:{port}"):
        sock, head = _connect(proxy, authority)
        sock.close()
        assert head.startswith("HTTP/1.1 508 ") and "X-Runcode-Policy-Reason: loopback" in head
    decisions = _decisions(governance)
    assert [(d["allowed"], d["reason"]) for d in decisions] == [(False, "loopback")] * 2
    assert all(d["detail"] == f"127.0.0.1:{port} is this proxy itself: a dial would loop back" for d in decisions)


def test_a_loop_the_rules_refuse_for_another_reason_is_answered_for_that_reason(proxy, governance, monkeypatch):
    """`selfmix.test`, the proxy's own address and 10.0.0.1, was answered `508 Loop Detected`
    with the reason private-range: the rules' refusal wins, and the answer follows the reason."""
    port = proxy.server_address[1]
    monkeypatch.setitem(NAMES, "selfmix.test", ["127.0.0.1", "10.0.0.1"])
    response = _get(proxy, f"http://selfmix.test:{port}/")
    assert response.status == 403 and response.getheader("X-Runcode-Policy-Reason") == "private-range"
    sock, head = _connect(proxy, f"selfmix.test:{port}")
    sock.close()
    assert head.startswith("HTTP/1.1 403 ") and "X-Runcode-Policy-Reason: private-range" in head
    assert [(d["reason"], d["resolved"]) for d in _decisions(governance)] == [
        ("private-range", ["127.0.0.1", "10.0.0.1"])
    ] * 2


def test_the_proxys_own_address_is_kept_in_the_record_of_a_long_answers_loop(open_governance, start_proxy, monkeypatch):
    """A name resolving to 79 addresses, the proxy's own, then 21 more: refused 508 naming the
    proxy's address, but the decision, which keeps 64, had kept only the first 64 as found."""
    fine = [f"127.0.0.{n}" for n in range(1, 102)]  # public, for these tests (allow_addresses)
    governance = open_governance(EgressConfig(allow_addresses=fine))
    governance.create_workspace("acme", by="founder")
    proxy = start_proxy(governance)
    port = proxy.server_address[1]  # on 127.0.0.1 alone: the others at its port are not the proxy
    monkeypatch.setitem(NAMES, "self80x.test", [*fine[1:80], "127.0.0.1", *fine[80:]])
    response = _get(proxy, f"http://self80x.test:{port}/")
    assert response.status == 508 and response.getheader("X-Runcode-Policy-Reason") == "loopback"
    (decision,) = _decisions(governance)
    assert decision["resolved"] == ["127.0.0.1", *fine[1:MAX_RESOLVED]]
    assert decision["detail"] == (
        f"127.0.0.1:{port} is this proxy itself: a dial would loop back "
        "(101 addresses found; the decision keeps 64, the refused ones first)"
    )


def test_a_dial_of_the_proxy_at_any_of_its_addresses_is_itself_too(proxy, governance):
    """`CONNECT [::ffff:a.b.c.d]:port` of a proxy listening on a public a.b.c.d reached it, and
    one client looped it until every slot was taken (the classifier refuses the mapped form of
    the loopback this test listens on, so the check is asked directly). A wildcard listener is
    itself at each of the machine's addresses: 127.0.0.2, which a dial reaches from 127.0.0.1,
    was not seen as itself."""
    port = proxy.server_address[1]
    assert proxy.is_self("::ffff:127.0.0.1", port) and not proxy.is_self("127.0.0.1", port + 1)
    assert not proxy.is_self("127.0.0.2", port)  # a listener on 127.0.0.1 alone is not there
    wildcard = EgressProxy(governance, "acme", ("0.0.0.0", 0))  # bound, never served
    try:
        port = wildcard.server_address[1]
        assert wildcard.is_self("127.0.0.2", port) and wildcard.is_self("::ffff:127.0.0.1", port)
        assert not wildcard.is_self("127.0.0.2", port + 1) and not wildcard.is_self("192.0.2.1", port)
        assert not wildcard.is_self("::1", port)  # an IPv4 listener is not reached over IPv6
    finally:
        wildcard.server_close()


def test_malformed_and_unservable_requests_are_answered_not_dropped(proxy, governance):
    assert _get(proxy, "/not-absolute").status == 400
    https = _get(proxy, "https://upstream.test/")
    assert https.status == 400 and b"CONNECT" in https.body
    assert _get(proxy, "http://nowhere.test/").status == 502  # the fake resolver knows no such name
    sock, head = _connect(proxy, "upstream.test")  # CONNECT needs a port
    sock.close()
    assert head.startswith("HTTP/1.1 400 ")
    ftp = _get(proxy, "ftp://upstream.test/")
    assert ftp.status == 403 and ftp.getheader("X-Runcode-Policy-Reason") == "unsupported-scheme"


def test_a_bare_line_feed_in_the_request_line_cannot_smuggle_a_header_or_a_request(proxy, governance, upstream):
    """The version field is copied upstream: `HTTP/1.1\nHost: other` once reached upstream as a
    second Host, and `...\n\nGET /second` as a second, unjudged request."""
    port = upstream.server_address[1]
    for smuggled in (
        f"GET http://upstream.test:{port}/first HTTP/1.1\nHost: other.test\nX-Injected: yes\r\n\r\n",
        f"GET http://upstream.test:{port}/first HTTP/1.1\nContent-Length: 0\n\nGET /second HTTP/1.1\r\n\r\n",
        f"GET http://upstream.test:{port}/first HTTP/1.7\r\n\r\n",
    ):
        with socket.create_connection(proxy.server_address[:2], timeout=WAIT) as sock:
            sock.sendall(smuggled.encode())
            assert _read_until_closed(sock).startswith(b"HTTP/1.1 400 ")
    assert upstream.seen == [] and _decisions(governance) == []


def test_every_address_of_a_long_answer_is_judged_and_only_those_kept_are_dialled(
    open_governance, start_proxy, resolver, upstream, monkeypatch, caplog
):
    """Only the first 64 addresses of an answer were judged: 100 public ones then 10.1.1.1 was
    recorded allowed and dialled. Each is judged now; the decision keeps 64, the refused first."""
    caplog.set_level(logging.INFO, logger="runcode_policy.egress_proxy")
    fine = [f"127.0.0.{n}" for n in range(1, 102)]  # public, for these tests (allow_addresses)
    governance = open_governance(EgressConfig(allow_addresses=fine))
    governance.create_workspace("acme", by="founder")
    proxy = start_proxy(governance)
    port = upstream.server_address[1]
    monkeypatch.setitem(NAMES, "many.test", [*fine[:100], "10.1.1.1"])
    sock, head = _connect(proxy, f"many.test:{port}")
    sock.close()
    assert head.startswith("HTTP/1.1 403 ") and "X-Runcode-Policy-Reason: private-range" in head
    # upstream listens on 127.0.0.1 only: the second answer's first 64 refuse the dial, and the
    # address that would answer comes after them, so it is neither kept nor dialled
    monkeypatch.setitem(NAMES, "long.test", [*fine[1:65], "127.0.0.1", *fine[65:]])
    sock, head = _connect(proxy, f"long.test:{port}")
    sock.close()
    assert head.startswith("HTTP/1.1 502 ") and upstream.seen == []
    mixed, long = _decisions(governance)
    assert (mixed["allowed"], mixed["reason"], len(mixed["resolved"])) == (False, "private-range", MAX_RESOLVED)
    assert mixed["resolved"] == ["10.1.1.1", *fine[: MAX_RESOLVED - 1]]
    assert mixed["detail"].endswith("(101 addresses found; the decision keeps 64, the refused ones first)")
    assert (long["allowed"], long["resolved"]) == (True, fine[1:65])
    assert any("(of 101; the rest neither kept nor dialled)" in r.getMessage() for r in caplog.records)


def test_an_answer_too_long_to_judge_whole_is_refused_and_recorded(
    open_governance, start_proxy, resolver, upstream, monkeypatch
):
    fine = [f"127.0.{n // 256}.{n % 256}" for n in range(1, MAX_LOOKUP_ADDRESSES + 2)]  # 127.0.0.1 first
    governance = open_governance(EgressConfig(allow_addresses=fine))
    governance.create_workspace("acme", by="founder")
    proxy = start_proxy(governance)
    monkeypatch.setitem(NAMES, "huge.test", fine)
    sock, head = _connect(proxy, f"huge.test:{upstream.server_address[1]}")
    body = _read_until_closed(sock).decode()
    sock.close()
    assert head.startswith("HTTP/1.1 502 ") and "X-Runcode-Policy-Reason: invalid-target" in head
    why = f"huge.test resolves to more than {MAX_LOOKUP_ADDRESSES} addresses, too many to judge"
    assert why in body
    (decision,) = _decisions(governance)
    assert (decision["allowed"], decision["reason"], decision["detail"], decision["resolved"]) == (
        False,
        "invalid-target",
        why,
        [],
    )


def test_a_failed_lookup_is_recorded_as_a_denial_naming_the_failure(proxy, governance, resolver):
    """The lookup leaves the machine, and a name's labels can carry data out: the record keeps it."""
    response = _get(proxy, "http://exfil-c2VjcmV0.nowhere.test/")
    assert response.status == 502 and b"cannot resolve exfil-c2vjcmv0.nowhere.test" in response.body
    assert resolver.calls == ["exfil-c2vjcmv0.nowhere.test"]
    [decision] = _decisions(governance)
    assert (decision["allowed"], decision["reason"], decision["name"]) == (
        False,
        "invalid-target",
        "exfil-c2vjcmv0.nowhere.test",
    )
    assert "cannot resolve" in decision["detail"] and response.getheader("X-Runcode-Policy-Decision") == decision["id"]


def test_a_password_in_a_target_is_not_kept_in_the_record_nor_the_log(proxy, governance, upstream, caplog):
    caplog.set_level(logging.INFO, logger="runcode_policy.egress_proxy")
    port = upstream.server_address[1]
    response = _get(proxy, f"http://alice:S3cret@upstream.test:{port}/path")  # as urllib sends it
    assert response.status == 403 and b"S3cret" not in response.body
    _connect(proxy, f"bob:Pa55@upstream.test:{port}")[0].close()
    specs = [d["spec"] for d in _decisions(governance)]
    assert specs == [f"http://***@upstream.test:{port}/", f"***@upstream.test:{port}"]
    assert all(d["reason"] == "invalid-target" for d in _decisions(governance)) and upstream.seen == []
    assert "S3cret" not in caplog.text and "Pa55" not in caplog.text


def test_a_target_past_the_apis_bound_is_refused_and_recorded_cut_to_it(proxy, governance, caplog):
    """The proxy read targets as long as its head allows (64 KiB) and recorded each whole, twice
    per decision (spec and detail): 195 KB a refusal, from a caller with no token."""
    caplog.set_level(logging.INFO, logger="runcode_policy.egress_proxy")
    long_host = "a" * 30_000 + ".test"  # twice in a CONNECT's head (its Host too), within 64 KiB
    for send in (lambda: _connect(proxy, f"{long_host}:443")[0].close(), lambda: _get(proxy, f"http://{long_host}/")):
        send()
    decisions = _decisions(governance)
    assert [(d["allowed"], d["reason"]) for d in decisions] == [(False, "invalid-target")] * 2
    assert all(len(d["spec"]) == MAX_TEXT and len(d["detail"]) < 200 for d in decisions)
    assert "the target is 30,009 characters long; at most 4096 are judged" in decisions[0]["detail"]
    assert long_host not in caplog.text


def test_a_request_method_too_long_to_record_is_refused_before_any_judgement(proxy, governance, upstream):
    """Over the bound of a decision's context values it was refused 503 with nothing recorded:
    a probe of any target that left no record."""
    with socket.create_connection(proxy.server_address[:2], timeout=WAIT) as sock:
        sock.sendall(b"X" * (MAX_LABEL + 1) + b" http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\n\r\n")
        answer = _read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 400 ") and b"method is longer than 200 characters" in answer
    _get(proxy, "http://169.254.169.254/latest/meta-data/")  # a method of any other length: judged, recorded
    assert [d["reason"] for d in _decisions(governance)] == ["cloud-metadata"]


def test_every_decision_is_recorded_and_logged_once(proxy, governance, upstream, caplog):
    port = upstream.server_address[1]
    caplog.set_level(logging.INFO, logger="runcode_policy.egress_proxy")
    _get(proxy, f"http://upstream.test:{port}/ok")
    _get(proxy, "http://private.test/")
    _connect(proxy, "localhost:22")[0].close()  # refused by the name rules, never resolved
    reasons = [d["reason"] for d in _decisions(governance)]
    assert reasons == ["allowed", "private-range", "loopback"]
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("decision=")]
    assert [line.split()[1] for line in lines] == [f"reason={r}" for r in reasons]


# -- limits and failure ------------------------------------------------------------------------
def test_the_connection_limit_answers_503_beyond_it_and_frees_the_slot(start_proxy, governance, upstream):
    proxy = start_proxy(governance, max_connections=1)
    authority = f"upstream.test:{upstream.server_address[1]}"
    held, head = _connect(proxy, authority)
    assert head.startswith("HTTP/1.1 200 ")
    refused, head = _connect(proxy, authority)
    refused.close()
    assert head.startswith("HTTP/1.1 503 ")
    held.close()
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:  # the slot frees once the tunnel's thread notices
        sock, head = _connect(proxy, authority)
        sock.close()
        if head.startswith("HTTP/1.1 200 "):
            break
        time.sleep(0.05)
    assert head.startswith("HTTP/1.1 200 ")


def test_one_client_holds_at_most_its_share_of_the_connections(start_proxy, governance, upstream):
    """Hundreds of tunnels or dripping heads from one client took all 256 slots, and every other
    sandbox behind the proxy was answered 503."""
    proxy = start_proxy(governance, max_connections=4, max_per_client=2)
    authority = f"upstream.test:{upstream.server_address[1]}"
    held = [_connect(proxy, authority) for _ in range(2)]
    assert all(head.startswith("HTTP/1.1 200 ") for _, head in held)
    refused, head = _connect(proxy, authority)
    body = _read_until_closed(refused)
    refused.close()
    assert head.startswith("HTTP/1.1 503 ") and b"from this client" in body
    other = socket.socket()
    other.bind(("127.0.0.2", 0))  # another sandbox's address
    other.settimeout(WAIT)
    other.connect(proxy.server_address[:2])
    other.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
    assert other.recv(65536).startswith(b"HTTP/1.1 200 ")
    for sock in [other, *(sock for sock, _ in held)]:
        sock.close()


def test_a_client_that_never_finishes_its_head_is_dropped_at_the_head_deadline(start_proxy, governance):
    proxy = start_proxy(governance, idle_timeout=60.0, head_timeout=0.3)
    started = time.monotonic()
    with socket.create_connection(proxy.server_address[:2], timeout=WAIT) as sock:
        sock.sendall(b"GET http://upstream.test/ HTTP/1.1\r\n")  # and never finishes the head
        assert _read_until_closed(sock) == b""
    assert time.monotonic() - started < 2


def test_silent_sockets_cannot_hold_the_connection_slots(start_proxy, governance, upstream):
    """Four sockets that never sent a request once held `--max-connections 4`
    for the whole idle timeout (300 s), so every CONNECT was answered 503. The request line and
    headers have a deadline of their own, far shorter than the idle timeout of a tunnel."""
    proxy = start_proxy(governance, max_connections=2, idle_timeout=60.0, head_timeout=0.3)
    silent = [socket.create_connection(proxy.server_address[:2], timeout=WAIT) for _ in range(2)]
    for sock in silent:
        assert _read_until_closed(sock) == b""  # the proxy hangs up on them at the head deadline
        sock.close()
    deadline = time.monotonic() + 5  # their slots come back as the proxy's threads finish with them
    while True:
        tunnel, head = _connect(proxy, f"upstream.test:{upstream.server_address[1]}")
        tunnel.close()
        if not head.startswith("HTTP/1.1 503 ") or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert head.startswith("HTTP/1.1 200 "), head


def test_a_decision_that_cannot_be_recorded_is_refused_with_503(tmp_path, open_governance, start_proxy, upstream):
    path = tmp_path / "store.sqlite"
    governance = open_governance()
    governance.create_workspace("acme", by="founder")
    with sqlite3.connect(path) as conn:  # the store now refuses every write, as a full disk would
        conn.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON stored_events "
            "BEGIN SELECT RAISE(ABORT, 'the store refuses writes'); END"
        )
    proxy = start_proxy(governance)
    response = _get(proxy, f"http://upstream.test:{upstream.server_address[1]}/ok")
    assert response.status == 503 and b"could not be recorded" in response.body
    assert upstream.seen == []  # fail closed: nothing unrecorded gets through


# -- the command -------------------------------------------------------------------------------
def test_the_listen_option_takes_an_ip_and_a_port():
    assert parse_listen("127.0.0.1:3128") == ("127.0.0.1", 3128)
    assert parse_listen("[::1]:3128") == ("::1", 3128)
    for bad in ("localhost:3128", "127.0.0.1", "127.0.0.1:99999", "[::1]", "127.0.0.1:3²"):  # "3²".isdigit()
        with pytest.raises(Exception, match="IP:port"):
            parse_listen(bad)


def test_the_command_refuses_an_unknown_workspace_or_a_bad_egress_setting(tmp_path):
    runner = CliRunner()
    env = {"RUNCODE_POLICY_DATABASE_URL": f"sqlite:///{tmp_path}/cli.sqlite"}
    args = ["--workspace", "nowhere", "--listen", "127.0.0.1:0"]
    result = runner.invoke(egress_proxy_command, args, env=env)
    assert result.exit_code == 1 and "no workspace 'nowhere'" in result.output
    env["RUNCODE_POLICY_EGRESS_ALLOWLIST"] = "ok.example, *, x.*.org"
    result = runner.invoke(egress_proxy_command, ["--workspace", "acme"], env=env)
    assert result.exit_code == 1 and "'*'" in result.output and "'x.*.org'" in result.output
    del env["RUNCODE_POLICY_EGRESS_ALLOWLIST"]  # a label no decision could carry: refused at start, not per connection
    result = runner.invoke(egress_proxy_command, [*args, "--sandbox", "sbx\u200b1"], env=env)
    assert result.exit_code == 1 and "context.sandbox must not contain invisible" in result.output, result.output
    result = runner.invoke(egress_proxy_command, [*args, "--sandbox", " sbx-1 "], env=env)  # read as sbx-1
    assert result.exit_code == 1 and "context.sandbox must not be blank nor begin or end" in result.output


def test_a_workspace_egress_change_is_in_force_at_the_next_connection(proxy, governance, upstream, resolver):
    """A Save made through another application (another process, as the API would be) narrows the
    next connection, and a Save that lists the host again lets the one after it through."""
    port = upstream.server_address[1]
    sock, head = _connect(proxy, f"upstream.test:{port}")
    sock.close()
    assert head.startswith("HTTP/1.1 200 ")
    admin = Governance(env=governance.env)  # the API's process, on the same store
    try:
        admin.save_policy("acme", {"egress": {"allow": ["*.example.org"]}}, by="alice", note="narrow")
        sock, head = _connect(proxy, f"upstream.test:{port}")
        sock.close()
        assert head.startswith("HTTP/1.1 403 ") and "not-on-hostname-allowlist" in head
        assert resolver.calls == ["upstream.test"]  # the narrowed name was not looked up
        admin.change_policy(
            "acme", [{"action": "add", "language": "egress", "list": "allow", "entries": ["upstream.test"]}], by="bob"
        )
        sock, head = _connect(proxy, f"upstream.test:{port}")
        sock.close()
        assert head.startswith("HTTP/1.1 200 ")
    finally:
        admin.close()
    assert [(d["allowed"], d["policy_version"]) for d in _decisions(governance)] == [(True, 0), (False, 2), (True, 3)]


# -- one request per connection, framed ----------------------------------------------------------
class _RawUpstream:
    """Takes one connection, keeps every byte that arrives until the sender falls quiet, then
    answers: what the proxy let through, byte for byte."""

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port, self.received = self.server.getsockname()[1], b""
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        with self.server:
            conn, _ = self.server.accept()
        with conn:
            conn.settimeout(0.5)
            try:
                while chunk := conn.recv(65536):
                    self.received += chunk
            except TimeoutError:
                pass
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")


def _raw(proxy: EgressProxy, data: bytes) -> bytes:
    with socket.create_connection(proxy.server_address[:2], timeout=WAIT) as sock:
        sock.sendall(data)
        return _read_until_closed(sock)


def test_only_the_judged_request_and_its_body_reach_upstream_never_what_follows_them(proxy, governance):
    """A second request pipelined behind the first (to another virtual host, or the metadata
    address) was relayed to the vetted upstream byte for byte, unjudged."""
    raw = _RawUpstream()
    answer = _raw(
        proxy,
        f"POST http://upstream.test:{raw.port}/a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello".encode()
        + b"GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n"
        + b"GET /second HTTP/1.1\r\nHost: other-vhost.example\r\n\r\n",
    )
    raw.thread.join(WAIT)
    assert answer.startswith(b"HTTP/1.1 200 OK") and answer.endswith(b"ok")
    assert raw.received.startswith(b"POST /a HTTP/1.1\r\n") and raw.received.endswith(b"\r\n\r\nhello")
    assert raw.received.count(b"HTTP/1.1") == 1, raw.received
    assert len(_decisions(governance)) == 1


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ("Connection: Content-Length\r\nContent-Length: 52\r\n", b"400"),
        ("Connection: keep-alive, Transfer-Encoding\r\nTransfer-Encoding: chunked\r\n", b"400"),
        ("Transfer-Encoding: chunked\r\n", b"411"),
        ("Content-Length: 5\r\nContent-Length: 6\r\n", b"400"),
        ("Content-Length: -1\r\n", b"400"),
    ],
)
def test_a_request_whose_body_cannot_be_framed_is_refused_unjudged(proxy, governance, upstream, headers, status):
    port = upstream.server_address[1]
    answer = _raw(proxy, f"POST http://upstream.test:{port}/a HTTP/1.1\r\n{headers}\r\n".encode())
    assert answer.split(b" ")[1] == status, answer
    assert upstream.seen == [] and _decisions(governance) == []


def test_a_connect_to_a_url_is_refused_unrecorded_so_its_query_never_reaches_the_log(proxy, governance, caplog):
    caplog.set_level(logging.INFO, logger="runcode_policy.egress_proxy")
    sock, head = _connect(proxy, "http://10.9.9.9/p?token=SECRET123")
    sock.close()
    assert head.startswith("HTTP/1.1 400 ") and _decisions(governance) == []
    assert "SECRET123" not in caplog.text


def test_a_head_past_the_limit_is_431_however_the_reads_fall(start_proxy, governance):
    proxy = start_proxy(governance, max_head_bytes=1000)
    answer = _raw(proxy, b"GET http://10.0.0.1/ HTTP/1.1\r\nX-A: " + b"a" * 1500 + b"\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 431 ") and _decisions(governance) == []


class _ScriptedUpstream:
    """One connection, handled by `script(conn)`: an upstream that answers as a test needs."""

    def __init__(self, script):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, args=(script,), daemon=True)
        self.thread.start()

    def _serve(self, script) -> None:
        with self.server:
            conn, _ = self.server.accept()
        with conn:
            conn.settimeout(WAIT)
            script(conn)


def _head_of(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(1)
    return data


def test_an_upload_that_expects_100_continue_gets_it_before_it_sends_the_body(proxy):
    def script(conn):
        _head_of(conn)
        conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = b""
        while len(body) < 5:
            body += conn.recv(5 - len(body))
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)

    upstream = _ScriptedUpstream(script)
    with socket.create_connection(proxy.server_address[:2], timeout=WAIT) as sock:
        head = (
            f"PUT http://upstream.test:{upstream.port}/up HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"
        )
        sock.sendall(head.encode())
        sock.settimeout(3)
        interim = b""
        while b"\r\n\r\n" not in interim:
            interim += sock.recv(1)  # held back until the body came, the client waited for nothing
        assert interim.startswith(b"HTTP/1.1 100 Continue")
        sock.sendall(b"hello")
        assert _read_until_closed(sock).endswith(b"\r\n\r\nhello")


def test_an_answer_upstream_gives_before_reading_the_body_reaches_the_client(proxy):
    def script(conn):
        _head_of(conn)
        conn.sendall(b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 7\r\nConnection: close\r\n\r\ntoo big")
        conn.shutdown(socket.SHUT_RDWR)

    upstream = _ScriptedUpstream(script)
    with socket.create_connection(proxy.server_address[:2], timeout=WAIT) as sock:
        size = 8 * 1024 * 1024
        sock.sendall(
            f"POST http://upstream.test:{upstream.port}/up HTTP/1.1\r\nContent-Length: {size}\r\n\r\n".encode()
        )
        try:
            sock.sendall(b"x" * size)  # the proxy stops reading it once upstream has gone
        except OSError:
            pass
        assert _read_until_closed(sock).startswith(b"HTTP/1.1 413 ")
