"""Frontend tools and the tool loop (`run_until_done`), across replicas and interruptions.

Every test body runs through both shells (``drive``: sync and async) against a real ``ScriptedAgent``
served by uvicorn on 127.0.0.1; the agent records what it received, so "nothing was sent" is a count of
requests.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from typing import Any

import pytest
from threadkit import interrupted

import agui_client as ag
from agui_client.stores import MemoryStore
from agui_client.testing import (
    Finish,
    ScriptedAgent,
    Start,
    tool_call,
)


def test_a_frontend_tool_call_is_pending_and_the_next_run_carries_its_result(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        first = thread.run("pick a colour")
        [call_id] = first.pending_tool_call_ids
        thread.add_tool_result(call_id, "blue")
        second = thread.run()

    assert first.outcome == "success"
    assert [c.function.name for c in first.pending_tool_calls] == ["confirm_choice"]
    last = endpoint.agent.requests[1].messages[-1]
    assert isinstance(last, ag.ToolMessage)
    assert (last.tool_call_id, last.content) == (call_id, "blue")
    assert second.text == "Thanks! confirm_choice answered: blue"
    assert second.pending_tool_call_ids == ()


def test_run_until_done_answers_frontend_calls_with_the_tool_handlers(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))
    questions: list[str] = []

    def confirm_choice(question: str) -> str:
        questions.append(question)
        return "blue"

    with drive.client(endpoint.url) as client:
        thread = client.thread(tool_handlers={"confirm_choice": confirm_choice})
        result = thread.run_until_done("pick a colour")

    assert result.outcome == "success"
    assert result.text == "Thanks! confirm_choice answered: blue"
    assert questions == ["Which option do you prefer?"]
    assert [t.name for t in endpoint.agent.requests[0].tools] == ["confirm_choice"]
    assert endpoint.agent.request_count == 2


def test_a_tool_handler_that_raises_is_reported_to_the_agent_and_logged(
    drive: Any, served: Any, caplog: pytest.LogCaptureFixture
) -> None:
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))

    def confirm_choice(question: str) -> str:
        raise RuntimeError("the screen is gone")

    with caplog.at_level("WARNING", logger="agui_client"):
        with drive.client(endpoint.url) as client:
            thread = client.thread(tool_handlers={"confirm_choice": confirm_choice})
            thread.run_until_done("pick a colour")

    sent = endpoint.received[-1].body["messages"][-1]
    assert sent["role"] == "tool" and sent["error"] == "the screen is gone"
    assert any("confirm_choice" in r.getMessage() and "the screen is gone" in r.getMessage() for r in caplog.records)


def test_run_until_done_stops_at_an_interrupt(drive: Any, served: Any) -> None:
    pending = Finish(outcome=ag.RunFinishedSuccessOutcome(pending_tool_call_ids=("c1",)))
    endpoint = served(ScriptedAgent([
        [Start(), *tool_call("c1", "confirm_choice", {"question": "Proceed?"}), pending],
        [Start(), interrupted("ask-1")],
        [Start(), Finish()],
    ]))

    with drive.client(endpoint.url) as client:
        thread = client.thread(tool_handlers={"confirm_choice": lambda question: "yes"})
        result = thread.run_until_done("go")

    assert result.outcome == "interrupt"
    assert [i.id for i in result.interrupts] == ["ask-1"]
    assert endpoint.agent.request_count == 2


def test_a_tool_result_for_a_call_of_an_earlier_run_is_accepted(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([
        [Start(), *tool_call("c1", "lookup", {"q": "answer"}), Finish()],
        [Start(), ag.ToolCallResultEvent(message_id="r1", tool_call_id="c1", content="42", role="tool"), Finish()],
    ]))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        thread.run("look it up")
        result = thread.run("and?")

    assert result.outcome == "success"
    assert result.new_messages == (ag.ToolMessage(id="r1", tool_call_id="c1", content="42"),)


def test_async_tool_handlers_are_awaited_by_the_async_thread_and_refused_by_the_sync_one(served: Any) -> None:
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))

    async def confirm_choice(**_: Any) -> str:
        await asyncio.sleep(0)
        return "yes"

    async def main() -> ag.RunResult:
        async with ag.AsyncAgentClient(endpoint.url) as client:
            thread = client.thread(tool_handlers={"confirm_choice": confirm_choice})
            return await thread.run_until_done("choose")

    answered = asyncio.run(main())
    with ag.AgentClient(endpoint.url) as client:
        sync_thread = client.thread(tool_handlers={"confirm_choice": confirm_choice})
        sync_thread.run_until_done("choose")
    told = endpoint.received[-1].body["messages"][-1]

    assert answered.outcome == "success" and "answered: yes" in (answered.text or "")
    assert told["role"] == "tool" and "async handler needs the async client" in told["content"]


def test_run_until_done_answers_the_calls_a_thread_already_holds_before_it_sends(drive: Any, served: Any) -> None:
    # The thread's last run (here another replica's plain run()) left a frontend call unanswered. A
    # replica continuing with run_until_done() answers it first: sending with it unanswered would have
    # the agent ask again, and the handler run a second time.
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))
    asked: list[str] = []

    def confirm_choice(question: str) -> str:
        asked.append(question)
        return "yes"

    with drive.client(endpoint.url, store=MemoryStore()) as client:
        first = client.thread()
        (call_id,) = first.run("choose").pending_tool_call_ids
        replica = client.thread(first.id, tool_handlers={"confirm_choice": confirm_choice})
        result = replica.run_until_done()

    assert asked == ["Which option do you prefer?"]
    assert result.outcome == "success" and "answered: yes" in (result.text or "")
    assert endpoint.agent.request_count == 2
    sent = endpoint.received[-1].body["messages"][-1]
    assert sent["role"] == "tool" and sent["toolCallId"] == call_id


@pytest.mark.parametrize("resume", ["none", "uncovered"])
def test_run_until_done_on_a_thread_waiting_for_answers_is_refused_before_a_handler_runs(
        drive: Any, served: Any, resume: str) -> None:
    # A success left a frontend call pending, then a run stopped to ask. The tool loop must not run the
    # handler (an action) and add its answer for a run the interrupt rules refuse anyway (IR-13, IR-14):
    # the refusal comes first, and the thread is left as it was. Found by the lifecycle machine's tool loop.
    endpoint = served(ScriptedAgent([
        [Start(), *tool_call("c1", "confirm_choice", {"question": "Which?"}, parent_message_id="a1"),
         Finish(outcome=ag.RunFinishedSuccessOutcome(pending_tool_call_ids=("c1",)))],
        [Start(), interrupted("i1", "i2")],
        [Start(), Finish()],
    ], stateless=True))
    asked: list[str] = []

    def confirm_choice(question: str) -> str:
        asked.append(question)
        return "yes"

    with drive.client(endpoint.url) as client:
        thread = client.thread(tool_handlers={"confirm_choice": confirm_choice})
        thread.run("choose")
        thread.run("and also")
        before = thread.state.messages
        arguments = {} if resume == "none" else {"resume": [ag.ResumeEntry(interrupt_id="i1", status="cancelled")]}
        with pytest.raises(ag.UncoveredInterrupts) as caught:
            thread.run_until_done("go on", **arguments)
        assert "i2" in caught.value.ids
        assert asked == []
        assert thread.state.messages == before
        assert thread.state.pending_tool_call_ids == ("c1",)
        assert endpoint.agent.request_count == 2
        # The thread is usable: a covering resume answers the call first, then is sent.
        builder = thread.resume_builder().abandon("i1").abandon("i2")
        result = thread.run_until_done(resume=builder, max_steps=1)

    assert asked == ["Which?"]
    assert result.outcome == "success"
    sent = endpoint.agent.requests[-1]
    assert [e.interrupt_id for e in sent.resume or ()] == ["i1", "i2"]
    assert [m.tool_call_id for m in sent.messages if isinstance(m, ag.ToolMessage)] == ["c1"]


def test_two_replicas_running_the_tool_loop_run_the_handler_once(served: Any) -> None:
    # The thread is claimed before any handler runs: the second replica is refused (ConcurrentResume)
    # while the first one's handler is still running, before its own handler is called.
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))
    store = MemoryStore()
    inside, leave = threading.Event(), threading.Event()
    calls: list[str] = []

    def slow(question: str) -> str:
        calls.append("slow")
        inside.set()
        leave.wait(10)
        return "yes"

    def quick(question: str) -> str:
        calls.append("quick")
        return "no"

    with ag.AgentClient(endpoint.url, store=store) as client:
        first = client.thread()
        first.run("choose")
        one = client.thread(first.id, tool_handlers={"confirm_choice": slow})
        two = client.thread(first.id, tool_handlers={"confirm_choice": quick})
        results: list[Any] = []
        running = threading.Thread(target=lambda: results.append(one.run_until_done()))
        running.start()
        assert inside.wait(10)
        with pytest.raises(ag.ConcurrentResume):
            two.run_until_done()
        leave.set()
        running.join(10)

    assert calls == ["slow"]
    assert results[0].outcome == "success" and endpoint.agent.request_count == 2
    assert store.load(first.id).claim is None  # type: ignore[union-attr]


def test_a_tool_loop_interrupted_in_a_handler_gives_its_claim_back(served: Any) -> None:
    # The loop claimed the thread before the handlers ran; nothing was sent, so the claim goes: after
    # Ctrl-C in a sync handler, after a cancellation in an async one.
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))
    store = MemoryStore()

    def interrupted(question: str) -> str:
        raise KeyboardInterrupt

    async def cancelled(question: str) -> str:
        raise asyncio.CancelledError

    with ag.AgentClient(endpoint.url, store=store) as client:
        thread = client.thread(tool_handlers={"confirm_choice": interrupted})
        with pytest.raises(KeyboardInterrupt):
            thread.run_until_done("choose")
    after_sync = store.load(thread.id)

    async def main() -> ag.AsyncThread:
        async with ag.AsyncAgentClient(endpoint.url, store=store) as client:
            again = client.thread(tool_handlers={"confirm_choice": cancelled})
            with pytest.raises(asyncio.CancelledError):
                await again.run_until_done("choose")
            return again

    again = asyncio.run(main())
    after_async = store.load(again.id)

    assert after_sync is not None and after_sync.claim is None and thread.version == after_sync.version
    assert after_async is not None and after_async.claim is None and again.version == after_async.version
    assert endpoint.agent.request_count == 2


def test_ctrl_c_while_the_tool_loop_claims_gives_the_claim_back(served: Any) -> None:
    # The loop claims the thread before its handlers run; a Ctrl-C that lands inside that store call
    # (after the claim was written) must not leave the thread claimed with nothing sent.
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))
    handled: list[str] = []

    class Interrupted(MemoryStore):
        armed = False

        def claim(self, thread_id: str, *, expected_version: int | None, owner: str, data: Any = None) -> int:
            version = super().claim(thread_id, expected_version=expected_version, owner=owner, data=data)
            if self.armed:
                self.armed = False
                signal.raise_signal(signal.SIGINT)  # (delivered before it returns: nothing to wait for)
            return version

    store = Interrupted()
    with ag.AgentClient(endpoint.url, store=store) as client:
        first = client.thread()
        first.run("choose")
        replica = client.thread(first.id, tool_handlers={"confirm_choice": lambda question: handled.append(question)
                                                         or "yes"})
        store.armed = True
        with pytest.raises(KeyboardInterrupt):
            replica.run_until_done()
        claim = store.load(first.id).claim  # type: ignore[union-attr]
        result = replica.run_until_done()

    assert claim is None and handled == ["Which option do you prefer?"]
    assert result.outcome == "success" and endpoint.agent.request_count == 2


def test_the_tool_loop_holds_the_object_while_its_async_handlers_run(served: Any) -> None:
    # Another task's run() on the same object, while the loop's handler awaits, would take the loop's
    # claim and send the call unanswered: refused (ThreadBusy), as are reload() and release_claim().
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))

    async def main() -> tuple[list[str], ag.RunResult]:
        refused: list[str] = []
        handler_entered, handler_may_return = asyncio.Event(), asyncio.Event()

        async def confirm_choice(question: str) -> str:
            handler_entered.set()
            await handler_may_return.wait()
            return "yes"

        async with ag.AsyncAgentClient(endpoint.url, store=MemoryStore()) as client:
            thread = client.thread(tool_handlers={"confirm_choice": confirm_choice})
            loop_task = asyncio.ensure_future(thread.run_until_done("choose"))
            await handler_entered.wait()
            for attempt in (lambda: thread.run("meanwhile"), thread.reload, thread.release_claim):
                try:
                    await attempt()
                except ag.ThreadBusy as exc:
                    refused.append(exc.thread_id)
            handler_may_return.set()
            return refused, await loop_task

    refused, result = asyncio.run(main())

    assert len(refused) == 3 and result.outcome == "success"
    assert endpoint.agent.request_count == 2
