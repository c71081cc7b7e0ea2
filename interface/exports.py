"""Streamed exports of decisions (CSV or JSON Lines): constant memory, however many rows."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator

from flask import Response

CSV_COLUMNS = (
    "id",
    "at",
    "language",
    "name",
    "spec",
    "kind",
    "allowed",
    "reason",
    "policy_version",
    "sandbox",
    "source",
    "skill",
    "actor",
    "detail",
    "request",  # package-index decisions: page, metadata or download
    "file",
    "package_version",
    "run",
)


# Cells a spreadsheet would run as a formula (OWASP "CSV injection"); specs and context come from
# the sandbox, so an agent could otherwise plant one in an auditor's export.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_row(decision: dict) -> list:
    context = decision.get("context") or {}
    merged = {**{k: context.get(k) for k in ("sandbox", "source", "skill", "actor")}, **decision}
    return [csv_cell(merged.get(c)) for c in CSV_COLUMNS]


def csv_cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    return "'" + text if text.startswith(FORMULA_START) else text


def csv_lines(rows: Iterable[dict]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS)
    for row in rows:
        writer.writerow(csv_row(row))
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()


def jsonl_lines(rows: Iterable[dict]) -> Iterator[str]:
    for row in rows:
        yield json.dumps(row, sort_keys=True) + "\n"


def lines(rows: Iterable[dict], fmt: str) -> Iterator[str]:
    return csv_lines(rows) if fmt == "csv" else jsonl_lines(rows)


def stream(rows: Iterable[dict], fmt: str, filename: str) -> Response:
    mimetype = "text/csv" if fmt == "csv" else "application/x-ndjson"
    extension = "csv" if fmt == "csv" else "jsonl"
    return Response(
        lines(rows, fmt),
        mimetype=mimetype,
        headers={"Content-Disposition": f'attachment; filename="{filename}.{extension}"'},
    )
