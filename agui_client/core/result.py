"""What one run came to: ``RunResult``, the record a run (one response) hands its caller.

A frozen record of the run's outcome, its interrupts, its pending tool calls, its usage and warnings,
over the thread it was folded into. ``core/session.py`` makes it (``RunSession.result()``), the messages
a response added counted over its runs by :func:`response_message_ids`; the shells return it, every
error of a run carries it, and its few readings (the run's text, its new messages, its expired
interrupts) are computed when asked, not when the run ends.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Sequence
from datetime import datetime

import attrs
from attrs import frozen

from .._inert import quoted_name
from ..errors import RunFailed, StreamWarning
from ..wire.types import messages as msg
from ..wire.types import run as rn
from ..wire.types.base import JSON
from .expiry import is_expired
from .fold import Outcome, RunErrorInfo, RunRecord, StepRecord, ThreadState, sum_usage
from .interrupts import listed_ids

__all__ = ["RunResult", "response_message_ids"]


@frozen(kw_only=True)
class RunResult:
    """What one run (one response) came to.

    Example::

        result = thread.run("hello")
        print(result.outcome)  # "success", "interrupt", "cancelled" or "error"
        print(result.text)  # the text of the assistant messages this run added
        print(result.total_usage.input_tokens, result.total_usage.output_tokens)  # None: not reported
        print(result.events, [warning.code for warning in result.warnings])
        result.raise_for_outcome()  # RunFailed when the run ended with RUN_ERROR

    Attributes:
        thread_id: the thread.
        run_id: the (last) run of the response.
        outcome: ``"success"``, ``"interrupt"``, ``"cancelled"`` or ``"error"``; ``None`` when the run never
            reached a terminal event (the error that says so carries this result).
        interrupts: the interrupts the run stopped for (interrupt outcome).
        pending_tool_call_ids: frontend tool calls the run left for the consumer (success outcome).
        result: the run's return value (success outcome).
        error: the ``RUN_ERROR`` that ended the run, if it failed.
        late_error: a ``RUN_ERROR`` that surfaced after the run had finished (CL-02); the outcome stands.
        usage: token usage this run reported (only its own: usage does not carry across runs).
        new_message_ids: the ids of the messages the run added to the thread and that it still holds (a
            later ``MESSAGES_SNAPSHOT`` may drop one), in the order the run added them (over a response of
            several runs, one a run dropped and a later run added again where the later one did). (The reference
            client lists its new messages in the thread's order: a tool result placed after its call's
            message comes before messages added since.)
        state: the thread after the run (live: it changes as later runs are folded into it).
        warnings: everything tolerated, dropped or repaired while reading the run.
        steps: the steps the run went through.
        events: how many events the response carried.
        run_ids: every run the response held, in order (a recorded multi-run stream).
        bridged: ``"langgraph"`` when the legacy bridge read the run's interrupts: the wire said
            success (a bare ``RUN_FINISHED`` after ``CUSTOM on_interrupt``), and ``outcome`` is
            ``"interrupt"``, as the producer in 1.0 mode would have said (docs/legacy-interrupts.md).
    """

    thread_id: str | None
    run_id: str | None
    outcome: Outcome | None
    interrupts: tuple[rn.Interrupt, ...] = ()
    pending_tool_call_ids: tuple[str, ...] = ()
    result: JSON = None
    error: RunErrorInfo | None = None
    late_error: RunErrorInfo | None = None
    usage: tuple[rn.TokenUsage, ...] = ()
    new_message_ids: tuple[str, ...] = ()
    state: ThreadState = attrs.field(repr=False)
    warnings: tuple[StreamWarning, ...] = ()
    steps: tuple[StepRecord, ...] = ()
    events: int = 0
    run_ids: tuple[str, ...] = ()
    bridged: str | None = None

    def __repr__(self) -> str:
        # Which run, how it ended and how much it carried, as httpx shows a response: attrs' repr printed
        # every interrupt whole, schemas and messages included, and the run's return value (a megabyte in a
        # REPL or a log line). Ids and counts, the agent's words in the error as a preview.
        # ``attrs.asdict(result, filter=...)`` (``state`` left out: it is live) gives every field.
        shown = [f"<RunResult thread_id={quoted_name(self.thread_id)} run_id={quoted_name(self.run_id)}",
                 f"outcome={quoted_name(self.outcome)}"]
        if self.interrupts:
            shown.append(f"interrupts={listed_ids([i.id for i in self.interrupts])}")
        if self.pending_tool_call_ids:
            shown.append(f"pending_tool_calls={listed_ids(self.pending_tool_call_ids)}")
        for name, error in (("error", self.error), ("late_error", self.late_error)):
            if error is not None:
                shown.append(f"{name}={error!r}")
        if len(self.run_ids) > 1:
            shown.append(f"runs={len(self.run_ids)}")
        if self.bridged is not None:
            shown.append(f"bridged={quoted_name(self.bridged)}")
        shown.append(f"new_messages={len(self.new_message_ids)} events={self.events} warnings={len(self.warnings)}>")
        return " ".join(shown)

    @property
    def messages(self) -> tuple[msg.Message, ...]:
        """The thread's messages after the run."""
        return self.state.messages

    @property
    def new_messages(self) -> tuple[msg.Message, ...]:
        """The messages the run added, as the thread holds them (live, like ``state``; frozen on first read).

        Built when asked, not when the run ends: a caller that only wants the outcome does not pay
        for typed copies of every message a long run streamed.
        """
        return self.state.messages_for(self.new_message_ids)

    @property
    def text(self) -> str:
        """The text of the assistant messages this run added, joined by blank lines."""
        return "\n\n".join(m.content for m in self.new_messages
                           if isinstance(m, msg.AssistantMessage) and m.content)

    @property
    def pending_tool_calls(self) -> tuple[msg.ToolCall, ...]:
        """The tool calls named by ``pending_tool_call_ids`` (those the thread holds)."""
        calls = (self.state.tool_call(i) for i in self.pending_tool_call_ids)
        return tuple(c for c in calls if c is not None)

    @property
    def total_usage(self) -> rn.TokenUsage:
        """This run's usage summed over providers."""
        return sum_usage(self.usage)

    def expired_interrupts(self, now: datetime | Callable[[], datetime] | None = None) -> tuple[str, ...]:
        """Ids of this run's interrupts that have expired at ``now`` (default: the current UTC time)."""
        return tuple(i.id for i in self.interrupts if is_expired(i, now))

    def raise_for_outcome(self) -> RunResult:
        """Raise ``RunFailed`` if the run ended with ``RUN_ERROR``; return ``self`` otherwise."""
        if self.outcome == "error" and self.error is not None:
            failed = RunFailed(self.error.message, run_id=self.run_id, code=self.error.code)
            # (as every error of a run carries the run: an `except AguiError` that keeps `.result` keeps
            # this one too, with what the agent said before it failed)
            failed.result = self
            raise failed
        return self


