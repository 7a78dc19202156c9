"""The run ledger: the thread's runs, their outcomes, usage, steps, subagents, and what stays open.

A run that ends with the interrupt outcome leaves its interrupts open (with the run that raised
them) until a later run ends otherwise; a successful run leaves the frontend tool calls it did not
answer pending. A ``RUN_ERROR`` after the run finished is the one late error the protocol admits
(CL-02): surfaced, it reopens and clears nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from ...errors import StreamWarning
from ...wire.types import messages as msg
from ...wire.types import run as rn
from ...wire.types.base import JSON
from .. import legacy
from ..interrupts import NO_INTERRUPTS, KeptInterrupts
from .document import StateDocument
from .entries import Entry
from .log import MessageLog
from .records import RunErrorInfo, RunRecord, StepRecord, SubagentRecord

__all__ = ["RunLedger"]

_NO_WARNINGS: tuple[StreamWarning, ...] = ()


class RunLedger:
    """The runs folded into a thread and what they left: interrupts, pending calls, usage, subagents.

    Args:
        runs: the list of runs (shared with the message log, which tells the running run what it adds).
        log: the thread's messages (an input echo adds history; pending calls are read against results).
        document: the state document (a run starts a fresh copy allowance for its patches).
    """

    def __init__(self, runs: list[RunRecord], log: MessageLog, document: StateDocument) -> None:
        self.runs = runs
        self.log = log
        self.document = document
        self.thread_id: str | None = None
        #: The open interrupts, the ledger's own copies (see :attr:`open_interrupts`).
        self.kept: KeptInterrupts = NO_INTERRUPTS
        self.interrupted_run_id: str | None = None
        self.usage: dict[str, tuple[rn.TokenUsage, ...]] = {}
        self.subagents: dict[str, SubagentRecord] = {}
        #: The steps the runs hold, counted as they start (a step is never let go of while its run is held).
        self.step_count = sum(len(run.steps) for run in runs)
        self.pending: tuple[str, ...] = ()
        #: The legacy bridge in force (``"langgraph"``), set by the thread's owner; ``None``: none.
        self.legacy: str | None = None
        #: How the open interrupts were asked: ``"langgraph"`` when the bridge read them (their answers
        #: then travel in its channel), ``None`` for the interrupt outcome.
        self.open_via: str | None = None
        #: The runs whose usage and the subagents whose records were written since the mark (what the
        #: next save of the changes merges: ``ThreadState.changes``); every one, for a thread never marked.
        self.usage_touched: set[str] = set()
        self.subagents_touched: set[str] = set()

    def mark(self) -> None:
        """What the ledger holds is what the store holds: count the usage and subagents written from here."""
        self.usage_touched.clear()
        self.subagents_touched.clear()

    @property
    def open_interrupts(self) -> tuple[rn.Interrupt, ...]:
        """The open interrupts as the ledger holds them: its own, never handed out (``kept.handed_out()``
        makes a caller's copies)."""
        return self.kept.interrupts

    @property
    def last_run(self) -> RunRecord | None:
        """The most recent run, if any."""
        return self.runs[-1] if self.runs else None

    def pending_tool_call_ids(self) -> tuple[str, ...]:
        """Frontend tool calls the last successful run left for the consumer, still without a result."""
        pending = self.pending
        if not pending:
            return ()
        answered = self.log.answered(pending)
        return tuple(c for c in pending if c not in answered)

    def hold_interrupts(self, interrupts: Sequence[rn.Interrupt], run_id: str | None, *, plain: bool = False) -> None:
        """Hold interrupts open: those of a run the session had to reject (IR-06, IR-27), a loaded
        record's, or a new thread's; one per id, the first.

        An answer names an interrupt by id, so a repeated id is one question to cover: a second copy
        could never be answered apart, and a resume covering both would name the id twice. Every way
        interrupts reach a thread comes through here but :meth:`run_finished`: an accepted interrupt
        outcome, whose ids the verifier found distinct (IR-06 refuses a repeat, and the refusal comes
        here), and the legacy bridge's, distinct by construction (``legacy.bridge`` keeps a repeated
        LangGraph id's first question, and the ids it makes never take one), so a stream and a record
        listing the same interrupts hold the same ones.

        ``plain``: their dicts are plain JSON a parser made (a store's record), copied without a walk."""
        first: dict[str, rn.Interrupt] = {}
        for interrupt in interrupts:
            first.setdefault(interrupt.id, interrupt)
        self.kept = KeptInterrupts(first.values(), plain=plain)  # (its own: see KeptInterrupts)
        self.interrupted_run_id = run_id
        self.open_via = None

    def clear_open_interrupts(self) -> None:
        """Forget the open interrupts (after a resume was sent and its run moved the thread on)."""
        self.kept = NO_INTERRUPTS
        self.interrupted_run_id = None
        self.open_via = None

    def open_rejected_run(self, run_id: str | None) -> None:
        """Record a run the producer refused before starting it (a response opening with RUN_ERROR).

        LC-02: the RUN_ERROR that follows is that run's failure, not a late error of the thread's
        previous run; what the thread holds open (interrupts, pending calls) stays as it was.
        """
        self._forget_streamed()
        self.runs.append(RunRecord(run_id=run_id or "", thread_id=self.thread_id or ""))

    def _forget_streamed(self) -> None:
        """Let the last run's record go of the messages it streamed into, as another run starts.

        Only the running run reads them (a snapshot it meets, TC-17), and they are held as the entries
        themselves: a record the thread keeps would otherwise keep each one, text and all, after a later
        ``MESSAGES_SNAPSHOT`` dropped it from the thread (a closing snapshot restating the streamed answer
        under another id, as ag-ui-langgraph sends, did so at every run).
        """
        runs = self.runs
        if runs and runs[-1].streamed:
            runs[-1].streamed.clear()

    # -- the handlers -----------------------------------------------------------------------------

    def run_started(self, run_id: str, thread_id: str, parent_run_id: str | None, protocol_version: str | None,
                    echoed: Sequence[msg.Message]) -> Sequence[StreamWarning]:
        """RUN_STARTED: a new run; the input's messages it echoes are history (LC-17): only ids the
        thread does not hold are added."""
        if self.thread_id is None:
            self.thread_id = thread_id
        self.document.new_run()
        self._forget_streamed()
        run = RunRecord(run_id=run_id, thread_id=thread_id, parent_run_id=parent_run_id,
                        protocol_version=protocol_version)
        self.runs.append(run)
        if echoed:
            log = self.log
            for message in echoed:
                if message.id not in log.by_id:
                    log.insert(Entry.of(message))
            log.changed()
        return _NO_WARNINGS

    def run_finished(self, usage: tuple[rn.TokenUsage, ...] | None, outcome: rn.RunFinishedOutcome | None,
                     result: JSON, parsed: bool = False) -> Sequence[StreamWarning]:
        """RUN_FINISHED: the run's outcome; what it leaves open replaces what the thread held open.

        ``parsed``: the outcome's JSON is as a parser made it (the event came off the wire), so the
        interrupts' dicts are copied without a walk (see :class:`~agui_client.core.interrupts.KeptInterrupts`)."""
        run = self.last_run
        if run is None:
            return _NO_WARNINGS
        run.terminated = True
        if usage is not None:
            run.usage = usage
            self.usage[run.run_id] = usage
            self.usage_touched.add(run.run_id)
        self.open_via = None
        warnings: Sequence[StreamWarning] = _NO_WARNINGS
        if run.legacy_asks and self.legacy is not None and not isinstance(
                outcome, (rn.RunFinishedInterruptOutcome, rn.RunFinishedCancelledOutcome)):
            # The bridge (opt-in): a success that carried on_interrupt events is read as the interrupt
            # outcome the producer would send in 1.0 mode, and its interrupts are held open as any.
            asked = legacy.bridge(run.legacy_asks, run.run_id, self.subagents)
            outcome = rn.RunFinishedInterruptOutcome(interrupts=asked)
            parsed = False  # (built here, from events that may have come either way)
            run.bridged = self.open_via = self.legacy
            warnings = legacy.unkept(run.legacy_asked, len(run.legacy_asks)) or _NO_WARNINGS
        match outcome:
            case rn.RunFinishedInterruptOutcome():
                run.outcome = "interrupt"
                run.interrupts = outcome.interrupts  # (handed out with the result and the event)
                self.kept = KeptInterrupts(outcome.interrupts, plain=parsed)
                self.interrupted_run_id = run.run_id
                self._link_suspended(outcome.interrupts)
                return warnings
            case rn.RunFinishedCancelledOutcome():
                run.outcome = "cancelled"
                self.kept = NO_INTERRUPTS
                self.interrupted_run_id = None
            case rn.RunFinishedSuccessOutcome() | None:
                run.outcome = "success"
                run.result = result
                run.pending_tool_call_ids = self._pending_for(run, outcome)
                self.pending = run.pending_tool_call_ids
                self.kept = NO_INTERRUPTS
                self.interrupted_run_id = None
                # (calls the outcome names, a 1.0 field, are handed over as frontend calls on purpose:
                # only calls derived from the stream are asked about)
                derived = () if outcome is not None and outcome.pending_tool_call_ids else run.pending_tool_call_ids
                if run.legacy_asked or derived:
                    return self._asked_before_1_0(run, derived)
        return _NO_WARNINGS

    def _asked_before_1_0(self, run: RunRecord, derived: Sequence[str]) -> Sequence[StreamWarning]:
        # Looked for once, at a success's end: the on_interrupt events the CUSTOM handler counted and
        # the names of the calls left pending (the run's own handful).
        names = []
        for call_id in derived:
            call = self.log.tool_call(call_id)
            if call is not None:
                names.append((call_id, call.function.name))
        return legacy.notice(run.legacy_asked, names) or _NO_WARNINGS

    def custom(self, name: str, value: JSON, subagent_run_id: str | None, raw_event: JSON) -> Sequence[StreamWarning]:
        """CUSTOM: carries no state of its own (UK-08); a pre-1.0 ``on_interrupt`` is noted for the run's end."""
        if name == legacy.ON_INTERRUPT:
            run = self.last_run
            if run is not None and not run.terminated:
                run.legacy_asked += 1
                if run.legacy_asks is None:
                    run.legacy_asks = []
                if len(run.legacy_asks) < legacy.MAX_ASKS:
                    run.legacy_asks.append((value, raw_event, subagent_run_id))
        return _NO_WARNINGS

    def _pending_for(self, run: RunRecord, outcome: rn.RunFinishedSuccessOutcome | None) -> tuple[str, ...]:
        named = outcome.pending_tool_call_ids if outcome is not None else None
        if named:
            # TC-18: a non-empty list is the list (duplicates dropped, order kept).
            return tuple(dict.fromkeys(named))
        # TC-17: derived from the stream; a call cut mid-arguments is never offered (LC-04).
        # (a call a snapshot named may have its result in a snapshot too: asked only of those)
        answered_here, cut = run.answered_tool_calls, self.log.incomplete
        unanswered = [c for c in run.started_tool_calls if c not in answered_here and c not in cut]
        named_by_snapshot = [c for c in unanswered if c in run.snapshot_tool_calls]
        if not named_by_snapshot:
            return tuple(unanswered)
        answered = self.log.answered(named_by_snapshot)
        return tuple(c for c in unanswered if c not in answered)

    def _link_suspended(self, interrupts: Sequence[rn.Interrupt]) -> None:
        for interrupt in interrupts:
            if interrupt.subagent_run_id is None:
                continue
            record = self.subagents.get(interrupt.subagent_run_id)
            if record is not None and interrupt.id not in record.interrupt_ids:
                self.subagents[record.subagent_run_id] = attrs.evolve(
                    record, interrupt_ids=(*record.interrupt_ids, interrupt.id))
                self.subagents_touched.add(record.subagent_run_id)

    def run_error(self, message: str, code: str | None,
                  usage: tuple[rn.TokenUsage, ...] | None) -> Sequence[StreamWarning]:
        """RUN_ERROR: the run failed; after a finished run, the one late error (CL-02)."""
        run = self.last_run
        if run is None:
            # LC-02: a stream that opens with RUN_ERROR is the producer refusing the input.
            self.open_rejected_run(None)
            run = self.runs[-1]
        entries = usage or ()
        if run.terminated and run.outcome != "error":
            # CL-02/CL-04: the one late error is surfaced; it neither reopens nor clears anything.
            run.late_error = RunErrorInfo(message=message, code=code, late=True, usage=entries)
            if not entries:
                return _NO_WARNINGS
            # TU-07: whether this repeats the finished run's usage or adds to it is unspecified; both are
            # kept as reported and neither is silently added to the other.
            return (StreamWarning(code="TU-07", message="the late RUN_ERROR reports usage of its own: kept on "
                                  "late_error.usage, not added to the run's usage or the thread's totals (its scope "
                                  "is unspecified)", pointer="/usage"),)
        run.terminated = True
        run.outcome = "error"
        run.error = RunErrorInfo(message=message, code=code, usage=entries)
        if usage is not None:
            run.usage = usage
            self.usage[run.run_id] = usage
            self.usage_touched.add(run.run_id)
        return _NO_WARNINGS

    def step_started(self, step_name: str, owner: str | None) -> Sequence[StreamWarning]:
        """STEP_STARTED: a step of the running run."""
        run = self.last_run
        if run is not None:
            run.open_steps.setdefault((owner, step_name), []).append(len(run.steps))
            run.steps.append(StepRecord(name=step_name, subagent_run_id=owner))
            self.step_count += 1
        return _NO_WARNINGS

    def step_finished(self, step_name: str, owner: str | None) -> Sequence[StreamWarning]:
        """STEP_FINISHED: the latest open step of that name and owner is finished."""
        run = self.last_run
        if run is None:
            return _NO_WARNINGS
        # (an index, not a walk back past the finished ones)
        key = (owner, step_name)
        started = run.open_steps.get(key)
        if started:
            i = started.pop()
            if not started:
                del run.open_steps[key]
            run.steps[i] = attrs.evolve(run.steps[i], finished=True)
        return _NO_WARNINGS

    def subagent_started(self, subagent_run_id: str, name: str, description: str | None,
                         parent_subagent_run_id: str | None, parent_tool_call_id: str | None,
                         parent_message_id: str | None) -> Sequence[StreamWarning]:
        """SUBAGENT_STARTED: a subagent invocation, running."""
        run = self.last_run
        self.subagents[subagent_run_id] = SubagentRecord(
            subagent_run_id=subagent_run_id, name=name, run_id=run.run_id if run else None, description=description,
            parent_subagent_run_id=parent_subagent_run_id, parent_tool_call_id=parent_tool_call_id,
            parent_message_id=parent_message_id)
        self.subagents_touched.add(subagent_run_id)
        return _NO_WARNINGS

    def subagent_finished(self, subagent_run_id: str, outcome: rn.SubagentFinishedOutcome | None,
                          result: JSON) -> Sequence[StreamWarning]:
        """SUBAGENT_FINISHED: the invocation succeeded, or is suspended on interrupts."""
        record = self.subagents.get(subagent_run_id)
        if record is None:
            return _NO_WARNINGS
        self.subagents_touched.add(subagent_run_id)
        if isinstance(outcome, rn.SubagentFinishedSuspendedOutcome):
            ids = tuple(outcome.interrupt_ids or ())
            self.subagents[subagent_run_id] = attrs.evolve(
                record, status="suspended", result=result,
                interrupt_ids=tuple(dict.fromkeys((*record.interrupt_ids, *ids))))
        else:
            self.subagents[subagent_run_id] = attrs.evolve(record, status="success", result=result)
        return _NO_WARNINGS

    def subagent_error(self, subagent_run_id: str, message: str, code: str | None) -> Sequence[StreamWarning]:
        """SUBAGENT_ERROR: the invocation failed."""
        record = self.subagents.get(subagent_run_id)
        if record is not None:
            self.subagents[subagent_run_id] = attrs.evolve(
                record, status="error", error=RunErrorInfo(message=message, code=code))
            self.subagents_touched.add(subagent_run_id)
        return _NO_WARNINGS
