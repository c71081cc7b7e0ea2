"""`runcode-policy advisories import PATH|URL`: OSV records for every workspace (see docs/advisories.md).

PATH is one JSON file (a record or a list of records) or a directory read like the OpenSSF
malicious-packages repository (`osv/malicious/<ecosystem>/<name>/MAL-*.json`: every `*.json`
below it). URL is fetched once (http or https). The feed's revision is `--revision`, else the
sha256 of the files read (names and contents), so the same file set is the same revision.
"""

from __future__ import annotations

import hashlib
import json
import urllib.request
from pathlib import Path

import click

from domain.text import noun_for
from interface.cli.common import actor, governance

MAX_FEED_BYTES = 256 * 1024 * 1024
FETCH_SECONDS = 60


@click.group("advisories")
def advisories_group() -> None:
    """Known-malware advisories (OSV records), imported for every workspace."""


@advisories_group.command("import")
@click.argument("source")
@click.option("--revision", help="The feed's revision (default: sha256 of the files read).")
def advisories_import(source: str, revision: str | None) -> None:
    """Import OSV records from a file, a directory of them, or a URL; one event per import."""
    files = _read(source)
    records = []
    for name, content in files:
        try:
            found = json.loads(content)
        except ValueError as error:
            raise click.ClickException(f"{name} is not JSON: {error}") from None
        records.extend(found if isinstance(found, list) else [found])
    if revision is None:
        digest = hashlib.sha256()
        for name, content in files:
            digest.update(f"{name}\0{hashlib.sha256(content).hexdigest()}\n".encode())
        revision = "sha256:" + digest.hexdigest()
    imported = governance().advisories.import_records(records, by=actor(), revision=revision)
    click.echo(
        f"imported {imported['records']} {noun_for(imported['records'], 'advisory', 'advisories')} "
        f"({imported['packages']} PyPI and npm {noun_for(imported['packages'], 'package')}), "
        f"revision {imported['revision']}",
        err=True,
    )


def _read(source: str) -> list[tuple[str, bytes]]:
    """(name, bytes) of each file the source holds, in name order."""
    if source.startswith(("http://", "https://")):
        with urllib.request.urlopen(source, timeout=FETCH_SECONDS) as reply:  # noqa: S310 - http(s) only
            content = reply.read(MAX_FEED_BYTES + 1)
        if len(content) > MAX_FEED_BYTES:
            raise click.ClickException(f"{source} is larger than {MAX_FEED_BYTES} bytes")
        return [(source, content)]
    path = Path(source)
    if path.is_dir():
        found = sorted(path.rglob("*.json"))
        if not found:
            raise click.ClickException(f"{source} holds no *.json file")
        return [(p.relative_to(path).as_posix(), p.read_bytes()) for p in found]
    if not path.is_file():
        raise click.ClickException(f"{source} is neither a file, a directory nor an http(s) URL")
    return [(path.name, path.read_bytes())]
