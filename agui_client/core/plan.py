"""What a run will send, assembled and checked before the thread is claimed or a byte is sent.

A ``Plan`` is the run's input, its encoded body and what the thread takes on when the run starts
(the new messages, a replaced state). Everything the caller hands a run is checked here where it
can be named (``UnencodableValue`` with the field and the JSON pointer): a refusal leaves the thread
as it was. Sans-IO.
"""

from __future__ import annotations

import inspect
import math
import typing
import uuid
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, cast

import attrs

from .._inert import shown_pointer
from ..errors import UnencodableValue
from ..wire import codec
from ..wire.jsonio import json_problem
from ..wire.types import messages as msg
from ..wire.types.base import JSON
from ..wire.types.run import RunAgentInput, Tool
from .exchange import Check, request_body
from .headers import RunHeaders

__all__ = ["Plan", "MessageInput", "ToolHandler", "new_messages", "declare", "is_parts", "unencodable",
           "refuse_unencodable", "refuse_unencodable_item", "encode_input", "checked_seconds", "MIN_SECONDS",
           "MAX_SECONDS"]

#: What ``run()`` accepts as the new turn: text (a user message), a message, or several messages.
MessageInput = str | msg.Message | Sequence[msg.Message] | None

ToolHandler = Callable[..., Any]


#: The shortest timeout the client takes, in seconds (1 ms). The waits under every connection count in
#: whole milliseconds: ``poll`` under the socket module, ``epoll``/``kqueue`` under asyncio's selectors,
#: each rounding a shorter wait up to 1 ms or, for a connection being made, ending it first. Measured on
#: loopback: under 1 ms every async connect failed (a 1 ns timeout as "could not connect"), at 1 ms about
#: half did, at 10 ms none; a shorter value is no wait the client can keep, and one that comes out of a
#: unit mistake (``1e-320``, milliseconds read as days) ended as a connect failure naming no setting.
MIN_SECONDS = 0.001

#: The longest timeout the client takes (about 31 years), in seconds: a socket's timeout must fit the
#: platform's clock, and a longer one is no wait anyone means (``None``, where a setting allows it, is
#: no limit at all).
MAX_SECONDS = 1e9


@typing.overload
def checked_seconds(name: str, value: float) -> float: ...
@typing.overload
def checked_seconds(name: str, value: float | None) -> float | None: ...
def checked_seconds(name: str, value: float | None) -> float | None:
    """``value``, a timeout in seconds, refused unless it is a finite number from :data:`MIN_SECONDS`
    to :data:`MAX_SECONDS` (or ``None``).

    A NaN or infinite timeout went on to the event loop's timers, which take it one way under asyncio
    (a timeout at the first wait) and another under uvloop (a bare ``ValueError`` in the middle of the
    run); one of 0 or less ended every run at its first wait; a finite one too large for the platform's
    clock (``1e308``) ended the first read with an ``OverflowError`` from the socket, and one too short
    to wait (``1e-320``) ended the connect as if the agent could not be reached. Refused where it is
    given instead.

    Raises:
        ValueError: naming the setting and the value given.

    Example::

        >>> checked_seconds("idle_timeout", 30)
        30.0
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number of seconds above 0, got {value!r}")
    if value < MIN_SECONDS:
        raise ValueError(f"{name} must be at least {MIN_SECONDS} seconds (1 ms: the shortest wait a socket "
                         f"can keep), got {value!r}")
    if value > MAX_SECONDS:
        raise ValueError(f"{name} must be at most {MAX_SECONDS:.0f} seconds (about 31 years; for no limit, "
                         f"where the setting allows it, give None), got {value!r}")
    return float(value)


@attrs.frozen(kw_only=True)
class Plan:
    """One run's input, made and checked before the thread is claimed."""

    run_input: RunAgentInput
    new_messages: tuple[msg.Message, ...]
    state: JSON
    replace_state: bool
    resuming: bool
    #: The encoded request, made before the thread is claimed so a value JSON cannot hold is refused first.
    body: bytes
    #: This run's overall deadline in seconds (``None``: the client's).
    run_timeout: float | None = None
    #: This run's own request headers, checked (``core.headers``); never in a repr: they hold credentials.
    headers: RunHeaders = attrs.field(default=(), repr=False)
    #: A resume's check of its answers, made again before the request is sent again (``None``: no resume).
    recheck: Check[None] | None = attrs.field(default=None, repr=False, eq=False)


