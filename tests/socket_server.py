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
