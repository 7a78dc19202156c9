"""The retry loop both clients' sends pass through: ``open_batches`` tries its request through
:func:`tried` (``AgentClient``) or :func:`atried` (``AsyncAgentClient``).

What is retried and how long to wait is ``core/retry.py``'s; this module does the waiting, the
logging and the telemetry, and says on the final error how many tries were made. The loop wraps the
opening of the response only: once the answer's head says it is an event stream, the run is the
caller's, and nothing after that is ever sent again.

The wait is the run's: a thread keeps its claim across the tries (the thread and its store see one
run), and the run's deadline (``run_timeout``) counts from the first request. A cancelled task ends
the wait at once (``anyio.sleep``); in the sync client Ctrl-C does (``KeyboardInterrupt`` from
``time.sleep``), and nothing more is sent. The request's handle says, during the wait, that nothing
reached the agent, so such an interruption gives a resume's claim back.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import (
    AbstractAsyncContextManager,
    AbstractContextManager,
    AsyncExitStack,
    ExitStack,
    asynccontextmanager,
    contextmanager,
)
from itertools import count
from typing import Protocol, TypeVar

import anyio
import httpx

from .core.exchange import StreamHandle
from .core.retry import retry_reason, verdict
from .errors import HTTPStatusError, TransportError
from .telemetry import Telemetry, record_retry

__all__ = ["checked_retries", "tried", "atried"]

logger = logging.getLogger("agui_client")

T = TypeVar("T")


class _Retrying(Protocol):
    """What the loop reads of the client."""

    max_retries: int
    retry_backoff: float
    telemetry: Telemetry | None


class _Deadline(Protocol):
    """The run's deadline, as ``_client_base.Deadline`` holds it: the monotonic time it passes."""

    at: float


def checked_retries(max_retries: int, retry_backoff: float) -> tuple[int, float]:
    """A client's ``max_retries`` and ``retry_backoff``, refused when made (not at the first failure).

    Raises:
        ValueError: ``max_retries`` is not an ``int`` from 0, or ``retry_backoff`` not a finite number from 0.
    """
    if type(max_retries) is not int or max_retries < 0:
        raise ValueError(f"max_retries must be an int, 0 or more, got {max_retries!r}")
    if isinstance(retry_backoff, bool) or not isinstance(retry_backoff, (int, float)) \
            or not math.isfinite(retry_backoff) or retry_backoff < 0:
        raise ValueError(f"retry_backoff must be a finite number of seconds, 0 or more, got {retry_backoff!r}")
    return max_retries, float(retry_backoff)


def _wait(client: _Retrying, error: TransportError, tries: int, deadline: _Deadline | None,
          handle: StreamHandle) -> float | None:
    """How long to wait before sending again after ``error`` (the ``tries``-th request's), or ``None``: raise it.
    The error raised says how many tries were made."""
    # (seen by the client only when the request may not have reached the agent yet: a transport that
    # reports nothing of its progress, yours, may raise a ConnectError after it delivered the request,
    # as one that tries again on its own does when its second try finds the agent gone)
    connect_failed = isinstance(error.__cause__, (httpx.ConnectError, httpx.ConnectTimeout)) and not handle.sent
    reason = retry_reason(error, connect_failed=connect_failed)
    status = error.status_code if isinstance(error, HTTPStatusError) else None
    judged = None if reason is None else verdict(
        reason, tries=tries, max_retries=client.max_retries, backoff=client.retry_backoff,
        retry_after=error.retry_after if isinstance(error, HTTPStatusError) else None,
        remaining=None if deadline is None else deadline.at - time.monotonic(), jitter=random.random())
    # (the URL as the error shows it, redacted; the reason is the client's words, never the agent's)
    if judged is None or judged.wait is None:
        if judged is not None:
            logger.info("%s: not sent again: %s", error.url, judged.reason)
        if tries > 1:
            error.tries = tries
            error.args = (f"{error.args[0]} (after {tries} tries)", *error.args[1:])
        return None
    logger.info("%s: %s; sending the request again in %.2fs (try %d of %d)", error.url, judged.reason,
                judged.wait, tries + 1, client.max_retries + 1)
    record_retry(client.telemetry, tries=tries, wait=judged.wait, reason=judged.reason, status=status)
    handle.sent = False  # (what is known now: the agent acted on none of the tries)
    return judged.wait


@contextmanager
def tried(client: _Retrying, deadline: _Deadline | None, handle: StreamHandle,
          attempt: Callable[[], AbstractContextManager[T]]) -> Iterator[T]:
    """Enter ``attempt()`` (one request and the head of its answer), again after a failure the agent
    certainly did not act on, up to ``client.max_retries`` more times; then the caller's ``with`` block
    runs once, inside the successful one."""
    for tries in count(1):
        stack = ExitStack()
        try:
            opened = stack.enter_context(attempt())
        except TransportError as error:
            if client.max_retries == 0:
                raise  # (today's behaviour exactly: no judgement, no log)
            wait = _wait(client, error, tries, deadline, handle)
            if wait is None:
                raise
            time.sleep(wait)
            continue
        with stack:
            yield opened
        return


@asynccontextmanager
async def atried(client: _Retrying, deadline: _Deadline | None, handle: StreamHandle,
                 attempt: Callable[[], AbstractAsyncContextManager[T]]) -> AsyncIterator[T]:
    """:func:`tried` for the async client: the wait is ``anyio.sleep``, which a cancellation ends at once."""
    for tries in count(1):
        stack = AsyncExitStack()
        try:
            opened = await stack.enter_async_context(attempt())
        except TransportError as error:
            if client.max_retries == 0:
                raise
            wait = _wait(client, error, tries, deadline, handle)
            if wait is None:
                raise
            await anyio.sleep(wait)
            continue
        async with stack:
            yield opened
        return
