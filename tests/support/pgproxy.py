"""A TCP proxy in front of PostgreSQL that a test can cut: the database "down", or one answer lost.

    with PgProxy(pg_url) as proxy:
        worker_url = proxy.url                  # the same database, through the proxy
        proxy.lose_answer_after(b"UPDATE", b"RETURNING")  # the next such statement commits, unanswered
        proxy.down(); ...; proxy.up()           # every connection cut, new ones refused, then back

Real sockets and a real server: the client sees what it sees when a server or a link dies.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time
from urllib.parse import urlsplit, urlunsplit


class PgProxy:
    """Forward 127.0.0.1:port to the PostgreSQL of url; see the module docstring."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.target = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        netloc = parts.netloc.rsplit("@", 1)
        host = f"127.0.0.1:{self.port}"
        self.url = urlunsplit(parts._replace(netloc=f"{netloc[0]}@{host}" if len(netloc) == 2 else host))
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._down = False
        self._doom: tuple[bytes, ...] | None = None
        self.answers_lost = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self) -> PgProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.listener.close()
        self.cut()

    def down(self) -> None:
        """Cut every connection and refuse new ones until up()."""
        self._down = True
        self.cut()

    def up(self) -> None:
        self._down = False

    def cut(self) -> None:
        """Close every connection through the proxy (both ends)."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            for s in pair:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    s.close()

    def lose_answer_after(self, *markers: bytes) -> None:
        """Make the next client message holding every marker reach the server, then cut that connection
        before the server's answer comes back (the statement commits; its client never hears so)."""
        self._doom = markers

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self._down:
                client.close()
                continue
            try:
                server = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._pairs.append((client, server))
            threading.Thread(target=self._pump, args=(client, server), daemon=True).start()

    def _pump(self, client: socket.socket, server: socket.socket) -> None:
        doomed_at: float | None = None
        try:
            while True:
                if doomed_at is not None and time.monotonic() >= doomed_at:
                    self.answers_lost += 1
                    return
                ready, _, _ = select.select([client, server], [], [], 0.05)
                for s in ready:
                    data = s.recv(65536)
                    if not data:
                        return
                    if s is client:
                        doom = self._doom
                        if doom and all(m in data for m in doom) and doomed_at is None:
                            self._doom = None
                            doomed_at = time.monotonic() + 0.3  # the server commits meanwhile
                        server.sendall(data)
                    elif doomed_at is None:
                        client.sendall(data)
        except (OSError, ValueError):  # ValueError: cut() closed a socket under select (fd -1)
            return
        finally:
            for s in (client, server):
                with contextlib.suppress(OSError):
                    s.close()
            with self._lock:
                if (client, server) in self._pairs:
                    self._pairs.remove((client, server))
