"""What both HTTP shells share: their settings, the headers a run is sent with, redaction, redirects,
the run's deadline and the reading of an answer's bytes within it.

:class:`ClientBase` is ``AgentClient``'s and ``AsyncAgentClient``'s (:mod:`agui_client.client`); it
does no I/O of its own but the checks every read and send make.
"""


from __future__ import annotations

import logging
import re
import ssl  # (its errors only)
import time
import weakref
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from contextlib import (
    contextmanager,
)
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

import httpx

from ._answers import (
    about,
    certificate_refused,
    media_type,
    redacted_cause,
    undecodable,
    unreachable_hint,
)
from ._deadline import HeadTooLong
from ._framing import SSE
from ._inert import quoted, quoted_name
from ._logs import filter_http_logs, unfilter_collected, unfilter_names
from ._pool import (
    ProxiedSyncTransport,
    ProxiedTransport,
    ShardedSyncTransport,
    ShardedTransport,
)
from ._proxies import proxy_credentials
from ._retries import checked_retries
from ._wakes import wake_requests
from .core.budget import DEFAULT_MAX_RUN_MEMORY
from .core.exchange import StreamHandle
from .core.headers import checked_headers, layered
from .core.legacy import LEGACY_BRIDGES, LegacyInterrupts
from .core.patch import MAX_PATCH_OPS
from .core.plan import checked_seconds
from .core.redact import Redactor, displayed_url, is_sensitive
from .core.retry import DEFAULT_MAX_RETRIES, DEFAULT_RETRY_BACKOFF
from .core.schema import DEFAULT_MAX_SCHEMA_STEPS
from .errors import (
    ConnectTimeout,
    IdleTimeout,
    LimitExceeded,
    RunTimeout,
    TransportError,
)
from .telemetry import Telemetry, resolve
from .wire.types.run import RunAgentInput

if TYPE_CHECKING:
    from .stores import ThreadStore

__all__ = ["ClientBase", "Deadline", "DEFAULT_IDLE_TIMEOUT", "DEFAULT_CONNECT_TIMEOUT", "DEFAULT_MAX_RUN_BYTES",
           "DEFAULT_MAX_RUN_MEMORY", "MAX_REDIRECTS", "check_url", "sent_headers", "traces",
           "transports", "wake_runs"]

logger = logging.getLogger("agui_client")

#: Longest silence (no bytes at all) tolerated between events, in seconds.
DEFAULT_IDLE_TIMEOUT = 60.0
#: Longest wait for the connection to the agent, in seconds.
DEFAULT_CONNECT_TIMEOUT = 10.0
#: The most bytes of body (decoded) one run's response may bring, by default: 256 MiB.
DEFAULT_MAX_RUN_BYTES = 256 * 2**20
#: Redirects followed at most (with ``follow_redirects=True``, same origin only).
MAX_REDIRECTS = 10
#: What an idle timeout's message tells the caller to do. The silence may be the agent at work (a model
#: thinking before its first token) as well as a dead peer; which one, only the caller knows.
_SLOWER = ("that is the client's idle_timeout; raise it for an agent that works longer without sending (a "
           "keep-alive comment also resets the wait)")


def _positive_or_none(name: str, value: int | None) -> int | None:
    """``value`` for the limit ``name`` if it is a positive ``int`` or ``None``; else ``ValueError``.

    Checked when the limit is set, not at the first read: a zero would fail every run at once, a float
    with a ``TypeError`` from inside the read loop or the fold.
    """
    if value is not None and (type(value) is not int or value < 1):
        raise ValueError(f"{name} must be a positive int or None, got {value!r}")
    return value


def _reason(exc: BaseException) -> str:
    """What went wrong, for a message: httpx's text, or its type when that is empty (a closed client)."""
    text = quoted(str(exc))
    return f"{type(exc).__name__}: {text}" if text else f"{type(exc).__name__} (no detail from httpx)"


def transports(http: httpx.Client | httpx.AsyncClient) -> list[Any]:
    """The transports that really send ``http``'s requests: its own first (``None`` where httpx no longer keeps
    it where it is looked for), then those mounted for some URLs (a mount of ``None``, where no transport
    serves its URLs, is left out)."""
    # (httpx keeps its transports in private attributes, read with defaults)
    return [_unwrapped(getattr(http, "_transport", None)),
            *(_unwrapped(t) for t in getattr(http, "_mounts", {None: object()}).values() if t is not None)]


