"""A loopback TCP forwarder that a test can cut, to take a real store connection away mid-run, or
that holds every chunk for a one-way `delay`, to put a local upstream a network's distance away
(the benchmark's remote upstream)."""

from __future__ import annotations

import socket
import threading
import time


class Forwarder:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1", delay: float = 0.0):
        self._target = (target_host, target_port)
        self._delay = delay
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = []
        self._open = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while self._open:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if not self._open:  # closing the listener does not wake an accept() already waiting
                client.close()
                return
            upstream = socket.create_connection(self._target, timeout=5)
            self._sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                if self._delay:  # each chunk in turn: for small answers, one delay each way
                    time.sleep(self._delay)
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()  # either direction ending ends the pair; closing twice is harmless

    def cut(self) -> None:
        """Refuse new connections and break every open one."""
        self._open = False
        self._listener.close()
        for s in self._sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
