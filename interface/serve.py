"""The production server: granian running several worker processes (chosen by measurement:
README "Performance"), after the store is made ready once.

- Tables are created here, in the parent, before any worker exists: several workers creating
  them at once race (`tuple concurrently updated`). Workers then open the store with table creation off.
- The parent runs the audit chain's background sealer (and its periodic checkpoints) for every
  worker; the workers run none. A sealer in each worker read back and hashed every event on the
  same GIL as its request threads, which waited behind each round: measured, evaluate's p99
  halved once it moved here (docs/performance.md). On-demand sealing (a checkpoint asked of a
  worker) still runs in that worker.
- Each worker is its own process with its own Governance: its own group-commit writer, policy
  cache and connection pool. They need no messages to agree: every request reads the token and
  the workspace's head version from the store in one indexed query, or (`/evaluate`) has its
  recording check them inside the transaction (application.callers).
- Workers are spawned, not forked: each starts clean (no inherited pool connections or writer
  threads), and prometheus_client sees PROMETHEUS_MULTIPROC_DIR from its first import, so one
  scrape of /metrics sums every worker.
- On an empty store the first start creates the workspace `default` and prints its owner token
  (once: the store keeps only its digest), so `make run` leads straight to a usable service.
- A client that leaves sent bytes unread for RUNCODE_POLICY_STALLED_CLIENT_SECONDS is cut by the
  kernel (TCP_USER_TIMEOUT on each worker's listener, inherited by every connection it accepts):
  granian has no write timeout, and a request thread blocked on such a client is freed only when
  its connection closes. Clients that read, however slowly, are never cut by it.
- A stopping worker holds Python's finalization until granian's own threads are gone: before
  Python 3.14, a thread that takes the GIL once finalization began is ended by `pthread_exit`,
  whose forced unwind aborts a Rust thread ("panic in a function that cannot unwind"), and the
  worker died by SIGABRT after its last answer (granian releases its main thread before its
  runtime has finished dropping).
"""

from __future__ import annotations

import atexit
import errno
import gc
import multiprocessing
import os
import queue
import shutil
import socket
import sys
import tempfile
import threading
import time
from contextlib import contextmanager

import click

from application.clock import clock_skew, skew_refusal
from domain.errors import ConflictError
from interface import audit
from interface.settings import CREATE_TABLES_VAR, SEALING_VAR, THREADS_VAR, Settings, open_governance

DEFAULT_WORKSPACE = "default"
APP_FACTORY = "interface.serve:worker_app"
LISTENER_WAIT_SECONDS = 60  # how long a worker looks for the listener granian builds after the app
NATIVE_THREADS_SECONDS = 10  # how long a stopping worker waits for granian's threads to end
NATIVE_STILL_RUNNING = "granian's threads still running"
PARENT_WATCH_SECONDS = 0.5  # how often a worker looks whether its parent still lives
PARENT_VAR = "RUNCODE_POLICY_SERVE_PID"  # what serve tells its workers its process id is
# Group commit needs several requests in flight per process; past ~8 threads a 2-core machine
# only adds GIL contention (README "Performance").
DEFAULT_THREADS = 8
MAX_DEFAULT_WORKERS = 4  # each worker holds its own PostgreSQL pool (up to 16 connections)
METRICS_DIR = "PROMETHEUS_MULTIPROC_DIR"


def default_workers() -> int:
    """One worker per core, at most MAX_DEFAULT_WORKERS: several on any multi-core machine."""
    return max(1, min(os.cpu_count() or 1, MAX_DEFAULT_WORKERS))


def server_options(command):
    """The options of every command that serves (the service's `serve`, the bench's ceiling)."""
    options = (
        click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on."),
        click.option(
            "--port",
            default=8000,
            show_default=True,
            type=click.IntRange(0, 65535),
            help="Port to listen on (0: any free port).",
        ),
        click.option(
            "--workers",
            default=default_workers,
            show_default=f"one per core, at most {MAX_DEFAULT_WORKERS}",
            type=click.IntRange(1, 64),
            help="Worker processes.",
        ),
        click.option(
            "--threads",
            default=DEFAULT_THREADS,
            show_default=True,
            type=click.IntRange(1, 1024),
            help="Request threads per worker.",
        ),
    )
    for option in reversed(options):
        command = option(command)
    return command