def wake_runs(http: httpx.Client | httpx.AsyncClient, sender: object) -> None:
    """End at once the runs ``sender``'s client has in flight on ``http``, a client it was given and does not
    close (:func:`~agui_client._wakes.wake_requests`): their connections, and no other, are shut down."""
    for transport in transports(http):
        wake_requests(transport, sender)


def traces(http: httpx.Client | httpx.AsyncClient) -> bool:
    """Every transport ``http`` may use is httpx's own, which reports the request's progress (``trace``)."""
    # (if httpx's private attributes move, the answer is "no": the cautious one)
    used = transports(http)
    return all(t is None or type(t) in (httpx.HTTPTransport, httpx.AsyncHTTPTransport, ShardedTransport,
                                        ShardedSyncTransport, ProxiedTransport, ProxiedSyncTransport)
               for t in used) \
        and used[0] is not None


def _unwrapped(transport: Any) -> Any:
    """The transport that really sends: a recording one (``agui_client.testing.RecordingTransport``)
    hands every request, its ``trace`` extension included, to its ``inner`` one unchanged."""
    while getattr(type(transport), "passes_through", False):
        transport = transport.inner
    return transport


#: A URL written from its host on (``localhost:8000/agent``): the one to suggest ``http://`` for.
_HOST_FIRST: Final = re.compile(r"[A-Za-z0-9.-]+(:[0-9]+)?(/|$)")


def check_url(url: str, *, own_http: bool, base_url: httpx.URL | None = None) -> None:
    """Refuse at once an agent URL no run could reach. httpx refuses it only when a request goes out, so
    the mistake would surface at the first run, as a transport failure, after a thread was claimed.

    A client given its own ``http_client`` may mount transports for other schemes, and a relative URL
    goes to that client's ``base_url`` (as httpx sends it); only a URL that ends up without a host is
    refused there. The URL is shown without userinfo or sensitive query values, and httpx's reason only
    when no userinfo could be read into it (a password holding ``/`` reads as a port).

    Both clients run it when they are made, and the CLI before it asks or sends anything (``own_http``
    is true there: its httpx client is always its own).

    Raises:
        TypeError: ``url`` is not a ``str``.
        ValueError: no run could reach ``url`` (the message says why, and how to write it when that is clear).
    """
    if not isinstance(url, str):
        raise TypeError(f"url must be a str, not {type(url).__name__}")
    if not url.strip():
        raise ValueError("the agent's URL is empty")
    if url != url.strip():
        raise ValueError("the agent's URL starts or ends with a blank")
    relative = "://" not in url and not own_http and base_url is not None and bool(base_url.host)
    try:
        parsed = base_url.join(url) if relative and base_url is not None else httpx.URL(url)
    except httpx.InvalidURL as exc:
        # httpx's reason names a position, a character or the port as it read it; with "@" in the text
        # what it read as the port may be part of a password.
        raise ValueError("the agent's URL cannot be read" + ("" if "@" in url else f": {exc}")) from None
    if "://" not in url and not relative:
        hint = (f": write it as {quoted(displayed_url('http://' + url))} (or https://)"
                if _HOST_FIRST.match(url) else " (http:// or https://)")
        raise ValueError("the agent's URL has no scheme" + hint)
    if own_http and parsed.scheme not in ("http", "https"):
        raise ValueError(f"the agent's URL must start with http:// or https://, not {quoted(parsed.scheme + '://')}")
    if not parsed.host:
        raise ValueError(f"the agent's URL has no host: {quoted(displayed_url(url))}")
    if parsed.port is not None and not 0 < parsed.port < 65536:
        raise ValueError(f"the agent's URL has port {parsed.port}: a port is 1 to 65535")


