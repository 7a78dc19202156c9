"""The shards' connections (``_pool``), and the network backends that open them.

Every wait of a connection is bounded by the run's deadline and what it reads before the head is
charged to the run's budget (``_deadline``); a connection on which an answer went on past its end reads
as closed by the agent, so that the pool does not hand it to the next run (:func:`check_end`). A sync
pool's connections are opened where a client's close wakes them (:class:`_Opening`): connecting, or in
their TLS handshake, in another OS thread. On asyncio, the async shards' connections are the package's
own (:class:`~agui_client._sockets.SocketBackend`; see ``_sockets``).
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import select
import socket
import ssl
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore
import httpx

from ._deadline import bounded, charged
from ._sockets import SocketBackend

try:  # (httpcore's stream over a socket: the one its sync backend hands the pool)
    from httpcore._backends.sync import SyncStream as _SyncStream
except ImportError:  # pragma: no cover - if it moves, connections are opened by httpcore, not woken while opening
    _SyncStream = None  # type: ignore[assignment,misc]

__all__ = ["Backend", "bound", "check_end"]


class _Opening:
    """The sockets of a sync pool's connections still being opened (connecting, or in their TLS handshake),
    so that a client's close wakes a run blocked there, in another OS thread, as ``_wakes.wake`` wakes one
    blocked in a read: until the handshake is over, the pool holds no stream whose socket it could reach.

    A socket is held here from just before its ``connect`` to the end of its handshake. During the handshake
    it is a second descriptor of the connection's socket (``dup``), ours: ``ssl`` detaches the socket the
    connect made and hands its number to an ``SSLSocket`` nobody outside the handshake holds. Shutting a
    connection down through a number kept aside could hit whatever file took that number after the
    connection was closed; a descriptor of our own stays the connection's until we close it, which is done
    under the lock :meth:`wake` shuts down under. Once :meth:`wake` ran, no connection opens here any more.

    A socket shut down before its ``connect`` began is not stopped by that shutdown. A connect with a timeout
    returns at once on it (Python waits for the connect by ``poll``, which such a socket answers at once), and
    the look at the close after the connect refuses the connection; one without a timeout (``timeout=None``)
    waits in the kernel, which the shutdown did not end, to an address that drops the SYN until the kernel
    gives up. So the connect is begun without waiting, and the close looked at only then, before the wait
    (:meth:`Backend._connect`): a close that came before that look refuses the connection; one that comes
    after it finds the socket connecting, and its shutdown ends the wait.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        #: The client was closed: every socket held was shut down, and none is opened any more.
        self.closed = False

    @contextmanager
    def holding(self, sock: socket.socket, *, ours: bool) -> Iterator[None]:
        """Hold ``sock`` for :meth:`wake` while the block runs; ``ours``: a descriptor of our own, closed
        as the block ends. Refuses (httpcore's ``ConnectError``) once the client was closed."""
        with self._lock:
            refused = self.closed
            if not refused:
                self._sockets.add(sock)
        if refused:
            if ours:
                sock.close()
            raise httpcore.ConnectError("the client was closed")
        try:
            yield
        finally:
            with self._lock:
                self._sockets.discard(sock)
                if ours:
                    sock.close()

    def wake(self) -> None:
        """Shut down every socket held (a run in its connect or handshake wakes with the connection's end),
        and refuse every connection opened from now on."""
        with self._lock:
            self.closed = True
            for sock in self._sockets:
                with contextlib.suppress(OSError):  # (not in its connect yet: see the class's docstring)
                    sock.shutdown(socket.SHUT_RDWR)


