"""Expand the ``*_CHUNK`` shorthand into explicit start/content/end events (TX-12..14, TC-21, RS-07).

Theory of operation
-------------------
A chunk says "more of the same" without saying when the thing it continues ends, so the expander
keeps, per *lane*, the one stream it is assembling. A lane is an owner: ``None`` for the parent
agent, a ``subagentRunId`` for a subagent (``""`` is a subagent, distinct from the parent: UK-15).
Keying lanes by owner lets two subagents stream chunked messages at once without ending each
other's, as the reference client does (``chunks/transform.ts``).

* The first chunk of a stream must name it (``messageId``; tool calls ``toolCallId`` *and*
  ``toolCallName``) and becomes a ``*_START``; a chunk with a non-empty ``delta`` becomes a
  ``*_CONTENT``/``TOOL_CALL_ARGS``; an empty or absent delta produces no content event.
* A continuation may omit the id. Without an id it continues the lane its tag names, else the
  parent's lane, else the only lane open for that kind; with several such lanes it is ambiguous.
  A continuation that repeats a field of its opener must agree with it.
* A lane closes, with a synthesized ``*_END``, when a chunk opens a different stream in it, when an
  explicit event of the same owner arrives (the END is emitted first), when the owner's
  ``SUBAGENT_FINISHED``/``SUBAGENT_ERROR`` arrives, and on run-level events (``RUN_*``,
  ``MESSAGES_SNAPSHOT``), which close every lane. Events that neither stream nor belong to a lane
  (``RAW``, ``ACTIVITY_*``, ``REASONING_ENCRYPTED_VALUE``, ``SUBAGENT_STARTED``, unknown events)
  close nothing.
* Mixing the two forms on one id is tolerated as content for the open message (TX-14): a chunk
  naming an explicitly opened message adds content to it, and explicit content or an explicit end
  for a chunk-opened message continues or closes it without a synthesized END.
* The opener's metadata goes on the ``*_START``; a continuation's on its content event. A delta-less
  continuation's metadata waits for the lane's next content event or its END, so key-by-key
  last-write-wins (TX-11) still follows stream order. ``rawEvent`` rides on the content event, or on
  the START of a delta-less opener. Timestamps stay with the events made from the chunk; a
  synthesized END takes the time of the event that closed the lane.

The stream's last lanes are not closed by :meth:`ChunkExpander.close` while a run is open: a stream
cut off mid-run leaves its messages unterminated (LC-04), so the verifier can list them and the
fold can flag them incomplete instead of treating truncated text or arguments as whole.

Everything else passes through unchanged and in order. Work per event is O(1): the lanes are found
through dictionaries keyed by owner and by ``(kind, id)``.

Each kind of event that meets the lanes has one handler (:meth:`ChunkExpander.explicit_start`,
``explicit_content``, ``explicit_end``, ``owner_event``, ``boundary``), returning the ENDs it
synthesizes before the event; :meth:`ChunkExpander.feed` matches a typed event onto it, and a
session reading plain events from their JSON calls the same handlers while no lane is open.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from attrs import define
from typing_extensions import assert_never

from .._inert import quoted_name
from ..errors import SequenceError
from ..wire.types import events as ev
from ..wire.types.base import Metadata
from ..wire.types.messages import TextMessageRole

__all__ = ["ChunkExpander"]

_Kind = Literal["text", "tool", "reasoning"]
_Owner = str | None
_Chunk = ev.TextMessageChunkEvent | ev.ToolCallChunkEvent | ev.ReasoningMessageChunkEvent

_ENTITY = {"text": "text message", "tool": "tool call", "reasoning": "reasoning message"}
_ID_FIELD = {"text": "messageId", "tool": "toolCallId", "reasoning": "messageId"}
# The rule that governs continuation chunks of each kind, for the errors they raise.
_CONTINUATION_RULE = {"text": "TX-13", "tool": "TC-21", "reasoning": "RS-07"}


@define
class _Lane:
    """The stream one owner is assembling from chunks, and what its opener established."""

    kind: _Kind
    entity_id: str
    owner: _Owner
    role: TextMessageRole | None = None
    name: str | None = None
    parent_message_id: str | None = None
    # Metadata of delta-less continuations, held for the next content event or the END, so that a
    # key's last write still wins in stream order.
    stash: Metadata | None = None


# Events whose whole handling, while no chunk lane is open, is to pass through unchanged.
_PASS_WHEN_IDLE: frozenset[Any] = frozenset((
    ev.TextMessageContentEvent, ev.ToolCallArgsEvent, ev.ReasoningMessageContentEvent, ev.ToolCallResultEvent,
    ev.StateSnapshotEvent, ev.StateDeltaEvent, ev.CustomEvent, ev.StepStartedEvent, ev.StepFinishedEvent,
    ev.ReasoningStartEvent, ev.ReasoningEndEvent, ev.RawEvent, ev.ActivitySnapshotEvent, ev.ActivityDeltaEvent,
    ev.ReasoningEncryptedValueEvent, ev.SubagentStartedEvent, ev.UnknownEvent))


class ChunkExpander:
    """Turns ``TEXT_MESSAGE_CHUNK``, ``TOOL_CALL_CHUNK`` and ``REASONING_MESSAGE_CHUNK`` into explicit events.

    Feed every decoded event in stream order; feed the result to the verifier and the fold.

    Example::

        expander = ChunkExpander()
        for index, event in enumerate(events):
            for expanded in expander.feed(event, index):
                ...
        for expanded in expander.close():
            ...
    """

    def __init__(self) -> None:
        self._lanes: dict[_Owner, _Lane] = {}
        #: Whether no chunk lane is open (every event other than a chunk then passes through unchanged);
        #: kept as lanes open and close, since it is asked for every event.
        self.idle = True
        self._holders: dict[tuple[_Kind, str], _Owner] = {}
        self._lanes_of_kind: dict[_Kind, dict[_Owner, None]] = {"text": {}, "tool": {}, "reasoning": {}}
        # Ids opened by explicit *_START events and not yet ended, for TX-14.
        self._explicit: dict[_Kind, set[str]] = {"text": set(), "tool": set(), "reasoning": set()}
        self._in_run = False
        self._run_id: str | None = None

    def feed(self, event: ev.Event | ev.UnknownEvent, index: int | None = None) -> list[ev.Event | ev.UnknownEvent]:
        """Expand one event.

        Args:
            event: the next decoded event of the stream.
            index: its 0-based index in the stream, stamped on any error.

        Returns:
            The events to process in its place, in order: a chunk's expansion (possibly empty), or
            any ENDs it closes followed by the event itself.

        Raises:
            SequenceError: a first chunk lacks its id (or a tool call's name), a continuation
                disagrees with its opener, or an id-less chunk could continue several lanes.
        """
        if not self._lanes and type(event) in _PASS_WHEN_IDLE:
            return [event]  # (most of any stream: with no chunk lane open these pass untouched)
        match event:
            case ev.TextMessageChunkEvent() | ev.ToolCallChunkEvent() | ev.ReasoningMessageChunkEvent():
                return self._chunk(event, index)
            case ev.RunStartedEvent():
                return [*self.run_started(event.run_id, event.timestamp), event]
            case ev.RunFinishedEvent() | ev.RunErrorEvent():
                return [*self.run_ended(event.timestamp), event]
            case ev.MessagesSnapshotEvent():
                return [*self.boundary(event.timestamp), event]
            case ev.SubagentFinishedEvent() | ev.SubagentErrorEvent():
                return [*self.owner_event(event.subagent_run_id, event.timestamp), event]
            case ev.TextMessageStartEvent():
                return [*self.explicit_start("text", event.message_id, event.subagent_run_id, event.timestamp), event]
            case ev.ToolCallStartEvent():
                return [*self.explicit_start("tool", event.tool_call_id, event.subagent_run_id, event.timestamp),
                        event]
            case ev.ReasoningMessageStartEvent():
                return [*self.explicit_start("reasoning", event.message_id, event.subagent_run_id, event.timestamp),
                        event]
            case ev.TextMessageContentEvent():
                return [*self.explicit_content("text", event.message_id, event.subagent_run_id, event.timestamp),
                        event]
            case ev.ToolCallArgsEvent():
                return [*self.explicit_content("tool", event.tool_call_id, event.subagent_run_id, event.timestamp),
                        event]
            case ev.ReasoningMessageContentEvent():
                return [*self.explicit_content("reasoning", event.message_id, event.subagent_run_id,
                                               event.timestamp), event]
            case ev.TextMessageEndEvent():
                return [*self.explicit_end("text", event.message_id, event.subagent_run_id, event.timestamp), event]
            case ev.ToolCallEndEvent():
                return [*self.explicit_end("tool", event.tool_call_id, event.subagent_run_id, event.timestamp), event]
            case ev.ReasoningMessageEndEvent():
                return [*self.explicit_end("reasoning", event.message_id, event.subagent_run_id, event.timestamp),
                        event]
            case (
                ev.ToolCallResultEvent()
                | ev.StateSnapshotEvent()
                | ev.StateDeltaEvent()
                | ev.CustomEvent()
                | ev.StepStartedEvent()
                | ev.StepFinishedEvent()
                | ev.ReasoningStartEvent()
                | ev.ReasoningEndEvent()
            ):
                return [*self.owner_event(event.subagent_run_id, event.timestamp), event]
            case (
                ev.RawEvent()
                | ev.ActivitySnapshotEvent()
                | ev.ActivityDeltaEvent()
                | ev.ReasoningEncryptedValueEvent()
                | ev.SubagentStartedEvent()
                | ev.UnknownEvent()
            ):
                return [event]
            case _:
                assert_never(event)

    # -- the handlers: what each kind of event does to the lanes -----------------------------------

    def run_started(self, run_id: str, timestamp: int | None) -> list[ev.Event | ev.UnknownEvent]:
        """RUN_STARTED: every lane closes, and a fresh run has opened nothing explicitly."""
        out = self._close_all(timestamp)
        for ids in self._explicit.values():
            ids.clear()
        self._in_run = True
        self._run_id = run_id
        return out

    def run_ended(self, timestamp: int | None) -> list[ev.Event | ev.UnknownEvent]:
        """RUN_FINISHED / RUN_ERROR: every lane closes."""
        self._in_run = False
        return self._close_all(timestamp)

    def boundary(self, timestamp: int | None) -> list[ev.Event | ev.UnknownEvent]:
        """A run-level event (MESSAGES_SNAPSHOT): every lane closes."""
        return self._close_all(timestamp)

    def owner_event(self, owner: _Owner, timestamp: int | None) -> list[ev.Event | ev.UnknownEvent]:
        """An explicit event of an owner that belongs to no lane (a result, state, a step …), or the
        owner's SUBAGENT_FINISHED/SUBAGENT_ERROR: the owner's lane closes."""
        return self._close_lane(owner, timestamp)

    def explicit_start(self, kind: _Kind, entity_id: str, owner: _Owner,
                       timestamp: int | None) -> list[ev.Event | ev.UnknownEvent]:
        """An explicit ``*_START``: the owner's lane closes, and the id is open explicitly (TX-14)."""
        out = self._close_lane(owner, timestamp)
        self._explicit[kind].add(entity_id)
        return out

    def explicit_content(self, kind: _Kind, entity_id: str, owner: _Owner,
                         timestamp: int | None) -> list[ev.Event | ev.UnknownEvent]:
        """Explicit content: it continues a chunk-opened stream of that id (TX-14), else closes the
        owner's lane."""
        if (kind, entity_id) in self._holders:
            return []
        return self._close_lane(owner, timestamp)

    def explicit_end(self, kind: _Kind, entity_id: str, owner: _Owner,
                     timestamp: int | None) -> list[ev.Event | ev.UnknownEvent]:
        """An explicit ``*_END``: it closes a chunk-opened stream of that id itself (no END synthesized),
        else closes the owner's lane."""
        self._explicit[kind].discard(entity_id)
        if (kind, entity_id) in self._holders:
            # The explicit END closes the chunk-opened stream itself; a synthesized one would be a second.
            self._drop_lane(self._holders[(kind, entity_id)])
            return []
        return self._close_lane(owner, timestamp)

    def close(self) -> list[ev.Event | ev.UnknownEvent]:
        """End of stream: close what is left.

        Returns:
            The ENDs of the lanes still open when no run is open (chunks outside any run). While a
            run is open the stream was cut off mid-run: the lanes are dropped *without* an END, so
            their messages and tool calls stay unterminated for the verifier and the fold (LC-04).
        """
        if self._in_run:
            self._lanes.clear()
            self.idle = True
            self._holders.clear()
            for owners in self._lanes_of_kind.values():
                owners.clear()
            return []
        return self._close_all(None)

    # -- chunks ---------------------------------------------------------------------------------

    def _chunk(self, chunk: _Chunk, index: int | None) -> list[ev.Event | ev.UnknownEvent]:
        kind: _Kind
        match chunk:
            case ev.TextMessageChunkEvent():
                kind, entity_id = "text", chunk.message_id
            case ev.ToolCallChunkEvent():
                kind, entity_id = "tool", chunk.tool_call_id
            case ev.ReasoningMessageChunkEvent():
                kind, entity_id = "reasoning", chunk.message_id
            case _:
                assert_never(chunk)
        tag = chunk.subagent_run_id
        owner = self._resolve_lane(kind, entity_id, tag, chunk, index)
        lane = self._lanes.get(owner)
        out: list[ev.Event | ev.UnknownEvent] = []

        if lane is not None and lane.kind == kind and entity_id in (None, lane.entity_id):
            self._check_agreement(lane, chunk, index)
            return self._content(lane.kind, lane.entity_id, lane, chunk, tag if tag is not None else lane.owner, out,
                                 opened=False)

        if entity_id is not None and entity_id in self._explicit[kind]:
            # TX-14: the message was opened explicitly; the chunk only adds content to it.
            if lane is not None:
                out.extend(self._close_lane(owner, chunk.timestamp))
            return self._content(kind, entity_id, None, chunk, tag, out, opened=False)

        entity_id = self._opener_id(chunk, index)
        if lane is not None:
            out.extend(self._close_lane(owner, chunk.timestamp))
        lane = self._open_lane(kind, entity_id, owner, chunk)
        out.append(self._start_event(lane, chunk))
        return self._content(kind, entity_id, lane, chunk, tag if tag is not None else owner, out, opened=True)

    def _resolve_lane(self, kind: _Kind, entity_id: str | None, tag: _Owner, chunk: _Chunk,
                      index: int | None) -> _Owner:
        if entity_id is not None:
            if (kind, entity_id) not in self._holders:
                return tag
            holder = self._holders[(kind, entity_id)]
            if tag is not None and tag != holder:
                # A delta-less chunk synthesizes nothing, so the verifier would never see this disagreement.
                raise self._error(
                    f"chunk subagentRunId {quoted_name(tag)} does not match the owner of the open {_ENTITY[kind]} "
                    f"{quoted_name(entity_id)} ({_owner_label(holder)})",
                    chunk, index, rule="SA-11/AGUI606", pointer="/subagentRunId",
                )
            return holder
        if tag is not None:
            return tag
        parent = self._lanes.get(None)
        if parent is not None and parent.kind == kind:
            return None
        candidates = self._lanes_of_kind[kind]
        if len(candidates) > 1:
            raise self._error(
                f"an id-less {chunk.TYPE} without subagentRunId is ambiguous: {len(candidates)} lanes have an open "
                f"{_ENTITY[kind]}", chunk, index, rule=_CONTINUATION_RULE[kind], pointer="/" + _ID_FIELD[kind],
            )
        for only in candidates:
            return only
        return None

    def _opener_id(self, chunk: _Chunk, index: int | None) -> str:
        """The id of a chunk that opens a stream, once it is known to carry what an opener must."""
        match chunk:
            case ev.TextMessageChunkEvent(message_id=None):
                raise self._error("the first TEXT_MESSAGE_CHUNK of a message must carry messageId", chunk, index,
                                  rule="TX-12", pointer="/messageId")
            case ev.ReasoningMessageChunkEvent(message_id=None):
                raise self._error("the first REASONING_MESSAGE_CHUNK of a message must carry messageId", chunk,
                                  index, rule="RS-07", pointer="/messageId")
            case ev.ToolCallChunkEvent(tool_call_id=None):
                raise self._error("the first TOOL_CALL_CHUNK of a tool call must carry toolCallId", chunk, index,
                                  rule="TC-21", pointer="/toolCallId")
            case ev.ToolCallChunkEvent(tool_call_name=None):
                raise self._error("the first TOOL_CALL_CHUNK of a tool call must carry toolCallName", chunk, index,
                                  rule="TC-21", pointer="/toolCallName")
            case ev.ToolCallChunkEvent(tool_call_id=str(call_id)):
                return call_id
            case ev.TextMessageChunkEvent(message_id=str(message_id)) | ev.ReasoningMessageChunkEvent(
                    message_id=str(message_id)):
                return message_id
            case _:
                raise AssertionError(f"unreachable: every chunk class is matched above ({chunk.TYPE})")

    def _check_agreement(self, lane: _Lane, chunk: _Chunk, index: int | None) -> None:
        # The repeated field never survives expansion (content events do not carry it), so a
        # disagreement has to be caught here or nowhere.
        checks: list[tuple[str, str | None, str | None]]
        match chunk:
            case ev.TextMessageChunkEvent():
                checks = [("role", chunk.role, lane.role), ("name", chunk.name, lane.name)]
            case ev.ToolCallChunkEvent():
                checks = [("toolCallName", chunk.tool_call_name, lane.name),
                          ("parentMessageId", chunk.parent_message_id, lane.parent_message_id)]
            case ev.ReasoningMessageChunkEvent():
                checks = []
            case _:
                assert_never(chunk)
        for wire_name, incoming, established in checks:
            if incoming is not None and incoming != established:
                raise self._error(
                    f"continuation chunk {wire_name} {quoted_name(incoming)} does not match the open "
                    f"{_ENTITY[lane.kind]} "
                    f"{quoted_name(lane.entity_id)} ({'absent' if established is None else quoted_name(established)})",
                    chunk, index, rule=_CONTINUATION_RULE[lane.kind], pointer="/" + wire_name,
                )

    def _open_lane(self, kind: _Kind, entity_id: str, owner: _Owner, chunk: _Chunk) -> _Lane:
        lane = _Lane(kind=kind, entity_id=entity_id, owner=owner)
        match chunk:
            case ev.TextMessageChunkEvent():
                lane.role = chunk.role if chunk.role is not None else "assistant"  # TX-08
                lane.name = chunk.name
            case ev.ToolCallChunkEvent():
                lane.name = chunk.tool_call_name
                lane.parent_message_id = chunk.parent_message_id
            case ev.ReasoningMessageChunkEvent():
                pass
            case _:
                assert_never(chunk)
        self._lanes[owner] = lane
        self.idle = False
        self._holders[(kind, entity_id)] = owner
        self._lanes_of_kind[kind][owner] = None
        return lane

    def _start_event(self, lane: _Lane, chunk: _Chunk) -> ev.Event:
        # The opener carries the chunk's metadata (it builds the entity); rawEvent rides on the
        # content event when there is one, since that is what the producer actually sent.
        raw = chunk.raw_event if not chunk.delta else None
        match lane.kind:
            case "text":
                return ev.TextMessageStartEvent(message_id=lane.entity_id, role=lane.role, name=lane.name,
                                             subagent_run_id=chunk.subagent_run_id, timestamp=chunk.timestamp,
                                             raw_event=raw, metadata=chunk.metadata)
            case "tool":
                assert lane.name is not None
                return ev.ToolCallStartEvent(tool_call_id=lane.entity_id, tool_call_name=lane.name,
                                          parent_message_id=lane.parent_message_id,
                                          subagent_run_id=chunk.subagent_run_id, timestamp=chunk.timestamp,
                                          raw_event=raw, metadata=chunk.metadata)
            case "reasoning":
                return ev.ReasoningMessageStartEvent(message_id=lane.entity_id, subagent_run_id=chunk.subagent_run_id,
                                                  timestamp=chunk.timestamp, raw_event=raw, metadata=chunk.metadata)
            case _:
                assert_never(lane.kind)

    def _content(self, kind: _Kind, entity_id: str, lane: _Lane | None, chunk: _Chunk, owner: _Owner,
                 out: list[ev.Event | ev.UnknownEvent], *, opened: bool) -> list[ev.Event | ev.UnknownEvent]:
        metadata = None if opened else chunk.metadata
        if not chunk.delta:
            if lane is not None and metadata is not None:
                lane.stash = _merged(lane.stash, metadata)
            return out
        if lane is not None and lane.stash is not None:
            metadata = _merged(lane.stash, metadata)
            lane.stash = None
        delta = chunk.delta
        fields: dict[str, Any] = {"delta": delta, "subagent_run_id": owner, "timestamp": chunk.timestamp,
                                  "raw_event": chunk.raw_event, "metadata": metadata}
        match kind:
            case "text":
                out.append(ev.TextMessageContentEvent(message_id=entity_id, **fields))
            case "tool":
                out.append(ev.ToolCallArgsEvent(tool_call_id=entity_id, **fields))
            case "reasoning":
                out.append(ev.ReasoningMessageContentEvent(message_id=entity_id, **fields))
            case _:
                assert_never(kind)
        return out

    # -- closing lanes --------------------------------------------------------------------------

    def _close_lane(self, owner: _Owner, timestamp: int | None) -> list[ev.Event | ev.UnknownEvent]:
        lane = self._drop_lane(owner)
        if lane is None:
            return []
        # The END is synthesized when the closing event arrives, so it takes that event's time;
        # it carries no metadata but what delta-less continuations left for it.
        match lane.kind:
            case "text":
                return [ev.TextMessageEndEvent(message_id=lane.entity_id, subagent_run_id=lane.owner,
                                            timestamp=timestamp, metadata=lane.stash)]
            case "tool":
                return [ev.ToolCallEndEvent(tool_call_id=lane.entity_id, subagent_run_id=lane.owner,
                                         timestamp=timestamp, metadata=lane.stash)]
            case "reasoning":
                return [ev.ReasoningMessageEndEvent(message_id=lane.entity_id, subagent_run_id=lane.owner,
                                                 timestamp=timestamp, metadata=lane.stash)]
            case _:
                assert_never(lane.kind)

    def _close_all(self, timestamp: int | None) -> list[ev.Event | ev.UnknownEvent]:
        out: list[ev.Event | ev.UnknownEvent] = []
        for owner in list(self._lanes):
            out.extend(self._close_lane(owner, timestamp))
        return out

    def _drop_lane(self, owner: _Owner) -> _Lane | None:
        lane = self._lanes.pop(owner, None)
        self.idle = not self._lanes
        if lane is not None:
            del self._holders[(lane.kind, lane.entity_id)]
            del self._lanes_of_kind[lane.kind][owner]
        return lane

    def _error(self, message: str, chunk: _Chunk, index: int | None, *, rule: str, pointer: str) -> SequenceError:
        return SequenceError(message, run_id=self._run_id, index=index, event_type=chunk.TYPE, pointer=pointer,
                             rule=rule)

def _owner_label(owner: _Owner) -> str:
    return "the parent agent" if owner is None else f"subagent {quoted_name(owner)}"


def _merged(first: Mapping[str, Any] | None, second: Mapping[str, Any] | None) -> Metadata | None:
    # TX-11: key by key, last write wins, never recursively.
    if first is None:
        return dict(second) if second is not None else None
    if second is None:
        return dict(first)
    return {**first, **second}