def sent_headers(base: Mapping[str, str], extra: Mapping[str, str] | None, *, sending: bool = True
                 ) -> list[tuple[str, str]]:
    """The client's headers, ``extra`` (a run's) over them, and ours merged in, never silently dropping theirs.

    A name ``extra`` sets replaces the client's same-named header whatever the case of either (as httpx
    merges a request's headers over its client's): a per-run ``authorization`` must not go out beside
    the client's ``Authorization``. ``sending``: a request goes out with them (else they only build a
    redactor, and a replaced ``Content-Type`` is not warned about).
    """
    given = layered(tuple(base.items()), extra).items()
    headers: list[tuple[str, str]] = []
    accept: list[str] = [SSE]
    coding = False
    for name, value in given:
        lowered = name.lower()
        if lowered == "accept":
            # The answer must be an event stream; the caller's types stay, after ours.
            accept += [t.strip() for t in value.split(",") if t.strip() and media_type(t) != SSE]
        elif lowered == "content-type":
            if sending and media_type(value) != "application/json":
                # (the value is not logged: a run's header values stay out of the logs, whatever their name)
                logger.warning("header %s replaced by application/json (the body is a JSON RunAgentInput)", name)
        else:
            coding = coding or lowered == "accept-encoding"
            headers.append((name, value))
    headers += [("Content-Type", "application/json"), ("Accept", ", ".join(accept))]
    if not coding:
        # Only the codings the clients undo in bounded steps (httpx would also offer br and zstd when
        # their packages are installed); see agui_client/_inflate.py.
        headers.append(("Accept-Encoding", "gzip, deflate"))
    return headers


class Deadline:
    """A run's overall deadline: ``limit`` seconds from the request, on the monotonic clock."""

    __slots__ = ("limit", "at")

    def __init__(self, limit: float) -> None:
        self.limit = limit
        #: The monotonic time it passes.
        self.at = time.monotonic() + limit

    def passed(self) -> bool:
        """Whether the run's time is up (a timeout that ended a wait is the run's when it is)."""
        return time.monotonic() >= self.at


#: How many redactors a client keeps (see ``ClientBase._redactor``).
_REDACTORS_KEPT: Final = 16
#: How many header names a client remembers the sensitivity of (see ``ClientBase._redactor``).
_NAMES_KEPT: Final = 256


