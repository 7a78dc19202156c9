"""The fold: verified events in, a thread's state out.

``ThreadState.apply(event)`` folds one event the verifier accepted, in time independent of the
thread's length; inside, the state is mutable and indexed, and everything handed out is a snapshot
the caller may keep. ``ThreadState`` is a small facade over its parts, each owning one kind of state:

* :mod:`.log` — the message log (entries in order, the id and tool-call indexes);
* :mod:`.streams` — the text, reasoning and tool-call handlers;
* :mod:`.document` — the shared state document (snapshots, patches, the copy handed out);
* :mod:`.snapshots` — the messages-snapshot merge and the activities;
* :mod:`.ledger` — the runs (outcomes, usage, interrupts, pending calls, steps, subagents);
* :mod:`.persist` — the stored form (``dump``/``load``) and the wire form.

Each event kind's effect is one handler with the event's fields as plain arguments; ``apply``
matches a typed event onto it, and a session that reads plain events from their JSON calls the same
handler. Where the reference client (@ag-ui/client 1.0.0) defines how to fold, the fold does the
same; where we deliberately differ, the comment at the rule says why.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import attrs
from typing_extensions import assert_never

from ..._inert import quoted_name
from ...errors import ProtocolError, StreamWarning
from ...wire.jsonio import parse_json
from ...wire.sink import WarningList
from ...wire.types import events as ev
from ...wire.types import messages as msg
from ...wire.types import run as rn
from ...wire.types.base import JSON
from .. import legacy
from ..interrupts import listed_ids
from ..roster import Roster
from .document import EMPTY_STATE, StateDocument, foreign_copy
from .entries import Entry
from .ledger import RunLedger
from .log import MessageLog
from .persist import STATE_FORMAT_VERSION, Mark, changes, dump, load, to_wire
from .records import Outcome, RunErrorInfo, RunRecord, StepRecord, SubagentRecord, sum_usage
from .snapshots import Snapshots, detached
from .streams import NO_WARNINGS, Streams, too_dense_to_parse

__all__ = [
    "ThreadState",
    "RunRecord",
    "SubagentRecord",
    "StepRecord",
    "RunErrorInfo",
    "Outcome",
    "parsed_arguments",
    "sum_usage",
    "STATE_FORMAT_VERSION",
]


class ThreadState:
    """A thread's folded state: messages, shared state, open interrupts, usage, subagents, runs.

    ``apply(event)`` folds one verified event in time independent of the thread's length.
    Everything read from it is a snapshot the caller may keep: ``messages`` is a tuple of frozen
    messages; ``state`` is a copy.

    Args:
        messages: messages the thread starts with, one per id: a list repeating an id is read as a
            ``MESSAGES_SNAPSHOT`` repeating one is (MS-01: the last copy, at the first's place), with an
            ``AguiWarning`` that says so, as a stored record repeating one loads.
        state: the shared state it starts with (any JSON value; ``{}`` when not given, as the reference).
        thread_id: the thread's id, when known.
        open_interrupts: interrupts still waiting for an answer (a thread brought back from elsewhere).
        interrupted_run_id: the run that raised them.
        legacy_interrupts: ``"langgraph"`` to bridge LangGraph's pre-1.0 interrupts (a ``CUSTOM``
            ``on_interrupt`` event, then success) into interrupts (docs/legacy-interrupts.md).

    Attributes:
        log, streams, document, snapshots, ledger: the parts (see the module docstring); the handlers
            a fold of plain events calls are theirs.
        warnings: repairs found while joining streamed text (a UTF-16 half replaced), where the fold hands
            them to the response being read: a ``RunSession`` empties it when it starts, and its result
            takes them (``RunResult.warnings`` holds every warning of its run, these included). The
            thread keeps no warnings across runs: a thread that runs for days holds one response's.

    Example::

        state = ThreadState()
        replay(recording, state=state)          # or thread.run(...), which folds into thread.state
        state.messages[-1].content, state.state, state.open_interrupts
    """

    def __init__(self, *, messages: Iterable[msg.Message] = (), state: JSON = EMPTY_STATE,
                 thread_id: str | None = None, open_interrupts: Iterable[rn.Interrupt] = (),
                 interrupted_run_id: str | None = None, legacy_interrupts: str | None = None) -> None:
        self.warnings = WarningList()  # (bounded per code, as a response's)
        runs: list[RunRecord] = []
        self.document = StateDocument(state)
        self.log = MessageLog(runs, self.warnings)
        self.ledger = RunLedger(runs, self.log, self.document)
        self.streams = Streams(self.log, runs)
        self.snapshots = Snapshots(self.log, runs, self.document)
        self.ledger.thread_id = thread_id
        self.ledger.hold_interrupts(tuple(open_interrupts), interrupted_run_id)
        self.legacy_interrupts = legacy_interrupts
        # (one per id, as a snapshot's and a stored record's: a list repeating one keeps its last copy,
        # at the first's place, and warns MS-01)
        self.snapshots.hold(tuple(messages))
        self._unchanged = 0  # the change count ``version`` counts from
        self._mark = Mark()  # (never marked: the first change writes everything)

    @property
    def entity_count(self) -> int:
        """The messages, tool calls, runs, subagents and steps the thread holds (what a run's memory budget,
        ``max_run_memory``, charges for beside the events' structure); read in constant time."""
        ledger = self.ledger
        return (len(self.log.entries) + len(self.log.calls) + len(ledger.runs) + len(ledger.subagents)
                + ledger.step_count)

    def settled(self) -> None:
        """Count from here: ``version`` reads 0 (a thread just loaded has not changed yet)."""
        self._unchanged = self.log.changes + self.document.changes

    def mark(self) -> None:
        """The thread as it stands is what the store holds now: :meth:`changes` counts from here.

        Call it once what :meth:`dump` or :meth:`changes` returned is written (a thread's runs do, after
        every save). ``load`` marks the thread it makes (the record it was loaded from); a new
        ``ThreadState`` is unmarked: its first change rebuilds it from an empty record.
        """
        self.log.mark()
        self.ledger.mark()
        self._mark = Mark(document=self.document.changes, via=self.ledger.open_via is not None, maps=False,
                          incomplete=bool(self.log.incomplete))

    def __repr__(self) -> str:
        # As a thread's repr: which thread, how far it went, and what it waits for. Counts and ids only:
        # the messages and the shared state are the agent's, of any size.
        return (f"<ThreadState thread_id={quoted_name(self.thread_id)} runs={self.run_count} "
                f"messages={len(self.messages)} open_interrupts={listed_ids([i.id for i in self.open_interrupts])} "
                f"pending_tool_calls={listed_ids(self.pending_tool_call_ids)}>")

    # -- reading ---------------------------------------------------------------------------------

    @property
    def thread_id(self) -> str | None:
        """The thread's id (the first ``RUN_STARTED``'s when not given)."""
        return self.ledger.thread_id

    @thread_id.setter
    def thread_id(self, value: str | None) -> None:
        self.ledger.thread_id = value

    @property
    def messages(self) -> tuple[msg.Message, ...]:
        """Every message of the thread, in order (activity messages included)."""
        return self.log.messages

    @property
    def state(self) -> JSON:
        """The shared state: a copy of the reader's own, made at each read.

        Changing it changes neither the thread's state, nor what the thread sends or saves, nor what any
        other read hands out; to change the thread's, :meth:`set_state`. Each read builds every dict and
        list of the state anew (from bytes kept until the state next changes, at C speed): to follow it
        as a run streams, read it after the events that change it (``STATE_SNAPSHOT``, ``STATE_DELTA``),
        not after every event."""
        return self.document.view

    @property
    def state_in_sync(self) -> bool:
        """``False`` after a state patch did not apply: the producer's state and ours may differ."""
        return self.document.in_sync

    @state_in_sync.setter
    def state_in_sync(self, value: bool) -> None:
        self.document.in_sync = value

    @property
    def version(self) -> int:
        """A counter that moves on every change to the messages or the state (0 for a loaded thread)."""
        return self.log.changes + self.document.changes - self._unchanged

    @property
    def open_interrupts(self) -> tuple[rn.Interrupt, ...]:
        """The interrupts of the most recent interrupted run that nothing has answered yet.

        Each read hands out copies of their schemas and metadata: changing what one read gave changes
        neither the thread's interrupts (the schema a resume is checked against) nor what it saves."""
        return self.ledger.kept.handed_out()

    @property
    def legacy_interrupts(self) -> str | None:
        """The legacy bridge in force for runs folded from now on (``"langgraph"``), or ``None``."""
        return self.ledger.legacy

    @legacy_interrupts.setter
    def legacy_interrupts(self, value: str | None) -> None:
        if value is not None and value not in legacy.LEGACY_BRIDGES:
            raise ValueError(f"legacy_interrupts must be one of {list(legacy.LEGACY_BRIDGES)} or None, not {value!r}")
        self.ledger.legacy = value

    @property
    def open_interrupts_via(self) -> str | None:
        """``"langgraph"`` when the legacy bridge read :attr:`open_interrupts` (their answers travel in
        that producer's channel, ``forwardedProps.command.resume``); ``None`` otherwise."""
        return self.ledger.open_via

    @property
    def interrupted_run_id(self) -> str | None:
        """The run that raised :attr:`open_interrupts` (``None`` when nothing is open)."""
        return self.ledger.interrupted_run_id

    @property
    def usage_by_run(self) -> Mapping[str, tuple[rn.TokenUsage, ...]]:
        """Token usage as each run reported it (run id -> entries)."""
        return dict(self.ledger.usage)

    @property
    def total_usage(self) -> rn.TokenUsage:
        """Usage summed over every run and provider (fields no run reported stay ``None``)."""
        return sum_usage(u for entries in self.ledger.usage.values() for u in entries)

    @property
    def subagents(self) -> Mapping[str, SubagentRecord]:
        """Every subagent invocation seen, by ``subagentRunId``.

        A finished subagent's ``result`` comes as a copy at each read: changing it changes neither the
        thread's record nor what it saves."""
        return {key: record if type(record.result) not in (dict, list) else
                attrs.evolve(record, result=foreign_copy(record.result))
                for key, record in self.ledger.subagents.items()}

    @property
    def runs(self) -> tuple[RunRecord, ...]:
        """The runs folded into this thread, oldest first (mutable records; treat as read-only)."""
        return tuple(self.ledger.runs)

    @property
    def run_count(self) -> int:
        """How many runs have been folded into this thread."""
        return len(self.ledger.runs)

    @property
    def last_run(self) -> RunRecord | None:
        """The most recent run, if any."""
        return self.ledger.last_run

    @property
    def incomplete_ids(self) -> frozenset[str]:
        """Messages and tool calls whose stream was cut before their end event."""
        return frozenset(self.log.incomplete)

    @property
    def pending_tool_call_ids(self) -> tuple[str, ...]:
        """Frontend tool calls the last successful run left for the consumer, still without a result."""
        return self.ledger.pending_tool_call_ids()

    def message(self, message_id: str) -> msg.Message | None:
        """The message with this id, if the thread holds one."""
        return self.log.message(message_id)

    def messages_for(self, message_ids: Iterable[str]) -> tuple[msg.Message, ...]:
        """The messages with these ids, frozen (those the thread holds, in the order asked)."""
        return self.log.messages_for(message_ids)

    def tool_call(self, tool_call_id: str) -> msg.ToolCall | None:
        """The tool call with this id, if any message holds it."""
        return self.log.tool_call(tool_call_id)

    def has_tool_call(self, tool_call_id: str) -> bool:
        """Whether any message of the thread holds this tool call."""
        return tool_call_id in self.log.calls

    def has_message(self, message_id: str) -> bool:
        """Whether the thread holds a message with this id."""
        return message_id in self.log.by_id

    def input_messages(self) -> tuple[msg.Message, ...]:
        """The messages a next run's input carries: activity messages excluded (AC-06)."""
        return self.log.input_messages()

    def input_message_ids(self) -> list[str]:
        """The ids of :meth:`input_messages`, in order, without making the messages."""
        return self.log.input_message_ids()

    def __iter__(self) -> Iterator[msg.Message]:
        return iter(self.messages)

    def __len__(self) -> int:
        return len(self.log)

    # -- writing by the application ---------------------------------------------------------------

    def add_message(self, message: msg.Message) -> None:
        """Append a message (a user turn, a tool result …); an existing id is replaced in place."""
        log = self.log
        existing = log.entry(message.id)
        entry = Entry.of(message)
        if existing is not None:
            log.replace(existing, entry)
        else:
            log.insert(entry)
        log.changed()

    def add_tool_result(self, tool_call_id: str, content: str | Sequence[msg.ContentPart], *,
                        message_id: str, error: str | None = None) -> msg.ToolMessage:
        """Answer a frontend tool call: a tool message placed after the call's assistant message."""
        message = msg.ToolMessage(id=message_id, tool_call_id=tool_call_id,
                                  content=content if isinstance(content, str) else tuple(content), error=error)
        self.streams.add_tool_result(message)
        return message

    def set_state(self, state: JSON) -> None:
        """Replace the shared state (a copy of ``state`` is kept).

        Raises:
            ValueError: ``state`` holds something JSON cannot (``NaN``, a ``datetime``, a set …).
        """
        self.document.set(state)

    def hold_interrupts(self, interrupts: Sequence[rn.Interrupt], run_id: str | None) -> None:
        """Hold interrupts open that arrived in a run the session had to reject (IR-27)."""
        self.ledger.hold_interrupts(interrupts, run_id)

    def clear_open_interrupts(self) -> None:
        """Forget the open interrupts (after a resume was sent and its run moved the thread on)."""
        self.ledger.clear_open_interrupts()

    def open_rejected_run(self, run_id: str | None) -> None:
        """Record a run the producer refused before starting it (a response opening with RUN_ERROR)."""
        self.ledger.open_rejected_run(run_id)

    def mark_incomplete(self, message_ids: Iterable[str] = (), tool_call_ids: Iterable[str] = ()) -> None:
        """Flag messages and tool calls whose stream was cut (they are kept, never silently closed)."""
        self.log.mark_incomplete(message_ids, tool_call_ids)
        streams = self.streams
        if streams.reopened_empty:
            streams.settle_reopened()
        if streams.restarted:
            self.warnings.extend(streams.judge_restarted())

    # -- the fold --------------------------------------------------------------------------------

    def apply(self, event: ev.Event | ev.UnknownEvent, *, adopt: bool = False,
              parsed: bool = False) -> Sequence[StreamWarning]:
        """Fold one event the verifier accepted; returns the warnings it produced.

        Args:
            event: the event (``*_CHUNK`` events expanded first: ``agui_client.core.chunks``).
            adopt: the event's JSON values are the fold's own (parsed for this fold alone and never
                handed out): a state snapshot or patch is then kept as it is, not copied.
            parsed: the event's JSON values are as a parser made them (plain JSON, no container held
                twice), though the event may be handed out after the fold: what the fold copies of them
                needs no walk to judge them first (``adopt`` implies it).
        """
        found: Sequence[StreamWarning]
        streams = self.streams
        match event:
            case ev.TextMessageContentEvent() | ev.ReasoningMessageContentEvent():
                found = streams.text_delta(event.message_id, event.delta, event.metadata)
            case ev.ToolCallArgsEvent():
                found = streams.tool_args(event.tool_call_id, event.delta, event.metadata)
            case ev.TextMessageStartEvent():
                found = streams.text_start(event.message_id, event.role or "assistant", event.name,
                                           event.subagent_run_id, event.metadata)
            case ev.ReasoningMessageStartEvent():
                found = streams.text_start(event.message_id, "reasoning", None, event.subagent_run_id,
                                           event.metadata)
            case ev.TextMessageEndEvent() | ev.ReasoningMessageEndEvent():
                found = streams.text_end(event.message_id, event.metadata)
            case ev.ToolCallStartEvent():
                found = streams.tool_start(event.tool_call_id, event.tool_call_name, event.parent_message_id,
                                           event.subagent_run_id, event.metadata)
            case ev.ToolCallEndEvent():
                found = streams.tool_end(event.tool_call_id, event.metadata)
            case ev.ToolCallResultEvent():
                found = streams.tool_result(event.message_id, event.tool_call_id, event.content,
                                            event.subagent_run_id, event.metadata)
            case ev.StateSnapshotEvent():
                found = self.document.snapshot(event.snapshot, adopt)
            case ev.StateDeltaEvent():
                found = self.document.delta(event.delta, adopt)
            case ev.MessagesSnapshotEvent():
                # (the event's messages stay its holder's: the dicts inside them are copied, see detached)
                held = event.messages if adopt else detached(event.messages)
                found = self.snapshots.messages_snapshot(Roster.of(held), event.metadata)
            case ev.ActivitySnapshotEvent():
                found = self.snapshots.activity_snapshot(event.message_id, event.activity_type, event.content,
                                                         event.replace, event.subagent_run_id, event.metadata)
            case ev.ActivityDeltaEvent():
                found = self.snapshots.activity_delta(event.message_id, event.activity_type, event.patch,
                                                      event.metadata)
            case ev.ReasoningEncryptedValueEvent():
                found = streams.encrypted_value(event.subtype, event.entity_id, event.encrypted_value)
            case ev.RunStartedEvent():
                if streams.restarted:  # (the run before was never seen to end)
                    self.warnings.extend(streams.judge_restarted())
                streams.new_run()
                found = self.ledger.run_started(event.run_id, event.thread_id, event.parent_run_id,
                                                event.protocol_version,
                                                event.input.messages if event.input is not None else ())
            case ev.RunFinishedEvent():
                found = self.ledger.run_finished(event.usage, event.outcome, event.result, adopt or parsed)
                if streams.restarted:
                    found = [*streams.judge_restarted(), *found]
            case ev.RunErrorEvent():
                found = self.ledger.run_error(event.message, event.code, event.usage)
                if streams.reopened_empty:
                    streams.settle_reopened()
                if streams.restarted:
                    found = [*streams.judge_restarted(), *found]
            case ev.StepStartedEvent():
                found = self.ledger.step_started(event.step_name, event.subagent_run_id)
            case ev.StepFinishedEvent():
                found = self.ledger.step_finished(event.step_name, event.subagent_run_id)
            case ev.SubagentStartedEvent():
                found = self.ledger.subagent_started(event.subagent_run_id, event.name, event.description,
                                                     event.parent_subagent_run_id, event.parent_tool_call_id,
                                                     event.parent_message_id)
            case ev.SubagentFinishedEvent():
                # (an event handed out, or built elsewhere, keeps its own result: the record holds a copy,
                # so changing the event changes nothing the thread holds or saves)
                result = event.result if adopt or type(event.result) not in (dict, list) else foreign_copy(event.result)
                found = self.ledger.subagent_finished(event.subagent_run_id, event.outcome, result)
            case ev.SubagentErrorEvent():
                found = self.ledger.subagent_error(event.subagent_run_id, event.message, event.code)
            case ev.CustomEvent():
                value, raw = event.value, event.raw_event
                # (the bridge reads a pre-1.0 ask at the run's end, after the event went to its holder)
                if not adopt and event.name == legacy.ON_INTERRUPT:
                    value, raw = foreign_copy(value), foreign_copy(raw)
                found = self.ledger.custom(event.name, value, event.subagent_run_id, raw)
            case ev.RawEvent() | ev.ReasoningStartEvent() | ev.ReasoningEndEvent() | ev.UnknownEvent():
                return NO_WARNINGS  # they carry no state of their own (UK-08)
            case ev.TextMessageChunkEvent() | ev.ToolCallChunkEvent() | ev.ReasoningMessageChunkEvent():
                raise TypeError(f"{event.TYPE} must be expanded by agui_client.core.chunks before it is folded")
            case _:
                assert_never(event)
        if found:
            kind = event.TYPE
            return [w if w.event_type is not None else attrs.evolve(w, event_type=kind) for w in found]
        return found

    # -- stored and wire form ----------------------------------------------------------------------

    def to_wire(self) -> dict[str, Any]:
        """The thread in wire form: ``{"messages": [...], "state": ..., "openInterrupts": [...]}``."""
        return to_wire(self)

    def dump(self, *, share_state: bool = False) -> dict[str, Any]:
        """Everything a store needs to bring the thread back (``ThreadState.load`` reads it).

        Args:
            share_state: put the thread's own state document in the result instead of a copy, for a
                caller that serialises the result at once and never mutates it (the thread's save
                does): a large state is then not copied once more per save, and the messages (and a
                state the thread parsed or validated itself, as a shallow top-level copy) come marked
                as already checked to be plain JSON, which the stores do not walk again. The message
                dicts are the thread's own (it keeps them for the next save), never copies.
                ``ThreadState.load`` walks a state so marked as any caller's (it may have been changed
                since); a store trusts the mark.
        """
        return dump(self, share_state=share_state)

    def restates_messages(self) -> bool:
        """Whether :meth:`changes` holds every message of a thread that held some at the mark.

        A ``MESSAGES_SNAPSHOT`` that restates the thread does that (its messages are new objects, equal
        or not to the ones held); writing the thread whole then costs no more than appending it, and
        leaves the store no change to fold. A thread's runs save whole when this is true.
        """
        log = self.log
        return log.marked_len > 0 and log.low == 0

    def changes(self) -> dict[str, Any]:
        """What changed since :meth:`mark`, as one change a store appends (``IncrementalStore.append``).

        For the data ``D`` a store held at the mark, ``apply_changes(D, [state.changes()])`` equals
        ``state.dump()`` (as JSON). It costs what changed, not the thread's length: the messages from
        the first one that changed (``messagesFrom``) on, the small top-level fields, the state only when
        the document changed, and the usage and subagents written since (``merge``). (While frontend tool
        calls are pending, their results are looked for among all messages, as ``dump()`` does.) Of a
        thread never marked it is the whole thread, to apply to an empty record ``{}``.

        As ``dump(share_state=True)``, the result holds the thread's own message dicts and state: write
        it at once, and never change it.

        Example::

            stored = store.load(thread_id)
            state = ThreadState.load(stored.data, adopt=True)   # marked: counts from the record
            replay(recording, state=state)                      # a run folded in
            version = store.append(thread_id, state.changes(), expected_version=stored.version)
            state.mark()                                        # the next change counts from here
        """
        return changes(self, self._mark)

    @classmethod
    def load(cls, data: Mapping[str, Any], *, adopt: bool = False) -> ThreadState:
        """Rebuild a thread from :meth:`dump` output (``dump(share_state=True)``'s included).

        Args:
            data: the dumped thread.
            adopt: ``data`` is a store's freshly parsed record, nobody else's: the thread may hold its
                messages and state as they are (a long thread's messages are then typed only when
                read). Otherwise the thread holds copies, and changing ``data`` does not change it.

        Raises:
            ValueError: the data was written by a newer, unknown format, or its state is not JSON.
            DecodeError: a message, open interrupt or usage entry is malformed (``.pointer`` says where
                in ``data``: ``/openInterrupts/0/expiresAt``).
        """
        thread, mark = load(cls, data, adopt=adopt)
        thread._mark = mark  # (the record's: what it lacks, the first change writes)
        return thread

    def copy(self) -> ThreadState:
        """An independent copy (through the dump form; the legacy bridge in force, too).

        The dump's message dicts are the thread's own (see :meth:`dump`): they are copied here, so
        changing a message's ``metadata`` or an activity's ``content`` in one thread leaves the other's.
        The state is copied once, from this thread's document to the new thread's (it was copied with
        the rest, then walked and copied again); what the document judged of it is not judged again."""
        data = self.dump(share_state=True)
        data["state"] = None  # (copied below, document to document)
        data = foreign_copy(data)
        copied = ThreadState.load(data)
        copied.document.hold_copy(self.document)
        copied.legacy_interrupts = self.legacy_interrupts
        return copied


def parsed_arguments(call: msg.ToolCall) -> JSON:
    """A tool call's arguments parsed as JSON, or ``None`` when they are not JSON (kept raw in the call),
    or hold more containers than are parsed (see :data:`~agui_client.core.fold.streams.MAX_ARGUMENT_CONTAINERS`)."""
    if too_dense_to_parse(call.function.arguments):
        return None
    try:
        return parse_json(call.function.arguments, check_duplicates=False) if call.function.arguments else {}
    except ProtocolError:  # parse_json reports every way text is not (acceptable) JSON as one
        return None
