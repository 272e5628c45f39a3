"""The chat client's transport: a deadline over a whole request (its sockets are shut when it passes, so a
server that trickles its answer byte by byte is cut off) and the urllib opener whose connections report
their sockets to it."""

from __future__ import annotations

import socket
import threading
import urllib.request
from typing import Any


class Deadline:
    """Shuts the request's sockets down when the deadline passes, so no read outlives it."""

    def __init__(self, seconds: float) -> None:
        self.expired = False
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._socks.append(sock)
            if self.expired:
                self._shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._socks:
                self._shut(sock)

    @staticmethod
    def _shut(sock: socket.socket) -> None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def __enter__(self) -> Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._timer.cancel()


def opener(deadline: Deadline) -> urllib.request.OpenerDirector:
    """urllib's opener (proxies from the environment included) whose connections report their sockets."""

    def watched(base: type) -> type:
        class Connection(base):  # type: ignore[misc, valid-type]
            def connect(self) -> None:
                super().connect()
                deadline.watch(self.sock)

        return Connection

    class HTTP(urllib.request.HTTPHandler):
        def do_open(self, http_class, req, **kwargs):
            return super().do_open(watched(http_class), req, **kwargs)

    class HTTPS(urllib.request.HTTPSHandler):
        def do_open(self, http_class, req, **kwargs):
            return super().do_open(watched(http_class), req, **kwargs)

    return urllib.request.build_opener(HTTP(), HTTPS())
