"""httpcore network backends on plain asyncio, for measuring (issue 21): not the package's.

Until the eighteenth round the package's async shards read through httpcore's ``AutoBackend`` (anyio on
asyncio): every read and write entered an ``anyio.fail_after`` cancel scope and went through anyio's
socket stream, and every idle connection the pool visited was asked ``is_readable``, which on anyio
builds the stream's whole ``extra_attributes`` dict (and a ``poll()`` system call). The fifteenth round
measured two replacements here, plain asyncio:

* :class:`ProtocolBackend` (``asyncio-protocol``): an ``asyncio.Protocol`` keeps what the event loop
  received; a read takes what is buffered without waiting (joined, up to ``max_bytes``) or waits on a
  future the protocol resolves. A timeout is a ``call_later`` on that future. Reading pauses past
  ``HIGH_WATER`` buffered bytes (a server sending faster than the client folds is held in the kernel,
  not in memory); ``is_readable`` is "something or end of stream is buffered", no system call.
* :class:`SocketBackend` (``asyncio-sock``): a non-blocking socket, ``recv()`` tried first, and only
  when it would block a one-shot ``add_reader`` and a future (what ``loop.sock_recv`` does, without
  its wrapping coroutine).

Since the eighteenth round the package's shards connect on asyncio through its own
``agui_client._sockets`` (TLS by an ``ssl.SSLObject``; since the nineteenth round its socket is read and
written as ``asyncio-sock`` does, with a ``call_at`` timer on the wait for a timeout, where the eighteenth
put each act in an ``anyio.fail_after`` scope around ``loop.sock_recv``/``sock_sendall``): that is what
``--agui-http own`` measures now.
So that the connections the package had before stay measurable beside it, ``anyio`` here is httpcore's
``AnyIOBackend`` (what its ``AutoBackend`` picks on asyncio) put back under the shards.

No TLS in the two bench backends: ``start_tls`` raises (``bench.loadserver`` speaks plain HTTP on
127.0.0.1); what adopting such a backend would take is in BENCHMARKS.md (fifteenth round). The timeouts
map to httpcore's exceptions (``ConnectTimeout``, ``ReadTimeout``, ``WriteTimeout``; ``ConnectError``,
``ReadError``, ``WriteError`` for the rest) as ``AnyIOBackend`` maps them.

:func:`use_backend` puts one under a client's own ``ShardedTransport`` (its shards, its deadline and
head budget kept: the backend replaces only what the shards' bounded wrapper wraps, the package's own
connections included).
"""

from __future__ import annotations

import asyncio
import collections
import ipaddress
import select
import socket
import ssl
from collections.abc import Callable, Iterable
from typing import Any

import httpcore
import httpx

__all__ = ["BACKENDS", "ProtocolBackend", "SocketBackend", "use_backend", "sharded_client"]

#: Past this many buffered bytes the protocol stops reading the socket (the kernel holds the rest).
HIGH_WATER = 256 * 1024
#: ... and reads again once a read has brought the buffer under this.
LOW_WATER = 64 * 1024


def _resolve(fut: asyncio.Future[bool], value: bool) -> None:
    if not fut.done():
        fut.set_result(value)


async def _wait(fut: asyncio.Future[bool], timeout: float | None) -> bool:
    """``True`` when ``fut`` was resolved by the connection, ``False`` when ``timeout`` passed first."""
    if timeout is None:
        return await fut
    handle = fut.get_loop().call_later(timeout, _resolve, fut, False)
    try:
        return await fut
    finally:
        handle.cancel()


async def _connect(connect: Callable[[], Any], timeout: float | None) -> Any:
    try:
        return await asyncio.wait_for(connect(), timeout)
    except asyncio.TimeoutError as exc:
        raise httpcore.ConnectTimeout(str(exc) or "connect timed out") from exc
    except OSError as exc:
        raise httpcore.ConnectError(str(exc)) from exc


def _no_tls() -> httpcore.ConnectError:
    return httpcore.ConnectError("bench.asyncio_backend speaks plain TCP only (no TLS)")


# --------------------------------------------------------------------------------------------------
# asyncio.Protocol
# --------------------------------------------------------------------------------------------------

