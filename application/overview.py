"""The Overview's facts: decisions per day, the most denied packages and hosts, the latest
changes, known malware fetched, and names the upstream did not have.

All of it comes from read models: the decision counts (one row per workspace, day, language,
name, outcome and sandbox, written with the decisions), the per-version fetch rollup of the
packages an advisory names (checked in memory against the advisories' affected versions, so a
fetch made before its advisory was imported counts),
the partial index of not-found decisions and the change index, so the page costs the same at a
thousand recorded decisions as at a million.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time

from application.advisories import Advisories
from application.impact import Impact
from application.pointintime import describe_change
from application.store.overview import OverviewReads
from application.store.reads import ReadModel

TOP = 10
WATCHED = 10  # malware exposures and unknown names shown, each list ("N more" past it)
SANDBOXES_SHOWN = 3
LATEST_CHANGES = 6


class Overview:
    def __init__(
        self, counts: OverviewReads, readmodel: ReadModel, advisories: Advisories, impacts: Impact, require_workspace
    ):
        self.counts = counts
        self.readmodel = readmodel
        self.advisories = advisories
        self.impacts = impacts
        self.require_workspace = require_workspace

    def overview(self, workspace: str, first_day: date, last_day: date, top_since: date) -> dict:
        """Per day from first_day to last_day (UTC days, both included), with the malware
        exposures and unknown names of those days; the top lists since top_since."""
        self.require_workspace(workspace)
        with self.counts.within_one_seal():
            return self._overview(workspace, first_day, last_day, top_since)

    def _overview(self, workspace: str, first_day: date, last_day: date, top_since: date) -> dict:
        first, last = first_day.isoformat(), last_day.isoformat()
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
            "exposures": _watched(self._exposures(workspace, first, last)),
            "unknown": self._unknown_names(workspace, first_day),
        }

    def _exposures(self, workspace: str, first: str, last: str) -> list[dict]:
        """The packages used in the period that an advisory names (the impact preview's sums,
        kept for the days before `last`), then only their rows of the fetch rollup."""
        named = self.advisories.named(self.impacts.installs(workspace, first, last))
        return self.advisories.exposed(self.counts.fetched_versions(workspace, first, last, names=named))

    def _unknown_names(self, workspace: str, first_day: date) -> dict:
        """Those asked by the most sandboxes first; whether each exists now is asked of the
        shown ones only."""
        asked = self.advisories.asked_unknown(workspace, datetime.combine(first_day, time(), UTC))
        asked.sort(key=lambda n: (-len(n["sandboxes"]), -n["count"], n["language"], n["name"]))
        watched = _watched(asked)
        watched["shown"] = [self.advisories.unknown_name(workspace, n) for n in watched["shown"]]
        return watched

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


def _watched(found: list[dict]) -> dict:
    return {"shown": found[:WATCHED], "more": max(len(found) - WATCHED, 0)}
