"""The enforcing egress proxy (docs/egress.md): an HTTP forward proxy for one workspace.

It serves CONNECT (an opaque tunnel, so TLS passes through untouched) and absolute-form plain HTTP
(`GET http://host/path`). For each request it judges the name (before resolving it, so a name off
the allowlist is never even looked up: DNS is an exfiltration channel), resolves the name ONCE
itself, judges the name and every resolved address with the same classifier as the API (which
records the decision durably first), and dials a vetted IP literal itself, so DNS rebinding cannot
swap the address between check and connect. Redirects are relayed, never followed: the client's
next request comes back through here and is judged again. Anything uncertain fails closed.

Threads rather than asyncio: every step that matters blocks (getaddrinfo has no async form, and
recording a decision waits for the group-commit writer to make it durable), so asyncio would push
each of them to a thread pool anyway. A thread per connection, capped by a semaphore, is the
smaller program; one thread relays both directions of a connection with `selectors`.

This module holds the server, the per-connection decision flow and the CLI command; the HTTP/1
parsing, rewriting and relaying it speaks with live in `interface.egress_proxy.wire`.
"""

from __future__ import annotations

import logging
import socket
import socketserver
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from ipaddress import ip_address
from itertools import islice

from application import StoreUnavailableError
from application.egress import INVALID_TARGET, LOOPBACK, ProxyRefusal
from domain.decision import EGRESS_PROXY_SOURCE
from domain.egress import shown_target
from domain.limits import MAX_LOOKUP_ADDRESSES
from interface.egress_proxy.wire import (  # the wire pieces stay importable from here, as before the split
    ClientGone,
    Refusal,
    Request,
    answer_refusal,
    body_length,
    connect_authority,
    host_header,
    linger,
    quietly,
    read_request,
    relay,
    relay_exchange,
    rewrite_head,
    split_absolute,
)

log = logging.getLogger("runcode_policy.egress_proxy")
Resolver = Callable[[str, int], Iterable[str]]


@dataclass(frozen=True)
class ProxyLimits:
    max_connections: int = 256
    # One client address may hold at most this many of them: a client that opens hundreds of
    # connections (slow heads, idle tunnels) then starves itself, not the sandboxes beside it.
    max_per_client: int = 64
    connect_timeout: float = 10.0  # dialling upstream, all vetted addresses together
    idle_timeout: float = 300.0  # no byte either way for this long ends a connection
    max_head_bytes: int = 64 * 1024
    # The whole request line and headers must arrive within this: a socket that sends nothing
    # (or drips bytes) would otherwise hold a connection slot for the idle timeout.
    head_timeout: float = 10.0


