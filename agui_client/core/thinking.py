"""``THINKING_*`` events, which left the protocol in 1.0, read as their ``REASONING_*`` equivalents.

A ``RunSession`` hands the decoder a :class:`ThinkingReader`'s ``read`` (``codec.decode_value``'s
``legacy``): the decoder asks it only for a ``THINKING_*`` payload, on the checked path such payloads
take, so the events of 1.0 pay nothing for it. The reader keeps what the old events left implicit, the
span and the message open, for one response.
"""

from __future__ import annotations

import uuid
from typing import Any

from ..wire.sink import WarningSink

__all__ = ["ThinkingReader"]


class ThinkingReader:
    """Reads one response's ``THINKING_*`` payloads as ``REASONING_*`` ones (``RS-09``), minting their ids.

    Args:
        sink: where the deprecation warning goes (once per event type).
    """

    __slots__ = ("_sink", "_span", "_message")

    def __init__(self, sink: WarningSink) -> None:
        self._sink = sink
        self._span: str | None = None
        self._message: str | None = None

    def read(self, value: dict[str, Any]) -> dict[str, Any]:
        """The ``REASONING_*`` payload ``value`` (a ``THINKING_*`` one) stands for; any other is returned as is."""
        # RS-09: THINKING_* left the protocol in 1.0; like the reference, read them as REASONING_* and
        # mint the ids the old events did not carry. A ``messageId`` one carries anyway is not read: the
        # old events had none, so an opener's and its content's could disagree (the reference, which mints
        # every id, accepts such a stream; read, they would fail it). An event continuing nothing open
        # gets an id of its own, which names nothing open, and is refused for it.
        kind = value["type"]
        self._sink.warn("RS-09", f"deprecated {kind} read as its REASONING_* equivalent", event_type=kind,
                        once=("type", kind))
        rest = {k: v for k, v in value.items() if k not in ("type", "title", "messageId")}
        if kind == "THINKING_START":
            self._span = str(uuid.uuid4())
            return {**rest, "type": "REASONING_START", "messageId": self._span}
        if kind == "THINKING_END":
            span, self._span = self._span or str(uuid.uuid4()), None
            return {**rest, "type": "REASONING_END", "messageId": span}
        if kind == "THINKING_TEXT_MESSAGE_START":
            self._message = str(uuid.uuid4())
            return {**rest, "type": "REASONING_MESSAGE_START", "messageId": self._message,
                    "role": "reasoning"}
        if kind == "THINKING_TEXT_MESSAGE_CONTENT":
            return {**rest, "type": "REASONING_MESSAGE_CONTENT",
                    "messageId": self._message or str(uuid.uuid4())}
        if kind == "THINKING_TEXT_MESSAGE_END":
            message, self._message = self._message or str(uuid.uuid4()), None
            return {**rest, "type": "REASONING_MESSAGE_END", "messageId": message}
        return value
