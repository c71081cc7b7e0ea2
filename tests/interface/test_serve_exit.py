"""A stopping worker lets the threads Python did not start (granian's) end before finalization."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# A thread of the _thread module is unknown to `threading`, as a Rust thread is: left alone, the
# process exits under it (it never writes); waited for, it ends first. A threading one is not waited for.
SCRIPT = """
import _thread, atexit, sys, threading, time
from interface.serve import outlive_native_threads

seconds, path = float(sys.argv[1]), sys.argv[2]
def native():
    time.sleep(0.5)
    open(path, "w").write("ended")
_thread.start_new_thread(native, ())
threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
started = time.monotonic()
atexit.register(lambda: print(f"{time.monotonic() - started:.2f}"))
atexit.register(outlive_native_threads, seconds)
"""


def exit_with(seconds: float, tmp_path) -> tuple[bool, float]:
    """(whether the native thread ended before the process did, seconds from start to exit)."""
    mark = tmp_path / f"ended-{seconds}"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(seconds), str(mark)], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return mark.exists(), float(done.stdout)


def test_the_threads_python_did_not_start_end_before_the_process_does(tmp_path):
    ended, took = exit_with(10, tmp_path)
    assert ended and took < 5  # the daemon threading thread (30 s) was not waited for


def test_the_wait_is_bounded(tmp_path):
    ended, took = exit_with(0.1, tmp_path)
    assert not ended and took < 0.45
