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
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx

__all__ = ["ShardedTransport", "ShardedSyncTransport", "SHARD_SIZE"]

#: Open runs per shard (and connections each shard keeps alive between runs).
SHARD_SIZE = 32


class _Shard:
    __slots__ = ("transport", "open")

    def __init__(self, transport: httpx.AsyncHTTPTransport | httpx.HTTPTransport) -> None:
        self.transport = transport
        self.open = 0


class _Counted(httpx.AsyncByteStream):
    """A response body that gives its shard's place back when it is closed (once)."""

    __slots__ = ("_stream", "_shard")

    def __init__(self, stream: httpx.AsyncByteStream, shard: _Shard) -> None:
        self._stream = stream
        self._shard: _Shard | None = shard

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._stream.__aiter__()

    async def aclose(self) -> None:
        shard, self._shard = self._shard, None
        if shard is not None:
            shard.open -= 1
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

    def _shard(self) -> _Shard:
        for shard in self._shards:
            if shard.open < self.shard_size:
                return shard
        shard = _Shard(httpx.AsyncHTTPTransport(
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=self.shard_size), **self._options))
        self._shards.append(shard)
        return shard

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        shard = self._shard()
        shard.open += 1
        try:
            assert isinstance(shard.transport, httpx.AsyncHTTPTransport)
            response = await shard.transport.handle_async_request(request)
        except BaseException:
            shard.open -= 1
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _Counted(response.stream, shard)
        return response

    async def aclose(self) -> None:
        shards, self._shards = self._shards, []
        for shard in shards:
            assert isinstance(shard.transport, httpx.AsyncHTTPTransport)
            await shard.transport.aclose()


class _CountedSync(httpx.SyncByteStream):
    """:class:`_Counted` for the sync transport (the count under the transport's lock)."""

    __slots__ = ("_stream", "_shard", "_lock")

    def __init__(self, stream: httpx.SyncByteStream, shard: _Shard, lock: threading.Lock) -> None:
        self._stream = stream
        self._shard: _Shard | None = shard
        self._lock = lock

    def __iter__(self) -> Iterator[bytes]:
        return self._stream.__iter__()

    def close(self) -> None:
        with self._lock:
            shard, self._shard = self._shard, None
            if shard is not None:
                shard.open -= 1
        self._stream.close()


class ShardedSyncTransport(httpx.BaseTransport):
    """:class:`ShardedTransport` for ``httpx.Client`` (a thread per run), safe across threads."""

    def __init__(self, shard_size: int = SHARD_SIZE, **options: Any) -> None:
        self.shard_size = shard_size
        self._options = options
        self._shards: list[_Shard] = []
        self._lock = threading.Lock()

    def _take(self) -> _Shard:
        with self._lock:
            for shard in self._shards:
                if shard.open < self.shard_size:
                    break
            else:
                shard = _Shard(httpx.HTTPTransport(
                    limits=httpx.Limits(max_connections=None, max_keepalive_connections=self.shard_size),
                    **self._options))
                self._shards.append(shard)
            shard.open += 1
            return shard

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        shard = self._take()
        try:
            assert isinstance(shard.transport, httpx.HTTPTransport)
            response = shard.transport.handle_request(request)
        except BaseException:
            with self._lock:
                shard.open -= 1
            raise
        assert isinstance(response.stream, httpx.SyncByteStream)
        response.stream = _CountedSync(response.stream, shard, self._lock)
        return response

    def close(self) -> None:
        with self._lock:
            shards, self._shards = self._shards, []
        for shard in shards:
            assert isinstance(shard.transport, httpx.HTTPTransport)
            shard.transport.close()
