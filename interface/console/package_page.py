"""One package's page: its status now, its timeline over a chosen period, its recent decisions.

The timeline is the API's (`?on=` / `from`-`to`): allowed and denied intervals, each shown with
the change that opened it (who, when, the note), and drawn as one band.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta

from flask import render_template, request

from application.formats import parse_instant
from domain.decision import KNOWN_MALWARE
from domain.errors import GovernanceError
from domain.rules import REASONS as RULE_REASONS
from interface.console.charts import band
from interface.console.forms import error_items
from interface.console.instants import timeline_period
from interface.console.session import blueprint, caller, governance

RECENT = 10
HIDDEN_READ = 100  # recorded hidings read per reason (a bounded cost: one package range each)
MAX_INTERVALS = 200  # drawn and listed (the timeline found what opened each as it went)


@blueprint.get("/packages/<language>/<path:name>")
def package(language: str, name: str):
    workspace, instant_now = caller()["workspace"], governance().clock()
    today = instant_now.date()
    now = governance().audit.package_at(workspace, language, name, instant_now)  # 404/422 for a bad name
    typed = period_typed(request.args, today)
    try:
        start, end = timeline_period(typed, instant_now)
        timeline = governance().audit.package_timeline(workspace, language, now["name"], start, end)
    except GovernanceError as error:
        return _page(now, typed, None, error, today), 422
    return _page(now, typed, timeline, None, today, hidden_versions(workspace, now, start, end))


def period_typed(args, today: date) -> dict:
    """The period as typed; a `from` alone is that one day, nothing at all the last 30 days."""
    start, end = args.get("from", "").strip(), args.get("to", "").strip()
    if not start and not end:
        return quick_periods(today)[2][1]
    return {"from": start or end, "to": end or start}


def hidden_versions(workspace: str, now: dict, start: datetime, end: datetime) -> list[dict]:
    """The versions the index hid from this package's fetches in the period, and why: one row
    per version and reason (known malware, or a rule beyond names), newest first, from the
    recorded decisions (a page's hidden versions, a refused file)."""
    found: dict[tuple[str, str], dict] = {}
    for reason in (KNOWN_MALWARE, *RULE_REASONS):
        filters = {"language": now["language"], "name": now["name"], "reason": reason}
        for d in governance().audit.decisions(workspace, filters, start, end, limit=HIDDEN_READ)["decisions"]:
            if not d.get("package_version"):
                continue
            row = found.setdefault((d["package_version"], reason), {"version": d["package_version"], "reason": reason})
            row["count"] = row.get("count", 0) + 1
            row.setdefault("last", d["at"])  # newest first
            row.setdefault("message", d.get("message") or "")
    return sorted(found.values(), key=lambda r: r["last"], reverse=True)


def _page(now: dict, typed: dict, timeline: dict | None, refusal, today: date, hidden: list | None = None):
    workspace = caller()["workspace"]
    drawn = []
    if timeline:
        drawn = band(opened_by(timeline), _at(timeline["from"]), _at(timeline["to"]))
    recent = governance().audit.decisions(workspace, {"language": now["language"], "name": now["name"]}, limit=RECENT)
    return render_template(
        "console/package.html",
        now=now,
        typed=typed,
        timeline=timeline,
        drawn=drawn,
        recent=recent["decisions"],
        hidden=hidden or [],
        more=recent["next_cursor"] is not None,
        refusal=refusal,
        problems=error_items(refusal) if refusal else [],
        periods=quick_periods(today),
    )


def opened_by(timeline: dict) -> list[dict]:
    """Each interval with the change that opened it: the one made at its start (the application's
    `opened_by`; for the first interval, what decided its answer at the period's start)."""
    return [
        {**interval, "from_at": _at(interval["from"]), "to_at": _at(interval["to"]), "because": interval["opened_by"]}
        for interval in timeline["intervals"][:MAX_INTERVALS]
    ]


def quick_periods(today: date) -> list[tuple[str, dict]]:
    def days(count: int) -> dict:
        return {"from": (today - timedelta(days=count - 1)).isoformat(), "to": today.isoformat()}

    return [("Today", days(1)), ("Last 7 days", days(7)), ("Last 30 days", days(30)), ("Last 90 days", days(90))]


def _at(text: str) -> datetime:
    return parse_instant(text, "at")