class ClientBase:
    """Settings, checks and the reading of answers that both HTTP shells share."""

    #: The block a caller keeps a client open in (named when a closed client is used).
    _WITH = "with"

    def __init__(self, url: str, *, headers: Mapping[str, str] | None, timeout: float, idle_timeout: float,
                 max_event_bytes: int, store: ThreadStore | None, follow_redirects: bool,
                 clock: Callable[[], datetime] | None, sensitive_headers: Iterable[str],
                 run_timeout: float | None, telemetry: Telemetry | bool | None = None,
                 legacy_interrupts: LegacyInterrupts | None = None,
                 max_run_bytes: int | None = DEFAULT_MAX_RUN_BYTES, max_retries: int = DEFAULT_MAX_RETRIES,
                 retry_backoff: float = DEFAULT_RETRY_BACKOFF,
                 max_run_memory: int | None = DEFAULT_MAX_RUN_MEMORY,
                 max_patch_ops: int | None = MAX_PATCH_OPS,
                 max_schema_steps: int | None = DEFAULT_MAX_SCHEMA_STEPS) -> None:
        if legacy_interrupts is not None and legacy_interrupts not in LEGACY_BRIDGES:
            raise ValueError(f"legacy_interrupts must be one of {list(LEGACY_BRIDGES)} or None, "
                             f"not {legacy_interrupts!r}")
        self.legacy_interrupts: LegacyInterrupts | None = legacy_interrupts
        self.url = url
        #: Where runs report to OpenTelemetry (``None``: nowhere); see :class:`~agui_client.Telemetry`.
        self.telemetry = resolve(telemetry)
        self.run_timeout = checked_seconds("run_timeout", run_timeout)
        # Checked as a run's headers are, now rather than at the first run (after a claim, with httpx's
        # message quoting the value).
        self.headers = dict(checked_headers(headers))
        self.sensitive_headers = frozenset(name.strip().lower() for name in sensitive_headers)
        filter_http_logs(self.sensitive_headers)
        # Given back once: at the first close, or when the client is collected unclosed (a client dropped
        # without close() kept its names hidden in every later client's log lines). The finalizer holds
        # the names, not the client; at the interpreter's exit there is nobody left to show them to. (The
        # collector's way never waits for the filter's lock: it may come while this thread holds it.)
        self._log_names = weakref.finalize(self, unfilter_collected, self.sensitive_headers)
        self._log_names.atexit = False
        self._proxy_headers = proxy_credentials()
        self.timeout = checked_seconds("timeout", timeout)
        self.idle_timeout = checked_seconds("idle_timeout", idle_timeout)
        self.max_event_bytes = max_event_bytes
        self.max_run_bytes = max_run_bytes  # (checked by the property's setter)
        self.max_run_memory = max_run_memory  # (so is this)
        self.max_patch_ops = max_patch_ops  # (and this)
        self.max_schema_steps = max_schema_steps  # (and this)
        self.max_retries, self.retry_backoff = checked_retries(max_retries, retry_backoff)
        self.follow_redirects = follow_redirects
        self.clock = clock
        self._redactors: dict[Hashable, Redactor] = {}
        #: Whether each header name sent holds a secret (``_redactor``'s key is the sensitive headers).
        self._sensitive_names: dict[bytes, bool] = {}
        self._names_marked = self.sensitive_headers  # (the marked names ``_sensitive_names`` holds for)
        self._owns_store = store is None
        if store is None:
            from .stores import MemoryStore

            store = MemoryStore()
        self.store: ThreadStore = store
        self._closed = False
        #: Marks this client's requests (:data:`~agui_client._wakes.SENDER`): a token, not the client, so that a
        #: request kept (in an error, by a transport) keeps nothing of the client alive.
        self._sender = object()

    def _unmark_log_names(self) -> None:
        """Give back the names this client marked for httpx's log lines (as it closes, once)."""
        marked = self._log_names.detach()  # (None: given back already; else the finalizer's arguments)
        if marked is not None:
            unfilter_names(*marked[2])

    @property
    def is_closed(self) -> bool:
        """Whether ``close()`` was called: the client, and every thread it made, sends nothing more."""
        return self._closed

    def __repr__(self) -> str:
        # The URL as a person may see it (no userinfo, no secret query value) and never a header.
        url = displayed_url(self.url, marked=self.sensitive_headers)
        closed = " closed" if self._closed else ""
        return f"<{type(self).__name__} url={url!r} store={type(self.store).__name__}{closed}>"

    def _check_open(self) -> None:
        # A closed client has closed the store it made: without this, a new thread would fail with the
        # store's "the store is closed", which names nothing the caller did.
        if self._closed:
            raise RuntimeError(f"this {type(self).__name__} is closed: make a new one, or use it inside its "
                               f"`{self._WITH}` block")

    def _listing(self, after: str | None, limit: int) -> Callable[[], list[str]]:
        """The store's ``thread_ids`` call for one page, checked up front (a closed client, a store that
        cannot list)."""
        self._check_open()
        from .stores.base import ListingStore, check_page

        store = self.store
        if not isinstance(store, ListingStore):
            raise TypeError(f"{type(store).__name__} cannot list its threads: it has no thread_ids method "
                            "(see agui_client.stores.ListingStore; every store agui_client ships has one)")
        check_page(after, limit)
        return lambda: store.thread_ids(after=after, limit=limit)

    def unsent_redactor(self, headers: Mapping[str, str] | None = None) -> Redactor:
        """The redactor of a request this client would send, with a run's checked ``headers``: what keeps
        their credentials out of what is reported about a run refused before anything was sent (the ids
        such a report names came from the agent in earlier runs, and may echo a credential).

        What a thread's telemetry and ``agui probe`` redact with; ``redactor.text(s)`` is ``s`` with
        every credential value replaced.
        """
        request = httpx.Request("POST", self.url, headers=sent_headers(self.headers, headers, sending=False))
        return self._redactor(request)

    def _redactor(self, *requests: httpx.Request) -> Redactor:
        """What keeps the credentials of ``requests`` (the exchange so far) out of everything reported about it."""
        # Kept per client, keyed on everything it is made of: a run builds one before sending and one
        # after (about 15 and 30 us, and its pattern is compiled again when first used), though nearly
        # every run of a client sends the same credentials to the same URL. Only the sensitive headers
        # make it, and only they are the key: the others change from run to run (Content-Length, as the
        # thread a run sends grows), which would make every run's key a new one.
        marked = self.sensitive_headers
        sensitive = self._sensitive_names
        if len(sensitive) >= _NAMES_KEPT or self._names_marked is not marked:
            sensitive.clear()
            self._names_marked = marked
        made_of = []
        for request in requests:
            for name, value in request.headers.raw:
                found = sensitive.get(name)
                if found is None:
                    found = sensitive[name] = is_sensitive(name.decode("latin-1"), marked)
                if found:
                    made_of.append((name, value))
        urls = (self.url, *(str(request.url) for request in requests))
        key = (tuple(made_of), urls, marked)
        cache = self._redactors
        redactor = cache.get(key)
        if redactor is None:
            redactor = Redactor.of([*self._proxy_headers,
                                    *(item for request in requests for item in request.headers.multi_items())],
                                   urls, marked=marked)
            if len(cache) >= _REDACTORS_KEPT:
                cache.clear()  # (headers that change with every run: a token per request, say)
            cache[key] = redactor
        return redactor

    @contextmanager
    def _sending(self, request: httpx.Request, handle: StreamHandle, deadline: Deadline | None,
                 run_id: str | None = None) -> Iterator[None]:
        # Sending, as both shells see it: httpx's errors become ours, saying whether the request left.
        # The redactor is built from the request as it stands when the error comes (an httpx auth flow
        # adds its header while sending), and cleans httpx's own message too, as it is kept as the cause.
        try:
            yield
        except HeadTooLong:
            raise LimitExceeded(
                f"the answer's head (with the informational answers before it) went past max_run_bytes "
                f"({self.max_run_bytes} bytes) before the body began", limit=self.max_run_bytes or 0, run_id=run_id,
                rule="RUN-BYTES") from None
        except (httpx.RequestError, httpx.InvalidURL, ssl.SSLError) as exc:  # (InvalidURL is no RequestError)
            # (ssl's own: httpx's async transport lets a TLS record refused while the head is read through bare)
            redactor = self._redactor(request)
            # (the request httpx's error names, read before the error is given its shown copy)
            see_other = _see_other(exc, request)
            # (httpx's words are kept as the cause, which a traceback prints: redacted, and cut as ours are)
            redacted_cause(exc, redactor, lambda text: quoted(redactor.text(text)))
            if isinstance(exc, httpx.TimeoutException) and deadline is not None and deadline.passed():
                error: TransportError = self._overdue(deadline, redactor.url(self.url), sent=handle.sent)
            else:
                error = self._send_error(exc, redactor, handle.sent, see_other)
            raise about(error, request, redactor) from exc

    def _send_error(self, exc: httpx.RequestError | httpx.InvalidURL | ssl.SSLError, redactor: Redactor,
                    written: bool, see_other: httpx.Request | None = None) -> TransportError:
        """Our error for httpx's ``exc`` while sending. ``written``: whether the request may have reached the
        agent whole; httpx's own transports report the moment its body is written (``StreamHandle.trace``),
        so a write that failed part-way (a reset after 1 KB of a large body) did not, and says so.
        ``see_other``: the ``GET`` a 303 asked for, when that is what failed: the agent took the run."""
        url = redactor.url(self.url)
        if see_other is not None and isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)):
            # The run reached the agent, which answered it with the 303: the request is not to be sent
            # again, and a resume stays claimed, though this connection was never made.
            where = redactor.url(str(see_other.url))
            return TransportError(f"the agent at {url} took the run and sent the client on (303) to {where}, "
                                  f"which could not be reached: {_reason(exc)}", url=url, request_sent=True)
        if self._closed and isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)):
            # (closing the client woke a run still connecting, or in its TLS handshake, with the connection's
            # end or the refusal of a connection opened after the close: see the branch of the answer's head)
            return TransportError(f"request to {url} failed: the client was closed before the agent's answer came "
                                  f"({_reason(exc)}) (the request was not written whole: it never reached the agent)",
                                  url=url, request_sent=False)
        if isinstance(exc, httpx.ConnectTimeout):
            return ConnectTimeout(f"could not connect to {url} within {self.timeout}s (the client's timeout): is the "
                                  "agent up, and reachable from here?", timeout=self.timeout, url=url)
        if isinstance(exc, (httpx.ConnectError, httpx.UnsupportedProtocol, httpx.InvalidURL)):
            hint = unreachable_hint(exc)
            return certificate_refused(exc, url) or TransportError(
                f"could not reach {url}: {_reason(exc)}" + (f" ({hint})" if hint else ""), url=url, request_sent=False)
        unsent = "" if written else " (the request was not written whole: it never reached the agent)"
        if isinstance(exc, httpx.WriteTimeout):
            # (an agent that takes none of a large request: the wait is the write timeout, not the idle one)
            return IdleTimeout(f"the agent at {url} took none of the request for {self.timeout}s (the client's "
                               f"timeout){unsent}: is the agent reading requests?",
                               timeout=self.timeout, url=url, request_sent=written)
        if isinstance(exc, httpx.PoolTimeout):
            return IdleTimeout(f"no connection to {url} came free in the pool within {self.timeout}s{unsent}: other "
                               "runs hold every connection the http_client's limits allow; raise them",
                               timeout=self.timeout, url=url, request_sent=written)
        if isinstance(exc, httpx.TimeoutException):
            return IdleTimeout(f"no answer from {url} within {self.idle_timeout}s{unsent}: {_SLOWER}",
                               timeout=self.idle_timeout, url=url, request_sent=written)
        if isinstance(exc, httpx.TransportError):
            if self._closed:
                # Closing the client closed the connection the run waited on for the answer's head; httpx's
                # words ("Bad file descriptor", "the connection was closed") read as a fault of the agent
                # or the network, not as the caller's own close, which the words name first.
                return TransportError(f"request to {url} failed: the client was closed before the agent's answer "
                                      f"came ({_reason(exc)}){unsent}", url=url, request_sent=written)
            return TransportError(f"request to {url} failed: {_reason(exc)}{unsent}", url=url, request_sent=written)
        # (anything else about the exchange)
        return TransportError(f"request to {url} failed: {exc!r}{unsent}", url=url, request_sent=written)

    def _redirect(self, response: httpx.Response, first: httpx.Request, redactor: Redactor) -> httpx.Request | None:
        """The request a redirect asks for, when it is to be followed: only when enabled, and only
        to the same origin, since the caller's headers (credentials among them) go with it."""
        target = response.next_request
        if target is None or not self.follow_redirects:
            return None
        if not _same_origin(target, first):
            logger.warning("not following the redirect from %s to another origin (%s): the request carries the "
                           "caller's headers", redactor.url(self.url),
                           quoted(redactor.url(str(target.url.copy_with(query=None)))))
            return None
        if _drops_the_run(response, target):
            return None
        return target

    def _not_followed(self, response: httpx.Response, first: httpx.Request) -> str:
        """Why the redirect ``response`` ends the exchange, for its error."""
        target = response.next_request
        if not self.follow_redirects:
            return ("redirects are followed only with follow_redirects=True, to the same origin, "
                    f"at most {MAX_REDIRECTS} times")
        if target is not None and not _same_origin(target, first):
            return "it leads to another origin, and the request carries the caller's headers"
        if target is not None and _drops_the_run(response, target):
            return (f"a {response.status_code} would send it on as a {target.method} without the run (httpx turns "
                    "a redirected POST into a GET, as browsers do), so the agent would never see it; 307 and 308 "
                    "keep the POST")
        return f"{MAX_REDIRECTS} redirects were followed already"

    def _timeout(self, deadline: Deadline | None = None) -> httpx.Timeout:
        # httpx's read timeout is the longest wait for the next bytes: the idle timeout, and never
        # longer than what is left of the run's deadline (httpx takes it once per response, not per
        # read). The waits for a connection of the pool, for the connection itself and for each write
        # are never longer than that either: an ``http_client`` whose pool is full (its ``limits`` held
        # by other runs) kept a run waiting ``timeout`` seconds past a shorter ``run_timeout``. What is
        # left, not the whole deadline: a request sent again (``max_retries``) starts after the waits.
        if deadline is None:
            return httpx.Timeout(self.timeout, read=self.idle_timeout, write=self.timeout, pool=self.timeout)
        left = max(0.0, deadline.at - time.monotonic())
        bound = min(self.timeout, left)
        return httpx.Timeout(bound, read=min(self.idle_timeout, left), write=bound, pool=bound)

    @property
    def max_run_bytes(self) -> int | None:
        """The most bytes of body (decoded) a run's response may bring (``None``: no bound); read when a
        run starts, so setting it changes the next runs.

        Raises:
            ValueError: (setting) neither a positive ``int`` nor ``None``.
        """
        return self._max_run_bytes

    @max_run_bytes.setter
    def max_run_bytes(self, value: int | None) -> None:
        # (checked here, not at the first read: a zero would fail every run with RUN-BYTES, a float
        # with a TypeError from inside the read loop)
        self._max_run_bytes = _positive_or_none("max_run_bytes", value)

    @property
    def max_run_memory(self) -> int | None:
        """The most one run's response may make its thread hold, in bytes, as estimated while it is read
        (``None``: no bound); read when a run starts, so setting it changes the next runs.

        The estimate (``core/budget.py``) charges the body's bytes, each ``[``, ``{``, ``,`` and ``:`` of its
        events' values and each message, tool call, run, subagent and step the thread gains, and an event
        of 128 KiB or more what parsing it takes (74 bytes for each of those characters and 9 for each of its
        bytes, for as long as it is parsed), and, from the first read whose text may not be ASCII (a byte
        past it, or a ``\\u`` escape of a character past Latin-1), 4 more for each byte of the response,
        as CPython may then hold a text's every character in 4 bytes; a read that would pass it is refused
        before it is folded (``LimitExceeded``, ``RUN-MEMORY``).

        Raises:
            ValueError: (setting) neither a positive ``int`` nor ``None``.
        """
        return self._max_run_memory

    @max_run_memory.setter
    def max_run_memory(self, value: int | None) -> None:
        # (checked here, as max_run_bytes is: a zero would refuse every run's first read)
        self._max_run_memory = _positive_or_none("max_run_memory", value)

    @property
    def max_patch_ops(self) -> int | None:
        """The most operations one patch (a ``STATE_DELTA``, an ``ACTIVITY_DELTA``) may hold, ``MAX_PATCH_OPS``
        (20,000) by default (``None``: no bound); read when a run starts, so setting it changes the next runs.

        A longer patch is refused whole, before any operation applies (a warning, code ``SP-06``; the
        state stays as it was, out of step with the agent's until its next snapshot). Each operation
        costs a microsecond or two of the fold whatever its size, on the event loop for an async client:
        20,000 are some 30 ms, a ``STATE_DELTA`` of 16 MiB holds some 480,000 (0.7 s). Raise it for an
        agent that diffs large tables; lower it where many runs share one loop.

        Raises:
            ValueError: (setting) neither a positive ``int`` nor ``None``.
        """
        return self._max_patch_ops

    @max_patch_ops.setter
    def max_patch_ops(self, value: int | None) -> None:
        # (checked here, as the other limits are: a zero would refuse every patch, a float fail mid-run)
        self._max_patch_ops = _positive_or_none("max_patch_ops", value)

    @property
    def max_schema_steps(self) -> int | None:
        """The most steps the ``responseSchema`` s of one response's interrupts may buy the resume that
        answers them, ``DEFAULT_MAX_SCHEMA_STEPS`` (8,000,000, about 4.5 s of checking) by default
        (``None``: what the schemas' size pays for); read when a run starts and when a resume is checked.

        A step is about half a microsecond of checking answers against schemas (an async client's
        ``run()`` and ``stream()`` check in a worker thread; the tool loop's early check, a retried send's
        and a ``builder.build()`` of the caller's run where they are called). What a resume may spend
        grows with its schemas' text, so one ``RUN_FINISHED`` of 16 MiB of schemas that multiply their
        work bought 16 million steps (9 s). Such a ``RUN_FINISHED`` is refused as it is read
        (``LimitExceeded``, code ``SCHEMA-STEPS``, naming the interrupt), and a resume's checks stop
        ``over-budget`` at the ceiling. 1,000 ordinary 50-field forms of their own fit (7.1 million);
        lower it where many runs share one loop.

        Raises:
            ValueError: (setting) neither a positive ``int`` nor ``None``.
        """
        return self._max_schema_steps

    @max_schema_steps.setter
    def max_schema_steps(self, value: int | None) -> None:
        # (checked here, as the other limits are: a zero would refuse every schema, a float fail mid-run)
        self._max_schema_steps = _positive_or_none("max_schema_steps", value)

    def _deadline(self, run_timeout: float | None) -> Deadline | None:
        limit = run_timeout if run_timeout is not None else self.run_timeout
        return None if limit is None else Deadline(limit)

    @contextmanager
    def _reading(self, response: httpx.Response, redactor: Redactor, deadline: Deadline | None,
                 run_id: str | None) -> Iterator[None]:
        # Reading the body, as both shells see it: httpx's errors become ours. A dropped connection
        # is not one: what arrived stands, and the session says the run did not end.
        url = redactor.url(self.url)
        try:
            yield
        except TransportError:
            raise  # (ours, and also an httpx error: not to be taken below for httpx's own)
        except httpx.ReadTimeout as exc:
            if deadline is not None and deadline.passed():
                raise about(self._overdue(deadline, url), response.request, redactor) from redacted_cause(
                    exc, redactor)
            raise about(IdleTimeout(f"no bytes from {url} for {self.idle_timeout}s: {_SLOWER}",
                                    timeout=self.idle_timeout, url=url),
                        response.request, redactor) from redacted_cause(exc, redactor)
        except (httpx.TransportError, ssl.SSLError) as exc:
            # (ssl's own: a TLS record refused mid-body, which httpx's async transport lets through bare, is
            # the connection failing as any other)
            # (httpx's words quote what the agent wrote, a chunk header of up to 16 KiB: redacted whole, then
            # cut as every error and log line cuts them)
            logger.debug("stream from %s ended by %s", url, quoted(redactor.text(repr(exc))))
        except httpx.DecodingError as exc:
            raise undecodable(response, exc, url, redactor, run_id) from redacted_cause(exc, redactor)

    def _in_time(self, deadline: Deadline | None, response: httpx.Response, redactor: Redactor) -> None:
        """Raise ``RunTimeout`` when the run's deadline has passed (checked after each read)."""
        if deadline is not None and deadline.passed():
            raise about(self._overdue(deadline, redactor.url(self.url)), response.request, redactor)

    def _overdue(self, deadline: Deadline, url: str, *, sent: bool = True) -> RunTimeout:
        return RunTimeout(f"the run at {url} went on past its run_timeout of {deadline.limit}s", timeout=deadline.limit,
                          url=url, request_sent=sent)

    def _describe(self, run_input: RunAgentInput) -> str:
        return f"thread {quoted_name(run_input.thread_id)} run {quoted_name(run_input.run_id)}"


def _see_other(exc: BaseException, first: httpx.Request) -> httpx.Request | None:
    """The request that failed with ``exc`` when it is the ``GET`` a 303 asked for (httpx's errors name
    the request they failed on), not the run's ``first`` one nor its ``POST`` a 307 or 308 sent again."""
    try:
        failed = exc.request if isinstance(exc, httpx.RequestError) else None
    except RuntimeError:  # (an error raised without its request)
        return None
    return failed if failed is not None and failed.method != first.method else None


def _same_origin(target: httpx.Request, first: httpx.Request) -> bool:
    return (target.url.scheme, target.url.host, target.url.port) == (first.url.scheme, first.url.host, first.url.port)


def _drops_the_run(response: httpx.Response, target: httpx.Request) -> bool:
    """Following ``response`` would send ``target`` without the run: httpx turns a POST redirected by a 301
    or 302 into a body-less GET, as browsers do. An agent's endpoint that moved would then answer a
    request holding no run (a 405, or an event stream the run never reached, read as its answer); a 303
    (See Other) is followed, as it says the answer to the POST is elsewhere. Judged hop by hop: the GET a 303
    asked for holds no run, and its own redirects are followed as any."""
    return target.method != response.request.method and response.status_code != 303
