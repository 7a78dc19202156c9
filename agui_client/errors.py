"""One exception tree for everything agui_client raises.

::

    AguiError
    ├── TransportError                 connect/read/write failed                 (also httpx.HTTPError)
    │   ├── HTTPStatusError            the agent answered with a non-2xx status  (also httpx.HTTPStatusError)
    │   │   └── AuthenticationError    the agent answered 401
    │   ├── ConnectTimeout             no connection within the connect timeout  (also httpx.ConnectTimeout)
    │   ├── IdleTimeout                no bytes arrived for longer than the idle timeout (also httpx.TimeoutException)
    │   └── RunTimeout                 the run went on past its overall deadline (also httpx.TimeoutException)
    ├── ProtocolError                  the server broke the AG-UI contract
    │   ├── DecodeError                a payload is not JSON, or a known event is malformed
    │   ├── SequenceError              an event is not allowed where it arrived (or the stream ended mid-run)
    │   │   └── StreamEnded            the stream ended before the run's terminal event
    │   └── LimitExceeded              one event outgrew the size limit (or a JSON nesting/state budget)
    ├── RunFailed                      the run ended with RUN_ERROR (raised by ``RunResult.raise_for_outcome``)
    ├── ResumeRefused (ValueError)     the resume list breaks the coverage rules; nothing was sent
    │   ├── UncoveredInterrupts
    │   │   └── AwaitingAnswers        a run without a resume while the thread waits for answers
    │   ├── ExpiredInterruptAnswered
    │   ├── UnknownInterrupt
    │   ├── DuplicateResumeEntry
    │   ├── InvalidResumePayload
    │   │   ├── UnencodableResumePayload   a payload or metadata JSON cannot hold (also an UnencodableValue)
    │   │   └── UnusableResponseSchema     an interrupt's responseSchema cannot judge the answer (SchemaFault)
    │   ├── InvalidResumeEntry         an entry's status is not resolved/cancelled (or its id is not a string)
    │   ├── NothingToResume
    │   └── MisdirectedResume          a builder made for another thread, or for an earlier interrupted run
    ├── UnencodableValue (ValueError)  a value the run would send is not JSON (a set, NaN, bytes …); nothing was sent
    ├── InvalidHeader (ValueError)     a per-run header name or value HTTP cannot carry; nothing was sent
    └── ConcurrentResume               another writer resumed (or advanced) this thread first

Every error raised during a run carries ``.result``: the ``RunResult`` so far, whose ``.state`` is
what was folded before the fault. Protocol errors say where: ``run_id``, ``index`` (0-based event
index), ``event_type`` and ``pointer`` (JSON pointer of the offending field).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import httpx
from attrs import frozen

from ._codes import explain_hint
from ._inert import QUOTED_CHARS, named, quoted, quoted_name, shown_pointer, visible

if TYPE_CHECKING:
    from .core.result import RunResult
    from .wire.types.run import Interrupt

__all__ = [
    "AguiError",
    "TransportError",
    "HTTPStatusError",
    "AuthenticationError",
    "ConnectTimeout",
    "IdleTimeout",
    "RunTimeout",
    "ProtocolError",
    "DecodeError",
    "SequenceError",
    "StreamEnded",
    "LimitExceeded",
    "RunFailed",
    "ResumeRefused",
    "UncoveredInterrupts",
    "AwaitingAnswers",
    "ExpiredInterruptAnswered",
    "UnknownInterrupt",
    "DuplicateResumeEntry",
    "InvalidResumePayload",
    "InvalidResumeEntry",
    "NothingToResume",
    "MisdirectedResume",
    "UnencodableValue",
    "UnencodableResumePayload",
    "InvalidHeader",
    "UnusableResponseSchema",
    "SchemaFault",
    "ConcurrentResume",
    "ThreadBusy",
    "StreamNotFinished",
    "StreamMisused",
    "AguiWarning",
    "StreamWarning",
    "StoreError",
]


#: The most characters of an error's message its ``repr`` shows (then ``…`` and the message's length).
_REPR_CHARS = 200


class AguiError(Exception):
    """Base class of every error agui_client raises."""

    #: The run so far, when the error happened during a run (set by the session or the shell).
    result: RunResult | None = None

    @property
    def doc(self) -> str | None:
        """Where the code this error carries (its ``rule``, else its ``code``) is documented, as
        ``agui explain IR-30 (codes.md#ir-30)``: the command that prints the code's section in a terminal,
        and the section's place in the documentation. ``None`` when the error carries no code, or one the
        package does not document (an agent's own ``RUN_ERROR`` code). Not part of ``str()``, which stays
        the message it was: a line more in every message would be one more in every log and traceback."""
        return explain_hint(getattr(self, "rule", None) or getattr(self, "code", None))

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled and copied as what it holds (its arguments and attributes, redacted when it was raised),
        # not by calling its constructor again: most take keyword-only arguments its args do not carry, so
        # copy.copy() and pickle.loads() raised TypeError (a worker process could not hand its error back).
        return _rebuilt, (type(self), self.args), dict(self.__dict__)

    def __repr__(self) -> str:
        # The class and its message, the message cut after _REPR_CHARS characters: a RUN_ERROR's words or
        # an HTTP error's excerpt may be a megabyte, printed whole in a REPL, a log line written with %r or
        # a test's report. The message starts with where (the run, the event, the status), so the cut keeps
        # that; str() keeps it all. What str() is made of was made inert and redacted with the error, so
        # this shows nothing str() would not.
        text = str(self)
        if len(text) <= _REPR_CHARS:
            return f"{type(self).__name__}({text!r})"
        return f"{type(self).__name__}({text[:_REPR_CHARS]!r}… ({len(text)} chars))"


class TransportError(AguiError, httpx.HTTPError):
    """The HTTP exchange failed.

    Also an ``httpx.HTTPError`` (``except httpx.HTTPError`` catches it), with httpx's ``.request``:
    the request as sent, its credentials replaced (see ``docs/errors-httpx.md`` for the whole mapping).

    What the client raises never repeats the request's credentials: the value of every sensitive
    header it sent, a secret query parameter and the URL's userinfo are ``[redacted]`` in the message
    and every attribute, even when the agent echoed them (see ``AgentClient(sensitive_headers=...)``).

    Attributes:
        url: the agent URL, when known, for display: without its userinfo, sensitive query values redacted.
        request_sent: ``False`` when the request certainly never reached the agent whole (a connect
            failure; or, on httpx's own transports, which report when the body is written, a write that
            failed part-way), ``True`` when it may have. A resume whose request may have reached the
            agent is never retried silently; one that never left gives its claim back.
        tries: how many requests the client made for the run, this failed one included: 1, or more
            when the client sent it again (``max_retries``: only after a failure the agent certainly
            did not act on), the message then ending with how many.
    """

    #: For a fault during a run (an idle timeout, a dropped or undecodable body): the run, and the index
    #: the next event would have had. Set by the thread that was folding it.
    run_id: str | None = None
    index: int | None = None
    #: Set by the client when it sent the request more than once (see ``max_retries``).
    tries: int = 1

    def __init__(self, message: str, *, url: str | None = None, request_sent: bool = True,
                 request: httpx.Request | None = None) -> None:
        # Exception's own constructor, not the next one along the method order: httpx's differ by class
        # (HTTPStatusError's requires the response), and each of ours sets what httpx's would.
        Exception.__init__(self, message)
        self._request = request
        self.url = url
        self.request_sent = request_sent


class HTTPStatusError(TransportError, httpx.HTTPStatusError):
    """The agent answered with a non-2xx status.

    Also an ``httpx.HTTPStatusError``: ``except httpx.HTTPStatusError`` catches it, and ``.request``
    and ``.response`` are there as httpx sets them.

    Example::

        try:
            thread.run("hello")
        except httpx.HTTPStatusError as exc:  # (or agui_client.HTTPStatusError)
            print(exc.response.status_code, exc.response.text)

    Attributes:
        status_code: the HTTP status.
        body: a bounded excerpt of the response body (text), read in the charset its ``Content-Type``
            names when Python reads that as text, else as UTF-8.
        payload: the body parsed as JSON when it was JSON, else ``None``.
        retry_after: seconds from a ``Retry-After`` header, when present and readable.
        content_type: the response's content type.
        location: for a redirect that was not followed, where it pointed (absolute, redacted as ``url``
            is); ``None`` otherwise.
        hint: what the status suggests the caller check, also ending the message (a 404 or 405 from the
            agent's URL: whether it is the agent's endpoint; a 401 or 403: how to send credentials when
            none were sent, else whether those sent are right; a 429, or a 503 with ``Retry-After``, from a
            client whose retries are off: the setting that turns them on); ``None`` when it suggests nothing.
        request: the request as sent (an ``httpx.Request``), with the value of every sensitive header
            and the URL's secrets replaced by ``[redacted]``.
        response: an ``httpx.Response`` holding the status, the response's headers and the bounded
            excerpt of its body, already read (``.text``, ``.json()``, ``.headers`` work); secrets the
            agent echoed are replaced, as in ``body``, and ``.text`` reads the excerpt as ``body`` does (its
            ``.encoding`` is UTF-8 whatever charset the headers name). Made from ``status_code`` and ``body`` when the
            error was built by hand without one.
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int,
        body: str = "",
        payload: Any = None,
        retry_after: float | None = None,
        content_type: str | None = None,
        url: str | None = None,
        location: str | None = None,
        request: httpx.Request | None = None,
        response: httpx.Response | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, url=url, request_sent=True, request=request)
        self.response = response if response is not None else httpx.Response(
            status_code, content=body.encode("utf-8", "replace"), request=request)
        self.status_code = status_code
        self.body = body
        self.payload = payload
        self.retry_after = retry_after
        self.content_type = content_type
        self.location = location
        self.hint = hint


class AuthenticationError(HTTPStatusError):
    """The agent answered 401: the credentials were refused. Retrying the same request will not help.

    Like every ``TransportError``, it never repeats the request's credentials, even when the agent echoed them.
    """


class ConnectTimeout(TransportError, httpx.ConnectTimeout):
    """The connection to the agent could not be made within the connect timeout (the request never left).

    Attributes:
        timeout: the connect timeout in seconds.
    """

    def __init__(self, message: str, *, timeout: float, url: str | None = None,
                 request: httpx.Request | None = None) -> None:
        super().__init__(message, url=url, request_sent=False, request=request)
        self.timeout = timeout


class IdleTimeout(TransportError, httpx.TimeoutException):
    """No bytes (not even a keep-alive comment) arrived for longer than the idle timeout.

    Attributes:
        timeout: the idle timeout in seconds.
        request_sent: ``False`` when the time ran out while the request was still being written (it
            never reached the agent whole).
    """

    def __init__(self, message: str, *, timeout: float, url: str | None = None, request_sent: bool = True,
                 request: httpx.Request | None = None) -> None:
        super().__init__(message, url=url, request_sent=request_sent, request=request)
        self.timeout = timeout


class RunTimeout(TransportError, httpx.TimeoutException):
    """The run was still going when its overall deadline passed (``run_timeout``).

    The idle timeout bounds the gap between bytes; this bounds the run as a whole, so a server that
    drips a byte just inside the idle timeout cannot hold the caller for ever. It fails the run as any
    transport fault does: ``.result`` holds what was folded, a turn gives its claim back, and a resume
    whose request was written stays claimed (it may have reached the agent).

    Attributes:
        timeout: the deadline, in seconds from the request.
    """

    def __init__(self, message: str, *, timeout: float, url: str | None = None, request_sent: bool = True,
                 request: httpx.Request | None = None) -> None:
        super().__init__(message, url=url, request_sent=request_sent, request=request)
        self.timeout = timeout


class ProtocolError(AguiError):
    """The server broke the AG-UI contract.

    Attributes:
        run_id: the run the event belonged to, when known.
        index: the 0-based index of the offending event in the response (for framing faults: the
            index the frame would have had).
        event_type: the offending event's ``type`` as the agent sent it, when known: for a ``*_CHUNK``, the
            chunk's own (``TEXT_MESSAGE_CHUNK``), the message ending with what it was folded as
            (``(folded as TEXT_MESSAGE_START)``).
        pointer: JSON pointer of the offending field (``/outcome/interrupts/1/id``), when known.
        rule: the code of the rule that was broken (``LC-01/AGUI001``, ``TC-03`` …); each has a section in
            ``docs/codes.md``.
        detail: the message without the location prefix.
    """

    def __init__(
        self,
        message: str,
        *,
        run_id: str | None = None,
        index: int | None = None,
        event_type: str | None = None,
        pointer: str | None = None,
        rule: str | None = None,
    ) -> None:
        super().__init__(message)
        self.detail = message
        self.run_id = run_id
        self.index = index
        self.event_type = event_type
        self.pointer = pointer
        self.rule = rule

    def locate(
        self, *, run_id: str | None = None, index: int | None = None, event_type: str | None = None
    ) -> ProtocolError:
        """Fill in where the error happened, keeping what is already known; returns ``self``."""
        if self.run_id is None:
            self.run_id = run_id
        if self.index is None:
            self.index = index
        if self.event_type is None:
            self.event_type = event_type
        return self

    def __str__(self) -> str:
        where = _located(self.run_id, self.index, self.event_type, self.pointer)
        if self.rule is not None:
            where.append(f"[{self.rule}]")
        return f"{', '.join(where)}: {self.detail}" if where else self.detail


class DecodeError(ProtocolError):
    """A payload is not JSON, or a known event (or input) is malformed.

    Attributes:
        data: the offending payload text (bounded excerpt), when known.
    """

    def __init__(self, message: str, *, data: str | None = None, **where: Any) -> None:
        super().__init__(message, **where)
        self.data = data


class SequenceError(ProtocolError):
    """An event arrived where the run's sequence rules do not allow it."""


class StreamEnded(SequenceError):
    """The stream ended (cleanly or by a dropped connection) before the run's terminal event.

    Its ``index`` is the count of events read: one past the last, the index the next event would have
    had (``agui replay`` and ``agui verify`` name the last one instead: "after event #K (TYPE)").

    Attributes:
        open_entities: ids of messages, tool calls, steps … left open, for the reader.
    """

    def __init__(self, message: str, *, open_entities: Sequence[str] = (), **where: Any) -> None:
        super().__init__(message, **where)
        self.open_entities = tuple(open_entities)


class LimitExceeded(ProtocolError):
    """One event (or the JSON nesting, or a patch's growth) went past a configured limit.

    Attributes:
        limit: the limit that was exceeded.
        interrupt_id: the interrupt whose ``responseSchema`` took a ``RUN_FINISHED`` past the client's
            ``max_schema_steps`` (``SCHEMA-STEPS``); ``None`` for the other limits.
    """

    def __init__(self, message: str, *, limit: int, interrupt_id: str | None = None, **where: Any) -> None:
        super().__init__(message, **where)
        self.limit = limit
        self.interrupt_id = interrupt_id


class RunFailed(AguiError):
    """The run ended with ``RUN_ERROR``.

    Attributes:
        run_id: the failed run.
        message: the producer's message, whole (the exception's text quotes at most its first
            ``QUOTED_CHARS`` characters, with a count of the rest).
        code: the producer's code, when given.
        result: the failed run (from ``RunResult.raise_for_outcome()``: that result, whose messages and
            state hold what the agent did before it failed).
    """

    def __init__(self, message: str, *, run_id: str | None, code: str | None) -> None:
        # (the producer's words made inert in the message a traceback prints, and cut as every error cuts
        # the agent's words it quotes: a RUN_ERROR of 16 MiB on one line was a text as long, printed whole
        # by a traceback and written whole by every log line; ``.message`` keeps them as sent)
        super().__init__(f"run {quoted_name(run_id)} failed: "
                         f"{visible(quoted(message))}" + (f" (code {quoted_name(code)})" if code else ""))
        self.run_id = run_id
        self.message = message
        self.code = code


class ResumeRefused(AguiError, ValueError):
    """The resume list breaks the interrupt rules; nothing was sent.

    Attributes:
        ids: every offending interrupt id, in the order the interrupts were raised (unknown ids
            last, in the order given).
        problems: every problem found, by kind: ``{"uncovered": (...), "expired": (...), ...}``.
            ``build()`` reports all of them at once; the exception's class is the first kind found
            in the order nothing, uncovered, expired, unknown, duplicate, invalid, invalid-entry.
        errors: for each id whose payload failed its ``responseSchema`` (or whose schema is itself
            invalid), the readable jsonschema messages; on every subclass, so payload problems are
            not lost when another kind gives the exception its class.
        faults: for each id whose ``responseSchema`` could not judge the payload at all, the
            :class:`SchemaFault` s (also described in ``errors``); on every subclass too.
    """

    kind = "refused"

    def __init__(
        self,
        message: str,
        *,
        ids: Iterable[str] = (),
        problems: Mapping[str, Sequence[str]] | None = None,
        errors: Mapping[str, Sequence[str]] | None = None,
        faults: Mapping[str, Sequence[SchemaFault]] | None = None,
    ) -> None:
        super().__init__(message)
        self.ids = tuple(ids)
        self.problems: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in (problems or {}).items()}
        self.errors: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in (errors or {}).items()}
        self.faults: dict[str, tuple[SchemaFault, ...]] = {k: tuple(v) for k, v in (faults or {}).items()}


