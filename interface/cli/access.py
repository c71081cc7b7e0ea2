"""`runcode-policy requests list|approve|reject` and `runcode-policy exceptions list|grant|revoke`.

Registered on the main group by `interface.cli`; refusals become ClickExceptions there.
"""

from __future__ import annotations

import click

from application.formats import not_future, optional_bound, optional_instant
from domain.access import STATUS_FILTERS
from domain.limits import MAX_PAGE
from domain.policy import LANGUAGES
from interface.cli.common import FLAGS, actor, governance, note_option, workspace_option
from interface.exports import show_json, table

json_option = click.option("--json", "as_json", is_flag=True, help="JSON instead of a table.")
FLAGS.update({"duration": "--for", "expires_at": "--until", "lift_deny": "--lift-deny"})
expiry_options = (
    click.option("--for", "duration", metavar="DURATION", help="ISO 8601 duration, e.g. P7D (default: permanent)."),
    click.option("--until", "until", metavar="T", help="RFC 3339 instant the exception ends."),
    click.option(
        "--lift-deny",
        is_flag=True,
        help="Lift the name's deny entry for the exception's window: it stays on the deny list "
        "and denies again when the exception ends or is revoked.",
    ),
)


def with_expiry(command):
    for option in reversed(expiry_options):
        command = option(command)
    return command


@click.group("requests")
def requests_group() -> None:
    """Access requests filed by agents after a denial."""


@requests_group.command("list")
@workspace_option
@click.option("--status", type=click.Choice(STATUS_FILTERS), default="open", show_default=True)
@json_option
def requests_list(workspace: str, status: str, as_json: bool) -> None:
    """List every request of the status, open ones first (page after page of the store's)."""
    access, found, cursor = governance().access, [], None
    while True:
        page = access.requests(workspace, status, limit=MAX_PAGE, cursor=cursor)
        found += page["requests"]
        if (cursor := page["next_cursor"]) is None:
            break
    if as_json:
        return show_json(found)
    rows = [
        (
            r["id"],
            r["language"],
            r["name"],
            r["status"],
            r["requesters"],
            r["denied_last_30_days"],
            r["justification"][:60],
        )
        for r in found
    ]
    click.echo(table(("ID", "LANGUAGE", "NAME", "STATUS", "ASKERS", "DENIED 30D", "WHY"), rows))


@requests_group.command("approve")
@workspace_option
@click.argument("request_id")
@with_expiry
@note_option
def requests_approve(workspace: str, request_id: str, duration, until, lift_deny: bool, note: str) -> None:
    """Approve a request: grant its exception (for a duration, until an instant, or permanently)."""
    decided = governance().access.approve_request(
        workspace,
        request_id,
        by=actor(),
        duration=duration,
        expires_at=optional_instant(until, "expires_at"),
        note=note,
        lift_deny=lift_deny,
    )
    end = decided["exception"]["expires_at"] or "permanent"
    click.echo(f"approved {decided['language']} {decided['name']}: exception until {end}", err=True)
    show_json(decided)


@requests_group.command("reject")
@workspace_option
@click.argument("request_id")
@note_option
def requests_reject(workspace: str, request_id: str, note: str) -> None:
    """Reject a request, with a note for the requesters."""
    decided = governance().access.reject_request(workspace, request_id, by=actor(), note=note)
    click.echo(f"rejected the request for {decided['language']} {decided['name']}", err=True)
    show_json(decided)


@click.group("exceptions")
def exceptions_group() -> None:
    """Time-boxed exceptions: packages allowed until they expire, in either mode."""


@exceptions_group.command("list")
@workspace_option
@click.option(
    "--at",
    metavar="T",
    help="Those in force at this instant, not later than now: RFC 3339, or a date (its first instant, UTC); "
    "default now.",
)
@json_option
def exceptions_list(workspace: str, at: str | None, as_json: bool) -> None:
    """List the exceptions in force, soonest expiry first."""
    gov = governance()
    found = gov.access.exceptions(workspace, not_future(optional_bound(at, "at"), gov.clock()))["exceptions"]
    if as_json:
        return show_json(found)
    rows = [
        (
            e["id"],
            e["language"],
            e["name"],
            e["expires_at"] or "permanent",
            "lifts deny" if e["lifts_deny"] else "-",
            e["granted_by"],
            e["request_id"] or "-",
        )
        for e in found
    ]
    click.echo(table(("ID", "LANGUAGE", "NAME", "UNTIL", "DENY ENTRY", "GRANTED BY", "REQUEST"), rows))


@exceptions_group.command("grant")
@workspace_option
@click.argument("language", type=click.Choice(LANGUAGES))
@click.argument("name")
@with_expiry
@note_option
def exceptions_grant(workspace: str, language: str, name: str, duration, until, lift_deny: bool, note: str) -> None:
    """Grant an exception without a request."""
    granted = governance().access.grant_exception(
        workspace,
        language,
        name,
        by=actor(),
        duration=duration,
        expires_at=optional_instant(until, "expires_at"),
        note=note,
        lift_deny=lift_deny,
    )
    click.echo(
        f"granted exception {granted['id']} for {language} {granted['name']} "
        f"until {granted['expires_at'] or 'revoked'}",
        err=True,
    )
    show_json(granted)


@exceptions_group.command("revoke")
@workspace_option
@click.argument("exception_id")
@note_option
def exceptions_revoke(workspace: str, exception_id: str, note: str) -> None:
    """Revoke an exception at once."""
    governance().access.revoke_exception(workspace, exception_id, by=actor(), note=note)
    click.echo(f"revoked exception {exception_id}", err=True)
