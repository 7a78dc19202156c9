"""What a ``ScriptedAgent`` script is made of: its items and steps, checked when they are made.

A *script* is a sequence of *steps*; run ``n`` (0-based) on a thread plays ``script[n]``. A step is:

* a sequence of items streamed in order, one ``http.response.body`` send per item:

  - an event object (``TextMessageStartEvent(...)``) or a wire dict (``{"type": ...}``): one
    ``data: <json>\\n\\n`` frame, written verbatim (a value JSON cannot carry, ``NaN`` or a set, is
    refused when the script is made: it would go out as another value);
  - :class:`Start` / :class:`Finish`: ``RUN_STARTED`` / ``RUN_FINISHED`` carrying the request's
    ``threadId`` and ``runId``;
  - ``bytes``: sent as they are (framing tests);
  - :class:`KeepAlive`, :class:`Wait`, :class:`Pause`, :class:`Disconnect`: a comment frame, a pause
    until a test opens a :class:`Gate`, a pause for some seconds, the connection cut mid-stream;

* ``bytes``: the whole body, as an event stream, in one write;
* :class:`Stream`: items as above under a chosen status, content type and headers;
* :class:`Respond`: a plain HTTP answer (an error status, a non-SSE content type);
* a callable ``(RunAgentInput) -> one of the above`` (or an awaitable of it).

What a response's head or a JSON frame could not carry is refused here, when the item is made, not
inside the agent as a request comes. How the agent plays a step is ``agent.py``'s.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from attrs import field, frozen

from .._inert import shown_pointer
from ..wire.codec import encode
from ..wire.jsonio import json_problem
from ..wire.types.base import JSON
from ..wire.types.events import EVENT_TYPES, Event, RunFinishedEvent, UnknownEvent
from ..wire.types.run import PROTOCOL_VERSION, RunAgentInput, RunFinishedOutcome, TokenUsage

__all__ = [
    "Gate",
    "Start",
    "Finish",
    "Wait",
    "Pause",
    "KeepAlive",
    "Disconnect",
    "Stream",
    "Respond",
    "Item",
    "StepResult",
    "Step",
    "check_result",
    "header_type",
]


# --------------------------------------------------------------------------------------------------
# Script items
# --------------------------------------------------------------------------------------------------


class Gate:
    """A barrier a test opens to let a waiting response continue; safe to use from any thread or loop.

    Put ``Wait(gate)`` in a script; the response stops there until ``gate.open()``. ``reached``
    tells the test that a response has arrived at the gate (and so wrote everything before it).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open = False
        self._reached = threading.Event()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    @property
    def is_open(self) -> bool:
        """Whether :meth:`open` was called."""
        return self._open

    @property
    def reached(self) -> bool:
        """Whether a response has arrived at this gate."""
        return self._reached.is_set()

    def open(self) -> None:
        """Let every response waiting here (and every later one) go on."""
        with self._lock:
            self._open = True
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            try:
                loop.call_soon_threadsafe(_resolve, future)
            except RuntimeError:
                pass  # that server's loop is already closed: nobody is left waiting

    def wait_reached(self, timeout: float | None = None) -> bool:
        """Block until a response arrives at the gate; ``False`` if ``timeout`` seconds pass first."""
        return self._reached.wait(timeout)

    async def arrive(self) -> None:
        """A response arrives here: mark the gate reached, then return once it is open (on the running
        asyncio loop; what the agent playing a :class:`Wait` awaits)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            self._reached.set()
            if self._open:
                return
            self._waiters.append((loop, future))
        await future


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


@frozen(kw_only=True)
class Start:
    """``RUN_STARTED`` with the request's ``threadId`` and ``runId``."""

    protocol_version: str | None = PROTOCOL_VERSION


@frozen(kw_only=True)
class Finish:
    """``RUN_FINISHED`` with the request's ``threadId`` and ``runId``; no ``outcome`` means success."""

    outcome: RunFinishedOutcome | None = None
    result: JSON = None
    usage: tuple[TokenUsage, ...] | None = None


