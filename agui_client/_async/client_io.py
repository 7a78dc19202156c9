"""What ``AsyncAgentClient`` does its own way, written by hand (``client.py`` here is the source of the
sync client; ``_sync/client_io.py`` is this module's sync counterpart): the store read in a worker
thread, its own ``httpx.AsyncClient``, httpx's async reader, closed at once, the wait before a retry.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AbstractAsyncContextManager, aclosing
from typing import cast

import anyio
import httpx
import sniffio

from .._pool import finish_close, own_async_transport
from .thread_io import in_worker

__all__ = ["close_response", "off_loop", "own_http", "pause", "payloads_of", "raw"]

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
