"""The `runcode-policy` command line: serve, workspaces, tokens, the policy, decision exports.

The store comes from the environment (`RUNCODE_POLICY_DATABASE_URL`, default SQLite under
./var, or under `--data-dir`), as for the web service. Only `serve` and `workspace create` may
create a store; every other command refuses, naming the store it looked for. What a script
wants (a token, a policy, an export) goes to stdout alone; everything said to a person goes to
stderr. Refusals exit 1 with their detail.
"""

from __future__ import annotations

import os

import click

from application import not_future, optional_bound
from application.store import DEFAULT_DATA_DIR
from domain.policy import LANGUAGES, LISTS, MODES
from domain.text import noun_for
from domain.token import ROLES
from interface import exports
from interface.cli.access import exceptions_group, requests_group
from interface.cli.advisories import advisories_group
from interface.cli.audit import audit as audit_command
from interface.cli.common import FLAGS, FilePath, GovernanceGroup, actor, governance, note_option, workspace_option
from interface.cli.egress_proxy import egress_proxy_command
from interface.exports import Tally, progress, show_json, table, written
from interface.serve import server_options
from interface.settings import Settings

# The instants' options (policy show and exceptions list take --at, decisions export the others).
FLAGS.update({"at": "--at", "from": "--from", "to": "--to"})


@click.group(cls=GovernanceGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--data-dir",
    envvar="RUNCODE_POLICY_DATA_DIR",
    default=DEFAULT_DATA_DIR,
    show_default=True,
    metavar="DIR",
    help="Where the default SQLite store and the console's key live (env RUNCODE_POLICY_DATA_DIR).",
)
def main(data_dir: str) -> None:
    """Govern which packages an AI sandbox may install (store: RUNCODE_POLICY_DATABASE_URL, or
    SQLite under --data-dir)."""
    if not data_dir.strip():  # '' would put the store at the filesystem's root
        raise click.BadParameter("must name a directory", param_hint="'--data-dir'")
    os.environ["RUNCODE_POLICY_DATA_DIR"] = data_dir  # so every setting read below agrees, serve's app included


@main.command()
@server_options
def serve(host: str, port: int, workers: int, threads: int) -> None:
    """Run the service (granian, several worker processes); on an empty store, create workspace `default` first."""
    from interface.serve import serve as run_server

    run_server(Settings.from_env(), host, port, workers, threads)


# -- workspaces and tokens ---------------------------------------------------------------------
@main.group()
def workspace() -> None:
    """Workspaces: one policy, its tokens and decisions each."""


@workspace.command("create")
@click.argument("slug")
def workspace_create(slug: str) -> None:
    """Create a workspace; print its first owner token alone on stdout (shown once)."""
    created = governance(create=True).create_workspace(slug, by=actor())
    click.echo(f'created workspace "{slug}"; its owner token follows on stdout (shown once)', err=True)
    click.echo(created["token"])


@main.group()
def token() -> None:
    """API tokens: issue, list, revoke."""


@token.command("create")
@workspace_option
@click.option("--role", required=True, type=click.Choice(ROLES), help="What the token may do.")
@click.option("--name", required=True, help="Who or what uses it, e.g. ci-sandbox.")
def token_create(workspace: str, role: str, name: str) -> None:
    """Issue a token; print its secret alone on stdout (shown once)."""
    issued = governance().issue_token(workspace, name, role, by=actor())
    click.echo(f'issued {role} token {issued["id"]} "{issued["name"]}" in workspace "{workspace}"', err=True)
    click.echo(issued["token"])


@token.command("list")
@workspace_option
@click.option("--json", "as_json", is_flag=True, help="JSON instead of a table.")
def token_list(workspace: str, as_json: bool) -> None:
    """List the workspace's tokens (never their secrets)."""
    tokens = governance().list_tokens(workspace)
    if as_json:
        return show_json(tokens)
    rows = [
        (
            t["id"],
            t["name"],
            t["role"],
            t["issued_at"],
            t["issued_by"],
            f"revoked {t['revoked_at']} by {t['revoked_by']}" if t["revoked_at"] else "active",
        )
        for t in tokens
    ]
    click.echo(table(("ID", "NAME", "ROLE", "ISSUED", "BY", "STATUS"), rows))


