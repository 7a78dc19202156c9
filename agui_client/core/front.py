"""The session's fast front-end: the routes by which a ``RunSession`` reads the commonest events straight
from their JSON, and their table (``FRONT``).

A session nobody reads events from (``replay()``, ``Thread.run()``) reads the commonest events in
their plain shape straight from their JSON: a reader the codec derives from the event's class checks
the shape exactly as the decoder's fast path does (anything else is decoded, and the checked path
decides) and hands the fields to a route, which calls the handlers the typed path reaches through
``ChunkExpander.feed``, ``RunVerifier.check`` and ``ThreadState.apply``: the same handlers, with the
same fields, in the same order. No rule is written here. The front-end runs only while a run is
running and no chunk lane is open. Then the verifier's phase step keeps every event (so the passive
kinds, whose only rule it is, do not reach ``RunVerifier.passive``), and the expander passes every
event unchanged and does nothing but record the ids a START opens explicitly (an END forgets them), so
only those two reach it (``explicit_start``, ``explicit_end``), the others having nothing to close.

The routes are methods of :class:`FrontEnd`, which ``RunSession`` is built on: every event read this
way goes through one of them, so each reaches the session's parts as the session's own code does,
through ``self``, with no object or call between the reader and the handlers.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import attrs

from ..errors import StreamWarning
from ..wire import codec
from ..wire.types import events as ev
from ..wire.types.base import JSON
from .roster import Roster

if TYPE_CHECKING:
    from .chunks import ChunkExpander
    from .fold import ThreadState
    from .fold.document import StateDocument
    from .fold.streams import Streams
    from .verify import RunVerifier

__all__ = ["FrontEnd", "FRONT"]


class FrontEnd:
    """The routes of the fast front-end, one per event type it reads: ``RunSession`` is built on them.

    A route is called by the reader ``FRONT`` holds for its type as ``route(session, index, *fields)``,
    with the event's fields in the class's order, and calls the handlers the typed path would.
    """

    # What the routes reach of the session (a session keeps its parts for its life).
    state: ThreadState
    _chunks: ChunkExpander
    _verifier: RunVerifier
    _streams: Streams
    _document: StateDocument
    _add_warnings: Callable[[Iterable[StreamWarning], int, str | None], None]

    def _text_content(self, index: int, message_id: str, delta: str, subagent_run_id: str | None = None,
                      timestamp: int | None = None, raw_event: JSON = None, metadata: Any = None) -> None:
        self._verifier.text_content(index, message_id, subagent_run_id)
        found = self._streams.text_delta(message_id, delta, metadata)
        if found:
            self._add_warnings(found, index, "TEXT_MESSAGE_CONTENT")

    def _reasoning_content(self, index: int, message_id: str, delta: str,
                           subagent_run_id: str | None = None, timestamp: int | None = None, raw_event: JSON = None,
                           metadata: Any = None) -> None:
        self._verifier.reasoning_content(index, message_id, subagent_run_id)
        found = self._streams.text_delta(message_id, delta, metadata)
        if found:
            self._add_warnings(found, index, "REASONING_MESSAGE_CONTENT")

    def _tool_args(self, index: int, tool_call_id: str, delta: str, subagent_run_id: str | None = None,
                   timestamp: int | None = None, raw_event: JSON = None, metadata: Any = None) -> None:
        self._verifier.tool_args(index, tool_call_id, subagent_run_id)
        found = self._streams.tool_args(tool_call_id, delta, metadata)
        if found:
            self._add_warnings(found, index, "TOOL_CALL_ARGS")

    def _text_start(self, index: int, message_id: str, role: str | None = None, name: str | None = None,
                    subagent_run_id: str | None = None, timestamp: int | None = None, raw_event: JSON = None,
                    metadata: Any = None) -> None:
        self._chunks.explicit_start("text", message_id, subagent_run_id, timestamp)
        checked = self._verifier.text_start(index, message_id, subagent_run_id)
        if checked:
            self._add_warnings(checked, index, "TEXT_MESSAGE_START")
        found = self._streams.text_start(message_id, role or "assistant", name, subagent_run_id, metadata)
        if found:
            self._add_warnings(found, index, "TEXT_MESSAGE_START")

    def _text_end(self, index: int, message_id: str, subagent_run_id: str | None = None,
                  timestamp: int | None = None, raw_event: JSON = None, metadata: Any = None) -> None:
        self._chunks.explicit_end("text", message_id, subagent_run_id, timestamp)
        self._verifier.text_end(index, message_id, subagent_run_id)
        found = self._streams.text_end(message_id, metadata)
        if found:
            self._add_warnings(found, index, "TEXT_MESSAGE_END")

    def _tool_start(self, index: int, tool_call_id: str, tool_call_name: str,
                    parent_message_id: str | None = None, subagent_run_id: str | None = None,
                    timestamp: int | None = None, raw_event: JSON = None, metadata: Any = None) -> None:
        self._chunks.explicit_start("tool", tool_call_id, subagent_run_id, timestamp)
        checked = self._verifier.tool_start(index, tool_call_id, parent_message_id, subagent_run_id)
        if checked:
            self._add_warnings(checked, index, "TOOL_CALL_START")
        found = self._streams.tool_start(tool_call_id, tool_call_name, parent_message_id, subagent_run_id, metadata)
        if found:
            self._add_warnings(found, index, "TOOL_CALL_START")

    def _tool_end(self, index: int, tool_call_id: str, subagent_run_id: str | None = None,
                  timestamp: int | None = None, raw_event: JSON = None, metadata: Any = None) -> None:
        self._chunks.explicit_end("tool", tool_call_id, subagent_run_id, timestamp)
        self._verifier.tool_end(index, tool_call_id, subagent_run_id)
        found = self._streams.tool_end(tool_call_id, metadata)
        if found:
            self._add_warnings(found, index, "TOOL_CALL_END")

    def _tool_result(self, index: int, message_id: str, tool_call_id: str, content: Any,
                     role: str | None = None, subagent_run_id: str | None = None, timestamp: int | None = None,
                     raw_event: JSON = None, metadata: Any = None) -> None:
        checked = self._verifier.tool_result(index, message_id, tool_call_id, subagent_run_id)
        if checked:
            self._add_warnings(checked, index, "TOOL_CALL_RESULT")
        found = self._streams.tool_result(message_id, tool_call_id, content, subagent_run_id, metadata)
        if found:
            self._add_warnings(found, index, "TOOL_CALL_RESULT")

    def _reasoning_start(self, index: int, message_id: str, role: str = "reasoning",
                         subagent_run_id: str | None = None, timestamp: int | None = None, raw_event: JSON = None,
                         metadata: Any = None) -> None:
        self._chunks.explicit_start("reasoning", message_id, subagent_run_id, timestamp)
        self._verifier.reasoning_message_start(index, message_id, subagent_run_id)
        found = self._streams.text_start(message_id, "reasoning", None, subagent_run_id, metadata)
        if found:
            self._add_warnings(found, index, "REASONING_MESSAGE_START")

    def _reasoning_end(self, index: int, message_id: str, subagent_run_id: str | None = None,
                       timestamp: int | None = None, raw_event: JSON = None, metadata: Any = None) -> None:
        self._chunks.explicit_end("reasoning", message_id, subagent_run_id, timestamp)
        self._verifier.reasoning_message_end(index, message_id, subagent_run_id)
        found = self._streams.text_end(message_id, metadata)
        if found:
            self._add_warnings(found, index, "REASONING_MESSAGE_END")

    def _span_start(self, index: int, message_id: str, subagent_run_id: str | None = None,
                    timestamp: int | None = None, raw_event: JSON = None, metadata: Any = None) -> None:
        self._verifier.reasoning_start(index, message_id, subagent_run_id)  # (a span holds no state of its own)

    def _span_end(self, index: int, message_id: str, subagent_run_id: str | None = None,
                  timestamp: int | None = None, raw_event: JSON = None, metadata: Any = None) -> None:
        self._verifier.reasoning_end(index, message_id, subagent_run_id)

    def _state_snapshot(self, index: int, snapshot: JSON, subagent_run_id: str | None = None,
                        timestamp: int | None = None, raw_event: JSON = None, metadata: Any = None) -> None:
        self._document.snapshot(snapshot, True)

    def _custom(self, index: int, name: str, value: JSON, subagent_run_id: str | None = None,
                timestamp: int | None = None, raw_event: JSON = None, metadata: Any = None) -> None:
        self.state.ledger.custom(name, value, subagent_run_id, raw_event)  # (no state of its own; see legacy.py)

    def _step_started(self, index: int, step_name: str, subagent_run_id: str | None = None,
                      timestamp: int | None = None, raw_event: JSON = None, metadata: Any = None) -> None:
        self._verifier.step_started(index, step_name, subagent_run_id)
        self.state.ledger.step_started(step_name, subagent_run_id)

    def _step_finished(self, index: int, step_name: str, subagent_run_id: str | None = None,
                       timestamp: int | None = None, raw_event: JSON = None, metadata: Any = None) -> None:
        self._verifier.step_finished(index, step_name, subagent_run_id)
        self.state.ledger.step_finished(step_name, subagent_run_id)

    def _state_delta(self, index: int, delta: list[Any], subagent_run_id: str | None = None,
                     timestamp: int | None = None, raw_event: JSON = None, metadata: Any = None) -> None:
        # The decoder's check of the patch (codec.CHECKS) is asked of the applier, which runs it only for a
        # patch that is not wholly plain add/replace/remove operations (which it cannot refuse) or that
        # fails: a refused one steps back, the document unchanged, and the typed path says why.
        try:
            found = self._document.delta(delta, True, _VET_DELTA)
        except codec.FieldError:
            raise codec.Fallback from None
        if found:
            self._add_warnings(found, index, "STATE_DELTA")

    def _messages_snapshot(self, index: int, messages: Roster, timestamp: int | None = None,
                           raw_event: JSON = None, metadata: Any = None) -> None:
        self._verifier.messages_snapshot(index, messages)
        found = self.state.snapshots.messages_snapshot(messages, metadata)
        if found:
            self._add_warnings(found, index, "MESSAGES_SNAPSHOT")


def _held(items: Any) -> Roster:
    # A snapshot's messages, kept as their JSON when a fold may hold every one so (else decoded).
    if type(items) is Roster:
        return items  # (a large snapshot, gathered slice by slice)
    if not codec.held_messages(items):
        raise codec.Fallback
    return Roster.of_wire(items)


_VET_DELTA = codec.patch_vet("delta")


def _fronts() -> dict[str, Any]:
    routes: list[tuple[Any, Callable[..., None], dict[str, Callable[[Any], Any]] | None]] = [
        (ev.TextMessageContentEvent, FrontEnd._text_content, None),
        (ev.ReasoningMessageContentEvent, FrontEnd._reasoning_content, None),
        (ev.ToolCallArgsEvent, FrontEnd._tool_args, None),
        (ev.TextMessageStartEvent, FrontEnd._text_start, None),
        (ev.TextMessageEndEvent, FrontEnd._text_end, None),
        (ev.ToolCallStartEvent, FrontEnd._tool_start, None),
        (ev.ToolCallEndEvent, FrontEnd._tool_end, None),
        (ev.ToolCallResultEvent, FrontEnd._tool_result, None),
        (ev.StateDeltaEvent, FrontEnd._state_delta, None),
        (ev.ReasoningMessageStartEvent, FrontEnd._reasoning_start, None),
        (ev.ReasoningMessageEndEvent, FrontEnd._reasoning_end, None),
        (ev.ReasoningStartEvent, FrontEnd._span_start, None),
        (ev.ReasoningEndEvent, FrontEnd._span_end, None),
        (ev.StateSnapshotEvent, FrontEnd._state_snapshot, None),
        (ev.CustomEvent, FrontEnd._custom, None),
        (ev.StepStartedEvent, FrontEnd._step_started, None),
        (ev.StepFinishedEvent, FrontEnd._step_finished, None),
        (ev.MessagesSnapshotEvent, FrontEnd._messages_snapshot, {"messages": _held}),
    ]
    table = {}
    for cls, route, overrides in routes:
        # The reader passes the event's fields positionally, in the class's order: the route must name them so.
        parameters = list(inspect.signature(route).parameters)[2:]
        assert parameters == [a.name for a in attrs.fields(cls)], (route.__name__, parameters)
        front = codec.front(cls, route, overrides, vetted=route is FrontEnd._state_delta)
        if front is not None:
            table[cls.TYPE] = front
    return table


#: Event type -> its front-end reader (see the module docstring).
FRONT: dict[str, Any] = _fronts()
