"""Every AG-UI 1.0 event as a frozen attrs class, plus ``UnknownEvent`` for types this version does not know.

Each class carries its wire tag as ``TYPE``; the codec maps camelCase wire names to these snake_case
attributes and leaves ``None`` fields out on output.

An event holds the agent's words as they came (a delta, a ``RUN_ERROR`` message, a snapshot of any
size), so its ``repr`` is the bounded one of :func:`~agui_client.wire.types.base.brief_repr`, as a
message's is: attrs' own printed a 16 MiB ``RUN_ERROR`` message whole, with the control sequences in
it, in a REPL, a log line's ``%r`` or a test's failure. Equality, hashing and the fields stay attrs'.
"""

from __future__ import annotations

from typing import ClassVar, Literal, Union, get_args

from attrs import field, frozen

from .base import JSON, Metadata, brief_repr
from .messages import ContentPart, Message, TextMessageRole
from .run import RunAgentInput, RunFinishedOutcome, SubagentFinishedOutcome, TokenUsage

__all__ = [
    "RunStartedEvent",
    "RunFinishedEvent",
    "RunErrorEvent",
    "StepStartedEvent",
    "StepFinishedEvent",
    "TextMessageStartEvent",
    "TextMessageContentEvent",
    "TextMessageEndEvent",
    "TextMessageChunkEvent",
    "ToolCallStartEvent",
    "ToolCallArgsEvent",
    "ToolCallEndEvent",
    "ToolCallChunkEvent",
    "ToolCallResultEvent",
    "StateSnapshotEvent",
    "StateDeltaEvent",
    "MessagesSnapshotEvent",
    "ActivitySnapshotEvent",
    "ActivityDeltaEvent",
    "RawEvent",
    "CustomEvent",
    "ReasoningStartEvent",
    "ReasoningMessageStartEvent",
    "ReasoningMessageContentEvent",
    "ReasoningMessageEndEvent",
    "ReasoningMessageChunkEvent",
    "ReasoningEndEvent",
    "ReasoningEncryptedValueEvent",
    "SubagentStartedEvent",
    "SubagentFinishedEvent",
    "SubagentErrorEvent",
    "UnknownEvent",
    "Event",
    "EVENT_TYPES",
]