def system_resolver(host: str, port: int) -> list[str]:
    """getaddrinfo, once; its timeout is the system resolver's (resolv.conf `timeout:`)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class EgressProxy(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(
        self,
        governance,
        workspace: str,
        listen: tuple[str, int] = ("127.0.0.1", 3128),
        *,
        resolver: Resolver = system_resolver,
        limits: ProxyLimits | None = None,
        sandbox: str | None = None,
    ):
        limits = limits or ProxyLimits()
        self.governance, self.workspace, self.sandbox = governance, workspace, sandbox
        self.resolver, self.limits = resolver, limits
        self.slots = threading.BoundedSemaphore(limits.max_connections)
        self._per_client: Counter[str] = Counter()  # open connections by client address
        self._refusers = threading.BoundedSemaphore(limits.max_connections)
        self._active: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.address_family = socket.AF_INET6 if ":" in listen[0] else socket.AF_INET
        super().__init__(listen, _Handler)

    def start(self, poll_interval: float = 0.1) -> EgressProxy:
        """Serve from a background thread (embedding and tests); `close` stops it."""
        self._thread = threading.Thread(
            target=self.serve_forever, args=(poll_interval,), name="egress-proxy", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        if self._thread is not None:
            self.shutdown()
        with self._lock:
            active = list(self._active)
        for sock in active:  # wakes every relay, so the joins below are quick
            quietly(sock.shutdown, socket.SHUT_RDWR)
        self.server_close()

    def process_request(self, request, client_address):
        if not self._take(client_address[0]):
            self._refuse(request, "too many connections from this client; try again shortly")
        elif self.slots.acquire(blocking=False):
            try:
                super().process_request(request, client_address)
            except BaseException:
                self.slots.release()
                self._give_back(client_address[0])
                raise
        else:
            self._give_back(client_address[0])
            self._refuse(request, "too many connections; try again shortly")

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()
            self._give_back(client_address[0])

    def _take(self, client: str) -> bool:
        with self._lock:
            if self._per_client[client] >= self.limits.max_per_client:
                return False
            self._per_client[client] += 1
            return True

    def _give_back(self, client: str) -> None:
        with self._lock:
            self._per_client[client] -= 1
            if not self._per_client[client]:
                del self._per_client[client]

    def _refuse(self, request: socket.socket, text: str) -> None:
        if self._refusers.acquire(blocking=False):
            threading.Thread(target=self._refuse_busy, args=(request, text), daemon=True).start()
        else:  # even the refusers are all busy: a plain close costs the least
            self.shutdown_request(request)

    def _refuse_busy(self, sock: socket.socket, text: str) -> None:
        try:
            sock.settimeout(1.0)
            quietly(read_request, sock, self.limits.max_head_bytes, 1.0)  # then no RST eats the 503
            quietly(answer_refusal, sock, Refusal(503, text))
        finally:
            self.shutdown_request(sock)
            self._refusers.release()

    def track(self, sock: socket.socket, active: bool) -> None:
        with self._lock:
            (self._active.add if active else self._active.discard)(sock)

    def is_self(self, address: str, port: int) -> bool:
        """Would a dial of address:port reach our own listener (smokescreen's self-connection
        check)? Asked before the decision is recorded, so that it records the refusal."""
        listen, listen_port = self.server_address[:2]
        try:  # compared as addresses: `::ffff:a.b.c.d` reaches an IPv4 listener at a.b.c.d
            dialled, own = _unmapped(address), _unmapped(listen)
        except ValueError:
            return False  # not an address: the classifier refuses it
        if port != listen_port:
            return False
        if dialled == own:
            return True
        # A wildcard listener is reached at each of this machine's addresses (an IPv6 one, dual
        # stack, at its IPv4 addresses too).
        return own.is_unspecified and dialled.version <= own.version and _is_local(dialled)


class _Handler(socketserver.BaseRequestHandler):
    def handle(self):
        self.server.track(self.request, True)
        try:
            _Exchange(self.server, self.request, self.client_address).run()
        finally:
            self.server.track(self.request, False)


class _Exchange:
    """One client connection: one request head, one decision, then a relay or a refusal."""

    def __init__(self, proxy: EgressProxy, client: socket.socket, peer):
        self.proxy, self.client, self.limits = proxy, client, proxy.limits
        self.context = {"source": EGRESS_PROXY_SOURCE, "sandbox": proxy.sandbox, "client": f"{peer[0]}:{peer[1]}"}

    def run(self) -> None:
        try:
            request = read_request(self.client, self.limits.max_head_bytes, self.limits.head_timeout)
            self.client.settimeout(self.limits.idle_timeout)
            self.context["method"] = request.method
            if request.method == "CONNECT":
                self.tunnel(request)
            else:
                self.forward(request)
        except Refusal as refusal:
            if refusal.reason is None:  # decisions are logged where they are made
                log.info("refused status=%s client=%s detail=%r", refusal.status, self.context["client"], refusal.text)
            quietly(answer_refusal, self.client, refusal)
        except (ClientGone, OSError):
            pass  # the client left or stalled: nothing to answer

    def tunnel(self, request: Request) -> None:
        _, upstream = self.open(connect_authority(request.target), None)
        try:
            self.client.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            upstream.sendall(request.rest)
            relay(self.client, upstream, self.limits.idle_timeout)
        finally:
            upstream.close()

    def forward(self, request: Request) -> None:
        origin, path = split_absolute(request.target)
        length = body_length(request)  # before the decision: a request that cannot be framed is no decision
        answer, upstream = self.open(origin, 80)
        try:
            sent = request.rest[:length]  # what came with the head; anything past the body is dropped
            upstream.sendall(rewrite_head(request, path, host_header(answer)) + sent)
            unread = relay_exchange(self.client, upstream, self.limits.idle_timeout, length - len(sent))
            if unread:
                linger(self.client, unread)
        finally:
            upstream.close()

    def open(self, target: str, default_port: int | None) -> tuple[dict, socket.socket]:
        """Judge the name, resolve once, judge name and addresses (recorded), dial a vetted one."""
        # the workspace's egress allowlist as it stands now: a Save is in force at the next connection
        first = self.proxy.governance.egress.judge_egress(target, workspace=self.proxy.workspace)
        if not first["allowed"]:
            self.decide(target, ())  # records the same denial and raises: a refused name is never resolved
        port = first["port"] or default_port
        if port is None:
            raise Refusal(400, "CONNECT needs host:port")
        host = first["host"]
        literal = is_ip(host)
        found = [host] if literal else self.resolve(target, host, port)
        answer, kept = self.decide(target, () if literal else found, self.looped(found, port), 508)
        return answer, self.dial([host] if literal else list(kept), port)

    def looped(self, found: list[str], port: int) -> ProxyRefusal | None:
        """The denial of a target that would reach this proxy itself: found before any dial, so
        that the decision records it (a loop takes a connection slot a turn until none is left)."""
        for address in found:
            if self.proxy.is_self(address, port):
                why = f"{_authority(address, port)} is this proxy itself: a dial would loop back"
                return ProxyRefusal(LOOPBACK, why, address)
        return None

    def resolve(self, target: str, host: str, port: int) -> list[str]:
        """The name's addresses; a failed lookup is recorded (the query left the machine, and a
        name's labels can carry data out) and answered 502, and so is an answer too long to judge
        whole: every address is judged, or none is dialled."""
        try:
            found = list(islice(self.proxy.resolver(host, port), MAX_LOOKUP_ADDRESSES + 1))
        except (OSError, UnicodeError) as error:
            why = f"cannot resolve {host}: {error}"
        else:
            if len(found) > MAX_LOOKUP_ADDRESSES:
                why = f"{host} resolves to more than {MAX_LOOKUP_ADDRESSES} addresses, too many to judge"
            elif found:
                return found
            else:
                why = f"{host} has no addresses"
        self.decide(target, (), ProxyRefusal(INVALID_TARGET, why), 502)
        raise Refusal(502, why)  # not reached: the recorded denial raises

    def decide(
        self, target: str, found: Sequence[str], denied: ProxyRefusal | None = None, status: int = 403
    ) -> tuple[dict, tuple[str, ...]]:
        """Record the decision (fail closed if that is impossible); refuse unless allowed. The
        answer, and the addresses the decision keeps (of a long answer, not all). `status`: the
        answer to `denied` when it is the reason recorded; the rules' refusal, which wins, is 403."""
        try:
            answer, kept = self.proxy.governance.egress.evaluate_lookup(
                self.proxy.workspace, target, found, self.context, denied
            )
        except StoreUnavailableError as error:
            log.warning("decision=unrecorded target=%r error=%s", shown_target(target), error.detail)
            raise Refusal(503, "the decision could not be recorded, so it is refused") from None
        except Exception:  # noqa: BLE001 - whatever broke, an unrecorded allow must not happen
            log.exception("decision=failed target=%r", shown_target(target))
            raise Refusal(503, "the decision could not be made, so it is refused") from None
        _log_decision(self.proxy.workspace, self.context, target, kept, len(found), answer)
        if not answer["allowed"]:
            raise _denied(target, answer, status if denied is not None and answer["reason"] == denied.reason else 403)
        return answer, kept

    def dial(self, addresses: list[str], port: int) -> socket.socket:
        """The first of the vetted addresses that answers (an allowed decision's kept ones: what
        the proxy reaches is in the record)."""
        deadline, failures, status = time.monotonic() + self.limits.connect_timeout, [], 502
        for address in addresses:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                status = 504
                break
            sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM)
            sock.settimeout(remaining)
            try:
                sock.connect((address, port))  # an IP literal: no second resolution, no rebinding
            except OSError as error:
                sock.close()
                failures.append(f"{address}: {error or 'timed out'}")
                status = 504 if isinstance(error, TimeoutError) else status
                continue
            sock.settimeout(self.limits.idle_timeout)
            return sock
        raise Refusal(status, f"cannot connect to port {port}: {'; '.join(failures) or 'timed out'}")


