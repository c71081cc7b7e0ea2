"""The Overview, the console's landing page: what the sandboxes were told in the last month.

Every number links into the audit log filtered to exactly the decisions it counts, so a bar,
a package or a sandbox leads to the decisions behind it; a malware exposure leads to every fetch
of the versions its advisory affects (`exposure`). The facts come from read models
(`Overview.overview`), never from a scan of the decisions.
"""

from __future__ import annotations

from datetime import timedelta

from flask import render_template, request, url_for

from application.overview import WATCHED
from interface.console.charts import day_bars
from interface.console.instants import instant
from interface.console.session import blueprint, caller, governance

CHART_DAYS = 30
TOP_DAYS = 7
PENDING_COUNTED = 100
PENDING_SHOWN = 5


@blueprint.get("/overview")
def overview():
    today = governance().clock().date()
    days = [today - timedelta(days=n) for n in range(CHART_DAYS - 1, -1, -1)]
    week_start = today - timedelta(days=TOP_DAYS - 1)
    facts = governance().facts.overview(caller()["workspace"], days[0], today, week_start)
    return render_template(
        "console/overview.html",
        facts=facts,
        chart=day_bars(days, facts["per_day"]),
        month={"from": days[0].isoformat(), "to": today.isoformat()},
        week={"from": week_start.isoformat(), "to": today.isoformat()},
        top_days=TOP_DAYS,
        pending=pending_requests(),
        watched=WATCHED,
    )


@blueprint.get("/advisories/<advisory>")
def exposure(advisory: str):
    """Every allowed fetch of a version the advisory affects, from a day on (the Overview's first)."""
    start = instant(request.args.get("from"), "from")
    found = governance().advisory_exposure(caller()["workspace"], advisory, start, None)
    return render_template("console/exposure.html", exposure=found, start=request.args.get("from", ""))


def pending_requests() -> dict:
    """Open access requests: how many (up to PENDING_COUNTED, then "N+"), and the newest few."""
    found = governance().access.requests(caller()["workspace"], "open", limit=PENDING_COUNTED)["requests"]
    return {
        "count": len(found),
        "more": len(found) == PENDING_COUNTED,
        "newest": found[:PENDING_SHOWN],
        "url": url_for("console.requests_page"),
    }
