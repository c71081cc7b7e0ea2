"""Decision counts for overviews, and what a draft would change, from the decision-count read
model (never a replay of decisions).

For impact, every recorded install of a named package in the period is judged again, by name,
under the saved policy and under the draft (both at this instant, exceptions included): a
package whose outcome differs moves all its installs to `would_deny` or `would_allow`. The read
model holds one row per package and day and one per package and sandbox, so the cost follows the
number of packages in use, not the number of decisions recorded.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from application.policies import Policies
from application.store.counts import CountReads
from domain.decision import judge
from domain.errors import FieldError, InvalidInputError
from domain.specs import Spec

MAX_DAYS = 366


class Impact:
    def __init__(self, policies: Policies, counts: CountReads):
        self.policies = policies
        self.counts = counts

    def decision_counts(
        self, workspace: str, start_day: str, end_day: str, language: str | None = None, allowed: bool | None = None
    ) -> list[dict]:
        """Recorded decisions counted per UTC day, for overviews (and, summed, for impact).

        `start_day` and `end_day` are inclusive `YYYY-MM-DD` days (UTC). Returns plain rows
        `{"day", "language", "name", "allowed", "sandbox", "installs"}` ordered by day, language,
        name, allowed, sandbox, one per distinct key. `language` is `python`, `node`, or `egress`
        for egress decisions (whose `name` is the host); `name` is the canonical package name,
        `''` when the decision named none (invalid specs, options, direct references of unknown
        name); `sandbox` is the decision's `context.sandbox`, `''` when absent; `installs` is how
        many decisions had that key. Rows are written in the decisions' own transaction, so they
        always agree with `/decisions`. Filters: `language` (one of the three) and `allowed`.
        """
        self.policies.require_workspace(workspace)
        start, end = _day(start_day, "start_day"), _day(end_day, "end_day")
        return self.counts.decision_counts(workspace, start, end, language, allowed)

    def denied_recently(self, workspace: str, language: str, name: str, days: int = 30) -> int:
        """Denied decisions of one package over the last `days` UTC days, today included."""
        return self.counts.denied_installs(workspace, first_day(days), language, name)


def first_day(days: int, now: datetime | None = None) -> str:
    """The first UTC day of a period of `days` days that ends today."""
    return ((now or datetime.now(UTC)) - timedelta(days=days - 1)).date().isoformat()


def _day(text: str, field: str) -> str:
    try:
        if isinstance(text, str) and len(text) == 10:
            return date.fromisoformat(text).isoformat()
    except ValueError:
        pass
    raise InvalidInputError(f"{field} is not a day", [FieldError(field, "must be a date such as 2026-03-03")])


__all__ = ["Impact", "first_day", "judge", "Spec", "MAX_DAYS"]
