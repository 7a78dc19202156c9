"""What ``AgentClient`` does its own way, written by hand (the sync counterpart of
``_async/client_io.py``; ``client.py`` here is generated): a store call made where it is asked for,
its own ``httpx.Client``, httpx's reader, the wait before a retry, the runs opening a connection.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any, TypeVar, cast

import httpcore
import httpx

from .._closing import close_guard, finish_sync_close
from .._pool import own_transport
from ..core.exchange import StreamHandle, opening_stage

__all__ = ["Opening", "close_response", "off_loop", "own_http", "pause", "payloads_of", "raw"]

T = TypeVar("T")


def off_loop(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Make a blocking call (the store's) here: the sync client has no event loop to keep serving."""
    return call(*args, **kwargs)


def own_http(timeout: httpx.Timeout, follow_redirects: bool, url: str) -> httpx.Client:
    """The sync client's own ``httpx.Client``: as the async client's (``_async/client_io.own_http``),
    for a thread per run."""
    return httpx.Client(timeout=timeout, follow_redirects=follow_redirects, transport=own_transport(url))


def close_response(response: httpx.Response) -> None:
    """``response.close()``, and httpcore's own close finished when a second Ctrl-C cut it short.

    The first Ctrl-C, in a read, makes httpcore close the answer there and then; a second one while it
    does so left the connection active in the pool for good (its socket open until the client closed,
    a place lost in a capped pool), and every later close found the answer closed already. (The async
    client's also waits out a cancellation that comes during the close; a ``KeyboardInterrupt`` during
    this one still cuts it: a program that must not be cut there holds SIGINT around it with
    ``_closing.closes_guarded``, as the CLI does.)
    """
    with close_guard():
        response.close()
        finish_sync_close(response)


def pause(seconds: float) -> None:
    """Wait ``seconds`` before a retry; Ctrl-C ends the wait at once (``time.sleep`` raises
    ``KeyboardInterrupt``), so nothing more is sent then."""
    time.sleep(seconds)


def payloads_of(batches: Iterator[list[str | bytes]]) -> AbstractContextManager[Iterator[str | bytes]]:
    """The payloads of ``batches`` one by one (nothing to close: the batches' block closes the response)."""
    return nullcontext(payload for batch in batches for payload in batch)


def raw(response: httpx.Response) -> Generator[bytes, None, None]:
    """httpx's ``iter_raw()``, typed as the generator it is (so that it can be closed at once)."""
    return cast("Generator[bytes, None, None]", response.iter_raw())


class Opening:
    """The async client's :class:`~agui_client._async.client_io.Opening` for the sync client: a step opening a
    connection that begins after the client's close is refused.

    A run already in its connect or TLS handshake waits in an OS thread, which nothing cancels: the client's
    own pool wakes it there (``_connections._Opening`` shuts its socket down); on an ``http_client`` the caller
    passed it waits for its connect timeout.
    """

    def __init__(self) -> None:
        #: The client was closed: no step opening a connection begins any more.
        self.closed = False

    def trace(self, handle: StreamHandle) -> Callable[[str, Mapping[str, Any]], None]:
        """The ``trace`` extension of a run's request: ``handle``'s, and the refusal of a step opening a
        connection once the client was closed.

        Raises (out of the step, to httpcore, as its connect's failure would):
            httpcore.ConnectError: the client was closed before the step began.
        """
        def trace(name: str, info: Mapping[str, Any]) -> None:
            handle.trace(name, info)
            if self.closed and opening_stage(name) == "started":  # (a run that passed the client's check before)
                raise httpcore.ConnectError("the client was closed")

        return trace

    def wake(self) -> None:
        """Refuse every step opening a connection begun from now on."""
        self.closed = True
