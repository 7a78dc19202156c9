"""The sequence rules of a run stream: one mutable state machine, O(1) per event.

Theory of operation
-------------------
A stream holds one or more runs, one after another (LC-06). Where the stream stands is its
*phase*, and which run-lifecycle event a phase admits is data, in :data:`TRANSITIONS`, in the
manner of h11's state tables::

    idle ──RUN_STARTED──▶ running ──RUN_FINISHED──▶ finished ──RUN_ERROR──▶ late-error
      │                     │                          (the one late RUN_ERROR, CL-02)
      └─RUN_ERROR (LC-02)─▶ errored ◀──RUN_ERROR──┘
    finished / errored / late-error ──RUN_STARTED──▶ running (a fresh run scope)

Inside a run, the *id rules* are code: a ``match`` on the event's class keeps the open text
messages, tool calls, reasoning spans and messages, steps and subagents, and refuses a continuation
of something not open, a second opener of something open, and a run that finishes with anything
still open. ``RUN_ERROR`` ends a run as it stands: what is open then is debris of the failure, not
a further violation (ST-05).

Every entity remembers, for the rest of its run, the owner it was opened under: ``None`` for the
parent agent, else a ``subagentRunId`` (``""`` is a subagent and never the parent: UK-15). A
continuation or close whose tag names another owner is refused (SA-11); an absent tag never
disagrees, and a tag need not name a started subagent (SA-12). Ids are unique per kind only: a
message and a tool call may share one (UK-16).

Breaches the protocol forbids raise :class:`~agui_client.errors.SequenceError` naming the rule
(``rules.md`` id and, where the validator has one, its code: ``"TX-02/AGUI101"``), the run, the
event index and type. Contradictions a client survives come back from :meth:`RunVerifier.check` as
:class:`~agui_client.errors.StreamWarning` values. The verdicts follow ``spec/bad-inputs.md``.

The verifier expects chunks already expanded (:class:`~agui_client.chunks.ChunkExpander`);
``UnknownEvent`` passes unchecked (the codec has warned about it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Set
from types import MappingProxyType
from typing import Any, Literal

from attrs import define, field, frozen
from typing_extensions import assert_never

from ._plain import PlainSnapshot
from .errors import SequenceError, StreamEnded, StreamWarning
from .types import events as ev
from .types.messages import ActivityMessage, AssistantMessage, Message, ReasoningMessage, ToolCall
from .types.run import (
    PROTOCOL_VERSION,
    RunFinishedCancelledOutcome,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    SubagentFinishedSuspendedOutcome,
)

__all__ = ["RunVerifier", "Phase", "PhaseRow", "Violation", "TRANSITIONS"]

Phase = Literal["idle", "running", "finished", "errored", "late-error"]

_Owner = str | None
_SEEDED = -1  # the run number recorded for ids learnt from history (snapshots, the input echo)
# Two numeric components, ASCII digits without leading zeros ("1.0", "0.10"); anything else is uninterpretable.
_VERSION = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)")


def _version_key(major: str, minor: str) -> tuple[int, str, int, str]:
    # Without leading zeros, the longer numeral is the larger, and numerals of one length compare as text:
    # no int() of a producer's numeral (Python refuses to convert one of over 4300 digits).
    return len(major), major, len(minor), minor


_SPOKEN = _version_key(*PROTOCOL_VERSION.split("."))


@frozen(kw_only=True)
class Violation:
    """A lifecycle event a phase does not admit.

    Attributes:
        rule: the rule id and validator code, as on the raised ``SequenceError``.
        message: what went wrong, for a person.
    """

    rule: str
    message: str


@frozen(kw_only=True)
class PhaseRow:
    """What each kind of event does in one phase: the next phase, or the violation it is."""

    run_started: Phase | Violation
    run_finished: Phase | Violation
    run_error: Phase | Violation
    other: Phase | Violation


_NOT_STARTED = Violation(rule="LC-01/AGUI001", message="the first event must be RUN_STARTED (or RUN_ERROR)")
_AFTER_FINISHED = Violation(
    rule="CL-01/AGUI004",
    message="the run already finished; only one late RUN_ERROR or a new RUN_STARTED may follow",
)
_AFTER_ERROR = Violation(
    rule="LC-14/AGUI004", message="the run failed with RUN_ERROR; only a new RUN_STARTED may follow"
)
_AFTER_LATE_ERROR = Violation(
    rule="CL-03/AGUI004",
    message="the closed run already had its one late RUN_ERROR; only a new RUN_STARTED may follow",
)
_FINISHED_AFTER_ERROR = Violation(rule="CL-05/AGUI005", message="RUN_FINISHED after RUN_ERROR")

#: The run-lifecycle phase table: phase -> what RUN_STARTED, RUN_FINISHED, RUN_ERROR and any other
#: event lead to. ``ev.UnknownEvent`` is outside the table.
TRANSITIONS: Mapping[Phase, PhaseRow] = MappingProxyType({
    "idle": PhaseRow(run_started="running", run_finished=_NOT_STARTED, run_error="errored", other=_NOT_STARTED),
    "running": PhaseRow(
        run_started=Violation(rule="LC-05/AGUI002", message="RUN_STARTED while a run is still open"),
        run_finished="finished",
        run_error="errored",
        other="running",
    ),
    "finished": PhaseRow(
        run_started="running", run_finished=_AFTER_FINISHED, run_error="late-error", other=_AFTER_FINISHED
    ),
    "errored": PhaseRow(
        run_started="running", run_finished=_FINISHED_AFTER_ERROR, run_error=_AFTER_ERROR, other=_AFTER_ERROR
    ),
    "late-error": PhaseRow(
        run_started="running", run_finished=_FINISHED_AFTER_ERROR, run_error=_AFTER_LATE_ERROR, other=_AFTER_LATE_ERROR
    ),
})

_TERMINATED: frozenset[Phase] = frozenset({"finished", "errored", "late-error"})
_CHUNKS = (ev.TextMessageChunkEvent, ev.ToolCallChunkEvent, ev.ReasoningMessageChunkEvent)
_PASSIVE: frozenset[Any] = frozenset((ev.StateSnapshotEvent, ev.StateDeltaEvent, ev.CustomEvent, ev.RawEvent))
# Streamed deltas, by the kind of entity they continue.
_DELTAS: dict[Any, str] = {ev.TextMessageContentEvent: "text", ev.ToolCallArgsEvent: "tool",
                           ev.ReasoningMessageContentEvent: "reasoning"}


@define
class _Run:
    """The bookkeeping of one run scope, dropped whole when the next run starts."""

    number: int
    run_id: str | None = None
    thread_id: str | None = None
    # Open entities, id -> owner.
    messages: dict[str, _Owner] = field(factory=dict)
    tool_calls: dict[str, _Owner] = field(factory=dict)
    reasoning_spans: dict[str, _Owner] = field(factory=dict)
    reasoning_messages: dict[str, _Owner] = field(factory=dict)
    steps: dict[tuple[_Owner, str], None] = field(factory=dict)
    step_names: dict[str, int] = field(factory=dict)  # open steps per name, across owners
    subagents: dict[str, None] = field(factory=dict)
    # Owners outlive the close for the rest of the run: a later reopen or encrypted value is
    # checked against them.
    message_owner: dict[str, _Owner] = field(factory=dict)
    tool_call_owner: dict[str, _Owner] = field(factory=dict)
    reasoning_owner: dict[str, _Owner] = field(factory=dict)  # spans and messages share owners
    activity_owner: dict[str, _Owner] = field(factory=dict)
    closed_subagents: set[str] = field(factory=set)
    suspended: dict[str, tuple[str, ...]] = field(factory=dict)  # subagent -> its interruptIds
    answered: set[str] = field(factory=set)  # tool call ids with a TOOL_CALL_RESULT in this run


class RunVerifier:
    """Checks one response's events against the AG-UI run sequence rules.

    Feed every event (after chunk expansion) to :meth:`check`, then call :meth:`end` when the
    stream ends.

    Args:
        known_tool_call_ids: tells whether a tool call id exists in the thread's history, so a
            ``TOOL_CALL_RESULT`` answering a call of an earlier run is not unknown (TC-10).
        known_message_ids: tells whether a message id exists in the thread's history, so reusing
            it is reported (B149).
    """

    def __init__(
        self,
        *,
        known_tool_call_ids: Callable[[str], bool] | None = None,
        known_message_ids: Callable[[str], bool] | None = None,
    ) -> None:
        self._known_tool_call_ids = known_tool_call_ids
        self._known_message_ids = known_message_ids
        self._phase: Phase = "idle"
        self._run = _Run(number=0)
        # id -> number of the last run that used it, across the whole stream (for B149, TC-05, TC-10).
        self._message_run: dict[str, int] = {}
        self._tool_call_run: dict[str, int] = {}

    # -- public state -------------------------------------------------------------------------

    @property
    def phase(self) -> Phase:
        """Where the stream stands: ``idle``, ``running``, ``finished``, ``errored`` or ``late-error``."""
        return self._phase

    @property
    def run_id(self) -> str | None:
        """The current (or last) run's id; ``None`` before any ``RUN_STARTED``."""
        return self._run.run_id

    @property
    def thread_id(self) -> str | None:
        """The current (or last) run's thread id; ``None`` before any ``RUN_STARTED``."""
        return self._run.thread_id

    @property
    def terminated(self) -> bool:
        """Whether the last run ended with ``RUN_FINISHED`` or ``RUN_ERROR``."""
        return self._phase in _TERMINATED

    @property
    def open_message_ids(self) -> Set[str]:
        """Text messages of the current run still open (a live view, replaced when a run starts)."""
        return self._run.messages.keys()

    @property
    def open_tool_call_ids(self) -> Set[str]:
        """Tool calls of the current run whose arguments are still streaming (a live view)."""
        return self._run.tool_calls.keys()

    @property
    def open_reasoning_message_ids(self) -> Set[str]:
        """Reasoning messages of the current run still open (a live view)."""
        return self._run.reasoning_messages.keys()

    @property
    def active_subagent_ids(self) -> Set[str]:
        """Subagents of the current run started and not yet finished (a live view)."""
        return self._run.subagents.keys()

    @property
    def open_entities(self) -> tuple[str, ...]:
        """Everything of the current run left open, labelled for a person (``"message 'm1'"`` …)."""
        run = self._run
        return (
            *(f"message {i!r}" for i in run.messages),
            *(f"tool call {i!r}" for i in run.tool_calls),
            *(f"reasoning message {i!r}" for i in run.reasoning_messages),
            *(f"reasoning span {i!r}" for i in run.reasoning_spans),
            *(f"step {name!r}" + ("" if owner is None else f" of subagent {owner!r}") for owner, name in run.steps),
            *(f"subagent {i!r}" for i in run.subagents),
        )

    # -- feeding ------------------------------------------------------------------------------

    def continues(self, kind: str, entity_id: str) -> bool:
        """Whether an untagged delta of ``kind`` (``text``, ``reasoning``, ``tool``) for ``entity_id`` is valid now.

        True exactly when :meth:`check` would accept the CONTENT/ARGS event without a warning.
        """
        return self._phase == "running" and entity_id in self._open_streams(kind)

    # -- the fused path's half (RunSession folds plain events from their JSON) ----------------------
    # Each ``plain_*`` check is pure and true exactly when :meth:`check` would accept the event without
    # an error or a warning and without a phase change; the matching ``record_*`` then makes the change
    # :meth:`check` would make. An untagged event is assumed (the session only fuses those).

    def plain_open(self, kind: str, entity_id: str, parent_id: str | None = None) -> bool:
        """Whether an untagged TEXT_MESSAGE_START (``text``) or TOOL_CALL_START (``tool``) is plain now."""
        if self._phase != "running":
            return False
        if kind == "text":
            return (entity_id not in self._run.messages and entity_id not in self._message_run
                    and not (self._known_message_ids is not None and self._known_message_ids(entity_id)))
        run = self._run
        return entity_id not in run.tool_calls and entity_id not in run.tool_call_owner \
            and self._tool_call_run.get(entity_id) != run.number

    def record_open(self, kind: str, entity_id: str, parent_id: str | None = None) -> None:
        """The change :meth:`check` makes for a plain start (see :meth:`plain_open`)."""
        run = self._run
        if kind == "text":
            owner = run.message_owner.get(entity_id)
            run.messages[entity_id] = owner
            run.message_owner[entity_id] = owner
            self._message_run[entity_id] = run.number
            return
        # A tool call belongs to the message that carries it (TC-14).
        owner = run.message_owner.get(parent_id) if parent_id is not None else None
        run.tool_calls[entity_id] = owner
        run.tool_call_owner[entity_id] = owner
        self._tool_call_run[entity_id] = run.number

    def record_close(self, kind: str, entity_id: str) -> None:
        """The change :meth:`check` makes for an END that :meth:`continues` the entity."""
        del self._open_streams(kind)[entity_id]

    def plain_result(self, tool_call_id: str) -> bool:
        """Whether an untagged TOOL_CALL_RESULT for ``tool_call_id`` is plain now (a closed, known call)."""
        return self._phase == "running" and tool_call_id not in self._run.tool_calls \
            and self._tool_call_known(tool_call_id)

    def record_result(self, tool_call_id: str, message_id: str) -> None:
        """The change :meth:`check` makes for a plain TOOL_CALL_RESULT."""
        run = self._run
        run.answered.add(tool_call_id)
        run.message_owner[message_id] = None
        self._message_run[message_id] = run.number

    @property
    def running(self) -> bool:
        """Whether a run is open: :meth:`check` accepts a state, custom or raw event now without a warning."""
        return self._phase == "running"

    def _open_streams(self, kind: str) -> dict[str, _Owner]:
        """The entities of ``kind`` (``text``, ``reasoning``, ``tool``) open in this run, with their owners."""
        run = self._run
        return run.messages if kind == "text" else run.tool_calls if kind == "tool" else run.reasoning_messages

    def check(self, event: ev.Event | ev.UnknownEvent, index: int) -> list[StreamWarning]:
        """Check the next event and advance the state.

        Args:
            event: the event, after chunk expansion.
            index: its 0-based index in the stream.

        Returns:
            Warnings about contradictions the client tolerates (empty for most events).

        Raises:
            SequenceError: the event breaks a sequence rule; the verifier's state is unchanged.
            TypeError: a ``*_CHUNK`` event was not expanded first.
        """
        kind = type(event)
        if kind in _DELTAS and self._phase == "running":
            # The hot path: a delta continuing an entity open in this run, with an agreeing owner tag.
            open_ids = self._open_streams(_DELTAS[kind])
            entity_id = event.tool_call_id if kind is ev.ToolCallArgsEvent else event.message_id  # type: ignore[union-attr]
            tag = event.subagent_run_id  # type: ignore[union-attr]
            if entity_id in open_ids and (tag is None or tag == open_ids[entity_id]):
                return []
        elif kind in _PASSIVE and self._phase == "running":
            return []  # attribution on these is provenance, not ownership (SP-14): nothing to check
        elif kind in _RUNNING_HOT and self._phase == "running":
            # Opening and closing messages and tool calls inside a run: the phase stays "running".
            return _RUNNING_HOT[kind](self, event, index)  # type: ignore[no-any-return]
        if isinstance(event, ev.UnknownEvent):
            return []
        if isinstance(event, _CHUNKS):
            raise TypeError(f"{event.TYPE} must be expanded with ChunkExpander before verification")
        row = TRANSITIONS[self._phase]
        match event:
            case ev.RunStartedEvent():
                target = row.run_started
            case ev.RunFinishedEvent():
                target = row.run_finished
            case ev.RunErrorEvent():
                target = row.run_error
            case _:
                target = row.other
        if isinstance(target, Violation):
            raise self._error(target.message, event, index, rule=target.rule)
        warnings = self._apply(event, index)
        self._phase = target
        return warnings

    def end(self, index: int) -> None:
        """The stream ended (cleanly or not).

        Args:
            index: the index the next event would have had.

        Raises:
            StreamEnded: a run is still open, or no run ever started (LC-04); ``open_entities``
                lists what was left open.
        """
        if self._phase == "running":
            raise StreamEnded("the stream ended without RUN_FINISHED or RUN_ERROR", open_entities=self.open_entities,
                              run_id=self._run.run_id, index=index, rule="LC-04/AGUI003")
        if self._phase == "idle":
            raise StreamEnded("the stream ended without RUN_FINISHED or RUN_ERROR (no run started)",
                              index=index, rule="LC-04/AGUI003")

    # -- the id rules -------------------------------------------------------------------------

    def _apply(self, event: ev.Event, index: int) -> list[StreamWarning]:
        run = self._run
        match event:
            case ev.RunStartedEvent():
                self._run = _Run(number=run.number + 1, run_id=event.run_id, thread_id=event.thread_id)
                if event.input is not None:
                    self._seed(event.input.messages, authoritative=False)
                if event.protocol_version is not None:
                    return self._protocol_version(event, event.protocol_version, index)
            case ev.RunFinishedEvent():
                return self._run_finished(event, index)
            case ev.RunErrorEvent():
                pass
            case ev.TextMessageStartEvent():
                return self._text_start(event, index)
            case ev.TextMessageContentEvent():
                self._continue(run.messages, event.message_id, event.subagent_run_id, event, index, kind="text message",
                               rule="TX-02/AGUI101", pointer="/messageId")
            case ev.TextMessageEndEvent():
                return self._text_end(event, index)
            case ev.ToolCallStartEvent():
                return self._tool_call_start(event, index)
            case ev.ToolCallArgsEvent():
                self._continue(run.tool_calls, event.tool_call_id, event.subagent_run_id, event, index,
                               kind="tool call", rule="TC-02/AGUI201", pointer="/toolCallId")
            case ev.ToolCallEndEvent():
                return self._tool_call_end(event, index)
            case ev.ToolCallResultEvent():
                return self._tool_call_result(event, index)
            case ev.ReasoningStartEvent():
                self._reasoning_open(run.reasoning_spans, event, index, kind="reasoning span")
            case ev.ReasoningMessageStartEvent():
                self._reasoning_open(run.reasoning_messages, event, index, kind="reasoning message")
            case ev.ReasoningMessageContentEvent():
                self._continue(run.reasoning_messages, event.message_id, event.subagent_run_id, event, index,
                               kind="reasoning message", rule="RS-02/AGUI401", pointer="/messageId")
            case ev.ReasoningMessageEndEvent():
                self._close(run.reasoning_messages, event.message_id, event, index, kind="reasoning message",
                            rule="RS-02/AGUI401", pointer="/messageId")
            case ev.ReasoningEndEvent():
                self._close(run.reasoning_spans, event.message_id, event, index, kind="reasoning span", rule="RS-03",
                            pointer="/messageId")
            case ev.ReasoningEncryptedValueEvent():
                self._encrypted_value(event, index)
            case ev.StepStartedEvent():
                self._step_started(event, index)
            case ev.StepFinishedEvent():
                self._step_finished(event, index)
            case ev.SubagentStartedEvent():
                self._subagent_started(event, index)
            case ev.SubagentFinishedEvent() | ev.SubagentErrorEvent():
                self._subagent_closed(event, index)
            case ev.ActivitySnapshotEvent():
                # Only a replacing snapshot re-mints, and so re-owns, an existing activity (AC-08).
                if event.message_id not in run.activity_owner or event.replace is not False:
                    run.activity_owner[event.message_id] = event.subagent_run_id
            case ev.ActivityDeltaEvent():
                if event.message_id in run.activity_owner:
                    self._agree(event.subagent_run_id, run.activity_owner[event.message_id], event, index,
                                kind="activity", entity_id=event.message_id, rule="AC-08/AGUI606")
            case ev.MessagesSnapshotEvent():
                # The snapshot restates the conversation, so its owners replace the recorded ones.
                self._seed(event.messages, authoritative=True)
            case ev.StateSnapshotEvent() | ev.StateDeltaEvent() | ev.CustomEvent() | ev.RawEvent():
                pass  # attribution on these is provenance, not ownership (SP-14)
            case ev.TextMessageChunkEvent() | ev.ToolCallChunkEvent() | ev.ReasoningMessageChunkEvent():
                raise TypeError(f"{event.TYPE} must be expanded with ChunkExpander before verification")
            case _:
                assert_never(event)
        return []

    def _text_start(self, event: ev.TextMessageStartEvent, index: int) -> list[StreamWarning]:
        run, message_id = self._run, event.message_id
        if message_id in run.messages:
            raise self._error(f"text message {message_id!r} is already open", event, index,
                              rule="TX-03/AGUI106", pointer="/messageId")
        owner = event.subagent_run_id
        if message_id in run.message_owner:
            # An untagged reopen agrees with any owner and must not hand the message to the parent.
            owner = run.message_owner[message_id]
            self._agree(event.subagent_run_id, owner, event, index, kind="message", entity_id=message_id)
        warnings = []
        last_run = self._message_run.get(message_id)
        if last_run == run.number:
            warnings.append(self._warning(f"message id {message_id!r} is already used in this run", event, index,
                                          code="TX-05/AGUI104", pointer="/messageId"))
        elif last_run is not None or (self._known_message_ids is not None and self._known_message_ids(message_id)):
            warnings.append(self._warning(f"message id {message_id!r} already names a message of the thread", event,
                                          index, code="TX-05/AGUI104", pointer="/messageId"))
        run.messages[message_id] = owner
        run.message_owner[message_id] = owner
        self._message_run[message_id] = run.number
        return warnings

    def _text_end(self, event: ev.TextMessageEndEvent, index: int) -> list[StreamWarning]:
        self._close(self._run.messages, event.message_id, event, index, kind="text message", rule="TX-02/AGUI102",
                    pointer="/messageId")
        return []

    def _tool_call_end(self, event: ev.ToolCallEndEvent, index: int) -> list[StreamWarning]:
        self._close(self._run.tool_calls, event.tool_call_id, event, index, kind="tool call", rule="TC-02/AGUI202",
                    pointer="/toolCallId")
        return []

    def _close(self, open_ids: dict[str, _Owner], entity_id: str, event: Any, index: int, *, kind: str, rule: str,
               pointer: str) -> None:
        """An END: the entity must be open, with an agreeing owner tag; it is open no more."""
        self._continue(open_ids, entity_id, event.subagent_run_id, event, index, kind=kind, rule=rule, pointer=pointer)
        del open_ids[entity_id]

    def _tool_call_start(self, event: ev.ToolCallStartEvent, index: int) -> list[StreamWarning]:
        run, call_id, tag = self._run, event.tool_call_id, event.subagent_run_id
        if call_id in run.tool_calls:
            raise self._error(f"tool call {call_id!r} is already open", event, index, rule="TC-03",
                              pointer="/toolCallId")
        # A tool call has no owner of its own: it belongs to the message that carries it (TC-14).
        parent, inherits, inherited = event.parent_message_id, False, None
        if parent is not None and parent in run.message_owner:
            inherits, inherited = True, run.message_owner[parent]
        if inherits and tag is not None and tag != inherited:
            raise self._error(f"subagentRunId {tag!r} does not match the owner of parent message "
                              f"{parent!r} ({_owner_label(inherited)})", event, index, rule="TC-14",
                              pointer="/subagentRunId")
        owner = tag if tag is not None else inherited
        if call_id in run.tool_call_owner:
            owner = run.tool_call_owner[call_id]
            self._agree(tag, owner, event, index, kind="tool call", entity_id=call_id)
            if tag is None and inherits and inherited != owner:
                raise self._error(f"tool call {call_id!r} belongs to {_owner_label(owner)} but its parent message "
                                  f"{parent!r} to {_owner_label(inherited)}", event, index,
                                  rule="TC-14", pointer="/parentMessageId")
        warnings = []
        if self._tool_call_run.get(call_id) == run.number:
            warnings.append(self._warning(f"tool call id {call_id!r} re-used after its TOOL_CALL_END in this run",
                                          event, index, code="TC-05/AGUI205", pointer="/toolCallId"))
        run.tool_calls[call_id] = owner
        run.tool_call_owner[call_id] = owner
        self._tool_call_run[call_id] = run.number
        return warnings

    def _tool_call_result(self, event: ev.ToolCallResultEvent, index: int) -> list[StreamWarning]:
        run, call_id = self._run, event.tool_call_id
        warnings = []
        if call_id in run.tool_calls:
            warnings.append(self._warning(f"result for tool call {call_id!r} before its TOOL_CALL_END", event, index,
                                          code="TC-12/AGUI206", pointer="/toolCallId"))
        elif not self._tool_call_known(call_id):
            warnings.append(self._warning(f"result for tool call {call_id!r}, unknown in this run and the thread",
                                          event, index, code="TC-11/AGUI207", pointer="/toolCallId"))
        run.answered.add(call_id)
        # A result mints a tool message; its own tag says who owns it, and the newest mint wins.
        run.message_owner[event.message_id] = event.subagent_run_id
        self._message_run[event.message_id] = run.number
        return warnings

    def _reasoning_open(self, open_ids: dict[str, _Owner],
                        event: ev.ReasoningStartEvent | ev.ReasoningMessageStartEvent, index: int, *,
                        kind: str) -> None:
        run, message_id = self._run, event.message_id
        if message_id in open_ids:
            raise self._error(f"{kind} {message_id!r} is already open", event, index, rule="RS-04",
                              pointer="/messageId")
        # A span and the message inside it may share an id, and then they share one owner.
        owner = event.subagent_run_id
        if message_id in run.reasoning_owner:
            owner = run.reasoning_owner[message_id]
            self._agree(event.subagent_run_id, owner, event, index, kind=kind, entity_id=message_id)
        open_ids[message_id] = owner
        run.reasoning_owner[message_id] = owner

    def _encrypted_value(self, event: ev.ReasoningEncryptedValueEvent, index: int) -> None:
        run, entity_id = self._run, event.entity_id
        # "message" covers text and reasoning messages; ids are unique per kind, so one bucket at most has it.
        buckets = (run.tool_call_owner,) if event.subtype == "tool-call" else (run.message_owner, run.reasoning_owner)
        for owners in buckets:
            if entity_id in owners:
                self._agree(event.subagent_run_id, owners[entity_id], event, index, kind=event.subtype,
                            entity_id=entity_id)
                return

    def _step_started(self, event: ev.StepStartedEvent, index: int) -> None:
        run, key = self._run, (event.subagent_run_id, event.step_name)
        if key in run.steps:
            raise self._error(f"step {event.step_name!r} is already open for {_owner_label(key[0])}", event, index,
                              rule="ST-03", pointer="/stepName")
        run.steps[key] = None
        run.step_names[event.step_name] = run.step_names.get(event.step_name, 0) + 1

    def _step_finished(self, event: ev.StepFinishedEvent, index: int) -> None:
        run, key = self._run, (event.subagent_run_id, event.step_name)
        if key not in run.steps:
            if run.step_names.get(event.step_name):
                raise self._error(f"step {event.step_name!r} is open under another owner than "
                                  f"{_owner_label(key[0])}; a step is finished by whoever started it", event, index,
                                  rule="ST-04/AGUI006", pointer="/subagentRunId")
            raise self._error(f"step {event.step_name!r} was not started", event, index, rule="ST-01/AGUI006",
                              pointer="/stepName")
        del run.steps[key]
        run.step_names[event.step_name] -= 1
        if not run.step_names[event.step_name]:
            del run.step_names[event.step_name]

    def _subagent_started(self, event: ev.SubagentStartedEvent, index: int) -> None:
        run, sub = self._run, event.subagent_run_id
        if sub in run.subagents:
            raise self._error(f"subagent {sub!r} is already active", event, index, rule="SA-02/AGUI601",
                              pointer="/subagentRunId")
        if sub in run.closed_subagents:
            raise self._error(f"subagent {sub!r} already ran in this run; ids are per invocation", event, index,
                              rule="SA-02/AGUI601", pointer="/subagentRunId")
        parent = event.parent_subagent_run_id
        if parent is not None and parent not in run.subagents and parent not in run.closed_subagents:
            raise self._error(f"parentSubagentRunId {parent!r} was not started in this run", event, index,
                              rule="SA-05/AGUI605", pointer="/parentSubagentRunId")
        run.subagents[sub] = None

    def _subagent_closed(self, event: ev.SubagentFinishedEvent | ev.SubagentErrorEvent, index: int) -> None:
        run, sub = self._run, event.subagent_run_id
        if sub not in run.subagents:
            raise self._error(f"subagent {sub!r} is not active", event, index,
                              rule="SA-03/AGUI602" if isinstance(event, ev.SubagentFinishedEvent) else "SA-03/AGUI603",
                              pointer="/subagentRunId")
        del run.subagents[sub]
        run.closed_subagents.add(sub)
        if isinstance(event, ev.SubagentFinishedEvent) and isinstance(event.outcome, SubagentFinishedSuspendedOutcome):
            run.suspended[sub] = event.outcome.interrupt_ids or ()

    def _run_finished(self, event: ev.RunFinishedEvent, index: int) -> list[StreamWarning]:
        run = self._run
        for open_ids, label, rule in (
            (run.steps, "steps", "ST-02/AGUI007"),
            (run.messages, "text messages", "TX-04/AGUI103"),
            (run.reasoning_messages, "reasoning messages", "RS-05/AGUI402"),
            (run.reasoning_spans, "reasoning spans", "RS-05/AGUI402"),
            (run.tool_calls, "tool calls", "TC-04/AGUI203"),
            (run.subagents, "subagents", "SA-04/AGUI604"),
        ):
            if open_ids:
                names = ", ".join(repr(k[1] if isinstance(k, tuple) else k) for k in open_ids)
                raise self._error(f"RUN_FINISHED while {label} are still open: {names}", event, index, rule=rule)
        warnings = []
        if run.thread_id is not None and event.thread_id != run.thread_id:
            warnings.append(self._warning(f"threadId {event.thread_id!r} differs from RUN_STARTED's "
                                          f"{run.thread_id!r}", event, index, code="LC-07/AGUI008",
                                          pointer="/threadId"))
        if run.run_id is not None and event.run_id != run.run_id:
            warnings.append(self._warning(f"runId {event.run_id!r} differs from RUN_STARTED's {run.run_id!r}", event,
                                          index, code="LC-07/AGUI008", pointer="/runId"))
        outcome = event.outcome
        match outcome:
            case RunFinishedInterruptOutcome():
                warnings.extend(self._interrupts(event, outcome, index))
            case None | RunFinishedSuccessOutcome():
                if run.suspended:
                    warnings.append(self._warning(
                        f"subagents {', '.join(map(repr, run.suspended))} finished suspended, yet the run "
                        "finished as a success", event, index, code="SA-15", pointer="/outcome"))
                if outcome is not None and outcome.pending_tool_call_ids:
                    warnings.extend(self._pending_tool_calls(event, outcome.pending_tool_call_ids, index))
            case RunFinishedCancelledOutcome():
                pass
            case _:
                assert_never(outcome)
        return warnings

    def _interrupts(self, event: ev.RunFinishedEvent, outcome: RunFinishedInterruptOutcome,
                    index: int) -> list[StreamWarning]:
        run = self._run
        ids: set[str] = set()
        for n, interrupt in enumerate(outcome.interrupts):
            if interrupt.id in ids:
                # A resume entry answers an interrupt by id; two with one id make coverage ambiguous.
                raise self._error(f"interrupt id {interrupt.id!r} appears twice in the outcome", event, index,
                                  rule="IR-06", pointer=f"/outcome/interrupts/{n}/id")
            ids.add(interrupt.id)
        warnings = []
        for n, interrupt in enumerate(outcome.interrupts):
            sub = interrupt.subagent_run_id
            if sub is not None and sub not in run.closed_subagents:
                warnings.append(self._warning(f"interrupt {interrupt.id!r} names subagent {sub!r}, never started in "
                                              "this run", event, index, code="SA-09",
                                              pointer=f"/outcome/interrupts/{n}/subagentRunId"))
            call_id = interrupt.tool_call_id
            if call_id is not None and not self._tool_call_known(call_id):
                warnings.append(self._warning(f"interrupt {interrupt.id!r} names tool call {call_id!r}, unknown in "
                                              "this run and the thread", event, index, code="IR-07",
                                              pointer=f"/outcome/interrupts/{n}/toolCallId"))
        for sub, interrupt_ids in run.suspended.items():
            missing = [i for i in interrupt_ids if i not in ids]
            if missing:
                warnings.append(self._warning(f"subagent {sub!r} suspended on interrupts {missing!r} that the outcome "
                                              "does not carry", event, index, code="SA-15",
                                              pointer="/outcome/interrupts"))
        return warnings

    def _pending_tool_calls(self, event: ev.RunFinishedEvent, pending: tuple[str, ...],
                            index: int) -> list[StreamWarning]:
        run = self._run
        warnings = []
        seen: set[str] = set()
        for n, call_id in enumerate(pending):
            problem = None
            if call_id in seen:
                problem = "is named twice"
            elif call_id in run.answered:
                problem = "already has a TOOL_CALL_RESULT in this run"
            elif not self._tool_call_known(call_id):
                problem = "is unknown in this run and the thread"
            seen.add(call_id)
            if problem is not None:
                warnings.append(self._warning(f"pendingToolCallIds: {call_id!r} {problem}", event, index,
                                              code="TC-18", pointer=f"/outcome/pendingToolCallIds/{n}"))
        return warnings

    # -- helpers ------------------------------------------------------------------------------

    def _continue(self, open_ids: dict[str, _Owner], entity_id: str, tag: _Owner, event: ev.Event, index: int, *,
                  kind: str, rule: str, pointer: str) -> None:
        if entity_id not in open_ids:
            raise self._error(f"no open {kind} {entity_id!r}", event, index, rule=rule, pointer=pointer)
        self._agree(tag, open_ids[entity_id], event, index, kind=kind, entity_id=entity_id)

    def _agree(self, tag: _Owner, owner: _Owner, event: ev.Event, index: int, *, kind: str, entity_id: str,
               rule: str = "SA-11/AGUI606") -> None:
        # An absent tag never disagrees; a present one must name the owner exactly (None is the parent).
        if tag is not None and tag != owner:
            raise self._error(f"subagentRunId {tag!r} does not match the owner of {kind} {entity_id!r} "
                              f"({_owner_label(owner)})", event, index, rule=rule, pointer="/subagentRunId")

    def _seed(self, messages: tuple[Message, ...], *, authoritative: bool) -> None:
        # Replayed history puts ids on record that later events may continue, with their owners.
        # A snapshot holds thousands of messages: each is dispatched by its exact type (a subclass is
        # classified once by isinstance, as the match this replaced did), with the dicts held locally.
        run = self._run
        owners_of = (run.message_owner, run.message_owner, run.reasoning_owner, run.activity_owner)
        message_run = self._message_run
        tool_call_run = self._tool_call_run
        call_owner = run.tool_call_owner
        kinds = _SEED_KINDS
        for message in messages:
            kind = kinds.get(type(message))
            if kind is None:
                kind = _seed_kind(message)
            message_id = message.id
            owners = owners_of[kind]
            if kind <= _SEED_ASSISTANT and message_id not in message_run:
                message_run[message_id] = _SEEDED
            if authoritative or message_id not in owners:
                owners[message_id] = message.subagent_run_id
            if kind == _SEED_ASSISTANT:
                calls: tuple[ToolCall, ...] | None = message.tool_calls  # type: ignore[union-attr]
                if calls:
                    for call in calls:
                        if authoritative or call.id not in call_owner:
                            call_owner[call.id] = message.subagent_run_id
                        if call.id not in tool_call_run:
                            tool_call_run[call.id] = _SEEDED

    def seed_plain(self, snapshot: PlainSnapshot) -> None:
        """``_seed(..., authoritative=True)`` for a running run's snapshot of plain message JSON
        (``agui_client._plain``; its ids unique): no activity messages; the owners read from
        ``subagentRunId``."""
        run = self._run
        # Dict operations on the ids and on what the snapshot gathered while its messages were fresh in
        # memory, rather than a step per message; owners are read only when some message names one
        # (the usual snapshot is all the parent's).
        messages = snapshot.by_id
        others: Mapping[str, Any] = messages
        if snapshot.reasoning:
            run.reasoning_owner.update(_owners(messages, snapshot.reasoning, snapshot.owned))
            others = dict.fromkeys(messages)
            for key in snapshot.reasoning:
                del others[key]
        run.message_owner.update(_owners(messages, others, snapshot.owned))
        seeded = dict.fromkeys(others, _SEEDED)
        seeded.update(self._message_run)  # (a message this verifier placed in a run keeps its run)
        self._message_run = seeded
        run.tool_call_owner.update(snapshot.call_owners)
        self._tool_call_run.update(dict.fromkeys(snapshot.call_owners.keys() - self._tool_call_run.keys(), _SEEDED))

    def _tool_call_known(self, call_id: str) -> bool:
        return call_id in self._tool_call_run or (
            self._known_tool_call_ids is not None and self._known_tool_call_ids(call_id))

    def _protocol_version(self, event: ev.RunStartedEvent, declared: str, index: int) -> list[StreamWarning]:
        # PV-03: a declaration outside the MAJOR.MINOR grammar is handled like a newer one: proceed,
        # and warn. PV-04: an older one is a downgrade to notice quietly.
        match = _VERSION.fullmatch(declared)
        if match is None:
            message = f"protocolVersion {declared!r} is not MAJOR.MINOR; read as newer than {PROTOCOL_VERSION}"
        elif _version_key(match[1], match[2]) > _SPOKEN:
            message = f"protocolVersion {declared!r} is newer than {PROTOCOL_VERSION}, the version this client speaks"
        else:
            return []
        return [self._warning(message + "; proceeding", event, index, code="PV-03/B293", pointer="/protocolVersion")]

    def _error(self, message: str, event: ev.Event, index: int, *, rule: str,
               pointer: str | None = None) -> SequenceError:
        return SequenceError(message, run_id=self._run.run_id, index=index, event_type=event.TYPE, pointer=pointer,
                             rule=rule)

    def _warning(self, message: str, event: ev.Event, index: int, *, code: str, pointer: str | None) -> StreamWarning:
        return StreamWarning(code=code, message=message, index=index, event_type=event.TYPE, pointer=pointer,
                             run_id=self._run.run_id)




