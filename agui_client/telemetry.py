"""OpenTelemetry for runs: a span per run, the trace context sent to the agent, a few metrics.

The library uses OpenTelemetry's API only (the ``otel`` extra, ``opentelemetry-api``), imported when a
client is made, never by ``import agui_client``. Without an SDK configured by the application the API
hands out no-op tracers and meters, and nothing is recorded; without the API installed a client has no
telemetry at all and the run pumps skip it (one call per run, none per event).

What a run records is in ``docs/opentelemetry.md``: the ``agui.run`` span (thread and run ids, outcome,
events, interrupts, warnings by code, token usage under the GenAI semantic-convention names), a link from
a resume to the interrupted run's span, span events for a refused resume and a protocol error, the
``traceparent`` header on the request, and the metrics ``agui.client.runs``, ``agui.client.run.duration``,
``agui.client.events`` and ``agui.client.refusals``. No message text, argument, payload or header value
is recorded unless the application asks for it (``Telemetry(record_content=True)``).

The thread pumps (``thread.py``) call a :class:`_RunWatch` at four points of a run: made before the plan
(so a refusal has its span), told the plan, asked for the headers when the request is sent, told the
result; leaving its ``with`` block ends the span with the run's outcome or the error that ended it.
A stream's block left while another reader is inside a step (``STREAM-SHARED``) hands the run's settling
to that reader: the block's exit is told so first (``handed``), and the span ends when the reader has
settled the run (``settled``), with the run's outcome and an ``agui.stream.left_while_read`` event.
"""

from __future__ import annotations

import functools
import itertools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ._version import __version__
from .core.headers import RunHeaders, checked_headers
from .errors import (
    AguiError,
    ConcurrentResume,
    HTTPStatusError,
    InvalidHeader,
    ProtocolError,
    ResumeRefused,
    UnencodableValue,
)

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import Span, SpanContext, TracerProvider

    from .core.plan import Plan
    from .core.result import RunResult

__all__ = ["Telemetry", "resolve", "UNWATCHED", "watch_loop", "watch_run", "record_retry", "unsent_redact"]

#: The instrumentation scope's name: the tracer's and the meter's.
SCOPE = "agui_client"
#: How many interrupted runs' span contexts are kept for the links of their resumes.
LINKS_KEPT = 4096
#: A span's list of ids the agent chose (interrupt ids) holds at most this many (the first ones).
IDS_KEPT = 32
#: A string the agent chose (an id, an error code) is cut to this many characters on a span, with "…".
TEXT_KEPT = 128
#: Message text recorded with ``record_content`` (a message's text, the reply, a ``RUN_ERROR`` message,
#: an error's text) is cut to at most this many characters, the marker saying how many were cut included.
#: OpenTelemetry sets no default (its SDK keeps a value whole unless ``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT``
#: says otherwise, and then cuts it silently); backends do, the lowest common one at 4,095 characters, past
#: which a reply would be cut with no word of it, or the span refused.
CONTENT_KEPT = 4095
#: The largest integer an OTLP attribute holds (an int64).
_INT64_MAX = 2**63 - 1


