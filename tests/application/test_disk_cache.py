"""The index's disk cache holds its byte bound across every worker writing to one directory."""

from __future__ import annotations

import hashlib
from pathlib import Path

from application.cache import DiskCache
from application.cache.digests import from_pypi

BOUND = 10_000


def on_disk(directory: Path) -> int:
    kept = (f for part in ("files", "pages", "facts") for f in (directory / part).rglob("*"))
    return sum(f.stat().st_size for f in kept if f.is_file())


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


def test_a_kept_file_dropped_for_not_matching_no_longer_counts(tmp_path):
    cache = DiskCache(tmp_path, BOUND)
    body = b"z" * 500
    digests = from_pypi({"sha256": hashlib.sha256(body).hexdigest()})
    temporary = cache.temporary()
    temporary.write(body)
    assert cache.keep(temporary, digests)
    cache.put_page("page", {"url": "u"}, b"x" * 800)
    counted = int((tmp_path / "lock").read_bytes())
    assert counted == on_disk(tmp_path)
    cache.discard_file(digests)
    assert int((tmp_path / "lock").read_bytes()) == on_disk(tmp_path) == counted - len(body)


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
    assert int((tmp_path / "lock").read_bytes()) == on_disk(tmp_path)
