"""The HTTP shells: ``AgentClient`` and ``AsyncAgentClient``.

They move bytes and nothing else: POST the encoded ``RunAgentInput``, check the response is an event
stream, and hand every SSE payload on the moment its bytes arrive. Framing, decoding, the sequence
rules and the fold live in the sans-IO core; ``Thread``/``AsyncThread`` loop the payloads into it.

Safe by default: a connect timeout, an idle timeout between bytes (keep-alive comments count as
bytes), a per-event size limit enforced while buffering, a bounded excerpt of error bodies, no
redirects followed, and the response closed whatever way the caller leaves the stream.
"""

from __future__ import annotations

import logging
import re
import ssl  # (its errors only)
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Hashable, Iterable, Iterator, Mapping
from contextlib import (
    AbstractAsyncContextManager,
    AbstractContextManager,
    aclosing,
    asynccontextmanager,
    contextmanager,
)
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, cast

import httpx
from anyio.lowlevel import checkpoint

from ._answers import (
    Excerpt,
    about,
    certificate_refused,
    media_type,
    status_error,
    undecodable,
)
from ._framing import REFUSED_TYPES, SSE, Framer, check_media, framed, inflater_for
from ._inert import quoted
from ._logs import exchange as logged_exchange
from ._logs import filter_http_logs
from ._pool import (
    HeadTooLong,
    ProxiedSyncTransport,
    ProxiedTransport,
    ShardedSyncTransport,
    ShardedTransport,
    own_async_transport,
    own_transport,
)
from ._pool import deadline as send_deadline
from ._proxies import proxy_credentials
from ._retries import DEFAULT_MAX_RETRIES, DEFAULT_RETRY_BACKOFF, atried, checked_retries, tried
from .core.exchange import StreamHandle, request_body
from .core.headers import checked_headers, layered
from .core.legacy import LEGACY_BRIDGES, LegacyInterrupts
from .core.redact import SENSITIVE_EXTENSION, Redactor, displayed_url, is_sensitive, redact_exception
from .core.session import DEFAULT_MAX_EVENT_BYTES
from .errors import (
    ConnectTimeout,
    IdleTimeout,
    LimitExceeded,
    RunTimeout,
    TransportError,
)
from .telemetry import Telemetry, resolve
from .thread import AsyncThread, Thread, in_worker
from .wire.types.run import RunAgentInput

if TYPE_CHECKING:
    from .stores import ThreadStore

__all__ = ["AgentClient", "AsyncAgentClient", "StreamHandle", "DEFAULT_IDLE_TIMEOUT", "DEFAULT_CONNECT_TIMEOUT",
           "DEFAULT_MAX_RUN_BYTES", "check_url"]

logger = logging.getLogger("agui_client")

#: Longest silence (no bytes at all) tolerated between events, in seconds.
DEFAULT_IDLE_TIMEOUT = 60.0
#: Longest wait for the connection to the agent, in seconds.
DEFAULT_CONNECT_TIMEOUT = 10.0
#: The most bytes of body (decoded) one run's response may bring, by default: 256 MiB.
DEFAULT_MAX_RUN_BYTES = 256 * 2**20
#: Redirects followed at most (with ``follow_redirects=True``, same origin only).
MAX_REDIRECTS = 10

def _reason(exc: BaseException) -> str:
    """What went wrong, for a message: httpx's text, or its type when that is empty (a closed client)."""
    text = quoted(str(exc))
    return f"{type(exc).__name__}: {text}" if text else f"{type(exc).__name__} (no detail from httpx)"


def _traces(http: httpx.Client | httpx.AsyncClient) -> bool:
    """Every transport ``http`` may use is httpx's own, which reports the request's progress (``trace``)."""
    # (httpx keeps its transports in private attributes; if they move, the answer is "no": the cautious one)
    transports = [_unwrapped(getattr(http, "_transport", None)),
                  *(_unwrapped(t) for t in getattr(http, "_mounts", {None: object()}).values())]
    return all(t is None or type(t) in (httpx.HTTPTransport, httpx.AsyncHTTPTransport, ShardedTransport,
                                        ShardedSyncTransport, ProxiedTransport, ProxiedSyncTransport)
               for t in transports) \
        and transports[0] is not None


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


