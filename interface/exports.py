"""Output: streamed exports of decisions (CSV or JSON Lines, constant memory however many rows), and
the CLI's writers (JSON, aligned tables, files replaced only once complete, progress)."""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import itertools
import json
import os
import signal
import sys
import tempfile
import threading
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path

import click
from flask import Response, request

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
    "declared_by",
    "delivery_status",  # downloads: the last transfer that ended (served, cached or failed) ...
    "delivery_bytes",  # ... the bytes it sent ...
    "delivery_sha256",  # ... and their sha256
    "deliveries",  # how many transfers of this decision ended
    "port",  # egress decisions: the target's port ...
    "resolved",  # ... and the addresses judged with it, a JSON array (`resolved_cell`)
)


# Cells a spreadsheet would run as a formula (OWASP "CSV injection"); specs and context come from
# the sandbox, so an agent could otherwise plant one in an auditor's export. Spreadsheets skip
# leading blanks before they look for the sign, so it is looked for after every leading
# separator (Unicode category Z: spaces such as NBSP), control or format character (category C:
# LF, VT, zero-width space) as well. A sign's look-alikes count too: its fullwidth, small,
# superscript and subscript forms (`＝＋－＠`, which NFKC folds to the sign, and which some
# spreadsheets' input conversion reads as the sign), and the minus sign and dashes (_LIKE_MINUS).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_LIKE_MINUS = "\u2212\u2010\u2011\u2012\u2013\u2014\u2015"


def csv_row(decision: dict) -> list:
    context = decision.get("context") or {}
    delivery = decision.get("delivery") or {}
    merged = {
        **{k: context.get(k) for k in ("sandbox", "source", "skill", "actor")},
        **{f"delivery_{k}": delivery.get(k) for k in ("status", "bytes", "sha256")},
        **decision,
        "deliveries": len(decision["deliveries"]) if "deliveries" in decision else None,
        "resolved": resolved_cell(decision["resolved"]) if "resolved" in decision else None,
    }
    return [csv_cell(merged.get(c)) for c in CSV_COLUMNS]


def resolved_cell(resolved: list[str]) -> str:
    """An egress decision's addresses as one cell: a JSON array, so that an entry the classifier
    refused as not one address (an entry is any short text: `1.1.1.1 8.8.8.8`) reads as the one
    entry it was; joined by spaces, it read as two valid addresses."""
    return json.dumps(resolved, separators=(",", ":"))


def csv_cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    return "'" + text if text.startswith(FORMULA_START) or _is_sign(_after_blanks(text)[:1]) else text


def _is_sign(char: str) -> bool:
    return bool(char) and (unicodedata.normalize("NFKC", char).startswith(FORMULA_START) or char in _LIKE_MINUS)


def _after_blanks(text: str) -> str:
    for i, char in enumerate(text):
        if not (char.isspace() or unicodedata.category(char)[0] in "ZC"):
            return text[i:]
    return ""


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


# environ: this request's answer is an export streamed as it is read (interface.index.bounds then
# holds the thread that sends it to the token's share of the slots)
STREAMING = "runcode_policy.streaming_export"


def stream(rows: Iterable[dict], fmt: str, filename: str) -> Response:
    request.environ[STREAMING] = True
    mimetype = "text/csv" if fmt == "csv" else "application/x-ndjson"
    extension = "csv" if fmt == "csv" else "jsonl"
    chunks = lines(rows, fmt)
    # The first line is made before the answer starts, so a failure there is answered as any
    # other (a problem, 503 for a store that does not verify), not as a 500 or an empty 200.
    first = next(chunks, "")
    return Response(
        itertools.chain((first,), chunks),
        mimetype=mimetype,
        headers={"Content-Disposition": f'attachment; filename="{filename}.{extension}"'},
    )


def show_json(value) -> None:
    click.echo(json.dumps(value, indent=2))


def table(header: tuple, rows: list[tuple]) -> str:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]
    return "\n".join(
        "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in [header, *rows]
    )


@contextlib.contextmanager
def output_file(path: str):
    """stdout for `-`; a device or a pipe (`/dev/stdout`, a FIFO) written as it is; otherwise a
    temporary file beside the file `path` names (through any symlink), renamed over it only once
    complete, with the mode the file had. A failure, Ctrl-C or SIGTERM/SIGHUP leaves no partial file.

    Not click's `atomic=True`: click 8.x renames even after a failure (pallets/click#3221),
    which would leave a partial export looking like a whole one; and a rename over a device or a
    symlink would replace it with a regular file.
    """
    if path == "-":
        yield sys.stdout
        return
    if not path:
        raise click.BadParameter("give a file path, or - for stdout", param_hint="'--output'")
    target = Path(path).resolve()
    if target.exists() and not target.is_file() and not target.is_dir():  # a directory fails below, named
        with open(target, "w", encoding="utf-8", newline="") as out:
            yield out
        return
    descriptor, partial = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    try:
        with _stopped_cleanly(), open(descriptor, "w", encoding="utf-8", newline="") as out:
            if target.is_file():
                os.chmod(partial, target.stat().st_mode & 0o7777)
            yield out
        os.replace(partial, target)
    except BaseException:
        os.unlink(partial)
        raise


class Stopped(SystemExit):
    """SIGTERM or SIGHUP while a file is written: unwinds like Ctrl-C, so the partial file goes."""


@contextlib.contextmanager
def _stopped_cleanly():
    def stop(signum, _frame):
        raise Stopped(128 + signum)

    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers; the CLI writes from it
        return
    previous = {number: signal.signal(number, stop) for number in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


@contextlib.contextmanager
def written(path: str):
    """`output_file`, with a failure to write refused in words (a closed pipe stays quiet: the
    reader of `| head` stopped reading)."""
    try:
        with output_file(path) as out:
            yield out
    except OSError as error:
        if error.errno == errno.EPIPE:
            raise
        where = path if path != "-" else "stdout"
        raise click.ClickException(f"cannot write {where}: {error.strerror or error}") from None


class Tally:
    """Passes rows through, counting them."""

    def __init__(self, rows):
        self.rows, self.count = rows, 0

    def __iter__(self):
        for row in self.rows:
            self.count += 1
            yield row


def progress(rows, output: str):
    """Rows written so far, on stderr, only for a person at a terminal who is not reading the data
    itself there (a bar interleaved with CSV on one screen helps nobody)."""
    if not sys.stderr.isatty() or (output == "-" and sys.stdout.isatty()):
        return contextlib.nullcontext(rows)
    return click.progressbar(rows, label="exporting decisions", show_pos=True, file=sys.stderr)
