# generated from agui_client/_async/client.py by python -m tools.unasync; do not edit (edit the source, run the script)
"""``AgentClient``: the HTTP shell in the calling thread (generated from the async ``AsyncAgentClient``).

It moves bytes and nothing else: POST the encoded ``RunAgentInput``, check the response is an event
stream, and hand every SSE payload on the moment its bytes arrive (see ``agui_client/client.py``).
What it does differently from the async shell is written by hand in ``client_io.py`` beside it.
"""

from __future__ import annotations

import logging
import ssl  # (its errors only)
import uuid
from collections.abc import Generator, Iterator, Callable, Iterable, Mapping
from contextlib import AbstractContextManager, closing, contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

import httpx

from .._answers import Excerpt, about, media_type, status_error
from .._client_base import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_RUN_BYTES,
    DEFAULT_MAX_RUN_MEMORY,
    MAX_REDIRECTS,
    ClientBase,
    Deadline,
    check_url,
    sent_headers,
    traces,
    wake_runs,
)
from .._deadline import deadline as send_deadline
from .._framing import REFUSED_TYPES, Framer, check_media, framed, inflater_for
from .._logs import exchange as logged_exchange
from .._wakes import SENDER
from ..core.exchange import StreamHandle, request_body
from ..core.headers import checked_headers
from ..core.legacy import LegacyInterrupts
from ..core.patch import MAX_PATCH_OPS
from ..core.redact import SENSITIVE_EXTENSION, Redactor
from ..core.retry import DEFAULT_MAX_RETRIES, DEFAULT_RETRY_BACKOFF
from ..core.schema import DEFAULT_MAX_SCHEMA_STEPS
from ..core.session import DEFAULT_MAX_EVENT_BYTES
from ..telemetry import Telemetry
from ..wire.types.run import RunAgentInput
from .client_io import Opening, close_response, off_loop, own_http, payloads_of, raw
from .retries import tried
from .thread import Thread


if TYPE_CHECKING:
    from ..stores import ThreadStore

__all__ = ["AgentClient"]

logger = logging.getLogger("agui_client")


