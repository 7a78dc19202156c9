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
The client sets the deadline (``_deadline.deadline``) around its send; each read, write and connect of the
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

Around the transports, each in a module of its own: the send's deadline and byte budget (``_deadline``),
the shards' connections and the backends that open them (``_connections``), their TLS context
(``_tls``), the wake of the runs in flight at a client's close (``_wakes``) and the finish of an
answer's close cut short (``_closing``).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx

from ._connections import bound, check_end
from ._proxies import environment_proxy
from ._tls import one_context
from ._wakes import wake

__all__ = ["ShardedTransport", "ShardedSyncTransport", "ProxiedTransport", "ProxiedSyncTransport", "SHARD_SIZE",
           "PROXIED_LIMITS", "own_transport", "own_async_transport"]


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
            check_end(self._stream, self._network)  # (before httpcore puts the connection back)
        await self._stream.aclose()



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
        self._options = one_context(self._options)
        shard = _Shard(httpx.AsyncHTTPTransport(
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=self.shard_size), **self._options))
        bound(shard.transport)
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
            check_end(self._stream, self._network)
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
                self._options = one_context(self._options)
                shard = _Shard(httpx.HTTPTransport(
                    limits=httpx.Limits(max_connections=None, max_keepalive_connections=self.shard_size),
                    **self._options))
                bound(shard.transport)
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
        """Close every shard, first waking the runs blocked in a read of one (:func:`wake`); a request
        sent from now on is refused (``httpx.ConnectError``), not given a shard of its own."""
        with self._lock:
            self._closed = True
            shards, self._shards = self._shards, []
        for shard in shards:
            assert isinstance(shard.transport, httpx.HTTPTransport)
            wake(shard.transport)
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
        """httpx's close, first waking the runs blocked in a read (:func:`wake`)."""
        wake(self)
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