class UncoveredInterrupts(ResumeRefused):
    """An open interrupt has no resume entry (omission is never abandonment)."""

    kind = "uncovered"


class AwaitingAnswers(UncoveredInterrupts):
    """A run was started without a resume while the thread waits for answers; nothing was sent.

    The thread's last run stopped to ask: until every open interrupt is answered or abandoned (with
    ``thread.resume_builder()`` and ``thread.run(resume=builder)``), a new message would move past
    them. An :class:`UncoveredInterrupts`, so ``except UncoveredInterrupts`` still catches it; the
    message names the interrupts and their prompts (docs/answers.md#awaitinganswers).

    Attributes:
        thread_id: the thread.
        interrupts: the open interrupts, in the order raised (``.ids`` their ids).
    """

    def __init__(self, message: str, *, thread_id: str, interrupts: Sequence[Interrupt],
                 problems: Mapping[str, Sequence[str]] | None = None) -> None:
        super().__init__(message, ids=dict.fromkeys(i.id for i in interrupts), problems=problems)
        self.thread_id = thread_id
        self.interrupts = tuple(interrupts)


class ExpiredInterruptAnswered(ResumeRefused):
    """A ``resolved`` entry answers an interrupt that has expired; abandon it instead."""

    kind = "expired"


class UnknownInterrupt(ResumeRefused):
    """An entry names an id that is not an open interrupt of the thread.

    ``ResumeBuilder.answer`` and ``abandon`` raise it at once for such an id (nothing is recorded).

    Attributes:
        open_ids: the ids of the open interrupts, in the order raised (what could be answered).
    """

    kind = "unknown"

    def __init__(self, message: str, *, open_ids: Iterable[str] = (), **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.open_ids = tuple(open_ids)


class DuplicateResumeEntry(ResumeRefused):
    """Two entries name the same interrupt."""

    kind = "duplicate"


class InvalidResumePayload(ResumeRefused):
    """A payload fails its interrupt's ``responseSchema`` (or the schema itself is invalid).

    Attributes:
        errors: for each offending id, the readable jsonschema error messages.
    """

    kind = "invalid"


@frozen(kw_only=True)
class SchemaFault:
    """Why an interrupt's ``responseSchema`` cannot judge an answer: checking it stopped, nothing was sent.

    The schema comes from the agent; checking an answer against it is bounded (in size, nesting,
    work and regex engine) and never reaches the network or a file, so a schema that would need more
    is refused with one of these rather than hang or crash the caller.

    Attributes:
        code: a stable identifier: ``not-a-schema`` (neither an object nor a boolean, or holding a
            value JSON cannot), ``invalid`` (fails its draft's metaschema: a bad ``type``, a regex
            that is no regex, a ``$schema`` that is not a string), ``too-large`` (more than 20,000
            JSON values or 1,000,000 characters), ``too-deep`` (nested more than 64 levels, or
            checking would nest schemas deeper than the stack allows: a ``$ref`` loop, an answer
            nested too deeply), ``over-budget`` (checking needs more work than
            allowed), ``unresolvable`` (a ``$ref`` that does not resolve within the schema: remote and
            file references are never fetched), ``embedded-dialect`` (a subschema names its own
            ``$schema``).
        interrupt_id: the interrupt whose schema it is (``None`` outside a resume check).
        pointer: the JSON pointer, inside the schema, of what stopped the check (``"/properties/a/$ref"``;
            ``""`` for the schema as a whole, or where the place is not known).
        keyword: the last member of ``pointer`` (often the keyword concerned), or ``None``.
        reason: what is wrong, for a person.
    """

    code: str
    reason: str
    pointer: str = ""
    keyword: str | None = None
    interrupt_id: str | None = None

    def __str__(self) -> str:
        return f"[{self.code}] at {_pointer(self.pointer)}: {self.reason}"

    @property
    def doc(self) -> str | None:
        """Where :attr:`code` is documented, as :attr:`AguiError.doc` says it."""
        return explain_hint(self.code)


class UnusableResponseSchema(InvalidResumePayload):
    """An interrupt's ``responseSchema`` cannot judge the answer given to it; nothing was sent.

    Raised where :class:`InvalidResumePayload` would be, when a schema could not judge at all: it is
    not a valid JSON Schema, or checking against it would cost more than the bounds allow. Answering
    differently rarely helps; the interrupt can still be abandoned.

    Attributes (``None`` only when made by hand without faults):
        interrupt_id: the first such interrupt.
        code: the first fault's :attr:`SchemaFault.code`.
        pointer: the first fault's :attr:`SchemaFault.pointer` (inside the schema).
        keyword: the first fault's :attr:`SchemaFault.keyword`.
        reason: the first fault's :attr:`SchemaFault.reason`.
        faults: every fault, by interrupt id (as on every :class:`ResumeRefused`).
    """

    def __init__(
        self,
        message: str,
        *,
        ids: Iterable[str] = (),
        problems: Mapping[str, Sequence[str]] | None = None,
        errors: Mapping[str, Sequence[str]] | None = None,
        faults: Mapping[str, Sequence[SchemaFault]] | None = None,
    ) -> None:
        super().__init__(message, ids=ids, problems=problems, errors=errors, faults=faults)
        first = next((fault for found in self.faults.values() for fault in found), None)
        self.interrupt_id: str | None = first.interrupt_id if first is not None else None
        self.code: str | None = first.code if first is not None else None
        self.pointer: str | None = first.pointer if first is not None else None
        self.keyword: str | None = first.keyword if first is not None else None
        self.reason: str | None = first.reason if first is not None else None


class InvalidResumeEntry(ResumeRefused):
    """An entry is malformed: its ``status`` is not ``resolved``/``cancelled`` (IR-11), its id is no string,
    or its ``metadata`` is not an object (the schema's ``ResumeEntry``)."""

    kind = "invalid-entry"


class NothingToResume(ResumeRefused):
    """A resume list was given, but the thread has no open interrupts."""

    kind = "nothing"


class MisdirectedResume(ResumeRefused):
    """A :class:`~agui_client.ResumeBuilder` is used on a thread, or against interrupts, it was not made for.

    Interrupt ids are unique only within a run, so an id match proves nothing: a builder made by
    ``thread.resume_builder()`` records the thread, the interrupted run and the exact interrupts it
    answers, and a run refuses it when any of them differs (IR-10). Raised on its own, before the
    list itself is checked.

    Attributes:
        builder_thread_id: the thread the builder was made for.
        builder_run_id: the interrupted run the builder was made for.
        thread_id: the thread it was used on.
        interrupted_run_id: that thread's interrupted run (``None`` when nothing is open).
    """

    kind = "misdirected"

    def __init__(self, message: str, *, ids: Iterable[str] = (), builder_thread_id: str | None,
                 builder_run_id: str | None, thread_id: str, interrupted_run_id: str | None) -> None:
        ids = tuple(ids)
        super().__init__(message, ids=ids, problems={"misdirected": ids})
        self.builder_thread_id = builder_thread_id
        self.builder_run_id = builder_run_id
        self.thread_id = thread_id
        self.interrupted_run_id = interrupted_run_id


class UnencodableValue(AguiError, ValueError):
    """A value the run would send cannot be written as JSON; nothing was sent and nothing was claimed.

    JSON holds null, booleans, numbers, strings, arrays and objects with string keys. A set, bytes, a
    datetime, ``NaN`` or ``±inf``, a string holding a lone surrogate, or a mapping with a non-string key
    is refused rather than sent mangled (a datetime turned into a string, a surrogate into ``?``) or as
    invalid JSON.

    Attributes:
        field: the input member holding the value, by its wire name (``payload``, ``metadata``,
            ``state``, ``forwardedProps``, ``context``, ``tools``, ``messages``, ``content`` …).
        pointer: the JSON pointer of the offending value inside that member (``""`` for the member itself).
        interrupt_id: the interrupt whose resume entry holds the value, for ``payload``/``metadata``.
        reason: what is wrong with it, for a person.
    """

    # Defaults, because ResumeRefused's cooperative __init__ reaches this one with the message alone
    # in UnencodableResumePayload, which sets the attributes itself.
    def __init__(self, message: str, *, field: str = "", pointer: str = "", reason: str = "",
                 interrupt_id: str | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.pointer = pointer
        self.reason = reason
        self.interrupt_id = interrupt_id


class UnencodableResumePayload(InvalidResumePayload, UnencodableValue):
    """A resume entry's payload (or metadata) cannot be written as JSON; nothing was sent.

    Both a :class:`ResumeRefused` (``ids``, ``problems["invalid"]``, ``errors``) and an
    :class:`UnencodableValue` (``field``, ``pointer``, ``interrupt_id``, ``reason``).
    """

    def __init__(self, message: str, *, interrupt_id: str, field: str, pointer: str, reason: str) -> None:
        InvalidResumePayload.__init__(self, message, ids=(interrupt_id,), problems={"invalid": (interrupt_id,)},
                                      errors={interrupt_id: (f"{field} at {shown_pointer(pointer)}: {reason}",)})
        self.field = field
        self.pointer = pointer
        self.reason = reason
        self.interrupt_id = interrupt_id


class InvalidHeader(AguiError, ValueError):
    """A per-run header (``thread.run(headers=...)``) HTTP cannot carry; nothing was sent and nothing was claimed.

    The message and the attributes name the header, never its value (a credential, most often). See
    docs/codes.md, ``RUN-HEADER``.

    Example::

        try:
            thread.run("hi", headers={"Authorization": token})
        except InvalidHeader as error:
            print(error.name, error.reason)  # Authorization the value holds a line break (CR or LF) ...

    Attributes:
        name: the header's name as given (shown escaped in the message when it holds a control character).
        reason: what is wrong with it, for a person.
        code: ``RUN-HEADER``.
    """

    def __init__(self, message: str, *, name: str, reason: str, code: str = "RUN-HEADER") -> None:
        super().__init__(message)
        self.name = name
        self.reason = reason
        self.code = code


class ConcurrentResume(AguiError):
    """Another writer resumed or advanced this thread first (its stored version moved on).

    Raised by a run's claim, before anything was sent; or, with ``agent_answered`` true, by the save
    at the run's end, when the record moved on or vanished while the agent answered (a Redis restart
    without persistence, an operator's delete): ``.result`` then holds the answered run, which is not
    in the store, and sending the turn again is a second turn.

    Attributes:
        thread_id: the thread.
        expected_version: the version this writer held (0 for a thread it created).
        actual_version: the version found in the store, when known.
        agent_answered: the agent answered this run; only saving it failed.
    """

    agent_answered: bool = False

    def __init__(
        self, message: str, *, thread_id: str, expected_version: int, actual_version: int | None = None
    ) -> None:
        super().__init__(message)
        self.thread_id = thread_id
        self.expected_version = expected_version
        self.actual_version = actual_version


class ThreadBusy(AguiError):
    """This ``Thread`` object is in the middle of a run: one run at a time per object.

    Raised, with nothing sent, by a second ``run()``/``stream()`` and by ``reload()`` or
    ``release_claim()`` while a run is in flight (they would lose the run or free its claim). For
    concurrent work load another object for the thread: the store's claim then arbitrates.

    Attributes:
        thread_id: the thread.
    """

    def __init__(self, message: str, *, thread_id: str) -> None:
        super().__init__(message)
        self.thread_id = thread_id


class StreamNotFinished(AguiError, RuntimeError):
    """A run stream's ``result`` was read before the stream ended (docs/streaming.md#streamnotfinished).

    ``RunStream.result`` is a ``RunResult``, never ``None``: it exists once the events were read to
    the end, or once the ``with`` block was left (then it says whether the run was cut short). Read
    it after the block, or call ``get_final_result()``, which reads the rest of the stream first.
    A stream whose run failed has no result: the error raised in the block carries it (``.result``).

    Attributes:
        run_id: the run the stream carries; for a tool loop's stream, the run it was reading, or ``None``
            when the loop stopped between runs (the last run ended, the next never opened: the error
            is ``failed``, the runs that ended are the loop's ``results``).
        failed: the error the stream ended with, if it failed (its ``.result`` holds what was folded).
    """

    def __init__(self, message: str, *, run_id: str | None, failed: BaseException | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.failed = failed


class StreamMisused(AguiError, RuntimeError):
    """A run stream used in a way that cannot work; what was refused sent and read nothing.

    Two misuses, each with a stable code (docs/codes.md):

    * ``STREAM-REENTERED``: the block one ``thread.stream(...)`` call opened was entered a second time
      (again after it was left, or inside itself). One call sends one run and opens one block: call
      ``thread.stream(...)`` again for another run.
    * ``STREAM-SHARED``: two tasks (or OS threads) read one stream's events at once. A stream's events
      reach one reader at a time, each event once: read them in one place, and hand them on (a queue)
      to whoever else needs them. The reader already reading goes on undisturbed. Raised as well by
      a stream's block left while another task or thread reads it: that reader settles the run as its
      read comes back, as leaving the block would have, and its iteration ends there.

    Both were Python's own words before (contextlib's ``AttributeError``, the generator's ``ValueError``
    or ``RuntimeError``), which named neither the stream nor what to do. It is a ``RuntimeError``, as
    the last of those was.

    Attributes:
        code: ``STREAM-REENTERED`` or ``STREAM-SHARED``.
        run_id: the run the stream carries, when known (``None`` for a block never entered, or a tool
            loop's stream between runs).
    """

    def __init__(self, message: str, *, code: str, run_id: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.run_id = run_id


class AguiWarning(UserWarning):
    """Category of the warnings agui_client emits through :mod:`warnings` (outside a run session).

    The text starts with the warning's code in brackets (``[UK-03] at /zz: ...``).
    """

    @property
    def code(self) -> str | None:
        """The code the text starts with (``UK-03``), or ``None`` when it starts with none."""
        text = str(self.args[0]) if self.args else ""
        return text[1:text.find("]")] if text.startswith("[") and "]" in text else None

    @property
    def doc(self) -> str | None:
        """Where the warning's code is documented, as :attr:`AguiError.doc` says it; ``None`` when its text
        names no documented code."""
        return explain_hint(self.code)


@frozen(kw_only=True)
class StreamWarning:
    """A structured warning found while reading a run: something tolerated, dropped or repaired.

    Attributes:
        code: a stable code (``AGUI501``, ``UK-03``, ``SP-06/AGUI302`` …); each has a section in ``docs/codes.md``
            (what it means, a stream that triggers it, what to do).
        message: what happened, for a person.
        index: the 0-based event index, when known.
        event_type: the event's ``type`` as the agent sent it, when known (a ``*_CHUNK``'s own, the
            message ending with what it was folded as, as for :class:`ProtocolError`).
        pointer: JSON pointer of the field concerned, when known.
        run_id: the run, when known.
    """

    code: str
    message: str
    index: int | None = None
    event_type: str | None = None
    pointer: str | None = None
    run_id: str | None = None

    def __str__(self) -> str:
        where = _located(self.run_id, self.index, self.event_type, self.pointer)
        return f"[{self.code}] {', '.join(where)}: {self.message}" if where else f"[{self.code}] {self.message}"

    @property
    def doc(self) -> str | None:
        """Where :attr:`code` is documented, as :attr:`AguiError.doc` says it (``None`` for an undocumented one)."""
        return explain_hint(self.code)


def _located(run_id: str | None, index: int | None, event_type: str | None, pointer: str | None) -> list[str]:
    """Where an error or warning happened, as its message says it: the run, the event, its type and the field.

    Each but the index is the agent's word, or a key of a record another writer made: a type or a
    key holding an escape sequence went to the terminal raw wherever the message was printed (Python
    prints a warning raised outside a run to stderr), and one of a megabyte made a megabyte of
    message. So each is shown as the library shows an id (escaped, and cut with a digest past
    ``QUOTED_CHARS``); the attributes keep them as they came.
    """
    where = []
    if run_id is not None:
        where.append(f"run {quoted_name(run_id, QUOTED_CHARS)}")
    if index is not None:
        where.append(f"event #{index}")
    if event_type:
        where.append(named(event_type, QUOTED_CHARS))
    if pointer is not None:
        where.append(f"at {_pointer(pointer)}")
    return where


def _pointer(pointer: str) -> str:
    # (a pointer holds the keys it passes through: see _located)
    return named(pointer, QUOTED_CHARS) if pointer else "/"


class StoreError(AguiError):
    """A thread store failed for a reason other than a lost race (that is :class:`ConcurrentResume`).

    The backend was unreachable or refused the operation, a stored record is unreadable or was
    written by a newer release, the data is not JSON-ready, or the store is closed. The backend's own
    exception, when there is one, is the ``__cause__``.

    Attributes:
        thread_id: the thread concerned, when known.
        agent_answered: true when raised by the save at a run's end: the agent answered the run
            (``.result`` holds it), and only saving it failed.
        closed: true when the store refused the call because it had been closed (by its ``close()``,
            or by closing the client it was given to), not because the backend failed.
        code: a stable code when the refusal has one (each has a section in ``docs/codes.md``):
            ``STORE-SCHEMA``, the store's tables carry what the store did not make (a trigger, a rule,
            an index, a constraint), found when it opened them or before a write; otherwise ``None``.
    """

    agent_answered: bool = False

    def __init__(self, message: str, *, thread_id: str | None = None, closed: bool = False,
                 code: str | None = None) -> None:
        super().__init__(message)
        self.thread_id = thread_id
        self.closed = closed
        self.code = code


def _rebuilt(kind: type[AguiError], args: tuple[Any, ...]) -> AguiError:
    """An error of ``kind`` holding ``args``, its attributes still to be restored (``AguiError.__reduce__``)."""
    error = kind.__new__(kind)
    error.args = args
    return error
