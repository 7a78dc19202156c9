"""The request a run sends, and the results it returns.

Every test body runs through both shells (``drive``: sync and async) against a real ``ScriptedAgent``
served by uvicorn on 127.0.0.1; the agent records what it received, so "nothing was sent" is a count of
requests.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

import agui_client as ag
from agui_client.stores import MemoryStore
from agui_client.testing import (
    Finish,
    Gate,
    ScriptedAgent,
    Start,
    Wait,
    text_message,
)


def nulls_in(value: Any, path: str = "") -> list[str]:
    """JSON pointers of every ``null`` in a wire value."""
    if value is None:
        return [path or "/"]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in nulls_in(v, f"{path}/{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in nulls_in(v, f"{path}/{i}")]
    return []


def test_a_run_posts_json_asking_for_an_event_stream_with_the_callers_headers(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.chat())
    headers = {"Authorization": "Bearer secret", "X-Tenant": "acme", "Accept": "application/json"}

    with drive.client(endpoint.url, headers=headers) as client:
        thread = client.thread()
        thread.run("hi")

    [received] = endpoint.received
    assert received.method == "POST"
    # The caller's Accept is kept, after ours: the answer must be an event stream.
    assert received.headers["accept"] == "text/event-stream, application/json"
    assert received.headers["content-type"] == "application/json"
    assert received.headers["authorization"] == "Bearer secret"
    assert received.headers["x-tenant"] == "acme"


@pytest.mark.parametrize("message", [["first", "second"], [ag.UserMessage(id="u1", content="ok"), {"role": "user"}], 7])
def test_a_turn_that_is_not_text_or_messages_is_refused_before_anything_is_sent(
        drive: Any, served: Any, message: Any) -> None:
    endpoint = served(ScriptedAgent.chat())

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        with pytest.raises(TypeError) as caught:
            thread.run(message)
        after = client.store.load(thread.id)

    assert str(caught.value).startswith("nothing was sent:")
    assert endpoint.received == []
    assert after is None  # (not even claimed: the thread is as it was)


def test_a_run_sends_a_complete_run_agent_input_declaring_protocol_1_0(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.chat())

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        thread.run("hi")

    [received] = endpoint.received
    body = received.body
    assert body["protocolVersion"] == "1.0"
    assert body["threadId"] == thread.id
    assert body["runId"] == endpoint.agent.requests[0].run_id
    assert [(m["role"], m["content"]) for m in body["messages"]] == [("user", "hi")]
    assert (body["state"], body["tools"], body["context"], body["forwardedProps"]) == ({}, [], [], {})
    assert "resume" not in body
    assert nulls_in(body) == []


def test_a_chat_run_returns_its_outcome_text_new_messages_and_usage(drive: Any, served: Any) -> None:
    usage = ag.TokenUsage(provider="scripted", model="m-1", input_tokens=12, output_tokens=2, total_tokens=14)
    endpoint = served(ScriptedAgent([[Start(), *text_message("m1", "Hello there"), Finish(usage=(usage,))]]))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        result = thread.run("hi")

    assert result.outcome == "success"
    assert result.thread_id == thread.id
    assert result.run_id == endpoint.agent.requests[0].run_id
    assert result.text == "Hello there"
    assert result.new_messages == (ag.AssistantMessage(id="m1", content="Hello there"),)
    assert result.usage == (usage,)
    assert [type(m) for m in thread.state.messages] == [ag.UserMessage, ag.AssistantMessage]
    assert result.error is None
    assert result.raise_for_outcome() is result


def test_stream_yields_typed_events_each_already_folded(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([[Start(), *text_message("m1", "one two three"), Finish()]]))
    seen: list[tuple[type, str | None]] = []

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        with thread.stream("hi") as events:
            for event in events:
                message = thread.state.message("m1")
                seen.append((type(event), message.content if message is not None else None))

    assert seen == [
        (ag.RunStartedEvent, None),
        (ag.TextMessageStartEvent, ""),
        (ag.TextMessageContentEvent, "one "),
        (ag.TextMessageContentEvent, "one two "),
        (ag.TextMessageContentEvent, "one two three"),
        (ag.TextMessageEndEvent, "one two three"),
        (ag.RunFinishedEvent, "one two three"),
    ]
    assert events.result is not None
    assert events.result.outcome == "success"


def test_each_event_reaches_the_caller_as_soon_as_its_bytes_arrive(drive: Any, served: Any, gate: Gate) -> None:
    # The server holds the rest of the run until the test opens the gate; a client that buffered the
    # body would get nothing before the server gives up waiting (and cuts the run short).
    endpoint = served(ScriptedAgent([[Start(), Wait(gate, timeout=20), *text_message("m1", "later"), Finish()]]))

    with drive.client(endpoint.url) as client:
        with client.thread().stream("hi") as events:
            iterator = iter(events)
            first = next(iterator)
            # The gate opens only below: the first event arrived while the server held the rest
            # (it reaches the gate right after writing the first event; wait for that, no race).
            held = not gate.is_open and gate.wait_reached(timeout=10)
            gate.open()
            rest = list(iterator)

    assert isinstance(first, ag.RunStartedEvent)
    assert held
    assert type(rest[-1]) is ag.RunFinishedEvent
    assert events.result is not None
    assert events.result.outcome == "success"


def test_run_saves_the_thread_once_the_terminal_event_is_read_not_when_the_response_closes(
        drive: Any, served: Any, gate: Gate) -> None:
    # The producer holds the response open after RUN_FINISHED until the test opens the gate; another
    # process reading the store meanwhile must already find the finished run.
    endpoint = served(ScriptedAgent([[Start(), *text_message("m1", "done"), Finish(), Wait(gate, timeout=20)]]))

    saved = threading.Event()

    class Saves(MemoryStore):
        def save(self, thread_id: str, data: Any, *, expected_version: int | None) -> int:
            version = super().save(thread_id, data, expected_version=expected_version)
            saved.set()
            return version

        def append(self, thread_id: str, changes: Any, *, expected_version: int) -> int:
            version = super().append(thread_id, changes, expected_version=expected_version)
            saved.set()
            return version

    with drive.client(endpoint.url, store=Saves()) as client:
        thread = client.thread()
        outcome: list[Any] = []
        runner = threading.Thread(target=lambda: outcome.append(thread.run("hi")))
        runner.start()
        try:
            assert gate.wait_reached(timeout=10)
            # the client folds the read holding RUN_FINISHED and saves: wait for that save, not for time
            assert saved.wait(timeout=20)
            stored = client.store.load(thread.id)
            seen = [m["id"] for m in stored.data["messages"]] if stored is not None else []
            saved_while_held = not gate.is_open and "m1" in seen
        finally:
            gate.open()
            runner.join(timeout=30)

    assert saved_while_held
    assert outcome and outcome[0].outcome == "success"


def test_a_run_error_gives_the_error_outcome_and_raise_for_outcome_raises_run_failed(
    drive: Any, served: Any
) -> None:
    endpoint = served(ScriptedAgent([[
        Start(), *text_message("m1", "Working on it"), ag.RunErrorEvent(message="model overloaded", code="overloaded"),
    ]]))

    with drive.client(endpoint.url) as client:
        result = client.thread().run("hi")

    assert result.outcome == "error"
    assert result.error is not None
    assert (result.error.message, result.error.code) == ("model overloaded", "overloaded")
    assert result.text == "Working on it"
    with pytest.raises(ag.RunFailed) as caught:
        result.raise_for_outcome()
    assert (caught.value.run_id, caught.value.message, caught.value.code) == (
        result.run_id, "model overloaded", "overloaded")
    assert caught.value.result is result  # (the run, as every error of a run carries it)
