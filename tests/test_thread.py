"""Threads over HTTP, through both shells, against a real ``ScriptedAgent`` served by uvicorn on 127.0.0.1.

Every test body runs twice (``drive``: sync and async). The agent records what it received, so
"nothing was sent" is a count of requests, and the shape of a request is read from the wire.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import signal
import socket
import threading
import time
import zlib
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import anyio
import httpx
import pytest

import agui_client as ag
from agui_client.client import MAX_REDIRECTS
from agui_client.stores import MemoryStore
from agui_client.testing import (
    Disconnect,
    Finish,
    Gate,
    KeepAlive,
    Pause,
    Respond,
    ScriptedAgent,
    Start,
    Stream,
    Wait,
    serve,
    text_message,
    tool_call,
)

KiB = 2**10
MiB = 2**20
UTC = timezone.utc


def interrupted(*ids: str, **fields: Any) -> Finish:
    """``RUN_FINISHED`` ending with the interrupt outcome, one interrupt per id."""
    return Finish(outcome=ag.RunFinishedInterruptOutcome(
        interrupts=tuple(ag.Interrupt(id=i, reason="approval", **fields) for i in ids)))


def clock_at(when: datetime) -> Callable[[], datetime]:
    return lambda: when


def nulls_in(value: Any, path: str = "") -> list[str]:
    """JSON pointers of every ``null`` in a wire value."""
    if value is None:
        return [path or "/"]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in nulls_in(v, f"{path}/{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in nulls_in(v, f"{path}/{i}")]
    return []


# --------------------------------------------------------------------------------------------------
# The request
# --------------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------------
# Interrupts and resume
# --------------------------------------------------------------------------------------------------


def test_a_run_ending_with_the_interrupt_outcome_records_its_interrupts(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.interrupts(2))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        result = thread.run("hi")

    assert result.outcome == "interrupt"
    assert [i.id for i in result.interrupts] == ["interrupt-1", "interrupt-2"]
    assert [i.id for i in thread.open_interrupts] == ["interrupt-1", "interrupt-2"]


def test_a_plain_run_on_an_interrupted_thread_is_refused_before_anything_is_sent(
    drive: Any, served: Any
) -> None:
    endpoint = served(ScriptedAgent.interrupts(2))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        thread.run("hi")
        messages_before = thread.state.messages
        with pytest.raises(ag.UncoveredInterrupts) as caught:
            thread.run("never mind, do something else")

    assert caught.value.ids == ("interrupt-1", "interrupt-2")
    assert endpoint.agent.request_count == 1
    assert thread.state.messages == messages_before


def _finishing(outcome: dict[str, Any] | None) -> Callable[[Any], list[dict[str, Any]]]:
    def step(run_input: Any) -> list[dict[str, Any]]:
        ids = {"threadId": run_input.thread_id, "runId": run_input.run_id}
        finish = {"type": "RUN_FINISHED", **ids, **({"outcome": outcome} if outcome else {})}
        return [{"type": "RUN_STARTED", **ids}, finish]
    return step


@pytest.mark.parametrize("how", ["run", "stream"])
def test_interrupts_of_a_refused_outcome_are_saved_open_and_end_the_resume_claim(drive: Any, served: Any,
                                                                                 how: str) -> None:
    # B232: a resumed run stops to ask again, repeating an interrupt id (IR-06). The outcome is
    # refused, but its interrupts are held open AND saved, so a thread loaded elsewhere cannot move
    # past them either, and the resume's claim ends (the agent answered it): the next resume goes out.
    asked = {"type": "interrupt", "interrupts": [{"id": "i1", "reason": "approval"}]}
    repeated = {"type": "interrupt", "interrupts": [{"id": "i2", "reason": "approval", "message": "a?"},
                                                    {"id": "i2", "reason": "approval", "message": "b?"}]}
    endpoint = served(ScriptedAgent([_finishing(asked), _finishing(repeated), _finishing(None)], stateless=True))

    with drive.client(endpoint.url, store=MemoryStore()) as client:
        thread = client.thread()
        thread.run("go")
        with pytest.raises(ag.SequenceError) as caught:
            if how == "run":
                thread.run(resume=thread.resume_builder().answer("i1", "yes"))
            else:
                with thread.stream(resume=thread.resume_builder().answer("i1", "yes")) as events:
                    list(events)
        elsewhere = client.thread(thread.id)
        with pytest.raises(ag.UncoveredInterrupts):
            elsewhere.run("something else")
        requests_before = endpoint.agent.request_count
        result = elsewhere.run(resume=elsewhere.resume_builder().answer("i2", "yes"))

    assert caught.value.rule == "IR-06"
    assert not getattr(caught.value, "claim_held", False)
    assert [i.message for i in elsewhere.state.open_interrupts] == []
    assert requests_before == 2 and endpoint.agent.request_count == 3
    assert result.outcome == "success"
    sent = endpoint.received[-1].body
    assert [e["interruptId"] for e in sent["resume"]] == ["i2"]


def test_a_resume_built_with_the_builder_answers_and_abandons(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.interrupts(2))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        thread.run("hi")
        builder = thread.resume_builder().answer("interrupt-1", {"answer": "yes"}).abandon("interrupt-2")
        result = thread.run(resume=builder)

    assert result.outcome == "success"
    assert result.result == {"answers": {"interrupt-1": {"answer": "yes"}}, "abandoned": ["interrupt-2"]}
    assert thread.open_interrupts == ()
    assert [(e.interrupt_id, e.status, e.payload) for e in endpoint.agent.requests[1].resume or ()] == [
        ("interrupt-1", "resolved", {"answer": "yes"}), ("interrupt-2", "cancelled", None)]


def test_the_resuming_input_carries_the_thread_its_messages_without_activities_and_its_state(
    drive: Any, served: Any
) -> None:
    endpoint = served(ScriptedAgent([
        [
            Start(),
            ag.StateSnapshotEvent(snapshot={"plan": ["drop staging"], "step": 1}),
            ag.ActivitySnapshotEvent(message_id="act-1", activity_type="progress", content={"percent": 50}),
            *text_message("m1", "May I?"),
            interrupted("ask-1"),
        ],
        [Start(), Finish()],
    ]))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        thread.run("hi")
        activities = [m.id for m in thread.state.messages if isinstance(m, ag.ActivityMessage)]
        thread.run(resume=thread.resume_builder().answer("ask-1", {"ok": True}))

    first, second = (r.body for r in endpoint.received)
    assert activities == ["act-1"]
    assert second["threadId"] == first["threadId"] == thread.id
    assert second["runId"] != first["runId"]
    assert [m["id"] for m in second["messages"]] == [first["messages"][0]["id"], "m1"]
    assert second["state"] == {"plan": ["drop staging"], "step": 1}
    assert second["resume"] == [{"interruptId": "ask-1", "status": "resolved", "payload": {"ok": True}}]


@pytest.mark.parametrize("form", ["builder", "entries"])
def test_answering_an_expired_interrupt_is_refused_before_anything_is_sent(
    drive: Any, served: Any, form: str
) -> None:
    endpoint = served(ScriptedAgent.interrupts(1, expires_at="2026-06-01T00:00:00Z", response_schema=None))

    with drive.client(endpoint.url, clock=clock_at(datetime(2026, 7, 1, tzinfo=UTC))) as client:
        thread = client.thread()
        thread.run("hi")
        resume: Any = thread.resume_builder().answer("interrupt-1", "too late") if form == "builder" else [
            ag.ResumeEntry(interrupt_id="interrupt-1", status="resolved", payload="too late")]
        with pytest.raises(ag.ExpiredInterruptAnswered) as caught:
            thread.run(resume=resume)

    assert caught.value.ids == ("interrupt-1",)
    assert endpoint.agent.request_count == 1


def test_an_expired_interrupt_can_be_abandoned(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.interrupts(1, expires_at="2026-06-01T00:00:00Z", response_schema=None))

    with drive.client(endpoint.url, clock=clock_at(datetime(2026, 7, 1, tzinfo=UTC))) as client:
        thread = client.thread()
        thread.run("hi")
        result = thread.run(resume=thread.resume_builder().abandon("interrupt-1"))

    assert result.outcome == "success"
    assert result.result == {"answers": {}, "abandoned": ["interrupt-1"]}


def test_expiry_is_judged_with_the_clients_clock(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.interrupts(1, expires_at="2026-06-01T00:00:00Z", response_schema=None))

    with drive.client(endpoint.url, clock=clock_at(datetime(2026, 5, 1, tzinfo=UTC))) as client:
        thread = client.thread()
        thread.run("hi")
        result = thread.run(resume=thread.resume_builder().answer("interrupt-1", "in time"))

    assert result.result == {"answers": {"interrupt-1": "in time"}, "abandoned": []}


def test_a_resume_that_may_have_reached_the_agent_keeps_the_thread_claimed_until_released(
    drive: Any, served: Any
) -> None:
    endpoint = served(ScriptedAgent([
        [Start(), interrupted("ask-1")],
        Respond(status=503, body={"detail": "busy"}),
        [Start(), Finish()],
    ]))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        thread.run("hi")
        with pytest.raises(ag.HTTPStatusError):
            thread.run(resume=thread.resume_builder().answer("ask-1", "go"))
        with pytest.raises(ag.ConcurrentResume):
            thread.run(resume=thread.resume_builder().answer("ask-1", "go"))
        sent_while_claimed = endpoint.agent.request_count
        thread.release_claim()
        result = thread.run(resume=thread.resume_builder().answer("ask-1", "go"))

    assert sent_while_claimed == 2
    assert result.outcome == "success"
    assert endpoint.agent.request_count == 3


def ask_then_finish(*messages: str) -> ScriptedAgent:
    """Each run but the last raises interrupt ``i1`` with the next message; the last finishes."""
    return ScriptedAgent([*([Start(), interrupted("i1", message=m)] for m in messages), [Start(), Finish()]],
                         stateless=True)


def test_b275_a_builder_from_one_thread_is_refused_on_another_before_anything_is_sent(
    drive: Any, served: Any
) -> None:
    endpoint = served(ask_then_finish("a question"))  # the script plays per thread: both get i1

    with drive.client(endpoint.url) as client:
        t1, t2 = client.thread("t1"), client.thread("t2")
        t1.run("go")
        t2.run("go")
        builder = t1.resume_builder().answer("i1", {"approved": True})
        with pytest.raises(ag.MisdirectedResume) as caught:
            t2.run(resume=builder)

    assert (caught.value.builder_thread_id, caught.value.thread_id) == ("t1", "t2")
    assert caught.value.ids == ("i1",)
    assert len(endpoint.received) == 2
    assert [i.id for i in t2.open_interrupts] == ["i1"]


@pytest.mark.parametrize("way", ["run", "stream"])
def test_b275_a_kept_builder_is_refused_once_the_thread_is_interrupted_again_under_the_same_id(
    drive: Any, served: Any, way: str
) -> None:
    endpoint = served(ask_then_finish("delete STAGING?", "delete PRODUCTION?"))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        first = thread.run("go")
        stale = thread.resume_builder().answer("i1", {"approved": True})
        thread.run(resume=thread.resume_builder().abandon("i1"))
        with pytest.raises(ag.MisdirectedResume) as caught:
            if way == "run":
                thread.run(resume=stale)
            else:
                with thread.stream(resume=stale):
                    pass

    assert caught.value.builder_run_id == first.run_id
    assert caught.value.interrupted_run_id == thread.state.interrupted_run_id != first.run_id
    assert len(endpoint.received) == 2
    assert [i.message for i in thread.open_interrupts] == ["delete PRODUCTION?"]


def test_a_builder_still_answers_its_run_after_the_thread_is_read_again_from_the_store(
    drive: Any, served: Any
) -> None:
    endpoint = served(ask_then_finish("delete STAGING?"))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        thread.run("go")
        builder = thread.resume_builder().answer("i1", {"approved": True})
        thread.reload()
        elsewhere = client.thread(thread.id)
        result = elsewhere.run(resume=builder)

    assert result.outcome == "success"
    assert endpoint.received[-1].body["resume"] == [
        {"interruptId": "i1", "status": "resolved", "payload": {"approved": True}}]


def test_an_unbound_builder_is_matched_by_id_alone(drive: Any, served: Any) -> None:
    endpoint = served(ask_then_finish("delete STAGING?"))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        first = thread.run("go")
        result = thread.run(resume=ag.ResumeBuilder(first.interrupts).answer("i1", {"approved": True}))

    assert result.outcome == "success"


NOT_JSON = [
    pytest.param({1, 2}, id="set"),
    pytest.param(b"yes", id="bytes"),
    pytest.param(float("nan"), id="nan"),
    pytest.param(float("inf"), id="inf"),
    pytest.param("x\ud800", id="lone-surrogate"),
    pytest.param(datetime(2026, 1, 1), id="datetime"),
]


@pytest.mark.parametrize("form", ["builder", "entries"])
@pytest.mark.parametrize("payload", NOT_JSON)
def test_a_resume_payload_json_cannot_hold_is_refused_before_the_claim_and_anything_is_sent(
    drive: Any, served: Any, payload: Any, form: str
) -> None:
    endpoint = served(ask_then_finish("approve?"))
    store = MemoryStore()

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        thread.run("go")
        with pytest.raises(ag.UnencodableResumePayload) as caught:
            if form == "builder":
                thread.run(resume=thread.resume_builder().answer("i1", {"answer": [payload]}))
            else:
                thread.run(resume=[ag.ResumeEntry(interrupt_id="i1", status="resolved", payload={"answer": [payload]})])
        sent = len(endpoint.received)
        claim = store.load(thread.id).claim  # type: ignore[union-attr]
        result = thread.run(resume=thread.resume_builder().answer("i1", "yes"))

    assert (caught.value.interrupt_id, caught.value.field, caught.value.pointer) == ("i1", "payload", "/answer/0")
    assert isinstance(caught.value, ag.ResumeRefused)
    assert sent == 1
    assert claim is None
    assert result.outcome == "success"


@pytest.mark.parametrize(("arguments", "field", "pointer"), [
    pytest.param({"forwarded_props": {"trace": {"at": datetime(2026, 1, 1)}}}, "forwardedProps", "/trace/at",
                 id="forwarded-props"),
    pytest.param({"state": {"seen": {1, 2}}}, "state", "/seen", id="state"),
    pytest.param({"state": float("nan")}, "state", "", id="state-nan"),
    pytest.param({"context": [ag.Context(description="ok", value="fine"),
                              ag.Context(description="d", value="x\udc00")]}, "context", "/1/value", id="context"),
    pytest.param({"tools": [ag.Tool(name="t", description="d", parameters={"default": b"x"})]}, "tools",
                 "/0/parameters/default", id="tools"),
    pytest.param({"message": "hello \ud83d"}, "messages", "/0/content", id="new-message"),
])
@pytest.mark.parametrize("resuming", [False, True], ids=["plain-run", "resume"])
def test_a_run_input_value_json_cannot_hold_is_refused_before_the_claim_and_anything_is_sent(
    drive: Any, served: Any, arguments: dict[str, Any], field: str, pointer: str, resuming: bool
) -> None:
    endpoint = served(ask_then_finish("approve?") if resuming else ScriptedAgent.chat("hi"))
    store = MemoryStore()

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        if resuming:
            thread.run("go")
            arguments = {**arguments, "resume": thread.resume_builder().abandon("i1")}
            if "message" in arguments:
                pointer = f"/{len(thread.state.messages)}/content"
        before = len(endpoint.received)
        with pytest.raises(ag.UnencodableValue) as caught:
            thread.run(**arguments)
        stored = store.load(thread.id)

    assert (caught.value.field, caught.value.pointer) == (field, pointer)
    assert not isinstance(caught.value, ag.ResumeRefused)
    assert len(endpoint.received) == before
    assert stored is None or stored.claim is None


def test_a_value_json_cannot_hold_that_reached_the_thread_by_hand_is_still_refused_before_the_claim(
    drive: Any, served: Any
) -> None:
    endpoint = served(ask_then_finish("approve?"))
    store = MemoryStore()

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        thread.run("go")
        thread.add_message(ag.UserMessage(id="by-hand", content={"a": {1}}))  # type: ignore[arg-type]
        with pytest.raises(ag.UnencodableValue) as caught:
            thread.run(resume=thread.resume_builder().abandon("i1"))
        claim = store.load(thread.id).claim  # type: ignore[union-attr]
        by_hand = len(thread.state.messages) - 1

    assert caught.value.field == "input"
    assert caught.value.pointer == f"/messages/{by_hand}/content/a"
    assert claim is None
    assert len(endpoint.received) == 1


@pytest.mark.parametrize("content", NOT_JSON + [pytest.param({"k": {1}}, id="nested-set")])
def test_a_tool_result_json_cannot_hold_is_refused_when_added(drive: Any, served: Any, content: Any) -> None:
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        result = thread.run("pick one")
        messages = thread.state.messages
        with pytest.raises(ag.UnencodableValue) as caught:
            thread.add_tool_result(result.pending_tool_calls[0].id, content)

    assert caught.value.field == "content"
    assert thread.state.messages == messages


@pytest.mark.parametrize("form", ["builder", "entries"])
def test_b273_a_resolved_entry_without_payload_is_sent_without_one_and_warns(
    drive: Any, served: Any, form: str
) -> None:
    endpoint = served(ask_then_finish("approve?"))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        thread.run("go")
        resume: Any = thread.resume_builder().answer("i1", None) if form == "builder" else [
            ag.ResumeEntry(interrupt_id="i1", status="resolved", payload=None)]
        with pytest.warns(ag.AguiWarning) as warned:
            thread.run(resume=resume)

    assert [str(w.message) for w in warned if "i1" in str(w.message) and "IR-11" in str(w.message)]
    assert endpoint.received[-1].body["resume"] == [{"interruptId": "i1", "status": "resolved"}]


@pytest.mark.parametrize("way", ["run", "stream"])
@pytest.mark.parametrize("form", ["builder", "entries"])
def test_b269_pending_unknown_sends_entries_for_a_thread_that_holds_no_interrupts(
    drive: Any, served: Any, form: str, way: str
) -> None:
    endpoint = served(ScriptedAgent([[Start(), Finish()]], stateless=True))

    with drive.client(endpoint.url) as client:
        thread = client.thread("rebuilt-elsewhere")
        resume: Any = thread.resume_builder().answer("i1", {"approved": True}) if form == "builder" else [
            ag.ResumeEntry(interrupt_id="i1", status="resolved", payload={"approved": True})]
        with pytest.raises(ag.NothingToResume):
            thread.run(resume=resume)
        refused_sent = len(endpoint.received)
        if way == "run":
            result = thread.run(resume=resume, pending_unknown=True)
        else:
            with thread.stream(resume=resume, pending_unknown=True) as events:
                list(events)
            result = events.result

    assert refused_sent == 0
    assert result.outcome == "success"
    assert endpoint.received[-1].body["resume"] == [
        {"interruptId": "i1", "status": "resolved", "payload": {"approved": True}}]


def test_b269_pending_unknown_still_refuses_a_list_leaving_a_held_interrupt_uncovered(
    drive: Any, served: Any
) -> None:
    endpoint = served(ScriptedAgent.interrupts(2))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        thread.run("hi")
        with pytest.raises(ag.UncoveredInterrupts) as caught:
            thread.run(resume=[ag.ResumeEntry(interrupt_id="interrupt-1", status="cancelled")], pending_unknown=True)

    assert caught.value.ids == ("interrupt-2",)
    assert len(endpoint.received) == 1


def test_a_stale_copy_of_a_thread_is_refused_before_it_sends_anything(drive: Any, served: Any) -> None:
    # Nothing lost or sent twice across replicas, for every run (not only resumes): a copy loaded
    # before another writer ran on the thread would send stale history that skips the interrupt the
    # other run raised. It is refused by its claim, before the request; reload() catches up.
    endpoint = served(ScriptedAgent([_finishing(None), _finishing(
        {"type": "interrupt", "interrupts": [{"id": "i1", "reason": "approval"}]})], stateless=True))

    with drive.client(endpoint.url, store=MemoryStore()) as client:
        first = client.thread()
        first.run("hello")
        stale = client.thread(first.id)
        first.run("delete it")  # interrupted: the stale copy does not know
        with pytest.raises(ag.ConcurrentResume):
            stale.run("something else")
        sent = endpoint.agent.request_count
        stale.reload()

    assert sent == 2
    assert [i.id for i in stale.open_interrupts] == ["i1"]


def test_two_replicas_answering_one_tool_call_send_it_once(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))

    with drive.client(endpoint.url, store=MemoryStore()) as client:
        asked = client.thread()
        (call_id,) = asked.run("choose").pending_tool_call_ids
        one, two = client.thread(asked.id), client.thread(asked.id)
        one.add_tool_result(call_id, "yes")
        two.add_tool_result(call_id, "no")
        one.run()
        with pytest.raises(ag.ConcurrentResume):
            two.run()

    assert endpoint.agent.request_count == 2
    assert endpoint.received[-1].body["messages"][-1]["content"] == "yes"


@pytest.mark.parametrize("how", ["run", "stream-left-early"])
def test_a_run_that_is_not_a_resume_lets_go_of_the_thread_when_it_fails(drive: Any, served: Any, how: str) -> None:
    # Its claim is released (sending the turn again is an ordinary retry); a resume's stays held.
    endpoint = served(ScriptedAgent([_finishing(None), Respond(status=500, body="oops"),
                                     [Start(), *text_message("m1", "a b c d"), Finish()], _finishing(None)]))

    with drive.client(endpoint.url, store=MemoryStore()) as client:
        thread = client.thread()
        thread.run("hello")
        with pytest.raises(ag.HTTPStatusError):
            thread.run("again")
        if how == "stream-left-early":
            with thread.stream("and again") as events:
                next(iter(events))
        result = thread.run("once more")
        elsewhere = client.thread(thread.id)

    assert result.outcome == "success"
    assert elsewhere.version == thread.version


def test_a_thread_loaded_from_the_store_sees_runs_made_elsewhere_after_reload(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.chat("noted"))
    store = MemoryStore()

    with drive.client(endpoint.url, store=store) as client:
        writer = client.thread()
        writer.run("first")
        reader = client.thread(writer.id)
        loaded = reader.state.messages
        writer.run("second")
        reader.reload()

    assert loaded == writer.state.messages[:2]
    assert reader.state.messages == writer.state.messages
    assert len(reader.state.messages) == 4


# --------------------------------------------------------------------------------------------------
# Frontend tools
# --------------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------------
# HTTP status
# --------------------------------------------------------------------------------------------------


def test_a_non_2xx_answer_is_an_http_status_error_with_the_parsed_payload(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([Respond(status=400, body={"detail": "invalid input"})]))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        with pytest.raises(ag.HTTPStatusError) as caught:
            thread.run("hi")

    assert caught.value.status_code == 400
    assert caught.value.payload == {"detail": "invalid input"}
    assert caught.value.retry_after is None
    assert caught.value.url == endpoint.url
    assert thread.state.messages == ()


@pytest.mark.parametrize("content_type", ["application/json", "application/problem+json",
                                          "application/vnd.api+json"])
def test_a_long_json_error_body_is_still_parsed_and_its_excerpt_bounded(
    drive: Any, served: Any, content_type: str
) -> None:
    # B054: a validation report is often longer than the excerpt kept; JSON media types (any +json)
    # are parsed from up to ERROR_JSON_LIMIT bytes, while .body stays a bounded excerpt.
    detail = [{"loc": ["body", "messages", i], "msg": "field required"} for i in range(80)]
    endpoint = served(ScriptedAgent([Respond(status=422, body=json.dumps({"detail": detail}),
                                             content_type=content_type)]))

    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    assert caught.value.payload == {"detail": detail}
    assert len(caught.value.body) <= ag.client.ERROR_BODY_LIMIT < len(json.dumps({"detail": detail}))


def test_a_json_error_body_nested_deeper_than_the_parser_goes_is_kept_as_text(drive: Any, served: Any) -> None:
    # 60,000 "[" in a JSON error body (within ERROR_JSON_LIMIT): the parser's recursion must not
    # escape as a crash; the error is the HTTPStatusError, with no payload.
    endpoint = served(ScriptedAgent([Respond(status=400, body="[" * 60_000, content_type="application/json")]))

    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    assert caught.value.status_code == 400 and caught.value.payload is None
    assert caught.value.body.startswith("[[[")


def test_a_401_is_an_authentication_error_that_never_repeats_the_credentials(drive: Any, served: Any) -> None:
    # B055: typed, not retried, and an agent echoing the token does not put it in our message or body.
    token = "sk-live-0123456789abcdef"
    endpoint = served(ScriptedAgent([Respond(status=401, body={"error": "unauthorized", "got": f"Bearer {token}"})]))

    with drive.client(endpoint.url, headers={"Authorization": f"Bearer {token}"}) as client:
        with pytest.raises(ag.AuthenticationError) as caught:
            client.thread().run("hi")

    assert caught.value.status_code == 401 and endpoint.agent.request_count == 1
    assert token not in str(caught.value) and token not in caught.value.body
    assert token not in json.dumps(caught.value.payload) and caught.value.payload["error"] == "unauthorized"


def test_retry_after_in_seconds_is_read_and_nothing_is_retried(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([Respond(status=429, body={"detail": "slow down"}, headers={"Retry-After": "7"})]))

    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    assert caught.value.status_code == 429
    assert caught.value.retry_after == 7.0
    assert endpoint.agent.request_count == 1


def test_retry_after_as_an_http_date_is_read_as_seconds_from_now(drive: Any, served: Any) -> None:
    when = datetime.now(UTC) + timedelta(seconds=120)
    endpoint = served(ScriptedAgent([
        Respond(status=503, body="busy", headers={"Retry-After": email.utils.format_datetime(when, usegmt=True)})]))

    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    assert caught.value.retry_after is not None
    assert 60 < caught.value.retry_after <= 120


def test_the_body_of_an_error_is_kept_as_a_bounded_excerpt(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([Respond(status=500, body="x" * (5 * MiB))]))

    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    assert caught.value.status_code == 500
    assert 0 < len(caught.value.body.encode()) <= 2 * KiB
    assert caught.value.payload is None


def test_a_refused_connection_is_a_transport_error_that_sent_nothing(drive: Any) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/agent"

    with drive.client(url) as client:
        with pytest.raises(ag.TransportError) as caught:
            client.thread().run("hi")

    assert type(caught.value) is ag.TransportError
    assert caught.value.request_sent is False


# --------------------------------------------------------------------------------------------------
# Content types
# --------------------------------------------------------------------------------------------------

NDJSON = b'{"type":"RUN_STARTED","threadId":"t","runId":"r"}\n{"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n'


@pytest.mark.parametrize(("step", "arrived"), [
    pytest.param(Respond(status=200, body="<html><body>Please log in</body></html>",
                         content_type="text/html; charset=utf-8"), "text/html", id="B045-html"),
    pytest.param(Stream(items=[NDJSON], content_type="application/x-ndjson"), "application/x-ndjson",
                 id="B046-ndjson"),
    pytest.param(Respond(status=200, body={"detail": "queued"}), "application/json", id="json"),
])
def test_a_2xx_answer_that_is_not_an_event_stream_is_a_protocol_error_naming_what_arrived(
    drive: Any, served: Any, step: Any, arrived: str
) -> None:
    endpoint = served(ScriptedAgent([step]))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        with pytest.raises(ag.ProtocolError) as caught:
            thread.run("hi")

    assert arrived in str(caught.value)
    assert caught.value.rule in ("TR-04", "TR-09")
    assert all(run.outcome is None for run in thread.state.runs)


@pytest.mark.parametrize("items", [
    pytest.param([], id="B050-empty"),
    pytest.param([KeepAlive(comment="ping"), KeepAlive(comment="ping")], id="B051-only-comments"),
])
def test_an_event_stream_without_events_ends_the_run_unfinished(drive: Any, served: Any, items: list[Any]) -> None:
    endpoint = served(ScriptedAgent([Stream(items=items)]))

    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.StreamEnded) as caught:
            client.thread().run("hi")

    assert caught.value.result is not None
    assert caught.value.result.outcome is None
    assert caught.value.result.events == 0


@pytest.mark.parametrize("content_type", ["text/event-stream; charset=utf-8", "Text/Event-Stream"])
def test_event_stream_content_types_are_matched_loosely(drive: Any, served: Any, content_type: str) -> None:
    endpoint = served(ScriptedAgent([
        Stream(items=[Start(), *text_message("m1", "fine"), Finish()], content_type=content_type)]))

    with drive.client(endpoint.url) as client:
        result = client.thread().run("hi")

    assert result.outcome == "success"
    assert result.text == "fine"
    assert [w.code for w in result.warnings] == []


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
def test_a_compressed_event_stream_is_decoded_before_it_is_framed(drive: Any, served: Any, coding: str) -> None:
    # The body is read undecoded only when it has no content coding (a few per cent of a large
    # stream's reading): a proxy that compresses the stream must still be read through httpx's decoders.
    frames = [b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n',
              b'data: {"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}\n\n',
              *(f'data: {{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"{word} "}}\n\n'.encode()
                for word in ("compressed", "but", "whole")),
              b'data: {"type":"TEXT_MESSAGE_END","messageId":"m1"}\n\n',
              b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n']

    async def compressing(scope: Any, receive: Any, send: Any) -> None:
        packer = zlib.compressobj(wbits=31 if coding == "gzip" else 15)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream"), (b"content-encoding", coding.encode())]})
        for frame in frames:  # one flushed piece per event, so the client decodes piece by piece
            await send({"type": "http.response.body", "body": packer.compress(frame) + packer.flush(zlib.Z_SYNC_FLUSH),
                        "more_body": True})
        await send({"type": "http.response.body", "body": packer.flush(), "more_body": False})

    endpoint = served(compressing)

    with drive.client(endpoint.url) as client:
        result = client.thread("t").run("hi", run_id="r")

    assert result.outcome == "success"
    assert result.text == "compressed but whole "
    assert [w.code for w in result.warnings] == []


def test_a_body_that_stops_decoding_mid_run_is_a_transport_error_keeping_what_was_folded(
    drive: Any, served: Any
) -> None:
    # httpx's DecodingError is not one of its transport errors: it escaped untyped, without the state.
    packer = zlib.compressobj(wbits=31)
    head = packer.compress(b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
                           b'data: {"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}\n\n'
                           b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"hello"}\n\n')
    head += packer.flush(zlib.Z_SYNC_FLUSH)

    async def corrupt(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream"), (b"content-encoding", b"gzip")]})
        await send({"type": "http.response.body", "body": head, "more_body": True})
        await send({"type": "http.response.body", "body": b"\xff\xff\xff\xff not gzip", "more_body": False})

    endpoint = served(corrupt)

    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.TransportError) as caught:
            client.thread("t").run("hi", run_id="r")

    assert "gzip" in str(caught.value)
    assert caught.value.result is not None and caught.value.result.text == "hello"


def test_a_framing_warning_names_the_run_and_the_index_its_frame_would_have_had(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([Stream(items=[Start(), b'{"type":"CUSTOM","name":"x","value":1}\n\n',
                                                   *text_message("m1", "hi"), Finish()])]))

    with drive.client(endpoint.url) as client:
        result = client.thread().run("hi")

    assert [(w.code, w.index, w.run_id) for w in result.warnings] == [("AGUI501", 1, result.run_id)]
    assert "byte " in result.warnings[0].message


def _redirecting(location: str | None) -> Callable[..., Any]:
    # (None: back to the path asked, a loop)
    async def app(scope: Any, receive: Any, send: Any) -> None:
        target = location if location is not None else scope["path"]
        await send({"type": "http.response.start", "status": 307,
                    "headers": [(b"location", target.encode()), (b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})
    return app


def test_a_same_origin_redirect_is_followed_only_when_enabled_with_the_body_sent_again(
    drive: Any, served: Any
) -> None:
    agent = served(ScriptedAgent.chat("moved"))
    old = served(_redirecting(agent.url))

    with drive.client(old.url) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")
    with drive.client(old.url, follow_redirects=True, headers={"X-Api-Key": "k"}) as client:
        result = client.thread().run("hi")

    assert caught.value.status_code == 307 and "follow_redirects" in str(caught.value)
    assert result.outcome == "success" and result.text == "moved"
    assert len(old.received) == 2 and len(agent.received) == 1
    assert agent.received[0].body["messages"][-1]["content"] == "hi"  # 307: the same POST, body and all
    assert agent.received[0].headers["x-api-key"] == "k"


def test_a_redirect_to_another_origin_is_not_followed_so_no_header_leaves(drive: Any, served: Any) -> None:
    # B065: httpx drops Authorization on a cross-origin hop, but not the caller's other headers (an API
    # key): the hop is refused instead, and the other origin never hears of the request.
    other = ScriptedAgent.chat("stolen")
    with serve(other) as elsewhere:
        old = served(_redirecting(elsewhere.url))
        with drive.client(old.url, follow_redirects=True, headers={"X-Api-Key": "k"}) as client:
            with pytest.raises(ag.HTTPStatusError) as caught:
                client.thread().run("hi")

    assert caught.value.status_code == 307
    assert other.request_count == 0


def test_a_redirect_loop_ends_after_a_bounded_number_of_hops(drive: Any, served: Any) -> None:
    # B066: a typed error, never httpx's own exception.
    loop = served(_redirecting(None))

    with drive.client(loop.url, follow_redirects=True) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    assert caught.value.status_code == 307
    assert len(loop.received) == 1 + MAX_REDIRECTS


# --------------------------------------------------------------------------------------------------
# Dropped connections and timeouts
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("end", [
    pytest.param(Disconnect(), id="dropped"),
    pytest.param(None, id="B073-clean-eof"),
])
def test_a_stream_ending_mid_message_keeps_the_text_folded_so_far(drive: Any, served: Any, end: Any) -> None:
    items = [Start(), ag.TextMessageStartEvent(message_id="m1"),
             ag.TextMessageContentEvent(message_id="m1", delta="Hello, "),
             ag.TextMessageContentEvent(message_id="m1", delta="wor")]
    endpoint = served(ScriptedAgent([items + ([end] if end is not None else [])]))

    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.StreamEnded) as caught:
            client.thread().run("hi")

    result = caught.value.result
    assert result is not None
    assert result.outcome is None
    assert result.state.message("m1") == ag.AssistantMessage(id="m1", content="Hello, wor")
    assert result.state.incomplete_ids == {"m1"}


def test_a_stream_ending_right_after_run_started_is_unfinished(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([[Start()]]))

    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.StreamEnded) as caught:
            client.thread().run("hi")

    result = caught.value.result
    assert result is not None
    assert (result.run_id, result.outcome, result.events) == (endpoint.agent.requests[0].run_id, None, 1)


def test_a_tool_call_cut_mid_arguments_is_never_offered_as_pending(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([[
        Start(), ag.ToolCallStartEvent(tool_call_id="c1", tool_call_name="search"),
        ag.ToolCallArgsEvent(tool_call_id="c1", delta='{"pattern":"*.t'), Disconnect(),
    ]]))

    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.StreamEnded) as caught:
            client.thread().run("hi")

    result = caught.value.result
    assert result is not None
    assert result.pending_tool_call_ids == ()
    assert result.state.pending_tool_call_ids == ()
    assert result.state.incomplete_ids == {"c1"}


def test_an_injected_http_client_without_timeouts_still_gets_the_idle_timeout(drive: Any, served: Any,
                                                                               gate: Gate) -> None:
    # The AgentClient's timeouts are set on every request: a caller's client built with
    # timeout=None cannot leave a run waiting forever on a silent server.
    endpoint = served(ScriptedAgent([[Start(), Wait(gate, timeout=20), Finish()]]))

    with drive.client(endpoint.url, idle_timeout=0.5, http_client=drive.http_client(timeout=None)) as client:
        with pytest.raises(ag.IdleTimeout) as caught:
            client.thread().run("hi")

    assert caught.value.timeout == 0.5 and gate.reached


def test_a_stalled_stream_ends_in_an_idle_timeout(drive: Any, served: Any, gate: Gate) -> None:
    endpoint = served(ScriptedAgent([[Start(), ag.TextMessageStartEvent(message_id="m1"),
                                      ag.TextMessageContentEvent(message_id="m1", delta="Dele"),
                                      Wait(gate, timeout=20), Finish()]]))

    with drive.client(endpoint.url, idle_timeout=0.5) as client:
        thread = client.thread()
        with pytest.raises(ag.IdleTimeout) as caught:
            thread.run("hi")

    assert caught.value.timeout == 0.5
    assert gate.reached
    assert caught.value.result is not None
    assert caught.value.result.run_id == endpoint.agent.requests[0].run_id
    assert caught.value.result.outcome is None
    # The message cut by the stall is kept as far as it went, flagged, never silently closed; the
    # error says where the run stopped (the index the next event would have had).
    assert (caught.value.run_id, caught.value.index) == (caught.value.result.run_id, 3)
    assert thread.state.incomplete_ids == {"m1"}
    assert thread.state.message("m1").content == "Dele"  # type: ignore[union-attr]


def test_keep_alive_comments_reset_the_idle_timeout(drive: Any, served: Any) -> None:
    # 0.9 s of events-free stream against a 0.75 s idle timeout, never more than 0.3 s without a byte.
    endpoint = served(ScriptedAgent([[
        Start(), KeepAlive(), Pause(0.3), KeepAlive(), Pause(0.3), KeepAlive(), Pause(0.3), KeepAlive(),
        *text_message("m1", "still here"), Finish(),
    ]]))

    with drive.client(endpoint.url, idle_timeout=0.75) as client:
        result = client.thread().run("hi")

    assert result.outcome == "success"
    assert result.text == "still here"


def test_state_none_keeps_the_threads_state_and_a_value_replaces_it(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.chat())
    with drive.client(endpoint.url) as client:
        thread = client.thread()
        thread.run("one", state={"k": 1})
        thread.run("two", state=None)
    first, second = endpoint.received
    assert first.body["state"] == {"k": 1}
    assert second.body["state"] == {"k": 1}


# --------------------------------------------------------------------------------------------------
# STATE_SNAPSHOT documents: adopted by run() (nobody sees its events), copied for stream()'s caller
# --------------------------------------------------------------------------------------------------

SNAPSHOT = {"plan": ["drop staging"], "step": 1, "nested": {"k": [1, 2]}}


def _snapshot_then_deltas() -> ScriptedAgent:
    return ScriptedAgent([[
        Start(),
        {"type": "STATE_SNAPSHOT", "snapshot": SNAPSHOT},
        {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/step", "value": 2},
                                          {"op": "add", "path": "/nested/k/-", "value": 3}]},
        Finish(),
    ]])


def _copies_of_snapshots(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    from agui_client.core.fold import document as fold

    copied: list[Any] = []
    real = fold.copy_json

    def spy(value: Any) -> Any:
        if isinstance(value, dict) and "plan" in value:
            copied.append(value)
        return real(value)

    monkeypatch.setattr(fold, "copy_json", spy)
    return copied


def _keeps_no_callers_payload(thread: Any) -> bool:
    """After a run, a snapshot event the application folds by hand is copied, never held as it is: a run
    that kept its own payloads uncopied leaves no such mode behind."""
    mine = {"mine": [1]}
    thread.state.apply(ag.StateSnapshotEvent(snapshot=mine))
    mine["mine"].append(2)
    return bool(thread.state.state == {"mine": [1]})


def test_run_keeps_a_state_snapshot_uncopied_and_leaves_no_mode_behind(
        drive: Any, served: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint = served(_snapshot_then_deltas())
    copied = _copies_of_snapshots(monkeypatch)

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        result = thread.run("hi")

        assert result.outcome == "success"
        assert copied == []  # the snapshot's document became the thread's state as decoded
        assert thread.state.state == {"plan": ["drop staging"], "step": 2, "nested": {"k": [1, 2, 3]}}
        stored = client.store.load(thread.id)
        assert stored is not None and stored.data["state"] == thread.state.state
        assert _keeps_no_callers_payload(thread)


def test_stream_hands_out_snapshot_events_the_fold_never_mutates(
        drive: Any, served: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint = served(_snapshot_then_deltas())
    copied = _copies_of_snapshots(monkeypatch)

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        with thread.stream("hi") as events:
            snapshots = [e for e in events if isinstance(e, ag.StateSnapshotEvent)]

        assert copied != []
        assert [e.snapshot for e in snapshots] == [SNAPSHOT]  # the later deltas went to the thread's copy
        assert thread.state.state == {"plan": ["drop staging"], "step": 2, "nested": {"k": [1, 2, 3]}}
        assert _keeps_no_callers_payload(thread)


def test_a_failed_run_leaves_no_mode_behind(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([[Start(), {"type": "STATE_SNAPSHOT", "snapshot": SNAPSHOT}, b"data: {oops\n\n"]]))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        with pytest.raises(ag.ProtocolError):
            thread.run("hi")

        assert _keeps_no_callers_payload(thread)


def test_load_thread_reads_the_store_off_the_event_loop() -> None:
    """``AsyncAgentClient.load_thread`` reads a blocking store (SQLite, Redis) in a worker thread: the
    event loop goes on meanwhile (here it must run to release the store's read at all)."""
    import asyncio

    release = threading.Event()

    class SlowStore(MemoryStore):
        def load(self, thread_id: str) -> Any:
            if not release.wait(10):
                raise AssertionError("the store was read on the event loop, which stood still")
            return super().load(thread_id)

    store = SlowStore()
    store.save("t", ag.ThreadState(messages=[ag.UserMessage(id="u1", content="hi")]).dump(), expected_version=None)

    async def main() -> ag.AsyncThread:
        async with ag.AsyncAgentClient("http://127.0.0.1:9/agent", store=store) as client:
            loading = asyncio.ensure_future(client.load_thread("t"))
            await asyncio.sleep(0)
            release.set()  # reached only while the read waits elsewhere
            return await loading

    thread = asyncio.run(main())
    assert thread.version == 1
    assert [m.content for m in thread.state.messages] == ["hi"]


def test_a_thread_id_with_a_lone_surrogate_is_refused_before_anything(drive: Any, served: Any) -> None:
    # No store can key it and the agent would be sent another id (U+FFFD): refused, typed.
    endpoint = served(ScriptedAgent.chat("hi"))
    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.UnencodableValue) as caught:
            client.thread("t-\udc80")
    assert caught.value.field == "threadId" and endpoint.agent.request_count == 0


