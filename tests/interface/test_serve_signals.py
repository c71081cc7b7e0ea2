"""`serve`'s parent handles a stop or reload signal even when it comes while its main thread
holds the lock of the Event that wakes granian's main loop (waking from its wait, or inside the
handler of a signal that came microseconds before): granian's own handler then waited for that
lock forever, in the thread holding it, and `serve` never stopped."""

from __future__ import annotations

import signal
import threading

import pytest
from granian import Granian
from granian.constants import Interfaces

from interface.serve import APP_FACTORY, signals_without_locks


@pytest.mark.parametrize(
    "handler, flag", [("signal_handler_interrupt", "interrupt_signal"), ("signal_handler_reload", "reload_signal")]
)
def test_a_signal_handled_while_the_main_thread_holds_the_wake_up_s_lock_wakes_the_loop(handler, flag):
    server = Granian(APP_FACTORY, port=0, interface=Interfaces.WSGI, factory=True, workers=1)
    signals_without_locks(server)
    wake = server.main_loop_interrupt

    def signal_inside():  # the main loop's thread, holding the lock as `Event.wait` does on waking
        with wake._cond:
            getattr(server, handler)(signal.SIGTERM, None)  # the signal's handler runs right there

    thread = threading.Thread(target=signal_inside, daemon=True)
    thread.start()
    thread.join(5)
    assert not thread.is_alive(), "the handler waits for a lock its own thread holds"
    assert getattr(server, flag) is True
    assert wake.wait(5)  # the main loop is woken, once that lock is let go
