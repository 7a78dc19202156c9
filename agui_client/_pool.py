"""The clients' connection pools: httpx's, split into shards of a few dozen connections.

httpx's pool (httpcore's) looks at every connection it holds each time a request arrives and each
time a response closes, and for each idle one counts all the others: with N runs streaming at
once a run's two visits cost O(N) to O(N²) steps, whatever the run reads. Measured by
``python -m bench.concurrency`` (issue 21): at 500 concurrent runs the pool's bookkeeping was a
fifth of the client's CPU. Split into pools of at most ``SHARD_SIZE`` open runs each, a visit costs
O(``SHARD_SIZE``) and the runs' connections are still kept alive for the next runs.

There is also no cap on the number of connections, where httpx's default is 100: an SSE run holds
its connection for as long as it lasts, so a 101st run would wait for a whole run to end, and fail
with a pool timeout after ``timeout`` seconds.

``ShardedTransport`` serves ``AsyncAgentClient`` (runs on one event loop), ``ShardedSyncTransport``
``AgentClient`` (a thread per run).

Their connections also keep a run's overall deadline (``run_timeout``) while the answer's head is
awaited: httpx's read timeout bounds each read, not the head, so an agent sending ``103 Early Hints``
every second, or its head a byte at a time, held a client past its deadline for as long as it liked.
The client sets the deadline (:func:`deadline`) around its send; each read, write and connect of the
shards' connections then waits no longer than what is left of it. What those reads bring before the
head is complete is charged to the run's ``max_run_bytes`` as well: without a deadline (the default),
``103``s without end would keep the send reading for ever.

They keep no cookie an agent sets: every answer they hand up has its ``Set-Cookie`` headers taken
out, so no cookie jar the httpx client holds ever sees one. httpx keeps every cookie an answer sets
and sends them all with every later request, and here that request may be another person's: one
client sends the runs of many users of a web backend, each with its own credential
(``thread.run(headers=...)``), so a session cookie the agent set on one user's run would go out with
the next user's, and the agent might take it for that user's session. An AG-UI run carries all it
needs (the agent may keep nothing between runs), so nothing is lost. It also bounds what an agent can
make the client hold: a thousand new cookies a run once grew a long-lived client's jar, and every
request's ``Cookie`` header, without bound. A cookie jar that refused them (the first way this was
done) held only while it stayed: ``client.http.cookies = {...}`` put httpx's own in its place, which
keeps them. Cookies the application sets itself, in whatever jar, are still sent.

On asyncio, the async shards' connections are the package's own (:class:`~agui_client._sockets.SocketBackend`):
httpcore's there lose an answer the agent sent before a write failed (an agent that answers and hangs
up before taking the whole request), where the sync client's read it; see ``_sockets``.

:func:`own_transport` and :func:`own_async_transport` give the transport a client makes for itself:
the shards, or, where the environment names a proxy for the agent, httpx's own transport through that
proxy (:class:`ProxiedSyncTransport`, :class:`ProxiedTransport`), as httpx would have chosen it.
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
import weakref
from asyncio.trsock import TransportSocket
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx

from ._proxies import environment_proxy
from ._sockets import SocketBackend

try:  # (httpcore's stream over a socket: the one its sync backend hands the pool)
    from httpcore._backends.sync import SyncStream as _SyncStream
except ImportError:  # pragma: no cover - if it moves, connections are opened by httpcore, not woken while opening
    _SyncStream = None  # type: ignore[assignment,misc]

__all__ = ["ShardedTransport", "ShardedSyncTransport", "ProxiedTransport", "ProxiedSyncTransport", "SHARD_SIZE",
           "PROXIED_LIMITS", "deadline", "HeadTooLong", "own_transport", "own_async_transport", "finish_close",
           "finish_sync_close", "SENDER", "wake_requests"]

#: The monotonic time the current run's send must be over by (``None``: no deadline), per thread or task.
_DEADLINE: ContextVar[float | None] = ContextVar("agui_client_send_deadline", default=None)
#: Past the deadline a wait still lasts this long: a socket given no time at all would not time out, it
#: would fail as a non-blocking read (and the time left must be seen as gone when it fires).
_LAST_WAIT = 0.005


#: What is left of the current send's budget of bytes read (one list for all its reads), per thread or task.
_HEAD_BYTES: ContextVar[list[int] | None] = ContextVar("agui_client_head_bytes", default=None)


#: The most bytes httpcore reads at once (``READ_NUM_BYTES``).
_READ_SIZE = 64 * 1024


class HeadTooLong(Exception):
    """The answer's head (with any informational answers before it) went past the send's budget of bytes."""


@contextmanager
def deadline(at: float | None, head_bytes: int | None = None) -> Iterator[None]:
    """Bound every wait of the shards' connections, in this thread or task, by the monotonic time ``at``,
    and what they read by ``head_bytes`` (:class:`HeadTooLong` past it): the send reads the answer's head,
    and an agent sending ``103 Early Hints`` without end would keep it reading for ever."""
    token = _DEADLINE.set(at)
    # (the read that completes the head may hold the start of the body too: one read more is allowed)
    budget = _HEAD_BYTES.set(None if head_bytes is None else [head_bytes + _READ_SIZE])
    try:
        yield
    finally:
        _HEAD_BYTES.reset(budget)
        _DEADLINE.reset(token)


def _charged(data: bytes) -> bytes:
    budget = _HEAD_BYTES.get()
    if budget is not None:
        budget[0] -= len(data)
        if budget[0] < 0:
            raise HeadTooLong()
    return data


def _bounded(timeout: float | None) -> float | None:
    at = _DEADLINE.get()
    if at is None:
        return timeout
    left = max(at - time.monotonic(), 0.0) + _LAST_WAIT
    return left if timeout is None else min(timeout, left)


class _Opening:
    """The sockets of a sync pool's connections still being opened (connecting, or in their TLS handshake),
    so that a client's close wakes a run blocked there, in another OS thread, as :func:`_wake` wakes one
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
    (:meth:`_Backend._connect`): a close that came before that look refuses the connection; one that comes
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
    """A connection whose every wait is :func:`_bounded`, and which reads as closed by the agent once an
    answer on it went on past its end (:func:`_check_end`)."""

    def __init__(self, stream: httpcore.NetworkStream, opening: _Opening) -> None:
        self._stream = stream
        #: An answer on it went on past its end: the pool is not to use it again.
        self.overran = False
        #: Its pool's sockets being opened (its handshake holds its own there).
        self._opening = opening

    # Both refuse once the client was closed: a connection opened as it closed may have come to the pool
    # after :func:`_wake` looked, and nothing shut it down. (httpcore reads for an early answer after a
    # write failed: the read is refused too, or it would wait for the agent.)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if self._opening.closed:
            raise httpcore.ReadError("the client was closed")
        return _charged(self._stream.read(max_bytes, _bounded(timeout)))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if self._opening.closed:
            raise httpcore.WriteError("the client was closed")
        self._stream.write(buffer, _bounded(timeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        raw = self._stream.get_extra_info("socket")
        if type(raw) is not socket.socket:  # (TLS in TLS, a proxy's: not held)
            return _Stream(self._stream.start_tls(ssl_context, server_hostname, _bounded(timeout)), self._opening)
        try:
            spare = socket.socket(raw.family, raw.type, raw.proto, fileno=os.dup(raw.fileno()))
            with self._opening.holding(spare, ours=True):
                secured = self._stream.start_tls(ssl_context, server_hostname, _bounded(timeout))
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


class _Backend(httpcore.NetworkBackend):
    """httpcore's network backend, its connections :class:`_Stream`, opened where a close wakes them
    (:class:`_Opening`)."""

    def __init__(self, backend: httpcore.NetworkBackend) -> None:
        self._backend = backend
        #: The sockets of its connections being opened.
        self.opening = _Opening()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        if _SyncStream is None or type(self._backend) is not httpcore.SyncBackend:
            return _Stream(self._backend.connect_tcp(host, port, _bounded(timeout), local_address, socket_options),
                           self.opening)
        # (httpcore's own connect, but with each socket held while it connects: socket.create_connection,
        # which httpcore calls, makes its sockets where nothing else can reach them)
        try:
            sock = self._connected(host, port, _bounded(timeout), local_address)
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
        return _Stream(self._backend.connect_unix_socket(path, _bounded(timeout), socket_options), self.opening)

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
        return _charged(await self._stream.read(max_bytes, _bounded(timeout)))

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._stream.write(buffer, _bounded(timeout))

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        return _AsyncStream(await self._stream.start_tls(ssl_context, server_hostname, _bounded(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return True if info == "is_readable" and self.overran else self._stream.get_extra_info(info)  # (as _Stream)


class _AsyncBackend(httpcore.AsyncNetworkBackend):
    """:class:`_Backend` for the async transport."""

    def __init__(self, backend: httpcore.AsyncNetworkBackend) -> None:
        self._backend = backend

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        return _AsyncStream(await self._backend.connect_tcp(host, port, _bounded(timeout), local_address,
                                                            socket_options))

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        return _AsyncStream(await self._backend.connect_unix_socket(path, _bounded(timeout), socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


def _bound(transport: httpx.HTTPTransport | httpx.AsyncHTTPTransport) -> None:
    """Give ``transport``'s pool the bounded backend (httpx has no parameter for it: its pool's attribute
    is set; if httpx ever keeps it elsewhere, the transport works as httpx's own, without the bound)."""
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if isinstance(backend, httpcore.NetworkBackend):
        pool._network_backend = _Backend(backend)  # type: ignore[union-attr]
    elif isinstance(backend, httpcore.AsyncNetworkBackend):
        # (on asyncio, connections of the package's own: httpcore's lose an answer sent before a write
        # failed, see ``_sockets``)
        pool._network_backend = _AsyncBackend(SocketBackend(backend))  # type: ignore[union-attr]

#: Open runs per shard (and connections each shard keeps alive between runs). httpcore's pool visits
#: each of its connections on every request and close and, for each idle one, counts them all: a
#: shard's bookkeeping grows as its size squared. Measured at 100 and 500 runs open (BENCHMARKS.md,
#: fifteenth round), shards of 8 gave the client 1.09-1.30x the events per CPU-second of shards of 32.
SHARD_SIZE = 8


def _without_cookies(response: httpx.Response) -> httpx.Response:
    """``response`` with its ``Set-Cookie`` headers taken out (why: the module's docstring), and the
    obsolete ``Set-Cookie2``, which a jar with an RFC 2965 policy still keeps. Once per answer, never
    per event."""
    headers = response.headers
    for name in _COOKIE_SETTERS:
        if name in headers:
            del headers[name]
    return response


#: The response headers that set a cookie.
_COOKIE_SETTERS = ("set-cookie", "set-cookie2")


def _check_end(body: httpx.SyncByteStream | httpx.AsyncByteStream, network: object) -> None:
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


async def finish_close(response: httpx.Response) -> None:
    """Finish the close of ``response`` when httpcore's was cut short: its connection closed, its place
    in the pool given back.

    httpcore closes an answer whose reading failed (a cancellation too) itself, marking it closed first;
    a second ``Task.cancel()`` that comes while it does so (anyio's shield, which it closes under, does
    not hold off asyncio's own) stops it there, and every later close finds the answer closed already.
    Cut while the connection let go of the answer, the connection stays active for good, a request of
    nobody's; cut after, the answer's request stays counted in the pool. The first is closed (it is in
    the middle of an answer), then httpcore's close of the second runs again. Every attribute read here
    is httpcore's private one, read with a default (as ``_TO_THE_PARSER``): if one moves, nothing is done.
    """
    connection, stream = _cut_close(response, (httpcore.AsyncHTTP11Connection, httpcore.AsyncHTTP2Connection))
    if connection is not None:
        await connection.aclose()
    if stream is not None:
        setattr(stream, _CLOSED, False)  # (httpcore's close skips a closed one)
        await stream.aclose()


def finish_sync_close(response: httpx.Response) -> None:
    """:func:`finish_close` for the sync client: there a second Ctrl-C cuts httpcore's close short as a
    second cancellation does (a ``KeyboardInterrupt`` while httpcore closes an answer whose read the first
    one ended)."""
    connection, stream = _cut_close(response, (httpcore.HTTP11Connection, httpcore.HTTP2Connection))
    if connection is not None:
        connection.close()
    if stream is not None:
        setattr(stream, _CLOSED, False)
        stream.close()


def _cut_close(response: httpx.Response, kinds: tuple[type[Any], ...]) -> tuple[Any, Any]:
    """What a cut close of ``response`` left (see :func:`finish_close`): the connection of one of ``kinds``
    still in the middle of its answer, and httpcore's pool stream whose request the pool still counts
    (each ``None`` when there is none)."""
    stream: Any = response.stream
    for _ in range(4):  # (httpx's bound stream, a shard's count, httpx's transport stream: to httpcore's pool's)
        if hasattr(stream, _POOL_REQUEST):
            break
        stream = getattr(stream, _STREAM, None) or getattr(stream, "_httpcore_stream", None)
    request = getattr(stream, _POOL_REQUEST, None)
    requests = getattr(getattr(stream, _POOL, None), _REQUESTS, None)
    if request is None or not isinstance(requests, list):
        return None, None
    connection: Any = getattr(getattr(stream, _STREAM, None), _CONNECTION, None)  # (the HTTP/1.1 one)
    taken = any(getattr(getattr(other, "connection", None), _CONNECTION, None) is connection
                for other in requests if other is not request)
    cut = isinstance(connection, kinds) and not taken and not connection.is_idle() and not connection.is_closed()
    return (connection if cut else None), (stream if request in requests else None)


#: httpcore's private attributes ``finish_close`` reads, each with a default: a pool stream's request,
#: pool and connection stream, a pool's requests, a connection stream's (or a pool connection's) HTTP/1.1
#: connection, a pool stream's mark of a close begun.
_POOL_REQUEST, _POOL, _STREAM, _REQUESTS, _CONNECTION, _CLOSED = (
    "_pool_request", "_pool", "_stream", "_requests", "_connection", "_closed")


#: From httpx's answer body to the h11 parser of its connection: httpcore's pool stream, the connection's
#: stream, the HTTP/1.1 connection, its h11 state. All httpx's and httpcore's private attributes, each read
#: with a default: if one moves, nothing is found and nothing raised, and the connection is kept as httpx
#: keeps it, not checked (its idle check still drops one whose rest came in a later read).
_TO_THE_PARSER = ("_httpcore_stream", "_stream", "_connection", "_h11_state")


class _Shard:
    __slots__ = ("transport", "open")

    def __init__(self, transport: httpx.AsyncHTTPTransport | httpx.HTTPTransport) -> None:
        self.transport = transport
        self.open = 0


class _Counted(httpx.AsyncByteStream):
    """A response body that gives its shard's place back when it is closed (once)."""

    __slots__ = ("_stream", "_shard", "_network")

    def __init__(self, stream: httpx.AsyncByteStream, shard: _Shard, network: object) -> None:
        self._stream = stream
        self._shard: _Shard | None = shard
        #: The connection it came on (httpx's ``network_stream`` extension).
        self._network = network

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._stream.__aiter__()

    async def aclose(self) -> None:
        shard, self._shard = self._shard, None
        if shard is not None:
            shard.open -= 1
            _check_end(self._stream, self._network)  # (before httpcore puts the connection back)
        await self._stream.aclose()


def _one_context(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with their TLS settings made into the one ``ssl.SSLContext`` every shard uses.

    httpx makes a context for each transport it builds, loading the CA bundle each time: 22-43 ms of
    the event loop on a 2-core machine, for plain HTTP too, paid by the run that opened each new shard
    (every eighth concurrent run of a backend). One context serves every connection of every shard, as
    it serves every connection of one pool. Given a context already, ``options`` are returned as they are.
    """
    if isinstance(options.get("verify"), ssl.SSLContext):
        return options
    verify, cert, trust_env = options.get("verify", True), options.get("cert"), options.get("trust_env", True)
    if verify is True and cert is None:
        context = _default_context(bool(trust_env), bool(options.get("http2", False)))
    else:
        context = httpx.create_ssl_context(verify=verify, cert=cert, trust_env=trust_env)
    return {**{name: value for name, value in options.items() if name != "cert"}, "verify": context}


#: The default TLS contexts made so far, by what makes one differ (:func:`_default_context`).
_DEFAULT_CONTEXTS: dict[tuple[object, ...], ssl.SSLContext] = {}
_DEFAULT_CONTEXTS_LOCK = threading.Lock()


def _default_context(trust_env: bool, http2: bool) -> ssl.SSLContext:
    """The process's one context for the default TLS settings (the CA bundle httpx trusts, or the one
    ``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` names when the environment is trusted).

    Each client made its own, loading the bundle again (22-55 ms, for plain HTTP too, at a client's first
    run): a script or a backend making a client per request paid it every time. A context is shared only
    by connections that set it alike: httpcore sets its ALPN protocols at each TLS connect, from the
    transport's ``http2``, so that is part of the key, as are the environment's names. A bundle changed on
    disk while the process runs is read by clients of the next process (or give ``verify`` a context).
    """
    named = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")) if trust_env else (None, None)
    key = (trust_env, http2, *named)
    with _DEFAULT_CONTEXTS_LOCK:
        context = _DEFAULT_CONTEXTS.get(key)
        if context is None:
            context = _DEFAULT_CONTEXTS[key] = httpx.create_ssl_context(trust_env=trust_env)
        return context


class ShardedTransport(httpx.AsyncBaseTransport):
    """An ``httpx.AsyncHTTPTransport`` per ``SHARD_SIZE`` open runs; a request goes to the first
    shard with room (so a few runs share one shard's kept-alive connections, as with one pool).

    ``options`` are passed to every shard's ``httpx.AsyncHTTPTransport`` (``verify``, ``cert``,
    ``trust_env``, ``retries`` …); ``limits`` is set here.
    """

    def __init__(self, shard_size: int = SHARD_SIZE, **options: Any) -> None:
        self.shard_size = shard_size
        self._options = options
        self._shards: list[_Shard] = []
        self._closed = False
        _FORKABLE.add(self)

    def _forked(self) -> None:
        # (see _after_fork: their connections are for the loop of the parent, closed with it; dropped)
        self._shards = []

    def _shard(self, request: httpx.Request) -> _Shard:
        if self._closed:  # (see ShardedSyncTransport._take)
            raise httpx.ConnectError("the client was closed", request=request)
        for shard in self._shards:
            if shard.open < self.shard_size:
                return shard
        self._options = _one_context(self._options)
        shard = _Shard(httpx.AsyncHTTPTransport(
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=self.shard_size), **self._options))
        _bound(shard.transport)
        self._shards.append(shard)
        return shard

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        shard = self._shard(request)
        shard.open += 1
        try:
            assert isinstance(shard.transport, httpx.AsyncHTTPTransport)
            response = await shard.transport.handle_async_request(request)
        except BaseException:
            shard.open -= 1
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _Counted(response.stream, shard, response.extensions.get("network_stream"))
        return _without_cookies(response)

    async def aclose(self) -> None:
        """Close every shard; a request sent from now on is refused (``httpx.ConnectError``)."""
        self._closed = True
        shards, self._shards = self._shards, []
        for shard in shards:
            assert isinstance(shard.transport, httpx.AsyncHTTPTransport)
            await shard.transport.aclose()


class _CountedSync(httpx.SyncByteStream):
    """:class:`_Counted` for the sync transport (the count under the transport's lock)."""

    __slots__ = ("_stream", "_shard", "_lock", "_network")

    def __init__(self, stream: httpx.SyncByteStream, shard: _Shard, lock: threading.Lock, network: object) -> None:
        self._stream = stream
        self._shard: _Shard | None = shard
        self._lock = lock
        self._network = network

    def __iter__(self) -> Iterator[bytes]:
        return self._stream.__iter__()

    def close(self) -> None:
        with self._lock:
            shard, self._shard = self._shard, None
            if shard is not None:
                shard.open -= 1
        if shard is not None:
            _check_end(self._stream, self._network)
        self._stream.close()


class ShardedSyncTransport(httpx.BaseTransport):
    """:class:`ShardedTransport` for ``httpx.Client`` (a thread per run), safe across threads."""

    def __init__(self, shard_size: int = SHARD_SIZE, **options: Any) -> None:
        self.shard_size = shard_size
        self._options = options
        self._shards: list[_Shard] = []
        self._lock = threading.Lock()
        self._closed = False
        _FORKABLE.add(self)

    def _forked(self) -> None:
        # (see _after_fork) Closing a descriptor the parent shares sends nothing: its connection stays open.
        # The lock is made anew: a thread of the parent may have held it at the fork, and is not here.
        # For the same reason no pool is closed through httpx (httpcore's close takes the pool's lock, which
        # such a thread may hold for ever in the child): each connection is closed itself, which takes none.
        shards, self._shards = self._shards, []
        self._lock = threading.Lock()
        for shard in shards:
            _close_kept(shard.transport)

    def _take(self, request: httpx.Request) -> _Shard:
        with self._lock:
            if self._closed:
                # (httpx looks at its client's state a few calls before: a close landing in between would
                # leave this run a shard of its own, made after the close and never closed, its connection
                # opened and read for a closed client)
                raise httpx.ConnectError("the client was closed", request=request)
            for shard in self._shards:
                if shard.open < self.shard_size:
                    break
            else:
                self._options = _one_context(self._options)
                shard = _Shard(httpx.HTTPTransport(
                    limits=httpx.Limits(max_connections=None, max_keepalive_connections=self.shard_size),
                    **self._options))
                _bound(shard.transport)
                self._shards.append(shard)
            shard.open += 1
            return shard

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        shard = self._take(request)
        try:
            assert isinstance(shard.transport, httpx.HTTPTransport)
            response = shard.transport.handle_request(request)
        except BaseException:
            with self._lock:
                shard.open -= 1
            raise
        assert isinstance(response.stream, httpx.SyncByteStream)
        response.stream = _CountedSync(response.stream, shard, self._lock, response.extensions.get("network_stream"))
        return _without_cookies(response)

    def close(self) -> None:
        """Close every shard, first waking the runs blocked in a read of one (:func:`_wake`); a request
        sent from now on is refused (``httpx.ConnectError``), not given a shard of its own."""
        with self._lock:
            self._closed = True
            shards, self._shards = self._shards, []
        for shard in shards:
            assert isinstance(shard.transport, httpx.HTTPTransport)
            _wake(shard.transport)
            shard.transport.close()


class ProxiedTransport(httpx.AsyncHTTPTransport):
    """httpx's own async transport, for an agent the environment's proxy serves: its answers come without
    their ``Set-Cookie`` headers, as the shards' do."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._options = options
        _FORKABLE.add(self)

    def _forked(self) -> None:
        # (see _after_fork) A pool of its own, made as the first was; the parent's, for the parent's loop,
        # is dropped, as the shards' are.
        super().__init__(**self._options)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """httpx's answer, without the agent's cookies."""
        return _without_cookies(await super().handle_async_request(request))


class ProxiedSyncTransport(httpx.HTTPTransport):
    """:class:`ProxiedTransport` for ``httpx.Client``."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._options = options
        _FORKABLE.add(self)

    def _forked(self) -> None:
        # (see _after_fork and ShardedSyncTransport._forked) The parent's connections to the proxy closed
        # here, without the pool's lock; then a pool of its own, made as the first was (its lock new).
        _close_kept(self)
        super().__init__(**self._options)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """httpx's answer, without the agent's cookies."""
        return _without_cookies(super().handle_request(request))

    def close(self) -> None:
        """httpx's close, first waking the runs blocked in a read (:func:`_wake`)."""
        _wake(self)
        super().close()


#: The limits of httpx's own pool where a proxy serves the agent (the shards' per shard, for one pool).
PROXIED_LIMITS = httpx.Limits(max_connections=None, max_keepalive_connections=SHARD_SIZE)


#: The transports this module made in this process, each told when the process forks (:func:`_after_fork`).
_FORKABLE: weakref.WeakSet[ShardedTransport | ShardedSyncTransport | ProxiedTransport | ProxiedSyncTransport] = \
    weakref.WeakSet()


def _close_kept(transport: httpx.HTTPTransport | httpx.AsyncHTTPTransport) -> None:
    """In a forked child: close each connection ``transport``'s (sync) pool kept, its socket only (nothing is sent,
    the parent's connection stays open), without the pool's lock, which a thread of the parent may have
    held at the fork (httpx's close takes it: the child would wait for it for ever). httpcore's private
    attributes, read with defaults: if they move, nothing is closed (the pool is dropped all the same)."""
    for connection in list(getattr(getattr(transport, "_pool", None), "_connections", ())):
        connection.close()


def _wake(transport: httpx.HTTPTransport) -> None:
    """Shut down the socket of each connection ``transport``'s pool holds, so that a run blocked in a read of
    one, in another OS thread, wakes now: closing a socket does not wake a read another thread is blocked
    in (it waited for its ``idle_timeout``), shutting it down does (the read sees the connection end, as
    when the agent cuts it). For a client's own close only, never in a forked child: a socket shut down is
    shut for every process holding it, and a child's copies are the parent's (:func:`_close_kept` closes
    them, which sends nothing). The raw socket's shutdown, under TLS too: the ``ssl`` module's own would
    unwrap the socket under the other thread's read (a ``ValueError``, where the read should see the end).
    httpcore's private attributes, read with defaults (as :func:`_close_kept`): if they move, nothing is
    shut down, and the close is httpx's own.

    A run still opening its connection (its connect, its TLS handshake) is woken by the pool's backend,
    a shard's (:class:`_Opening`): the pool holds its connection, but no socket of it yet. It goes first,
    so that a connection opened while the close looks at the pool's is refused before it is written to."""
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if isinstance(backend, _Backend):
        backend.opening.wake()
    for connection in list(getattr(pool, "_connections", ())):
        _shut_down(connection)


def _shut_down(connection: object) -> None:
    """Shut down the socket of ``connection``, a pool's (a proxy's holds the HTTP connection, which holds the
    HTTP/1.1 or HTTP/2 one): the raw socket's shutdown, under TLS too (see :func:`_wake`)."""
    for _ in range(3):
        if hasattr(connection, "_network_stream"):
            break
        connection = getattr(connection, _CONNECTION, None)
    stream = getattr(connection, "_network_stream", None)
    sock = stream.get_extra_info("socket") if stream is not None else None
    with contextlib.suppress(OSError):  # (not connected, or closed already: nothing to wake)
        if isinstance(sock, socket.socket):
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        elif isinstance(sock, TransportSocket):  # (asyncio's view of its transport's socket: an async pool's)
            sock.shutdown(socket.SHUT_RDWR)


#: The request extension marking a run's request with its client's token (``ClientBase.sender``): how the
#: close of a client given its ``http_client`` finds its own runs in that client's pool (:func:`wake_requests`).
SENDER = "agui_client.sender"


def wake_requests(transport: object, sender: object) -> None:
    """Shut down the connection of each request ``transport``'s pool serves for ``sender`` (its :data:`SENDER`
    extension), and of no other, as :func:`_wake` does all of a pool's.

    The close of an ``AgentClient`` given its ``http_client`` closes nothing of it: the httpx client is the
    caller's, and may send other code's requests too. Its own runs, though, are to end with it, at once,
    not when the agent next sends or their ``idle_timeout`` passes: each one's connection, and only that,
    is shut down; httpx then drops it from the pool as it drops a connection the agent cut. A run still
    opening its connection there (its connect, its TLS handshake) has none the pool holds yet: an async
    run is cancelled there by its client (``_async/client_io.Opening``), a sync one waits out its connect
    timeout. So does one whose connection also carries a request of someone else's (an HTTP/2 connection
    serves several at once): shutting it down would end theirs too. httpcore's private attributes, read
    with defaults: if they move, nothing is shut down."""
    ours: list[object] = []
    shared: set[int] = set()  # (the connections of other senders' requests, by id: they stay open)
    for waiting in list(getattr(getattr(transport, "_pool", None), _REQUESTS, ())):
        connection = getattr(waiting, "connection", None)
        extensions = getattr(getattr(waiting, "request", None), "extensions", None)
        if isinstance(extensions, dict) and extensions.get(SENDER) is sender:
            ours.append(connection)
        else:
            shared.add(id(connection))
    for connection in ours:
        if id(connection) not in shared:
            _shut_down(connection)


def _after_fork() -> None:
    """In a forked child, before it runs anything else: every transport lets go of its parent's connections.

    The child's copy of a pool held the parent's sockets: a run of the child went out on a connection the
    parent was using, or would use next, and each read the other's answer (another process's run taken
    for its own), or a request waited behind the other's for ever. The child opens its own connections.
    """
    for transport in list(_FORKABLE):
        transport._forked()


if hasattr(os, "register_at_fork"):  # (POSIX; Windows does not fork)
    os.register_at_fork(after_in_child=_after_fork)


def own_async_transport(url: str) -> httpx.AsyncBaseTransport:
    """The transport a client makes for itself to send ``url``'s runs: :class:`ShardedTransport`, or, when
    the environment names a proxy for ``url``, :class:`ProxiedTransport` through it.

    httpx reads the environment's proxies only for a client made without a transport, so the proxy it
    would have used for ``url`` is given here (redirects are followed to the same origin only, so every
    request the client sends goes where ``url`` goes). The proxy keeps httpx's own pool, with
    :data:`PROXIED_LIMITS`.
    """
    proxy = environment_proxy(url)
    if proxy is not None:
        return ProxiedTransport(proxy=proxy, limits=PROXIED_LIMITS)
    return ShardedTransport()


def own_transport(url: str) -> httpx.BaseTransport:
    """:func:`own_async_transport` for ``httpx.Client``; also what the CLI's recorder wraps, so that a
    recording client keeps the run's deadline, the head's byte budget and the dropped cookies."""
    proxy = environment_proxy(url)
    if proxy is not None:
        return ProxiedSyncTransport(proxy=proxy, limits=PROXIED_LIMITS)
    return ShardedSyncTransport()
