"""What a resuming run sends, and what one response may hold, through both shells against a real
``ScriptedAgent`` on 127.0.0.1: the agent records each request, so what was sent is read from the wire.
"""

from __future__ import annotations

from typing import Any

import pytest

import agui_client as ag
from agui_client.testing import Finish, ScriptedAgent, Start

__all__: list[str] = []


def ask_then_finish() -> ScriptedAgent:
    """The first run raises interrupt ``i1``; the second finishes."""
    asked = Finish(outcome=ag.RunFinishedInterruptOutcome(interrupts=(ag.Interrupt(id="i1", reason="approval"),)))
    return ScriptedAgent([[Start(), asked], [Start(), Finish()]], stateless=True)


def test_a_cancelled_entry_given_a_payload_warns_and_is_sent_without_it(drive: Any, served: Any) -> None:
    endpoint = served(ask_then_finish())

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        thread.run("delete the staging database")
        entry = ag.ResumeEntry(interrupt_id="i1", status="cancelled", payload={"approved": True},
                               metadata={"by": "ops"})
        with pytest.warns(ag.AguiWarning) as warned:
            result = thread.run(resume=[entry])

    [warning] = [str(w.message) for w in warned if "IR-11" in str(w.message)]
    assert "'i1'" in warning and "cancelled" in warning
    assert entry.payload == {"approved": True}  # (the caller's object is left as it is)
    # Abandoning answers nothing: the entry goes out with its envelope and without the payload.
    assert endpoint.received[-1].body["resume"] == [{"interruptId": "i1", "status": "cancelled",
                                                     "metadata": {"by": "ops"}}]
    assert result.outcome == "success"


def two_runs(thread_id: str) -> ScriptedAgent:
    """One response holding two runs: the request's run fails, then run ``r2`` starts and finishes."""
    return ScriptedAgent([[
        Start(),
        ag.RunErrorEvent(message="overloaded, retrying"),
        ag.RunStartedEvent(thread_id=thread_id, run_id="r2"),
        ag.TextMessageStartEvent(message_id="m2"),
        ag.TextMessageContentEvent(message_id="m2", delta="done on the second try"),
        ag.TextMessageEndEvent(message_id="m2"),
        ag.RunFinishedEvent(thread_id=thread_id, run_id="r2", result={"ok": True}),
    ]], stateless=True)


def test_a_second_run_in_one_response_is_read_as_the_run_and_warned_naming_it(drive: Any, served: Any) -> None:
    endpoint = served(two_runs("t-two-runs"))

    with drive.client(endpoint.url) as client:
        result = client.thread("t-two-runs").run("hello")

    first = endpoint.agent.requests[0].run_id
    # The result is the last run's.
    assert (result.run_id, result.outcome, result.result, result.error) == ("r2", "success", {"ok": True}, None)
    assert result.run_ids == (first, "r2")
    assert result.text == "done on the second try"
    [warning] = [w for w in result.warnings if w.code == "LC-06"]
    assert (warning.run_id, warning.index, warning.event_type) == ("r2", 2, "RUN_STARTED")
    assert "'r2'" in warning.message and repr(first) in warning.message and "RUN_ERROR" in warning.message


def test_a_later_run_of_one_response_on_another_thread_is_warned_about(drive: Any, served: Any) -> None:
    # The request's run stops to ask; the same response then runs thread 'elsewhere' to success. That
    # run is folded into this thread (its success ends the wait on i1), so it must be said, naming it.
    asked = Finish(outcome=ag.RunFinishedInterruptOutcome(interrupts=(ag.Interrupt(id="i1", reason="approval"),)))
    endpoint = served(ScriptedAgent([[
        Start(), asked,
        ag.RunStartedEvent(thread_id="elsewhere", run_id="r2"),
        ag.RunFinishedEvent(thread_id="elsewhere", run_id="r2"),
    ]], stateless=True))

    with drive.client(endpoint.url) as client:
        result = client.thread("t-mine").run("transfer the funds")

    [warning] = [w for w in result.warnings if w.code == "LC-08"]
    assert (warning.run_id, warning.index, warning.event_type, warning.pointer) == ("r2", 2, "RUN_STARTED", "/threadId")
    assert "'elsewhere'" in warning.message and "'t-mine'" in warning.message


def test_one_run_per_response_gives_no_such_warning(drive: Any, served: Any) -> None:
    endpoint = served(ask_then_finish())

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        results = [thread.run("go"), thread.run(resume=[ag.ResumeEntry(interrupt_id="i1", status="cancelled")])]

    assert [w for r in results for w in r.warnings if w.code == "LC-06"] == []


