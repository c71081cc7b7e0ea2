"""A least-recently-used memory bounded in bytes: what a worker keeps of index pages, their
judgements and its index fetches is bounded by what it weighs, not by how many entries it holds
(one npm packument's judgement can weigh as much as a thousand small pages')."""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

# What an entry costs besides its key and value: its slot and link in the ordered dict, and the
# (weight, value) pair it is kept as.
ENTRY_BYTES = 200


class SizedLru(Generic[K, V]):
    """Entries by key, least recently used out once their weights (`weigh(key, value)` plus
    ENTRY_BYTES) pass `limit`; one heavier than the limit alone is not kept. Thread-safe."""

    def __init__(self, limit: int, weigh: Callable[[K, V], int]):
        self.limit = limit
        self._weigh = weigh
        self._kept: OrderedDict[K, tuple[int, V]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            found = self._kept.get(key)
            if found is None:
                return None
            self._kept.move_to_end(key)
            return found[1]

    def put(self, key: K, value: V) -> None:
        weight = ENTRY_BYTES + self._weigh(key, value)
        with self._lock:
            self._drop(key)
            if weight > self.limit:
                return
            self._kept[key] = (weight, value)
            self._bytes += weight
            while self._bytes > self.limit:
                self._bytes -= self._kept.popitem(last=False)[1][0]

    def pop(self, key: K) -> None:
        with self._lock:
            self._drop(key)

    def _drop(self, key: K) -> None:
        found = self._kept.pop(key, None)
        if found is not None:
            self._bytes -= found[0]

    @property
    def weight(self) -> int:
        """The bytes held, as weighed."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._kept)


def weigh(*values: object) -> int:
    """What `values` take in memory: each object's own size (`sys.getsizeof`), and within
    tuples, lists, sets and dicts, their items'. An object shared with other entries is counted
    in each (an overestimate); an object of any other class counts its own size only, so the
    caller weighs what such an object holds."""
    total = 0
    for value in values:
        total += sys.getsizeof(value)
        if isinstance(value, tuple | list | set | frozenset):
            total += weigh(*value)
        elif isinstance(value, dict):
            total += weigh(*value.keys(), *value.values())
    return total
