"""Audit queries: history of changes, recorded decisions, and point-in-time answers."""

from __future__ import annotations

import json
from collections.abc import Iterator

from application import cursors
from application.evaluation import decision_view
from application.pointintime import describe_change, package_at, timeline
from application.times import iso
from domain.errors import FieldError, InvalidInputError, NotFoundError
from domain.policy import LANGUAGES
from domain.specs import registry_name

MAX_LIMIT = 1000
EXPORT_PAGE = 1000


class Audit:
    """Mixed into the Governance application."""

    def history(self, workspace: str, start=None, end=None, limit: int = 100,
                cursor: str | None = None) -> dict:
        self.require_workspace(workspace)
        after = cursors.decode(cursor, int) if cursor else 0
        rows = self.readmodel.history(workspace, start, end, after, check_limit(limit) + 1)
        page = rows[:limit]
        more = len(rows) > limit
        return {"changes": [describe_change(r) for r in page],
                "next_cursor": cursors.encode(page[-1]["version"]) if more else None}

    def decisions(self, workspace: str, filters: dict | None = None, start=None, end=None,
                  limit: int = 100, cursor: str | None = None) -> dict:
        self.require_workspace(workspace)
        before = _decision_cursor(cursor) if cursor else None
        rows = self.readmodel.decisions(workspace, filters or {}, start, end, before,
                                        check_limit(limit) + 1)
        page = rows[:limit]
        more = len(rows) > limit
        return {"decisions": [_row_view(r) for r in page],
                "next_cursor": cursors.encode([iso(page[-1]["at"]), page[-1]["id"]]) if more else None}

    def export_decisions(self, workspace: str, filters: dict | None = None, start=None,
                         end=None) -> Iterator[dict]:
        """The whole filtered set, newest first, streamed page by page (keyset, constant memory)."""
        self.require_workspace(workspace)
        before = None
        while True:
            rows = self.readmodel.decisions(workspace, filters or {}, start, end, before, EXPORT_PAGE)
            yield from (_row_view(r) for r in rows)
            if len(rows) < EXPORT_PAGE:
                return
            before = (rows[-1]["at"], rows[-1]["id"])

    def decision(self, workspace: str, decision_id: str) -> dict:
        row = self.readmodel.decision(workspace, decision_id)
        if row is None:
            raise NotFoundError(f"no decision {decision_id!r} in this workspace")
        return _row_view(row)

    def package_at(self, workspace: str, language: str, name: str, at) -> dict:
        self.require_workspace(workspace)
        return package_at(self.readmodel, workspace, language, package_name(language, name), at)

    def package_timeline(self, workspace: str, language: str, name: str, start, end) -> dict:
        self.require_workspace(workspace)
        if end <= start:
            raise InvalidInputError("the period is empty", [FieldError("to", "must be after from")])
        return timeline(self.readmodel, workspace, language, package_name(language, name), start, end)


def package_name(language: str, text: str) -> str:
    if language not in LANGUAGES:
        raise NotFoundError(f"unknown language {language!r}", [FieldError("language", "must be python or node")])
    name = registry_name(language, text)
    if name is None:
        raise InvalidInputError(f"{text!r} is not a {language} package name",
                                [FieldError("name", "must be a registry package name")])
    return name


def check_limit(limit: int) -> int:
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInputError("limit out of range", [FieldError("limit", f"must be 1 to {MAX_LIMIT}")])
    return limit


def _decision_cursor(cursor: str):
    from application.times import parse_instant

    value = cursors.decode(cursor, list)
    if len(value) != 2 or not all(isinstance(v, str) for v in value):
        raise cursors.refusal()
    return parse_instant(value[0], "cursor"), value[1]


def _row_view(row: dict) -> dict:
    return decision_view(row["id"], json.loads(row["record"]), row["at"])
