"""What every `runcode-policy` command shares: the refusal mapping, the store for this invocation,
the actor it records, and the common options."""

from __future__ import annotations

import getpass

import click
from eventsourcing.persistence import InterfaceError, OperationalError

from application import Governance
from application.store import sqlite_path, why_unreachable
from domain.errors import GovernanceError
from interface.settings import Settings, open_governance


class GovernanceGroup(click.Group):
    """The one place where refusals become `ClickException`s, for every command below it."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except GovernanceError as error:
            raise click.ClickException(describe(error)) from None
        except (OperationalError, InterfaceError) as error:
            why = why_unreachable(Settings.from_env().database_url) or error
            raise click.ClickException(f"the store is not reachable: {why}") from None


def describe(error: GovernanceError) -> str:
    return "\n".join([error.detail, *(f"  {e.field}: {e.message}" for e in error.errors)])


def governance(create: bool = False) -> Governance:
    """The store for this invocation: opened on first use, closed when the command ends."""
    root = click.get_current_context().find_root()
    state = root.ensure_object(dict)
    if "governance" not in state:
        settings = Settings.from_env()
        if not create:
            require_store(settings)
        state["governance"] = open_governance(settings)
        root.call_on_close(state["governance"].close)
    return state["governance"]


def require_store(settings: Settings) -> None:
    """Opening a SQLite file that is not there would create an empty store (and answer "no
    workspace"): refuse instead, naming the file looked for and how to point elsewhere."""
    path = sqlite_path(settings.database_url)
    if path is not None and not path.exists():
        raise click.ClickException(
            f"no store at {path.resolve()}: start the service here once (make run), or point at the store "
            "with --data-dir DIR, RUNCODE_POLICY_DATA_DIR or RUNCODE_POLICY_DATABASE_URL"
        )


def actor() -> str:
    try:
        user = getpass.getuser()
    except (OSError, KeyError):  # a container user with no name in /etc/passwd
        user = "unknown"
    return f"cli:{user}"


workspace_option = click.option(
    "--workspace", "-w", default="default", show_default=True, metavar="SLUG", help="The workspace to act on."
)
note_option = click.option("--note", default="", help="Why: recorded with the change.")
