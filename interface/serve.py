"""The production server: the Flask app under waitress, after the store is made ready.

`make run` must lead straight to a usable service, so on an empty store the first start creates
the workspace `default` and prints its owner token (once: the store keeps only its digest).
"""

from __future__ import annotations

import errno
import signal

import click
from waitress.server import create_server

from application import Governance
from domain.errors import ConflictError
from interface.app import create_app
from interface.settings import Settings, open_governance

DEFAULT_WORKSPACE = "default"


def serve(settings: Settings, host: str, port: int, threads: int) -> None:
    """Serve until Ctrl-C or SIGTERM, then finish requests in flight and close the store."""
    governance = open_governance(settings)  # tables are created here, before any request thread
    try:
        server = listen(create_app(governance=governance), host, port, threads)
        first_start(governance)  # after the port is ours: a refused start must not spend the token
        for url in listen_urls(server):
            click.echo(f"runcode-policy listening on {url}  (Ctrl-C to stop)")
        _stop_on_sigterm()
        server.run()  # returns on KeyboardInterrupt/SystemExit, after stopping its threads
        server.close()
    finally:
        governance.close()
    click.echo("runcode-policy stopped", err=True)


def listen(app, host: str, port: int, threads: int):
    """The waitress server bound to host:port; a port in use is one line saying what to do."""
    try:
        return create_server(app, host=host, port=port, threads=threads)
    except OSError as error:
        if error.errno != errno.EADDRINUSE:
            raise
        raise click.ClickException(
            f"port {port} on {host} is already in use (is runcode-policy already running?); "
            f"choose another with PORT={port + 1 if port < 65535 else 8000} make run, or --port"
        ) from None


def first_start(governance: Governance) -> None:
    """On an empty store, create the workspace `default` and print its owner token once.

    The store was opened with table creation on before any request thread existed: creating
    tables from several workers at once races (ARCHITECTURE.md). An operator who turned it off
    (RUNCODE_POLICY_CREATE_TABLES=n: the schema is managed elsewhere) is obeyed.
    """
    if not governance.has_workspaces():
        try:
            announce_first_token(governance.create_workspace(DEFAULT_WORKSPACE, by="runcode-policy serve"))
        except ConflictError:
            pass  # another server process on the same store created it first: its token was printed there


def announce_first_token(created: dict) -> None:
    click.echo(
        f'created workspace "{created["workspace"]}" on an empty store; its owner token is '
        "shown once, here (only a digest is stored). Keep it safe.",
        err=True,
    )
    click.echo(f'owner token for workspace "{created["workspace"]}": {created["token"]}')


def listen_urls(server) -> list[str]:
    # One socket gives a TcpWSGIServer, several (e.g. `localhost` on IPv4 and IPv6) a
    # MultiSocketServer; both know the ports really bound (so --port 0 works).
    listening = getattr(server, "effective_listen", None) or [(server.effective_host, server.effective_port)]
    return [f"http://[{h}]:{p}" if ":" in str(h) else f"http://{h}:{p}" for h, p in listening]


def _stop_on_sigterm() -> None:
    # waitress stops cleanly on SystemExit as on Ctrl-C; a supervisor's SIGTERM should too.
    def _exit(signum, frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, _exit)