# --- Runs interrupted from outside: Ctrl-C, a cancelled task (a web request whose client left) ---

def _cancelled(coroutine: Any, after: float) -> None:
    asyncio.run(_cancel_after(coroutine, after, "wait_for"))


def _stored_after(url: str, store: MemoryStore, message: str) -> ag.AsyncThread:
    """A new thread of ``store`` after one run of ``message`` (through the async client, then closed)."""
    async def main() -> ag.AsyncThread:
        async with ag.AsyncAgentClient(url, store=store) as client:
            thread = client.thread()
            await thread.run(message)
            return thread
    return asyncio.run(main())


@pytest.mark.parametrize("how", ["run", "stream"])
def test_a_cancelled_run_lets_go_of_its_thread_so_the_next_one_goes_out(served: Any, how: str) -> None:
    # asyncio.wait_for() (or a web framework whose client left) cancels the task mid-stream. A run
    # that is not a resume lets go of the thread, as a failed one does: the next turn is not refused.
    endpoint = served(ScriptedAgent([_finishing(None), [Start(), Pause(5)], _finishing(None)]))
    store = MemoryStore()

    thread = _stored_after(endpoint.url, store, "hello")

    async def second() -> None:
        async with ag.AsyncAgentClient(endpoint.url, store=store) as client:
            stalled = client.thread(thread.id)
            if how == "run":
                await stalled.run("and then?")
            else:
                async with stalled.stream("and then?") as events:
                    async for _ in events:
                        pass

    _cancelled(second(), 0.5)
    claim = store.load(thread.id).claim  # type: ignore[union-attr]
    with ag.AgentClient(endpoint.url, store=store) as client:
        result = client.thread(thread.id).run("once more")

    assert claim is None
    assert result.outcome == "success" and endpoint.agent.request_count == 3


