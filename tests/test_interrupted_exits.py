"""Runs the caller interrupts (Ctrl-C, a generator closed, a stream dropped): what they hold is given back.

The sync shell's interruptions are ``KeyboardInterrupt`` (raised from a tool handler, from the caller's
loop body, from an httpx hook once the answer's head arrived) and a stream's generator closed by the
caller; the async shell's is a stream entered and dropped without being left, which the loop's
finalizer of abandoned async generators closes. After each: the thread is not claimed (unless a
resume's request went out, which keeps its claim by the failure rule), the pool of one connection
holds nothing, and the next run goes out on it. Real server on 127.0.0.1, no sleeping: every wait is
on an event, bounded.
"""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import httpx
import pytest

import agui_client as ag
from agui_client.stores import MemoryStore
from agui_client.testing import Finish, ScriptedAgent, Start, last_user_text, text_message, tool_call

BOUND = 5.0


def in_flight(http: httpx.Client | httpx.AsyncClient) -> int:
    return len(http._transport._pool._requests)  # type: ignore[attr-defined]


def step(run_input: Any) -> Any:
    text = last_user_text(run_input) or ""
    if text == "ask" and run_input.resume is None:
        return [Start(), Finish(outcome=ag.RunFinishedInterruptOutcome(
            interrupts=(ag.Interrupt(id="ask-1", reason="approval"),)))]
    if text == "tool" and not any(isinstance(m, ag.ToolMessage) for m in run_input.messages):
        return [Start(), *tool_call("call-1", "lookup", {"q": "x"}), Finish()]
    return [Start(), *text_message(f"m-{run_input.run_id}", "one two three four five"), Finish()]


@pytest.fixture
def endpoint(served: Any) -> Any:
    return served(ScriptedAgent([step], cycle=True))


def after_interruption(client: ag.AgentClient, http: httpx.Client, store: MemoryStore, thread: ag.Thread, *,
                       claimed: bool = False) -> None:
    stored = store.load(thread.id)
    assert stored is not None and (stored.claim is not None) is claimed
    assert thread.version == stored.version
    assert in_flight(http) == 0
    if claimed:
        thread.release_claim()  # (the caller's decision after a resume that went out: answer again)
        assert thread.run(resume=thread.resume_builder().answer("ask-1", "yes")).outcome == "success"
    else:
        assert thread.run("again").outcome == "success"  # (the same object, the same one connection)
    assert client.thread().run("again").outcome == "success"
    assert in_flight(http) == 0


def sync_client(endpoint: Any, store: MemoryStore, **options: Any) -> tuple[httpx.Client, ag.AgentClient]:
    http = httpx.Client(limits=httpx.Limits(max_connections=1), **options)
    return http, ag.AgentClient(endpoint.url, http_client=http, store=store, timeout=BOUND)


def test_ctrl_c_in_a_tool_handler_gives_the_claim_and_the_connection_back(endpoint: Any) -> None:
    store = MemoryStore()
    http, client = sync_client(endpoint, store)

    def lookup(q: str) -> str:
        raise KeyboardInterrupt

    with http, client:
        thread = client.thread(tool_handlers={"lookup": lookup})
        with pytest.raises(KeyboardInterrupt):
            thread.run_until_done("tool")
        assert endpoint.agent.request_count == 1  # (the handler's result was never sent)
        after_interruption(client, http, store, thread)


@pytest.mark.parametrize("resuming", [False, True], ids=["turn", "resume"])
def test_ctrl_c_in_the_callers_loop_body_gives_the_connection_back(endpoint: Any, resuming: bool) -> None:
    store = MemoryStore()
    http, client = sync_client(endpoint, store)
    with http, client:
        thread = client.thread()
        if resuming:
            assert thread.run("ask").outcome == "interrupt"
        arguments: dict[str, Any] = (
            {"resume": thread.resume_builder().answer("ask-1", "yes")} if resuming else {"message": "hi"})
        with pytest.raises(KeyboardInterrupt), thread.stream(**arguments) as stream:
            for n, _ in enumerate(stream):
                if n == 2:
                    raise KeyboardInterrupt
        # A turn lets go; a resume whose request went out keeps its claim (the failure rule).
        after_interruption(client, http, store, thread, claimed=resuming)


def test_ctrl_c_once_the_answers_head_arrived_gives_the_connection_back(endpoint: Any) -> None:
    store = MemoryStore()
    armed = [True]

    def hook(response: httpx.Response) -> None:
        if armed[0]:
            armed[0] = False
            raise KeyboardInterrupt

    http, client = sync_client(endpoint, store, event_hooks={"response": [hook]})
    with http, client:
        thread = client.thread()
        with pytest.raises(KeyboardInterrupt):
            thread.run("hi")
        after_interruption(client, http, store, thread)


@pytest.mark.parametrize("which", ["events", "text_stream"])
def test_a_stream_generator_closed_by_the_caller_ends_the_run_and_gives_the_connection_back(
    endpoint: Any, which: str
) -> None:
    store = MemoryStore()
    http, client = sync_client(endpoint, store)
    with http, client:
        thread = client.thread()
        with thread.stream("hi") as stream:
            events = iter(stream) if which == "events" else stream.text_stream
            next(events), next(events)
            events.close()  # type: ignore[attr-defined]
            assert list(events) == []
        assert stream.result.outcome is None  # (left before its end: not saved, said so)
        assert any(w.code == "TR-16" for w in stream.result.warnings)
        after_interruption(client, http, store, thread)


def test_an_async_stream_dropped_without_being_left_is_closed_by_the_loop(endpoint: Any) -> None:
    # Entered by hand, read, and dropped: the loop finalizes the abandoned generator (a task of its
    # own), which closes the response and gives the thread back; the next run waits for nothing.
    store = MemoryStore()

    async def main() -> None:
        async with httpx.AsyncClient(limits=httpx.Limits(max_connections=1)) as http, \
                ag.AsyncAgentClient(endpoint.url, http_client=http, store=store, timeout=BOUND) as client:
            thread = client.thread()
            manager = thread.stream("hi")
            events = aiter(await manager.__aenter__())
            await anext(events)
            await anext(events)
            assert in_flight(http) == 1
            del manager, events
            gc.collect()
            # (the loop's finalizer runs as a task: the next run, waiting for the one connection, lets it)
            result = await asyncio.wait_for(client.thread().run("again"), BOUND)
            assert result.outcome == "success"
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            if others:
                await asyncio.wait(others, timeout=BOUND)
            assert all(t.done() for t in others)
            stored = store.load(thread.id)
            assert stored is not None and stored.claim is None
            assert thread.version == stored.version
            assert (await thread.run("again")).outcome == "success"
            assert in_flight(http) == 0

    asyncio.run(main())
