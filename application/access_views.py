"""Requests and exceptions as plain data, the shapes the API, the console and the CLI show."""

from __future__ import annotations

import json
from datetime import datetime

from application.formats import iso
from domain.policy import Policy, exception_end


def request_status(row: dict, now: datetime) -> str:
    """`expired`: approved, and the exception it granted is over (its expiry passed, or revoked)."""
    if row["status"] != "approved":
        return row["status"]
    over = row["revoked_at"] is not None or (row["expires_at"] is not None and row["expires_at"] <= now)
    return "expired" if over else "approved"


def request_view(row: dict, askers: list[dict], now: datetime, denied_recently: int, viewer: str | None = None) -> dict:
    """With `viewer` (a sandbox token's id), only what that token asked is shown: its own
    justification and context, its own first asking as the filing, never another asker's (who
    may have written secrets there, and whose name and time say who else is at work)."""
    requesters = len(askers)
    if viewer is not None:
        askers = [a for a in askers if a["token_id"] == viewer]
        own = askers[0] if askers else None
        if own is not None:
            row = {**row, "justification": own["justification"], "context": own["context"]}
            row = {**row, "filed_by": own["by_actor"], "filed_at": own["first_at"]}
    exception = None
    if row["exception_id"]:
        exception = {
            "id": row["exception_id"],
            "expires_at": iso(row["expires_at"]),
            "revoked_at": iso(row["revoked_at"]),
            "lift_deny": bool(row["lift_deny"]),
        }
    return {
        "id": row["id"],
        "language": row["language"],
        "name": row["name"],
        "status": request_status(row, now),
        "filed_at": iso(row["filed_at"]),
        "filed_by": row["filed_by"],
        "justification": row["justification"],
        "context": json.loads(row["context"]),
        "requesters": requesters,
        "askers": [
            {
                "by": a["by_actor"],
                "first_at": iso(a["first_at"]),
                "last_at": iso(a["last_at"]),
                "asks": a["asks"],
                "justification": a["justification"],
                "context": json.loads(a["context"]),
            }
            for a in askers
        ],
        "decided_at": iso(row["decided_at"]),
        "decided_by": row["decided_by"],
        "note": row["note"],
        "exception": exception,
        "denied_last_30_days": denied_recently,
    }


def exception_views(policy: Policy, at: datetime | None = None) -> list[dict]:
    """The policy's standing exceptions (with `at`, only those in force then), soonest end first."""
    grants = [
        g for g in policy.exceptions.values() if at is None or (exception_end(g) is None or at < exception_end(g))
    ]
    views = [
        {
            "id": g["id"],
            "language": g["language"],
            "name": g["name"],
            "expires_at": g["expires_at"],
            "granted_by": g["by"],
            "granted_version": g["version"],
            "note": g["note"],
            "request_id": g["request_id"],
            "lifts_deny": bool(g.get("lifts_deny")),
        }
        for g in grants
    ]
    return sorted(views, key=lambda v: (v["expires_at"] is None, v["expires_at"] or "", v["name"]))