class Telemetry:
    """Where a client's runs report to OpenTelemetry, and how much they say.

    A client reports to the global providers by default, as soon as ``opentelemetry-api`` is installed
    (``pip install 'agui-client[otel]'``); nothing is recorded until the application configures an SDK.
    Pass one of these to choose the providers or to record content; ``telemetry=False`` turns it off.

    Example::

        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from agui_client import AgentClient, Telemetry

        exporter = InMemorySpanExporter()  # (an application exports to its collector instead)
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        with AgentClient(url, telemetry=Telemetry(tracer_provider=provider)) as client:
            client.thread().run("hello")
        span = exporter.get_finished_spans()[0]
        print(span.name, span.attributes["agui.run.outcome"])  # agui.run success

    Args:
        tracer_provider: the tracer provider (the global one by default).
        meter_provider: the meter provider (the global one by default).
        record_content: also record what the run carried: the new messages' text, the assistant's
            reply, the ``RUN_ERROR`` message and the text of the error that ended a run (with its
            stack trace), the agent's redacted; each cut to 4,095 characters (``CONTENT_KEPT``) with a marker
            of how many were cut (the stack trace keeps its end, where the error that ended the run is).
            Off by default: those may hold personal data or secrets an agent echoed. Header values are
            never recorded.

    Raises:
        ImportError: ``opentelemetry-api`` is not installed.
    """

    def __init__(self, *, tracer_provider: TracerProvider | None = None,
                 meter_provider: MeterProvider | None = None, record_content: bool = False) -> None:
        try:
            from opentelemetry import context, metrics, propagate, trace
        except ImportError as exc:
            raise ImportError("agui_client's telemetry needs OpenTelemetry's API: "
                              "pip install 'agui-client[otel]' (opentelemetry-api)") from exc
        # (the API's modules, looked up once: a run's watch uses them without an import statement each time)
        self._trace: ModuleType = trace
        self._context: ModuleType = context
        self._propagate: ModuleType = propagate
        self.record_content = record_content
        self._tracer = trace.get_tracer(SCOPE, __version__, tracer_provider=tracer_provider)
        meter = metrics.get_meter(SCOPE, __version__, meter_provider=meter_provider)
        self._runs = meter.create_counter(
            "agui.client.runs", unit="{run}", description="Runs, by outcome (agui.run.outcome).")
        self._duration = meter.create_histogram(
            "agui.client.run.duration", unit="s", description="How long runs took, from the call to the outcome.")
        self._events = meter.create_counter(
            "agui.client.events", unit="{event}", description="Events received from agents.")
        self._refusals = meter.create_counter(
            "agui.client.refusals", unit="{refusal}",
            description="Runs refused before anything was sent (a resume that breaks the interrupt rules, "
                        "a value JSON cannot hold, another writer's claim).")
        # The span of each interrupted run, for the link from the run that resumes it; bounded, oldest out.
        self._interrupted: OrderedDict[tuple[str, str], SpanContext] = OrderedDict()
        self._lock = threading.Lock()

    def _watch(self, client: Any, thread: Any, run_id: str | None, resuming: bool,
               headers: Mapping[str, str] | None = None) -> _RunWatch:
        return _RunWatch(self, client, thread, run_id, resuming, headers)

    def _remember(self, key: tuple[str, str], context: SpanContext) -> None:
        with self._lock:
            self._interrupted[key] = context
            self._interrupted.move_to_end(key)
            while len(self._interrupted) > LINKS_KEPT:
                self._interrupted.popitem(last=False)

    def _recall(self, key: tuple[str, str]) -> SpanContext | None:
        with self._lock:
            return self._interrupted.get(key)


_DEFAULT: list[Telemetry | None] = []
_DEFAULT_LOCK = threading.Lock()


def resolve(telemetry: Telemetry | bool | None) -> Telemetry | None:
    """What a client's ``telemetry`` argument comes to: ``None`` (the default) is the process's shared
    :class:`Telemetry` on the global providers when ``opentelemetry-api`` is installed, else none; ``True``
    is that one, and requires the API; ``False`` is none."""
    if telemetry is False:
        return None
    if isinstance(telemetry, Telemetry):
        return telemetry
    with _DEFAULT_LOCK:
        if not _DEFAULT:
            # One for the process: clients made per request still link a resume to its interrupted run.
            try:
                _DEFAULT.append(Telemetry())
            except ImportError:
                _DEFAULT.append(None)
        found = _DEFAULT[0]
    if found is None and telemetry is True:
        Telemetry()  # (raises the ImportError that names the extra)
    return found


def record_retry(telemetry: Telemetry | None, *, tries: int, wait: float, reason: str, status: int | None) -> None:
    """A failed request is about to be sent again: an ``agui.run.retry`` event on the current span, which
    is the run's while its request is sent (a thread's run makes it current; a bare ``open()``'s caller
    has its own). ``reason`` is the client's words, never the agent's."""
    if telemetry is None:
        return
    span = telemetry._trace.get_current_span()
    if span.is_recording():
        attributes: dict[str, Any] = {"agui.retry.attempt": tries + 1, "agui.retry.wait": wait,
                                      "agui.retry.reason": reason}
        if status is not None:
            attributes["http.response.status_code"] = status
        span.add_event("agui.run.retry", attributes)


