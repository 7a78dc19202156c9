"""What the retry loop both clients' sends pass through decides: ``open_batches`` tries its request
through ``atried`` (``AsyncAgentClient``: ``_async/retries.py``) or ``tried`` (``AgentClient``:
``_sync/retries.py``, generated from the async loop by ``python -m tools.unasync``), which ask
:func:`retry_wait` after each failed try.

What is retried and how long to wait is ``core/retry.py``'s; this module applies it to a failed try
(the run's deadline, the logging and the telemetry), and says on the final error how many tries were
made; the loops do the waiting, each shell's way (its ``client_io.pause``). The loop wraps the
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
from typing import Protocol

import httpx

from .core.exchange import StreamHandle
from .core.retry import RETRY_AFTER_CAP, retry_reason, served_nothing, verdict
from .errors import HTTPStatusError, TransportError
from .telemetry import Telemetry, record_retry

__all__ = ["checked_retries", "note_retries_off", "retry_wait", "Retrying", "RetryDeadline"]

#: The retries' jitter, drawn from a generator of the client's own: the module's global one is the
#: application's (one seeded for a reproducible run would be moved by every retry), and a property test's
#: (Hypothesis warns when the global state moves while it draws, as a retry in another thread can make it).
_jitter = random.Random()

logger = logging.getLogger("agui_client")


class Retrying(Protocol):
    """What the loop reads of the client."""

    max_retries: int
    retry_backoff: float
    telemetry: Telemetry | None

    @property
    def is_closed(self) -> bool:
        """Whether the client was closed (then nothing is sent again)."""


class RetryDeadline(Protocol):
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


#: The hint of an answer the client would have retried, had retries been on.
_RETRIES_OFF = ("the agent served nothing and asks to be tried again: max_retries= on the client (--max-retries N "
                "on agui's command line) sends the request again by itself")


def note_retries_off(error: TransportError) -> None:
    """Give ``error`` (a run's failure, from a client whose retries are off) the hint that retries would
    have sent the request again, where they would have: a 429, or a 503 with a ``Retry-After`` of at
    most ``RETRY_AFTER_CAP``, before any event. Retries are off by default, and the agent said it served
    nothing and may later: the message says which setting turns them on."""
    if isinstance(error, HTTPStatusError) and error.hint is None and served_nothing(error) \
            and (error.retry_after is None or error.retry_after <= RETRY_AFTER_CAP):
        error.hint = _RETRIES_OFF
        error.args = (f"{error.args[0]} ({_RETRIES_OFF})", *error.args[1:])


def retry_wait(client: Retrying, error: TransportError, tries: int, deadline: RetryDeadline | None,
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
        remaining=None if deadline is None else deadline.at - time.monotonic(), jitter=_jitter.random())
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
