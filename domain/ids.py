"""Fresh ids for records made many a second: time-ordered (RFC 9562's version 7).

A decision's id is the primary key of its event and of its read-model row. Random ids (version
4) land anywhere in those indexes, so every insert descends each one from its root and dirties a
page of its own; ids that grow with time land at the right edge, where PostgreSQL's B-tree keeps
its last leaf and appends without a descent. Within one process the ids strictly increase (a
counter after the millisecond when two fall in one); 62 random bits keep the ids of processes
and machines apart. They come from a generator seeded from the system's randomness in each
process (again in a forked child): an id is a name, not a secret (who may read a record is the
token's role), and a system call per id (`os.urandom`) cost as much as the rest of making it."""

from __future__ import annotations

import os
import random
import threading
import time
from uuid import UUID

_lock = threading.Lock()
_last = 0  # the last id's milliseconds and counter: (ms << 12) | counter
_random = random.Random(os.urandom(32))
os.register_at_fork(after_in_child=lambda: _random.seed(os.urandom(32)))


def uuid7() -> UUID:
    global _last
    with _lock:
        _last = max(time.time_ns() // 1_000_000 << 12, _last + 1)  # a full counter carries into the ms
        ordered = _last
    ms, counter = ordered >> 12, ordered & 0xFFF
    rand_b = _random.getrandbits(62)
    return UUID(int=ms << 80 | 0x7 << 76 | counter << 64 | 0b10 << 62 | rand_b)