def serve(settings: Settings, host: str, port: int, workers: int, threads: int) -> None:
    """Serve until Ctrl-C or SIGTERM; workers finish the requests in flight, then exit."""
    check_port_free(host, port)  # before the store: a refused start must not spend the first token
    governance = prepare_store(settings)  # before any worker exists (spawned: nothing is inherited)
    try:
        if settings.audit_sealing:  # here, for every worker: off their request threads' GIL
            audit.install(governance, settings)
        os.environ[CREATE_TABLES_VAR] = "n"  # what the workers read: the tables exist now
        os.environ[SEALING_VAR] = "n"  # the workers: this process seals what they record
        os.environ[THREADS_VAR] = str(threads)  # the workers bound index requests by it
        os.environ[PARENT_VAR] = str(os.getpid())  # the workers exit once it is gone
        run_server(APP_FACTORY, host, port, workers, threads)
    finally:
        governance.close()  # its sealer stops after the workers' last recordings
    click.echo("runcode-policy stopped", err=True)


def worker_app():
    """The app of one granian worker; its listener, built next, gets the stalled-client cut."""
    from interface.app import create_app
    from interface.services import services

    # Out of the terminal's process group: Ctrl-C reaches the parent alone, which stops the
    # workers after their requests in flight. A worker that took the same SIGINT itself could
    # miss the parent's stop and hold the port until the parent's 30 s kill timeout.
    os.setpgrp()
    parent = int(os.environ.get(PARENT_VAR) or os.getppid())  # serve's, even if it died while this one started
    threading.Thread(target=exit_with_parent, args=(parent,), daemon=True, name="parent-watch").start()
    app = create_app()
    # What exists now lives as long as the worker (modules, the app, its caches' structure):
    # frozen out of the collector's generations, no full collection walks it again (about
    # 30 ms each time, with every request thread stopped: a tail latency of its own).
    gc.collect()
    gc.freeze()
    seconds = services(app).settings.stalled_client_seconds
    threading.Thread(target=cut_stalled_clients, args=(seconds,), daemon=True, name="stalled-clients").start()
    atexit.register(outlive_native_threads)
    return app


def exit_with_parent(parent: int, every: float = PARENT_WATCH_SECONDS) -> None:
    """Out of the parent's process group, a worker would outlive a parent killed outright (`kill
    -9`, out of memory): it would go on answering with nothing sealing what it records, and hold
    the port against a restart. Once its parent is gone (it is then another process's child), it
    exits. Its answered decisions are durable already; requests in flight get no answer."""
    while os.getppid() == parent:
        time.sleep(every)
    os._exit(1)


def outlive_native_threads(seconds: float = NATIVE_THREADS_SECONDS) -> None:
    """Return once this process runs no thread but those Python started (at most `seconds`):
    called at exit, before finalization begins, it lets granian's threads finish without it."""
    # A request granian still owns can be held by a reference cycle (a handled exception's
    # traceback and the frames that hold it): its thread ends only once the cycle is collected,
    # and an idle worker allocates nothing that would collect it. A worker that had answered one
    # upstream failure waited out all `seconds` at every stop.
    gc.collect()
    deadline = time.monotonic() + seconds
    while native_threads() and time.monotonic() < deadline:
        time.sleep(0.01)  # the GIL is free meanwhile: they may need it to end
    if native_threads():
        print(f"runcode-policy: {NATIVE_STILL_RUNNING} after {seconds:g} s; exiting under them", file=sys.stderr)


def native_threads() -> set[int]:
    """The ids of this process's threads that Python did not start (Linux; elsewhere none)."""
    try:
        tasks = {int(name) for name in os.listdir("/proc/self/task")}
    except OSError:
        return set()
    started = {t.native_id for t in threading.enumerate() if not isinstance(t, threading._DummyThread)}
    return tasks - started