def _headers(base: Mapping[str, str], extra: Mapping[str, str] | None, *, sending: bool = True
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


class _Deadline:
    """A run's overall deadline: ``limit`` seconds from the request, on the monotonic clock."""

    __slots__ = ("limit", "at")

    def __init__(self, limit: float) -> None:
        self.limit = limit
        #: The monotonic time it passes.
        self.at = time.monotonic() + limit

    def passed(self) -> bool:
        return time.monotonic() >= self.at


#: How many redactors a client keeps (see ``_ClientBase._redactor``).
_REDACTORS_KEPT: Final = 16
#: How many header names a client remembers the sensitivity of (see ``_ClientBase._redactor``).
_NAMES_KEPT: Final = 256


class _ClientBase:
    def __init__(self, url: str, *, headers: Mapping[str, str] | None, timeout: float, idle_timeout: float,
                 max_event_bytes: int, store: ThreadStore | None, follow_redirects: bool,
                 clock: Callable[[], datetime] | None, sensitive_headers: Iterable[str],
                 run_timeout: float | None, telemetry: Telemetry | bool | None = None,
                 legacy_interrupts: LegacyInterrupts | None = None,
                 max_run_bytes: int | None = DEFAULT_MAX_RUN_BYTES, max_retries: int = DEFAULT_MAX_RETRIES,
                 retry_backoff: float = DEFAULT_RETRY_BACKOFF) -> None:
        if legacy_interrupts is not None and legacy_interrupts not in LEGACY_BRIDGES:
            raise ValueError(f"legacy_interrupts must be one of {list(LEGACY_BRIDGES)} or None, "
                             f"not {legacy_interrupts!r}")
        self.legacy_interrupts: LegacyInterrupts | None = legacy_interrupts
        self.url = url
        #: Where runs report to OpenTelemetry (``None``: nowhere); see :class:`~agui_client.Telemetry`.
        self.telemetry = resolve(telemetry)
        self.run_timeout = run_timeout
        # Checked as a run's headers are, now rather than at the first run (after a claim, with httpx's
        # message quoting the value).
        self.headers = dict(checked_headers(headers))
        self.sensitive_headers = frozenset(name.strip().lower() for name in sensitive_headers)
        filter_http_logs(self.sensitive_headers)
        self._proxy_headers = proxy_credentials()
        self.timeout = timeout
        self.idle_timeout = idle_timeout
        self.max_event_bytes = max_event_bytes
        self.max_run_bytes = max_run_bytes  # (checked by the property's setter)
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
                               f"`{'async ' if isinstance(self, AsyncAgentClient) else ''}with` block")

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
        return self._redactor(httpx.Request("POST", self.url, headers=_headers(self.headers, headers, sending=False)))

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
    def _sending(self, request: httpx.Request, handle: StreamHandle, deadline: _Deadline | None,
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
            # (httpx's words are kept as the cause, which a traceback prints: redacted, and cut as ours are)
            redact_exception(exc, lambda text: quoted(redactor.text(text)))
            if isinstance(exc, httpx.TimeoutException) and deadline is not None and deadline.passed():
                error: TransportError = self._overdue(deadline, redactor.url(self.url), sent=handle.sent)
            else:
                error = self._send_error(exc, redactor, handle.sent)
            raise about(error, request, redactor) from exc

    def _send_error(self, exc: httpx.RequestError | httpx.InvalidURL | ssl.SSLError, redactor: Redactor,
                    written: bool) -> TransportError:
        """Our error for httpx's ``exc`` while sending. ``written``: whether the request may have reached the
        agent whole; httpx's own transports report the moment its body is written (``StreamHandle.trace``),
        so a write that failed part-way (a reset after 1 KB of a large body) did not, and says so."""
        url = redactor.url(self.url)
        if isinstance(exc, httpx.ConnectTimeout):
            return ConnectTimeout(f"could not connect to {url} within {self.timeout}s", timeout=self.timeout, url=url)
        if isinstance(exc, (httpx.ConnectError, httpx.UnsupportedProtocol, httpx.InvalidURL)):
            return certificate_refused(exc, url) or TransportError(f"could not reach {url}: {_reason(exc)}",
                                                                   url=url, request_sent=False)
        unsent = "" if written else " (the request was not written whole: it never reached the agent)"
        if isinstance(exc, httpx.WriteTimeout):
            # (an agent that takes none of a large request: the wait is the write timeout, not the idle one)
            return IdleTimeout(f"the agent at {url} took none of the request for {self.timeout}s{unsent}",
                               timeout=self.timeout, url=url, request_sent=written)
        if isinstance(exc, httpx.PoolTimeout):
            return IdleTimeout(f"no connection to {url} came free in the pool within {self.timeout}s{unsent}",
                               timeout=self.timeout, url=url, request_sent=written)
        if isinstance(exc, httpx.TimeoutException):
            return IdleTimeout(f"no answer from {url} within {self.idle_timeout}s{unsent}", timeout=self.idle_timeout,
                               url=url, request_sent=written)
        if isinstance(exc, httpx.TransportError):
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
        if _drops_the_run(response, target, first):
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
        if target is not None and _drops_the_run(response, target, first):
            return (f"a {response.status_code} would send it on as a {target.method} without the run (httpx turns "
                    "a redirected POST into a GET, as browsers do), so the agent would never see it; 307 and 308 "
                    "keep the POST")
        return f"{MAX_REDIRECTS} redirects were followed already"

    def _timeout(self, deadline: _Deadline | None = None) -> httpx.Timeout:
        # httpx's read timeout is the longest wait for the next bytes: the idle timeout, and never
        # longer than the run's whole deadline (httpx takes it once per response, not per read). The
        # waits for a connection of the pool, for the connection itself and for each write are never
        # longer than the deadline either: an ``http_client`` whose pool is full (its ``limits`` held by
        # other runs) kept a run waiting ``timeout`` seconds past a shorter ``run_timeout``.
        if deadline is None:
            return httpx.Timeout(self.timeout, read=self.idle_timeout, write=self.timeout, pool=self.timeout)
        bound = min(self.timeout, deadline.limit)
        return httpx.Timeout(bound, read=min(self.idle_timeout, deadline.limit), write=bound, pool=bound)

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
        if value is not None and (type(value) is not int or value < 1):
            raise ValueError(f"max_run_bytes must be a positive int or None, got {value!r}")
        self._max_run_bytes = value

    def _deadline(self, run_timeout: float | None) -> _Deadline | None:
        limit = run_timeout if run_timeout is not None else self.run_timeout
        return None if limit is None else _Deadline(limit)

    @contextmanager
    def _reading(self, response: httpx.Response, redactor: Redactor, deadline: _Deadline | None) -> Iterator[None]:
        # Reading the body, as both shells see it: httpx's errors become ours. A dropped connection
        # is not one: what arrived stands, and the session says the run did not end.
        url = redactor.url(self.url)
        try:
            yield
        except TransportError:
            raise  # (ours, and also an httpx error: not to be taken below for httpx's own)
        except httpx.ReadTimeout as exc:
            if deadline is not None and deadline.passed():
                raise about(self._overdue(deadline, url), response.request, redactor) from redact_exception(
                    exc, redactor)
            raise about(IdleTimeout(f"no bytes from {url} for {self.idle_timeout}s", timeout=self.idle_timeout,
                                     url=url), response.request, redactor) from redact_exception(exc, redactor)
        except (httpx.TransportError, ssl.SSLError) as exc:
            # (ssl's own: a TLS record refused mid-body, which httpx's async transport lets through bare, is
            # the connection failing as any other)
            logger.debug("stream from %s ended by %s", url, redactor.text(repr(exc)))
        except httpx.DecodingError as exc:
            raise undecodable(response, exc, url, redactor) from redact_exception(exc, redactor)

    def _in_time(self, deadline: _Deadline | None, response: httpx.Response, redactor: Redactor) -> None:
        """Raise ``RunTimeout`` when the run's deadline has passed (checked after each read)."""
        if deadline is not None and deadline.passed():
            raise about(self._overdue(deadline, redactor.url(self.url)), response.request, redactor)

    def _overdue(self, deadline: _Deadline, url: str, *, sent: bool = True) -> RunTimeout:
        return RunTimeout(f"the run at {url} went on past its run_timeout of {deadline.limit}s", timeout=deadline.limit,
                          url=url, request_sent=sent)

    def _describe(self, run_input: RunAgentInput) -> str:
        return f"thread {run_input.thread_id!r} run {run_input.run_id!r}"


def _same_origin(target: httpx.Request, first: httpx.Request) -> bool:
    return (target.url.scheme, target.url.host, target.url.port) == (first.url.scheme, first.url.host, first.url.port)


def _drops_the_run(response: httpx.Response, target: httpx.Request, first: httpx.Request) -> bool:
    """Following ``response`` would send ``target`` without the run: httpx turns a POST redirected by a 301
    or 302 into a body-less GET, as browsers do. An agent's endpoint that moved would then answer a
    request holding no run (a 405, or an event stream the run never reached, read as its answer); a 303
    (See Other) is followed, as it says the answer to the POST is elsewhere."""
    return target.method != first.method and response.status_code != 303


class AgentClient(_ClientBase):
    """A synchronous AG-UI client bound to one agent URL.

    Example::

        from agui_client import AgentClient

        with AgentClient(url, headers={"Authorization": "Bearer <token>"}) as client:
            thread = client.thread()  # a new conversation, with a fresh id
            result = thread.run("What's the weather in Paris?")
            print(result.outcome, result.text)
            thread_id = thread.id  # keep it: client.thread(thread_id) comes back to the thread
            print(client.store.load(thread_id).version)  # saved in client.store (a MemoryStore by default)
            again = client.thread(thread_id)  # loaded from the store, its messages and interrupts with it

    Attributes:
        url: the agent's endpoint.
        store: where the threads are kept (the ``store`` argument, or a ``MemoryStore`` the client owns).
        http: the ``httpx.Client`` the client sends with.
        telemetry: where runs report to OpenTelemetry (a :class:`~agui_client.Telemetry`), or ``None``.

    Args:
        url: the agent's endpoint (runs are ``POST``ed there): ``http://`` or ``https://`` and a host
            (any scheme with your own ``http_client``, or a path joined to its ``base_url``). Another one
            raises ``ValueError`` here (a value that is no ``str``: ``TypeError``), not at the first run.
        headers: extra request headers (authentication …); merged into every request, never logged.
            One run's own go on top: ``thread.run(..., headers={"Authorization": user_credential})``
            replaces the same-named header here for that run only (see :meth:`Thread.run`).
        timeout: connect (and write) timeout in seconds; not a bound on the run (httpx's ``timeout``
            covers reads too): the silence between bytes is ``idle_timeout``, the whole run ``run_timeout``.
        idle_timeout: the longest silence between bytes before ``IdleTimeout``; keep-alive comments
            reset it.
        max_event_bytes: the largest event accepted; a larger one raises ``LimitExceeded`` before it
            is buffered whole.
        max_run_bytes: the most bytes of body (after a gzip or deflate coding is undone, and of such a
            coded body as sent too) one run's response may bring, ``DEFAULT_MAX_RUN_BYTES`` (256 MiB)
            by default, ``None`` for no bound.
            Past it the run fails with ``LimitExceeded`` (code ``RUN-BYTES``; ``.result`` holds what
            was folded): small events streamed for ever would otherwise grow the thread without end.
            Read when each run starts (set ``client.max_run_bytes`` to change it for the next runs).
        store: where threads are kept between runs (``MemoryStore`` by default).
        http_client: an ``httpx.Client`` to use (proxies, auth, transports, tests); the caller owns it.
            Its own timeout does not apply to runs: ``timeout`` and ``idle_timeout`` are set on every
            request, so a client built without one cannot leave a run waiting forever. Without one, the
            client makes its own, for many runs at once: no cap on connections (a run holds one to its
            end; httpx's default cap of 100 would make the 101st wait, then fail) and its pool split in
            shards of 8 runs (httpx's pool visits all its connections on every request and close).
            A client you pass is used as it is: size its ``limits`` for the runs you hold open. The
            client's own keeps no cookie an agent sets: its transport drops every answer's
            ``Set-Cookie``, so no jar sees one, the one you may assign included (one client may send
            many users' runs: a session cookie set on one user's run would go out with the next
            user's; a client you pass keeps them, for every run it sends). Cookies you set are sent.
            Its connections hold the run's deadline and
            ``max_run_bytes`` while the answer's head is read (endless ``103 Early Hints``); a client
            you pass holds them only for the body.
        follow_redirects: follow redirects to the same origin, at most ``MAX_REDIRECTS`` times (off by
            default: a run is not idempotent; a hop to another origin is never followed, as the
            request carries your headers). 307 and 308 send the same ``POST`` again, 303 a ``GET``; a
            301 or 302 is not followed, as httpx would send the run on as a ``GET`` without it (see
            docs/http.md).
        clock: the time source for expiry judgements (UTC ``datetime``); the system clock by default.
        sensitive_headers: names of more request headers (and URL query parameters) whose values are
            secrets, beyond those the client knows (``Authorization``, ``Proxy-Authorization``,
            ``Cookie``, and any name holding key, token, secret, auth, session, password, signature
            …). Their values, as sent, are replaced by ``[redacted]`` wherever an error, a warning, a
            log line or a stored record would repeat them (an agent may echo the request).
        run_timeout: the longest a run may take as a whole, in seconds from its request (``None``, the
            default: no bound beyond ``idle_timeout`` between bytes). Past it the run fails with
            ``RunTimeout``, as for any transport fault (a resume whose request was written stays
            claimed). ``Thread.run(run_timeout=...)`` and ``stream(...)`` set it for one run.
        telemetry: where runs report to OpenTelemetry. ``None`` (the default): the global providers when
            ``opentelemetry-api`` is installed (nothing is recorded until the application configures an
            SDK), else nowhere; a :class:`~agui_client.Telemetry` to choose the providers or to record
            content; ``False``: nowhere. See ``docs/opentelemetry.md``.
        legacy_interrupts: ``"langgraph"`` bridges LangGraph's pre-1.0 interrupts: a run that ends as
            success after ``CUSTOM on_interrupt`` events reads as the interrupt outcome
            (``RunResult.bridged`` says so), its interrupts are held open and answered with
            ``resume_builder()`` as any, and the answers travel in ``forwardedProps.command.resume``,
            where that producer reads them, never also as a resume list. ``None`` (the default): such
            a run stays a success, with a ``LEGACY-CUSTOM-INTERRUPT`` warning. See
            docs/legacy-interrupts.md.
        max_retries: how many times a run's request is sent again after a failure the agent certainly
            did not act on (no connection; a 429 or 503 answer), 0 by default; see docs/http.md.
        retry_backoff: the first wait between tries when the agent gives no ``Retry-After``, in seconds
            (0.5 by default; doubled at each try, up to 8, less up to half at random).
    """

    def __init__(self, url: str, *, headers: Mapping[str, str] | None = None,
                 timeout: float = DEFAULT_CONNECT_TIMEOUT, idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
                 max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES, store: ThreadStore | None = None,
                 http_client: httpx.Client | None = None, follow_redirects: bool = False,
                 clock: Callable[[], datetime] | None = None, sensitive_headers: Iterable[str] = (),
                 run_timeout: float | None = None, telemetry: Telemetry | bool | None = None,
                 legacy_interrupts: LegacyInterrupts | None = None, max_run_bytes: int | None = DEFAULT_MAX_RUN_BYTES,
                 max_retries: int = DEFAULT_MAX_RETRIES, retry_backoff: float = DEFAULT_RETRY_BACKOFF) -> None:
        check_url(url, own_http=http_client is None, base_url=None if http_client is None else http_client.base_url)
        super().__init__(url, headers=headers, timeout=timeout, idle_timeout=idle_timeout,
                         max_event_bytes=max_event_bytes, store=store, follow_redirects=follow_redirects, clock=clock,
                         sensitive_headers=sensitive_headers, run_timeout=run_timeout, telemetry=telemetry,
                         legacy_interrupts=legacy_interrupts, max_run_bytes=max_run_bytes,
                         max_retries=max_retries, retry_backoff=retry_backoff)
        self._owns_client = http_client is None
        self.http = http_client if http_client is not None else _sync_http(self._timeout(), follow_redirects, url)

    def __enter__(self) -> AgentClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the HTTP client and the store, each only when this client created it.

        A closed client makes no more threads (``thread()`` raises ``RuntimeError``, as httpx's
        closed client does for a request).
        """
        self._closed = True
        if self._owns_client:
            self.http.close()
        if self._owns_store:
            self.store.close()

    def thread(self, thread_id: str | None = None, *, tool_handlers: Mapping[str, Callable[..., Any]] | None = None
               ) -> Thread:
        """A conversation: a new one, or the stored thread ``thread_id`` (new if the store has none).

        Args:
            thread_id: the thread to load (or start under this id); ``None`` for a new one with a fresh id.
            tool_handlers: the frontend tools :meth:`Thread.run_until_done` answers, by name, each
                called with the call's arguments as keywords. A run without ``tools=`` offers them to
                the agent: the handler's docstring is the description, its parameters (and their
                ``str``/``int``/``float``/``bool``/``list``/``dict`` annotations) the JSON schema.

        Raises:
            RuntimeError: the client is closed.
            StoreError: the store could not be read.
        """
        self._check_open()
        return Thread(self, thread_id or str(uuid.uuid4()), tool_handlers=tool_handlers)

    def load_thread(self, thread_id: str | None = None, *,
                    tool_handlers: Mapping[str, Callable[..., Any]] | None = None) -> Thread:
        """The same as :meth:`thread` (the twin of :meth:`AsyncAgentClient.load_thread`, which reads
        the store off the event loop)."""
        return self.thread(thread_id, tool_handlers=tool_handlers)

    def thread_ids(self, *, after: str | None = None, limit: int = 100) -> list[str]:
        """The ids of the threads the store holds (the past conversations), a page at a time.

        In thread id order (Unicode code points, the same in every store), paged by key: pass the last
        id of a page as ``after`` for the next one; a page shorter than ``limit`` is the last. Threads
        created or deleted meanwhile never make a listing repeat an id. See
        :class:`~agui_client.stores.ListingStore` for what is listed (a thread whose first run is in
        flight is, at version 0).

        Args:
            after: the last id of the previous page (``None``: the first page); it need not still exist.
            limit: the most ids to return, 1 to 1000.

        Raises:
            RuntimeError: the client is closed.
            TypeError: the store cannot list its threads (a store written for :class:`ThreadStore` alone).
            ValueError: ``limit`` is out of range, or ``after`` is not a string.
            StoreError: the store failed.

        Example::

            page = client.thread_ids(limit=20)
            while page:
                for thread_id in page:
                    print(thread_id, len(client.thread(thread_id).state.messages))
                page = client.thread_ids(after=page[-1], limit=20) if len(page) == 20 else []
        """
        return self._listing(after, limit)()

    def open(self, run_input: RunAgentInput, *, handle: StreamHandle | None = None,
             headers: Mapping[str, str] | None = None,
             run_timeout: float | None = None) -> AbstractContextManager[Iterator[str | bytes]]:
        """POST ``run_input``; a context manager giving an iterator of SSE payloads, each as soon as its bytes arrive.

        The low-level exchange, for a relay or a recorder: the payloads are the events' JSON text, not
        decoded, checked or folded (a :class:`Thread` does that). The response is closed when the
        ``with`` block ends, however it ends.

        Example::

            from agui_client import RunAgentInput, UserMessage

            run_input = RunAgentInput(thread_id="t-1", run_id="r-1", messages=(UserMessage(id="m-1", content="hi"),))
            with client.open(run_input) as payloads:
                for payload in payloads:  # one event's JSON text (str or bytes)
                    print(payload)

        Raises:
            TransportError: the agent could not be reached (``request_sent=False``) or the connection
                failed (a dropped stream ends the iterator; the session then reports ``StreamEnded``).
            HTTPStatusError: a non-2xx answer.
            IdleTimeout: no bytes for longer than ``idle_timeout``.
            RunTimeout: the run went on past ``run_timeout`` (this call's, else the client's) seconds
                from the request.
            ProtocolError: the answer is not an event stream.
            LimitExceeded: an event outgrew ``max_event_bytes``, or the response ``max_run_bytes``
                (``RUN-BYTES``, naming ``run_input``'s run).
            InvalidHeader: a ``headers`` name or value HTTP cannot carry (as for ``Thread.run(headers=...)``,
                whose merging rules these headers follow); nothing was sent.
        """
        return self._payloads(run_input, handle=handle, headers=dict(checked_headers(headers)),
                              run_timeout=run_timeout)

    @contextmanager
    def _payloads(self, run_input: RunAgentInput, *, handle: StreamHandle | None, headers: Mapping[str, str] | None,
                  run_timeout: float | None) -> Iterator[Iterator[str | bytes]]:
        with self.open_batches(run_input, handle=handle, headers=headers, run_timeout=run_timeout) as batches:
            yield (payload for batch in batches for payload in batch)

    @contextmanager
    def open_batches(self, run_input: RunAgentInput, *, handle: StreamHandle | None = None,
                     headers: Mapping[str, str] | None = None, body: bytes | None = None,
                     run_timeout: float | None = None) -> Iterator[Iterator[list[str | bytes]]]:
        """:meth:`open`, yielding each read's payloads as one list (what ``Thread.run()`` folds, a read at a time).

        The thread's way to the agent: ``body`` is ``run_input`` already encoded (a thread encodes it
        before claiming the thread), and ``headers`` go out as given (a thread checked them when it
        planned the run; :meth:`open` checks a caller's first). Retried as ``max_retries`` says (docs/http.md).
        """
        handle = handle if handle is not None else StreamHandle()
        body = body if body is not None else request_body(run_input)
        deadline = self._deadline(run_timeout)
        with tried(self, deadline, handle, lambda: self._try(run_input, handle, headers, body, deadline)) as got:
            yield got

    @contextmanager
    def _try(self, run_input: RunAgentInput, handle: StreamHandle, headers: Mapping[str, str] | None,
             body: bytes, deadline: _Deadline | None) -> Iterator[Iterator[list[str | bytes]]]:
        request = self.http.build_request("POST", self.url, content=body, headers=_headers(self.headers, headers),
                                          timeout=self._timeout(deadline), extensions={"trace": handle.trace,
                                                                      SENSITIVE_EXTENSION: self.sensitive_headers})
        handle.sent = not _traces(self.http)
        handle.redactor = redactor = self._redactor(request)
        logger.debug("POST %s (%s, %d bytes)", redactor.url(self.url), self._describe(run_input), len(body))
        with self._sending(request, handle, deadline, run_input.run_id), \
                send_deadline(deadline.at if deadline else None, self.max_run_bytes), \
                logged_exchange(redactor):
            response = self.http.send(request, stream=True, follow_redirects=False)
            for _ in range(MAX_REDIRECTS):  # (a loop ends as the redirect it still is, refused below)
                target = self._redirect(response, request, redactor)
                if target is None:
                    break
                response.close()
                response = self.http.send(target, stream=True, follow_redirects=False)
            # Built again from the exchange as sent: an httpx auth flow adds its header while sending.
            handle.redactor = redactor = self._redactor(request, response.request)
        try:
            if deadline is not None and deadline.passed():  # (the answer's head itself came too late)
                raise about(self._overdue(deadline, redactor.url(self.url)), response.request, redactor)
            if not response.is_success:
                raise status_error(response, self._excerpt(response), redactor.url(self.url), redactor,
                                    self._not_followed(response, request), request)
            media = check_media(response, lambda: self._excerpt(response), handle)
            framer = Framer(self.max_event_bytes, handle, media, self.max_run_bytes, run_input.run_id,
                            response.charset_encoding)
            yield self._batches(response, framer, redactor, deadline)
        finally:
            response.close()

    def _excerpt(self, response: httpx.Response) -> bytes:
        excerpt = Excerpt(response)
        try:
            for chunk in response.iter_raw():
                if excerpt.add(chunk):
                    break
            else:
                excerpt.end()
        except (httpx.HTTPError, ssl.SSLError):  # (ssl's: raised bare through httpx's async reads)
            pass
        return excerpt.taken()

    def _batches(self, response: httpx.Response, framer: Framer, redactor: Redactor,
                 deadline: _Deadline | None) -> Iterator[list[str | bytes]]:
        inflater = inflater_for(response, redactor, framer.run_id)
        with self._reading(response, redactor, deadline):
            for chunk in response.iter_raw():
                yield from framed(chunk, framer, inflater)
                if inflater is not None and inflater.done:
                    break  # (what follows a coded body is not read: see Inflater.done)
                self._in_time(deadline, response, redactor)
            if inflater is not None:
                yield framer.feed(inflater.flush())
        yield framer.close()


class AsyncAgentClient(_ClientBase):
    """The asynchronous twin of :class:`AgentClient` (same parameters and attributes, ``await``/``async with``).

    Example::

        import asyncio
        from agui_client import AsyncAgentClient

        async def main() -> None:
            async with AsyncAgentClient(url) as client:
                thread = await client.load_thread()  # (reads client.store off the event loop)
                result = await thread.run("hello")
                print(thread.id, result.outcome)
                async with thread.stream("and now stream it") as stream:
                    async for event in stream:
                        print(type(event).__name__)

        asyncio.run(main())
    """

    def __init__(self, url: str, *, headers: Mapping[str, str] | None = None,
                 timeout: float = DEFAULT_CONNECT_TIMEOUT, idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
                 max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES, store: ThreadStore | None = None,
                 http_client: httpx.AsyncClient | None = None, follow_redirects: bool = False,
                 clock: Callable[[], datetime] | None = None, sensitive_headers: Iterable[str] = (),
                 run_timeout: float | None = None, telemetry: Telemetry | bool | None = None,
                 legacy_interrupts: LegacyInterrupts | None = None, max_run_bytes: int | None = DEFAULT_MAX_RUN_BYTES,
                 max_retries: int = DEFAULT_MAX_RETRIES, retry_backoff: float = DEFAULT_RETRY_BACKOFF) -> None:
        check_url(url, own_http=http_client is None, base_url=None if http_client is None else http_client.base_url)
        super().__init__(url, headers=headers, timeout=timeout, idle_timeout=idle_timeout,
                         max_event_bytes=max_event_bytes, store=store, follow_redirects=follow_redirects, clock=clock,
                         sensitive_headers=sensitive_headers, run_timeout=run_timeout, telemetry=telemetry,
                         legacy_interrupts=legacy_interrupts, max_run_bytes=max_run_bytes,
                         max_retries=max_retries, retry_backoff=retry_backoff)
        self._owns_client = http_client is None
        self.http = http_client if http_client is not None else _async_http(self._timeout(), follow_redirects, url)

    async def __aenter__(self) -> AsyncAgentClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the HTTP client and the store, each only when this client made it (see :meth:`AgentClient.close`)."""
        self._closed = True
        if self._owns_client:
            await self.http.aclose()
        if self._owns_store:
            self.store.close()

    def thread(self, thread_id: str | None = None, *, tool_handlers: Mapping[str, Callable[..., Any]] | None = None
               ) -> AsyncThread:
        """A conversation: a new one, or the stored thread ``thread_id`` (new if the store has none).

        This reads the store in the calling thread: cheap for the in-memory store, a blocking call
        for SQLite or Redis. On an event loop, use :meth:`load_thread`. Arguments and errors as
        :meth:`AgentClient.thread`.
        """
        self._check_open()
        return AsyncThread(self, thread_id or str(uuid.uuid4()), tool_handlers=tool_handlers)

    async def load_thread(self, thread_id: str | None = None, *,
                          tool_handlers: Mapping[str, Callable[..., Any]] | None = None) -> AsyncThread:
        """:meth:`thread`, with the store read (and the thread rebuilt) in a worker thread, so the
        event loop goes on serving while a long thread loads from SQLite or Redis. Cancelled, it returns
        once that read has ended (none outlives the caller)."""
        return await in_worker(self.thread, thread_id, tool_handlers=tool_handlers)

    async def thread_ids(self, *, after: str | None = None, limit: int = 100) -> list[str]:
        """The ids of the threads the store holds, a page at a time: :meth:`AgentClient.thread_ids`, with
        the store read in a worker thread (as :meth:`load_thread` reads it), so the event loop goes on
        serving. Cancelled, it returns once that read has ended. Arguments and errors as
        :meth:`AgentClient.thread_ids` (refused ones before any worker is asked).

        Example::

            page = await client.thread_ids(limit=20)
            threads = [await client.load_thread(thread_id) for thread_id in page]
        """
        return await in_worker(self._listing(after, limit))

    def open(self, run_input: RunAgentInput, *, handle: StreamHandle | None = None,
             headers: Mapping[str, str] | None = None,
             run_timeout: float | None = None) -> AbstractAsyncContextManager[AsyncIterator[str | bytes]]:
        """POST ``run_input``; an async context manager giving an async iterator of SSE payloads (see
        :meth:`AgentClient.open`).

        Example::

            async with client.open(run_input) as payloads:
                async for payload in payloads:
                    print(payload)
        """
        return self._payloads(run_input, handle=handle, headers=dict(checked_headers(headers)),
                              run_timeout=run_timeout)

    @asynccontextmanager
    async def _payloads(self, run_input: RunAgentInput, *, handle: StreamHandle | None,
                        headers: Mapping[str, str] | None,
                        run_timeout: float | None) -> AsyncIterator[AsyncIterator[str | bytes]]:
        async with self.open_batches(run_input, handle=handle, headers=headers, run_timeout=run_timeout) as batches, \
                aclosing(_flatten(batches)) as payloads:  # (closed here, as in open_batches)
            yield payloads

    @asynccontextmanager
    async def open_batches(
        self, run_input: RunAgentInput, *, handle: StreamHandle | None = None,
        headers: Mapping[str, str] | None = None, body: bytes | None = None, run_timeout: float | None = None,
    ) -> AsyncIterator[AsyncIterator[list[str | bytes]]]:
        """:meth:`open`, yielding each read's payloads as one list (what ``AsyncThread.run()`` folds; see
        :meth:`AgentClient.open_batches`)."""
        handle = handle if handle is not None else StreamHandle()
        body = body if body is not None else request_body(run_input)
        deadline = self._deadline(run_timeout)
        async with atried(self, deadline, handle, lambda: self._try(run_input, handle, headers, body, deadline)) as got:
            yield got

    @asynccontextmanager
    async def _try(self, run_input: RunAgentInput, handle: StreamHandle, headers: Mapping[str, str] | None,
                   body: bytes, deadline: _Deadline | None) -> AsyncIterator[AsyncIterator[list[str | bytes]]]:
        request = self.http.build_request("POST", self.url, content=body, headers=_headers(self.headers, headers),
                                          timeout=self._timeout(deadline), extensions={"trace": handle.atrace,
                                                                      SENSITIVE_EXTENSION: self.sensitive_headers})
        handle.sent = not _traces(self.http)
        handle.redactor = redactor = self._redactor(request)
        logger.debug("POST %s (%s, %d bytes)", redactor.url(self.url), self._describe(run_input), len(body))
        with self._sending(request, handle, deadline, run_input.run_id), \
                send_deadline(deadline.at if deadline else None, self.max_run_bytes), \
                logged_exchange(redactor):
            response = await self.http.send(request, stream=True, follow_redirects=False)
            for _ in range(MAX_REDIRECTS):  # (as AgentClient)
                target = self._redirect(response, request, redactor)
                if target is None:
                    break
                await response.aclose()
                response = await self.http.send(target, stream=True, follow_redirects=False)
            handle.redactor = redactor = self._redactor(request, response.request)  # (as AgentClient)
        try:
            if deadline is not None and deadline.passed():  # (the answer's head itself came too late)
                raise about(self._overdue(deadline, redactor.url(self.url)), response.request, redactor)
            if not response.is_success:
                raise status_error(response, await self._excerpt(response), redactor.url(self.url), redactor,
                                    self._not_followed(response, request), request)
            head = b""
            if media_type(response.headers.get("content-type")) in REFUSED_TYPES:
                head = await self._excerpt(response)
            media = check_media(response, lambda: head, handle)
            framer = Framer(self.max_event_bytes, handle, media, self.max_run_bytes, run_input.run_id,
                            response.charset_encoding)
            batches = self._batches(response, framer, redactor, deadline)
            try:
                yield batches
            finally:
                # Closed here, not by the loop's finalizer of a generator left at its ``yield`` (a caller's
                # error, a break): that runs later, as a task, and under trio only with a warning.
                await batches.aclose()
        finally:
            await response.aclose()

    async def _excerpt(self, response: httpx.Response) -> bytes:
        excerpt = Excerpt(response)  # (as AgentClient._excerpt)
        try:
            async with aclosing(_raw(response)) as chunks:  # (closed here, as in open_batches)
                async for chunk in chunks:
                    if excerpt.add(chunk):
                        break
                else:
                    excerpt.end()
        except (httpx.HTTPError, ssl.SSLError):  # (ssl's: raised bare through httpx's async reads)
            pass
        return excerpt.taken()

    async def _batches(self, response: httpx.Response, framer: Framer, redactor: Redactor,
                       deadline: _Deadline | None) -> AsyncGenerator[list[str | bytes], None]:
        inflater = inflater_for(response, redactor, framer.run_id)  # (as AgentClient._batches)
        with self._reading(response, redactor, deadline):
            async with aclosing(_raw(response)) as chunks:  # (httpx's reader too, as above)
                try:
                    async for chunk in chunks:
                        turn = False
                        for batch in framed(chunk, framer, inflater):
                            if turn:
                                # A coded read inflates to many pieces (64 KiB of gzip to megabytes of
                                # events): the other runs on the loop get a turn between them, so that
                                # one read holds the loop for one piece's events, as an uncoded read.
                                await checkpoint()
                            turn = True
                            yield batch
                        if inflater is not None and inflater.done:
                            break
                        self._in_time(deadline, response, redactor)
                except BaseException:
                    # The response is closed before httpx's reader lets go of the generators under it
                    # (httpcore's): collected open, their finalizer would start the close as a task of
                    # its own, and this close, finding it begun, would return before the connection is
                    # back in the pool.
                    await response.aclose()
                    raise
            if inflater is not None:
                yield framer.feed(inflater.flush())
        yield framer.close()


def _async_http(timeout: httpx.Timeout, follow_redirects: bool, url: str) -> httpx.AsyncClient:
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


def _sync_http(timeout: httpx.Timeout, follow_redirects: bool, url: str) -> httpx.Client:
    """The sync client's own ``httpx.Client``: as :func:`_async_http`, for a thread per run."""
    return httpx.Client(timeout=timeout, follow_redirects=follow_redirects, transport=own_transport(url))


def _raw(response: httpx.Response) -> AsyncGenerator[bytes, None]:
    """httpx's ``aiter_raw()``, typed as the async generator it is (so that it can be closed at once)."""
    return cast("AsyncGenerator[bytes, None]", response.aiter_raw())


async def _flatten(batches: AsyncIterator[list[str | bytes]]) -> AsyncGenerator[str | bytes, None]:
    async for batch in batches:
        for payload in batch:
            yield payload
