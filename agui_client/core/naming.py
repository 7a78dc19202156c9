"""How a session names the events its errors and warnings are about.

An error or a warning names the type of the event it is about as the agent sent it (:func:`type_of`).
A chunk is folded as the start, content and end events it stands for (``chunks.py``): what those raise
or warn is named by the chunk the stream holds, and says what the chunk was folded as
(:func:`folded_as`, :func:`warnings_folded_as`). Where a report is located (its run and index) stays the
session's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from ..errors import ProtocolError, StreamWarning
from ..wire.types import events as ev

__all__ = ["CHUNKS", "folded_as", "type_of", "warnings_folded_as"]


#: The chunk events, each folded as the start, content and end events it stands for (``chunks.py``).
CHUNKS = frozenset({ev.TextMessageChunkEvent, ev.ToolCallChunkEvent, ev.ReasoningMessageChunkEvent})


def folded_as(exc: ProtocolError, chunk: str, kind: str | None) -> None:
    """``exc``, raised by an event a chunk was folded as (``kind``), named by the chunk: its ``event_type``
    is the type the agent sent, and its message says what the chunk was folded as.

    Named by the folded event alone, the error pointed at a ``TEXT_MESSAGE_START`` the stream does not
    hold; named by the chunk alone, the errors of one chunk's start and content read the same.
    """
    if exc.event_type in (None, kind):
        exc.event_type = chunk
    if kind is not None and kind != chunk:
        exc.detail = f"{exc.detail} (folded as {kind})"
        exc.args = (exc.detail, *exc.args[1:])


def warnings_folded_as(found: Iterable[StreamWarning], chunk: str, kind: str | None) -> list[StreamWarning]:
    """``found``, about an event a chunk was folded as (``kind``), named by the chunk (as :func:`folded_as`)."""
    return [attrs.evolve(warning, event_type=chunk, message=f"{warning.message} (folded as {kind})")
            if warning.event_type in (None, kind) else warning for warning in found]


def type_of(event: Any) -> str | None:
    """The type ``event`` was sent as (an unknown event's own), or ``None`` when it names none."""
    if isinstance(event, ev.UnknownEvent):
        return event.type
    kind = getattr(event, "TYPE", None)
    return kind if isinstance(kind, str) else None