class _Stream(httpcore.NetworkStream):
    """A connection whose every wait is :func:`bounded`, and which reads as closed by the agent once an
    answer on it went on past its end (:func:`check_end`)."""

    def __init__(self, stream: httpcore.NetworkStream, opening: _Opening) -> None:
        self._stream = stream
        #: An answer on it went on past its end: the pool is not to use it again.
        self.overran = False
        #: Its pool's sockets being opened (its handshake holds its own there).
        self._opening = opening

    # Both refuse once the client was closed: a connection opened as it closed may have come to the pool
    # after ``_wakes.wake`` looked, and nothing shut it down. (httpcore reads for an early answer after a
    # write failed: the read is refused too, or it would wait for the agent.)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if self._opening.closed:
            raise httpcore.ReadError("the client was closed")
        return charged(self._stream.read(max_bytes, bounded(timeout)))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if self._opening.closed:
            raise httpcore.WriteError("the client was closed")
        self._stream.write(buffer, bounded(timeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        raw = self._stream.get_extra_info("socket")
        if type(raw) is not socket.socket:  # (TLS in TLS, a proxy's: not held)
            return _Stream(self._stream.start_tls(ssl_context, server_hostname, bounded(timeout)), self._opening)
        try:
            spare = socket.socket(raw.family, raw.type, raw.proto, fileno=os.dup(raw.fileno()))
            with self._opening.holding(spare, ours=True):
                secured = self._stream.start_tls(ssl_context, server_hostname, bounded(timeout))
        except httpcore.ConnectError:
            self._stream.close()  # (as httpcore's start_tls closes the connection it failed on)
            raise
        except OSError as exc:  # (the descriptor: none left to make a second one)
            self._stream.close()
            raise httpcore.ConnectError(str(exc)) from exc
        return _Stream(secured, self._opening)

    def get_extra_info(self, info: str) -> Any:
        # (httpcore drops an idle connection that reads as readable: to it, the agent has hung up)
        return True if info == "is_readable" and self.overran else self._stream.get_extra_info(info)


class Backend(httpcore.NetworkBackend):
    """httpcore's network backend, its connections :class:`_Stream`, opened where a close wakes them
    (:class:`_Opening`)."""

    def __init__(self, backend: httpcore.NetworkBackend) -> None:
        self._backend = backend
        #: The sockets of its connections being opened.
        self.opening = _Opening()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        if _SyncStream is None or type(self._backend) is not httpcore.SyncBackend:
            return _Stream(self._backend.connect_tcp(host, port, bounded(timeout), local_address, socket_options),
                           self.opening)
        # (httpcore's own connect, but with each socket held while it connects: socket.create_connection,
        # which httpcore calls, makes its sockets where nothing else can reach them)
        try:
            sock = self._connected(host, port, bounded(timeout), local_address)
        except httpcore.ConnectError:
            raise
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(str(exc)) from exc
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        try:
            for option in socket_options or ():
                sock.setsockopt(*option)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as exc:
            sock.close()
            raise httpcore.ConnectError(str(exc)) from exc
        return _Stream(_SyncStream(sock), self.opening)

    def _connected(self, host: str, port: int, timeout: float | None, local_address: str | None) -> socket.socket:
        """A socket connected to the first of ``host``'s addresses that takes it, as ``socket.create_connection``
        gives it (the last address's error when none does)."""
        failure: OSError | None = None
        for family, kind, proto, _, address in socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM):
            sock = socket.socket(family, kind, proto)
            try:
                if local_address is not None:
                    sock.bind((local_address, 0))
                with self.opening.holding(sock, ours=False):
                    self._connect(sock, address, timeout)
                if self.opening.closed:  # (a connect the close shut down may end as if it succeeded: refused)
                    raise httpcore.ConnectError("the client was closed")
                sock.settimeout(timeout)  # (as socket.create_connection leaves it)
                return sock
            except OSError as exc:
                sock.close()
                failure = exc
            except BaseException:  # (the close's refusal; Ctrl-C in the wait)
                sock.close()
                raise
        raise failure if failure is not None else OSError(errno.EADDRNOTAVAIL, f"no address found for {host}")

    def _connect(self, sock: socket.socket, address: Any, timeout: float | None) -> None:
        """Connect ``sock`` (held for the close) to ``address`` within ``timeout``, as ``sock.connect`` would, but
        with the close looked at once the connect is under way (see :class:`_Opening`): the connect is begun
        without waiting, and waited for after that look.

        Raises:
            httpcore.ConnectError: the client was closed before the connect was under way.
            TimeoutError: not connected within ``timeout``.
            OSError: the connect failed (refused, reset, or shut down by the close).
        """
        sock.setblocking(False)
        failed = sock.connect_ex(address)
        if self.opening.closed:
            raise httpcore.ConnectError("the client was closed")
        if failed in _UNDER_WAY:
            if not _writable(sock, timeout):
                raise TimeoutError("timed out")
            failed = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if failed:
            raise OSError(failed, os.strerror(failed))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        return _Stream(self._backend.connect_unix_socket(path, bounded(timeout), socket_options), self.opening)

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


#: What a connect begun without waiting answers while it is under way (``EINTR``: interrupted by a signal,
#: it goes on all the same; Windows says ``EWOULDBLOCK``).
_UNDER_WAY = frozenset({errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EAGAIN, errno.EINTR})


#: The longest one wait of :func:`_writable` lasts, in seconds: ``poll`` takes milliseconds in a C ``int`` (24
#: days), and the client takes timeouts of years (``MAX_SECONDS``), waited for in turns.
_LONGEST_WAIT = 86400.0


def _writable(sock: socket.socket, timeout: float | None) -> bool:
    """Wait until ``sock``, connecting, is writable (connected, or failed): whether it was within ``timeout``."""
    at = None if timeout is None else time.monotonic() + timeout
    while True:
        left = None if at is None else max(at - time.monotonic(), 0.0)
        if _wait_writable(sock, None if left is None else min(left, _LONGEST_WAIT)):
            return True
        if left is not None and left <= _LONGEST_WAIT:
            return False


def _wait_writable(sock: socket.socket, timeout: float | None) -> bool:
    if hasattr(select, "poll"):  # (``select.select`` refuses descriptors past FD_SETSIZE, 1024)
        poller = select.poll()
        poller.register(sock, select.POLLOUT)
        return bool(poller.poll(None if timeout is None else math.ceil(timeout * 1000)))
    return any(select.select([], [sock], [sock], timeout)[1:])


class _AsyncStream(httpcore.AsyncNetworkStream):
    """:class:`_Stream` for the async transport."""

    def __init__(self, stream: httpcore.AsyncNetworkStream) -> None:
        self._stream = stream
        #: As :attr:`_Stream.overran`.
        self.overran = False

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return charged(await self._stream.read(max_bytes, bounded(timeout)))

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._stream.write(buffer, bounded(timeout))

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        return _AsyncStream(await self._stream.start_tls(ssl_context, server_hostname, bounded(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return True if info == "is_readable" and self.overran else self._stream.get_extra_info(info)  # (as _Stream)


class _AsyncBackend(httpcore.AsyncNetworkBackend):
    """:class:`Backend` for the async transport."""

    def __init__(self, backend: httpcore.AsyncNetworkBackend) -> None:
        self._backend = backend

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        return _AsyncStream(await self._backend.connect_tcp(host, port, bounded(timeout), local_address,
                                                            socket_options))

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        return _AsyncStream(await self._backend.connect_unix_socket(path, bounded(timeout), socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


def bound(transport: httpx.HTTPTransport | httpx.AsyncHTTPTransport) -> None:
    """Give ``transport``'s pool the bounded backend (httpx has no parameter for it: its pool's attribute
    is set; if httpx ever keeps it elsewhere, the transport works as httpx's own, without the bound)."""
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if isinstance(backend, httpcore.NetworkBackend):
        pool._network_backend = Backend(backend)  # type: ignore[union-attr]
    elif isinstance(backend, httpcore.AsyncNetworkBackend):
        # (on asyncio, connections of the package's own: httpcore's lose an answer sent before a write
        # failed, see ``_sockets``)
        pool._network_backend = _AsyncBackend(SocketBackend(backend))  # type: ignore[union-attr]


def check_end(body: httpx.SyncByteStream | httpx.AsyncByteStream, network: object) -> None:
    """Mark ``network`` (the connection an answer came on, one of the shards') as not to be used again when
    bytes were read past the end of the answer ``body``.

    An agent whose ``Content-Length`` is short of its body, or that writes on after a chunked body's last
    chunk, leaves the rest on the connection, in the HTTP parser's buffer when it came in the read that
    ended the answer. httpcore then hands that connection to the next run, which took the rest for the
    answer to its own request: a forged answer written after the first one was the next run's result
    (another user's run, on a web backend's client). RFC 9112 (section 6.3) forbids a client to take such
    bytes for a response. Once per answer, when it is closed.
    """
    if not isinstance(network, (_Stream, _AsyncStream)):
        return
    found: object = body
    for name in _TO_THE_PARSER:
        found = getattr(found, name, None)
    trailing = getattr(found, "trailing_data", None)  # (h11's: what it holds and has not parsed)
    if isinstance(trailing, tuple) and trailing and trailing[0]:
        network.overran = True


#: From httpx's answer body to the h11 parser of its connection: httpcore's pool stream, the connection's
#: stream, the HTTP/1.1 connection, its h11 state. All httpx's and httpcore's private attributes, each read
#: with a default: if one moves, nothing is found and nothing raised, and the connection is kept as httpx
#: keeps it, not checked (its idle check still drops one whose rest came in a later read).
_TO_THE_PARSER = ("_httpcore_stream", "_stream", "_connection", "_h11_state")