def cut_stalled_clients(seconds: int) -> None:
    """Set TCP_USER_TIMEOUT on this process's listening TCP sockets once they exist (Linux)."""
    option = getattr(socket, "TCP_USER_TIMEOUT", None)
    if option is None or not os.path.isdir("/proc/self/fd"):
        return
    deadline = time.monotonic() + LISTENER_WAIT_SECONDS
    while time.monotonic() < deadline:
        ports = _set_on_listeners(option, seconds * 1000)
        if ports:
            # Connections accepted before the listener had it (this thread may run late on a busy
            # machine) did not inherit it: they get it now. Those accepted later inherit it.
            _set_on_sockets(option, seconds * 1000, lambda sock, found=ports: sock.getsockname()[1] in found)
            return
        time.sleep(0.05)


def _set_on_listeners(option: int, milliseconds: int) -> set[int]:
    """Set it on this process's listening TCP sockets; the ports they listen on."""
    ports: set[int] = set()

    def listening(sock) -> bool:
        if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
            ports.add(sock.getsockname()[1])
            return True
        return False

    _set_on_sockets(option, milliseconds, listening)
    return ports


def _set_on_sockets(option: int, milliseconds: int, chosen) -> None:
    """Set the option on every TCP socket of this process that `chosen(sock)` picks."""
    for name in os.listdir("/proc/self/fd"):
        try:
            if not os.readlink(f"/proc/self/fd/{name}").startswith("socket:"):
                continue
            with socket.socket(fileno=os.dup(int(name))) as sock:  # the same socket, another descriptor
                if sock.type != socket.SOCK_STREAM or sock.family not in (socket.AF_INET, socket.AF_INET6):
                    continue
                if chosen(sock):
                    sock.setsockopt(socket.IPPROTO_TCP, option, milliseconds)
        except OSError:
            continue


def check_port_free(host: str, port: int) -> None:
    """A port in use is one line saying what to do. The workers bind with SO_REUSEPORT, which would
    let a second server share a port another one holds the same way; a bind without it refuses.
    SO_REUSEADDR, as every server sets it: the TIME_WAIT sockets a stopped server leaves behind
    must not refuse a restart on the same port (a listener still does)."""
    if port == 0:
        return
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as error:
            if error.errno != errno.EADDRINUSE:
                raise
            raise click.ClickException(
                f"port {port} on {host} is already in use (is runcode-policy already running?); "
                f"choose another with PORT={port + 1 if port < 65535 else 8000} make run, or --port"
            ) from None


def check_clock(governance) -> None:
    """Refuse to start on a clock that disagrees with PostgreSQL's by more than MAX_CLOCK_SKEW: an
    instance stamps what it records, and judges exceptions' expiry, by its own clock, so a skewed
    one would record an allow by a Save as made before that Save, or grant past an expiry."""
    refusal = skew_refusal(clock_skew(governance.recorder))
    if refusal is not None:
        raise click.ClickException(f"{refusal}: synchronise it (NTP) and start again")


def prepare_store(settings: Settings):
    """Open the store with table creation on (unless the operator turned it off:
    RUNCODE_POLICY_CREATE_TABLES=n, the schema is managed elsewhere)."""
    governance = open_governance(settings)
    try:
        check_clock(governance)  # before anything is recorded by this clock
    except BaseException:
        governance.close()
        raise
    if not governance.readmodel.has_workspaces():
        try:
            announce_first_token(governance.create_workspace(DEFAULT_WORKSPACE, by="runcode-policy serve"))
        except ConflictError:
            pass  # another server process on the same store created it first: its token was printed there
    return governance


def announce_first_token(created: dict) -> None:
    click.echo(
        f'created workspace "{created["workspace"]}" on an empty store; its owner token is '
        "shown once, here (only a digest is stored). Keep it safe.",
        err=True,
    )
    click.echo(f'owner token for workspace "{created["workspace"]}": {created["token"]}')


