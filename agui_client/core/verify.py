"""The sequence rules of a run stream: one mutable state machine, O(1) per event.

Theory of operation
-------------------
A stream holds one or more runs, one after another (LC-06). Where the stream stands is its
*phase* (``idle``, ``running``, ``finished``, ``errored``, ``late-error``), and which run-lifecycle
event a phase admits is data, in the table of ``core/phases.py`` (:data:`TRANSITIONS`, drawn there),
in the manner of h11's state tables.

Inside a run, the *id rules* are code, in ``core/id_rules.py``: a ``match`` on the event's class keeps the open text
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
from typing import Any

from typing_extensions import assert_never

from .._inert import quoted_name
from ..errors import StreamEnded, StreamWarning
from ..wire.types import events as ev
from ..wire.types.run import (
    PROTOCOL_VERSION,
    Interrupt,
    RunFinishedCancelledOutcome,
    RunFinishedInterruptOutcome,
    RunFinishedOutcome,
    RunFinishedSuccessOutcome,
)
from .id_rules import IdRules, RunScope
from .interrupts import listed_ids
from .phases import KEEPS, TERMINATED, TRANSITIONS, Phase, PhaseRow, Violation
from .roster import Roster

__all__ = ["RunVerifier", "Phase", "PhaseRow", "Violation", "TRANSITIONS"]

_SEEDED = -1  # the run number recorded for ids learnt from history (snapshots, the input echo)
# Two numeric components, ASCII digits without leading zeros ("1.0", "0.10"); anything else is uninterpretable.
_VERSION = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)")


def _version_key(major: str, minor: str) -> tuple[int, str, int, str]:
    # Without leading zeros, the longer numeral is the larger, and numerals of one length compare as text:
    # no int() of a producer's numeral (Python refuses to convert one of over 4300 digits).
    return len(major), major, len(minor), minor


_SPOKEN = _version_key(*PROTOCOL_VERSION.split("."))





class RunVerifier(IdRules):
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
        self._run = RunScope(number=0)
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
        return self._phase in TERMINATED

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
            *(f"message {quoted_name(i)}" for i in run.messages),
            *(f"tool call {quoted_name(i)}" for i in run.tool_calls),
            *(f"reasoning message {quoted_name(i)}" for i in run.reasoning_messages),
            *(f"reasoning span {quoted_name(i)}" for i in run.reasoning_spans),
            *(f"step {quoted_name(name)}" + ("" if owner is None else f" of subagent {quoted_name(owner)}")
              for owner, name in run.steps),
            *(f"subagent {quoted_name(i)}" for i in run.subagents),
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
        self._run = RunScope(number=self._run.number + 1, run_id=run_id, thread_id=thread_id)
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
            warnings.append(self._warning(f"threadId {quoted_name(thread_id)} differs from RUN_STARTED's "
                                          f"{quoted_name(run.thread_id)}", kind, index, code="LC-07/AGUI008",
                                          pointer="/threadId"))
        if run.run_id is not None and run_id != run.run_id:
            warnings.append(self._warning(f"runId {quoted_name(run_id)} differs from RUN_STARTED's "
                                          f"{quoted_name(run.run_id)}", kind,
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
        if self._phase not in KEEPS:
            self._other(index, kind)
        return []

    # -- the handlers: snapshots (the id rules are in IdRules) -------------------------------

    def messages_snapshot(self, index: int, roster: Roster) -> list[StreamWarning]:
        """MESSAGES_SNAPSHOT: the snapshot restates the conversation, so its owners replace the recorded ones."""
        if self._phase not in KEEPS:
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
                warnings.append(self._warning(f"pendingToolCallIds: {quoted_name(call_id)} "
                                              f"{problem}", "RUN_FINISHED", index,
                                              code="TC-18", pointer=f"/outcome/pendingToolCallIds/{n}"))
        return warnings

    def _protocol_version(self, declared: str, index: int) -> list[StreamWarning]:
        # PV-03: a declaration outside the MAJOR.MINOR grammar is handled like a newer one: proceed,
        # and warn. PV-04: an older one is a downgrade to notice quietly.
        match = _VERSION.fullmatch(declared)
        if match is None:
            message = (f"protocolVersion {quoted_name(declared)} is not MAJOR.MINOR; read as newer than "
                       f"{PROTOCOL_VERSION}")
        elif _version_key(match[1], match[2]) > _SPOKEN:
            message = (f"protocolVersion {quoted_name(declared)} is newer than {PROTOCOL_VERSION}, the version "
                       "this client speaks")
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





#: How many ids a message lists, and how much of each (a stream may leave a hundred thousand open).
_LISTED, _ID_CHARS = 10, 100


def _some(ids: Iterable[Any]) -> str:
    """The first :data:`_LISTED` of ``ids``, each as ``repr`` cut at :data:`_ID_CHARS`, and how many more."""
    listed = list(ids)
    shown = [repr(i) if len(repr(i)) <= _ID_CHARS else repr(i)[:_ID_CHARS - 4] + "...'" for i in listed[:_LISTED]]
    more = len(listed) - _LISTED
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")
