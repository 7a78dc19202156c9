"""The async client's connections on asyncio: a socket read and written directly, with TLS of its own.

httpcore's asyncio connections are anyio streams over an asyncio transport, and a write that fails
there loses what the agent had already sent. The transport reads no further than asked (anyio pauses
it between reads), so an answer the agent wrote before it hung up waits in the kernel; a write that
then fails (the agent closed before taking all of the request: ``BrokenPipeError``) closes the
transport and its socket at once, and that answer with them. httpcore goes on to read the answer
after a failed write, as a server may answer and close without reading the request, but there is
nothing left to read: the run failed with ``TransportError`` ("request failed: ReadError") without
what the agent had said. Over TLS, anyio's stream refuses every read once a write failed, even
without the transport's loss. The sync client's blocking socket loses nothing: its reads drain what
the kernel holds after a failed write, and the run ends as the agent left it (``StreamEnded`` with
what was folded, as for any body cut short).

So on asyncio the shards' connections are these instead: the socket read and written through the
loop's own ``sock_recv``/``sock_sendall``, which leave it open and readable when a write fails, and
TLS done here with an ``ssl.SSLObject``, whose reading goes on after its writing failed. Each act
raises httpcore's own errors, as httpcore's backends do; a TLS record the client refuses (a fatal
alert, a corrupted record) is a ``ReadError`` like any other read that failed, where anyio's stream
let a bare ``ssl.SSLError`` escape to the caller. An end without TLS's ``close_notify`` (a "ragged"
end) reads as the end, as Python's blocking TLS sockets read it: the agent's framing and the run's
terminal event say whether the answer was whole, not TLS.

Under trio (where ``asyncio`` is not running) httpcore's own backend serves, unchanged.
"""

from __future__ import annotations

import asyncio
import select
import socket
import ssl
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import anyio
import httpcore
import sniffio

__all__ = ["SocketBackend", "connect_tcp", "SocketStream", "TLSStream"]

T = TypeVar("T")

#: The most bytes one read of the socket takes.
_READ_SIZE = 64 * 1024


async def connect_tcp(host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                      socket_options: Iterable[Any] | None = None) -> SocketStream:
    """A connection to ``host``:``port`` on the running asyncio loop, within ``timeout`` in all: the
    addresses the name resolves to are tried as RFC 8305 asks (:func:`_first_connected`).

    Raises:
        httpcore.ConnectTimeout: not connected within ``timeout``.
        httpcore.ConnectError: every address refused or failed.
    """
    loop = asyncio.get_running_loop()
    try:
        with anyio.fail_after(timeout):
            found = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            if not found:
                raise httpcore.ConnectError(f"{host} resolves to no address")
            return SocketStream(await _first_connected(found, local_address, socket_options))
    except TimeoutError as exc:
        raise httpcore.ConnectTimeout(f"no connection to {host}:{port} within {timeout}s") from exc
    except OSError as exc:  # (the name did not resolve, or every address failed)
        raise httpcore.ConnectError(str(exc)) from exc


#: How long one address is tried alone before the next is tried beside it (RFC 8305's "Connection
#: Attempt Delay", the 250 ms anyio and asyncio use).
_ATTEMPT_DELAY = 0.25


async def _first_connected(found: list[Any], local_address: str | None,
                           socket_options: Iterable[Any] | None) -> socket.socket:
    """The socket of the first address in ``found`` (``getaddrinfo``'s answers) that accepts a connection.

    Each address is tried :data:`_ATTEMPT_DELAY` after the one before it, or as soon as that one failed,
    and the first to connect wins (the others are abandoned): tried one after another, an address that
    drops what is sent to it (an IPv6 route that leads nowhere, listed first) would take the whole
    connect timeout, and the address that works would never be tried.

    Raises:
        OSError: every address failed (the last failure; another exception where that failure was not the
            system's, a malformed socket option).
    """
    options = list(socket_options or ())
    won: list[socket.socket] = []
    failures: list[Exception] = []

    async def attempt(info: Any, failed: anyio.Event, scope: anyio.CancelScope) -> None:
        family, kind, proto, _, address = info
        sock: socket.socket | None = None
        try:
            # (made inside the ``try``: the process out of descriptors (EMFILE) is this address failing,
            # where raised out of the task group it reached the caller as an ``ExceptionGroup``, not as
            # httpcore's ``ConnectError``)
            sock = socket.socket(family, kind, proto)
            sock.setblocking(False)
            # (the request's head and body go in two writes: Nagle would hold the second for an ACK)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for option in options:
                sock.setsockopt(*option)
            if local_address is not None:
                sock.bind((local_address, 0))
            await asyncio.get_running_loop().sock_connect(sock, address)
        except Exception as exc:  # (a socket option the system refuses, or one malformed: this address's failure)
            if sock is not None:
                sock.close()
            failures.append(exc)
            failed.set()
            return
        except BaseException:
            if sock is not None:
                sock.close()
            raise
        if won:
            sock.close()  # (another address was first)
        else:
            won.append(sock)
            scope.cancel()

    try:
        async with anyio.create_task_group() as group:
            for info in found:
                failed = anyio.Event()
                group.start_soon(attempt, info, failed, group.cancel_scope)
                with anyio.move_on_after(_ATTEMPT_DELAY):
                    await failed.wait()
    except BaseException:
        for sock in won:  # (connected just as the connect timeout or a cancellation came)
            sock.close()
        raise
    if won:
        return won[0]
    raise failures[-1] if failures else OSError("no address could be tried")


class SocketBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend for the async shards: on asyncio, TCP connections are
    :class:`SocketStream` s; anything else (trio, Unix sockets) is ``fallback``'s, httpcore's own."""

    def __init__(self, fallback: httpcore.AsyncNetworkBackend) -> None:
        self.fallback = fallback

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        """A connection to ``host``:``port`` (see :func:`connect_tcp`)."""
        if sniffio.current_async_library() != "asyncio":
            return await self.fallback.connect_tcp(host, port, timeout, local_address, socket_options)
        return await connect_tcp(host, port, timeout, local_address, socket_options)

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        """``fallback``'s connection to the Unix socket ``path``."""
        return await self.fallback.connect_unix_socket(path, timeout, socket_options)

    async def sleep(self, seconds: float) -> None:
        """``fallback``'s sleep."""
        await self.fallback.sleep(seconds)


def _said(exc: BaseException) -> str:
    """What an error of the socket or of TLS says, for the httpcore error it becomes: its class's name when
    it says nothing (a bare ``BrokenPipeError()``, an ``SSLEOFError`` raised without words)."""
    return str(exc) or type(exc).__name__


def _readable(sock: socket.socket) -> bool:
    """Whether ``sock`` has something to read (or is closed): for an idle connection, that the agent hung
    up or wrote out of turn, so that httpcore drops it rather than send the next run on it."""
    if sock.fileno() < 0:
        return True
    if hasattr(select, "poll"):  # (``select.select`` refuses descriptors past FD_SETSIZE, 1024)
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([sock], [], [], 0)[0])


