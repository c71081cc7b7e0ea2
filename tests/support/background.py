"""Test servers served from a background thread, and stopped without waiting."""

from __future__ import annotations

import threading

# shutdown() waits up to one poll interval: socketserver's default (0.5 s) cost every test up to
# half a second per server it stopped.
POLL_SECONDS = 0.01


def serve_in_background(server) -> threading.Thread:
    """Start `server.serve_forever` on a daemon thread; `server.shutdown()` returns within a poll."""
    thread = threading.Thread(target=server.serve_forever, args=(POLL_SECONDS,), daemon=True)
    thread.start()
    return thread