def new_messages(message: MessageInput) -> tuple[msg.Message, ...]:
    """The new turn as messages: text becomes a user message with a fresh id."""
    if message is None:
        return ()
    if isinstance(message, str):
        return (msg.UserMessage(id=str(uuid.uuid4()), content=message),)
    if isinstance(message, Sequence):
        messages = tuple(cast("Sequence[msg.Message]", message))
        for index, item in enumerate(messages):
            if not isinstance(item, _MESSAGE_CLASSES):
                # (before anything is claimed or sent: the agent would refuse the run's input with a 400)
                hint = "; pass one string as the turn's text" if isinstance(item, str) else ""
                raise TypeError(f"nothing was sent: message[{index}] is a {type(item).__name__}, not a Message "
                                f"(UserMessage, AssistantMessage, ...){hint}")
        return messages
    if not isinstance(message, _MESSAGE_CLASSES):
        raise TypeError(f"nothing was sent: the message is a {type(message).__name__}, not a str or a Message")
    return (message,)


_MESSAGE_CLASSES = typing.get_args(msg.Message)


def declare(name: str, handler: ToolHandler) -> Tool:
    """A frontend tool declared from its handler: the docstring, and parameters read from the signature."""
    description = inspect.getdoc(handler) or name
    parameters: dict[str, Any] = {"type": "object", "properties": {}}
    try:
        signature = inspect.signature(handler)
    except (TypeError, ValueError):
        return Tool(name=name, description=description, parameters=parameters)
    types = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array", dict: "object"}
    required = []
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        spec: dict[str, Any] = {}
        annotation = param.annotation
        if isinstance(annotation, str):
            annotation = {"str": str, "int": int, "float": float, "bool": bool, "list": list, "dict": dict}.get(
                annotation, annotation)
        if annotation in types:
            spec["type"] = types[annotation]
        parameters["properties"][param.name] = spec
        if param.default is param.empty:
            required.append(param.name)
    if required:
        parameters["required"] = required
    return Tool(name=name, description=description, parameters=parameters)


def is_parts(content: Any) -> bool:
    """Whether ``content`` is a non-empty list of content parts (sent as parts, not as JSON text)."""
    return isinstance(content, (list, tuple)) and all(
        isinstance(p, (msg.TextPart, msg.ImagePart, msg.AudioPart, msg.VideoPart, msg.DocumentPart)) for p in content
    ) and bool(content)


def unencodable(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate, which UTF-8 (and so no store or agent) can carry."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def refuse_unencodable(field: str, value: Any, what: str, *, prefix: str = "") -> None:
    """Raise ``UnencodableValue`` when ``value`` is not JSON, naming ``field`` and the pointer."""
    found = json_problem(value)
    if found is not None:
        _refuse(field, what, prefix + found[0], found[1])


def refuse_unencodable_item(field: str, item: Any, what: str, *, prefix: str) -> None:
    """:func:`refuse_unencodable` for a wire object, judged in its encoded form."""
    # A wire object (a Context, a Tool, a message) is checked in its encoded form, where pointers are
    # the wire's; one the converter cannot even encode is refused as a whole.
    try:
        encoded = codec.encode(item)
    except (TypeError, ValueError) as exc:
        _refuse(field, what, prefix, str(exc), cause=exc)
    refuse_unencodable(field, encoded, what, prefix=prefix)


def _refuse(field: str, what: str, pointer: str, reason: str, *, cause: Exception | None = None) -> NoReturn:
    raise UnencodableValue(f"nothing was sent: {what} is not JSON at {shown_pointer(pointer)}: {reason}",
                           field=field, pointer=pointer, reason=reason) from cause


#: Why a run input nested deeper than the encoders go is refused.
_TOO_DEEP = "it is nested deeper than JSON encoders go (some 1,000 levels); no agent could read it either"


def encode_input(run_input: RunAgentInput) -> bytes:
    """The request body, or ``UnencodableValue`` naming where the input is not JSON."""
    try:
        return request_body(run_input)
    except UnencodableValue as exc:  # (a cycle, named where it is by the writer)
        _refuse("input", "the run input", exc.pointer, exc.reason, cause=exc)
    except (TypeError, ValueError, OverflowError, RecursionError) as exc:
        # A value the checks above do not reach (a message added to the thread by hand, say): still a
        # typed refusal before the claim, located when the converter's output shows where. A value
        # nested deeper than the encoders go (some 1,000 levels: orjson stops at 255 and hands it to
        # json, which recurses) is JSON to those checks, and ended the run with a RecursionError.
        try:
            found = json_problem(codec.encode(run_input))
        except (TypeError, ValueError, RecursionError):
            found = None
        pointer, reason = found if found is not None else ("", _TOO_DEEP if isinstance(exc, RecursionError)
                                                           else str(exc))
        _refuse("input", "the run input", pointer, reason, cause=exc)
