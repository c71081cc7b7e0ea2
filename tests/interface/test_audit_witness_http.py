"""Checkpoints reach an http(s) witness by themselves: RUNCODE_POLICY_AUDIT_WITNESS names a real
HTTP server in this test speaking c2sp.org/tlog-witness (`POST /add-checkpoint`), over the
witness of application.chain.witness. It receives each checkpoint with no operator step (over
https too, its certificate from a trustme CA), and refuses a history rewritten and re-signed
with the service's own key."""

from __future__ import annotations

import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import trustme
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from application.chain import AuditKey, notes
from application.chain.witness import Refused, Witness
from interface.audit.push import SIZE_MEDIA_TYPE, WitnessPusher
from tests.support.background import serve_in_background
from tests.support.tamper import Tamperer

ORIGIN = "runcode-policy/witnessed.example/acme"
WAIT_SECONDS = 30  # a bound on waiting for the pusher's thread, not a measure of speed


class HttpWitness:
    """A witness on loopback; `answers` holds (status, what it said, acme's size or -1) per request."""

    def __init__(self, state: Path, log_key, tls: trustme.CA | None = None):
        self.keeper = Witness(state, "test/witness", Ed25519PrivateKey.generate(), [log_key])
        self.answers: list[tuple[int, str, int]] = []
        self.changed = threading.Condition()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        # Closing waits for the request threads, so no connection outlives its test (an unclosed
        # TLS socket collected during the next test's set-up fails that test).
        self.server.daemon_threads = False
        scheme = "http"
        if tls is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            tls.issue_cert("127.0.0.1").configure_cert(context)
            # The handshake in the request's own thread: the accepting thread never waits on a client.
            self.server.socket = context.wrap_socket(
                self.server.socket, server_side=True, do_handshake_on_connect=False
            )
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}/witness"
        serve_in_background(self.server)

    def answer(self, body: str) -> tuple[int, str, dict]:
        try:
            cosigned = self.keeper.add_checkpoint(body)
        except Refused as refused:
            latest = self.keeper.latest(ORIGIN)
            if refused.status == 409:  # the protocol's answer: the size it last cosigned
                return 409, str(latest[0] if latest else 0), {"Content-Type": SIZE_MEDIA_TYPE}
            return refused.status, refused.reason, {"Content-Type": "text/plain"}
        note = body.partition("\n\n")[2]
        return 200, cosigned[len(note) :], {"Content-Type": "text/plain"}  # its cosignature line

    def record(self, status: int, text: str, size: int) -> None:
        with self.changed:
            self.answers.append((status, text, size))
            self.changed.notify_all()

    def wait_for(self, predicate) -> list[tuple[int, str, int]]:
        with self.changed:
            assert self.changed.wait_for(lambda: predicate(self.answers), WAIT_SECONDS), self.answers
            return list(self.answers)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _handler(witness: HttpWitness):
    class Handler(BaseHTTPRequestHandler):
        timeout = WAIT_SECONDS

        def do_POST(self):  # noqa: N802 - the standard library's name
            body = self.rfile.read(int(self.headers["Content-Length"])).decode("utf-8")
            status, text, headers = witness.answer(body) if self.path == "/witness/add-checkpoint" else (404, "", {})
            witness.record(status, text, _size(body))  # before answering: the pusher's next request waits on it
            payload = text.encode("utf-8")
            self.send_response(status)
            for name, value in {**headers, "Content-Length": str(len(payload))}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    return Handler


def _size(body: str) -> int:
    """The size of acme's checkpoint in the body; -1 for another workspace's (`live` makes two)."""
    try:
        origin, size, _ = notes.parse_checkpoint(notes.split(body.partition("\n\n")[2])[0])
    except notes.NoteError:
        return -1
    return size if origin == ORIGIN else -1


@pytest.fixture
def service_key(tmp_path) -> tuple[Path, AuditKey]:
    key = AuditKey.generate()
    path = tmp_path / "audit-signing-key.pem"
    path.write_text(key.to_pem())
    return path, key


@pytest.fixture(params=["http", "https"])
def witness(request, tmp_path, service_key, monkeypatch):
    ca = None
    if request.param == "https":
        ca = trustme.CA()
        ca_file = tmp_path / "witness-ca.pem"
        ca.cert_pem.write_to_path(str(ca_file))
        monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))  # the service trusts the witness's CA
    server = HttpWitness(tmp_path / "witness-state", service_key[1].public, ca)
    yield server
    server.close()


@pytest.fixture
def live_env(witness, service_key) -> dict:
    return {
        "RUNCODE_POLICY_AUDIT_WITNESS": witness.url,
        "RUNCODE_POLICY_AUDIT_KEY_FILE": str(service_key[0]),
        "RUNCODE_POLICY_AUDIT_ORIGIN": "witnessed.example",
        "RUNCODE_POLICY_AUDIT_CHECKPOINT_SECONDS": "0.2",
    }


