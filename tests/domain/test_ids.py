"""Decision ids grow with time (RFC 9562 version 7), so the store's indexes keyed on them append
at their right edge; they must still be valid, unique UUIDs, from many threads at once."""

from __future__ import annotations

import threading
import time
from uuid import UUID

from domain.decision import Decision
from domain.ids import uuid7


def test_fresh_ids_are_version_7_and_carry_the_millisecond() -> None:
    before = time.time_ns() // 1_000_000
    made = uuid7()
    after = time.time_ns() // 1_000_000
    assert made.version == 7 and made.variant == "specified in RFC 4122"
    assert before <= made.int >> 80 <= after
    assert UUID(str(made)) == made


def test_ids_strictly_increase_even_many_to_a_millisecond() -> None:
    made = [uuid7() for _ in range(20_000)]  # thousands fall in one millisecond: the counter orders them
    assert made == sorted(made) and len(set(made)) == len(made)
    assert all(u.version == 7 for u in made)


def test_threads_never_share_an_id() -> None:
    made: list[list[UUID]] = [[] for _ in range(8)]
    threads = [threading.Thread(target=lambda out: out.extend(uuid7() for _ in range(5_000)), args=(m,)) for m in made]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [u for m in made for u in m]
    assert len(set(every)) == len(every)
    assert all(m == sorted(m) for m in made)


def test_a_fresh_decision_takes_a_time_ordered_id() -> None:
    first = Decision.recorded("acme", {}).originator_id
    second = Decision.recorded("acme", {}).originator_id
    assert first.version == 7 and first < second


def test_a_forked_child_draws_other_random_bits_than_its_parent() -> None:
    """Each process seeds its own generator (again after a fork): ids of processes stay apart."""
    import os

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next id's random bits, to the parent
        os.write(write, uuid7().bytes)
        os._exit(0)
    os.waitpid(pid, 0)
    child = UUID(bytes=os.read(read, 16))
    ours = uuid7()
    assert child.int & (1 << 62) - 1 != ours.int & (1 << 62) - 1