@frozen
class Wait:
    """Hold the response here until ``gate`` is opened.

    Attributes:
        gate: the gate the test opens.
        timeout: seconds to wait at most; past it the connection is cut and a warning recorded, so a
            forgotten gate fails the test instead of hanging it.
    """

    gate: Gate
    timeout: float = 30.0


@frozen
class Pause:
    """Hold the response for ``seconds`` (an idle stream, for timeout tests)."""

    seconds: float


@frozen(kw_only=True)
class KeepAlive:
    """An SSE comment frame (``: keep-alive``): activity without an event."""

    comment: str = "keep-alive"


@frozen(kw_only=True)
class Disconnect:
    """Cut the connection here, leaving the response body incomplete."""



Item = Event | UnknownEvent | Mapping[str, Any] | bytes | Start | Finish | Wait | Pause | KeepAlive | Disconnect


def header_type(headers: Mapping[str, str]) -> str | None:
    """The ``Content-Type`` among a script's headers, whatever its case, or ``None``."""
    return next((value for name, value in headers.items() if name.lower() == "content-type"), None)


def _one_content_type(kind: str, content_type: str | None, headers: Mapping[str, str]) -> None:
    # Two answers to one question: whichever silently won, a test meaning the other would pass for the
    # wrong reason or fail far from here. Equal values say one thing twice, so they are let through.
    named = header_type(headers)
    if content_type is not None and named is not None and named != content_type:
        raise ValueError(f"{kind} got content_type={content_type!r} and a Content-Type header {named!r}; "
                         "give the content type once")


#: The characters of an HTTP header's name (RFC 9110's ``token``).
_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def _check_head(kind: str, status: int, content_type: str | None, headers: Mapping[str, str]) -> None:
    # What the response's head cannot carry raised inside the agent as the request came (the encoding
    # to Latin-1, or the server's own check of the status and each header), cutting the response: a test
    # then failed at the client, far from the script's mistake. Refused when the item is made instead.
    if type(status) is not int or not 100 <= status <= 599:
        raise ValueError(f"{kind} got status={status!r}: an HTTP status is a whole number from 100 to 599")
    for name in headers:
        if not isinstance(name, str) or not name or not set(name) <= _TOKEN:
            raise ValueError(f"{kind}'s header name {name!r} is not an HTTP token (letters, digits and "
                             "!#$%&'*+-.^_`|~, no spaces or colons)")
    given = [("content_type", content_type)] if content_type is not None else []
    for where, value in [*given, *((f"header {name!r}", value) for name, value in headers.items())]:
        if not isinstance(value, str):
            raise ValueError(f"{kind}'s {where} is {type(value).__name__}, not text")
        if any(c in value for c in "\r\n\x00"):
            raise ValueError(f"{kind}'s {where} holds a line break or NUL ({value!r}), which would end the "
                             "header and begin another")
        try:
            value.encode("latin-1")
        except UnicodeEncodeError as exc:
            raise ValueError(f"{kind}'s {where} holds {value[exc.start]!r}, which is not Latin-1, the only "
                             "text a header carries (encode it, as RFC 8187 does, or send it in the body)") from None


@frozen(kw_only=True)
class Stream:
    """Items streamed under a chosen status, content type and headers (a plain list is a 200 SSE stream).

    Attributes:
        items: what is streamed, in order.
        status: the HTTP status, from 100 to 599.
        content_type: ``text/event-stream`` unless given here or as a ``Content-Type`` among the headers.
        headers: extra response headers. A ``Content-Type`` among them that differs from ``content_type``
            is refused with ``ValueError`` when the ``Stream`` is made, as are a status out of range, a
            name that is not an HTTP token, and a value (or ``content_type``) holding CR, LF or NUL or
            text that is not Latin-1.
    """

    items: Sequence[Item]
    status: int = 200
    content_type: str | None = None
    headers: Mapping[str, str] = field(factory=dict)

    def __attrs_post_init__(self) -> None:
        _check_head("Stream", self.status, self.content_type, self.headers)
        _one_content_type("Stream", self.content_type, self.headers)


