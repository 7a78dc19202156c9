"""The streaming tool loop (``stream_until_done``): every run's events, in order and folded, with the
tool handlers between the runs, and ``run_until_done``'s safety (claims, failed handlers, stops).

Every test body runs through both shells (``drive``) against a real ``ScriptedAgent`` served by uvicorn
on 127.0.0.1; the agent records what it received, so "nothing was sent" is a count of requests.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from threadkit import interrupted

import agui_client as ag
from agui_client.stores import MemoryStore
from agui_client.testing import Finish, Gate, ScriptedAgent, Start, Wait, text_message, tool_call


def pending(*call_ids: str) -> Finish:
    return Finish(outcome=ag.RunFinishedSuccessOutcome(pending_tool_call_ids=call_ids))


def asking_then_waiting(gate: Gate) -> ScriptedAgent:
    """A frontend call, then a run that waits on ``gate`` after its first text, then a plain reply."""
    return ScriptedAgent([
        [Start(), *tool_call("c1", "confirm_choice", {"question": "Which?"}), pending("c1")],
        [Start(), *text_message("m2", "one two three"), Wait(gate, timeout=20), Finish()],
        [Start(), *text_message("m3", "fine"), Finish()],
    ])


def test_every_event_of_every_run_arrives_in_order_folded_with_the_handler_between_the_runs(
        drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))
    seen: list[str] = []
    folded: list[bool] = []

    def confirm_choice(question: str) -> str:
        seen.append("handler")
        return "blue"

    with drive.client(endpoint.url) as client:
        thread = client.thread(tool_handlers={"confirm_choice": confirm_choice})
        with thread.stream_until_done("pick a colour") as loop:
            for event in loop:
                seen.append(type(event).__name__)
                if isinstance(event, ag.TextMessageContentEvent):  # (the thread holds the delta already)
                    message = thread.state.message(event.message_id)
                    folded.append(isinstance(message, ag.AssistantMessage)
                                  and (message.content or "").endswith(event.delta))
                if isinstance(event, ag.RunStartedEvent):
                    seen.append(event.run_id)

    at = seen.index("handler")
    first, second = seen[:at], seen[at + 1:]
    first_run, second_run = loop.results
    assert seen.count("handler") == 1
    assert first[:2] == ["RunStartedEvent", first_run.run_id] and first[-1] == "RunFinishedEvent"
    assert second[:2] == ["RunStartedEvent", second_run.run_id] and second[-1] == "RunFinishedEvent"
    assert "ToolCallStartEvent" in first and "ToolCallStartEvent" not in second
    assert (len(first) - 1, len(second) - 1) == (first_run.events, second_run.events)
    assert folded and all(folded)
    assert loop.result is second_run and loop.result.text == "Thanks! confirm_choice answered: blue"
    assert [r.run_id for r in endpoint.agent.requests] == [first_run.run_id, second_run.run_id]


def test_the_streamed_loop_ends_as_run_until_done_does_for_the_same_script(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))
    handlers = {"confirm_choice": lambda question: f"yes, to {question}"}

    def shape(thread: Any) -> list[tuple[str, Any]]:
        return [(type(m).__name__, getattr(m, "content", None)) for m in thread.state.messages]

    with drive.client(endpoint.url) as client:
        ran = client.thread(tool_handlers=handlers)
        result = ran.run_until_done("pick one", max_steps=5)
        streamed = client.thread(tool_handlers=handlers)
        with streamed.stream_until_done("pick one", max_steps=5) as loop:
            texts = list(loop.text_stream)

    assert (loop.result.outcome, loop.result.text, loop.result.pending_tool_call_ids) == \
        (result.outcome, result.text, result.pending_tool_call_ids)
    assert shape(streamed) == shape(ran)
    assert [r.outcome for r in loop.results] == ["success", "success"]
    assert "".join(texts) == "I need your input: let me ask confirm_choice in your app." + (result.text or "")
    sent = [r.body["messages"] for r in endpoint.received]
    assert [[m["role"] for m in messages] for messages in sent[2:]] == \
        [[m["role"] for m in messages] for messages in sent[:2]]


@pytest.mark.parametrize("leave", ["break", "raise"])
def test_leaving_the_loop_mid_run_closes_its_response_and_gives_the_thread_back(
        drive: Any, served: Any, leave: str) -> None:
    gate = Gate()
    endpoint = served(asking_then_waiting(gate))
    store = MemoryStore()
    answered: list[str] = []

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread(tool_handlers={"confirm_choice": lambda question: answered.append(question) or "A"})
        try:
            with thread.stream_until_done("go") as loop:
                for event in loop:
                    if isinstance(event, ag.TextMessageContentEvent):  # (the second run's first text)
                        if leave == "raise":
                            raise LookupError("the caller's own")
                        break
        except LookupError:
            assert leave == "raise"
        closed = endpoint.agent.wait_until(lambda a: bool(a.disconnects), timeout=10)
        stored = store.load(thread.id)
        replica = client.thread(thread.id, tool_handlers={"confirm_choice": lambda question: "B"})
        again = replica.run_until_done()
    gate.open()

    second_run_id = endpoint.agent.requests[1].run_id
    assert answered == ["Which?"]
    assert closed and endpoint.agent.disconnects == [second_run_id]
    assert stored is not None and stored.claim is None
    assert again.outcome == "success" and again.text == "fine"
    if leave == "break":
        assert [r.outcome for r in loop.results] == ["success", None]
        assert loop.result is loop.results[-1]
        assert [(w.code, w.run_id) for w in loop.result.warnings] == [("TR-16", second_run_id)]
    else:
        assert [r.outcome for r in loop.results] == ["success"]
        with pytest.raises(ag.StreamNotFinished) as caught:
            loop.result  # noqa: B018
        assert isinstance(caught.value.failed, LookupError) and caught.value.run_id == second_run_id


def test_the_first_run_is_sent_on_entering_and_a_block_left_unread_stops_the_loop(drive: Any, served: Any) -> None:
    gate = Gate()
    endpoint = served(asking_then_waiting(gate))
    answered: list[str] = []

    with drive.client(endpoint.url, store=MemoryStore()) as client:
        thread = client.thread(tool_handlers={"confirm_choice": lambda question: answered.append(question) or "A"})
        with thread.stream_until_done("go") as loop:
            sent_on_entering = endpoint.agent.request_count
        after_block = list(loop)
    gate.open()

    assert sent_on_entering == 1 and endpoint.agent.request_count == 1
    assert answered == [] and after_block == []
    assert [r.outcome for r in loop.results] == [None]
    assert [w.code for w in loop.result.warnings] == ["TR-16"]


def test_a_handler_that_raises_is_reported_to_the_agent_as_a_failed_tool_result(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))

    def confirm_choice(question: str) -> str:
        raise RuntimeError("the screen is gone")

    with drive.client(endpoint.url) as client:
        thread = client.thread(tool_handlers={"confirm_choice": confirm_choice})
        with thread.stream_until_done("pick a colour") as loop:
            kinds = [type(event).__name__ for event in loop]

    sent = endpoint.received[-1].body["messages"][-1]
    assert sent["role"] == "tool" and sent["error"] == "the screen is gone"
    assert kinds.count("RunStartedEvent") == 2 and loop.result.outcome == "success"


def test_a_handler_ending_the_loop_gives_back_the_claim_taken_before_it_ran(served: Any) -> None:
    # The loop claims the thread before its handlers run; a handler interrupted (Ctrl-C in a sync one, a
    # cancellation in an async one: no tool failure) ends the loop in the caller's for statement, and
    # the claim goes, nothing sent. (Natively: a BaseException would stop drive's portal.)
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))
    store = MemoryStore()

    def interrupted(question: str) -> str:
        raise KeyboardInterrupt

    async def cancelled(question: str) -> str:
        raise asyncio.CancelledError

    with ag.AgentClient(endpoint.url, store=store) as client:
        thread = client.thread(tool_handlers={"confirm_choice": interrupted})
        with pytest.raises(KeyboardInterrupt), thread.stream_until_done("choose") as loop:
            for _ in loop:
                pass
        after_sync = store.load(thread.id)
        replica = client.thread(thread.id, tool_handlers={"confirm_choice": lambda question: "yes"})
        again = replica.run_until_done()

    async def main() -> tuple[ag.AsyncThread, ag.AsyncLoopStream]:
        async with ag.AsyncAgentClient(endpoint.url, store=store) as client:
            other = client.thread(tool_handlers={"confirm_choice": cancelled})
            with pytest.raises(asyncio.CancelledError):
                async with other.stream_until_done("choose") as loop:
                    async for _ in loop:
                        pass
            return other, loop

    other, async_loop = asyncio.run(main())
    after_async = store.load(other.id)

    assert after_sync is not None and after_sync.claim is None and thread.version == after_sync.version
    assert after_async is not None and after_async.claim is None and other.version == after_async.version
    assert [r.outcome for r in loop.results] == [r.outcome for r in async_loop.results] == ["success"]
    assert again.outcome == "success" and endpoint.agent.request_count == 3


def test_the_loop_stops_after_max_steps_runs(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))
    answered: list[str] = []

    with drive.client(endpoint.url) as client:
        thread = client.thread(tool_handlers={"confirm_choice": lambda question: answered.append(question) or "A"})
        with thread.stream_until_done("choose", max_steps=1) as loop:
            for _ in loop:
                pass

    assert answered == [] and endpoint.agent.request_count == 1
    assert len(loop.results) == 1 and len(loop.result.pending_tool_calls) == 1


def test_the_loop_stops_at_an_interrupt(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([
        [Start(), *tool_call("c1", "confirm_choice", {"question": "Proceed?"}), pending("c1")],
        [Start(), interrupted("ask-1")],
        [Start(), Finish()],
    ]))

    with drive.client(endpoint.url) as client:
        thread = client.thread(tool_handlers={"confirm_choice": lambda question: "yes"})
        with thread.stream_until_done("go") as loop:
            finished = [e for e in loop if isinstance(e, ag.RunFinishedEvent)]

    assert [r.outcome for r in loop.results] == ["success", "interrupt"]
    assert [i.id for i in loop.result.interrupts] == ["ask-1"]
    assert len(finished) == 2 and endpoint.agent.request_count == 2


def test_a_keyword_run_does_not_take_is_refused_naming_the_streaming_loop(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        with pytest.raises(TypeError) as caught, thread.stream_until_done("go", tool_handlers={}):
            pass

    assert str(caught.value).startswith("stream_until_done() got unexpected keyword argument(s) ['tool_handlers']")
    assert "client.thread(tool_handlers=...)" in str(caught.value)
    assert endpoint.agent.request_count == 0


def test_the_callers_block_cannot_run_the_thread_the_loop_holds(drive: Any, served: Any) -> None:
    # The loop's own runs nest in it; the caller's code between its events is not the loop: another run
    # (or a reload) there would interleave two histories on one object.
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))
    refused: list[str] = []

    with drive.client(endpoint.url) as client:
        thread = client.thread(tool_handlers={"confirm_choice": lambda question: "yes"})
        with thread.stream_until_done("go") as loop:
            for event in loop:
                if isinstance(event, ag.RunFinishedEvent):
                    for attempt in (lambda: thread.run("meanwhile"), thread.reload):
                        try:
                            attempt()
                        except ag.ThreadBusy as exc:
                            refused.append(exc.thread_id)
        after = thread.run("and now")

    assert refused == [thread.id] * 4
    assert loop.result.outcome == "success" and after.outcome == "success"
    assert endpoint.agent.request_count == 3


def test_a_run_refused_after_the_handlers_ran_gives_back_the_claim_they_ran_under(drive: Any, served: Any) -> None:
    # A replica answers the call the thread holds (claimed first), then the run that would carry the
    # answer is refused as it is made (forwarded_props JSON cannot hold): the with statement raises it,
    # and the claim taken before the handler ran is given back, nothing sent.
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))
    store = MemoryStore()
    answered: list[str] = []

    with drive.client(endpoint.url, store=store) as client:
        first = client.thread()
        first.run("choose")
        replica = client.thread(first.id, tool_handlers={"confirm_choice": lambda question: answered.append(question)
                                                         or "yes"})
        with pytest.raises(ag.UnencodableValue) as caught, \
                replica.stream_until_done(forwarded_props={"seen": {1, 2}}):
            pass
        stored = store.load(first.id)
        again = client.thread(first.id, tool_handlers={"confirm_choice": lambda question: "yes"}).run_until_done()

    assert caught.value.field == "forwardedProps"
    assert answered == ["Which option do you prefer?"]
    assert stored is not None and stored.claim is None and stored.version == replica.version
    assert again.outcome == "success" and endpoint.agent.request_count == 2


def test_an_error_ending_the_loop_caught_in_the_block_leaves_it_quietly_and_stays_the_loops(
        drive: Any, served: Any) -> None:
    # A replica moves the thread on while the caller reads the first run: the loop's claim before its
    # handler is refused (ConcurrentResume, from the for statement). A caller that catches it inside the
    # block (as a chat catches Ctrl-C around its for) leaves the block quietly; the loop ended with that
    # error, which result names (it raised StreamNotFinished on leaving, saying the loop had not ended).
    endpoint = served(ScriptedAgent([
        [Start(), *tool_call("c1", "confirm_choice", {"question": "Which?"}), pending("c1")],
        [Start(), *text_message("m2", "a replica's turn"), Finish()],
    ]))
    store = MemoryStore()
    answered: list[str] = []
    caught: list[BaseException] = []
    replicas: list[Any] = []

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread(tool_handlers={"confirm_choice": lambda question: answered.append(question) or "A"})
        with thread.stream_until_done("go") as loop:
            try:
                for event in loop:
                    if isinstance(event, ag.RunFinishedEvent):  # (saved before it reaches the caller)
                        replicas.append(client.thread(thread.id))
                        replicas[0].run("a replica's turn")
            except ag.ConcurrentResume as exc:
                caught.append(exc)
        stored = store.load(thread.id)

    assert [type(exc) for exc in caught] == [ag.ConcurrentResume] and answered == []
    assert [r.outcome for r in loop.results] == ["success"] and endpoint.agent.request_count == 2
    with pytest.raises(ag.StreamNotFinished) as unfinished:
        loop.result  # noqa: B018
    # (between runs: the run that ended went well; the error, and the runs that ended, are what to act on)
    first = loop.results[0].run_id
    assert unfinished.value.failed is caught[0] and unfinished.value.run_id is None
    assert f"the tool loop failed after run {first!r} ended, before its next run opened (ConcurrentResume" \
        in str(unfinished.value)
    assert stored is not None and stored.claim is None and stored.version == replicas[0].version


def _lone_half(message_id: str, text: str) -> list[Any]:
    """An assistant message whose text ends with half an emoji (repaired, UTF16-SURROGATE, when it ends)."""
    content = json.dumps({"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": text + "\ud83d"})
    return [ag.TextMessageStartEvent(message_id=message_id, role="assistant"),
            b"data: " + content.encode() + b"\n\n", ag.TextMessageEndEvent(message_id=message_id)]


def test_each_runs_warnings_are_its_results_and_the_thread_keeps_only_the_last_responses(
        drive: Any, served: Any) -> None:
    # Where a tool loop's warnings are: each run's on its RunResult (loop.results), the repairs included;
    # thread.state.warnings is where the fold hands the response it folds its repairs, emptied when the
    # next run starts (a thread object that runs for days holds no more than one response's), and
    # run_until_done returns the last run's result.
    script = [
        [Start(), *_lone_half("m1", "Let me check."), *tool_call("c1", "confirm_choice", {"question": "Which?"}),
         pending("c1")],
        [Start(), *_lone_half("m2", "Done."), Finish()],
    ]
    endpoint = served(ScriptedAgent([*script, *script]))
    handlers = {"confirm_choice": lambda question: "yes"}

    with drive.client(endpoint.url) as client:
        thread = client.thread(tool_handlers=handlers)
        with thread.stream_until_done("go") as loop:
            loop.get_final_result()
        held = list(thread.state.warnings)
        ran = client.thread(tool_handlers=handlers).run_until_done("go")

    first, second = loop.results
    repairs = [[(w.code, w.run_id) for w in r.warnings if w.code == "UTF16-SURROGATE"] for r in loop.results]
    assert repairs == [[("UTF16-SURROGATE", first.run_id)], [("UTF16-SURROGATE", second.run_id)]]
    assert [(w.code, w.run_id) for w in held] == [("UTF16-SURROGATE", second.run_id)]
    assert [(w.code, w.run_id) for w in ran.warnings if w.code == "UTF16-SURROGATE"] == [("UTF16-SURROGATE",
                                                                                           ran.run_id)]


def test_the_loops_text_stream_is_every_runs_deltas_as_sent_and_the_events_say_where_a_run_ends(
        drive: Any, served: Any) -> None:
    # A chat printing loop.text_stream as is prints the first run's "Let me check." and the next run's
    # "Done." on one line: the stream is the deltas the agent sent, nothing added (as within one run,
    # where an answer's text before a backend tool call and after it are two messages, joined the same
    # way). Where one answer ends is in the events: a RUN_STARTED starts each run, a
    # TEXT_MESSAGE_START each message (docs/streaming.md "Where one answer ends").
    endpoint = served(ScriptedAgent([
        [Start(), *text_message("m1", "Let me check."), *tool_call("c1", "confirm_choice", {"question": "Which?"}),
         pending("c1")],
        [Start(), *text_message("m2", "Done."), Finish()],
    ]))

    with drive.client(endpoint.url) as client:
        thread = client.thread(tool_handlers={"confirm_choice": lambda question: "yes"})
        with thread.stream_until_done("go") as loop:
            deltas = list(loop.text_stream)
        with client.thread(tool_handlers={"confirm_choice": lambda question: "yes"}).stream_until_done("go") as again:
            answers: list[str] = []
            for event in again:
                if isinstance(event, ag.TextMessageStartEvent):
                    answers.append("")
                elif isinstance(event, ag.TextMessageContentEvent):
                    answers[-1] += event.delta

    assert "".join(deltas) == "Let me check.Done."
    assert answers == ["Let me check.", "Done."]
    assert [r.text for r in loop.results] == ["Let me check.", "Done."]