def _owners(messages: Mapping[str, dict[str, Any]], ids: Iterable[str], owned: bool) -> dict[str, _Owner]:
    """id -> owner records for ``ids`` of plain message JSON: each one's ``subagentRunId`` (``owned``), else none."""
    return {key: messages[key].get("subagentRunId") for key in ids} if owned else dict.fromkeys(ids)


# How ``_seed`` files a message: an index into its owner dicts (message, message, reasoning, activity).
_SEED_PLAIN, _SEED_ASSISTANT, _SEED_REASONING, _SEED_ACTIVITY = range(4)


def _seed_kind(message: Message) -> int:
    kind = _SEED_PLAIN
    if isinstance(message, ReasoningMessage):
        kind = _SEED_REASONING
    elif isinstance(message, ActivityMessage):
        kind = _SEED_ACTIVITY
    elif isinstance(message, AssistantMessage):
        kind = _SEED_ASSISTANT
    if len(_SEED_KINDS) < 64:  # exact types; a bound in case an application mints classes
        _SEED_KINDS[type(message)] = kind
    return kind


_SEED_KINDS: dict[type, int] = {}


def _owner_label(owner: _Owner) -> str:
    return "the parent agent" if owner is None else f"subagent {owner!r}"


# Events that open or close an entity inside a running run, dispatched without walking the match.
_RUNNING_HOT: dict[type, Any] = {
    ev.TextMessageStartEvent: RunVerifier._text_start,
    ev.TextMessageEndEvent: RunVerifier._text_end,
    ev.ToolCallStartEvent: RunVerifier._tool_call_start,
    ev.ToolCallEndEvent: RunVerifier._tool_call_end,
    ev.ToolCallResultEvent: RunVerifier._tool_call_result,
}
