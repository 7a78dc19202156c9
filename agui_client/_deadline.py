"""The bounds of a run's send on the shards' connections: its overall deadline (``run_timeout``) and its
budget of bytes read before the answer's head is complete.

httpx's read timeout bounds each read, not the head, so an agent sending ``103 Early Hints`` every second,
or its head a byte at a time, held a client past its deadline for as long as it liked. The client sets the
deadline (:func:`deadline`) around its send; each read, write and connect of the shards' connections
(``_connections``) then waits no longer than what is left of it (:func:`bounded`), and what those reads
bring is charged to the budget (:func:`charged`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["deadline", "HeadTooLong", "bounded", "charged"]

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


def charged(data: bytes) -> bytes:
    budget = _HEAD_BYTES.get()
    if budget is not None:
        budget[0] -= len(data)
        if budget[0] < 0:
            raise HeadTooLong()
    return data


def bounded(timeout: float | None) -> float | None:
    at = _DEADLINE.get()
    if at is None:
        return timeout
    left = max(at - time.monotonic(), 0.0) + _LAST_WAIT
    return left if timeout is None else min(timeout, left)
