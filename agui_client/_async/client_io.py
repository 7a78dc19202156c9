"""What ``AsyncAgentClient`` does its own way, written by hand (``client.py`` here is the source of the
sync client; ``_sync/client_io.py`` is this module's sync counterpart): the store read in a worker
thread, its own ``httpx.AsyncClient``, httpx's async reader, closed at once, the wait before a retry,
and the runs opening a connection, which the client's close wakes (:class:`Opening`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, aclosing
from typing import Any, cast

import anyio
import httpcore
import httpx
import sniffio

from .._closing import finish_close
from .._pool import own_async_transport
from ..core.exchange import StreamHandle, opening_stage
from .thread_io import in_worker

__all__ = ["Opening", "close_response", "off_loop", "own_http", "pause", "payloads_of", "raw"]

#: A blocking call (the store's) made in a worker thread, the event loop serving meanwhile; a cancelled
#: caller waits for it to end (see ``in_worker``).
off_loop = in_worker


def own_http(timeout: httpx.Timeout, follow_redirects: bool, url: str) -> httpx.AsyncClient:
    """The async client's own ``httpx.AsyncClient``: runs held open by the hundred on one event loop.

    Its pool is split in shards (``_pool.ShardedTransport``) and has no cap on connections (an SSE run
    holds one for as long as it lasts; a cap makes the runs past it wait, then fail with a pool
    timeout). When the environment names a proxy for ``url`` (the agent's: redirects are followed to
    the same origin only), httpx's own transport goes through it, with the same limits; a host
    ``NO_PROXY`` names keeps the shards, and with them the bounds on the answer's head (``_pool``).
    Either drops the ``Set-Cookie`` of every answer: no cookie an agent sets is kept, whatever jar
    the client is given later (the runs it sends may be many users').
    """
    return httpx.AsyncClient(timeout=timeout, follow_redirects=follow_redirects, transport=own_async_transport(url))


async def close_response(response: httpx.Response) -> None:
    """``await response.aclose()``, carried to its end however often the caller is cancelled meanwhile.

    httpx marks the response closed before httpcore lets go of the connection, and the shield httpcore
    closes under (anyio's) does not hold off asyncio's own ``Task.cancel()``: a second cancellation that
    came while the first one's close ran left the connection active in the pool for good (a place lost
    in a capped pool, a socket held until the client closed), and no later close would finish it. On
    asyncio the close is a task of its own, waited out as a store call is (``in_worker``); the caller
    then sees the cancellation. Under trio, anyio's shield holds off every cancellation.
    """
    if sniffio.current_async_library() != "asyncio":
        with anyio.CancelScope(shield=True):
            await _closed_whole(response)
        return
    closing = asyncio.ensure_future(_closed_whole(response))
    cancelled: asyncio.CancelledError | None = None
    with anyio.CancelScope(shield=True):  # (a cancel scope's cancellation waits too, not retried each turn)
        while not closing.done():
            try:
                await asyncio.shield(closing)
            except asyncio.CancelledError as exc:
                cancelled = exc
    if cancelled is not None:
        if not closing.cancelled():
            closing.exception()  # (the close's own failure: the cancellation is what the caller sees)
        raise cancelled
    closing.result()


async def _closed_whole(response: httpx.Response) -> None:
    await response.aclose()
    await finish_close(response)  # (httpcore's own close, when a cancellation cut it short while reading)


async def pause(seconds: float) -> None:
    """Wait ``seconds`` before a retry; a cancellation of the task ends the wait at once, so nothing more
    is sent then."""
    await anyio.sleep(seconds)


def payloads_of(
        batches: AsyncIterator[list[str | bytes]]) -> AbstractAsyncContextManager[AsyncGenerator[str | bytes, None]]:
    """The payloads of ``batches`` one by one, closed when the block is left (a generator left open would
    be closed later, by the loop's finalizer, as a task of its own)."""
    return aclosing(_flatten(batches))


def raw(response: httpx.Response) -> AsyncGenerator[bytes, None]:
    """httpx's ``aiter_raw()``, typed as the async generator it is (so that it can be closed at once)."""
    return cast("AsyncGenerator[bytes, None]", response.aiter_raw())


async def _flatten(batches: AsyncIterator[list[str | bytes]]) -> AsyncGenerator[str | bytes, None]:
    async for batch in batches:
        for payload in batch:
            yield payload


class Opening:
    """The tasks of one client's runs opening a connection (connecting, in their TLS handshake), so that the
    client's close ends them at once (:meth:`wake`), as it ends one reading, by its connection's end.

    Until its handshake is over, a run's connection is not one the pool can close under it: the connect's
    socket, or the handshake's, is held where only the connecting task reaches it, and a close of the pool
    left such a run to its connect timeout. In the task, though, the wait is an ``await``, which a
    cancellation ends wherever it is: :meth:`wake` cancels each task in such a step, and the step's end
    turns that cancellation into the connection's failure (httpcore's ``ConnectError``, "the client was
    closed"), which the run reports as any run whose client closed before the agent's answer came. No
    caller sees a ``CancelledError`` it did not ask for; one the caller asked for meanwhile (a timeout
    of its own, its task cancelled) stays the caller's (``Task.uncancel``; Python 3.10 counts no
    cancellations, and there a caller's that comes with the close's reads as the close's).

    The steps are found by httpcore's ``trace`` extension, which httpx documents and which the run's request
    carries anyway (:meth:`trace`), so they are the same for the client's own pool, for an ``http_client``
    the caller passed (only this client's runs are woken: each request carries its client's callback) and
    through a proxy. A transport that reports no steps (one of the caller's own, not httpx's) leaves its
    runs to their connect timeout. Under trio (no asyncio task to cancel) no task is held; a step begun
    after the close is refused all the same. Nothing is done per event: a run reports some ten steps.
    """

    def __init__(self) -> None:
        #: The tasks in a step that opens a connection.
        self._tasks: set[asyncio.Task[Any]] = set()
        #: Those :meth:`wake` cancelled, until their step ends.
        self._woken: set[asyncio.Task[Any]] = set()
        #: The client was closed: every task held was cancelled, and no step opening a connection begins any more.
        self.closed = False

    def trace(self, handle: StreamHandle) -> Callable[[str, Mapping[str, Any]], Awaitable[None]]:
        """The ``trace`` extension of a run's request: ``handle``'s (which marks the request sent), and the
        steps opening a connection held here.

        Raises (out of the step, to httpcore, as its connect's failure would):
            httpcore.ConnectError: the client was closed before the step began, or during it.
        """
        # The connect's stream, which a handshake the close ends leaves open: httpcore's connections through
        # anyio close it when the handshake fails, not when it is cancelled (it was left to the collector).
        connected: Any = None

        async def trace(name: str, info: Mapping[str, Any]) -> None:
            nonlocal connected
            handle.trace(name, info)
            stage = opening_stage(name)
            if stage is None:
                return
            if stage == "complete":
                connected = info.get("return_value") if name.endswith(".connect_tcp.complete") else None
            if self._step(stage, info):
                if connected is not None:
                    await connected.aclose()
                raise httpcore.ConnectError("the client was closed")

        return trace

    def _step(self, stage: str, info: Mapping[str, Any]) -> bool:
        """Hold or let go of the calling task as a step opening a connection begins or ends (its ``stage``,
        the ``info`` httpcore gives it): whether the step ended by the close's cancellation.

        Raises:
            httpcore.ConnectError: the client was closed before the step began.
        """
        if stage == "started" and self.closed:  # (a run that passed the client's check before it closed)
            raise httpcore.ConnectError("the client was closed")
        task = asyncio.current_task() if sniffio.current_async_library() == "asyncio" else None
        if task is None:
            return False
        if stage == "started":
            self._tasks.add(task)
            return False
        self._tasks.discard(task)
        if task not in self._woken:
            return False
        self._woken.discard(task)
        # (the close's cancellation came where the task waited, in the step: the step ends with it)
        return isinstance(info.get("exception"), asyncio.CancelledError) and _uncancelled(task)

    def wake(self) -> None:
        """Cancel every task in a step opening a connection (never the calling task: it is closing the
        client), and refuse every such step begun from now on."""
        self.closed = True
        calling = asyncio.current_task() if sniffio.current_async_library() == "asyncio" else None
        for task in self._tasks - {calling}:
            self._woken.add(task)
            task.cancel()


def _uncancelled(task: asyncio.Task[Any]) -> bool:
    """Take back one cancellation of ``task`` (the close's): whether none is left (none the caller asked for)."""
    uncancel = getattr(task, "uncancel", None)  # (Python 3.11 on)
    return uncancel is None or uncancel() == 0
