"""What every `runcode-policy` command shares: the refusal mapping, the store for this invocation,
the actor it records, and the common options."""

from __future__ import annotations

import errno
import getpass
import os
import sqlite3
import urllib.error
from pathlib import Path

import click
from eventsourcing.persistence import InterfaceError, OperationalError

from application import Governance
from application.store import sqlite_path, why_unreachable
from domain.errors import GovernanceError
from interface.audit.signer import SignerFailed
from interface.settings import Settings, open_governance


class GovernanceGroup(click.Group):
    """The one place where refusals and failures become `ClickException`s (a line in words, exit
    1, no traceback), for every command below it."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except GovernanceError as error:
            raise click.ClickException(describe(error)) from None
        except (OperationalError, InterfaceError) as error:
            why = why_unreachable(Settings.from_env().database_url) or error
            raise click.ClickException(f"the store is not reachable: {why}") from None
        except sqlite3.DatabaseError as error:  # not a store, or a damaged one
            where = sqlite_path(Settings.from_env().database_url) or "the store"
            raise click.ClickException(f"{where} cannot be read as a runcode-policy store: {error}") from None
        except (SignerFailed, urllib.error.URLError) as error:
            raise click.ClickException(str(error)) from None
        except OSError as error:
            if error.errno == errno.EPIPE:
                raise  # the reader stopped reading (`| head`): click exits quietly
            raise click.ClickException(_os_error(error)) from None


def _os_error(error: OSError) -> str:
    """`cannot open PATH: Is a directory`, or the system's own words."""
    if error.filename is not None:
        return f"cannot open {error.filename}: {error.strerror or error}"
    return str(error)


def read_text(path: str) -> str:
    """A file the user named, as UTF-8 text, or a refusal naming it."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise click.ClickException(f"{path} is not UTF-8 text") from None


class FilePath(click.Path):
    """A file the user names (`dir_okay=False`): a directory in its place is a failure a person
    can cause, so it is one line naming the option, exit 1, not click's usage block (exit 2)."""

    def __init__(self, **kwargs):
        super().__init__(dir_okay=False, **kwargs)

    def convert(self, value, param, ctx):
        if value != "-" and os.path.isdir(value):
            name = param.opts[0] if isinstance(param, click.Option) else param.human_readable_name
            raise click.ClickException(f"{name}: {value} is a directory, not a file")
        return super().convert(value, param, ctx)


# The options that carry an API field, for a refusal naming the field (the commands register theirs).
FLAGS: dict[str, str] = {}


def describe(error: GovernanceError) -> str:
    fields = [f"  {e.field}{f' ({FLAGS[e.field]})' if e.field in FLAGS else ''}: {e.message}" for e in error.errors]
    return "\n".join([error.detail, *fields])


def governance(create: bool = False, as_found: bool = False) -> Governance:
    """The store for this invocation: opened on first use, closed when the command ends.
    `as_found`: no tables made and no read models rebuilt on opening (what verifies the store
    must not rewrite it)."""
    root = click.get_current_context().find_root()
    state = root.ensure_object(dict)
    if "governance" not in state:
        settings = Settings.from_env()
        if not create:
            require_store(settings)
        state["governance"] = open_governance(settings, as_found=as_found)
        root.call_on_close(state["governance"].close)
    return state["governance"]


def require_store(settings: Settings) -> None:
    """Opening a SQLite file that is not there would create an empty store (and answer "no
    workspace"): refuse instead, naming the file looked for and how to point elsewhere."""
    path = sqlite_path(settings.database_url)
    if path is not None and (not path.exists() or (path.is_file() and path.stat().st_size == 0)):
        raise click.ClickException(  # an empty file too: opening it would make a store of it
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
