"""A loopback (127.0.0.1) chat endpoint that misbehaves on purpose, one way per URL path prefix.

``http://127.0.0.1:PORT/<fault>/v1`` answers ``/chat/completions`` requests the ``<fault>`` way (see
:data:`FAULTS`); ``ok`` answers properly. Raw sockets, so status lines and bodies can be broken at will.
"""

from __future__ import annotations

import json
import socket
import threading
import time

ANSWER = {"choices": [{"message": {"role": "assistant", "content": "an answer"}}],
          "usage": {"prompt_tokens": 3, "completion_tokens": 2}}


def _http(body: bytes, status: str = "200 OK", length: int | None = None) -> bytes:
    n = len(body) if length is None else length
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {n}\r\n"
            f"Connection: close\r\n\r\n").encode() + body


def _json(obj) -> bytes:
    return _http(json.dumps(obj).encode())


#: fault name -> what is sent back (bytes), or a callable(conn) for the slow ones
FAULTS = {
    "ok": _json(ANSWER),
    "truncated": _http(json.dumps(ANSWER).encode()[:20], length=400),
    "bad-status": b"HTTP/1.1 two hundred OK\r\n\r\n{}",
    "garbage": b"\x00\x01 not http at all\r\n\r\n",
    "not-json": _http(b"<html>busy</html>"),
    "no-choices": _json({"id": "x"}),
    "usage-text": _json(dict(ANSWER, usage={"completion_tokens": "lots"})),
    "usage-negative": _json(dict(ANSWER, usage={"prompt_tokens": -1})),
    "content-number": _json({"choices": [{"message": {"content": 42}}]}),
    "empty-answer": _json({"choices": [{"message": {"content": "   "}}]}),
    "http-500": _http(b'{"error": "overloaded"}', status="500 Internal Server Error"),
    "http-401": _http(b'{"error": "no key"}', status="401 Unauthorized"),
    "hang-up": b"",  # the connection closed without a byte of answer
}
SLOW = ("trickle", "silent")


class FaultServer:
    """``with FaultServer() as srv: srv.url("truncated")``; counts requests per fault in ``srv.hits``."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.hits: dict[str, int] = {}
        self._stop = threading.Event()

    def url(self, fault: str) -> str:
        return f"http://127.0.0.1:{self.port}/{fault}/v1"

    def _read_request(self, conn: socket.socket) -> str:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return ""
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        while len(body) < length:
            chunk = conn.recv(65536)
            if not chunk:
                break
            body += chunk
        path = head.split(b" ")[1].decode()
        return path.strip("/").split("/")[0]

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                fault = self._read_request(conn)
                self.hits[fault] = self.hits.get(fault, 0) + 1
                if fault == "trickle":  # headers, then one byte of a long body at a time, for ever
                    conn.sendall(_http(b"", length=10**6))
                    while not self._stop.is_set():
                        conn.sendall(b" ")
                        time.sleep(0.05)
                elif fault == "silent":
                    self._stop.wait(600)
                else:
                    conn.sendall(FAULTS.get(fault, FAULTS["ok"]))
            except OSError:
                pass

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def __enter__(self) -> FaultServer:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self.sock.close()
