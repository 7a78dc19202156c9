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

So on asyncio the shards' connections are these instead: the non-blocking socket read and written
directly, on the loop's reader and writer when it would block (:class:`SocketStream`), which leaves it
open and readable when a write fails, and TLS done here with an ``ssl.SSLObject``, whose reading goes
on after its writing failed. Each act raises httpcore's own errors, as httpcore's backends do; a TLS
record the client refuses (a fatal alert, a corrupted record) is a ``ReadError`` like any other read
that failed, where anyio's stream let a bare ``ssl.SSLError`` escape to the caller. An end without
TLS's ``close_notify`` (a "ragged" end) reads as the end, as Python's blocking TLS sockets read it: the
agent's framing and the run's terminal event say whether the answer was whole, not TLS.

Under trio (where ``asyncio`` is not running), and on an asyncio loop that cannot wait on a socket
(its ``add_reader`` raises ``NotImplementedError``, as Windows' proactor loop's does), httpcore's own
backend serves, unchanged.
"""

from __future__ import annotations

import asyncio
import errno
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


def _waits_on_sockets(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether ``loop`` can wait on a socket (``add_reader`` and ``add_writer``), asked once per kind of loop.

    Windows' proactor loop cannot, nor can a loop of an application's that leaves them out: asyncio's
    own answer is ``NotImplementedError``, which met a run halfway through (its request sent) instead
    of choosing httpcore's connections, which need neither. Asked on a pair of sockets of its own.
    """
    kind = type(loop)
    known = _WAITS_ON_SOCKETS.get(kind)
    if known is None:
        mine, theirs = socket.socketpair()
        known = True
        try:
            for add, remove in ((loop.add_reader, loop.remove_reader), (loop.add_writer, loop.remove_writer)):
                try:
                    add(mine.fileno(), _nothing)
                except NotImplementedError:
                    known = False
                    break
                remove(mine.fileno())
        finally:
            mine.close()
            theirs.close()
        _WAITS_ON_SOCKETS[kind] = known
    return known


def _nothing() -> None:
    """(The callback of the wait :func:`_waits_on_sockets` sets and takes off at once.)"""


#: What :func:`_waits_on_sockets` found, by the loop's class.
_WAITS_ON_SOCKETS: dict[type[asyncio.AbstractEventLoop], bool] = {}


class SocketBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend for the async shards: on asyncio, TCP connections are
    :class:`SocketStream` s; anything else (trio, Unix sockets, a loop that cannot wait on a socket,
    :func:`_waits_on_sockets`) is ``fallback``'s, httpcore's own."""

    def __init__(self, fallback: httpcore.AsyncNetworkBackend) -> None:
        self.fallback = fallback

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        """A connection to ``host``:``port`` (see :func:`connect_tcp`)."""
        if sniffio.current_async_library() != "asyncio" or not _waits_on_sockets(asyncio.get_running_loop()):
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


def _read_timeout(timeout: float | None) -> httpcore.ReadTimeout:
    """The error a read that waited ``timeout`` for nothing raises, on a plain connection or a TLS one."""
    return httpcore.ReadTimeout(f"nothing to read within {timeout}s")


def _write_timeout(timeout: float | None) -> httpcore.WriteTimeout:
    """The error a write the agent did not take all of within ``timeout`` raises, plain or TLS."""
    return httpcore.WriteTimeout(f"the agent did not take the request within {timeout}s")


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


def _until(timeout: float | None) -> float | None:
    """The loop's time ``timeout`` seconds from now (``None``: no timeout): every wait of one act ends there."""
    return None if timeout is None else asyncio.get_running_loop().time() + timeout


def _resolve(ready: asyncio.Future[bool], value: bool) -> None:
    if not ready.done():
        ready.set_result(value)