def run_server(factory: str, host: str, port: int, workers: int, threads: int) -> None:
    """Serve the WSGI app that `factory` ("module:function") builds in each worker process."""
    from granian import Granian
    from granian.constants import Interfaces

    (address, bound), holder = _reserve(host, port)
    metrics_dir, own_dir = _metrics_dir()
    multiprocessing.set_start_method("spawn", force=True)
    server = Granian(
        factory,
        address=address,
        port=bound,
        interface=Interfaces.WSGI,
        factory=True,
        workers=workers,
        blocking_threads=threads,
        log_level="error",
        workers_kill_timeout=30,
        respawn_failed_workers=True,  # a worker killed (out of memory, a crash) is replaced, not the end of all
    )
    signals_without_locks(server)
    shown = f"[{address}]" if ":" in address else address
    announce = f"runcode-policy listening on http://{shown}:{bound}  (Ctrl-C to stop)"
    threading.Thread(target=announce_when_accepting, args=(address, bound, announce), daemon=True).start()
    try:
        with _main_script_hidden():
            server.serve()  # returns after SIGTERM/Ctrl-C, once the workers finished their requests
    finally:
        holder.close()
        if own_dir:
            shutil.rmtree(metrics_dir, ignore_errors=True)


def signals_without_locks(server) -> None:
    """granian's parent handles SIGINT/SIGTERM (and SIGHUP) by setting its flag and an Event, in
    the handler: in the main thread, which may hold that Event's lock when the signal comes (its
    main loop waking from `wait`, or a handler already inside `set` when a second TERM arrives
    microseconds later, as from `timeout` forwarding one beside a supervisor's). The handler
    then waits for that lock forever, in the thread holding it: `serve` never stopped (3 of 40
    stops with TERMs 25-75 µs apart, and once with the main loop waking). The handler here sets
    its flag and hands the wake-up to a thread of its own through a queue whose `put` may
    interrupt itself (`SimpleQueue`: reentrant); the main loop reads every flag once it wakes."""
    wakes: queue.SimpleQueue = queue.SimpleQueue()

    def waking() -> None:
        while True:
            wakes.get()
            server.main_loop_interrupt.set()

    threading.Thread(target=waking, name="signals", daemon=True).start()

    def handler_setting(flag: str):
        def handler(*_):
            setattr(server, flag, True)
            wakes.put(None)

        return handler

    server.signal_handler_interrupt = handler_setting("interrupt_signal")
    server.signal_handler_reload = handler_setting("reload_signal")


@contextmanager
def _main_script_hidden():
    """Spawned workers skip the parent's main script. multiprocessing re-runs it in every spawned
    process before the target (so that what it defines unpickles); the `runcode-policy` console
    script's main imports the whole CLI, a worker none of it: its app comes from the factory."""
    main = sys.modules["__main__"]
    spec, path = getattr(main, "__spec__", None), getattr(main, "__file__", None)
    main.__spec__ = None
    if path is not None:
        del main.__file__
    try:
        yield
    finally:
        main.__spec__ = spec
        if path is not None:
            main.__file__ = path


def announce_when_accepting(address: str, port: int, line: str, seconds: float = 120) -> None:
    """Say "listening" once a worker accepts connections, not before: scripts wait for the line."""
    target = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(address, address)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection((target, port), timeout=1).close()
        except OSError:
            time.sleep(0.02)
            continue
        click.echo(line)
        return


def _reserve(host: str, port: int) -> tuple[tuple[str, int], socket.socket]:
    """Bind (never listen) the address with SO_REUSEPORT. On Linux each granian worker binds its
    own listener to the same port; holding it here makes `--port 0` one port for all of them."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    holder = socket.socket(family, kind, proto)
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    holder.bind(address)
    return holder.getsockname()[:2], holder


def _metrics_dir() -> tuple[str, bool]:
    """Prometheus multiprocess mode: the operator's directory, else a fresh one for this run
    (counters start from zero with the service, as they would in a single process)."""
    if os.environ.get(METRICS_DIR):
        return os.environ[METRICS_DIR], False
    os.environ[METRICS_DIR] = tempfile.mkdtemp(prefix="runcode-policy-metrics-")
    return os.environ[METRICS_DIR], True
