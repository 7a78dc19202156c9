"""Waking the runs in flight on a pool at a client's close: every connection of a pool the client owns
(:func:`wake`), or, in an ``http_client`` it was given, only the connections of its own requests
(:func:`wake_requests`, marked :data:`SENDER`). A socket is shut down, not closed: that wakes a read
another OS thread is blocked in.
"""

from __future__ import annotations

import contextlib
import socket
from asyncio.trsock import TransportSocket

import httpx

from ._closing import CONNECTION, REQUESTS
from ._connections import Backend

__all__ = ["wake", "SENDER", "wake_requests"]


def wake(transport: httpx.HTTPTransport) -> None:
    """Shut down the socket of each connection ``transport``'s pool holds, so that a run blocked in a read of
    one, in another OS thread, wakes now: closing a socket does not wake a read another thread is blocked
    in (it waited for its ``idle_timeout``), shutting it down does (the read sees the connection end, as
    when the agent cuts it). For a client's own close only, never in a forked child: a socket shut down is
    shut for every process holding it, and a child's copies are the parent's (``_pool._close_kept`` closes
    them, which sends nothing). The raw socket's shutdown, under TLS too: the ``ssl`` module's own would
    unwrap the socket under the other thread's read (a ``ValueError``, where the read should see the end).
    httpcore's private attributes, read with defaults (as ``_pool._close_kept``): if they move, nothing is
    shut down, and the close is httpx's own.

    A run still opening its connection (its connect, its TLS handshake) is woken by the pool's backend,
    a shard's (``_connections._Opening``): the pool holds its connection, but no socket of it yet. It goes first,
    so that a connection opened while the close looks at the pool's is refused before it is written to."""
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if isinstance(backend, Backend):
        backend.opening.wake()
    for connection in list(getattr(pool, "_connections", ())):
        _shut_down(connection)


def _shut_down(connection: object) -> None:
    """Shut down the socket of ``connection``, a pool's (a proxy's holds the HTTP connection, which holds the
    HTTP/1.1 or HTTP/2 one): the raw socket's shutdown, under TLS too (see :func:`wake`)."""
    for _ in range(3):
        if hasattr(connection, "_network_stream"):
            break
        connection = getattr(connection, CONNECTION, None)
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
    extension), and of no other, as :func:`wake` does all of a pool's.

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
    for waiting in list(getattr(getattr(transport, "_pool", None), REQUESTS, ())):
        connection = getattr(waiting, "connection", None)
        extensions = getattr(getattr(waiting, "request", None), "extensions", None)
        if isinstance(extensions, dict) and extensions.get(SENDER) is sender:
            ours.append(connection)
        else:
            shared.add(id(connection))
    for connection in ours:
        if id(connection) not in shared:
            _shut_down(connection)
