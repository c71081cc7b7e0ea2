"""Inside end of the network-namespace sandbox (run as a program under `unshare --net`).

    python -I netns_inside.py PORT=SOCKET [PORT=SOCKET ...] -- COMMAND [ARG ...]

Brings the namespace's loopback interface up, listens on 127.0.0.1:PORT for each bridge and
relays every connection to its Unix socket, runs COMMAND, and exits with its status. Standard
library only: it runs in the sandbox's Python, not the test's.
"""

from __future__ import annotations

import fcntl
import socket
import struct
import subprocess
import sys
import threading

SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


def bring_loopback_up() -> None:
    """`ip link set lo up`, without needing iproute2 in the sandbox."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        request = struct.pack("16sh", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(probe, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(probe, SIOCSIFFLAGS, struct.pack("16sh", b"lo", flags | IFF_UP))


def pipe(source: socket.socket, sink: socket.socket) -> None:
    """Copy one direction until it ends, then pass the half-close on."""
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    try:
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def relay(a: socket.socket, b: socket.socket) -> None:
    """Both directions of one connection in threads of their own; both sockets closed after."""
    threads = [threading.Thread(target=pipe, args=pair, daemon=True) for pair in ((a, b), (b, a))]
    for thread in threads:
        thread.start()

    def close_when_done():
        for thread in threads:
            thread.join()
        a.close()
        b.close()

    threading.Thread(target=close_when_done, daemon=True).start()


def serve(port: int, path: str) -> None:
    listener = socket.create_server(("127.0.0.1", port))

    def accept():
        while True:
            client, _ = listener.accept()
            outside = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                outside.connect(path)
            except OSError:
                client.close()
                outside.close()
                continue
            relay(client, outside)

    threading.Thread(target=accept, daemon=True).start()


def main(args: list[str]) -> int:
    split = args.index("--")
    bring_loopback_up()
    for forward in args[:split]:
        port, _, path = forward.partition("=")
        serve(int(port), path)
    return subprocess.call(args[split + 1 :])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