def cosigned_up_to(witness: HttpWitness, size: int) -> list[tuple[int, str, int]]:
    return witness.wait_for(lambda answers: any(s == 200 and n >= size for s, _, n in answers))


def test_each_checkpoint_reaches_the_http_witness_by_itself_and_is_cosigned(live, app, witness):
    app.evaluation.evaluate("acme", "python", ["alpha"], None, {})
    first = app.chain.checkpoint("acme")["seq"]  # the sealer's own checkpoints may come first
    cosigned_up_to(witness, first)
    app.evaluation.evaluate("acme", "python", ["beta"], None, {})
    second = app.chain.checkpoint("acme")["seq"]
    answers = cosigned_up_to(witness, second)
    assert second > first
    assert all(status == 200 for status, _, _ in answers), answers  # nothing refused, no operator step
    sizes = [size for _, _, size in answers if size >= 0]
    assert sizes == sorted(sizes) and first in sizes and second in sizes
    assert answers[-1][1].startswith("\u2014 test/witness ")  # its cosignature line, handed back
    assert witness.keeper.latest(ORIGIN)[0] == sizes[-1]


def test_the_http_witness_refuses_a_history_rewritten_and_re_signed_with_the_key(live, app, witness, database_url):
    decided = app.evaluation.evaluate("acme", "python", ["left-pad"], None, {})["decisions"][0]["id"]
    honest = app.chain.checkpoint("acme")["seq"]
    cosigned_up_to(witness, honest)
    seen = witness.keeper.latest(ORIGIN)
    # The attacker holds the database and the key: rewrite a decision, re-seal everything, re-sign.
    tamper = Tamperer(database_url)
    tamper.rewrite_history(decided)
    tamper.close()
    app.evaluation.evaluate("acme", "python", ["numpy"], None, {})  # the rewritten log grows past what was seen
    app.chain.checkpoint("acme")
    answers = witness.wait_for(lambda answers: any(s == 422 for s, _, _ in answers))
    refusal = next(text for status, text, _ in answers if status == 422)
    assert f"is not consistent with the one cosigned at size {seen[0]}" in refusal
    assert "the log's history was rewritten" in refusal
    assert witness.keeper.latest(ORIGIN)[:2] == seen[:2]  # it still holds the honest tree


def test_a_checkpoint_the_witness_has_passed_is_dropped_and_never_holds_back_the_next(live, app, witness):
    notes_of = app.chain.proofs.tree.store.notes
    app.evaluation.evaluate("acme", "python", ["alpha"], None, {})
    older = app.chain.checkpoint("acme")["seq"]
    app.evaluation.evaluate("acme", "python", ["beta"], None, {})
    newer = app.chain.checkpoint("acme")["seq"]
    cosigned_up_to(witness, newer)
    # A second instance's pusher (knowing no cosigned size) still holds the older checkpoint, its
    # witness having been away while this instance's later one went through.
    other = WitnessPusher(witness.url, app.chain.proofs.tree)
    other.push("acme", older, notes_of("acme", [older])[older])
    app.evaluation.evaluate("acme", "python", ["gamma"], None, {})
    latest = app.chain.checkpoint("acme")["seq"]
    other.push("acme", latest, notes_of("acme", [latest])[latest])
    assert other.wait(WAIT_SECONDS)  # nothing left pending: the older one dropped, the latest delivered
    assert witness.keeper.latest(ORIGIN)[0] == latest
    assert sum(1 for status, _, size in witness.answers if size == older and status == 409) == 1  # told once


def test_closing_the_application_ends_its_witness_delivery_before_the_store_closes(open_app, tmp_path, monkeypatch):
    """A delivery reads the store's tree on its own thread: one under way while the application
    closed its SQLite connection crashed the process (a segfault in a test run)."""
    app = open_app()
    app.chain.use_key(AuditKey.generate())
    app.create_workspace("acme", by="founder")
    pusher = WitnessPusher(str(tmp_path / "witness"), app.chain.proofs.tree)
    app.chain.proofs.witness = pusher
    reading, release = threading.Event(), threading.Event()
    proof = pusher._proof

    def slow_proof(*args):  # a delivery caught reading the tree when the close begins
        reading.set()
        release.wait(2)
        return proof(*args)

    monkeypatch.setattr(pusher, "_proof", slow_proof)
    app.save_policy("acme", {"python": {"deny": ["x"]}}, by="alice")
    app.chain.checkpoint("acme")
    assert reading.wait(5)
    threading.Timer(0.5, release.set).start()
    app.close()  # waits for the delivery, then stops the thread, then closes the store
    assert not pusher._thread.is_alive()
    assert list((tmp_path / "witness" / "acme").glob("*.checkpoint"))  # the delivery under way finished