@frozen(kw_only=True)
class Respond:
    """A plain HTTP answer instead of an event stream.

    Attributes:
        status: the HTTP status, from 100 to 599.
        body: ``bytes`` and ``str`` are sent as they are; anything else is sent as JSON.
        content_type: defaults to JSON for JSON bodies, ``text/plain`` for text, octets for bytes.
        headers: extra response headers (``{"retry-after": "2"}``); a ``Content-Type`` among them is the
            one sent, as ``content_type`` would be. One that differs from ``content_type`` is refused with
            ``ValueError`` when the ``Respond`` is made, as are a status out of range, a name that is not
            an HTTP token, and a value (or ``content_type``) holding CR, LF or NUL or text that is not
            Latin-1.
    """

    status: int
    body: JSON = b""
    content_type: str | None = None
    headers: Mapping[str, str] = field(factory=dict)

    def __attrs_post_init__(self) -> None:
        _check_head("Respond", self.status, self.content_type, self.headers)
        _one_content_type("Respond", self.content_type, self.headers)
        if not isinstance(self.body, (bytes, str)):
            _check_json("Respond's body", self.body)


StepResult = Sequence[Item] | bytes | Stream | Respond
Step = StepResult | Callable[[RunAgentInput], StepResult | Awaitable[StepResult]]

_EVENT_CLASSES: tuple[type, ...] = (*EVENT_TYPES.values(), UnknownEvent)
_MARKERS: tuple[type, ...] = (Start, Finish, Wait, Pause, KeepAlive, Disconnect)


def _check_items(items: Sequence[Any]) -> None:
    for index, item in enumerate(items):
        if not isinstance(item, (*_EVENT_CLASSES, *_MARKERS, bytes, Mapping)):
            raise TypeError(f"script item {index} is {type(item).__name__}, not an event, wire dict, bytes or marker")
        _check_json(f"script item {index}", _wire_of(item))


def _wire_of(item: Any) -> Any:
    """What a script item is sent as, where it holds values of the script's own (else ``None``)."""
    if isinstance(item, Mapping):
        return dict(item)
    if isinstance(item, Finish):  # (the request's ids are filled in when played: placeholders here)
        return encode(RunFinishedEvent(thread_id="", run_id="", outcome=item.outcome, result=item.result,
                                       usage=item.usage))
    return encode(item) if isinstance(item, _EVENT_CLASSES) else None


def _check_json(what: str, wire: Any) -> None:
    # The agent must send what the script says. Left to the writer, NaN and +-inf went out as null
    # (orjson) and a key 1 as "1" (json.dumps), silently, and a set raised inside the agent mid-response:
    # a test passing or failing for a reason its script does not show. Lone surrogates are let through,
    # written as their escapes, as a producer slicing text by UTF-16 code unit sends them.
    found = json_problem(wire, lone_surrogates=True)
    if found is not None:
        pointer, reason = found
        raise ValueError(f"{what} holds a value JSON cannot carry at {shown_pointer(pointer)!r}: {reason} "
                         "(send it as bytes to script a malformed event)")


def check_result(result: Any) -> StepResult:
    """``result`` (a step, or what a callable step made) returned once checked as a script's steps are:
    ``TypeError`` for what no step is, ``ValueError`` for an item JSON cannot carry."""
    if isinstance(result, (bytes, Respond)):
        return result
    if isinstance(result, Stream):
        _check_items(result.items)
        return result
    if isinstance(result, Sequence) and not isinstance(result, str):
        _check_items(result)
        return result
    raise TypeError(f"a step is a list of items, bytes, Stream, Respond or a callable, not {type(result).__name__}")