RECORDING = b"".join(b"data: " + line + b"\n\n" for line in (
    b'{"type":"RUN_STARTED","threadId":"t","runId":"r1"}',
    b'{"type":"RUN_FINISHED","threadId":"t","runId":"r1"}',
    b'{"type":"RUN_STARTED","threadId":"t","runId":"r2"}',
    b'{"type":"RUN_FINISHED","threadId":"t","runId":"r2"}',
))


def test_a_recording_of_several_runs_replays_quietly_unless_it_answers_one_request() -> None:
    # Without the request, a stream of runs is a recorded conversation (each run its own); with it, the
    # stream is one response, which normally holds one run.
    assert [w.code for w in ag.replay(RECORDING).warnings] == []
    answered = ag.replay(RECORDING, run_input=ag.RunAgentInput(thread_id="t", run_id="r1"))
    assert [(w.code, w.run_id, w.index) for w in answered.warnings] == [("LC-06", "r2", 2)]
    assert "finished (success)" in answered.warnings[0].message
    assert (answered.run_id, answered.run_ids) == ("r2", ("r1", "r2"))


def ask_with_state() -> ScriptedAgent:
    """The first run leaves state and a reply, and raises interrupt ``i1``; the next finishes."""
    asked = Finish(outcome=ag.RunFinishedInterruptOutcome(interrupts=(ag.Interrupt(id="i1", reason="approval"),)))
    return ScriptedAgent([
        [Start(), ag.StateSnapshotEvent(snapshot={"target": "staging"}),
         ag.TextMessageStartEvent(message_id="a1"), ag.TextMessageContentEvent(message_id="a1", delta="Sure?"),
         ag.TextMessageEndEvent(message_id="a1"), asked],
        [Start(), Finish()],
    ], stateless=True)


def resume_by_hand(client: ag.AgentClient, thread: ag.Thread, run_input: ag.RunAgentInput) -> ag.RunResult:
    """The path a caller with its own loop takes: its input, the thread's state, a session of its own."""
    session = ag.RunSession(thread.state, run_input=run_input)
    with client.open(run_input) as payloads:
        for payload in payloads:
            session.feed_payload(payload)
    return session.end()


CANCEL_I1 = (ag.ResumeEntry(interrupt_id="i1", status="cancelled"),)


def test_a_resuming_input_built_without_the_threads_messages_and_state_is_warned(served: Any) -> None:
    endpoint = served(ask_with_state())

    with ag.AgentClient(endpoint.url) as client:
        thread = client.thread()
        thread.run("delete the staging database")
        bare = ag.RunAgentInput(thread_id=thread.id, run_id="resume-1", resume=CANCEL_I1)
        result = resume_by_hand(client, thread, bare)

    assert endpoint.received[-1].body["messages"] == []  # sent as built: the session warns, it does not send
    warned = [(w.code, w.pointer, w.run_id) for w in result.warnings if w.code == "IR-21"]
    assert warned == [("IR-21", "/messages", "resume-1"), ("IR-21", "/state", "resume-1")]
    assert "none of the thread's 2 messages" in result.warnings[0].message
    assert result.outcome == "success"


def test_a_resuming_input_that_carries_them_is_not_warned(served: Any) -> None:
    endpoint = served(ask_with_state())

    with ag.AgentClient(endpoint.url) as client:
        thread = client.thread()
        thread.run("delete the staging database")
        carried = ag.RunAgentInput(thread_id=thread.id, run_id="resume-1", resume=CANCEL_I1,
                                   messages=thread.state.input_messages(), state=thread.state.state)
        by_hand = resume_by_hand(client, thread, carried)
        second = client.thread()
        second.run("delete the staging database")
        by_thread = second.run(resume=list(CANCEL_I1))

    assert [w for r in (by_hand, by_thread) for w in r.warnings if w.code == "IR-21"] == []


def test_a_resuming_input_leaving_out_some_messages_names_the_first() -> None:
    thread = ag.ThreadState(messages=[ag.UserMessage(id="u1", content="a"), ag.UserMessage(id="u2", content="b")],
                            open_interrupts=[ag.Interrupt(id="i1", reason="approval")])
    partial = ag.RunAgentInput(thread_id="t", run_id="r2", resume=CANCEL_I1, messages=(thread.input_messages()[1],))
    [warning] = ag.RunSession(thread, run_input=partial).warnings
    assert (warning.code, warning.pointer) == ("IR-21", "/messages")
    assert "1 of the thread's 2 messages (first 'u1')" in warning.message
    # Not resuming: an ordinary input is not judged here.
    assert ag.RunSession(thread, run_input=ag.RunAgentInput(thread_id="t", run_id="r3")).warnings == []