@frozen(kw_only=True)
class RunStartedEvent:
    """A run began; ``input`` may echo the request (LC-17)."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "RUN_STARTED"
    thread_id: str
    run_id: str
    protocol_version: str | None = None
    parent_run_id: str | None = None
    input: RunAgentInput | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class RunFinishedEvent:
    """The run ended without failing; an absent ``outcome`` means success (LC-09)."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "RUN_FINISHED"
    thread_id: str
    run_id: str
    result: JSON = None
    outcome: RunFinishedOutcome | None = None
    usage: tuple[TokenUsage, ...] | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class RunErrorEvent:
    """The run failed (or, once after RUN_FINISHED, a failure surfaced late)."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "RUN_ERROR"
    message: str
    code: str | None = None
    usage: tuple[TokenUsage, ...] | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class StepStartedEvent:
    """A named step began."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "STEP_STARTED"
    step_name: str
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class StepFinishedEvent:
    """A named step ended."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "STEP_FINISHED"
    step_name: str
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class TextMessageStartEvent:
    """A text message opens; an absent role means assistant (TX-08)."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "TEXT_MESSAGE_START"
    message_id: str
    role: TextMessageRole | None = None
    name: str | None = None
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class TextMessageContentEvent:
    """A piece of a text message's content."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "TEXT_MESSAGE_CONTENT"
    message_id: str
    delta: str
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class TextMessageEndEvent:
    """A text message closes."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "TEXT_MESSAGE_END"
    message_id: str
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class TextMessageChunkEvent:
    """Shorthand for start/content/end, expanded by ``chunks`` (TX-12)."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "TEXT_MESSAGE_CHUNK"
    message_id: str | None = None
    role: TextMessageRole | None = None
    delta: str | None = None
    name: str | None = None
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class ToolCallStartEvent:
    """A tool call opens."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "TOOL_CALL_START"
    tool_call_id: str
    tool_call_name: str
    parent_message_id: str | None = None
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class ToolCallArgsEvent:
    """A piece of a tool call's arguments (raw text, TC-06)."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "TOOL_CALL_ARGS"
    tool_call_id: str
    delta: str
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class ToolCallEndEvent:
    """A tool call's arguments are complete."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "TOOL_CALL_END"
    tool_call_id: str
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class ToolCallChunkEvent:
    """Shorthand for tool call start/args/end (TC-21)."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "TOOL_CALL_CHUNK"
    tool_call_id: str | None = None
    tool_call_name: str | None = None
    parent_message_id: str | None = None
    delta: str | None = None
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class ToolCallResultEvent:
    """A tool message answering a call (possibly one of an earlier run, TC-10)."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "TOOL_CALL_RESULT"
    message_id: str
    tool_call_id: str
    content: str | tuple[ContentPart, ...]
    role: Literal['tool'] | None = None
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class StateSnapshotEvent:
    """Replaces the shared state wholesale (SP-01); any JSON value, ``null`` included."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "STATE_SNAPSHOT"
    snapshot: JSON
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class StateDeltaEvent:
    """An RFC 6902 JSON Patch against the current state, applied atomically (SP-03, SP-05)."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "STATE_DELTA"
    delta: tuple[JSON, ...]
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class MessagesSnapshotEvent:
    """The producer's complete message list (MS-01)."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "MESSAGES_SNAPSHOT"
    messages: tuple[Message, ...]
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class ActivitySnapshotEvent:
    """Creates or replaces an activity message; ``replace`` absent means true (AC-02)."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "ACTIVITY_SNAPSHOT"
    message_id: str
    activity_type: str
    content: dict[str, JSON]
    replace: bool | None = None
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class ActivityDeltaEvent:
    """A JSON Patch against an activity's content (AC-03)."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "ACTIVITY_DELTA"
    message_id: str
    activity_type: str
    patch: tuple[JSON, ...]
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class RawEvent:
    """A provider-native event passed through verbatim (UK-11)."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "RAW"
    event: JSON
    source: str | None = None
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class CustomEvent:
    """An application event: ``name`` routes it, ``value`` is any JSON (UK-12)."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "CUSTOM"
    name: str
    value: JSON
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class ReasoningStartEvent:
    """A reasoning span opens."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "REASONING_START"
    message_id: str
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class ReasoningMessageStartEvent:
    """A reasoning message opens; ``role`` is required on the wire (RS-06)."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "REASONING_MESSAGE_START"
    message_id: str
    role: Literal['reasoning'] = 'reasoning'
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class ReasoningMessageContentEvent:
    """A piece of a reasoning message."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "REASONING_MESSAGE_CONTENT"
    message_id: str
    delta: str
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class ReasoningMessageEndEvent:
    """A reasoning message closes."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "REASONING_MESSAGE_END"
    message_id: str
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class ReasoningMessageChunkEvent:
    """Shorthand for reasoning message start/content/end (RS-07)."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "REASONING_MESSAGE_CHUNK"
    message_id: str | None = None
    delta: str | None = None
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class ReasoningEndEvent:
    """A reasoning span closes."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "REASONING_END"
    message_id: str
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class ReasoningEncryptedValueEvent:
    """An opaque encrypted value for a message or tool call (RS-08)."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "REASONING_ENCRYPTED_VALUE"
    subtype: Literal['tool-call', 'message']
    entity_id: str
    encrypted_value: str
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class SubagentStartedEvent:
    """A subagent invocation began (SA-01)."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "SUBAGENT_STARTED"
    subagent_run_id: str
    name: str
    description: str | None = None
    parent_subagent_run_id: str | None = None
    parent_tool_call_id: str | None = None
    parent_message_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class SubagentFinishedEvent:
    """A subagent invocation ended: success, or suspended awaiting input (SA-07)."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "SUBAGENT_FINISHED"
    subagent_run_id: str
    result: JSON = None
    outcome: SubagentFinishedOutcome | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class SubagentErrorEvent:
    """A subagent failed; the run goes on (SA-06)."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "SUBAGENT_ERROR"
    subagent_run_id: str
    message: str
    code: str | None = None
    timestamp: int | None = None
    raw_event: JSON = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class UnknownEvent:
    """An event whose ``type`` this version of the protocol does not define; ``raw`` is the payload as received."""

    __repr__ = brief_repr

    type: str
    raw: dict[str, JSON] = field(factory=dict, repr=False)


Event = Union[
    RunStartedEvent,
    RunFinishedEvent,
    RunErrorEvent,
    StepStartedEvent,
    StepFinishedEvent,
    TextMessageStartEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageChunkEvent,
    ToolCallStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallChunkEvent,
    ToolCallResultEvent,
    StateSnapshotEvent,
    StateDeltaEvent,
    MessagesSnapshotEvent,
    ActivitySnapshotEvent,
    ActivityDeltaEvent,
    RawEvent,
    CustomEvent,
    ReasoningStartEvent,
    ReasoningMessageStartEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageChunkEvent,
    ReasoningEndEvent,
    ReasoningEncryptedValueEvent,
    SubagentStartedEvent,
    SubagentFinishedEvent,
    SubagentErrorEvent,
]

#: Wire tag -> class, for every event type of AG-UI 1.0.
EVENT_TYPES: dict[str, type[Event]] = {cls.TYPE: cls for cls in get_args(Event)}
