"""A run stream (or a tool loop's) used in a way that cannot work: a typed ``StreamMisused`` naming the
mistake, in both shells.

Entering the block one ``thread.stream(...)`` call opened a second time raised contextlib's
``AttributeError: '_GeneratorContextManager' object has no attribute 'args'``; a second task reading
an async stream while another did raised the generator's ``RuntimeError`` ("asynchronous generator is
already running"), and a second OS thread reading a sync stream its ``ValueError`` ("generator already
executing"). Nothing was sent twice; the words named neither the stream nor what to do. Through both
shells (``drive``) against a ScriptedAgent on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

import agui_client as ag
from agui_client.testing import Finish, Gate, ScriptedAgent, Start, Wait, text_message

#: The longest a wait of these tests may take before the test fails (a hang, not a slow machine).
BOUND = 10.0


def _reentered(refused: pytest.ExceptionInfo[ag.StreamMisused], what: str, run_id: str | None) -> None:
    error = refused.value
    assert (error.code, error.run_id) == ("STREAM-REENTERED", run_id)
    assert isinstance(error, RuntimeError)
    assert str(error) == (f"this thread.{what}(...) block (run {run_id!r}) was entered already: one call sends one "
                          f"run and opens one block; call thread.{what}(...) again for another run. Nothing was sent")


def test_a_stream_block_entered_again_after_it_was_left_is_refused_and_sends_nothing(drive: Any,
                                                                                   served: Any) -> None:
    endpoint = served(ScriptedAgent.chat())
    with drive.client(endpoint.url) as client:
        thread = client.thread("again")
        block = thread.stream("hi")
        with block as stream:
            assert stream.get_final_result().outcome == "success"

        with pytest.raises(ag.StreamMisused) as refused:
            with block:
                raise AssertionError("the block was entered again")

        _reentered(refused, "stream", stream.run_input.run_id)
        assert len(endpoint.received) == 1
        assert thread.run("next").outcome == "success"  # (a new call is the way to another run)


def test_a_stream_block_entered_inside_itself_is_refused_and_the_run_goes_on(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.chat())
    with drive.client(endpoint.url) as client:
        block = client.thread("nested").stream("hi")
        with block as stream:
            with pytest.raises(ag.StreamMisused) as refused:
                with block:
                    raise AssertionError("the block was entered inside itself")
            assert stream.get_final_result().outcome == "success"

        _reentered(refused, "stream", stream.run_input.run_id)
        assert len(endpoint.received) == 1


def test_a_tool_loops_block_entered_again_is_refused_and_sends_nothing(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.chat())
    with drive.client(endpoint.url) as client:
        block = client.thread("loop").stream_until_done("hi")
        with block as loop:
            assert loop.get_final_result().outcome == "success"

        with pytest.raises(ag.StreamMisused) as refused:
            with block:
                raise AssertionError("the loop's block was entered again")

        # (named by the run the block opened first: the loop's stream, once over, reads none)
        _reentered(refused, "stream_until_done", loop.results[0].run_id)
        assert len(endpoint.received) == 1


def test_a_second_reader_of_one_stream_is_refused_and_the_first_reads_every_event(drive: Any,
                                                                                  served: Any) -> None:
    # Two OS threads read one stream (through the async shell, two tasks on its loop): the run is held
    # between its two messages, so whichever reader steps in first waits inside the step while the
    # other arrives.
    gate = Gate()
    endpoint = served(ScriptedAgent([[Start(), *text_message("m-1", "before"), Wait(gate),
                                      *text_message("m-2", "after"), Finish()]]))
    outcomes: list[Any] = []
    refused = threading.Event()

    with drive.client(endpoint.url) as client, client.thread("shared").stream("hi") as stream:
        first = iter(stream)
        while not isinstance(next(first), ag.TextMessageEndEvent):
            pass  # (up to the end of "before": the next event comes once the gate opens)

        def read() -> None:
            try:
                outcomes.append([type(event).__name__ for event in stream])
            except ag.StreamMisused as exc:
                outcomes.append(exc)
                refused.set()

        readers = [threading.Thread(target=read) for _ in range(2)]
        for reader in readers:
            reader.start()
        try:
            assert refused.wait(BOUND), "no reader was refused"
        finally:
            gate.open()
            for reader in readers:
                reader.join(BOUND)

    run_id = stream.run_input.run_id
    (error,) = [o for o in outcomes if isinstance(o, ag.StreamMisused)]
    assert (error.code, error.run_id) == ("STREAM-SHARED", run_id)
    assert isinstance(error, RuntimeError)
    assert str(error) == (f"run {run_id!r}: this stream's events are being read by another task or thread "
                          "already; one reader at a time, each event once: read it in one place and hand the "
                          "events on (a queue) to whoever else needs them. Nothing was read here; the other "
                          "reader goes on")
    assert [o for o in outcomes if not isinstance(o, ag.StreamMisused)] == [[
        "TextMessageStartEvent", "TextMessageContentEvent", "TextMessageEndEvent", "RunFinishedEvent"]]
    assert stream.result.outcome == "success" and stream.result.text == "before\n\nafter"
    assert len(endpoint.received) == 1


def test_a_reader_that_left_its_loop_early_leaves_the_stream_to_the_next(drive: Any, served: Any) -> None:
    # (one reader after another is no misuse: the second goes on where the first stopped)
    endpoint = served(ScriptedAgent([[Start(), *text_message("m-1", "one two"), Finish()]]))
    with drive.client(endpoint.url) as client, client.thread("relay").stream("hi") as stream:
        for event in stream:
            if isinstance(event, ag.TextMessageStartEvent):
                break
        rest = list(stream.text_stream)

    assert rest == ["one ", "two"] and stream.result.outcome == "success"


def test_a_sync_reader_closed_while_another_os_thread_is_inside_its_step_is_refused_and_that_reader_goes_on(
        served: Any) -> None:
    # (``iter(stream).close()`` ends the run's events, as closing the generator it used to be did; with
    # another thread inside the step it said Python's ValueError("generator already executing"), naming
    # nothing). Two readers race into the held run's step: the one refused proves the other is inside.
    gate, agent = _held_run()
    endpoint = served(agent)
    outcomes: list[Any] = []
    refused = threading.Event()

    def read(stream: ag.RunStream) -> None:
        try:
            outcomes.append([type(event).__name__ for event in stream])
        except ag.StreamMisused as exc:
            outcomes.append(exc)
            refused.set()

    with ag.AgentClient(endpoint.url, timeout=BOUND) as client, client.thread("closed").stream("hi") as stream:
        first = iter(stream)
        while not isinstance(next(first), ag.TextMessageEndEvent):
            pass
        readers = [threading.Thread(target=read, args=(stream,)) for _ in range(2)]
        for reader in readers:
            reader.start()
        try:
            assert refused.wait(BOUND), "no reader was refused"
            with pytest.raises(ag.StreamMisused) as closed:
                first.close()  # type: ignore[attr-defined]
        finally:
            gate.open()
            for reader in readers:
                reader.join(BOUND)

    run_id = stream.run_input.run_id
    assert (closed.value.code, closed.value.run_id) == ("STREAM-SHARED", run_id)
    assert [o for o in outcomes if not isinstance(o, ag.StreamMisused)] == [[
        "TextMessageStartEvent", "TextMessageContentEvent", "TextMessageEndEvent", "RunFinishedEvent"]]
    assert stream.result.outcome == "success" and len(endpoint.received) == 1


def _held_run() -> tuple[Gate, ScriptedAgent]:
    """A run held at a gate after its first message (a read waits inside its step until it opens)."""
    gate = Gate()
    return gate, ScriptedAgent([[Start(), *text_message("m-1", "before"), Wait(gate),
                                 *text_message("m-2", "after"), Finish()]])


def test_an_async_read_cancelled_inside_its_step_leaves_no_reader_behind(served: Any) -> None:
    # (a reader is one task's: its step cancelled, as asyncio.wait_for does, the next read is no second
    # reader; the run ended there, as a cancelled read always ended it, and leaving the block says so)
    gate, agent = _held_run()
    endpoint = served(agent)

    async def main() -> tuple[list[str], ag.RunResult]:
        async with ag.AsyncAgentClient(endpoint.url, timeout=BOUND) as client:
            async with client.thread("cancelled").stream("hi") as stream:
                events = aiter(stream)
                while not isinstance(await anext(events), ag.TextMessageEndEvent):
                    pass
                with pytest.raises(asyncio.TimeoutError):
                    await asyncio.wait_for(anext(events), 0.2)  # (the gate is shut: the step cannot end)
                gate.open()
                after = [type(event).__name__ async for event in stream]
            return after, stream.result

    after, result = asyncio.run(main())

    assert after == []
    assert result.outcome is None and [w.code for w in result.warnings] == ["TR-16"]


def test_an_async_reader_closed_leaves_the_rest_of_the_run_to_the_next(served: Any) -> None:
    # (closing a reader, or the loop finalizing one left behind, closes that reader: the stream's events
    # go on for the next, as leaving a for loop early leaves them; leaving the block ends the run)
    endpoint = served(ScriptedAgent([[Start(), *text_message("m-1", "one two"), Finish()]]))

    async def main() -> tuple[list[str], ag.RunResult]:
        async with ag.AsyncAgentClient(endpoint.url, timeout=BOUND) as client:
            async with client.thread("closed").stream("hi") as stream:
                first = aiter(stream)
                assert isinstance(await anext(first), ag.RunStartedEvent)
                await first.aclose()  # type: ignore[attr-defined]
                rest = [text async for text in stream.text_stream]
            return rest, stream.result

    rest, result = asyncio.run(main())

    assert rest == ["one ", "two"] and result.outcome == "success"


def test_a_reader_that_leaves_among_one_reads_events_leaves_the_rest_to_the_next(drive: Any, served: Any) -> None:
    # (one TEXT_MESSAGE_CHUNK payload is read as a message's start and its content: a reader that
    # leaves after the start leaves the content, and the rest of the run, to the next)
    endpoint = served(ScriptedAgent([[Start(), {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m-1", "delta": "hello"},
                                      *text_message("m-2", "bye"), Finish()]]))
    with drive.client(endpoint.url) as client, client.thread("chunked").stream("hi") as stream:
        for event in stream:
            if isinstance(event, ag.TextMessageStartEvent):
                break
        rest = [type(event).__name__ for event in stream]

    assert rest == ["TextMessageContentEvent", "TextMessageEndEvent", "TextMessageStartEvent",
                    "TextMessageContentEvent", "TextMessageEndEvent", "RunFinishedEvent"]
    assert stream.result.outcome == "success" and stream.result.text.startswith("hello")


# -- a tool loop's stream: the same reader and rule as a run's, across its runs and its handlers ----------

def _refused_between_runs(error: ag.StreamMisused) -> None:
    # (between runs the loop reads none: the refusal names no run)
    assert (error.code, error.run_id) == ("STREAM-SHARED", None)
    assert str(error).startswith("this stream's events are being read by another task or thread already; ")


def test_a_second_os_thread_reading_a_tool_loop_while_its_handler_runs_is_refused_and_the_loop_goes_on(
        served: Any) -> None:
    # (the handler runs inside the first reader's step, between the runs: the loop is still being read)
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))
    running, release = threading.Event(), threading.Event()
    outcomes: list[Any] = []

    def confirm_choice(question: str) -> str:
        running.set()
        assert release.wait(BOUND), "the second reader never came"
        return "blue"

    def second(loop: ag.LoopStream) -> None:
        try:
            assert running.wait(BOUND), "the handler never ran"
            outcomes.append(next(iter(loop)))
        except ag.StreamMisused as exc:
            outcomes.append(exc)
        finally:
            release.set()

    with ag.AgentClient(endpoint.url, timeout=BOUND) as client:
        thread = client.thread(tool_handlers={"confirm_choice": confirm_choice})
        with thread.stream_until_done("pick a colour") as loop:
            # (a daemon: were the second reader let in to wait for the loop, the test fails, not its process)
            reader = threading.Thread(target=second, args=(loop,), daemon=True)
            reader.start()
            events = [type(event).__name__ for event in loop]
            reader.join(BOUND)

    (error,) = outcomes
    assert isinstance(error, ag.StreamMisused), error
    _refused_between_runs(error)
    assert events.count("RunStartedEvent") == 2 and events[-1] == "RunFinishedEvent"
    assert [r.outcome for r in loop.results] == ["success", "success"] and loop.result.text.endswith("blue")


def test_a_second_task_reading_a_tool_loop_while_its_handler_runs_is_refused_and_the_loop_goes_on(
        served: Any) -> None:
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))

    async def main() -> tuple[ag.StreamMisused, list[str], ag.AsyncLoopStream]:
        running, release = asyncio.Event(), asyncio.Event()

        async def confirm_choice(question: str) -> str:
            running.set()
            await release.wait()
            return "blue"

        async with ag.AsyncAgentClient(endpoint.url, timeout=BOUND) as client:
            thread = client.thread(tool_handlers={"confirm_choice": confirm_choice})
            async with thread.stream_until_done("pick a colour") as loop:
                async def read() -> list[str]:
                    return [type(event).__name__ async for event in loop]

                reading = asyncio.create_task(read())
                try:
                    await asyncio.wait_for(running.wait(), BOUND)
                    # (bounded: a second read let in would wait for the step the handler holds until
                    # ``release``, which only this read's end sets)
                    with pytest.raises(ag.StreamMisused) as refused:
                        await asyncio.wait_for(anext(aiter(loop)), BOUND)
                finally:
                    release.set()
                events = await asyncio.wait_for(reading, BOUND)
        return refused.value, events, loop

    error, events, loop = asyncio.run(main())

    _refused_between_runs(error)
    assert events.count("RunStartedEvent") == 2 and events[-1] == "RunFinishedEvent"
    assert [r.outcome for r in loop.results] == ["success", "success"] and loop.result.text.endswith("blue")


def test_an_async_tool_loops_reader_closed_leaves_the_rest_of_the_loop_to_the_next(served: Any) -> None:
    # (as a run stream's reader closed does: it closed the loop's events, and the loop, before)
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))

    async def main() -> tuple[list[str], ag.AsyncLoopStream]:
        async with ag.AsyncAgentClient(endpoint.url, timeout=BOUND) as client:
            thread = client.thread(tool_handlers={"confirm_choice": lambda question: "blue"})
            async with thread.stream_until_done("pick a colour") as loop:
                first = aiter(loop)
                assert isinstance(await anext(first), ag.RunStartedEvent)
                await first.aclose()  # type: ignore[attr-defined]
                rest = [type(event).__name__ async for event in loop]
            return rest, loop

    rest, loop = asyncio.run(main())

    assert rest.count("RunStartedEvent") == 1 and rest[-1] == "RunFinishedEvent"  # (the second run's)
    assert [r.outcome for r in loop.results] == ["success", "success"] and loop.result.text.endswith("blue")
