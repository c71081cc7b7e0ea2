"""The Overview's aggregates over the decision-count read model (`count_schema`): sums per day,
and the most denied names with their sandboxes. Each reads one row per (day, name, outcome,
sandbox) key of the period, never the decisions themselves; the most-denied lists read only the
denied keys (the partial index `rcp_denied_counts`). The per-version fetch rollup comes with
`CountReads`."""

from __future__ import annotations

from datetime import date

from application.store.counts import CountReads


class OverviewReads(CountReads):
    def counts_per_day(self, workspace: str, first_day: date, last_day: date) -> list[dict]:
        rows = self._rows(
            "SELECT day, allowed, installs FROM {outcome_days} WHERE workspace = %s AND day >= %s AND day <= %s",
            (workspace, first_day.isoformat(), last_day.isoformat()),
        )
        return [
            {"day": date.fromisoformat(r["day"]), "allowed": bool(r["allowed"]), "installs": int(r["installs"])}
            for r in rows
        ]

    def most_denied(self, workspace: str, first_day: date, last_day: date, egress: bool, limit: int) -> list[dict]:
        """Names denied most often (packages, or with `egress` hosts); ties by name."""
        languages = "language = 'egress'" if egress else "language <> 'egress'"
        rows = self._rows(
            "SELECT language, name, SUM(installs) AS installs FROM {decision_counts} "
            f"WHERE workspace = %s AND day >= %s AND day <= %s AND allowed = FALSE AND {languages} AND name <> '' "
            "GROUP BY language, name ORDER BY SUM(installs) DESC, name LIMIT %s",
            (workspace, first_day.isoformat(), last_day.isoformat(), limit),
        )
        return [{**r, "installs": int(r["installs"])} for r in rows]

    def denied_sandboxes(self, workspace: str, first_day: date, last_day: date, names: list[tuple]) -> list[dict]:
        """Per (language, name) of `names`: each sandbox that was denied it, and how often."""
        if not names:
            return []
        pairs = " OR ".join(["(language = %s AND name = %s)"] * len(names))
        rows = self._rows(
            "SELECT language, name, sandbox, SUM(installs) AS installs FROM {decision_counts} "
            f"WHERE workspace = %s AND day >= %s AND day <= %s AND allowed = FALSE AND sandbox <> '' AND ({pairs}) "
            "GROUP BY language, name, sandbox",
            (workspace, first_day.isoformat(), last_day.isoformat(), *[v for pair in names for v in pair]),
        )
        return [{**r, "installs": int(r["installs"])} for r in rows]
