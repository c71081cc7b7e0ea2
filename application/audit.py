"""Audit queries: history of changes, recorded decisions, and point-in-time answers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime

from application.chain.proofs import NotAsSealed
from application.chain.readmodels.decisions import row_columns
from application.chain.readmodels.rows import event_time
from application.evaluation import decision_view
from application.formats import (
    check_limit,
    cursor_id,
    cursor_instant,
    cursor_refusal,
    decode_cursor,
    iso,
    paged,
    parse_uuid,
    require_period,
)
from application.index.deliveries import with_deliveries
from application.pointintime import describe_change, package_at, timeline
from application.policies import Policies, no_workspace
from application.store.access_reads import AccessReads
from application.store.chain import ChainStore
from application.store.reads import NameRows, NameSpellings, ReadModel
from domain.decision import COLUMNS, DECISION_KINDS, DECISION_REASONS, DecisionRecord
from domain.egress.target import TargetError, parse_host
from domain.errors import FieldError, InvalidInputError, NotFoundError
from domain.limits import MAX_FILTER, MAX_TEXT
from domain.policy import LANGUAGES, RULE_CHANGED
from domain.rules import rules_for
from domain.specs import LANGUAGE_TITLES, check_language, registry_name
from domain.text import check_label, quoted

EXPORT_PAGE = 1000


class Audit:
    """The auditor's reads, over the read models (never a replay of history)."""

    def __init__(
        self, readmodel: ReadModel, policies: Policies, exceptions: AccessReads, events: ChainStore, read_state
    ):
        self.readmodel = readmodel
        # each answered decision's instant is its stored event's, read as the chain reads states
        self.events, self.read_state = events, read_state
        self.exceptions = exceptions  # what decided an answer may be an exception
        self.policies = policies
        self.require_workspace = policies.require_workspace

    def history(self, workspace: str, start=None, end=None, limit: int = 100, cursor: str | None = None) -> dict:
        self.require_workspace(workspace)
        require_period(start, end)
        after = decode_cursor(cursor, int) if cursor else 0
        rows = self.readmodel.history(workspace, start, end, after, check_limit(limit) + 1)
        page, next_cursor = paged(rows, limit, lambda last: last["version"])
        return {"changes": [describe_change(r) for r in page], "next_cursor": next_cursor}

    def with_rule_values(self, workspace: str, changes: list[dict]) -> list[dict]:
        """`changes` (history entries), each rule change with the rule it set (`value`; None: off),
        one event read each: for a page that shows what was set, not only which rule."""
        return [
            {**c, "value": self.policies.rule_set(workspace, c["version"])} if c["type"] == RULE_CHANGED else c
            for c in changes
        ]

    def changes_since(self, workspace: str, version: int, limit: int = 100) -> dict:
        """What a writer holding `version` missed: the newest `limit` changes after it, oldest
        first (the latest are what its next Save would overwrite), and how many earlier ones are
        not shown (`not_shown`; every change is one version, so the head says how many there are)."""
        self.require_workspace(workspace)
        head = self.readmodel.head_version(workspace)
        after = max(version, head - check_limit(limit))
        rows = self.readmodel.history(workspace, None, None, after, limit)
        return {"changes": [describe_change(r) for r in rows], "not_shown": after - version}

    def decisions(
        self,
        workspace: str,
        filters: dict | None = None,
        start=None,
        end=None,
        limit: int = 100,
        cursor: str | None = None,
    ) -> dict:
        self.require_workspace(workspace)
        require_period(start, end)
        before = _decision_cursor(cursor) if cursor else None
        rows = self.readmodel.decisions(
            workspace, decision_filters(filters), start, end, before, check_limit(limit) + 1
        )
        page, next_cursor = paged(rows, limit, lambda last: [iso(last["at"]), last["id"]])
        return {"decisions": self._views(page, workspace), "next_cursor": next_cursor}

    def export_decisions(self, workspace: str, filters: dict | None = None, start=None, end=None) -> Iterator[dict]:
        """The whole filtered set, newest first, streamed page by page (keyset, constant memory).
        Checked now, so a bad filter is refused before any row is streamed."""
        self.require_workspace(workspace)
        require_period(start, end)
        return self._export(workspace, decision_filters(filters), start, end)

    def _export(self, workspace: str, filters: dict, start, end) -> Iterator[dict]:
        before = None
        while True:
            rows = self.readmodel.decisions(workspace, filters, start, end, before, EXPORT_PAGE)
            yield from self._views(rows, workspace)
            if len(rows) < EXPORT_PAGE:
                return
            before = (rows[-1]["at"], rows[-1]["id"])

    def decision(self, workspace: str, decision_id: str) -> dict:
        row = self.readmodel.decision(workspace, decision_id) if parse_uuid(decision_id) else None
        if row is None:
            raise NotFoundError(f"no decision {quoted(decision_id)} in this workspace")
        return self._views([row], workspace)[0]

    def _views(self, rows: list[dict], workspace: str) -> list[dict]:
        states = self.events.first_states([r["id"] for r in rows]) if rows else {}
        read = {i: self.read_state(s.encode() if isinstance(s, str) else bytes(s)) for i, s in states.items()}
        return with_deliveries(
            self.readmodel, [_row_view(r, workspace, read.get(r["id"]), r["id"] in read) for r in rows]
        )

    def package_at(self, workspace: str, language: str, name: str, at) -> dict:
        name = self._package_name(workspace, language, name)
        found, grants = self._name_at(workspace, language, name, at)
        answer = package_at(
            found, grants, workspace, language, name, at, lambda version: self.readmodel.change(workspace, version)
        )
        answer["rules"] = {}
        if found.ruled:  # the language had rules then: the policy as it stood, for them
            version_rules = self.policies.at(workspace, at).rules()[language].version_rules
            answer["rules"] = rules_for(version_rules, language, name)
        return answer

    def package_timeline(self, workspace: str, language: str, name: str, start, end) -> dict:
        self.require_workspace(workspace)  # an unknown workspace is refused first
        require_period(start, end)
        name = self._package_name(workspace, language, name)
        # No policy answered anything before the workspace existed: its timeline starts then.
        created = self.readmodel.workspace(workspace)["created_at"]
        found, grants = self._name_at(workspace, language, name, max(start, created))
        return timeline(self.readmodel, found, grants, workspace, language, name, start, end, created)

    def _package_name(self, workspace: str, language: str, text: str) -> str:
        try:
            return package_name(language, text)
        except (InvalidInputError, NotFoundError):
            self.require_workspace(workspace)  # an unknown workspace is refused first
            raise

    def _name_at(self, workspace: str, language: str, name: str, at) -> tuple[NameRows, list[dict]]:
        """What decides `name` at `at`, and its exceptions: one round trip unless it ever had one."""
        found = self.readmodel.name_at(workspace, language, name, at)
        if found is None:
            raise no_workspace(workspace)
        return found, self.exceptions.exceptions_for_name(workspace, language, name) if found.grants else []


