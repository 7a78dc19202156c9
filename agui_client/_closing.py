"""Finishing the close of an answer when httpcore's was cut short (a second cancellation, a second Ctrl-C):
:func:`finish_close` and :func:`finish_sync_close`, over httpcore's private attributes, each read with a
default. And what a program that must not have a sync close cut wraps it in (:func:`closes_guarded`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx

__all__ = ["finish_close", "finish_sync_close", "closes_guarded", "close_guard", "REQUESTS", "CONNECTION"]

#: What the sync client closes an answer inside, in this context (``None``: nothing): see :func:`closes_guarded`.
_CLOSE_GUARD: ContextVar[Callable[[], AbstractContextManager[Any]] | None] = ContextVar(
    "agui_client_close_guard", default=None)


@contextmanager
def closes_guarded(guard: Callable[[], AbstractContextManager[Any]]) -> Iterator[None]:
    """Within the block (in this thread or context), the sync client closes each answer, httpcore's close
    finished when it was cut (``_sync/client_io.close_response``), inside ``guard()``.

    A ``KeyboardInterrupt`` in the middle of that close cuts it: httpx marks the answer closed first, and no
    later close finishes it. The library holds no signal (an application's handlers are its own), so a
    program that must not be cut there says how to hold it: the CLI holds Ctrl-C and SIGTERM
    (``cli.stopping.held_signals``) around every close, not only around a stream's exit, where closes came
    too (a refused answer closed as the stream is entered, before its error is raised).
    """
    token = _CLOSE_GUARD.set(guard)
    try:
        yield
    finally:
        _CLOSE_GUARD.reset(token)


def close_guard() -> AbstractContextManager[Any]:
    """What the sync client's close of an answer runs inside now (:func:`closes_guarded`; else nothing)."""
    guard = _CLOSE_GUARD.get()
    return nullcontext() if guard is None else guard()


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
    requests = getattr(getattr(stream, _POOL, None), REQUESTS, None)
    if request is None or not isinstance(requests, list):
        return None, None
    connection: Any = getattr(getattr(stream, _STREAM, None), CONNECTION, None)  # (the HTTP/1.1 one)
    # In the middle of an answer first, then nobody else's, in that order: a connection closed whole is back
    # in the pool, and another request may take it at any moment (it is counted, its connection set, before
    # it can make the connection active). Looked at the other way round, one that took it between the two
    # looks was found active and nobody's, and its connection was closed under it.
    active = isinstance(connection, kinds) and not connection.is_idle() and not connection.is_closed()
    cut = active and not any(getattr(getattr(other, "connection", None), CONNECTION, None) is connection
                             for other in requests if other is not request)
    return (connection if cut else None), (stream if request in requests else None)


#: httpcore's private attributes ``finish_close`` reads, each with a default: a pool stream's request,
#: pool and connection stream, a pool's requests, a connection stream's (or a pool connection's) HTTP/1.1
#: connection, a pool stream's mark of a close begun (``_wakes`` reads the requests and the connection too).
_POOL_REQUEST, _POOL, _STREAM, REQUESTS, CONNECTION, _CLOSED = (
    "_pool_request", "_pool", "_stream", "_requests", "_connection", "_closed")