def watch_run(client: Any, thread: Any, run_id: str | None, resume: object,
              headers: Mapping[str, str] | None = None) -> _RunWatch | _Unwatched:
    """The watch for one run of ``thread`` (a no-op one when the client has no telemetry); ``headers``
    are the run's own (``run(headers=...)``), whose secrets a refusal's span must not hold either."""
    telemetry: Telemetry | None = getattr(client, "telemetry", None)
    if telemetry is None:
        return UNWATCHED
    return telemetry._watch(client, thread, run_id, resume is not None, headers)


def watch_loop(client: Any, thread: Any, max_steps: int, *, streamed: bool = False) -> _LoopWatch | _Unwatched:
    """The watch of one tool loop on ``thread``: a span its runs' spans are children of (a no-op one when
    the client has no telemetry). ``streamed`` (``stream_until_done``): the span is current only inside
    ``working()``, not across the caller's block, which runs between the events the loop hands out."""
    telemetry: Telemetry | None = getattr(client, "telemetry", None)
    if telemetry is None:
        return UNWATCHED
    return _LoopWatch(telemetry, thread, max_steps, streamed)


class _Unwatched:
    """The watch of a client without telemetry: every call does nothing."""

    __slots__ = ()

    def __enter__(self) -> _Unwatched:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        return None

    def planned(self, plan: Plan) -> None:
        return None

    def finished(self, result: RunResult) -> RunResult:
        return result

    def failed(self, error: BaseException) -> None:
        return None

    def handed(self) -> None:
        return None

    def settled(self, exc: BaseException | None) -> None:
        return None

    def sending(self, handle: Any = None) -> _NotSending:
        return NOT_SENDING

    def working(self) -> _NotSending:
        return NOT_SENDING  # (no span to make current)