def decision_filters(filters: dict | None) -> dict:
    """Checked filters: known languages, kinds and reasons, printable text, and a name in any
    spelling: as given, and as each language's registry and the egress rules (`parse_host`:
    `GOOD.TEST.` is good.test, `127.1` is 127.0.0.1) read it, each spelling looked for among its
    own kind's decisions only, of those the other filters leave (a language: its packages only;
    kind egress: hosts only)."""
    filters = {k: v for k, v in (filters or {}).items() if v is not None}
    for field, allowed in (("language", LANGUAGES), ("kind", DECISION_KINDS), ("reason", DECISION_REASONS)):
        if field in filters and filters[field] not in allowed:
            raise InvalidInputError(
                f"unknown {field} {quoted(filters[field])}", [FieldError(field, f"must be one of {', '.join(allowed)}")]
            )
    for field, most in (("name", MAX_TEXT), ("source", MAX_FILTER), ("sandbox", MAX_FILTER)):
        if field in filters:  # a name as long as a list entry may be: its package page lists its decisions
            given = check_label(filters[field], field, most)
            # An empty filter, or a name of blanks, would match nothing, silently. A source or
            # sandbox is looked for as recorded: one of blanks alone was taken before
            # `domain.text.check_context` refused it, and finds its own decisions.
            blank = "blank" if field == "name" else "empty"
            if not (given.strip() if field == "name" else given):
                raise InvalidInputError(
                    f"the {field} filter is {blank}",
                    [FieldError(field, f"must not be {blank} (leave it out to match any)")],
                )
    if "name" in filters:
        given, kind = filters["name"], filters.get("kind")
        languages = [filters["language"]] if "language" in filters else [] if kind == "egress" else LANGUAGES
        spellings: dict[str | None, str | None] = {language: registry_name(language, given) for language in languages}
        if "language" not in filters and kind in (None, "egress"):  # a host's decisions have no language
            spellings[None] = _host(given)
        # Each kind's rows by the text and by their own spelling of it only: pip reads `a.b` as
        # a-b, which is neither the host a-b nor npm's a-b.
        names: NameSpellings = {
            language: tuple(dict.fromkeys(filter(None, (given, spelling)))) for language, spelling in spellings.items()
        }
        filters["name"] = names
    return filters


def _host(text: str) -> str | None:
    """A host as the egress rules record it, or None when they would not read it as one."""
    try:
        return parse_host(text)[0]
    except TargetError:
        return None


def package_name(language: str, text: str) -> str:
    check_language(language, NotFoundError)  # a path segment: an unknown language is no resource
    name = registry_name(language, text)
    if name is None:
        raise InvalidInputError(
            f"{quoted(text)} is not a {LANGUAGE_TITLES[language]} package name",
            [FieldError("name", "must be a registry package name")],
        )
    return name


def _decision_cursor(cursor: str):
    value = decode_cursor(cursor, list)
    if len(value) != 2 or not all(isinstance(v, str) for v in value):
        raise cursor_refusal()
    return cursor_instant(value[0]), cursor_id(value[1])


def _row_view(row: dict, workspace: str, state: dict | None, stored: bool) -> dict:
    """A decision's answer, from its record; refused (503) when the columns it was selected by
    no longer say what the record does, or its instant what its event does (`state`, its stored
    event's, read; `stored`: there is one): an "every denied install last week" answer must not
    hold an allowed one whose `allowed` column was edited, nor one moved into the week (`audit
    verify` names the row)."""
    record = json.loads(row["record"])
    said = (*DecisionRecord.columns(record), _event_time(state))
    kept = (*row_columns(row), row["at"])
    if kept != said or not stored:
        differs = ", ".join(c for c, a, b in zip((*COLUMNS, "at"), kept, said, strict=True) if a != b)
        raise NotAsSealed(
            f"decision {row['id']}: its row in the decisions table no longer says what its "
            f"{'event' if stored else 'event, which is gone,'} does ({differs}): the store's copy "
            "was altered (`audit verify` names what)"
        )
    return decision_view(row["id"], record, row["at"], workspace)


def _event_time(state: dict | None) -> datetime | None:
    try:
        return event_time(state)
    except (KeyError, TypeError, ValueError):  # no state, or one that says no instant: agrees with no row
        return None
