"""The digests an index page vouches for, and checking bytes against them.

PyPI pages give `hashes` (`{"sha256": hex}`); npm manifests give `dist.integrity` (Subresource
Integrity: `sha512-<base64>`, possibly several, space-separated) and `dist.shasum` (sha1 hex).
Every digest given in an algorithm the cache knows is checked; the strongest one names the file
on disk and is its ETag. A digest that is not well formed is ignored (it also names a path, so it
must be exactly the hex of its algorithm's length): with none left, nothing is cached.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass

# Strongest first: the first one a page gives names the file.
ALGORITHMS = ("sha512", "sha384", "sha256", "sha1")
_HEX = {name: re.compile(f"[0-9a-f]{{{hashlib.new(name).digest_size * 2}}}") for name in ALGORITHMS}
CHUNK = 1024 * 1024


@dataclass(frozen=True)
class Digests:
    """{algorithm: lowercase hex} the bytes must all match."""

    expected: tuple[tuple[str, str], ...]

    @property
    def algorithm(self) -> str:
        return self.expected[0][0]

    @property
    def hex(self) -> str:
        return self.expected[0][1]

    def hashers(self) -> dict:
        return {name: hashlib.new(name) for name, _ in self.expected}

    def matches(self, hashers: dict) -> bool:
        return all(hashers[name].hexdigest() == value for name, value in self.expected)

    def check(self, file) -> bool:
        """Read `file` from its start to its end: do its bytes match? (left at its start)"""
        file.seek(0)
        hashers = self.hashers()
        while chunk := file.read(CHUNK):
            for hasher in hashers.values():
                hasher.update(chunk)
        file.seek(0)
        return self.matches(hashers)


def _ordered(found: dict[str, str]) -> Digests | None:
    kept = tuple((name, found[name]) for name in ALGORITHMS if name in found and _HEX[name].fullmatch(found[name]))
    return Digests(kept) if kept else None


def from_pypi(hashes) -> Digests | None:
    """A PEP 503/691 file entry's `hashes` (or a `core-metadata` dict)."""
    if not isinstance(hashes, dict):
        return None
    return _ordered({str(k).lower(): str(v).lower() for k, v in hashes.items() if isinstance(v, str)})


def from_npm(dist) -> Digests | None:
    """An npm manifest's `dist`: every SRI entry of `integrity`, and `shasum`."""
    if not isinstance(dist, dict):
        return None
    found: dict[str, str] = {}
    integrity = dist.get("integrity")
    for entry in integrity.split() if isinstance(integrity, str) else ():
        name, _, encoded = entry.partition("-")
        try:
            found.setdefault(name.lower(), base64.b64decode(encoded.split("?")[0], validate=True).hex())
        except (binascii.Error, ValueError):
            continue
    if isinstance(dist.get("shasum"), str):
        found.setdefault("sha1", dist["shasum"].lower())
    return _ordered(found)
