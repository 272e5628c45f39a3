"""One POST to a chat endpoint over httpx, bounded by a whole-request deadline, its failures classified.

httpx's timeouts bound each network operation (connect, each read, each write), not the request: a server
that trickles its answer a byte at a time never trips a read timeout. :class:`Deadline` bounds the whole
request: it learns each socket the request opens (httpx's ``trace`` request extension reports the new
connection) and shuts it down when the deadline passes, so no read outlives it.

:func:`post` returns the status and body of any complete answer (the caller decides what a status means);
a failure worth retrying (cannot connect, timeout, body cut short, connection dropped) is a
:class:`Transient` carrying a short reason; one that a retry cannot mend (a malformed HTTP answer, a URL
httpx cannot send to) is an :class:`EndpointError` naming the endpoint.
"""

from __future__ import annotations

import functools
import socket
import ssl
import threading
from typing import Any

import httpx

from ..errors import PromptPrismError

#: the connection events of httpx's ``trace`` extension whose ``return_value`` is the new network stream
_CONNECTED = ("connection.connect_tcp.complete", "connection.start_tls.complete")


class EndpointError(PromptPrismError):
    """The chat endpoint could not be reached or kept failing; the message names the URL."""


class Transient(Exception):
    """A failure a retry may mend; the message is the reason (it ends up in the final error)."""


class Deadline:
    """Shuts the request's sockets down when the deadline passes, so no read outlives it."""

    def __init__(self, seconds: float) -> None:
        self.expired = False
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def trace(self, event: str, info: dict) -> None:
        """httpx's ``trace`` callback: watch the socket of each connection the request opens."""
        if event in _CONNECTED:
            sock = info["return_value"].get_extra_info("socket")
            if isinstance(sock, socket.socket):
                self.watch(sock)

    def watch(self, sock: socket.socket) -> None:
        """Shut ``sock`` down when the deadline passes (at once if it has passed)."""
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
        try:  # the plain socket's shutdown (a TLS socket's own would also drop its TLS state under a reader)
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        except OSError:
            pass

    def __enter__(self) -> Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._timer.cancel()


@functools.cache
def http_client() -> httpx.Client:
    """The httpx client every chat client sends with (made once: its TLS context takes a while to build).

    As urllib did: proxies from the environment and the system's certificate store (``SSL_CERT_FILE`` and
    ``SSL_CERT_DIR`` honoured; not certifi's bundle, so a CA installed on the system keeps working). No
    redirects followed, and no kept-alive connections, so that every request opens its own connection and
    the deadline sees its socket (and the client holds nothing a fork or a pickle could not do without)."""
    return httpx.Client(verify=ssl.create_default_context(), trust_env=True, follow_redirects=False,
                        limits=httpx.Limits(max_keepalive_connections=0))


def post(url: str, content: bytes, headers: dict[str, str], timeout: float,
         client: httpx.Client | None = None) -> tuple[int, bytes]:
    """(status, body) of one POST of ``content`` to ``url``, all of it within ``timeout`` seconds (with
    ``client``, default :func:`http_client`)."""
    client = http_client() if client is None else client
    late = f"no complete answer within {timeout:g} s (timeout)"
    deadline = Deadline(timeout)
    with deadline:
        try:
            with client.stream("POST", url, content=content, headers=headers, timeout=timeout,
                               extensions={"trace": deadline.trace}) as resp:
                status, body = resp.status_code, _body(resp, deadline, late)
        except Transient:
            raise
        except httpx.TimeoutException:
            raise Transient(late) from None
        except (httpx.ConnectError, httpx.UnsupportedProtocol, httpx.ProxyError) as exc:
            raise Transient(late if deadline.expired else f"cannot connect ({exc})") from None
        except httpx.RemoteProtocolError as exc:  # before the headers were through
            if deadline.expired:
                raise Transient(late) from None
            if "disconnected" in str(exc).lower():
                raise Transient(f"connection failed ({exc})") from None
            raise EndpointError(f"chat endpoint {url} answered a malformed HTTP response ({str(exc)[:80]!r})"
                                ) from None
        except httpx.TransportError as exc:
            raise Transient(late if deadline.expired else
                            f"connection failed ({exc or type(exc).__name__})") from None
        except (httpx.InvalidURL, httpx.DecodingError, httpx.TooManyRedirects) as exc:
            raise EndpointError(f"chat endpoint {url}: {exc}") from None
    if deadline.expired:  # a body without a length, cut at the deadline
        raise Transient(late)
    return status, body


def _body(resp: httpx.Response, deadline: Deadline, late: str) -> bytes:
    """The whole body of a streamed answer; cut short (or at the deadline) it is a :class:`Transient`."""
    try:
        return resp.read()
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        if deadline.expired:
            raise Transient(late) from None
        raise Transient(f"answer cut short ({resp.num_bytes_downloaded} bytes read)") from exc
