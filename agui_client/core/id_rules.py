"""The id rules of a run: what opens, continues and closes each entity, and who owns it.

Inside a run, the *id rules* are code: one handler per event kind keeps the open text messages, tool
calls, reasoning spans and messages, steps and subagents, and refuses a continuation of something
not open, a second opener of something open, and a tag naming another owner than the entity's.
Every entity remembers, for the rest of its run, the owner it was opened under (see
``core/verify.py``'s theory of operation). :class:`IdRules` is a part of
:class:`~agui_client.core.verify.RunVerifier`, which holds the state the handlers read and adds the
run-lifecycle events; each handler first takes the phase step ``core/phases.py``'s table gives it.
"""

from __future__ import annotations

from collections.abc import Callable

from attrs import define, field

from .._inert import quoted_name
from ..errors import SequenceError, StreamWarning
from ..wire.types.run import SubagentFinishedOutcome, SubagentFinishedSuspendedOutcome
from .phases import KEEPS, TRANSITIONS, Phase, Violation
from .roster import Owner

__all__ = ["IdRules", "RunScope"]

_Owner = Owner


@define
class RunScope:
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


class IdRules:
    """The id rules of a run, one handler per event kind that opens, continues or closes an entity.

    Part of :class:`RunVerifier`, which holds the state these read: the phase, the run scope and the
    stream-wide id records. Each handler first takes the phase step the table gives every event that is
    not a run-lifecycle event, then applies its kind's rules; a refusal leaves the state unchanged.
    """

    _phase: Phase
    _run: RunScope
    _message_run: dict[str, int]
    _tool_call_run: dict[str, int]
    _known_tool_call_ids: Callable[[str], bool] | None
    _known_message_ids: Callable[[str], bool] | None

    def text_start(self, index: int, message_id: str, owner: _Owner) -> list[StreamWarning]:
        """TEXT_MESSAGE_START: opens a message (a reused id is reported, TX-05)."""
        kind = "TEXT_MESSAGE_START"
        if self._phase not in KEEPS:
            self._other(index, kind)
        run = self._run
        if message_id in run.messages:
            raise self._error(f"text message {quoted_name(message_id)} is already open", kind, index,
                              rule="TX-03/AGUI106", pointer="/messageId")
        tag = owner
        if message_id in run.message_owner:
            # An untagged reopen agrees with any owner and must not hand the message to the parent.
            owner = run.message_owner[message_id]
            self._agree(tag, owner, kind, index, what="message", entity_id=message_id)
        warnings = []
        last_run = self._message_run.get(message_id)
        if last_run == run.number:
            warnings.append(self._warning(f"message id {quoted_name(message_id)} is already used "
                                          "in this run", kind, index,
                                          code="TX-05/AGUI104", pointer="/messageId"))
        elif last_run is not None or (self._known_message_ids is not None and self._known_message_ids(message_id)):
            warnings.append(self._warning(f"message id {quoted_name(message_id)} already names a message "
                                          "of the thread", kind,
                                          index, code="TX-05/AGUI104", pointer="/messageId"))
        run.messages[message_id] = owner
        run.message_owner[message_id] = owner
        self._message_run[message_id] = run.number
        return warnings

    def text_content(self, index: int, message_id: str, owner: _Owner) -> list[StreamWarning]:
        """TEXT_MESSAGE_CONTENT: continues an open message."""
        open_ids = self._run.messages
        if message_id in open_ids and (owner is None or owner == open_ids[message_id]) and self._phase in KEEPS:
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
        if self._phase not in KEEPS:
            self._other(index, kind)
        run, call_id, tag = self._run, tool_call_id, owner
        if call_id in run.tool_calls:
            raise self._error(f"tool call {quoted_name(call_id)} is already open", kind, index, rule="TC-03",
                              pointer="/toolCallId")
        parent, inherits, inherited = parent_message_id, False, None
        if parent is not None and parent in run.message_owner:
            inherits, inherited = True, run.message_owner[parent]
        if inherits and tag is not None and tag != inherited:
            raise self._error(f"subagentRunId {quoted_name(tag)} does not match the owner of parent message "
                              f"{quoted_name(parent)} ({_owner_label(inherited)})", kind, index, rule="TC-14",
                              pointer="/subagentRunId")
        owned = tag if tag is not None else inherited
        if call_id in run.tool_call_owner:
            owned = run.tool_call_owner[call_id]
            self._agree(tag, owned, kind, index, what="tool call", entity_id=call_id)
            if tag is None and inherits and inherited != owned:
                raise self._error(f"tool call {quoted_name(call_id)} belongs to {_owner_label(owned)} but its parent "
                                  f"message {quoted_name(parent)} to {_owner_label(inherited)}", kind, index,
                                  rule="TC-14", pointer="/parentMessageId")
        warnings = []
        if self._tool_call_run.get(call_id) == run.number:
            warnings.append(self._warning(f"tool call id {quoted_name(call_id)} re-used after its "
                                          "TOOL_CALL_END in this run",
                                          kind, index, code="TC-05/AGUI205", pointer="/toolCallId"))
        run.tool_calls[call_id] = owned
        run.tool_call_owner[call_id] = owned
        self._tool_call_run[call_id] = run.number
        return warnings

    def tool_args(self, index: int, tool_call_id: str, owner: _Owner) -> list[StreamWarning]:
        """TOOL_CALL_ARGS: continues an open tool call."""
        open_ids = self._run.tool_calls
        if tool_call_id in open_ids and (owner is None or owner == open_ids[tool_call_id]) and self._phase in KEEPS:
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
        if self._phase not in KEEPS:
            self._other(index, kind)
        run, call_id = self._run, tool_call_id
        warnings = []
        if call_id in run.tool_calls:
            warnings.append(self._warning(f"result for tool call {quoted_name(call_id)} "
                                          "before its TOOL_CALL_END", kind, index,
                                          code="TC-12/AGUI206", pointer="/toolCallId"))
        elif not self._tool_call_known(call_id):
            warnings.append(self._warning(f"result for tool call {quoted_name(call_id)}, unknown in this run "
                                          "and the thread",
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
        if message_id in open_ids and (owner is None or owner == open_ids[message_id]) and self._phase in KEEPS:
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
        if self._phase not in KEEPS:
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
        if self._phase not in KEEPS:
            self._other(index, kind)
        run, key = self._run, (owner, step_name)
        if key in run.steps:
            raise self._error(f"step {quoted_name(step_name)} is already open for {_owner_label(key[0])}", kind, index,
                              rule="ST-03", pointer="/stepName")
        run.steps[key] = None
        run.step_names[step_name] = run.step_names.get(step_name, 0) + 1
        return []

    def step_finished(self, index: int, step_name: str, owner: _Owner) -> list[StreamWarning]:
        """STEP_FINISHED: closes the step its owner started."""
        kind = "STEP_FINISHED"
        if self._phase not in KEEPS:
            self._other(index, kind)
        run, key = self._run, (owner, step_name)
        if key not in run.steps:
            if run.step_names.get(step_name):
                raise self._error(f"step {quoted_name(step_name)} is open under another owner than "
                                  f"{_owner_label(key[0])}; a step is finished by whoever started it", kind, index,
                                  rule="ST-04/AGUI006", pointer="/subagentRunId")
            raise self._error(f"step {quoted_name(step_name)} was not started", kind, index, rule="ST-01/AGUI006",
                              pointer="/stepName")
        del run.steps[key]
        run.step_names[step_name] -= 1
        if not run.step_names[step_name]:
            del run.step_names[step_name]
        return []

    def subagent_started(self, index: int, subagent_run_id: str, parent: str | None) -> list[StreamWarning]:
        """SUBAGENT_STARTED: a new invocation (its id once per run), under a parent started in this run."""
        kind = "SUBAGENT_STARTED"
        if self._phase not in KEEPS:
            self._other(index, kind)
        run, sub = self._run, subagent_run_id
        if sub in run.subagents:
            raise self._error(f"subagent {quoted_name(sub)} is already active", kind, index, rule="SA-02/AGUI601",
                              pointer="/subagentRunId")
        if sub in run.closed_subagents:
            raise self._error(f"subagent {quoted_name(sub)} already ran in this run; ids "
                              "are per invocation", kind, index,
                              rule="SA-02/AGUI601", pointer="/subagentRunId")
        if parent is not None and parent not in run.subagents and parent not in run.closed_subagents:
            raise self._error(f"parentSubagentRunId {quoted_name(parent)} was not started in this run", kind, index,
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
        if self._phase not in KEEPS:
            self._other(index, kind)
        run = self._run
        if sub not in run.subagents:
            raise self._error(f"subagent {quoted_name(sub)} "
                              "is not active", kind, index, rule=rule, pointer="/subagentRunId")
        del run.subagents[sub]
        run.closed_subagents.add(sub)

    def activity_snapshot(self, index: int, message_id: str, owner: _Owner,
                          replace: bool | None) -> list[StreamWarning]:
        """ACTIVITY_SNAPSHOT: only a replacing snapshot re-mints, and so re-owns, an existing activity (AC-08)."""
        if self._phase not in KEEPS:
            self._other(index, "ACTIVITY_SNAPSHOT")
        run = self._run
        if message_id not in run.activity_owner or replace is not False:
            run.activity_owner[message_id] = owner
        return []

    def activity_delta(self, index: int, message_id: str, owner: _Owner) -> list[StreamWarning]:
        """ACTIVITY_DELTA: its tag must agree with the activity's owner."""
        kind = "ACTIVITY_DELTA"
        if self._phase not in KEEPS:
            self._other(index, kind)
        run = self._run
        if message_id in run.activity_owner:
            self._agree(owner, run.activity_owner[message_id], kind, index, what="activity", entity_id=message_id,
                        rule="AC-08/AGUI606")
        return []

    def _continue(self, open_ids: dict[str, _Owner], entity_id: str, tag: _Owner, kind: str, index: int, *,
                  what: str, rule: str, pointer: str) -> None:
        """A CONTENT or ARGS: the entity must be open, and an owner tag, if any, must agree."""
        if self._phase not in KEEPS:
            self._other(index, kind)
        if entity_id not in open_ids:
            raise self._error(f"no open {what} {quoted_name(entity_id)}", kind, index, rule=rule, pointer=pointer)
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
            raise self._error(f"subagentRunId {quoted_name(tag)} does not match the owner of {what} "
                              f"{quoted_name(entity_id)} "
                              f"({_owner_label(owner)})", kind, index, rule=rule, pointer="/subagentRunId")

    def _reasoning_open(self, open_ids: dict[str, _Owner], message_id: str, tag: _Owner, kind: str, index: int, *,
                        what: str) -> None:
        if self._phase not in KEEPS:
            self._other(index, kind)
        run = self._run
        if message_id in open_ids:
            raise self._error(f"{what} {quoted_name(message_id)} is already open", kind, index, rule="RS-04",
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
        (the handlers test ``KEEPS`` first: most events arrive while a run is running)."""
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



def _owner_label(owner: _Owner) -> str:
    return "the parent agent" if owner is None else f"subagent {quoted_name(owner)}"
