"""The package index's cache on disk: an adapter beside the store (files by content, verified
against the index page's digests; upstream pages; bounded in bytes, least recently used first)."""

from application.cache.digests import Digests, from_npm, from_pypi
from application.cache.disk import DiskCache, StoredPage

__all__ = ["Digests", "DiskCache", "StoredPage", "from_npm", "from_pypi"]
