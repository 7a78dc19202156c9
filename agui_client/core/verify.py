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
(its code: the rule id and, where ag-ui-validate's catalogue has one, its number: ``"TX-02/AGUI101"``;
``docs/codes.md`` has a section per code, ``docs/rules.md`` states each rule), the run, the event index
and type. Contradictions a client survives come back from :meth:`RunVerifier.check` as
:class:`~agui_client.errors.StreamWarning` values.

Each event kind has one handler, with the event's fields as plain arguments (``text_start(index,
message_id, owner)``): :meth:`RunVerifier.check` matches a typed event onto its handler, and the
session's fast front-end, which reads plain events straight from their JSON, calls the same handlers.
A handler first takes the phase step the table gives its kind, then applies the id rules; a refusal
leaves the verifier's state unchanged.

The verifier expects chunks already expanded (:class:`~agui_client.core.chunks.ChunkExpander`);
``UnknownEvent`` passes unchecked (the codec has warned about it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Set
from types import MappingProxyType
from typing import Any, Literal

from attrs import define, field, frozen
from typing_extensions import assert_never

from .._inert import quoted_name
from ..errors import SequenceError, StreamEnded, StreamWarning
from ..wire.types import events as ev
from ..wire.types.run import (
    PROTOCOL_VERSION,
    Interrupt,
    RunFinishedCancelledOutcome,
    RunFinishedInterruptOutcome,
    RunFinishedOutcome,
    RunFinishedSuccessOutcome,
    SubagentFinishedOutcome,
    SubagentFinishedSuspendedOutcome,
)
from .interrupts import listed_ids
from .roster import Owner, Roster

__all__ = ["RunVerifier", "Phase", "PhaseRow", "Violation", "TRANSITIONS"]

Phase = Literal["idle", "running", "finished", "errored", "late-error"]

_Owner = Owner
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
#: The phases in which an event that is not a run-lifecycle event keeps the phase (derived from the table).
_KEEPS: frozenset[Phase] = frozenset(phase for phase, row in TRANSITIONS.items() if row.other == phase)


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


class _IdRules:
    """The id rules of a run, one handler per event kind that opens, continues or closes an entity.

    Part of :class:`RunVerifier`, which holds the state these read: the phase, the run scope and the
    stream-wide id records. Each handler first takes the phase step the table gives every event that is
    not a run-lifecycle event, then applies its kind's rules; a refusal leaves the state unchanged.
    """

    _phase: Phase
    _run: _Run
    _message_run: dict[str, int]
    _tool_call_run: dict[str, int]
    _known_tool_call_ids: Callable[[str], bool] | None
    _known_message_ids: Callable[[str], bool] | None

    def text_start(self, index: int, message_id: str, owner: _Owner) -> list[StreamWarning]:
        """TEXT_MESSAGE_START: opens a message (a reused id is reported, TX-05)."""
        kind = "TEXT_MESSAGE_START"
        if self._phase not in _KEEPS:
            self._other(index, kind)
        run = self._run
        if message_id in run.messages:
            raise self._error(f"text message {message_id!r} is already open", kind, index,
                              rule="TX-03/AGUI106", pointer="/messageId")
        tag = owner
        if message_id in run.message_owner:
            # An untagged reopen agrees with any owner and must not hand the message to the parent.
            owner = run.message_owner[message_id]
            self._agree(tag, owner, kind, index, what="message", entity_id=message_id)
        warnings = []
        last_run = self._message_run.get(message_id)
        if last_run == run.number:
            warnings.append(self._warning(f"message id {message_id!r} is already used in this run", kind, index,
                                          code="TX-05/AGUI104", pointer="/messageId"))
        elif last_run is not None or (self._known_message_ids is not None and self._known_message_ids(message_id)):
            warnings.append(self._warning(f"message id {message_id!r} already names a message of the thread", kind,
                                          index, code="TX-05/AGUI104", pointer="/messageId"))
        run.messages[message_id] = owner
        run.message_owner[message_id] = owner
        self._message_run[message_id] = run.number
        return warnings

    def text_content(self, index: int, message_id: str, owner: _Owner) -> list[StreamWarning]:
        """TEXT_MESSAGE_CONTENT: continues an open message."""
        open_ids = self._run.messages
        if message_id in open_ids and (owner is None or owner == open_ids[message_id]) and self._phase in _KEEPS:
            return []  # (most of any stream: the rest of _continue's rules cannot refuse this one)
        self._continue(self._run.messages, message_id, owner, "TEXT_MESSAGE_CONTENT", index, what="text message",
                       rule="TX-02/AGUI101", pointer="/messageId")
        return []

    def text_end(self, index: int, message_id: str, owner: _Owner) -> list[StreamWarning]:
        """TEXT_MESSAGE_END: closes an open message."""
        self._close(self._run.messages, message_id, owner, "TEXT_MESSAGE_END", index, what="text message",
                    rule="TX-02/AGUI102", pointer="/messageId")
        return []

    def tool_start(self, index: int, tool_call_id: str, parent_message_id: str | None,
                   owner: _Owner) -> list[StreamWarning]:
        """TOOL_CALL_START: opens a tool call, owned by the message that carries it (TC-14)."""
        kind = "TOOL_CALL_START"
        if self._phase not in _KEEPS:
            self._other(index, kind)
        run, call_id, tag = self._run, tool_call_id, owner
        if call_id in run.tool_calls:
            raise self._error(f"tool call {call_id!r} is already open", kind, index, rule="TC-03",
                              pointer="/toolCallId")
        parent, inherits, inherited = parent_message_id, False, None
        if parent is not None and parent in run.message_owner:
            inherits, inherited = True, run.message_owner[parent]
        if inherits and tag is not None and tag != inherited:
            raise self._error(f"subagentRunId {tag!r} does not match the owner of parent message "
                              f"{parent!r} ({_owner_label(inherited)})", kind, index, rule="TC-14",
                              pointer="/subagentRunId")
        owned = tag if tag is not None else inherited
        if call_id in run.tool_call_owner:
            owned = run.tool_call_owner[call_id]
            self._agree(tag, owned, kind, index, what="tool call", entity_id=call_id)
            if tag is None and inherits and inherited != owned:
                raise self._error(f"tool call {call_id!r} belongs to {_owner_label(owned)} but its parent message "
                                  f"{parent!r} to {_owner_label(inherited)}", kind, index,
                                  rule="TC-14", pointer="/parentMessageId")
        warnings = []
        if self._tool_call_run.get(call_id) == run.number:
            warnings.append(self._warning(f"tool call id {call_id!r} re-used after its TOOL_CALL_END in this run",
                                          kind, index, code="TC-05/AGUI205", pointer="/toolCallId"))
        run.tool_calls[call_id] = owned
        run.tool_call_owner[call_id] = owned
        self._tool_call_run[call_id] = run.number
        return warnings

    def tool_args(self, index: int, tool_call_id: str, owner: _Owner) -> list[StreamWarning]:
        """TOOL_CALL_ARGS: continues an open tool call."""
        open_ids = self._run.tool_calls
        if tool_call_id in open_ids and (owner is None or owner == open_ids[tool_call_id]) and self._phase in _KEEPS:
            return []  # (as in text_content)
        self._continue(self._run.tool_calls, tool_call_id, owner, "TOOL_CALL_ARGS", index, what="tool call",
                       rule="TC-02/AGUI201", pointer="/toolCallId")
        return []

    def tool_end(self, index: int, tool_call_id: str, owner: _Owner) -> list[StreamWarning]:
        """TOOL_CALL_END: closes an open tool call."""
        self._close(self._run.tool_calls, tool_call_id, owner, "TOOL_CALL_END", index, what="tool call",
                    rule="TC-02/AGUI202", pointer="/toolCallId")
        return []

    def tool_result(self, index: int, message_id: str, tool_call_id: str, owner: _Owner) -> list[StreamWarning]:
        """TOOL_CALL_RESULT: answers a closed call of this run or of the thread's history."""
        kind = "TOOL_CALL_RESULT"
        if self._phase not in _KEEPS:
            self._other(index, kind)
        run, call_id = self._run, tool_call_id
        warnings = []
        if call_id in run.tool_calls:
            warnings.append(self._warning(f"result for tool call {call_id!r} before its TOOL_CALL_END", kind, index,
                                          code="TC-12/AGUI206", pointer="/toolCallId"))
        elif not self._tool_call_known(call_id):
            warnings.append(self._warning(f"result for tool call {call_id!r}, unknown in this run and the thread",
                                          kind, index, code="TC-11/AGUI207", pointer="/toolCallId"))
        run.answered.add(call_id)
        # A result mints a tool message; its own tag says who owns it, and the newest mint wins.
        run.message_owner[message_id] = owner
        self._message_run[message_id] = run.number
        return warnings

    def reasoning_start(self, index: int, message_id: str, owner: _Owner) -> list[StreamWarning]:
        """REASONING_START: opens a reasoning span."""
        self._reasoning_open(self._run.reasoning_spans, message_id, owner, "REASONING_START", index,
                             what="reasoning span")
        return []

    def reasoning_message_start(self, index: int, message_id: str, owner: _Owner) -> list[StreamWarning]:
        """REASONING_MESSAGE_START: opens a reasoning message."""
        self._reasoning_open(self._run.reasoning_messages, message_id, owner, "REASONING_MESSAGE_START", index,
                             what="reasoning message")
        return []

    def reasoning_content(self, index: int, message_id: str, owner: _Owner) -> list[StreamWarning]:
        """REASONING_MESSAGE_CONTENT: continues an open reasoning message."""
        open_ids = self._run.reasoning_messages
        if message_id in open_ids and (owner is None or owner == open_ids[message_id]) and self._phase in _KEEPS:
            return []  # (as in text_content)
        self._continue(self._run.reasoning_messages, message_id, owner, "REASONING_MESSAGE_CONTENT", index,
                       what="reasoning message", rule="RS-02/AGUI401", pointer="/messageId")
        return []

    def reasoning_message_end(self, index: int, message_id: str, owner: _Owner) -> list[StreamWarning]:
        """REASONING_MESSAGE_END: closes an open reasoning message."""
        self._close(self._run.reasoning_messages, message_id, owner, "REASONING_MESSAGE_END", index,
                    what="reasoning message", rule="RS-02/AGUI401", pointer="/messageId")
        return []

    def reasoning_end(self, index: int, message_id: str, owner: _Owner) -> list[StreamWarning]:
        """REASONING_END: closes an open reasoning span."""
        self._close(self._run.reasoning_spans, message_id, owner, "REASONING_END", index, what="reasoning span",
                    rule="RS-03", pointer="/messageId")
        return []

    def encrypted_value(self, index: int, subtype: str, entity_id: str, owner: _Owner) -> list[StreamWarning]:
        """REASONING_ENCRYPTED_VALUE: its tag must agree with the owner of the entity it names."""
        kind = "REASONING_ENCRYPTED_VALUE"
        if self._phase not in _KEEPS:
            self._other(index, kind)
        run = self._run
        # "message" covers text and reasoning messages; ids are unique per kind, so one bucket at most has it.
        buckets = (run.tool_call_owner,) if subtype == "tool-call" else (run.message_owner, run.reasoning_owner)
        for owners in buckets:
            if entity_id in owners:
                self._agree(owner, owners[entity_id], kind, index, what=subtype, entity_id=entity_id)
                break
        return []

    # -- the handlers: steps, subagents, activities, snapshots ------------------------------------

    def step_started(self, index: int, step_name: str, owner: _Owner) -> list[StreamWarning]:
        """STEP_STARTED: opens a step of an owner (one open step per name and owner)."""
        kind = "STEP_STARTED"
        if self._phase not in _KEEPS:
            self._other(index, kind)
        run, key = self._run, (owner, step_name)
        if key in run.steps:
            raise self._error(f"step {step_name!r} is already open for {_owner_label(key[0])}", kind, index,
                              rule="ST-03", pointer="/stepName")
        run.steps[key] = None
        run.step_names[step_name] = run.step_names.get(step_name, 0) + 1
        return []

    def step_finished(self, index: int, step_name: str, owner: _Owner) -> list[StreamWarning]:
        """STEP_FINISHED: closes the step its owner started."""
        kind = "STEP_FINISHED"
        if self._phase not in _KEEPS:
            self._other(index, kind)
        run, key = self._run, (owner, step_name)
        if key not in run.steps:
            if run.step_names.get(step_name):
                raise self._error(f"step {step_name!r} is open under another owner than "
                                  f"{_owner_label(key[0])}; a step is finished by whoever started it", kind, index,
                                  rule="ST-04/AGUI006", pointer="/subagentRunId")
            raise self._error(f"step {step_name!r} was not started", kind, index, rule="ST-01/AGUI006",
                              pointer="/stepName")
        del run.steps[key]
        run.step_names[step_name] -= 1
        if not run.step_names[step_name]:
            del run.step_names[step_name]
        return []

    def subagent_started(self, index: int, subagent_run_id: str, parent: str | None) -> list[StreamWarning]:
        """SUBAGENT_STARTED: a new invocation (its id once per run), under a parent started in this run."""
        kind = "SUBAGENT_STARTED"
        if self._phase not in _KEEPS:
            self._other(index, kind)
        run, sub = self._run, subagent_run_id
        if sub in run.subagents:
            raise self._error(f"subagent {sub!r} is already active", kind, index, rule="SA-02/AGUI601",
                              pointer="/subagentRunId")
        if sub in run.closed_subagents:
            raise self._error(f"subagent {sub!r} already ran in this run; ids are per invocation", kind, index,
                              rule="SA-02/AGUI601", pointer="/subagentRunId")
        if parent is not None and parent not in run.subagents and parent not in run.closed_subagents:
            raise self._error(f"parentSubagentRunId {parent!r} was not started in this run", kind, index,
                              rule="SA-05/AGUI605", pointer="/parentSubagentRunId")
        run.subagents[sub] = None
        return []

    def subagent_finished(self, index: int, subagent_run_id: str,
                          outcome: SubagentFinishedOutcome | None) -> list[StreamWarning]:
        """SUBAGENT_FINISHED: ends an active invocation (a suspended one names its interrupts)."""
        self._subagent_closed(index, subagent_run_id, "SUBAGENT_FINISHED", "SA-03/AGUI602")
        if isinstance(outcome, SubagentFinishedSuspendedOutcome):
            self._run.suspended[subagent_run_id] = outcome.interrupt_ids or ()
        return []

    def subagent_error(self, index: int, subagent_run_id: str) -> list[StreamWarning]:
        """SUBAGENT_ERROR: ends an active invocation."""
        self._subagent_closed(index, subagent_run_id, "SUBAGENT_ERROR", "SA-03/AGUI603")
        return []

    def _subagent_closed(self, index: int, sub: str, kind: str, rule: str) -> None:
        if self._phase not in _KEEPS:
            self._other(index, kind)
        run = self._run
        if sub not in run.subagents:
            raise self._error(f"subagent {sub!r} is not active", kind, index, rule=rule, pointer="/subagentRunId")
        del run.subagents[sub]
        run.closed_subagents.add(sub)

    def activity_snapshot(self, index: int, message_id: str, owner: _Owner,
                          replace: bool | None) -> list[StreamWarning]:
        """ACTIVITY_SNAPSHOT: only a replacing snapshot re-mints, and so re-owns, an existing activity (AC-08)."""
        if self._phase not in _KEEPS:
            self._other(index, "ACTIVITY_SNAPSHOT")
        run = self._run
        if message_id not in run.activity_owner or replace is not False:
            run.activity_owner[message_id] = owner
        return []

    def activity_delta(self, index: int, message_id: str, owner: _Owner) -> list[StreamWarning]:
        """ACTIVITY_DELTA: its tag must agree with the activity's owner."""
        kind = "ACTIVITY_DELTA"
        if self._phase not in _KEEPS:
            self._other(index, kind)
        run = self._run
        if message_id in run.activity_owner:
            self._agree(owner, run.activity_owner[message_id], kind, index, what="activity", entity_id=message_id,
                        rule="AC-08/AGUI606")
        return []

    def _continue(self, open_ids: dict[str, _Owner], entity_id: str, tag: _Owner, kind: str, index: int, *,
                  what: str, rule: str, pointer: str) -> None:
        if self._phase not in _KEEPS:
            if self._phase not in _KEEPS:
                self._other(index, kind)
        if entity_id not in open_ids:
            raise self._error(f"no open {what} {entity_id!r}", kind, index, rule=rule, pointer=pointer)
        if tag is not None and tag != open_ids[entity_id]:
            self._agree(tag, open_ids[entity_id], kind, index, what=what, entity_id=entity_id)

    def _close(self, open_ids: dict[str, _Owner], entity_id: str, tag: _Owner, kind: str, index: int, *, what: str,
               rule: str, pointer: str) -> None:
        """An END: the entity must be open, with an agreeing owner tag; it is open no more."""
        self._continue(open_ids, entity_id, tag, kind, index, what=what, rule=rule, pointer=pointer)
        del open_ids[entity_id]

    def _agree(self, tag: _Owner, owner: _Owner, kind: str, index: int, *, what: str, entity_id: str,
               rule: str = "SA-11/AGUI606") -> None:
        # An absent tag never disagrees; a present one must name the owner exactly (None is the parent).
        if tag is not None and tag != owner:
            raise self._error(f"subagentRunId {tag!r} does not match the owner of {what} {entity_id!r} "
                              f"({_owner_label(owner)})", kind, index, rule=rule, pointer="/subagentRunId")

    def _reasoning_open(self, open_ids: dict[str, _Owner], message_id: str, tag: _Owner, kind: str, index: int, *,
                        what: str) -> None:
        if self._phase not in _KEEPS:
            self._other(index, kind)
        run = self._run
        if message_id in open_ids:
            raise self._error(f"{what} {message_id!r} is already open", kind, index, rule="RS-04",
                              pointer="/messageId")
        # A span and the message inside it may share an id, and then they share one owner.
        owner = tag
        if message_id in run.reasoning_owner:
            owner = run.reasoning_owner[message_id]
            self._agree(tag, owner, kind, index, what=what, entity_id=message_id)
        open_ids[message_id] = owner
        run.reasoning_owner[message_id] = owner

    # -- the phase step, and what a refusal says

    def _other(self, index: int, kind: str) -> None:
        """The phase step of an event that is not a run-lifecycle event, in a phase that it does not keep
        (the handlers test ``_KEEPS`` first: most events arrive while a run is running)."""
        target = TRANSITIONS[self._phase].other
        if isinstance(target, Violation):
            raise self._error(target.message, kind, index, rule=target.rule)
        self._phase = target  # (no phase of today's table lands here: every other step keeps or refuses)
        self.running = target == "running"

    def _tool_call_known(self, call_id: str) -> bool:
        return call_id in self._tool_call_run or (
            self._known_tool_call_ids is not None and self._known_tool_call_ids(call_id))

    def _error(self, message: str, kind: str, index: int, *, rule: str, pointer: str | None = None) -> SequenceError:
        return SequenceError(message, run_id=self._run.run_id, index=index, event_type=kind, pointer=pointer,
                             rule=rule)

    def _warning(self, message: str, kind: str, index: int, *, code: str, pointer: str | None) -> StreamWarning:
        return StreamWarning(code=code, message=message, index=index, event_type=kind, pointer=pointer,
                             run_id=self._run.run_id)




class RunVerifier(_IdRules):
    """Checks one response's events against the AG-UI run sequence rules.

    Feed every event (after chunk expansion) to :meth:`check`, then call :meth:`end` when the
    stream ends. Each event kind's rules are one handler with the event's fields as arguments
    (``text_start``, ``tool_args``, ``run_finished`` …), which :meth:`check` calls and a caller that
    reads events from their JSON may call directly.

    Args:
        known_tool_call_ids: tells whether a tool call id exists in the thread's history, so a
            ``TOOL_CALL_RESULT`` answering a call of an earlier run is not unknown (TC-10).
        known_message_ids: tells whether a message id exists in the thread's history, so reusing
            it is reported (TX-05, TC-05).
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
        #: Whether a run is open (kept with the phase: it is asked for every payload a session reads).
        self.running = False
        self._run = _Run(number=0)
        # id -> number of the last run that used it, across the whole stream (for TX-05, TC-05, TC-10).
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

    # -- the typed entry ------------------------------------------------------------------------

    def check(self, event: ev.Event | ev.UnknownEvent, index: int) -> list[StreamWarning]:
        """Check the next event and advance the state: the event's handler, called with its fields.

        Args:
            event: the event, after chunk expansion.
            index: its 0-based index in the stream.

        Returns:
            Warnings about contradictions the client tolerates (empty for most events).

        Raises:
            SequenceError: the event breaks a sequence rule; the verifier's state is unchanged.
            TypeError: a ``*_CHUNK`` event was not expanded first.
        """
        match event:
            case ev.TextMessageContentEvent():
                return self.text_content(index, event.message_id, event.subagent_run_id)
            case ev.ToolCallArgsEvent():
                return self.tool_args(index, event.tool_call_id, event.subagent_run_id)
            case ev.ReasoningMessageContentEvent():
                return self.reasoning_content(index, event.message_id, event.subagent_run_id)
            case ev.TextMessageStartEvent():
                return self.text_start(index, event.message_id, event.subagent_run_id)
            case ev.TextMessageEndEvent():
                return self.text_end(index, event.message_id, event.subagent_run_id)
            case ev.ToolCallStartEvent():
                return self.tool_start(index, event.tool_call_id, event.parent_message_id, event.subagent_run_id)
            case ev.ToolCallEndEvent():
                return self.tool_end(index, event.tool_call_id, event.subagent_run_id)
            case ev.ToolCallResultEvent():
                return self.tool_result(index, event.message_id, event.tool_call_id, event.subagent_run_id)
            case ev.StateSnapshotEvent() | ev.StateDeltaEvent() | ev.CustomEvent() | ev.RawEvent():
                return self.passive(index, event.TYPE)
            case ev.MessagesSnapshotEvent():
                return self.messages_snapshot(index, Roster.of(event.messages))
            case ev.RunStartedEvent():
                roster = Roster.of(event.input.messages, first_wins=True) if event.input is not None else None
                return self.run_started(index, event.run_id, event.thread_id, roster, event.protocol_version)
            case ev.RunFinishedEvent():
                return self.run_finished(index, event.thread_id, event.run_id, event.outcome)
            case ev.RunErrorEvent():
                return self.run_error(index)
            case ev.ReasoningStartEvent():
                return self.reasoning_start(index, event.message_id, event.subagent_run_id)
            case ev.ReasoningMessageStartEvent():
                return self.reasoning_message_start(index, event.message_id, event.subagent_run_id)
            case ev.ReasoningMessageEndEvent():
                return self.reasoning_message_end(index, event.message_id, event.subagent_run_id)
            case ev.ReasoningEndEvent():
                return self.reasoning_end(index, event.message_id, event.subagent_run_id)
            case ev.ReasoningEncryptedValueEvent():
                return self.encrypted_value(index, event.subtype, event.entity_id, event.subagent_run_id)
            case ev.StepStartedEvent():
                return self.step_started(index, event.step_name, event.subagent_run_id)
            case ev.StepFinishedEvent():
                return self.step_finished(index, event.step_name, event.subagent_run_id)
            case ev.SubagentStartedEvent():
                return self.subagent_started(index, event.subagent_run_id, event.parent_subagent_run_id)
            case ev.SubagentFinishedEvent():
                return self.subagent_finished(index, event.subagent_run_id, event.outcome)
            case ev.SubagentErrorEvent():
                return self.subagent_error(index, event.subagent_run_id)
            case ev.ActivitySnapshotEvent():
                return self.activity_snapshot(index, event.message_id, event.subagent_run_id, event.replace)
            case ev.ActivityDeltaEvent():
                return self.activity_delta(index, event.message_id, event.subagent_run_id)
            case ev.UnknownEvent():
                return []
            case ev.TextMessageChunkEvent() | ev.ToolCallChunkEvent() | ev.ReasoningMessageChunkEvent():
                raise TypeError(f"{event.TYPE} must be expanded with ChunkExpander before verification")
            case _:
                assert_never(event)

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

    # -- the phase table ------------------------------------------------------------------------

    def _lifecycle(self, index: int, kind: str, column: str) -> Phase:
        """The phase a run-lifecycle event leads to (``column``: its table column), or its violation raised."""
        target: Phase | Violation = getattr(TRANSITIONS[self._phase], column)
        if isinstance(target, Violation):
            raise self._error(target.message, kind, index, rule=target.rule)
        return target

    # -- the handlers: run lifecycle --------------------------------------------------------------

    def run_started(self, index: int, run_id: str, thread_id: str, echoed: Roster | None,
                    protocol_version: str | None) -> list[StreamWarning]:
        """RUN_STARTED: a fresh run scope; the input's messages it echoes go on record (as history)."""
        target = self._lifecycle(index, "RUN_STARTED", "run_started")
        self._run = _Run(number=self._run.number + 1, run_id=run_id, thread_id=thread_id)
        if echoed is not None:
            self._seed(echoed, authoritative=False)
        self._phase = target
        self.running = target == "running"
        if protocol_version is not None:
            return self._protocol_version(protocol_version, index)
        return []

    def run_finished(self, index: int, thread_id: str, run_id: str,
                     outcome: RunFinishedOutcome | None) -> list[StreamWarning]:
        """RUN_FINISHED: nothing may be left open; the outcome's ids must be consistent."""
        kind = "RUN_FINISHED"
        target = self._lifecycle(index, kind, "run_finished")
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
                names = _some(k[1] if isinstance(k, tuple) else k for k in open_ids)
                raise self._error(f"RUN_FINISHED while {label} are still open: {names}", kind, index, rule=rule)
        warnings = []
        if run.thread_id is not None and thread_id != run.thread_id:
            warnings.append(self._warning(f"threadId {thread_id!r} differs from RUN_STARTED's "
                                          f"{run.thread_id!r}", kind, index, code="LC-07/AGUI008",
                                          pointer="/threadId"))
        if run.run_id is not None and run_id != run.run_id:
            warnings.append(self._warning(f"runId {run_id!r} differs from RUN_STARTED's {run.run_id!r}", kind,
                                          index, code="LC-07/AGUI008", pointer="/runId"))
        match outcome:
            case RunFinishedInterruptOutcome():
                warnings.extend(self._interrupts(outcome.interrupts, index))
            case None | RunFinishedSuccessOutcome():
                if run.suspended:
                    warnings.append(self._warning(
                        f"subagents {_some(run.suspended)} finished suspended, yet the run "
                        "finished as a success", kind, index, code="SA-15", pointer="/outcome"))
                if outcome is not None and outcome.pending_tool_call_ids:
                    warnings.extend(self._pending_tool_calls(outcome.pending_tool_call_ids, index))
            case RunFinishedCancelledOutcome():
                pass
            case _:
                assert_never(outcome)
        self._phase = target
        self.running = target == "running"
        return warnings

    def run_error(self, index: int) -> list[StreamWarning]:
        """RUN_ERROR: ends the run as it stands (what is open is debris of the failure, ST-05)."""
        self._phase = self._lifecycle(index, "RUN_ERROR", "run_error")
        self.running = self._phase == "running"
        return []

    def passive(self, index: int, kind: str) -> list[StreamWarning]:
        """STATE_SNAPSHOT, STATE_DELTA, CUSTOM, RAW: attribution on these is provenance, not ownership
        (SP-14), so only the phase is checked."""
        if self._phase not in _KEEPS:
            self._other(index, kind)
        return []

    # -- the handlers: snapshots (the id rules are in _IdRules) -------------------------------

    def messages_snapshot(self, index: int, roster: Roster) -> list[StreamWarning]:
        """MESSAGES_SNAPSHOT: the snapshot restates the conversation, so its owners replace the recorded ones."""
        if self._phase not in _KEEPS:
            self._other(index, "MESSAGES_SNAPSHOT")
        self._seed(roster, authoritative=True)
        return []

    # -- helpers ------------------------------------------------------------------------------

    def _seed(self, roster: Roster, *, authoritative: bool) -> None:
        # Replayed history (a snapshot, the input echo) puts ids on record that later events may
        # continue, with their owners: a snapshot's replace the recorded ones (it restates the
        # conversation); the echo's fill in only what is not on record yet.
        run = self._run
        messages, reasoning, activities = roster.owners()
        for owners, found in ((run.message_owner, messages), (run.reasoning_owner, reasoning),
                              (run.activity_owner, activities)):
            if not found:
                continue
            if authoritative:
                owners.update(found)
            else:
                for key, owner in found.items():
                    owners.setdefault(key, owner)
        calls = roster.call_owners
        if calls:
            if authoritative:
                run.tool_call_owner.update(calls)
            else:
                for key, owner in calls.items():
                    run.tool_call_owner.setdefault(key, owner)
        # Ids seen in no run of this stream yet are on record as history (never as this run's).
        _seeded(self._message_run, messages)
        _seeded(self._tool_call_run, calls)

    def _interrupts(self, interrupts: tuple[Interrupt, ...], index: int) -> list[StreamWarning]:
        kind = "RUN_FINISHED"
        run = self._run
        ids: set[str] = set()
        for n, interrupt in enumerate(interrupts):
            if interrupt.id in ids:
                # A resume entry answers an interrupt by id; two with one id make coverage ambiguous.
                # (ids the agent chose are named as every message names them: escaped, cut with a digest)
                raise self._error(f"interrupt id {quoted_name(interrupt.id)} appears twice in the outcome", kind, index,
                                  rule="IR-06", pointer=f"/outcome/interrupts/{n}/id")
            ids.add(interrupt.id)
        warnings = []
        for n, interrupt in enumerate(interrupts):
            sub = interrupt.subagent_run_id
            if sub is not None and sub not in run.closed_subagents:
                warnings.append(self._warning(f"interrupt {quoted_name(interrupt.id)} names subagent "
                                              f"{quoted_name(sub)}, never started in "
                                              "this run", kind, index, code="SA-09",
                                              pointer=f"/outcome/interrupts/{n}/subagentRunId"))
            call_id = interrupt.tool_call_id
            if call_id is not None and not self._tool_call_known(call_id):
                warnings.append(self._warning(f"interrupt {quoted_name(interrupt.id)} names tool call "
                                              f"{quoted_name(call_id)}, unknown in "
                                              "this run and the thread", kind, index, code="IR-07",
                                              pointer=f"/outcome/interrupts/{n}/toolCallId"))
        for sub, interrupt_ids in run.suspended.items():
            missing = [i for i in interrupt_ids if i not in ids]
            if missing:
                warnings.append(self._warning(f"subagent {quoted_name(sub)} suspended on interrupts "
                                              f"{listed_ids(missing)} that the outcome "
                                              "does not carry", kind, index, code="SA-15",
                                              pointer="/outcome/interrupts"))
        return warnings

    def _pending_tool_calls(self, pending: tuple[str, ...], index: int) -> list[StreamWarning]:
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
                warnings.append(self._warning(f"pendingToolCallIds: {call_id!r} {problem}", "RUN_FINISHED", index,
                                              code="TC-18", pointer=f"/outcome/pendingToolCallIds/{n}"))
        return warnings

    def _protocol_version(self, declared: str, index: int) -> list[StreamWarning]:
        # PV-03: a declaration outside the MAJOR.MINOR grammar is handled like a newer one: proceed,
        # and warn. PV-04: an older one is a downgrade to notice quietly.
        match = _VERSION.fullmatch(declared)
        if match is None:
            message = f"protocolVersion {declared!r} is not MAJOR.MINOR; read as newer than {PROTOCOL_VERSION}"
        elif _version_key(match[1], match[2]) > _SPOKEN:
            message = f"protocolVersion {declared!r} is newer than {PROTOCOL_VERSION}, the version this client speaks"
        else:
            return []
        return [self._warning(message + "; proceeding", "RUN_STARTED", index, code="PV-03",
                              pointer="/protocolVersion")]

def _seeded(runs: dict[str, int], ids: Mapping[str, Any]) -> None:
    """Put ``ids`` on record as history (``_SEEDED``) where no run of the stream used them yet, in order."""
    missing = dict.fromkeys(ids, _SEEDED)
    if runs:
        for key in missing.keys() & runs.keys():
            del missing[key]
    runs.update(missing)


def _owner_label(owner: _Owner) -> str:
    return "the parent agent" if owner is None else f"subagent {owner!r}"


#: How many ids a message lists, and how much of each (a stream may leave a hundred thousand open).
_LISTED, _ID_CHARS = 10, 100


def _some(ids: Iterable[Any]) -> str:
    """The first :data:`_LISTED` of ``ids``, each as ``repr`` cut at :data:`_ID_CHARS`, and how many more."""
    listed = list(ids)
    shown = [repr(i) if len(repr(i)) <= _ID_CHARS else repr(i)[:_ID_CHARS - 4] + "...'" for i in listed[:_LISTED]]
    more = len(listed) - _LISTED
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")
