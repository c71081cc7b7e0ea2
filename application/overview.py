"""The Overview's facts: decisions per day, the most denied packages and hosts, the latest changes.

All of it comes from read models: the decision counts (one row per workspace, day, language,
name, outcome and sandbox, written with the decisions) and the change index, so the page costs
the same at a thousand recorded decisions as at a million.
"""

from __future__ import annotations

from datetime import date

from application.pointintime import describe_change
from application.store.overview import OverviewReads
from application.store.reads import ReadModel

TOP = 10
SANDBOXES_SHOWN = 3
LATEST_CHANGES = 6


class Overview:
    def __init__(self, counts: OverviewReads, readmodel: ReadModel, require_workspace):
        self.counts = counts
        self.readmodel = readmodel
        self.require_workspace = require_workspace

    def overview(self, workspace: str, first_day: date, last_day: date, top_since: date) -> dict:
        """Per day from first_day to last_day (UTC days, both included); the top lists since top_since."""
        self.require_workspace(workspace)
        per_day: dict[date, dict[str, int]] = {}
        for row in self.counts.counts_per_day(workspace, first_day, last_day):
            day = per_day.setdefault(row["day"], {"allowed": 0, "denied": 0})
            day["allowed" if row["allowed"] else "denied"] += row["installs"]
        totals = {key: sum(day[key] for day in per_day.values()) for key in ("allowed", "denied")}
        return {
            "per_day": per_day,
            "totals": totals,
            "top_denied": self._most_denied(workspace, top_since, last_day, egress=False),
            "egress_denied": self._most_denied(workspace, top_since, last_day, egress=True),
            "changes": self.latest_changes(workspace),
        }

    def _most_denied(self, workspace: str, since: date, until: date, egress: bool) -> list[dict]:
        top = self.counts.most_denied(workspace, since, until, egress, TOP)
        names = [(row["language"], row["name"]) for row in top]
        by_name: dict[tuple, list[dict]] = {}
        for row in self.counts.denied_sandboxes(workspace, since, until, names):
            by_name.setdefault((row["language"], row["name"]), []).append(row)
        out = []
        for row in top:
            found = by_name.get((row["language"], row["name"]), [])
            found.sort(key=lambda s: (-s["installs"], s["sandbox"]))
            out.append(
                {
                    "language": row["language"],
                    "name": row["name"],
                    "installs": row["installs"],
                    "sandboxes": found[:SANDBOXES_SHOWN],
                    "more_sandboxes": max(len(found) - SANDBOXES_SHOWN, 0),
                }
            )
        return out

    def latest_changes(self, workspace: str, count: int = LATEST_CHANGES) -> list[dict]:
        """The newest changes, newest first: one seek on the change index below the head version."""
        head = self.readmodel.head_version(workspace)
        rows = self.readmodel.history(workspace, None, None, max(head - count, 0), count)
        return [describe_change(row) for row in reversed(rows)]
