"""A stopping worker lets the threads Python did not start (granian's) end before finalization."""

from __future__ import annotations

import _thread
import threading
import time

from interface.serve import native_threads, outlive_native_threads


def test_threads_python_did_not_start_are_waited_for_and_threading_ones_are_not():
    ended = threading.Event()
    # A thread of the _thread module is unknown to `threading`, as a Rust thread is.
    _thread.start_new_thread(lambda: (time.sleep(0.4), ended.set()), ())
    time.sleep(0.05)
    assert native_threads()
    started = time.monotonic()
    outlive_native_threads(seconds=10)
    assert ended.wait(1) and time.monotonic() - started >= 0.2
    time.sleep(0.05)  # the thread's own exit, after its last line
    threading.Thread(target=time.sleep, args=(1,), daemon=True).start()  # one Python started: not waited for
    started = time.monotonic()
    outlive_native_threads(seconds=10)
    assert time.monotonic() - started < 0.5


def test_the_wait_is_bounded():
    stop = threading.Event()
    _thread.start_new_thread(stop.wait, ())
    try:
        started = time.monotonic()
        outlive_native_threads(seconds=0.3)
        assert 0.3 <= time.monotonic() - started < 2
    finally:
        stop.set()