class _NotSending:
    """A request sent without telemetry: no headers of its own."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        return None


UNWATCHED = _Unwatched()
NOT_SENDING = _NotSending()


class _Sending:
    """While the request is sent: the run's span is the current one (an instrumented HTTP client's span
    is its child), and ``__enter__`` gives the headers carrying its trace context."""

    __slots__ = ("_telemetry", "_context", "_token")

    def __init__(self, telemetry: Telemetry, context: Any) -> None:
        self._telemetry = telemetry
        self._context = context
        self._token: Any = None

    def __enter__(self) -> Mapping[str, str]:
        carrier: dict[str, str] = {}
        self._telemetry._propagate.inject(carrier, context=self._context)
        self._token = self._telemetry._context.attach(self._context)
        return carrier

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._telemetry._context.detach(self._token)


class _HandedOver:
    """What a run's watch and a tool loop's share when their stream's block is left while another reader
    is inside a step: the block's exit ends nothing, and the reader the settling was handed to ends the
    span once it settled (the watch's ``_end``, once, with the outcome)."""

    __slots__ = ("_handed", "_ended")

    _span: Any
    _handed: bool
    _ended: bool

    def _end(self, exc: BaseException | None) -> None:
        """End the span with ``exc`` (or the outcome recorded), once: the reader the settling was handed to
        may end it before the block's side is told it was handed."""
        if self._ended:
            return
        self._ended = True
        self._span_ended(exc)

    def _span_ended(self, exc: BaseException | None) -> None:
        raise NotImplementedError

    def handed(self) -> None:
        """The stream's block was left while another reader was inside a step, and the settling handed to
        that reader: the block's exit ends nothing (its ``STREAM-SHARED`` is not the run's outcome)."""
        self._handed = True

    def settled(self, exc: BaseException | None) -> None:
        """The reader the settling was handed to settled it (``exc``: what ended it, or the block's own error
        it was left on): the span ends, once, with the outcome."""
        if self._span.is_recording():
            self._span.add_event("agui.stream.left_while_read", {"agui.error.code": "STREAM-SHARED"})
        self._end(exc)


class _RunWatch(_HandedOver):
    """One run's span and measurements (see the module's docstring)."""

    __slots__ = ("_telemetry", "_client", "_thread_id", "_span", "_started", "_result", "_handle", "_resumes",
                 "_headers", "_inputs")

    def __init__(self, telemetry: Telemetry, client: Any, thread: Any, run_id: str | None, resuming: bool,
                 headers: Mapping[str, str] | None = None) -> None:
        trace = telemetry._trace
        self._telemetry = telemetry
        self._client = client
        self._thread_id: str = thread.id
        self._started = time.monotonic()
        self._result: RunResult | None = None
        #: The sent request's stream handle: its redactor cleans what the agent chose before the span keeps it.
        self._handle: Any = None
        #: The run's own headers, as given (checked again before a redactor is made of them).
        self._headers = headers
        #: The run's settling was handed to the reader inside a step (``handed``); the span was ended.
        self._handed = self._ended = False
        #: With ``record_content``: when the run was planned, and the role and text of each new message.
        self._inputs: tuple[int, list[tuple[str, str]]] | None = None
        attributes: dict[str, Any] = {"agui.thread.id": thread.id}
        if run_id is not None:
            attributes["agui.run.id"] = run_id
        links = []
        interrupted = thread.state.interrupted_run_id if resuming else None
        self._resumes = interrupted
        if interrupted is not None:
            # (agui.run.resumes is set when the span ends, redacted: an id the agent chose in an earlier
            # run, which a span processor would otherwise see as it was when the span starts)
            earlier = telemetry._recall((thread.id, interrupted))
            if earlier is not None:
                links.append(trace.Link(earlier, {"agui.link": "resumes"}))
        attributes.update(_server(getattr(client, "url", None)))
        self._span: Span = telemetry._tracer.start_span("agui.run", kind=trace.SpanKind.CLIENT,
                                                         attributes=attributes, links=links)

    def __enter__(self) -> _RunWatch:
        return self

    def planned(self, plan: Plan) -> None:
        """The run's input is made and checked: its run id is known."""
        span = self._span
        if not span.is_recording():
            return
        span.set_attribute("agui.run.id", plan.run_input.run_id)
        span.set_attribute("agui.run.resuming", plan.resuming)
        if self._telemetry.record_content:
            # The caller's own words may hold the caller's credential (a key pasted into a message, the
            # value of a header the client sends): they go on the span when it ends, stamped with this
            # moment, redacted as everything else on it is, by the redactor of the request as it was sent
            # (an http_client's auth flow adds its header while sending), which is what a recording
            # writes the request's body with. A span goes to a collector the request never does.
            inputs = []
            for message in plan.new_messages:
                content = getattr(message, "content", None)
                if isinstance(content, str):
                    inputs.append((message.ROLE, content))
            self._inputs = (time.time_ns(), inputs)

    def sending(self, handle: Any = None) -> _Sending | _NotSending:
        """The request is being sent: ``with watch.sending(handle) as headers`` gives the trace headers;
        ``handle`` (the run's ``StreamHandle``) brings the redactor of the request as it was sent."""
        self._handle = handle
        if not self._span.get_span_context().is_valid:
            return NOT_SENDING  # (no SDK, and no trace around the call: no context to carry)
        return _Sending(self._telemetry, self._telemetry._trace.set_span_in_context(self._span))

    def finished(self, result: RunResult) -> RunResult:
        """The run came to ``result`` (returned, for the caller's convenience)."""
        self._result = result
        return result

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if not self._handed:
            self._end(exc)

    def _span_ended(self, exc: BaseException | None) -> None:
        telemetry, span = self._telemetry, self._span
        result, exc, outcome = _ending(self._result, exc)
        measured: dict[str, Any] = {"agui.run.outcome": outcome}
        if exc is not None and outcome in ("failed", "refused"):
            measured["error.type"] = type(exc).__name__
        telemetry._runs.add(1, measured)
        telemetry._duration.record(time.monotonic() - self._started, measured)
        if result is not None and result.events:
            telemetry._events.add(result.events)
        if outcome == "refused" and exc is not None:
            telemetry._refusals.add(1, {"agui.refusal.kind": _refusal_kind(exc)})
        try:
            if not span.is_recording():
                return
            span.set_attribute("agui.run.outcome", outcome)
            redact = self._redact()
            if self._resumes is not None:
                # (an id the agent chose, in an earlier run: it may echo this request's credential)
                span.set_attribute("agui.run.resumes", _cut(redact(str(self._resumes))))
            if self._inputs is not None:
                planned_at, inputs = self._inputs
                for role, content in inputs:
                    span.add_event("agui.run.input", {"agui.message.role": role,
                                                      "agui.message.content": _content(content, redact)},
                                   timestamp=planned_at)
            if result is not None:
                _describe(span, result, telemetry.record_content, redact)
                if outcome == "interrupt" and result.run_id is not None:
                    telemetry._remember((self._thread_id, result.run_id), span.get_span_context())
            if exc is not None:
                _failure(span, exc, outcome, telemetry.record_content, redact)
            elif outcome == "error":
                span.set_attribute("error.type", "RUN_ERROR")
                _failed_status(span, "the run ended with RUN_ERROR")
        finally:
            span.end()


    def _redact(self) -> Callable[[str], str]:
        """The redactor of the request as it was sent; for a run refused before sending, the one of a
        request the client would send (the ids a refusal names came from the agent earlier)."""
        redactor = getattr(self._handle, "redactor", None)
        if redactor is not None:
            return redactor.text  # type: ignore[no-any-return]
        return unsent_redact(self._client, self._headers) or _same


def unsent_redact(client: Any, headers: Mapping[str, str] | RunHeaders | None) -> Callable[[str], str] | None:
    """The text redactor of the request ``client`` would send with a run's ``headers``, for what is
    reported about a run before its request was sent (a refusal, a store's error): the ids and text it
    names came from the agent in earlier runs, or from a store, and may echo a credential.

    The run's headers count when they can be sent (checked as a run checks them); headers a run would
    refuse count for nothing, the client's own still do (the refusal itself is being reported). ``None``
    when the client cannot even build a request (the run's error says why). The one lookup a thread's
    log lines and a run's span make.
    """
    unsent = getattr(client, "unsent_redactor", None)
    if unsent is None:
        return None
    try:
        checked = dict(checked_headers(dict(headers) if isinstance(headers, tuple) else headers))
    except InvalidHeader:
        checked = {}
    try:
        return unsent(checked).text  # type: ignore[no-any-return]
    except Exception:  # noqa: BLE001 - (a client that cannot build a request: the run's error says why)
        return None


class _LoopWatch(_HandedOver):
    """One tool loop's span (``agui.tool_loop``), current while the loop runs so that each run's span is
    its child: a trace then shows the runs and the handlers between them as one piece of work."""

    __slots__ = ("_telemetry", "_span", "_token", "_result", "_streamed", "_error")

    def __init__(self, telemetry: Telemetry, thread: Any, max_steps: int, streamed: bool = False) -> None:
        self._telemetry = telemetry
        self._result: RunResult | None = None
        self._span: Span = telemetry._tracer.start_span(
            "agui.tool_loop", kind=telemetry._trace.SpanKind.INTERNAL,
            attributes={"agui.thread.id": thread.id, "agui.tool_loop.max_steps": max_steps})
        self._token: Any = None
        self._streamed = streamed
        self._error: BaseException | None = None
        self._handed = self._ended = False

    def __enter__(self) -> _LoopWatch:
        if not self._streamed:
            self._token = self._telemetry._context.attach(self._telemetry._trace.set_span_in_context(self._span))
        return self

    @contextmanager
    def working(self) -> Iterator[None]:
        """While a streamed loop works between the events it hands out (its handlers, a run's start and
        end): its span is current. (Attached and detached in one step: an async caller may read each
        event in another task, whose context would refuse a detach of a token attached elsewhere.)"""
        token = self._telemetry._context.attach(self._telemetry._trace.set_span_in_context(self._span))
        try:
            yield
        finally:
            self._telemetry._context.detach(token)

    def finished(self, result: RunResult) -> RunResult:
        """The loop's last run ended with ``result``."""
        self._result = result
        return result

    def failed(self, error: BaseException) -> None:
        """The streamed loop ended with ``error``, which the caller's block caught (so the block leaves
        without it, and the span learns it here)."""
        self._error = error

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        try:
            if self._token is not None:
                self._telemetry._context.detach(self._token)
        finally:
            if not self._handed:
                self._end(exc)

    def _span_ended(self, exc: BaseException | None) -> None:
        span = self._span
        if exc is None:
            exc = self._error
        try:
            if not span.is_recording():
                return
            _result, exc, outcome = _ending(self._result, exc)
            span.set_attribute("agui.tool_loop.outcome", outcome)
            if exc is not None and outcome in ("failed", "refused"):
                span.set_attribute("error.type", type(exc).__name__)
                _failed_status(span, f"the tool loop ended with {type(exc).__name__}")
            elif outcome == "error":
                span.set_attribute("error.type", "RUN_ERROR")
                _failed_status(span, "the tool loop's last run ended with RUN_ERROR")
        finally:
            span.end()


@functools.lru_cache(maxsize=64)
def _server(url: str | None) -> dict[str, str | int]:
    """``server.address`` and ``server.port`` of the agent's URL (never its userinfo, path or query)."""
    try:
        parts = urlsplit(url or "")
        host, port = parts.hostname, parts.port
    except ValueError:
        return {}
    found: dict[str, str | int] = {"server.address": host} if host else {}
    if host and port is not None:
        found["server.port"] = port
    return found


def _failed_status(span: Span, description: str) -> None:
    from opentelemetry.trace import Status, StatusCode  # (only for a failed run's span)

    span.set_status(Status(StatusCode.ERROR, description))


def _ending(result: RunResult | None, exc: BaseException | None) -> tuple[RunResult | None, BaseException | None, str]:
    """How a watched call ended: its result (the one it returned, else the one its error carries), the
    error that ended it (none once it returned: what the caller's own code raised after that is not
    the call's), and the outcome."""
    if result is not None and result.outcome is not None:
        exc = None
    elif exc is not None:
        result = getattr(exc, "result", None) or result
    return result, exc, _outcome(result, exc)


def _outcome(result: RunResult | None, exc: BaseException | None) -> str:
    """The run's outcome: the terminal event's, or ``refused`` (nothing was sent), ``failed`` (the
    exchange, the agent or the store failed) or ``abandoned`` (left before its end: the caller's block
    ended early or raised, Ctrl-C, a cancelled task)."""
    if exc is None:
        return result.outcome if result is not None and result.outcome is not None else "abandoned"
    if isinstance(exc, (ResumeRefused, UnencodableValue)) or \
            (isinstance(exc, ConcurrentResume) and not exc.agent_answered):
        return "refused"
    if isinstance(exc, AguiError):
        return "failed"
    return "abandoned"


def _refusal_kind(exc: BaseException) -> str:
    if isinstance(exc, ResumeRefused):
        return exc.kind
    return "unencodable" if isinstance(exc, UnencodableValue) else "concurrent"


def _same(text: str) -> str:
    return text


def _describe(span: Span, result: RunResult, record_content: bool, redact: Callable[[str], str]) -> None:
    """What a run came to, as span attributes: counts and ids, never content unless asked for.

    The ids and text the agent chose pass through ``redact`` (the request's redactor): an agent
    echoing the caller's credential as its run id, an interrupt id or its reply must not get it into
    a span, which goes to a collector the agent's answer never should.
    """
    if result.run_id is not None:
        span.set_attribute("agui.run.id", _cut(redact(result.run_id)))
    span.set_attribute("agui.run.events", result.events)
    span.set_attribute("agui.run.interrupts", len(result.interrupts))
    if result.interrupts:
        span.set_attribute("agui.run.interrupt_ids", _ids(redact(i.id) for i in result.interrupts))
    span.set_attribute("agui.run.warnings", len(result.warnings))
    codes: dict[str, int] = {}
    for warning in result.warnings:
        codes[warning.code] = codes.get(warning.code, 0) + 1
    for code, count in codes.items():
        span.set_attribute(f"agui.run.warnings.{code}", count)
    if result.usage:
        usage = result.total_usage
        # (each entry is within 2^53 - 1, their sum is not: past what an OTLP integer holds, an exporter
        # could not encode the span, so such a sum is left off as an unreported one is)
        if usage.input_tokens is not None and usage.input_tokens <= _INT64_MAX:
            span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
        if usage.output_tokens is not None and usage.output_tokens <= _INT64_MAX:
            span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
    if result.error is not None:
        if result.error.code is not None:
            span.set_attribute("agui.run.error.code", _cut(result.error.code))
        if record_content:
            span.set_attribute("agui.run.error.message", _content(result.error.message, redact))
    if record_content and result.outcome is not None:
        span.add_event("agui.run.output", {"agui.message.content": _content(result.text, redact)})


def _cut(text: str) -> str:
    # (a server's string of any length would make every span that carries it as large)
    return text if len(text) <= TEXT_KEPT else text[:TEXT_KEPT - 1] + "…"


def _content(text: str, redact: Callable[[str], str] = _same, *, end: bool = False) -> str:
    """Message text fit for a span: redacted, then cut to :data:`CONTENT_KEPT` characters with a marker
    saying how many were cut. ``end``: the end is kept (the marker first), not the start.

    Redacted before it is cut: cut first, a secret straddling the cut would lose the characters that
    make it the secret, and what is left of it beside the cut (up to 15 token characters: from 16 on,
    a piece is a secret of its own to the redactor) would stay on the span. Redacted whole, it is the
    mark that the cut may halve.
    """
    text = redact(text)
    if len(text) <= CONTENT_KEPT:
        return text
    # (the count cut has no more digits than the length: the marker fits in what it was made room for)
    kept = CONTENT_KEPT - len(f"… [{len(text)} characters cut]")
    if end:
        return f"[{len(text) - kept} characters cut] …{text[len(text) - kept:]}"
    return f"{text[:kept]}… [{len(text) - kept} characters cut]"


def _ids(ids: Iterable[str]) -> list[str]:
    return [_cut(i) for i in itertools.islice(ids, IDS_KEPT)]


def _failure(span: Span, exc: BaseException, outcome: str, record_content: bool,
             redact: Callable[[str], str] = lambda text: text) -> None:
    """The error that ended the run, as span attributes and events (its text only when asked for)."""
    name = type(exc).__name__
    if isinstance(exc, ResumeRefused):
        span.add_event("agui.resume.refused", {"agui.resume.refusal.kind": exc.kind,
                                               "agui.resume.refusal.interrupt_ids": _ids(map(redact, exc.ids)),
                                               "error.type": name})
    if isinstance(exc, ProtocolError):
        found: dict[str, Any] = {"error.type": name}
        for key, value in (("agui.rule", exc.rule), ("agui.run.id", exc.run_id), ("agui.event.index", exc.index),
                           ("agui.event.type", exc.event_type), ("agui.event.pointer", exc.pointer)):
            if value is not None:
                found[key] = _cut(value) if isinstance(value, str) else value  # (the agent chose these)
        span.add_event("agui.protocol_error", found)
    if isinstance(exc, HTTPStatusError):
        span.set_attribute("http.response.status_code", exc.status_code)
    if outcome == "abandoned":
        return
    span.set_attribute("error.type", name)
    if record_content:
        # (the error's text may quote ids the agent chose before this run: a refusal names its interrupts)
        import traceback

        stack = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        # (its end kept: the error that ended the run, and the frames that raised it, come last; a chain of
        # causes and the shells' frames make a trace of many thousand characters, past what a backend keeps)
        span.record_exception(exc, attributes={"exception.message": _content(str(exc), redact),
                                               "exception.stacktrace": _content(stack, redact, end=True)})
    rule = getattr(exc, "rule", None)
    description = _content(str(exc), redact) if record_content else name + (f" [{rule}]" if rule else "")
    _failed_status(span, description)
