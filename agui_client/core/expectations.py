"""What a session warns of when a resuming input, or the runs of a response, are not what the thread and
the request lead it to expect: warnings only, never a refusal.

* :func:`resume_gaps`: a resuming input that leaves out the thread's messages or state (``IR-21``);
* :func:`run_started_differs`: a ``RUN_STARTED`` naming another thread, or another run than the
  request's (``LC-08``);
* :func:`another_run`: a second run in the response to one request (``LC-06``).

Each is asked once per input or per ``RUN_STARTED``, and the session locates what it says.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._inert import quoted_name
from ..errors import StreamWarning
from ..wire.types import events as ev
from ..wire.types import run as rn

if TYPE_CHECKING:
    from .fold import RunRecord, ThreadState

__all__ = ["resume_gaps", "run_started_differs", "another_run"]


def resume_gaps(state: ThreadState, run_input: rn.RunAgentInput) -> list[StreamWarning]:
    """What the resuming ``run_input`` leaves out of the thread ``state`` holds (``IR-21``)."""
    # A resuming run carries the accumulated messages and the state the interrupted run left behind,
    # as any next run does (IR-21): the agent need keep nothing between runs, so one sent less
    # continues from a conversation it no longer sees. ``Thread.run`` builds such an input; one built
    # by hand may not. Warned, not refused: the session does not send, so by the time it is given the
    # input it may already be on the wire, and an agent that keeps the thread itself may be sent less.
    found: list[StreamWarning] = []
    held = state.input_message_ids()
    if held:
        sent = {message.id for message in run_input.messages}
        missing = [message_id for message_id in held if message_id not in sent]
        if missing:
            which = (f"none of the thread's {len(held)} messages" if len(missing) == len(held) else
                     f"{len(missing)} of the thread's {len(held)} messages (first {quoted_name(missing[0])})")
            found.append(StreamWarning(
                code="IR-21", message=f"the resuming input carries {which}: the agent continues the "
                "interrupted run without them (a resuming input carries the accumulated messages, as "
                "Thread.run sends them)", pointer="/messages", run_id=run_input.run_id))
    if run_input.state in (None, {}) and state.document.value not in (None, {}):
        found.append(StreamWarning(
            code="IR-21", message="the resuming input carries no state while the thread holds the state "
            "the interrupted run left: the agent continues without it (a resuming input carries it, as "
            "Thread.run sends it)", pointer="/state", run_id=run_input.run_id))
    return found


def run_started_differs(event: ev.RunStartedEvent, expected: rn.RunAgentInput | None, state: ThreadState,
                        first: bool) -> list[StreamWarning]:
    """Where ``event`` names another thread than the request's ``expected`` (or, without one, the thread
    ``state``'s), or, as the response's ``first`` run, another run than the request's (``LC-08``)."""
    found: list[StreamWarning] = []
    # LC-08: recommended, not mandated, so a warning exposing both. Every run is compared, not only
    # the first: a later run of the same response (or of a recording replayed into a thread) that
    # names another thread is folded into this one all the same, and its outcome replaces what this
    # thread waited on, interrupts included; that must not happen unsaid.
    thread_id, whose = ((expected.thread_id, "the request's") if expected is not None
                        else (state.thread_id, "the thread's"))
    if thread_id is not None and event.thread_id != thread_id:
        found.append(StreamWarning(
            code="LC-08", message=f"RUN_STARTED threadId {quoted_name(event.thread_id)} differs from {whose} "
            f"{quoted_name(thread_id)}; the run is folded "
            "into this thread", pointer="/threadId"))
    if expected is not None and first:
        if event.run_id != expected.run_id:
            found.append(StreamWarning(
                code="LC-08", message=f"RUN_STARTED runId {quoted_name(event.run_id)} differs from the request's "
                f"{quoted_name(expected.run_id)}", pointer="/runId"))
    return found


def another_run(event: ev.RunStartedEvent, before: RunRecord, count: int) -> StreamWarning:
    """The warning that ``event`` starts another run of the response (its run ``count + 1``) after
    ``before`` ended (``LC-06``)."""
    # LC-06 lets a stream hold one run after another (a recording of a conversation), and the second
    # is read as a run of its own. A response to one request normally holds one run, so there it is
    # said: the result reports the last run, and the caller may be looking for the first.
    ended = "failed with RUN_ERROR" if before.outcome == "error" else (
        f"finished ({before.outcome})" if before.outcome is not None else "ended")
    return StreamWarning(
        code="LC-06", message=f"a second run in one response: run {quoted_name(event.run_id)} (run {count + 1} of "
        f"this response) started after run {quoted_name(before.run_id)} {ended}; one request normally yields "
        "one run, and the result reports the last", pointer="/runId", run_id=event.run_id)