class AgentClient(ClientBase):
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
        max_run_memory: the most one run's response may make its thread hold, in bytes, as estimated while
            it is read (the body's bytes, 64 for each ``[``, ``{``, ``,`` and ``:`` of its events' values, 1 KiB
            for each message, tool call, run, subagent and step it adds), ``DEFAULT_MAX_RUN_MEMORY`` (1 GiB) by default,
            ``None`` for no bound. ``max_run_bytes`` alone let many small entities, or state dense with
            small containers, make the thread hold 10-30 times the body. An event of 128 KiB or more is
            also charged, while it is parsed, what parsing it takes. A read that would pass it is
            refused before it is folded: ``LimitExceeded`` (code ``RUN-MEMORY``, naming the event it
            stopped at; ``.result`` holds what was folded). Read when each run starts.
        max_patch_ops: the most operations one patch (``STATE_DELTA``, ``ACTIVITY_DELTA``) may hold,
            ``MAX_PATCH_OPS`` (20,000, some 30 ms of the fold) by default, ``None`` for no bound; a longer
            one is refused whole (a warning, code ``SP-06``). Read when each run starts.
        max_schema_steps: the most steps the ``responseSchema`` s of one response's interrupts may buy the
            resume that answers them, ``DEFAULT_MAX_SCHEMA_STEPS`` (8,000,000, some 4.5 s of checking) by
            default, ``None`` for what their size pays for; a ``RUN_FINISHED`` whose schemas would buy more
            is refused (``LimitExceeded``, code ``SCHEMA-STEPS``), and a resume's checks stop there.
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
                 max_retries: int = DEFAULT_MAX_RETRIES, retry_backoff: float = DEFAULT_RETRY_BACKOFF,
                 max_run_memory: int | None = DEFAULT_MAX_RUN_MEMORY,
                 max_patch_ops: int | None = MAX_PATCH_OPS,
                 max_schema_steps: int | None = DEFAULT_MAX_SCHEMA_STEPS) -> None:
        check_url(url, own_http=http_client is None, base_url=None if http_client is None else http_client.base_url)
        super().__init__(url, headers=headers, timeout=timeout, idle_timeout=idle_timeout,
                         max_event_bytes=max_event_bytes, store=store, follow_redirects=follow_redirects, clock=clock,
                         sensitive_headers=sensitive_headers, run_timeout=run_timeout, telemetry=telemetry,
                         legacy_interrupts=legacy_interrupts, max_run_bytes=max_run_bytes,
                         max_retries=max_retries, retry_backoff=retry_backoff, max_run_memory=max_run_memory,
                         max_patch_ops=max_patch_ops, max_schema_steps=max_schema_steps)
        self._owns_client = http_client is None
        self.http = http_client if http_client is not None else own_http(self._timeout(), follow_redirects, url)
        #: This client's runs opening their connection, which its close wakes.
        self._opening = Opening()

    def __enter__(self) -> AgentClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the HTTP client and the store, each only when this client created it.

        A closed client makes no more threads (``thread()`` raises ``RuntimeError``, as httpx's
        closed client does for a request), and the threads it made refuse every call the same way,
        before the store or the agent is asked (``is_closed`` says which it is). A run in flight when
        the client closes fails at once, even when it waits in another OS thread or task: in a read,
        writing its request, in its connect or its TLS handshake (an async run there is cancelled where
        it waits, and ends with the connection's failure, not a ``CancelledError``). Its error carries
        the note "the client was closed while this run was in flight". One whose answer had not come
        fails with ``TransportError`` saying "the client was closed before the agent's answer came", as
        does one whose connect begins after the close.

        An ``http_client`` you passed stays open (it is yours, and may send other requests): the
        connections of this client's own runs on it are shut down, and no other. A run of the async
        client still connecting, or in its TLS handshake, on it ends too; one of the sync client waits
        for its ``timeout``. A run whose HTTP/2 connection also carries another's request is left to its
        ``idle_timeout``. See docs/http.md, "Closing the client".
        """
        self._closed = True
        self._unmark_log_names()
        self._opening.wake()  # (first: a run whose connect begins while the pool closes is refused)
        if self._owns_client:
            self.http.close()
        else:  # (the httpx client is the caller's, for other requests too: only this client's runs end)
            wake_runs(self.http, self._sender)
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

        It reads the store in the calling thread: cheap for the in-memory store, a blocking call for
        SQLite or Redis (on an event loop, :meth:`load_thread` reads it in a worker thread).

        Raises:
            RuntimeError: the client is closed.
            StoreError: the store could not be read.
        """
        self._check_open()
        return Thread(self, thread_id or str(uuid.uuid4()), tool_handlers=tool_handlers)

    def load_thread(self, thread_id: str | None = None, *,
                    tool_handlers: Mapping[str, Callable[..., Any]] | None = None) -> Thread:
        """:meth:`thread`, with the store read (and the thread rebuilt) off the event loop: the async
        client reads it in a worker thread, so the loop goes on serving while a long thread loads from
        SQLite or Redis (cancelled, it returns once that read has ended); the sync client, which has no
        loop to keep serving, reads it where it is called, as :meth:`thread` does."""
        return off_loop(self.thread, thread_id, tool_handlers=tool_handlers)

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

        The async client reads the store in a worker thread (as :meth:`load_thread` does), so the event
        loop goes on serving; cancelled, it returns once that read has ended.

        Example::

            page = client.thread_ids(limit=20)
            while page:
                for thread_id in page:
                    thread = client.load_thread(thread_id)
                    print(thread_id, len(thread.state.messages))
                page = client.thread_ids(after=page[-1], limit=20) if len(page) == 20 else []
        """
        return off_loop(self._listing(after, limit))

    def open(self, run_input: RunAgentInput, *, handle: StreamHandle | None = None,
             headers: Mapping[str, str] | None = None,
             run_timeout: float | None = None) -> AbstractContextManager[Iterator[str | bytes]]:
        """POST ``run_input``; a context manager (``with``) giving the SSE payloads, each as soon as its
        bytes arrive.

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
    def _payloads(self, run_input: RunAgentInput, *, handle: StreamHandle | None,
                  headers: Mapping[str, str] | None,
                  run_timeout: float | None) -> Iterator[Iterator[str | bytes]]:
        with self.open_batches(run_input, handle=handle, headers=headers, run_timeout=run_timeout) as batches, \
                payloads_of(batches) as payloads:
            yield payloads

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
             body: bytes, deadline: Deadline | None) -> Iterator[Iterator[list[str | bytes]]]:
        extensions = {"trace": self._opening.trace(handle), SENSITIVE_EXTENSION: self.sensitive_headers,
                      SENDER: self._sender}
        request = self.http.build_request("POST", self.url, content=body, headers=sent_headers(self.headers, headers),
                                          timeout=self._timeout(deadline), extensions=extensions)
        handle.sent = not traces(self.http)
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
                close_response(response)
                response = self.http.send(target, stream=True, follow_redirects=False)
            # Built again from the exchange as sent: an httpx auth flow adds its header while sending.
            handle.redactor = redactor = self._redactor(request, response.request)
        try:
            if deadline is not None and deadline.passed():  # (the answer's head itself came too late)
                raise about(self._overdue(deadline, redactor.url(self.url)), response.request, redactor)
            if not response.is_success:
                raise status_error(response, self._excerpt(response), redactor.url(self.url), redactor,
                                    self._not_followed(response, request), request)
            head = b""  # (the answer's head, read before the check when its type is refused: the check calls it)
            if media_type(response.headers.get("content-type")) in REFUSED_TYPES:
                head = self._excerpt(response)
            media = check_media(response, lambda: head, handle)
            framer = Framer(self.max_event_bytes, handle, media, self.max_run_bytes, run_input.run_id,
                            response.charset_encoding, self.max_run_memory)
            handle.max_patch_ops = self.max_patch_ops  # (read when the run starts, as the other limits)
            handle.max_schema_steps = self.max_schema_steps
            batches = self._batches(response, framer, redactor, deadline)
            try:
                yield batches
            finally:
                # Closed here, as the block is left (a caller's error, a break), not when the generator is
                # collected: an event loop's finalizer runs later, as a task, and under trio only with a warning.
                batches.close()
        finally:
            close_response(response)

    def _excerpt(self, response: httpx.Response) -> bytes:
        excerpt = Excerpt(response)
        try:
            with closing(raw(response)) as chunks:  # (closed here, as in _try)
                for chunk in chunks:
                    if excerpt.add(chunk):
                        break
                else:
                    excerpt.end()
        except (httpx.HTTPError, ssl.SSLError):  # (ssl's: raised bare through httpx's async reads)
            pass
        return excerpt.taken()

    def _batches(self, response: httpx.Response, framer: Framer, redactor: Redactor,
                 deadline: Deadline | None) -> Generator[list[str | bytes], None, None]:
        inflater = inflater_for(response, redactor, framer.run_id)
        with self._reading(response, redactor, deadline, framer.run_id):
            for chunk in response.iter_raw():  # (no other task to give a turn, no finalizer to outrun)
                yield from framed(chunk, framer, inflater)
                if inflater is not None and inflater.done:
                    break  # (what follows a coded body is not read: see Inflater.done)
                self._in_time(deadline, response, redactor)
            if inflater is not None:
                yield framer.feed(inflater.flush())
        yield framer.close()