def response_message_ids(runs: Sequence[RunRecord], held: Container[str]) -> tuple[str, ...]:
    """The ids of the messages a response of ``runs`` (the thread's runs it folded, in order) added that
    the thread still holds (``held``): its ``RunResult.new_message_ids``."""
    # Each run's new messages are its record's (``RunRecord.new_message_ids``: those it added that
    # the thread still holds; a message a later MESSAGES_SNAPSHOT of the run dropped, as
    # ag-ui-langgraph's closing snapshot drops the answer it streamed under another id, is not one,
    # as for the reference). A response of several runs says them together, less what a later run
    # dropped and what the thread held before the response (``_not_held_before``). A run names only
    # ids the thread did not hold when it added them: one two runs name was dropped between them and
    # stands where the later run added it again, so the last naming places it.
    if len(runs) > 1:
        joined = _not_held_before(runs, [i for r in runs for i in r.new_message_ids])
        return tuple(i for i in reversed(dict.fromkeys(reversed(joined))) if i in held)
    return runs[0].new_message_ids if runs else ()


def _not_held_before(runs: Sequence[RunRecord], new_ids: list[str]) -> list[str]:
    """``new_ids`` less those the thread held when the response began.

    Each run counts as new what it did not find at its own start. An id the thread held before the
    response, dropped by one run's ``MESSAGES_SNAPSHOT`` and brought back by a later run's, is one a later
    run did not find: it is no message the response added (the reference's ``newMessages`` are the ids
    held at the end that were not held before the response). Such an id is one a run found at its start
    and removed (``removed_before``) that no earlier run added. Once per result, and only for a response of
    several runs.
    """
    before: set[str] = set()
    born: set[str] = set()
    for run in runs:
        if run.removed_before:
            before.update(run.removed_before - born)
        born.update(run.born)
    return [i for i in new_ids if i not in before] if before else new_ids
