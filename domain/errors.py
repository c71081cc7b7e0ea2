"""The one family of refusals. Every interface maps `GovernanceError` once (API: problem+json)."""

from __future__ import annotations

from dataclasses import dataclass

from domain.limits import MAX_ERRORS


@dataclass(frozen=True)
class FieldError:
    """One bad field: `field` is a JSON path such as `python.allow[3]`, `message` the rule broken."""

    field: str
    message: str


class GovernanceError(Exception):
    """Base of every refusal. `title` is stable text for clients; `errors` name fields and rules."""

    title = "Request refused"

    def __init__(self, detail: str, errors: list[FieldError] | tuple[FieldError, ...] = ()):
        super().__init__(detail)
        self.detail = detail
        self.errors = named(errors)


def named(errors: list[FieldError] | tuple[FieldError, ...]) -> tuple[FieldError, ...]:
    """The errors a refusal names: the first MAX_ERRORS, then one saying there are more (a pasted
    list of 260,000 bad names was refused with an 80 MB answer naming each). What finds errors
    one by one may stop at the first past MAX_ERRORS (`domain.entries.parse_entries` does)."""
    if len(errors) <= MAX_ERRORS:
        return tuple(errors)
    rest = f"only the first {MAX_ERRORS} errors are named: correct them and send it again to see the rest"
    return (*errors[:MAX_ERRORS], FieldError(errors[MAX_ERRORS].field, rest))


# How a refusal's detail points at its `errors` (the field errors, each naming a field and a rule).
NAMED_IN_ERRORS = "named in errors"
RULES_NAMED = f"breaks the rules {NAMED_IN_ERRORS}"


class InvalidInputError(GovernanceError):
    """Input breaks a rule (bad name, bad mode, bad timestamp...). Nothing was changed."""

    title = "Invalid input"


class InvalidEntriesError(InvalidInputError):
    """One or more list entries are not valid package names; every bad entry is named."""

    title = "Invalid list entries"


class ConflictError(GovernanceError):
    """The state moved on (expected_version is stale) or the thing already exists."""

    title = "Conflict"


class NotFoundError(GovernanceError):
    """No such workspace, decision, token or package in this workspace."""

    title = "Not Found"


class EgressConfigError(InvalidInputError):
    """A hostname allowlist entry or deny range is malformed."""

    title = "Invalid egress configuration"