class SocketStream(httpcore.AsyncNetworkStream):
    """A connected non-blocking socket, read and written through the running loop; a write that fails
    leaves it open, so what the agent sent before it hung up is still read.

    A read or a write is first tried at once, and waits only when the socket would block: then on the
    loop's reader or writer and one future, with a timer on that future when there is a timeout. At full
    speed the bytes are mostly there already and a read costs the ``recv`` alone; an ``anyio`` cancel
    scope around each (what these connections had at first) cost more than the ``recv`` and the wait
    together (BENCHMARKS.md, nineteenth round). A timeout resolves the future, it cancels nothing, so a
    cancellation from outside stays the caller's own and is never taken for a timeout, nor a timeout
    for a cancellation.
    """

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        #: The wait on the loop's reader (``False``) or writer (``True``) under way, with the descriptor it
        #: waits on: :meth:`close` takes it off the loop before the socket's descriptor is freed.
        self._waits: dict[bool, tuple[int, asyncio.Future[bool]]] = {}

    async def _ready(self, writing: bool, at: float | None) -> None:
        """Wait until the socket can be read (or written, ``writing``).

        Raises:
            TimeoutError: it could not by the loop's time ``at``.
            OSError: the socket was closed meanwhile (:meth:`close`).
        """
        loop = asyncio.get_running_loop()
        fd = self.sock.fileno()
        ready: asyncio.Future[bool] = loop.create_future()
        # (the timer first: uvloop's refuses a time that is not a number, and the wait must not be left
        # on the loop by that)
        timer = None if at is None else loop.call_at(at, _resolve, ready, False)
        try:
            (loop.add_writer if writing else loop.add_reader)(fd, _resolve, ready, True)
            self._waits[writing] = (fd, ready)
            if not await ready:
                raise TimeoutError
        finally:
            # (when the socket was closed meanwhile its wait is off the loop already, and the descriptor
            # may be another socket's by now: taken off again, that socket's wait would never end)
            if self._waits.get(writing, (fd, None))[1] is ready:
                del self._waits[writing]
                (loop.remove_writer if writing else loop.remove_reader)(fd)
            if timer is not None:
                timer.cancel()

    def close(self) -> None:
        """Close the socket, ending a read or write waiting on it with ``OSError`` (``EBADF``).

        The wait is taken off the loop first. Left there, it outlived its descriptor: it waited on until
        its timeout (for ever without one), as the closed descriptor never became readable; the next
        socket the process opened under the same number had its own wait taken for that one (asyncio's
        loop kept the old registration, and never watched the new socket), and uvloop aborted the whole
        process.
        """
        waits, self._waits = self._waits, {}
        for writing, (fd, ready) in waits.items():
            loop = ready.get_loop()
            (loop.remove_writer if writing else loop.remove_reader)(fd)
            if not ready.done():
                ready.set_exception(OSError(errno.EBADF, "the connection was closed"))
        self.sock.close()

    async def receive(self, max_bytes: int, at: float | None) -> bytes:
        """At most ``max_bytes`` of what the agent sent (``b""``: it closed), waiting no later than the loop's
        time ``at``.

        Raises:
            TimeoutError: nothing came by then.
            OSError: the connection failed.
        """
        while True:
            try:
                return self.sock.recv(max_bytes)
            except (BlockingIOError, InterruptedError):
                await self._ready(False, at)

    async def send(self, buffer: bytes, at: float | None) -> None:
        """Send all of ``buffer``, waiting no later than the loop's time ``at``.

        Raises:
            TimeoutError: the agent did not take it all by then.
            OSError: the connection failed.
        """
        # ``ENOBUFS`` (the kernel out of buffers, which BSD and macOS may say where Linux would block) is
        # not waited on: the socket's own buffer has room, so the loop's writer would call back at once
        # and the send fail again, a loop spinning until the timeout. It is a failed write, as it is to
        # asyncio's transports (httpcore's own connections) and to the sync client's blocking socket, and
        # like every failed write it is not retried (part of the request may have been read).
        left = memoryview(buffer)
        while left:
            try:
                left = left[self.sock.send(left):]
            except (BlockingIOError, InterruptedError):
                await self._ready(True, at)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """At most ``max_bytes`` of what the agent sent (``b""``: it closed).

        Raises:
            httpcore.ReadTimeout: nothing came within ``timeout``.
            httpcore.ReadError: the connection failed (a reset).
        """
        try:
            return await self.receive(max_bytes, _until(timeout))
        except TimeoutError as exc:
            raise _read_timeout(timeout) from exc
        except OSError as exc:
            raise httpcore.ReadError(_said(exc)) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        """Send all of ``buffer``.

        Raises:
            httpcore.WriteTimeout: the agent did not take it all within ``timeout``.
            httpcore.WriteError: the connection failed (the agent closed or reset it).
        """
        try:
            await self.send(buffer, _until(timeout))
        except TimeoutError as exc:
            raise _write_timeout(timeout) from exc
        except OSError as exc:
            raise httpcore.WriteError(_said(exc)) from exc

    async def aclose(self) -> None:
        """Close the socket (what TLS would say at the end is not said: httpcore's streams do not say it), as
        :meth:`close` does."""
        self.close()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        """This connection with TLS, after its handshake (the socket is closed when that fails).

        Raises:
            httpcore.ConnectTimeout: the handshake was not over within ``timeout``.
            httpcore.ConnectError: it failed (a certificate refused, an alert, the agent hung up).
        """
        tls = TLSStream(self, ssl_context, server_hostname)
        try:
            await tls.act(tls.ssl_object.do_handshake, at=_until(timeout))
        except TimeoutError as exc:
            self.close()
            raise httpcore.ConnectTimeout(f"the TLS handshake was not over within {timeout}s") from exc
        except (OSError, httpcore.WriteError) as exc:  # (ssl.SSLError is an OSError)
            self.close()
            raise httpcore.ConnectError(_said(exc)) from exc
        except BaseException:
            self.close()
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
        #: Why a send of TLS's records stopped short (a failure, a timeout, a cancellation): the records are
        #: numbered and one was cut, so nothing more can be sent.
        self._write_failed: BaseException | None = None

    async def act(self, operation: Callable[..., T], *args: Any, at: float | None, deciphers: bool = False) -> T:
        """Run ``operation`` of the TLS object until it is done, by the loop's time ``at``, sending what it
        writes and feeding it what the socket reads as it asks. With ``deciphers`` (a read), what the
        operation returned is returned even when sending what TLS wrote beside it failed: the failure is
        kept for the next write.

        Raises:
            TimeoutError: not done by ``at``.
            OSError: reading the socket failed; ``ssl.SSLError``, one too: TLS refused what came (a
                certificate, an alert, a broken record).
            httpcore.WriteError: sending what the operation wrote failed.
        """
        while True:
            try:
                result = operation(*args)
            except ssl.SSLWantReadError:
                # What the object wrote goes first: the agent may wait for it before it answers. If
                # that fails, the reading goes on: the agent may have answered and hung up before it
                # took the request, and the answer is on its way (the write's caller hears of it).
                try:
                    await self._flush(at)
                except httpcore.WriteError:
                    pass
                if self._incoming.eof:  # (the end was fed already: asking again must not spin)
                    raise ssl.SSLEOFError(ssl.SSL_ERROR_EOF, "the connection ended") from None
                data = await self.plain.receive(_READ_SIZE, at)
                if data:
                    self._incoming.write(data)
                else:
                    self._incoming.write_eof()
            else:
                try:
                    await self._flush(at)
                except (httpcore.WriteError, TimeoutError):
                    # What TLS wrote beside a read (the reply a TLS 1.3 key update asks for, a certificate
                    # the agent asked for after the handshake) did not go: the agent hung up, or took
                    # nothing more before the act's time ran out. What the read deciphered came before
                    # that and is the answer's; dropped, the run lost its end. The failure is kept
                    # (``_write_failed``) for the next write; the next read hears the connection's end
                    # from the socket.
                    if not deciphers:
                        raise
                return result

    async def _flush(self, at: float | None) -> None:
        """Send what the TLS object wrote, by the loop's time ``at`` (nothing once a send stopped short).

        Raises:
            httpcore.WriteError: the connection failed.
            TimeoutError: the agent did not take it all by ``at``.
        """
        if self._outgoing.pending and self._write_failed is None:
            try:
                await self.plain.send(self._outgoing.read(), at)
            except BaseException as exc:
                # (a record cut short, by whatever stopped the send, would garble every record after it)
                self._write_failed = exc
                if isinstance(exc, OSError) and not isinstance(exc, TimeoutError):
                    raise httpcore.WriteError(_said(exc)) from exc
                raise

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """At most ``max_bytes`` of the answer, deciphered (``b""``: the agent ended, with TLS's
        ``close_notify`` or without it).

        Raises:
            httpcore.ReadTimeout: nothing came within ``timeout``.
            httpcore.ReadError: the connection failed, or TLS refused what came.
        """
        try:
            return await self.act(self.ssl_object.read, max_bytes, at=_until(timeout), deciphers=True)
        except TimeoutError as exc:
            raise _read_timeout(timeout) from exc
        except ssl.SSLEOFError:
            return b""  # (a ragged end: the framing above says whether the answer was whole)
        except OSError as exc:  # (the socket's, or TLS refusing what came: ssl.SSLError is an OSError)
            raise httpcore.ReadError(_said(exc)) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        """Send all of ``buffer``, enciphered.

        Raises:
            httpcore.WriteTimeout: the agent did not take it all within ``timeout``.
            httpcore.WriteError: the connection failed, now or at an earlier write.
        """
        if not buffer:
            return
        if self._write_failed is not None:
            raise httpcore.WriteError("an earlier write failed") from self._write_failed
        try:
            await self.act(self.ssl_object.write, buffer, at=_until(timeout))
        except TimeoutError as exc:
            raise _write_timeout(timeout) from exc
        except OSError as exc:  # (a read the write needed failed, or TLS refused what it read)
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
