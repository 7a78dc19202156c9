"""The records a fold keeps of runs, steps, subagents and failures (frozen, except the running run's)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

import attrs
from attrs import frozen

from ...wire.types import run as rn
from ...wire.types.base import JSON, brief_repr

__all__ = ["Outcome", "RunErrorInfo", "StepRecord", "SubagentRecord", "RunRecord", "note_added", "note_removed",
           "sum_usage"]

Outcome = Literal["success", "interrupt", "cancelled", "error"]

# --------------------------------------------------------------------------------------------------
# Records handed out
# --------------------------------------------------------------------------------------------------


@frozen(kw_only=True)
class RunErrorInfo:
    """What a ``RUN_ERROR`` said.

    Attributes:
        message: the error's message, for a person.
        code: its code, if it gave one.
        late: whether it surfaced after the run had finished (CL-02).
        usage: the token usage it reported. A late error's is kept here only: the spec does not say
            whether it repeats the finished run's or adds to it, so it is never added to a total (TU-07).
    """

    message: str
    code: str | None = None
    late: bool = False
    usage: tuple[rn.TokenUsage, ...] = ()

    # (the agent's message may be of any size: a preview, as a message's repr shows its text)
    __repr__ = brief_repr


@frozen(kw_only=True)
class StepRecord:
    """A step the run went through."""

    name: str
    subagent_run_id: str | None = None
    finished: bool = False


@frozen(kw_only=True)
class SubagentRecord:
    """One subagent invocation as the thread last saw it.

    Attributes:
        status: ``running``, ``success``, ``suspended`` or ``error``.
        interrupt_ids: for a suspended subagent, the run-level interrupts it raised (named in its
            outcome, or carrying its ``subagentRunId``).
    """

    subagent_run_id: str
    name: str
    run_id: str | None
    status: Literal["running", "success", "suspended", "error"] = "running"
    description: str | None = None
    parent_subagent_run_id: str | None = None
    parent_tool_call_id: str | None = None
    parent_message_id: str | None = None
    result: JSON = None
    interrupt_ids: tuple[str, ...] = ()
    error: RunErrorInfo | None = None


@attrs.define(kw_only=True)
class RunRecord:
    """The mutable record of one run while it is folded (``RunResult`` is its frozen view).

    Reached through ``ThreadState.runs`` and ``last_run``; read it, never change it.
    """

    run_id: str
    thread_id: str
    outcome: Outcome | None = None
    result: JSON = None
    interrupts: tuple[rn.Interrupt, ...] = ()
    pending_tool_call_ids: tuple[str, ...] = ()
    usage: tuple[rn.TokenUsage, ...] = ()
    error: RunErrorInfo | None = None
    late_error: RunErrorInfo | None = None
    steps: list[StepRecord] = attrs.Factory(list)
    open_steps: dict[tuple[str | None, str], list[int]] = attrs.Factory(dict)  # (owner, name) -> indexes in steps
    started_tool_calls: dict[str, None] = attrs.Factory(dict)  # an ordered set
    answered_tool_calls: set[str] = attrs.Factory(set)
    snapshot_tool_calls: set[str] = attrs.Factory(set)  # started: first named by a snapshot (TC-17)
    # Which ids the run found in the thread, kept as what changed since it started (a copy of every
    # id per run would cost time and memory in the thread's length, for every run): ``born`` were
    # added by the run, ``removed_before`` were there at its start and are gone.
    born: set[str] = attrs.Factory(set)
    removed_before: set[str] = attrs.Factory(set)
    # The ids the run added, in the order it added them, as it added them: a message a later
    # ``MESSAGES_SNAPSHOT`` dropped keeps its id here (the list only grows at its end, which
    # ``MessageLog.rename``'s index relies on). ``new_message_ids`` is the view a caller reads.
    added_message_ids: list[str] = attrs.Factory(list)
    # The messages the run streamed into (TEXT_MESSAGE_START on them, or a TOOL_CALL_START under them),
    # in order: the only ones whose calls a snapshot may add as started (TC-17, issue 17 item 13). Held
    # as their entries (``Entry``), whose ids are read when a snapshot comes: a message renamed
    # (``MessageLog.rename``) keeps its place without the dict being built again.
    streamed: dict[Any, None] = attrs.Factory(dict)
    terminated: bool = False
    parent_run_id: str | None = None
    protocol_version: str | None = None
    # The run's CUSTOM on_interrupt events, as (value, rawEvent, subagentRunId), the first
    # ``legacy.MAX_ASKS`` of them (``None`` until one arrives), and how many there were.
    legacy_asks: list[tuple[JSON, JSON, str | None]] | None = None
    legacy_asked: int = 0
    #: The legacy bridge that read this run's interrupts (its wire outcome was success), if any.
    bridged: str | None = None

    @property
    def new_message_ids(self) -> tuple[str, ...]:
        """The ids of the messages the run added that the thread held when it ended (while it runs: that
        it holds), in the order the run added them: what ``RunResult.new_message_ids`` says for a
        response of one run (the result reads it here).

        A message the run streamed and a ``MESSAGES_SNAPSHOT`` of the same run dropped (ag-ui-langgraph's
        closing snapshot restates the answer under another id) is no message of the thread: the record
        does not name it. Read when asked, from what the run kept as it went (``born``), never per event.
        """
        # (one subset test of the ids, in C, and a lookup per id only when the run dropped one)
        born = self.born
        unique = dict.fromkeys(self.added_message_ids)
        return tuple(unique) if unique.keys() <= born else tuple(i for i in unique if i in born)


# --------------------------------------------------------------------------------------------------
# Mutable internals
# --------------------------------------------------------------------------------------------------


def note_added(run: RunRecord, message_id: str) -> bool:
    """An id the thread did not hold was added while ``run`` runs; ``True`` when the run did not find it."""
    removed = run.removed_before
    if message_id in removed:
        removed.discard(message_id)  # (there at the start, gone, and back: not the run's)
        return False
    run.born.add(message_id)
    return True


def note_removed(run: RunRecord, message_id: str) -> None:
    """An id left the thread while ``run`` runs."""
    if message_id in run.born:
        run.born.discard(message_id)
    else:
        run.removed_before.add(message_id)



def sum_usage(entries: Iterable[rn.TokenUsage]) -> rn.TokenUsage:
    """Sum token counts across entries; a field no entry reported stays ``None`` (TU-02, TU-05)."""
    totals: dict[str, int | None] = {name: None for name in (
        "input_tokens", "output_tokens", "total_tokens", "reasoning_tokens", "cached_input_tokens",
        "cache_write_input_tokens")}
    for usage in entries:
        for name in totals:
            value = getattr(usage, name)
            if value is not None:
                totals[name] = (totals[name] or 0) + value
    return rn.TokenUsage(
        input_tokens=totals["input_tokens"], output_tokens=totals["output_tokens"], total_tokens=totals["total_tokens"],
        reasoning_tokens=totals["reasoning_tokens"], cached_input_tokens=totals["cached_input_tokens"],
        cache_write_input_tokens=totals["cache_write_input_tokens"])
