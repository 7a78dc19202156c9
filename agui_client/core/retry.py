"""Which failed requests are sent again, and how long to wait first. Sans-IO: the shells bring the
failure, the tries made, the time left and a random number; this module says whether to wait, and how long.

The one rule: an agent run is not idempotent (a resume answers interrupts; a run may act), so a
request is sent again only when the agent certainly did not act on it:

- it never reached the agent: the connection could not be made (refused, a name that did not
  resolve, no connection within ``timeout``). A failed TLS handshake is not retried: a certificate
  the client refuses is refused again; neither is a URL no request can go to.
- the agent answered, before any event, 429 Too Many Requests, or 503 Service Unavailable with a
  ``Retry-After``: both say the request was not served, and that it may be later (RFC 9110 section
  15.6.4: "the server is currently unable to handle the request due to a temporary overload or
  scheduled maintenance"). A 503 without ``Retry-After`` is not taken for one: proxies also send 503
  for an upstream that failed mid-request (Envoy's "upstream connect error or disconnect/reset before
  headers"), after the agent may have acted; a server declining a request on purpose says when to
  come back. Only as the answer to the run's own request (:func:`served_nothing`): after a 303 the agent has
  taken the run, and what the ``GET`` it asked for meets says nothing of that; and not as an event
  stream, which may be the run's events under a wrong status.

Nothing else is: 500, 502 and 504 may come from a gateway after the agent acted (a 504 is the
gateway giving up waiting on an agent that may be acting still); a dropped stream has delivered
events; a request that may have been written whole may have been read.

408 Request Timeout is not retried either. RFC 9110 section 15.5.9 says it "indicates that the server
did not receive a complete request message within the time that it was prepared to wait", which would
make a retry safe; but the client reads an answer only after writing the whole request, so a 408 then
contradicts its own meaning, and the servers that send one anyway use it for their own time running
out (a handler that timed out may have acted).
"""

from __future__ import annotations

import ssl

import attrs

from ..errors import ConnectTimeout, HTTPStatusError, RunTimeout, TransportError
from .redact import exception_chain

__all__ = ["DEFAULT_MAX_RETRIES", "DEFAULT_RETRY_BACKOFF", "BACKOFF_CAP", "RETRY_AFTER_CAP", "RETRIED_STATUSES",
           "Verdict", "answers_the_run", "retry_reason", "served_nothing", "verdict"]

#: How many times a client sends a failed request again, by default: none (see docs/http.md).
DEFAULT_MAX_RETRIES = 0
#: The first wait between tries when the agent gives no ``Retry-After``, in seconds; it doubles with each try.
DEFAULT_RETRY_BACKOFF = 0.5
#: The longest wait between tries when the agent gives no ``Retry-After``, in seconds.
BACKOFF_CAP = 8.0
#: The longest ``Retry-After`` waited for, in seconds: an agent asking for more is not retried (the
#: error is raised, its ``retry_after`` saying when to come back), as a caller waiting on a run would
#: rather hear at once than in ten minutes.
RETRY_AFTER_CAP = 60.0
#: The statuses that say the agent did not serve the request, and may later (a 503 only with a
#: ``Retry-After``: :func:`served_nothing`).
RETRIED_STATUSES = frozenset({429, 503})


@attrs.frozen(kw_only=True)
class Verdict:
    """What to do about a failed try: ``wait`` seconds then send again, or (``wait`` is ``None``) raise.

    ``reason``: the failure, in words (``"HTTP 503"``, ``"connection failed"``); or why a failure that
    may be retried is not (no retries left, a ``Retry-After`` past the cap, the run's deadline).
    """

    wait: float | None
    reason: str


def answers_the_run(error: HTTPStatusError) -> bool:
    """Whether ``error``'s answer is to the run's own request: its ``POST``, sent first or again by a 307
    or 308, not the ``GET`` a 303 sent the client on to. A 303 says the agent took the run (its answer
    is elsewhere), so what that ``GET`` meets, whatever its status, says nothing of whether it acted."""
    try:
        request = error.request
    except RuntimeError:  # (an error made without its request: nothing says it answered another one)
        return True
    return request.method == "POST"


def served_nothing(error: HTTPStatusError) -> bool:
    """Whether the agent's error answer says it served nothing of the run, and may later: a status of
    ``RETRIED_STATUSES`` (a 503 only with a ``Retry-After``: a proxy's 503 for an upstream that failed
    mid-request has none), answering the run's own request (:func:`answers_the_run`), and no event
    stream (events under a 503 may be the run's own: an agent that started it, then set the wrong status)."""
    media = (error.content_type or "").split(";", 1)[0].strip().lower()
    if error.status_code == 503 and error.retry_after is None:
        return False
    return error.status_code in RETRIED_STATUSES and answers_the_run(error) and media != "text/event-stream"


def retry_reason(error: BaseException, *, connect_failed: bool) -> str | None:
    """The failure ``error`` names, in words, when the agent certainly did not act on its request; else ``None``.

    ``connect_failed``: the shell saw the connection itself fail (httpx's ``ConnectError`` or
    ``ConnectTimeout``), not a write or a URL no request goes to.
    """
    if isinstance(error, HTTPStatusError):
        return f"HTTP {error.status_code}" if served_nothing(error) else None
    if not isinstance(error, TransportError) or isinstance(error, RunTimeout) or error.request_sent \
            or not connect_failed or _tls(error):
        return None  # (a connection that took the run's whole time: the run is over, not to be tried again)
    return "no connection within the connect timeout" if isinstance(error, ConnectTimeout) else "connection failed"


def _tls(error: BaseException) -> bool:
    """Whether a TLS failure (a refused certificate, a handshake the agent broke off) is behind ``error``:
    one that happens again on every try."""
    return any(isinstance(link, ssl.SSLError) for link in exception_chain(error))


def verdict(reason: str, *, tries: int, max_retries: int, backoff: float, retry_after: float | None,
            remaining: float | None, jitter: float) -> Verdict:
    """Whether to send again a request that failed for ``reason`` (:func:`retry_reason`), and after how long.

    Args:
        tries: the requests made so far for this run, the failed one included (1 after the first).
        max_retries: how many times a request may be sent again.
        backoff: the first wait without ``Retry-After``; each later one doubles, up to ``BACKOFF_CAP``.
        retry_after: the agent's ``Retry-After`` in seconds (an HTTP date already read as seconds from
            now, 0 when past), or ``None``.
        remaining: the seconds left before the run's deadline (``None``: no deadline). A wait that would
            end past it is not made: the try after it would fail with ``RunTimeout`` anyway.
        jitter: a random number in [0, 1): a backoff is shortened by up to half of it, so that clients
            that failed together do not all come back in the same instant.
    """
    if tries > max_retries:
        return Verdict(wait=None, reason=f"{reason}; no retries left (max_retries={max_retries})")
    if retry_after is not None:
        if retry_after > RETRY_AFTER_CAP:
            return Verdict(wait=None, reason=f"{reason}; the agent asks for {retry_after:g}s, past the "
                                             f"{RETRY_AFTER_CAP:g}s the client waits at most")
        wait = retry_after
    else:
        # (2 ** 1024 is past what a float holds: a large max_retries raised OverflowError at its 1025th
        # try in place of the run's error; a product past it is infinite, cut to the cap)
        wait = min(BACKOFF_CAP, backoff * 2.0 ** min(tries - 1, 1023)) * (1 - jitter / 2)
    if remaining is not None and wait >= remaining:
        return Verdict(wait=None, reason=f"{reason}; a wait of {wait:.2f}s would pass the run's deadline")
    return Verdict(wait=wait, reason=reason)