def _denied(target: str, answer: dict, status: int) -> Refusal:
    why = f"{answer['reason']} ({answer['detail']})" if answer["detail"] else answer["reason"]
    return Refusal(status, f"refused {shown_target(target)}: {why}", answer["reason"], answer["id"])


def _log_decision(workspace: str, context: dict, target: str, kept, found: int, answer: dict) -> None:
    cut = f" (of {found}; the rest neither kept nor dialled)" if found > len(kept) else ""
    log.info(
        "decision=%s reason=%s workspace=%s client=%s method=%s target=%r host=%s port=%s resolved=%s%s id=%s",
        "allow" if answer["allowed"] else "deny",
        answer["reason"],
        workspace,
        context["client"],
        context.get("method"),
        shown_target(target),
        answer["host"],
        answer["port"],
        ",".join(kept) or "-",
        cut,
        answer["id"],
    )


def _authority(address: str, port: int) -> str:
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


def _unmapped(text: str):
    """An address, an IPv4-mapped IPv6 one as its IPv4 address."""
    address = ip_address(text)
    return getattr(address, "ipv4_mapped", None) or address


def _is_local(address) -> bool:
    """Is this one of this machine's own addresses? Only then can a socket be bound to it (where
    `ip_nonlocal_bind` is set, every address can: then every dial of the proxy's own port is
    refused, which fails closed)."""
    with socket.socket(socket.AF_INET6 if address.version == 6 else socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((str(address), 0))
        except OSError:
            return False
    return True


def is_ip(host: str | None) -> bool:
    try:
        ip_address(host or "")
    except ValueError:
        return False
    return True
