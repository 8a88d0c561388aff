"""A threaded TCP server on 127.0.0.1 for tests that script the far end of a connection byte by byte."""

from __future__ import annotations

import socket
import threading


class LocalSocketServer:
    """Listens on an ephemeral 127.0.0.1 port and hands each accepted connection to ``handle`` on a thread
    of its own; counts connections. Subclasses set their own state before calling ``__init__``, which
    starts accepting."""

    def __init__(self) -> None:
        self.connections = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed
                return
            self.connections += 1
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def handle(self, conn: socket.socket) -> None:
        """Serve one connection (and close it)."""
        raise NotImplementedError

    def close(self) -> None:
        self.sock.close()


def read_request_head(conn: socket.socket) -> bytes | None:
    """A request's bytes up to and including its blank line (and whatever came with them); None if the
    client closed the connection first."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    return data