class SocketStream(httpcore.AsyncNetworkStream):
    """A connected non-blocking socket, read and written through the running loop; a write that fails
    leaves it open, so what the agent sent before it hung up is still read."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """At most ``max_bytes`` of what the agent sent (``b""``: it closed).

        Raises:
            httpcore.ReadTimeout: nothing came within ``timeout``.
            httpcore.ReadError: the connection failed (a reset).
        """
        try:
            with anyio.fail_after(timeout):
                return await asyncio.get_running_loop().sock_recv(self.sock, max_bytes)
        except TimeoutError as exc:
            raise httpcore.ReadTimeout(f"nothing to read within {timeout}s") from exc
        except OSError as exc:
            raise httpcore.ReadError(_said(exc)) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        """Send all of ``buffer``.

        Raises:
            httpcore.WriteTimeout: the agent took none of it for ``timeout``.
            httpcore.WriteError: the connection failed (the agent closed or reset it).
        """
        if not buffer:
            return
        try:
            with anyio.fail_after(timeout):
                await asyncio.get_running_loop().sock_sendall(self.sock, buffer)
        except TimeoutError as exc:
            raise httpcore.WriteTimeout(f"the agent took nothing for {timeout}s") from exc
        except OSError as exc:
            raise httpcore.WriteError(_said(exc)) from exc

    async def aclose(self) -> None:
        """Close the socket (what TLS would say at the end is not said: httpcore's streams do not say it)."""
        self.sock.close()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        """This connection with TLS, after its handshake (the socket is closed when that fails).

        Raises:
            httpcore.ConnectTimeout: the handshake was not over within ``timeout``.
            httpcore.ConnectError: it failed (a certificate refused, an alert, the agent hung up).
        """
        tls = TLSStream(self, ssl_context, server_hostname)
        try:
            with anyio.fail_after(timeout):
                await tls.act(tls.ssl_object.do_handshake)
        except TimeoutError as exc:
            self.sock.close()
            raise httpcore.ConnectTimeout(f"the TLS handshake was not over within {timeout}s") from exc
        except (OSError, httpcore.ReadError, httpcore.WriteError) as exc:  # (ssl.SSLError is an OSError)
            self.sock.close()
            raise httpcore.ConnectError(_said(exc)) from exc
        except BaseException:
            self.sock.close()
            raise
        return tls

    def get_extra_info(self, info: str) -> Any:
        """What httpcore asks of a connection: its socket, addresses, and whether it is readable."""
        if info == "socket":
            return self.sock
        if info in ("client_addr", "server_addr"):
            try:
                return self.sock.getsockname() if info == "client_addr" else self.sock.getpeername()
            except OSError:
                return None
        if info == "is_readable":
            return _readable(self.sock)
        return None


class TLSStream(httpcore.AsyncNetworkStream):
    """TLS over a :class:`SocketStream`, by an ``ssl.SSLObject`` (the handshake not yet done: see
    :meth:`SocketStream.start_tls`): a failed write stops the writing only, so the agent's answer
    already on its way is still read and deciphered."""

    def __init__(self, plain: SocketStream, ssl_context: ssl.SSLContext, server_hostname: str | None) -> None:
        self.plain = plain
        #: The socket's bytes in, and out, as the TLS object reads and writes them.
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self.ssl_object = ssl_context.wrap_bio(self._incoming, self._outgoing, server_side=False,
                                               server_hostname=server_hostname)
        #: A write failed: TLS's records are numbered, so nothing more can be sent.
        self._write_failed: httpcore.WriteError | None = None

    async def act(self, operation: Callable[..., T], *args: Any, deciphers: bool = False) -> T:
        """Run ``operation`` of the TLS object until it is done, sending what it writes and feeding it what
        the socket reads as it asks. With ``deciphers`` (a read), what the operation returned is returned
        even when sending what TLS wrote beside it failed: the failure is kept for the next write.

        Raises:
            httpcore.ReadError, httpcore.ReadTimeout: reading the socket failed.
            httpcore.WriteError, httpcore.WriteTimeout: sending what the operation wrote failed.
            ssl.SSLError: TLS refused what came (a certificate, an alert, a broken record).
        """
        while True:
            try:
                result = operation(*args)
            except ssl.SSLWantReadError:
                # What the object wrote goes first: the agent may wait for it before it answers. If
                # that fails, the reading goes on: the agent may have answered and hung up before it
                # took the request, and the answer is on its way (the write's caller hears of it).
                try:
                    await self._flush()
                except httpcore.WriteError:
                    pass
                if self._incoming.eof:  # (the end was fed already: asking again must not spin)
                    raise ssl.SSLEOFError(ssl.SSL_ERROR_EOF, "the connection ended") from None
                data = await self.plain.read(_READ_SIZE)
                if data:
                    self._incoming.write(data)
                else:
                    self._incoming.write_eof()
            else:
                try:
                    await self._flush()
                except httpcore.WriteError:
                    # What TLS wrote beside a read (the reply a TLS 1.3 key update asks for, a certificate the
                    # agent asked for after the handshake) did not go: the agent hung up. What the read
                    # deciphered came before that and is the answer's; dropped, the run lost its end. The
                    # failure is kept (``_write_failed``) for the next write; the next read hears the
                    # connection's end from the socket.
                    if not deciphers:
                        raise
                return result

    async def _flush(self) -> None:
        if self._outgoing.pending and self._write_failed is None:
            try:
                await self.plain.write(self._outgoing.read())
            except httpcore.WriteError as exc:
                self._write_failed = exc
                raise

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """At most ``max_bytes`` of the answer, deciphered (``b""``: the agent ended, with TLS's
        ``close_notify`` or without it).

        Raises:
            httpcore.ReadTimeout: nothing came within ``timeout``.
            httpcore.ReadError: the connection failed, or TLS refused what came.
        """
        try:
            with anyio.fail_after(timeout):
                return await self.act(self.ssl_object.read, max_bytes, deciphers=True)
        except TimeoutError as exc:
            raise httpcore.ReadTimeout(f"nothing to read within {timeout}s") from exc
        except ssl.SSLEOFError:
            return b""  # (a ragged end: the framing above says whether the answer was whole)
        except (ssl.SSLError, httpcore.WriteError, httpcore.WriteTimeout) as exc:
            # (a write the read needed failing before anything was deciphered is the connection failing)
            raise httpcore.ReadError(_said(exc)) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        """Send all of ``buffer``, enciphered.

        Raises:
            httpcore.WriteTimeout: the agent took none of it for ``timeout``.
            httpcore.WriteError: the connection failed, now or at an earlier write.
        """
        if not buffer:
            return
        if self._write_failed is not None:
            raise httpcore.WriteError("an earlier write failed") from self._write_failed
        try:
            with anyio.fail_after(timeout):
                await self.act(self.ssl_object.write, buffer)
        except TimeoutError as exc:
            raise httpcore.WriteTimeout(f"the agent took nothing for {timeout}s") from exc
        except (ssl.SSLError, httpcore.ReadError, httpcore.ReadTimeout) as exc:
            raise httpcore.WriteError(_said(exc)) from exc

    async def aclose(self) -> None:
        """Close the socket, without TLS's ``close_notify`` (as httpcore's streams)."""
        await self.plain.aclose()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        """TLS within TLS (a proxy's tunnel over TLS) is not done here.

        Raises:
            httpcore.ConnectError: always.
        """
        raise httpcore.ConnectError("TLS within TLS is not supported on these connections")

    def get_extra_info(self, info: str) -> Any:
        """As :meth:`SocketStream.get_extra_info`, and the TLS object (``ssl_object``); readable also when
        the TLS object holds bytes the socket gave it that no read took yet."""
        if info == "ssl_object":
            return self.ssl_object
        if info == "is_readable" and (self._incoming.pending or self.ssl_object.pending()):
            # (a read deciphers one record at a time: what came in the same segment after the answer's
            # last record waits here, not in the socket, and on a connection taken again the next run
            # would read it as its answer: an agent's forged second answer, or its close_notify)
            return True
        return self.plain.get_extra_info(info)