class _Protocol(asyncio.Protocol):
    """What the loop received for one connection, and the reader waiting for it."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.chunks: collections.deque[bytes] = collections.deque()
        self.size = 0          # bytes in ``chunks`` (less ``offset``)
        self.offset = 0        # of the first chunk, already read
        self.eof = False
        self.error: BaseException | None = None
        self.paused = False    # reading paused (HIGH_WATER)
        self.waiter: asyncio.Future[bool] | None = None
        self.write_paused = False
        self.drain: asyncio.Future[bool] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.chunks.append(data)
        self.size += len(data)
        if self.size > HIGH_WATER and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            _resolve(waiter, True)

    def eof_received(self) -> bool:
        self.eof = True
        self._wake_all()
        return False  # (the transport closes itself)

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self.error = exc
        self._wake_all()

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        drain, self.drain = self.drain, None
        if drain is not None:
            _resolve(drain, True)

    def _wake_all(self) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is not None:
            _resolve(waiter, True)
        drain, self.drain = self.drain, None
        if drain is not None:
            _resolve(drain, True)

    def take(self, max_bytes: int) -> bytes:
        """Up to ``max_bytes`` of what is buffered (all of it, joined, when it fits)."""
        chunks = self.chunks
        if self.offset == 0 and self.size <= max_bytes:
            data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
            chunks.clear()
            self.size = 0
        else:
            first, start = chunks[0], self.offset
            data = first[start:start + max_bytes]
            if start + len(data) >= len(first):
                chunks.popleft()
                self.offset = 0
            else:
                self.offset = start + len(data)
            self.size -= len(data)
        if self.paused and self.size < LOW_WATER and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()
        return data


class ProtocolStream(httpcore.AsyncNetworkStream):
    """One connection read through :class:`_Protocol`."""

    def __init__(self, transport: asyncio.Transport, protocol: _Protocol) -> None:
        self._transport = transport
        self._protocol = protocol
        self._loop = asyncio.get_running_loop()

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        protocol = self._protocol
        while not protocol.size:
            if protocol.eof:
                if protocol.error is not None:
                    raise httpcore.ReadError(str(protocol.error) or type(protocol.error).__name__)
                return b""
            fut: asyncio.Future[bool] = self._loop.create_future()
            protocol.waiter = fut
            try:
                if not await _wait(fut, timeout):
                    raise httpcore.ReadTimeout("read timed out")
            finally:
                if protocol.waiter is fut:
                    protocol.waiter = None
        return protocol.take(max_bytes)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        transport, protocol = self._transport, self._protocol
        if transport.is_closing() or protocol.eof:
            raise httpcore.WriteError("the connection is closed")
        transport.write(buffer)
        # (a server that does not read: the transport keeps the bytes, and this waits no longer than timeout)
        while protocol.write_paused and not protocol.eof:
            fut: asyncio.Future[bool] = self._loop.create_future()
            protocol.drain = fut
            try:
                if not await _wait(fut, timeout):
                    raise httpcore.WriteTimeout("write timed out")
            finally:
                if protocol.drain is fut:
                    protocol.drain = None
        if protocol.error is not None:
            raise httpcore.WriteError(str(protocol.error) or type(protocol.error).__name__)

    async def aclose(self) -> None:
        # close() would keep unsent bytes (and the socket) until a server that never reads takes them
        if self._transport.get_write_buffer_size():
            self._transport.abort()
        else:
            self._transport.close()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        raise _no_tls()

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":  # (the pool asks this of every idle connection it visits)
            protocol = self._protocol
            return bool(protocol.size) or protocol.eof
        if info == "socket":
            return self._transport.get_extra_info("socket")
        if info == "client_addr":
            return self._transport.get_extra_info("sockname")
        if info == "server_addr":
            return self._transport.get_extra_info("peername")
        return None  # ("ssl_object": no TLS)


class ProtocolBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend on ``loop.create_connection`` and :class:`_Protocol` (plain TCP)."""

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        local = (local_address, 0) if local_address else None
        transport, protocol = await _connect(
            lambda: loop.create_connection(_Protocol, host, port, local_addr=local), timeout)
        for option in socket_options or ():  # (asyncio sets TCP_NODELAY itself)
            transport.get_extra_info("socket").setsockopt(*option)
        return ProtocolStream(transport, protocol)

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        transport, protocol = await _connect(lambda: loop.create_unix_connection(_Protocol, path), timeout)
        for option in socket_options or ():
            transport.get_extra_info("socket").setsockopt(*option)
        return ProtocolStream(transport, protocol)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


# --------------------------------------------------------------------------------------------------
# a non-blocking socket
# --------------------------------------------------------------------------------------------------

def _readable(sock: socket.socket) -> bool:
    fd = sock.fileno()
    if fd < 0:
        return True
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


