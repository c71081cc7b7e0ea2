"""`runcode-policy egress-proxy`: the command that opens the store and serves the proxy."""

from __future__ import annotations

import logging
import math
import signal

import click

from domain.errors import GovernanceError
from domain.text import check_context
from interface.egress_proxy import EgressProxy, ProxyLimits, is_ip, log
from interface.settings import Settings, open_governance


class Seconds(click.FloatRange):
    """A FloatRange that refuses nan, which passes every comparison and so every bound."""

    name = "seconds"

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if math.isnan(number):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        return number


def parse_listen(text: str) -> tuple[str, int]:
    """`127.0.0.1:3128` or `[::1]:3128`."""
    host, colon, port = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not colon or not port.isdecimal() or int(port) > 65535 or not is_ip(host):
        raise click.BadParameter(f"{text!r} must be IP:port, such as 127.0.0.1:3128 or [::1]:3128")
    return host, int(port)


@click.command("egress-proxy")
@click.option(
    "--listen",
    default="127.0.0.1:3128",
    show_default=True,
    callback=lambda _ctx, _param, value: parse_listen(value),
    help="IP:port to listen on",
)
@click.option("--workspace", "-w", required=True, help="Workspace whose audit log records the decisions")
@click.option("--sandbox", default=None, help="Label recorded as context.sandbox on every decision")
@click.option("--max-connections", type=click.IntRange(1, 100_000), default=256, show_default=True)
@click.option(
    "--max-per-client",
    type=click.IntRange(1, 100_000),
    default=64,
    show_default=True,
    help="Connections one client address may hold at once",
)
@click.option("--connect-timeout", type=Seconds(0.1, 300), default=10.0, show_default=True)
@click.option("--idle-timeout", type=Seconds(1, 86_400), default=300.0, show_default=True)
@click.option(
    "--head-timeout",
    type=Seconds(0.1, 300),
    default=10.0,
    show_default=True,
    help="Seconds a client has to send its whole request line and headers",
)
def egress_proxy_command(
    listen, workspace, sandbox, max_connections, max_per_client, connect_timeout, idle_timeout, head_timeout
):
    """Run the enforcing egress proxy (CONNECT and plain HTTP) for one workspace."""
    try:
        settings = Settings.from_env()
    except GovernanceError as error:
        raise click.ClickException(error.detail) from None
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    limits = ProxyLimits(
        max_connections=max_connections,
        max_per_client=max_per_client,
        connect_timeout=connect_timeout,
        idle_timeout=idle_timeout,
        head_timeout=head_timeout,
    )
    governance, proxy = _open_proxy(settings, workspace, listen, limits, sandbox)
    log.info("listening on %s:%s for workspace %s; %s", *listen, workspace, settings.egress.describe())
    signal.signal(signal.SIGTERM, _interrupt)
    _serve(proxy, governance)


def _open_proxy(settings: Settings, workspace: str, listen: tuple[str, int], limits: ProxyLimits, sandbox: str | None):
    """The governance store and a bound proxy, or a ClickException (with the store closed)."""

    governance = open_governance(settings)
    try:
        check_context({"sandbox": sandbox})  # refused now, not at every connection once serving
        governance.policies.require_workspace(workspace)
        return governance, EgressProxy(governance, workspace, listen, limits=limits, sandbox=sandbox)
    except (GovernanceError, OSError) as error:
        governance.close()
        raise click.ClickException(getattr(error, "detail", None) or str(error)) from None


def _serve(proxy: EgressProxy, governance) -> None:
    """Serve until interrupted (SIGINT, or SIGTERM turned into one), then close both."""
    try:
        proxy.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        proxy.close()
        governance.close()
        log.info("stopped")


def _interrupt(_signum, _frame):
    raise KeyboardInterrupt
