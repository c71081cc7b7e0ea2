"""A file's transfer, metered for its delivery record (application.index.deliveries).

The download decision is recorded before the first byte; what became of the transfer is known
only when it ends. `metered` wraps the body a response sends: it counts and hashes each chunk once
the server has written it, and when the server closes the body (PEP 3333: always, whether the
body was sent whole, the upstream broke off or the client went away) it calls the decision's hook
once with `served` (or what the caller says a whole transfer is, e.g. `cached`) or `failed`, the
bytes sent and their sha256. A server asks for the next chunk only after writing the last one
(granian: into the connection), and closes the body without asking again when that write failed:
a chunk counts when the server comes back for more, never when it is taken (a client gone before
its first byte read as sent the first chunk). A transfer is whole when its body reached its end
having sent the length it announced, if it announced one. `undelivered_on_error` records `failed`
when the file is refused before any body exists (the upstream's 403 or 503, a file too large to
check).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from flask import request

from application.index.deliveries import Delivered
from domain.delivery import FAILED, NOTHING_SENT, SERVED
from interface import metrics
from interface.index.access import package_index, refuse_a_failed_run, upstream_failure_recorded
from interface.problems import HTTPProblem


class _Metered:
    def __init__(self, chunks: Iterable[bytes], delivered: Delivered, whole: str, length: int | None):
        self._chunks, self._delivered, self._whole, self._length = chunks, delivered, whole, length
        self._hash, self._size = hashlib.sha256(), 0
        self._complete = self._ended = False

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._chunks:
            yield chunk
            self._size += len(chunk)  # the server is back for more: this chunk was written
            self._hash.update(chunk)
        self._complete = self._length in (None, self._size)

    def close(self) -> None:
        if self._ended:
            return
        self._ended = True
        try:
            if hasattr(self._chunks, "close"):
                self._chunks.close()
        finally:
            self._delivered(self._whole if self._complete else FAILED, self._size, self._hash.hexdigest())


def metered(
    chunks: Iterable[bytes], delivered: Delivered | None, whole: str = SERVED, length: int | None = None
) -> Iterable[bytes]:
    """`chunks` as a response body that reports its transfer to `delivered` (None: not metered);
    `length`: the bytes its response announced."""
    return chunks if delivered is None else _Metered(chunks, delivered, whole, length)


@contextmanager
def undelivered_on_error(delivered: Delivered | None):
    """Around the work between an allowed download decision and its response: any refusal there
    (raised) is a transfer that failed before a byte was sent."""
    try:
        yield
    except BaseException:
        if delivered is not None:
            delivered(FAILED, 0, NOTHING_SENT)
        raise


def file_request(metadata_file: bool) -> str:
    """The request kind of a fetch of a file URL: `metadata` for a PEP 658 `.metadata` file and
    for a HEAD probe (headers only: a size, never a byte of the file), else `download`."""
    return "metadata" if metadata_file or request.method == "HEAD" else "download"


def judged_file(principal, language: str, name: str, request_kind: str, file: str, version, facts):
    """Judge and record one fetch of a file (`facts`: read only for an allowed project, from
    upstream, its failure recorded as the run's); refuse a failed run or a denial (403); the hook
    an allowed download's transfer reports to (None for every other fetch)."""
    with upstream_failure_recorded(principal, language, name, request_kind):
        verdict = package_index().gate.judge(principal, language, name, request_kind, file, version, facts)
    metrics.count_index(verdict, language, request_kind)
    refuse_a_failed_run(verdict)
    if not verdict["allowed"]:
        raise HTTPProblem(403, "Forbidden", verdict["message"])
    return delivery_hook(principal, verdict, request_kind)


def delivery_hook(principal, verdict: dict, request_kind: str) -> Delivered | None:
    """The hook an allowed download's transfer reports to; None for every other fetch."""
    if request_kind != "download" or not verdict["allowed"]:
        return None
    return package_index().deliveries.recorder(principal.workspace, verdict["id"])