def test_a_resume_cancelled_after_its_request_went_out_keeps_the_thread_claimed(
    served: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # Its request may have reached the agent, which may have acted: as after a failure, the claim
    # stays until someone decides (release_claim()), and the log says so.
    endpoint = served(ScriptedAgent([[Start(), interrupted("ask-1")], [Start(), Pause(5)], [Start(), Finish()]]))
    store = MemoryStore()

    thread = _stored_after(endpoint.url, store, "hi")

    async def resume() -> None:
        async with ag.AsyncAgentClient(endpoint.url, store=store) as client:
            again = client.thread(thread.id)
            await again.run(resume=again.resume_builder().answer("ask-1", "go"))

    with caplog.at_level(logging.WARNING, logger="agui_client"):
        _cancelled(resume(), 0.5)
    stored = store.load(thread.id)

    assert stored is not None and stored.claim is not None
    assert any("stays claimed" in r.getMessage() for r in caplog.records)
    assert endpoint.agent.request_count == 2


async def _cancel_after(coroutine: Any, seconds: float, how: str) -> None:
    """Cancel ``coroutine`` after ``seconds``: once (asyncio.wait_for), or as a cancel scope does
    (anyio, hence Starlette and FastAPI: every later await is cancelled too)."""
    if how == "wait_for":
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(coroutine, seconds)
        return
    with anyio.move_on_after(seconds) as scope:
        await coroutine
    assert scope.cancelled_caught


async def _cancel_once(coroutine: Any, reached: threading.Event, how: str, then: threading.Event) -> None:
    """Cancel ``coroutine`` as soon as ``reached`` is set (once, as ``asyncio.wait_for`` does, or as a cancel
    scope does: every later await is cancelled too), then set ``then``."""
    if how == "wait_for":
        task = asyncio.ensure_future(coroutine)
        await asyncio.to_thread(reached.wait, 10)
        task.cancel()
        then.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        return
    with anyio.CancelScope() as scope:
        async def cancel() -> None:
            await anyio.to_thread.run_sync(reached.wait, 10)
            scope.cancel()
            then.set()

        async with anyio.create_task_group() as group:
            group.start_soon(cancel)
            await coroutine
    assert scope.cancelled_caught


@pytest.mark.parametrize("how", ["wait_for", "cancel-scope"])
@pytest.mark.parametrize("resuming", [False, True])
def test_a_run_cancelled_while_its_claim_is_written_gives_it_back_and_sends_nothing(served: Any,
                                                                                    resuming: bool,
                                                                                    how: str) -> None:
    # The claim runs in a worker thread a cancellation cannot stop: the run waits for it to land,
    # gives it back (nothing was sent) and keeps its version the store's, so the thread still runs.
    # A cancel scope cancels the waits for the claim and for its release too: they are waited out.
    endpoint = served(ScriptedAgent([[Start(), interrupted("ask-1")] if resuming else _finishing(None),
                                     _finishing(None)]))
    writing = threading.Event()
    cancelled = threading.Event()

    class SlowClaims(MemoryStore):
        def claim(self, thread_id: str, *, expected_version: int | None, owner: str, data: Any = None) -> int:
            if expected_version is not None:  # (the attempt's claim, not the first run's creating one)
                writing.set()
                assert cancelled.wait(10)  # the claim lands only once the run was cancelled
            return super().claim(thread_id, expected_version=expected_version, owner=owner, data=data)

    store = SlowClaims()

    async def main() -> tuple[int | None, int | None, ag.RunResult]:
        async with ag.AsyncAgentClient(endpoint.url, store=store) as client:
            thread = client.thread()
            await thread.run("hello")
            attempt = (thread.run(resume=thread.resume_builder().answer("ask-1", "go")) if resuming
                       else thread.run("again"))
            await _cancel_once(attempt, writing, how, cancelled)
            stored = store.load(thread.id)
            assert stored is not None
            claim, version = stored.claim, stored.version
            mine = thread.version
            result = await (thread.run(resume=thread.resume_builder().answer("ask-1", "go")) if resuming
                            else thread.run("again"))
            return claim, version if mine == version else None, result

    claim, version, result = asyncio.run(main())

    assert writing.is_set()
    assert claim is None and version is not None
    assert result.outcome == "success" and endpoint.agent.request_count == 2


@pytest.mark.parametrize("resuming", [False, True])
def test_ctrl_c_during_a_run_lets_go_of_the_thread_unless_a_resume_went_out(resuming: bool) -> None:
    # A KeyboardInterrupt raised while the request is being sent (the sync shell's Ctrl-C): a turn
    # lets go of the thread; a resume whose request was handed over keeps it claimed.
    store = MemoryStore()
    thread_id = "t-ctrl-c"
    state = ag.ThreadState(messages=[ag.UserMessage(id="u1", content="hi")])
    if resuming:
        state.hold_interrupts([ag.Interrupt(id="ask-1", reason="approval")], "r0")
    store.save(thread_id, state.dump(), expected_version=None)

    def interrupt(request: httpx.Request) -> httpx.Response:
        raise KeyboardInterrupt

    with ag.AgentClient("http://127.0.0.1:9/agent", store=store,
                        http_client=httpx.Client(transport=httpx.MockTransport(interrupt))) as client:
        thread = client.thread(thread_id)
        assert len(thread.open_interrupts) == resuming
        with pytest.raises(KeyboardInterrupt):
            if resuming:
                thread.run(resume=thread.resume_builder().answer("ask-1", "go"))
            else:
                thread.run("again")
    stored = store.load(thread_id)

    assert stored is not None
    assert (stored.claim is not None) is resuming


def test_release_claim_refuses_a_claim_another_writer_holds_unless_forced(drive: Any, served: Any) -> None:
    # Returning quietly would let the caller believe the thread is free; force=True is the
    # operator's way past a writer that died mid-resume.
    endpoint = served(ScriptedAgent([[Start(), interrupted("ask-1")], Respond(status=503, body="busy"),
                                     [Start(), Finish()]]))

    with drive.client(endpoint.url, store=MemoryStore()) as client:
        writer = client.thread()
        writer.run("hi")
        with pytest.raises(ag.HTTPStatusError):
            writer.run(resume=writer.resume_builder().answer("ask-1", "go"))
        other = client.thread(writer.id)
        with pytest.raises(ag.ConcurrentResume) as caught:
            other.release_claim()
        other.release_claim(force=True)
        result = other.run(resume=other.resume_builder().answer("ask-1", "go"))

    assert caught.value.thread_id == writer.id and "force=True" in str(caught.value)
    assert result.outcome == "success" and endpoint.agent.request_count == 3


@pytest.mark.parametrize("how", ["run", "stream"])
@pytest.mark.parametrize("resuming", [False, True])
def test_a_response_left_open_after_the_run_ended_does_not_fail_the_saved_run(
    drive: Any, served: Any, gate: Gate, how: str, resuming: bool, caplog: pytest.LogCaptureFixture
) -> None:
    # The run finished and was saved; the agent then kept the response open and went silent. Raising
    # IdleTimeout would report a finished run as failed (a retry would send the turn twice) and, for a
    # resume, claim a hold the save had already ended. The result stands, with a TR-13 warning.
    script = [[Start(), Finish(), Wait(gate, timeout=20)]]
    if resuming:
        script.insert(0, [Start(), interrupted("ask-1")])
    endpoint = served(ScriptedAgent(script))
    store = MemoryStore()

    with drive.client(endpoint.url, store=store, idle_timeout=0.5) as client:
        thread = client.thread()
        if resuming:
            thread.run("hi")
        attempt: dict[str, Any] = ({"resume": thread.resume_builder().answer("ask-1", "go")} if resuming
                                   else {"message": "hi"})
        with caplog.at_level(logging.WARNING, logger="agui_client"):
            if how == "run":
                result = thread.run(**attempt)
            else:
                with thread.stream(**attempt) as events:
                    kinds = [type(e).__name__ for e in events]
                result = events.result
                assert kinds[-1] == "RunFinishedEvent"
    stored = store.load(thread.id)

    assert gate.reached and result is not None and result.outcome == "success"
    assert [w.code for w in result.warnings] == ["TR-13"]
    assert stored is not None and stored.claim is None and thread.version == stored.version
    assert not any("stays claimed" in r.getMessage() for r in caplog.records)


def test_one_run_at_a_time_per_thread_object(drive: Any, served: Any, gate: Gate) -> None:
    # A second run, a reload() or a release_claim() on an object whose run is in flight would
    # interleave two histories, drop the run or free its claim: refused, typed, nothing sent. Once
    # the run has ended, the object runs again.
    endpoint = served(ScriptedAgent([_finishing(None), [Start(), Wait(gate), *text_message("a1", "the reply"),
                                                        Finish()], _finishing(None)]))
    store = MemoryStore()
    refused: list[str] = []

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        thread.run("hello")
        results: list[Any] = []
        running = threading.Thread(target=lambda: results.append(thread.run("second question")))
        running.start()
        assert gate.wait_reached(10)
        for attempt in (lambda: thread.run("third"), thread.reload, thread.release_claim):
            try:
                attempt()
            except ag.ThreadBusy as exc:
                refused.append(exc.thread_id)
        gate.open()
        running.join(10)
        after = thread.run("afterwards")
    stored = ag.ThreadState.load(store.load(thread.id).data)  # type: ignore[union-attr]

    assert refused == [thread.id] * 3
    assert results[0].outcome == "success" and after.outcome == "success"
    assert endpoint.agent.request_count == 3
    assert [getattr(m, "content", None) for m in stored.messages][1:4] == ["second question", "the reply",
                                                                            "afterwards"]


def test_a_turn_interrupted_in_a_stream_is_not_replaced_by_a_store_error_at_release(
    caplog: pytest.LogCaptureFixture
) -> None:
    # The caller's Ctrl-C inside the block is what reaches the caller, even when the store cannot
    # take the claim back (logged).
    class NoRelease(MemoryStore):
        def release(self, thread_id: str, *, claimed_version: int, owner: str) -> int:
            raise ag.StoreError("the store is down", thread_id=thread_id)

    store = NoRelease()
    store.save("t", ag.ThreadState(messages=[ag.UserMessage(id="u1", content="hi")]).dump(), expected_version=None)
    with serve(ScriptedAgent([[Start(), *text_message("a1", "reply"), Finish()]])) as server:
        with ag.AgentClient(server.url, store=store) as client:
            thread = client.thread("t")
            with caplog.at_level(logging.WARNING, logger="agui_client"), pytest.raises(KeyboardInterrupt):
                with thread.stream("again") as events:
                    next(iter(events))
                    raise KeyboardInterrupt

    assert any("could not release its claim" in r.getMessage() and "the store is down" in r.getMessage()
               for r in caplog.records)


class _GoesDown(MemoryStore):
    """A store that fails (``StoreError``) on every write once ``down`` is set: Redis gone mid-run."""

    down = False

    def save(self, thread_id: str, data: Any, *, expected_version: int | None) -> int:
        self._fail(thread_id)
        return super().save(thread_id, data, expected_version=expected_version)

    def release(self, thread_id: str, *, claimed_version: int, owner: str) -> int:
        self._fail(thread_id)
        return super().release(thread_id, claimed_version=claimed_version, owner=owner)

    def _fail(self, thread_id: str) -> None:
        if self.down:
            raise ag.StoreError("the store is down", thread_id=thread_id)


@pytest.mark.parametrize("how", ["run", "stream"])
@pytest.mark.parametrize("fault", ["vanished", "down"])
@pytest.mark.parametrize("turn", ["first", "later", "resume"])
def test_a_save_that_fails_after_the_agent_answered_is_the_error_seen_and_carries_the_run(
    drive: Any, served: Any, how: str, fault: str, turn: str
) -> None:
    # While the agent answers, the record vanishes (an operator's delete, a Redis restart without
    # persistence) or the store goes down: the run's save fails, and so would the release of its
    # claim. The caller sees the save's error, marked as answered, carrying the answered run; never
    # the release's, which would read as a refusal before anything was sent.
    store = _GoesDown()

    def answering(run_input: Any) -> list[Any]:
        if fault == "vanished":
            store.delete(run_input.thread_id)
        else:
            store.down = True
        return [Start(), *text_message("a1", "the answer"), Finish()]

    earlier = {"first": [], "later": [_finishing(None)], "resume": [[Start(), interrupted("ask-1")]]}[turn]
    endpoint = served(ScriptedAgent([*earlier, answering]))

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        if earlier:
            thread.run("hello")
        attempt: dict[str, Any] = ({"resume": thread.resume_builder().answer("ask-1", "go")} if turn == "resume"
                                   else {"message": "the question"})
        with pytest.raises((ag.ConcurrentResume, ag.StoreError)) as caught:
            if how == "run":
                thread.run(**attempt)
            else:
                with thread.stream(**attempt) as events:
                    list(events)
    store.down = False
    stored = store.load(thread.id)

    error = caught.value
    assert type(error) is (ag.ConcurrentResume if fault == "vanished" else ag.StoreError)
    assert error.agent_answered is True
    assert error.result is not None and error.result.outcome == "success" and error.result.text == "the answer"
    assert error.result.run_id == endpoint.agent.requests[-1].run_id
    assert endpoint.agent.request_count == len(earlier) + 1
    if fault == "vanished":
        assert stored is None
    else:  # (not saved, and the claim could not be given back either)
        assert stored is not None and stored.claim is not None


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


def test_a_resume_cancelled_before_its_request_was_written_lets_go_of_the_thread(served: Any, gate: Gate) -> None:
    # httpx's own transport reports when the request is written whole: a resume cancelled before
    # (here, queued for the only connection) cannot have reached the agent, so its claim goes.
    endpoint = served(ScriptedAgent([[Start(), interrupted("ask-1")], [Start(), Wait(gate, timeout=20), Finish()],
                                     [Start(), Finish()]]))
    blocker = served(ScriptedAgent([[Start(), Wait(gate, timeout=20), Finish()]]))
    store = MemoryStore()

    async def main() -> tuple[str | None, int]:
        async with httpx.AsyncClient(limits=httpx.Limits(max_connections=1)) as http, \
                ag.AsyncAgentClient(endpoint.url, store=store, http_client=http) as client:
            thread = client.thread()
            await thread.run("hi")
            async with ag.AsyncAgentClient(blocker.url, http_client=http) as other:
                async with other.thread().stream("hold the connection"):
                    await _cancel_after(thread.run(resume=thread.resume_builder().answer("ask-1", "go")), 0.3,
                                        "wait_for")
                    stored = store.load(thread.id)
                    gate.open()
            assert stored is not None
            return stored.claim, endpoint.agent.request_count

    claim, sent = asyncio.run(main())

    assert claim is None and sent == 1


def test_a_resume_whose_run_was_saved_reports_no_claim_when_the_caller_then_raises(
    drive: Any, served: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # The save of the finished run ended the claim: the caller's own error afterwards (here inside
    # the block, e.g. raise_for_outcome()) must not be told, or logged, that the thread stays claimed.
    endpoint = served(ScriptedAgent([[Start(), interrupted("ask-1")], [Start(), Finish()]]))
    store = MemoryStore()

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        thread.run("hi")
        with caplog.at_level(logging.WARNING, logger="agui_client"):
            with pytest.raises(LookupError):
                with thread.stream(resume=thread.resume_builder().answer("ask-1", "go")) as events:
                    for _ in events:
                        pass
                    raise LookupError("the caller's own code")
    stored = store.load(thread.id)

    assert stored is not None and stored.claim is None and thread.version == stored.version
    assert not any("claimed" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("during", ["claim", "save"])
def test_ctrl_c_during_a_store_write_waits_for_it_and_keeps_the_thread_consistent(served: Any, during: str) -> None:
    # The sync shell's Ctrl-C, landing inside the store call after its write: the claim is known (and,
    # nothing sent, given back); a save's version is recorded. The KeyboardInterrupt still reaches the
    # caller, once the write has returned.
    endpoint = served(ScriptedAgent([_finishing(None), _finishing(None), _finishing(None)]))

    class Interrupted(MemoryStore):
        armed = False

        def claim(self, thread_id: str, *, expected_version: int | None, owner: str, data: Any = None) -> int:
            version = super().claim(thread_id, expected_version=expected_version, owner=owner, data=data)
            self._ctrl_c("claim")
            return version

        def save(self, thread_id: str, data: Any, *, expected_version: int | None) -> int:
            version = super().save(thread_id, data, expected_version=expected_version)
            self._ctrl_c("save")
            return version

        def _ctrl_c(self, where: str) -> None:
            if self.armed and where == during:
                self.armed = False
                signal.raise_signal(signal.SIGINT)  # (delivered before it returns: nothing to wait for)

    store = Interrupted()
    with ag.AgentClient(endpoint.url, store=store) as client:
        thread = client.thread()
        thread.run("hello")
        store.armed = True
        with pytest.raises(KeyboardInterrupt):
            thread.run("again")
        stored = store.load(thread.id)
        assert stored is not None
        claim, in_step = stored.claim, thread.version == stored.version
        thread.run("once more")

    assert claim is None and in_step
    assert endpoint.agent.request_count == (2 if during == "claim" else 3)  # (the interrupted claim sent nothing)


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


def test_a_transport_error_without_a_message_still_says_what_happened(drive: Any) -> None:
    # httpx raises some errors with no text (a client closed under a run): the type is named instead.
    def fail(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadError("")

    with drive.client("http://127.0.0.1:9/agent", http_client=drive.mock(fail)) as client:
        with pytest.raises(ag.TransportError) as caught:
            client.thread().run("hi")

    assert str(caught.value).endswith("failed: ReadError (no detail from httpx)")


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


def test_a_run_still_going_when_asyncio_run_shuts_down_does_not_hang_it() -> None:
    # asyncio.run() cancels every task left at shutdown, the store write's own worker task included,
    # before it could start: that write is called off, not waited for forever (in a child process,
    # so a hang is a failed test and not a stuck suite).
    import subprocess
    import sys
    import textwrap

    child = textwrap.dedent("""
        import asyncio
        import agui_client as ag
        from agui_client.stores import MemoryStore
        from agui_client.testing import Finish, ScriptedAgent, Start, serve

        async def main(url):
            client = ag.AsyncAgentClient(url, store=MemoryStore())
            thread = client.thread()
            await thread.run("hello")
            asyncio.get_running_loop().create_task(thread.run("again"))  # still going when main returns

        with serve(ScriptedAgent([[Start(), Finish()], [Start(), Finish()]])) as server:
            asyncio.run(main(server.url))
        print("asyncio.run returned")
    """)
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", child], capture_output=True, text=True, timeout=60,
                          check=False)

    assert done.returncode == 0, done.stderr[-2000:]
    assert "asyncio.run returned" in done.stdout


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


def test_a_second_ctrl_c_is_not_held_by_a_store_write_that_hangs(served: Any) -> None:
    endpoint = served(ScriptedAgent([_finishing(None), _finishing(None)]))
    returned: list[bool] = []

    class Hanging(MemoryStore):
        armed = False

        def save(self, thread_id: str, data: Any, *, expected_version: int | None) -> int:
            if self.armed:
                self.armed = False
                signal.raise_signal(signal.SIGINT)  # held: the write goes on ...
                signal.raise_signal(signal.SIGINT)  # ... until the person presses again
                time.sleep(5)
                returned.append(True)
            return super().save(thread_id, data, expected_version=expected_version)

    store = Hanging()
    with ag.AgentClient(endpoint.url, store=store) as client:
        thread = client.thread()
        thread.run("hello")
        store.armed = True
        with pytest.raises(KeyboardInterrupt):
            thread.run("again")

    assert returned == []