@token.command("revoke")
@workspace_option
@click.argument("token_id")
def token_revoke(workspace: str, token_id: str) -> None:
    """Revoke a token by its id (see `token list`); it stops working at once."""
    governance().revoke_token(workspace, token_id, by=actor())
    click.echo(f'revoked token {token_id} in workspace "{workspace}"', err=True)


# -- the policy --------------------------------------------------------------------------------
@main.group()
def policy() -> None:
    """Show or change a workspace's policy."""


@policy.command("show")
@workspace_option
@click.option(
    "--at",
    metavar="T",
    help="The policy as it stood at this instant, not later than now: RFC 3339, or a date (its first instant, UTC).",
)
def policy_show(workspace: str, at: str | None) -> None:
    """Print the policy as JSON (now, or at an instant)."""
    gov = governance()
    show_json(gov.policy(workspace, not_future(optional_bound(at, "at"), gov.clock())))


@policy.command("switch-mode")
@workspace_option
@click.argument("language", type=click.Choice(LANGUAGES))
@click.argument("mode", type=click.Choice(MODES))
@note_option
def policy_switch_mode(workspace: str, language: str, mode: str, note: str) -> None:
    """Switch a language to allowlist or denylist mode."""
    change(workspace, [{"action": "switch-mode", "language": language, "mode": mode}], note)


def list_change_command(action: str, summary: str):
    @policy.command(action, help=summary + " ENTRIES may be several arguments and/or comma-separated.")
    @workspace_option
    @click.argument("language", type=click.Choice(LANGUAGES))
    @click.argument("list_name", metavar="{allow|deny}", type=click.Choice(LISTS))
    @click.argument("entries", nargs=-1, required=True)
    @note_option
    def command(workspace: str, language: str, list_name: str, entries: tuple[str, ...], note: str) -> None:
        change(
            workspace, [{"action": action, "language": language, "list": list_name, "entries": list(entries)}], note
        )  # the domain splits commas

    return command


list_change_command("add", "Add package names to a list (version constraints are dropped).")
list_change_command("remove", "Remove package names from a list.")


def change(workspace: str, changes: list[dict], note: str) -> None:
    gov = governance()
    before = gov.policy(workspace)["version"]
    after = gov.change_policy(workspace, changes, by=actor(), note=note)
    moved = after["version"] - before
    click.echo(
        f'workspace "{workspace}": policy version {after["version"]} '
        f"({moved or 'no'} change{'' if moved == 1 else 's'} recorded)",
        err=True,
    )
    show_json(after)


# -- decisions ---------------------------------------------------------------------------------
@main.group()
def decisions() -> None:
    """Recorded decisions."""


@decisions.command("export")
@workspace_option
@click.option("--from", "start", metavar="T", help="From this instant (or date, UTC), inclusive.")
@click.option("--to", "end", metavar="T", help="Before this instant (a date: through the end of that day, UTC).")
@click.option("--format", "fmt", type=click.Choice(("csv", "jsonl")), default="csv", show_default=True)
@click.option(
    "--output",
    "-o",
    default="-",
    type=FilePath(allow_dash=True),
    help="File to write (default: stdout); it appears only once complete.",
)
@click.option(
    "--chain",
    is_flag=True,
    help="With --format jsonl: each decision with its chain link, then the "
    "links to the head, for `audit verify-export`.",
)
def decisions_export(workspace: str, start: str | None, end: str | None, fmt: str, output: str, chain: bool) -> None:
    """Stream every decision in the period, newest first (constant memory, any size)."""
    if chain and fmt != "jsonl":
        raise click.UsageError("--chain needs --format jsonl")
    rows = Tally(
        governance().audit.export_decisions(workspace, {}, optional_bound(start, "from"), optional_bound(end, "to"))
    )
    with written(output) as out, progress(rows, output) as shown:
        for line in exports.lines(governance().chain.with_links(workspace, shown) if chain else shown, fmt):
            out.write(line)
    where = f" to {output}" if output != "-" else ""
    click.echo(f"exported {rows.count} {noun_for(rows.count, 'decision')}{where}", err=True)


main.add_command(egress_proxy_command)
main.add_command(audit_command)
main.add_command(requests_group)
main.add_command(exceptions_group)
main.add_command(advisories_group)
