"""The index's on-disk cache: files by content, upstream pages by what was asked, bounded in bytes.

Layout under the cache directory (shared by every worker process of a deployment):

    files/<algorithm>/<hex[:2]>/<hex>   a file, named by the digest the index page gave for it
    pages/<key[:2]>/<key>               an upstream page: one JSON line (its metadata), then its body
    facts/<scope[:2]>/<scope>/<key>     what the index read a file to say, by scope (a project)
    tmp/                                files being written

Writes never show a partial file: each is written to `tmp/`, flushed (files are fsynced too),
then renamed into place, which is atomic; two workers writing the same name leave one whole copy.
Files are only kept once their bytes matched the page's digest (`keep`), and are checked again
each time before they are served (the caller does, with `Digests.check`), so a file altered on
disk is dropped, never served.

Least recently used goes first: every use touches a file's modification time, and when the bytes
kept would pass `max_bytes`, the oldest are removed until `LOW_WATER` of the bound is left.
Every worker puts a written file in place under one advisory lock on `lock`, which also holds the
bytes kept: each placement adds its size less what was counted for the copy it replaces (never
that copy's size on disk now, which something outside may have changed: a file's verified
size, a page's own header), each eviction counts anew, so the bound holds across every worker,
not per worker. Eviction only unlinks: a reader that already opened a file reads it to the end;
one that opens it afterwards finds no file, a miss. A process counts the directory once before
its first placement (a count left by a process that died mid-placement is not trusted), and again
when it drops a file whose bytes changed (what it was counted as is not known any more).

The folders are made again when they are found missing (the directory removed while serving):
what they held is a miss, fetched again, and the count, gone with its lock file, is taken anew.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from application.cache.digests import Digests
from application.store.files import make_private_dirs

LOW_WATER = 0.9  # eviction leaves this share of the bound, so that it does not run on every write
STALE_TEMPORARY_SECONDS = 3600  # a temporary file this old was left by a process that died
FOLDERS = ("files", "pages", "facts", "tmp")
HEADER_BYTES = 64 * 1024  # the most a page's header line is read for


@dataclass(frozen=True)
class StoredPage:
    """An upstream page as kept: its metadata (a dict) and where its body starts in `path`."""

    meta: dict
    path: Path
    offset: int

    def body(self) -> bytes:
        with open(self.path, "rb") as file:
            file.seek(self.offset)
            body = file.read()
        if len(body) != self.meta.get("length"):
            raise FileNotFoundError(self.path)  # evicted and rewritten meanwhile: read it again
        return body

    @classmethod
    def read(cls, path: Path) -> StoredPage | None:
        """The page kept at `path` (its header read, not its body); None when there is none or
        its header is not one."""
        try:
            with open(path, "rb") as file:
                line = file.readline(HEADER_BYTES)
            meta = json.loads(line)
        except (FileNotFoundError, ValueError):
            return None
        return cls(meta, path, len(line)) if isinstance(meta, dict) else None

    def counted(self) -> int:
        """What the page was counted as when it was kept: its header and the body it announces."""
        length = self.meta.get("length")
        return self.offset + length if isinstance(length, int) else 0


class DiskCache:
    def __init__(self, directory: str | Path, max_bytes: int):
        self.directory = Path(directory)
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._counted = False  # this process has counted the directory (since it was last removed)
        self._make_folders()

    def _make_folders(self) -> None:
        self._made_again([made for part in FOLDERS for made in make_private_dirs(self.directory / part)])

    def _made_again(self, made: list[Path]) -> None:
        """`files/`, `pages/` or `facts/` made again (removed while serving): what they held went uncounted,
        so the next placement counts anew."""
        if any(folder.parent == self.directory and folder.name != "tmp" for folder in made):
            self._counted = False

    def _remade(self, make):
        """`make()`, once more after making the folders again when it finds one missing (the
        directory removed while serving): what they held is fetched again."""
        try:
            return make()
        except FileNotFoundError:
            self._make_folders()
            return make()

    # -- files ------------------------------------------------------------------------------
    def file_path(self, digests: Digests) -> Path:
        return self.directory / "files" / digests.algorithm / digests.hex[:2] / digests.hex

    def open_file(self, digests: Digests):
        """The kept file for these digests, open for reading (not yet checked), or None."""
        path = self.file_path(digests)
        try:
            file = open(path, "rb")
        except FileNotFoundError:
            return None
        _touch(path)
        return file

    def discard_file(self, digests: Digests) -> None:
        """A kept file whose bytes no longer match: removed, so it is fetched again. What it was
        counted as is not known (its bytes changed: grown, cut short), so the bytes kept are
        counted anew."""
        path = self.file_path(digests)
        with self._count_lock() as lock:
            if _unlink(path):
                _write_count(lock, self._entries()[1])
                self._counted = True

    def temporary(self):
        """A new temporary file in `tmp/` (removed when closed unless kept)."""
        return self._temporary("file-")

    def _temporary(self, prefix: str):
        return self._remade(
            lambda: tempfile.NamedTemporaryFile(dir=self.directory / "tmp", prefix=prefix, delete=False)
        )

    def keep(self, temporary, digests: Digests) -> bool:
        """Move a temporary file whose bytes matched into place; False (and left where it is) when
        it alone is larger than the bound allows, or the folders were removed meanwhile."""
        temporary.flush()
        size = os.fstat(temporary.fileno()).st_size
        if size > self.max_bytes * LOW_WATER:
            return False
        os.fsync(temporary.fileno())
        # A copy already there (another worker's) has these very bytes, so it was counted as `size`.
        return self._place(temporary.name, self.file_path(digests), size, lambda _: size)

    @staticmethod
    def forget(temporary) -> None:
        """Close a temporary file and remove it, unless it was kept."""
        temporary.close()
        _unlink(Path(temporary.name))

    # -- pages ------------------------------------------------------------------------------
    def page(self, key: str) -> StoredPage | None:
        stored = StoredPage.read(self._page_path(key))
        if stored is not None:
            _touch(stored.path)
        return stored

    def put_page(self, key: str, meta: dict, body: bytes) -> StoredPage | None:
        """Keep an upstream page (not fsynced: a page lost in a crash is fetched again, and one
        cut short is refused by its recorded length). None when it alone passes the bound, or
        the folders were removed meanwhile."""
        line = json.dumps({**meta, "length": len(body)}, separators=(",", ":")).encode() + b"\n"
        size = len(line) + len(body)
        if size > self.max_bytes * LOW_WATER:
            return None
        path = self._page_path(key)
        with self._temporary("page-") as file:
            file.write(line)
            file.write(body)
        if not self._place(file.name, path, size, _page_counted):
            return None
        return StoredPage({**meta, "length": len(body)}, path, len(line))

    def _page_path(self, key: str) -> Path:
        digest = _hashed(key)
        return self.directory / "pages" / digest[:2] / digest

    # -- facts ------------------------------------------------------------------------------
    def put_fact(self, scope: str, key: str, body: bytes) -> None:
        """Keep a small record of what a file was read to say, under its scope (not fsynced: one
        lost in a crash is read again). Written once: a key names what it records (a file's digest)."""
        path = self._fact_folder(scope) / _hashed(key)
        if path.exists() or len(body) > self.max_bytes * LOW_WATER:
            return
        with self._temporary("fact-") as file:
            file.write(body)
        # A record there (another worker's) holds these very bytes: it was counted as they are.
        if not self._place(file.name, path, len(body), lambda _: len(body)):
            _unlink(Path(file.name))

    def fact_names(self, scope: str) -> list[str]:
        """The names of a scope's records (none: one failed listing), each touched: in use.
        Asked on every project page: plain strings, not `Path`s (whose parsing cost more than
        the listing)."""
        folder = self._fact_dir(scope)
        try:
            names = os.listdir(folder)
        except FileNotFoundError:
            return []
        for name in names:
            _touch(os.path.join(folder, name))
        return sorted(names)

    def fact(self, scope: str, name: str) -> bytes | None:
        """One record of a scope, by its name; None when it was evicted meanwhile."""
        try:
            return (self._fact_folder(scope) / name).read_bytes()
        except FileNotFoundError:
            return None

    def _fact_folder(self, scope: str) -> Path:
        return Path(self._fact_dir(scope))

    def _fact_dir(self, scope: str) -> str:
        digest = _hashed(scope)
        return os.path.join(self.directory, "facts", digest[:2], digest)

    # -- the bound --------------------------------------------------------------------------
    def _place(self, written: str, path: Path, size: int, counted) -> bool:
        """Move a written temporary file to `path`, making room for it first; False when it is
        gone (the folders were removed meanwhile: not kept). `counted(path)`: what the copy
        there was counted as when it was kept."""
        with self._count_lock() as lock:
            try:
                self._made_again(make_private_dirs(path.parent))
            except FileNotFoundError:
                return False
            total = _read_count(lock) if self._counted else None
            if total is None or total + size > self.max_bytes:
                total = self._evict(size)  # counted anew: each entry as it is on disk now
                self._counted = True
            # A copy replaced no longer counts: what was counted for it, or less when it shrank
            # since (as a count taken anew counted it); never what it grew to, never counted.
            replaced = min(counted(path), _size(path))
            try:
                os.replace(written, path)
            except FileNotFoundError:
                _write_count(lock, total)
                return False
            _write_count(lock, total + size - replaced)
            return True

    @contextmanager
    def _count_lock(self):
        """The lock every worker takes to change what is kept; the file it locks holds the count
        (made again, empty, when the directory was removed: the count is then taken anew)."""
        with self._lock, self._remade(lambda: open(self.directory / "lock", "a+b")) as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield lock
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _evict(self, incoming: int) -> int:
        """Remove the least recently used until `incoming` more bytes fit under the low-water
        mark; the bytes left. Called under the lock."""
        entries, total = self._entries()
        goal = self.max_bytes * LOW_WATER - incoming
        for _, size, path in sorted(entries):
            if total <= goal:
                break
            if _unlink(path):
                total -= size
        return total

    def _entries(self) -> tuple[list[tuple[float, int, Path]], int]:
        entries, total, now = [], 0, time.time()
        for part in ("files", "pages", "facts"):
            for root, _, names in os.walk(self.directory / part):
                for name in names:
                    path = Path(root) / name
                    try:
                        stat = path.stat()
                    except FileNotFoundError:
                        continue
                    entries.append((stat.st_mtime, stat.st_size, path))
                    total += stat.st_size
        try:
            temporaries = list((self.directory / "tmp").iterdir())
        except FileNotFoundError:  # removed while serving: made again by the next write
            temporaries = []
        for path in temporaries:
            try:
                if now - path.stat().st_mtime > STALE_TEMPORARY_SECONDS:
                    _unlink(path)
            except FileNotFoundError:
                continue
        return entries, total


def _hashed(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _page_counted(path: Path) -> int:
    """What the page kept at `path` was counted as (its header says; 0 when it cannot)."""
    stored = StoredPage.read(path)
    return stored.counted() if stored is not None else 0


def _read_count(lock) -> int | None:
    lock.seek(0)
    try:
        return int(lock.read() or b"")
    except ValueError:
        return None


def _write_count(lock, total: int) -> None:
    lock.truncate(0)
    lock.write(str(total).encode())
    lock.flush()


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _touch(path: Path | str) -> None:
    try:
        os.utime(path)  # least recently used: the use is what counts
    except FileNotFoundError:
        pass


def _unlink(path: Path) -> bool:
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False
