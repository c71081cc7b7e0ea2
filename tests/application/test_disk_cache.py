"""The index's disk cache holds its byte bound across every worker writing to one directory, and
keeps its count exact when what it kept is changed or removed behind its back."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from application.cache import DiskCache
from application.cache.digests import from_pypi

BOUND = 10_000


def on_disk(directory: Path) -> int:
    kept = (f for part in ("files", "pages", "facts") for f in (directory / part).rglob("*"))
    return sum(f.stat().st_size for f in kept if f.is_file())


def counted(directory: Path) -> int:
    """The bytes kept as the workers count them (the lock file holds the count)."""
    return int((directory / "lock").read_bytes())


def keep_file(cache: DiskCache, body: bytes):
    digests = from_pypi({"sha256": hashlib.sha256(body).hexdigest()})
    temporary = cache.temporary()
    temporary.write(body)
    assert cache.keep(temporary, digests)
    temporary.close()
    return digests


def kept_bytes(cache: DiskCache, digests) -> bytes | None:
    file = cache.open_file(digests)
    if file is None:
        return None
    with file:
        return file.read()


def test_two_workers_writing_one_cache_keep_within_its_bound_together(tmp_path):
    workers = [DiskCache(tmp_path, BOUND), DiskCache(tmp_path, BOUND)]  # each as its own process keeps it
    for n in range(60):
        kept = workers[n % 2].put_page(f"page-{n}", {"url": f"u{n}"}, b"x" * 800)
        assert kept is not None and kept.body() == b"x" * 800
        assert on_disk(tmp_path) <= BOUND, f"after page {n}"
    assert on_disk(tmp_path) > BOUND // 2  # it evicts the oldest, not everything


def test_a_page_rewritten_in_place_counts_once(tmp_path):
    cache = DiskCache(tmp_path, BOUND)
    for n in range(11):  # 8,800 bytes: room for one more page before the bound
        cache.put_page(f"page-{n}", {"url": f"u{n}"}, b"x" * 800)
    for _ in range(40):  # revalidated again and again: the same key, replaced
        cache.put_page("page-0", {"url": "u0"}, b"y" * 800)
    assert all(cache.page(f"page-{n}") is not None for n in range(11))
    assert cache.page("page-0").body() == b"y" * 800


ALTERED = {  # a kept file's bytes changed on disk: in place, grown, cut short
    "flipped": lambda data: bytes([data[0] ^ 0xFF]) + data[1:],
    "grown": lambda data: data + b"g" * 3 * BOUND,
    "cut short": lambda data: data[:100],
}


@pytest.mark.parametrize("change", ALTERED)
def test_a_kept_file_dropped_for_not_matching_no_longer_counts_and_the_bound_holds(tmp_path, change):
    """What it was counted as when kept leaves the count, not what it is on disk now: subtracting
    a grown file's size had counted nothing left, and the next writes passed the bound."""
    cache = DiskCache(tmp_path, BOUND)
    body = b"z" * 500
    digests = keep_file(cache, body)
    cache.put_page("page", {"url": "u"}, b"x" * 800)
    before = counted(tmp_path)
    assert before == on_disk(tmp_path)
    kept = cache.file_path(digests)
    kept.write_bytes(ALTERED[change](kept.read_bytes()))
    cache.discard_file(digests)
    assert counted(tmp_path) == on_disk(tmp_path) == before - len(body)
    for n in range(30):
        cache.put_page(f"page-{n}", {"url": f"u{n}"}, b"x" * 800)
        assert on_disk(tmp_path) <= BOUND and counted(tmp_path) == on_disk(tmp_path), f"after page {n}"


@pytest.mark.parametrize("change", ["grown", "cut short"])
def test_a_page_changed_on_disk_and_kept_again_replaces_what_it_was_counted_as(tmp_path, change):
    cache = DiskCache(tmp_path, BOUND)
    for n in range(5):
        cache.put_page(f"page-{n}", {"url": f"u{n}"}, b"x" * 800)
    kept = cache.page("page-0")
    kept.path.write_bytes(ALTERED[change](kept.path.read_bytes()))
    with pytest.raises(FileNotFoundError):  # its length is not its header's: read again upstream
        kept.body()
    cache.put_page("page-0", {"url": "u0"}, b"y" * 800)
    assert cache.page("page-0").body() == b"y" * 800
    # cut short, it counts as more than it holds until the next count anew (never less)
    assert counted(tmp_path) == on_disk(tmp_path) + (len(kept.path.read_bytes()) - 100 if change == "cut short" else 0)


@pytest.mark.parametrize("removed", ["", "tmp", "files"])
def test_a_cache_folder_removed_while_serving_is_made_again_and_counted_anew(tmp_path, removed):
    """`rm -rf` of the cache (or of a folder in it) while it serves: what it held is gone, a miss;
    the next writes make the folders again (they were FileNotFoundError, a 500, until a restart)."""
    directory = tmp_path / "cache"
    cache = DiskCache(directory, BOUND)
    digests = keep_file(cache, b"z" * 500)
    cache.put_page("page", {"url": "u"}, b"x" * 800)
    shutil.rmtree(directory / removed)
    assert kept_bytes(cache, digests) == (None if removed in ("", "files") else b"z" * 500)
    cache.discard_file(digests)  # nothing there to drop: no failure either
    assert cache.put_page("page-2", {"url": "u2"}, b"y" * 800).body() == b"y" * 800
    again = keep_file(cache, b"z" * 500)
    assert kept_bytes(cache, again) == b"z" * 500
    assert counted(directory) == on_disk(directory)
    assert oct((directory / "tmp").stat().st_mode & 0o777) == oct(0o700)


def test_facts_are_written_once_listed_by_scope_and_counted_within_the_bound(tmp_path):
    workers = [DiskCache(tmp_path, BOUND), DiskCache(tmp_path, BOUND)]
    workers[0].put_fact("alpha", "alpha-1.0.tar.gz sha256:00", b"said")
    workers[1].put_fact("alpha", "alpha-1.0.tar.gz sha256:00", b"said again")  # a key names what it records
    (name,) = workers[1].fact_names("alpha")
    assert workers[1].fact("alpha", name) == b"said" and workers[0].fact_names("beta") == []
    for n in range(30):  # old facts go as pages come, the count holding every part
        workers[n % 2].put_page(f"page-{n}", {"url": f"u{n}"}, b"x" * 800)
        assert on_disk(tmp_path) <= BOUND
    assert workers[0].fact_names("alpha") == []
    assert counted(tmp_path) == on_disk(tmp_path)
