"""A witness of checkpoints (c2sp.org/tlog-witness's add-checkpoint, without the HTTP server):
it keeps the newest checkpoint it cosigned for each origin and cosigns a new one only if a
consistency proof shows the new tree extends that one (c2sp.org/tlog-cosignature).

A request is the add-checkpoint body: `old <size>`, the consistency proof's base64 hashes (one
per line), a blank line, then the signed checkpoint. The service's pusher writes exactly that
into the witness directory, so the witness needs nothing from the service; each refusal carries
the HTTP status the protocol gives it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
import tempfile
import time
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from application.chain import notes
from application.chain.merkle import EMPTY_ROOT, consistent

_OLD = re.compile(r"^old (0|[1-9][0-9]{0,18})$")
MAX_PROOF = 63


class Refused(Exception):
    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status, self.reason = status, reason


def request_body(old: int, proof: list[bytes], note: str) -> str:
    return f"old {old}\n" + "".join(base64.b64encode(h).decode("ascii") + "\n" for h in proof) + "\n" + note


def parse_request(body: str) -> tuple[int, list[bytes], str]:
    head, _, note = body.partition("\n\n")
    lines = head.split("\n")
    match = _OLD.match(lines[0])
    if not match or not note or len(lines) - 1 > MAX_PROOF:
        raise Refused(400, "not an add-checkpoint request: 'old <size>', proof lines, a blank line, a checkpoint")
    try:
        proof = [base64.b64decode(line, validate=True) for line in lines[1:]]
    except (ValueError, binascii.Error):
        raise Refused(400, "a consistency proof line is not base64") from None
    return int(match.group(1)), proof, note


class Witness:
    """`logs`: the public keys of the logs it watches (each checkpoint's key name is its origin)."""

    def __init__(self, state: Path, name: str, key: Ed25519PrivateKey, logs: list):
        self.state, self.name, self.key, self.logs = Path(state), name, key, logs

    def latest(self, origin: str) -> tuple[int, bytes, str] | None:
        path = self._path(origin)
        if not path.exists():
            return None
        note = path.read_text(encoding="utf-8")
        _, size, root = notes.parse_checkpoint(notes.split(note)[0])
        return size, root, note

    def add_checkpoint(self, body: str, now: int | None = None) -> str:
        """The cosigned checkpoint (the note with this witness's cosignature line added)."""
        old, proof, note = parse_request(body)
        origin, size, root = self._open(note)
        if old > size:
            raise Refused(400, f"old size {old} is beyond the checkpoint's size {size}")
        latest = self.latest(origin)
        seen, seen_root = (latest[0], latest[1]) if latest else (0, EMPTY_ROOT)
        if old != seen:
            raise Refused(
                409, f"this witness last cosigned {origin} at size {seen}, not {old}: send a proof from {seen}"
            )
        if size == 0 and root != EMPTY_ROOT:
            raise Refused(422, "a checkpoint of size 0 must carry the empty tree's root")
        if not consistent(old, size, seen_root, root, proof):
            raise Refused(
                422,
                f"REFUSED: the checkpoint of {origin} at size {size} is not consistent with the one cosigned at "
                f"size {seen}: the log's history was rewritten",
            )
        cosigned = note + notes.cosign(note, self.name, self.key, int(time.time()) if now is None else now)
        self._write(origin, cosigned)
        return cosigned

    def _open(self, note: str) -> tuple[str, int, bytes]:
        failures = []
        for public in self.logs:
            try:
                return notes.open_checkpoint(note, public)
            except notes.NoteError as error:
                failures.append(str(error))
        raise Refused(403, "; ".join(failures) or "this witness trusts no log key")

    def _path(self, origin: str) -> Path:
        return self.state / (hashlib.sha256(origin.encode("utf-8")).hexdigest()[:32] + ".checkpoint")

    def _write(self, origin: str, note: str) -> None:
        self.state.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=self.state, prefix=".checkpoint-")
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(note)
        os.replace(temporary, self._path(origin))