class SocketStream(httpcore.AsyncNetworkStream):
    """One connection on a non-blocking socket: the call first, the loop's reader only when it would block."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._fd = sock.fileno()
        self._loop = asyncio.get_running_loop()

    async def _ready(self, add: Callable[..., Any], remove: Callable[[int], Any], timeout: float | None) -> bool:
        fut: asyncio.Future[bool] = self._loop.create_future()
        add(self._fd, _resolve, fut, True)
        try:
            return await _wait(fut, timeout)
        finally:
            remove(self._fd)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        while True:
            try:
                return self._sock.recv(max_bytes)
            except (BlockingIOError, InterruptedError):
                pass
            except OSError as exc:
                raise httpcore.ReadError(str(exc)) from exc
            if not await self._ready(self._loop.add_reader, self._loop.remove_reader, timeout):
                raise httpcore.ReadTimeout("read timed out")

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        view = memoryview(buffer)
        while view:
            try:
                view = view[self._sock.send(view):]
                continue
            except (BlockingIOError, InterruptedError):
                pass
            except OSError as exc:
                raise httpcore.WriteError(str(exc)) from exc
            if not await self._ready(self._loop.add_writer, self._loop.remove_writer, timeout):
                raise httpcore.WriteTimeout("write timed out")

    async def aclose(self) -> None:
        self._sock.close()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        raise _no_tls()

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            return _readable(self._sock)
        if info == "socket":
            return self._sock
        if info == "client_addr":
            return self._sock.getsockname()
        if info == "server_addr":
            return self._sock.getpeername()
        return None


class SocketBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend on a non-blocking socket and ``add_reader`` (plain TCP)."""

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            family = socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
            address: Any = (host, port)
        except ValueError:  # a name: resolved by the loop (in its executor)
            infos = await _connect(lambda: loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), timeout)
            family, _, _, _, address = infos[0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for option in socket_options or ():
                sock.setsockopt(*option)
            if local_address:
                sock.bind((local_address, 0))
            await _connect(lambda: loop.sock_connect(sock, address), timeout)
        except BaseException:
            sock.close()
            raise
        return SocketStream(sock)

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            for option in socket_options or ():
                sock.setsockopt(*option)
            await _connect(lambda: loop.sock_connect(sock, path), timeout)
        except BaseException:
            sock.close()
            raise
        return SocketStream(sock)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


# --------------------------------------------------------------------------------------------------
# plugging one in
# --------------------------------------------------------------------------------------------------

#: ``--agui-http`` names of the backends put under the package's shards in place of its own connections
#: (``agui_client._sockets``): httpcore's ``AnyIOBackend`` (what its ``AutoBackend`` picks on asyncio, the
#: shards' connections until the eighteenth round) and the bench's two.
BACKENDS: dict[str, Callable[[], httpcore.AsyncNetworkBackend]] = {
    "anyio": httpcore.AnyIOBackend, "asyncio-protocol": ProtocolBackend, "asyncio-sock": SocketBackend}


def use_backend(transport: httpx.AsyncBaseTransport, backend: httpcore.AsyncNetworkBackend) -> None:
    """Make every shard ``transport`` (a client's own ``agui_client._pool.ShardedTransport``) opens connect
    through ``backend``, inside the shards' bounded wrapper (the run's deadline and the head's budget kept).

    The transport stays a ``ShardedTransport`` (the client checks its type to trust its request tracing):
    its shard-making method is wrapped on the instance. Private attributes of httpx and the package are
    reached for: this is a bench, and :func:`_check` fails loudly if they move.
    """
    shard_of = transport._shard  # type: ignore[attr-defined]
    done: set[int] = set()

    def shard(request: httpx.Request) -> Any:
        made = shard_of(request)
        if id(made) not in done:
            done.add(id(made))
            bounded = made.transport._pool._network_backend
            _check(bounded)
            bounded._backend = backend
        return made

    transport._shard = shard  # type: ignore[attr-defined]


def _check(bounded: Any) -> None:
    if not isinstance(getattr(bounded, "_backend", None), httpcore.AsyncNetworkBackend):
        raise RuntimeError(f"bench.asyncio_backend: the shard's network backend is {bounded!r}, not the bounded "
                           "wrapper around httpcore's (agui_client._connections or httpx moved)")


def sharded_client(backend: str, timeout: float = 60.0) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` on the package's ``ShardedTransport``, its connections on ``backend``
    (``own``: the package's own, one of :data:`BACKENDS` otherwise), for a bench reading raw bytes."""
    from agui_client._pool import ShardedTransport

    transport = ShardedTransport()
    if backend != "own":
        use_backend(transport, BACKENDS[backend]())
    return httpx.AsyncClient(transport=transport, timeout=timeout)
