"""Checkpoints leave the host by themselves: each new signed checkpoint is delivered to
RUNCODE_POLICY_AUDIT_WITNESS, a directory (another mount) or an http(s) witness.

Delivery runs on its own thread, so recording and sealing never wait on it; a failure is logged
once and retried every `RETRY_SECONDS` until it goes through. What is delivered is the
c2sp.org/tlog-witness add-checkpoint body: `old <size>`, the consistency proof from that size,
a blank line, the checkpoint. In a directory it is written to `<workspace>/<size, 20
digits>-<first 8 hex of the note's SHA-256>.checkpoint` (written aside, then renamed in), `old`
being the previous file's size, or its own size when another checkpoint of that size was
delivered (a rewritten history signed again: the witness must see the two differ); an
http(s) witness is sent it as `POST <url>/add-checkpoint`, `old` being the size the witness last
cosigned (it says so with 409 when we do not know it), and its cosignature lines are logged. A
checkpoint smaller than one the witness has cosigned (another instance's later one got there
first) can never be added: it is dropped, not retried, so it never holds back the ones after it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import threading
import urllib.error
import urllib.request
from pathlib import Path

from application.chain.witness import request_body

RETRY_SECONDS = 5.0
TIMEOUT_SECONDS = 10.0
SIZE_MEDIA_TYPE = "text/x.tlog.size"

log = logging.getLogger(__name__)


class WitnessPusher:
    def __init__(self, target: str, tree):
        self.target, self.tree = target, tree
        self.http = target.startswith(("http://", "https://"))
        self._pending: list[tuple[str, int, str]] = []
        self._cosigned: dict[str, int] = {}  # workspace -> the size an http witness last cosigned
        self._wake, self._lock = threading.Event(), threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="audit-witness-push", daemon=True)
        self._thread.start()

    def push(self, workspace: str, size: int, note: str) -> None:
        with self._lock:
            self._pending.append((workspace, size, note))
        self._wake.set()

    def wait(self, timeout: float) -> bool:
        """Until nothing is pending (tests, and a clean shutdown); False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._pending, timeout)

    def close(self) -> None:
        """Stop delivering, once a delivery under way has ended: it reads the store's tree, which
        the application closes next (SQLite crashed a process that read a connection being closed)."""
        self._closed = True
        self._wake.set()
        self._thread.join(TIMEOUT_SECONDS + 1)

    def _run(self) -> None:
        failing = False
        while not self._closed:
            self._wake.wait(RETRY_SECONDS if failing else None)
            self._wake.clear()
            while not self._closed:
                with self._lock:
                    if not self._pending:
                        self._idle.notify_all()
                        break
                    item = self._pending[0]
                try:
                    self._deliver(*item)
                except Exception as error:  # the mount or the witness is away: retry later, keep the order
                    if not failing:
                        log.warning("could not deliver checkpoint %s/%s to %s: %s", *item[:2], self.target, error)
                    failing = True
                    break
                if failing:
                    log.warning("checkpoints reach %s again", self.target)
                failing = False
                with self._lock:
                    self._pending.pop(0)

    def _deliver(self, workspace: str, size: int, note: str) -> None:
        if self.http:
            self._post(workspace, size, note)
        else:
            self._write(workspace, size, note)

    def _proof(self, workspace: str, old: int, size: int) -> list[bytes]:
        # The stored tree may be behind the checkpoint (its tables emptied and being rebuilt from
        # the chain): bring it up first, so one checkpoint never holds back the ones after it.
        self.tree.extend(workspace)
        return self.tree.consistency(workspace, old, size)[1]

    def _write(self, workspace: str, size: int, note: str) -> None:
        folder = Path(self.target) / workspace
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{size:020d}-{hashlib.sha256(note.encode('utf-8')).hexdigest()[:8]}.checkpoint"
        if (folder / name).exists():
            return
        sizes = [file_size(p) for p in folder.glob("*.checkpoint")]
        old = size if size in sizes else max((s for s in sizes if s < size), default=0)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".incoming-")
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(request_body(old, self._proof(workspace, old, size), note))
        os.replace(temporary, folder / name)

    def _post(self, workspace: str, size: int, note: str) -> None:
        for _ in range(2):  # the second time with the size a 409 named
            old = min(self._cosigned.get(workspace, 0), size)
            body = request_body(old, self._proof(workspace, old, size), note).encode("utf-8")
            request = urllib.request.Request(self.target.rstrip("/") + "/add-checkpoint", body, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as answer:
                    log.info("witness cosigned %s at size %s: %s", workspace, size, answer.read().decode().strip())
                    self._cosigned[workspace] = size
                    return
            except urllib.error.HTTPError as error:
                with error:  # its connection is closed here, not left to the garbage collector
                    text = error.read().decode("utf-8", "replace").strip()
                if error.code == 409 and error.headers.get_content_type() == SIZE_MEDIA_TYPE and text.isdecimal():
                    self._cosigned[workspace] = int(text)
                    if int(text) > size:  # another instance's later checkpoint got there first
                        log.info("witness has cosigned %s at size %s: checkpoint %s superseded", workspace, text, size)
                        return
                    continue
                raise RuntimeError(f"the witness answered {error.code}: {text}") from None
        raise RuntimeError("the witness keeps naming another size")


def file_size(path: Path) -> int:
    """The tree size a delivered file's name starts with."""
    return int(path.stem.split("-")[0])
