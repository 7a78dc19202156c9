"""agui_client.testing: the scripted agent over a real loopback server, read with a plain httpx client."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from itertools import groupby
from typing import Any

import httpx
import pytest
from ag_ui import core as official

from agui_client._inert import KEY_CHARS
from agui_client.errors import AguiWarning
from agui_client.testing import (
    ANSWER_SCHEMA,
    APPROVAL_SCHEMA,
    Disconnect,
    Finish,
    Gate,
    KeepAlive,
    Respond,
    ScriptedAgent,
    Start,
    Stream,
    Wait,
    serve,
    text_message,
)
from agui_client.types import (
    CustomEvent,
    Interrupt,
    RunAgentInput,
    RunFinishedInterruptOutcome,
    TextMessageContentEvent,
    UserMessage,
)
from agui_client.wire.codec import decode_event
from agui_client.wire.sink import collect_warnings

Wire = dict[str, Any]

# ----------------------------------------------------------------------------------------------------
# helpers: a minimal SSE reader, so these tests do not depend on the client's own
# ----------------------------------------------------------------------------------------------------


def data_of(lines: Iterator[str]) -> Iterator[Wire]:
    for line in lines:
        if line.startswith("data: "):
            yield json.loads(line[len("data: "):])


def body(thread: str = "t1", run: str = "r1", *, messages: list[Wire] | None = None, state: Any = None,
         resume: list[Wire] | None = None) -> Wire:
    payload: Wire = {"threadId": thread, "runId": run, "messages": messages or []}
    if state is not None:
        payload["state"] = state
    if resume is not None:
        payload["resume"] = resume
    return payload


def user(text: str, id: str = "u1") -> Wire:
    return {"id": id, "role": "user", "content": text}


def types(events: list[Wire]) -> list[str]:
    return [e["type"] for e in events]


def squeezed(events: list[Wire]) -> list[str]:
    """Event types with consecutive repeats (streamed deltas) folded into one."""
    return [kind for kind, _ in groupby(types(events))]


def text(events: list[Wire]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def finished(events: list[Wire]) -> Wire:
    assert events[-1]["type"] == "RUN_FINISHED"
    return events[-1]


def assert_conformant(events: list[Wire]) -> None:
    """Every event decodes cleanly here and validates against the official 1.0 models."""
    with collect_warnings() as sink:
        for event in events:
            decode_event(event)
    assert sink.items == []
    for event in events:
        model = getattr(official, "".join(part.title() for part in event["type"].split("_")) + "Event")
        model.model_validate(event)


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=httpx.Timeout(10.0)) as c:
        yield c


@pytest.fixture
def served() -> Iterator[Callable[[Any], str]]:
    servers = []

    def start(app: Any) -> str:
        server = serve(app)
        servers.append(server)
        return server.url

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def post(client: httpx.Client, url: str, payload: Wire) -> list[Wire]:
    with client.stream("POST", url, json=payload) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream"
        return list(data_of(response.iter_lines()))


# ----------------------------------------------------------------------------------------------------
# chat
# ----------------------------------------------------------------------------------------------------


def test_chat_streams_the_reply_in_several_deltas_and_succeeds(client: httpx.Client, served: Any) -> None:
    url = served(ScriptedAgent.chat(reply="Hello there, how are you?"))

    events = post(client, url, body("t1", "r1", messages=[user("hi")]))

    assert squeezed(events) == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
                                "RUN_FINISHED"]
    assert types(events).count("TEXT_MESSAGE_CONTENT") >= 3
    assert text(events) == "Hello there, how are you?"
    assert (events[0]["threadId"], events[0]["runId"]) == ("t1", "r1")
    assert (events[-1]["threadId"], events[-1]["runId"]) == ("t1", "r1")
    assert events[-1].get("outcome", {"type": "success"}) == {"type": "success"}
    assert_conformant(events)


def test_chat_reply_can_be_computed_from_the_input(client: httpx.Client, served: Any) -> None:
    url = served(ScriptedAgent.chat(reply=lambda run_input: f"{len(run_input.messages)} message(s)"))

    events = post(client, url, body(messages=[user("a", "u1"), user("b", "u2")]))

    assert text(events) == "2 message(s)"


# ----------------------------------------------------------------------------------------------------
# the demo
# ----------------------------------------------------------------------------------------------------

DEMO_RUN_1 = [
    "RUN_STARTED", "STATE_SNAPSHOT",
    "REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END",
    "REASONING_END",
    "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
    "ACTIVITY_SNAPSHOT",
    "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT",
    "STATE_DELTA",
    "SUBAGENT_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "SUBAGENT_FINISHED",
    "ACTIVITY_DELTA",
    "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
    "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END",
    "STATE_DELTA",
    "RUN_FINISHED",
]


def fixed_clock() -> datetime:
    return datetime(2030, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def demo_run_1(client: httpx.Client, url: str, thread: str = "t1") -> list[Wire]:
    return post(client, url, body(thread, "r1", messages=[user("Delete the staging environment")]))


def test_demo_first_run_shows_everything_and_ends_with_one_approval_interrupt(
        client: httpx.Client, served: Any) -> None:
    url = served(ScriptedAgent.demo(clock=fixed_clock))

    events = demo_run_1(client, url)

    assert squeezed(events) == DEMO_RUN_1
    assert_conformant(events)
    outcome = finished(events)["outcome"]
    assert outcome["type"] == "interrupt"
    [interrupt] = outcome["interrupts"]
    assert interrupt["reason"] == "approval"
    assert interrupt["message"]
    assert interrupt["expiresAt"] == "2030-01-02T03:14:05Z"
    assert interrupt["responseSchema"] == APPROVAL_SCHEMA
    schema = interrupt["responseSchema"]
    assert schema["required"] == ["approved"]
    assert schema["properties"]["approved"]["type"] == "boolean"
    assert schema["properties"]["environment"]["default"] in schema["properties"]["environment"]["enum"]
    assert schema["properties"]["ttl_minutes"]["type"] == "integer"
    assert "default" in schema["properties"]["ttl_minutes"]
    started = [e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_START"]
    answered = [e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert interrupt["toolCallId"] in started
    assert interrupt["toolCallId"] not in answered
    assert finished(events)["usage"][0]["totalTokens"] > 0
    subagent = next(e for e in events if e["type"] == "SUBAGENT_STARTED")["subagentRunId"]
    attributed = [e for e in events if e.get("subagentRunId") == subagent and e["type"].startswith("TEXT_MESSAGE")]
    assert types(attributed)[0] == "TEXT_MESSAGE_START" and types(attributed)[-1] == "TEXT_MESSAGE_END"
    assert "Delete the staging environment" in text(events)


def test_demo_resume_approved_answers_the_call_and_confirms(client: httpx.Client, served: Any) -> None:
    url = served(ScriptedAgent.demo())
    first = demo_run_1(client, url)
    interrupt = finished(first)["outcome"]["interrupts"][0]
    state = next(e for e in first if e["type"] == "STATE_SNAPSHOT")["snapshot"]

    events = post(client, url, body("t1", "r2", state=state, resume=[
        {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True, "environment": "qa"}}]))

    assert squeezed(events) == ["RUN_STARTED", "TOOL_CALL_RESULT", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
                                "TEXT_MESSAGE_END", "STATE_DELTA", "RUN_FINISHED"]
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert result["toolCallId"] == interrupt["toolCallId"]
    assert json.loads(result["content"])["deleted"] == "qa"
    assert "deleted" in text(events)
    assert "outcome" not in finished(events)
    assert_conformant(events)


def test_demo_resume_declined_says_it_was_not_done(client: httpx.Client, served: Any) -> None:
    url = served(ScriptedAgent.demo())
    interrupt = finished(demo_run_1(client, url))["outcome"]["interrupts"][0]

    events = post(client, url, body("t1", "r2", resume=[
        {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": False}}]))

    assert "TOOL_CALL_RESULT" not in types(events)
    assert "did not" in text(events)
    assert "outcome" not in finished(events)


def test_demo_resume_cancelled_says_abandoned(client: httpx.Client, served: Any) -> None:
    url = served(ScriptedAgent.demo())
    interrupt = finished(demo_run_1(client, url))["outcome"]["interrupts"][0]

    events = post(client, url, body("t1", "r2", resume=[{"interruptId": interrupt["id"], "status": "cancelled"}]))

    assert "TOOL_CALL_RESULT" not in types(events)
    assert "abandoned" in text(events)
    assert "outcome" not in finished(events)


def test_demo_new_message_after_the_resume_asks_again(client: httpx.Client, served: Any) -> None:
    url = served(ScriptedAgent.demo())
    interrupt = finished(demo_run_1(client, url))["outcome"]["interrupts"][0]
    post(client, url, body("t1", "r2", resume=[{"interruptId": interrupt["id"], "status": "cancelled"}]))

    events = post(client, url, body("t1", "r3", messages=[user("Try again")]))

    assert squeezed(events) == DEMO_RUN_1
    assert finished(events)["outcome"]["interrupts"][0]["id"] != interrupt["id"]


# ----------------------------------------------------------------------------------------------------
# frontend tool
# ----------------------------------------------------------------------------------------------------


def test_frontend_tool_run_succeeds_with_the_call_pending_then_answers_with_the_tool_result(
        client: httpx.Client, served: Any) -> None:
    url = served(ScriptedAgent.frontend_tool(tool_name="pick_color"))

    first = post(client, url, body("t1", "r1", messages=[user("choose")]))

    assert squeezed(first) == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
                               "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"]
    start = next(e for e in first if e["type"] == "TOOL_CALL_START")
    assert start["toolCallName"] == "pick_color"
    assert finished(first)["outcome"] == {"type": "success", "pendingToolCallIds": [start["toolCallId"]]}
    assert_conformant(first)

    call = {"id": start["toolCallId"], "type": "function", "function": {"name": "pick_color", "arguments": "{}"}}
    second = post(client, url, body("t1", "r2", messages=[
        user("choose"),
        {"id": "a1", "role": "assistant", "toolCalls": [call]},
        {"id": "tool-1", "role": "tool", "toolCallId": start["toolCallId"], "content": "teal"},
    ]))

    assert squeezed(second) == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
                                "RUN_FINISHED"]
    assert "teal" in text(second)
    assert "outcome" not in finished(second)


# ----------------------------------------------------------------------------------------------------
# interrupts and resume handling
# ----------------------------------------------------------------------------------------------------


def test_interrupts_scenario_raises_n_configured_interrupts(client: httpx.Client, served: Any) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    url = served(ScriptedAgent.interrupts(3, expires_at=["2030-01-01T00:00:00Z", None, "soon"],
                                          response_schema=[schema, None, ANSWER_SCHEMA]))

    events = post(client, url, body(messages=[user("go")]))

    interrupts = finished(events)["outcome"]["interrupts"]
    assert [i["id"] for i in interrupts] == ["interrupt-1", "interrupt-2", "interrupt-3"]
    assert [i.get("expiresAt") for i in interrupts] == ["2030-01-01T00:00:00Z", None, "soon"]
    assert [i.get("responseSchema") for i in interrupts] == [schema, None, ANSWER_SCHEMA]
    assert_conformant(events)


def test_resume_applies_each_answer(client: httpx.Client, served: Any) -> None:
    url = served(ScriptedAgent.interrupts(3))
    post(client, url, body(messages=[user("go")]))

    events = post(client, url, body("t1", "r2", resume=[
        {"interruptId": "interrupt-1", "status": "resolved", "payload": {"answer": "yes"}},
        {"interruptId": "interrupt-2", "status": "cancelled"},
        {"interruptId": "interrupt-3", "status": "resolved", "payload": {"answer": "no"}},
    ]))

    assert finished(events)["result"] == {"answers": {"interrupt-1": {"answer": "yes"},
                                                      "interrupt-3": {"answer": "no"}},
                                          "abandoned": ["interrupt-2"]}
    assert "outcome" not in finished(events)
    assert "interrupt-2: abandoned" in text(events)
    assert_conformant(events)


def test_resume_entry_for_an_unknown_interrupt_is_skipped_with_a_warning(
        client: httpx.Client, served: Any) -> None:
    agent = ScriptedAgent.interrupts(1)
    url = served(agent)
    post(client, url, body(messages=[user("go")]))

    events = post(client, url, body("t1", "r2", resume=[
        {"interruptId": "interrupt-1", "status": "resolved", "payload": {"answer": "yes"}},
        {"interruptId": "ghost", "status": "resolved", "payload": {"answer": "boo"}},
    ]))

    assert types(events)[:2] == ["RUN_STARTED", "CUSTOM"]
    assert events[1]["name"] == "agui.warning"
    assert "ghost" in events[1]["value"]
    assert finished(events)["result"]["answers"] == {"interrupt-1": {"answer": "yes"}}
    assert "outcome" not in finished(events)
    assert [w for w in agent.warnings if "ghost" in w] == [events[1]["value"]]
    assert_conformant(events)


def test_a_step_sees_only_the_recognised_entries_and_requests_keep_the_original(
        client: httpx.Client, served: Any) -> None:
    seen: list[RunAgentInput] = []

    def capture(run_input: RunAgentInput) -> list[Any]:
        seen.append(run_input)
        return [Start(), Finish()]

    interrupt = Interrupt(id="i1", reason="approval")
    agent = ScriptedAgent([[Start(), Finish(outcome=RunFinishedInterruptOutcome(interrupts=(interrupt,)))], capture])
    url = served(agent)
    post(client, url, body())

    post(client, url, body("t1", "r2", resume=[{"interruptId": "i1", "status": "cancelled"},
                                               {"interruptId": "nope", "status": "cancelled"}]))

    [step_input] = seen
    assert [e.interrupt_id for e in step_input.resume or ()] == ["i1"]
    assert [e.interrupt_id for e in agent.requests[-1].resume or ()] == ["i1", "nope"]


def test_an_uncovered_interrupt_is_rejected_with_a_stream_opening_with_run_error(
        client: httpx.Client, served: Any) -> None:
    agent = ScriptedAgent.demo()
    url = served(agent)
    interrupt = finished(demo_run_1(client, url))["outcome"]["interrupts"][0]

    events = post(client, url, body("t1", "r2", messages=[user("never mind, do something else")]))

    assert types(events) == ["RUN_ERROR"]
    assert events[0]["code"] == "uncovered_interrupt"
    assert [i.id for i in agent.open_interrupts("t1")] == [interrupt["id"]]
    assert_conformant(events)

    retried = post(client, url, body("t1", "r3", resume=[{"interruptId": interrupt["id"], "status": "cancelled"}]))

    assert "abandoned" in text(retried)
    assert agent.open_interrupts("t1") == ()


def test_an_uncovered_interrupt_can_be_raised_again_after_running_what_the_covered_entries_permit(
        client: httpx.Client, served: Any) -> None:
    agent = ScriptedAgent.interrupts(2, on_uncovered="reinterrupt")
    url = served(agent)
    post(client, url, body(messages=[user("go")]))

    events = post(client, url, body("t1", "r2", resume=[
        {"interruptId": "interrupt-1", "status": "resolved", "payload": {"answer": "yes"}}]))

    assert "interrupt-1: answered" in text(events)
    outcome = finished(events)["outcome"]
    assert outcome["type"] == "interrupt"
    assert [i["id"] for i in outcome["interrupts"]] == ["interrupt-2"]
    assert [i.id for i in agent.open_interrupts("t1")] == ["interrupt-2"]
    assert_conformant(events)

    last = post(client, url, body("t1", "r3", resume=[{"interruptId": "interrupt-2", "status": "cancelled"}]))

    assert "outcome" not in finished(last)
    assert finished(last)["result"]["abandoned"] == ["interrupt-2"]


def test_a_resume_when_nothing_is_open_is_warned_and_the_run_proceeds(client: httpx.Client, served: Any) -> None:
    agent = ScriptedAgent.chat(reply="fine")
    url = served(agent)

    events = post(client, url, body(resume=[{"interruptId": "old", "status": "cancelled"}]))

    assert squeezed(events) == ["RUN_STARTED", "CUSTOM", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
                                "TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert events[1]["name"] == "agui.warning"
    assert "old" in events[1]["value"]
    assert "outcome" not in finished(events)
    assert len(agent.warnings) == 1


def test_a_stateless_agent_neither_checks_nor_filters_resume_entries(client: httpx.Client, served: Any) -> None:
    seen: list[RunAgentInput] = []

    def capture(run_input: RunAgentInput) -> list[Any]:
        seen.append(run_input)
        return [Start(), Finish()]

    interrupt = Interrupt(id="i1", reason="approval")
    agent = ScriptedAgent([[Start(), Finish(outcome=RunFinishedInterruptOutcome(interrupts=(interrupt,)))], capture],
                          stateless=True)
    url = served(agent)
    post(client, url, body())

    events = post(client, url, body("t1", "r2", resume=[{"interruptId": "other", "status": "cancelled"}]))

    assert types(events) == ["RUN_STARTED", "RUN_FINISHED"]
    assert [e.interrupt_id for e in seen[0].resume or ()] == ["other"]
    assert agent.warnings == []
    assert types(post(client, url, body("t1", "r3"))) == ["RUN_ERROR"]  # and its script still runs out


# ----------------------------------------------------------------------------------------------------
# scripts
# ----------------------------------------------------------------------------------------------------


def test_start_and_finish_carry_the_request_ids(client: httpx.Client, served: Any) -> None:
    url = served(ScriptedAgent([[Start(), Finish(result={"ok": True})]]))

    events = post(client, url, body("thread-x", "run-y"))

    assert events == [
        {"type": "RUN_STARTED", "threadId": "thread-x", "runId": "run-y", "protocolVersion": "1.0"},
        {"type": "RUN_FINISHED", "threadId": "thread-x", "runId": "run-y", "result": {"ok": True}},
    ]


def test_wire_dicts_and_event_objects_are_streamed_verbatim(client: httpx.Client, served: Any) -> None:
    odd = {"type": "RUN_STARTED", "threadId": "elsewhere", "runId": "r9", "futureField": [1, None]}
    url = served(ScriptedAgent([[odd, CustomEvent(name="n", value=None), {"type": "NOT_A_TYPE"}]]))

    events = post(client, url, body())

    assert events == [odd, {"type": "CUSTOM", "name": "n", "value": None}, {"type": "NOT_A_TYPE"}]


def test_steps_play_in_order_per_thread_and_an_exhausted_script_says_so(client: httpx.Client, served: Any) -> None:
    agent = ScriptedAgent([[Start(), *text_message("m1", "one"), Finish()],
                           [Start(), *text_message("m2", "two"), Finish()]])
    url = served(agent)

    assert text(post(client, url, body("a", "r1"))) == "one"
    assert text(post(client, url, body("b", "r1"))) == "one"
    assert text(post(client, url, body("a", "r2"))) == "two"
    exhausted = post(client, url, body("a", "r3"))

    assert types(exhausted) == ["RUN_ERROR"]
    assert exhausted[0]["code"] == "script_exhausted"


def test_a_cycling_script_starts_over(client: httpx.Client, served: Any) -> None:
    url = served(ScriptedAgent([[Start(), *text_message("m1", "one"), Finish()],
                                [Start(), *text_message("m2", "two"), Finish()]], cycle=True))

    replies = [text(post(client, url, body("a", f"r{n}"))) for n in range(3)]

    assert replies == ["one", "two", "one"]


def test_callable_steps_sync_or_async_get_the_input(client: httpx.Client, served: Any) -> None:
    def sync_step(run_input: RunAgentInput) -> list[Any]:
        return [Start(), *text_message("m1", f"sync {run_input.run_id}"), Finish()]

    async def async_step(run_input: RunAgentInput) -> list[Any]:
        return [Start(), *text_message("m2", f"async {run_input.run_id}"), Finish()]

    url = served(ScriptedAgent([sync_step, async_step]))

    assert text(post(client, url, body("t", "r1"))) == "sync r1"
    assert text(post(client, url, body("t", "r2"))) == "async r2"


def test_requests_are_recorded_decoded_and_in_order(client: httpx.Client, served: Any) -> None:
    agent = ScriptedAgent.chat()
    url = served(agent)

    post(client, url, body("t1", "r1", messages=[user("first")]))
    post(client, url, body("t2", "r1", messages=[user("second")], state={"k": 1}))

    assert agent.request_count == 2
    first, second = agent.requests
    assert (first.thread_id, second.thread_id) == ("t1", "t2")
    assert isinstance(second.messages[0], UserMessage)
    assert second.messages[0].content == "second"
    assert second.state == {"k": 1}


def test_a_malformed_body_gets_400_with_a_detail_and_is_not_recorded(client: httpx.Client, served: Any) -> None:
    agent = ScriptedAgent.chat()
    url = served(agent)

    not_json = client.post(url, content=b"not json", headers={"content-type": "application/json"})
    wrong_shape = client.post(url, json={"threadId": 3, "runId": "r", "messages": []})
    wrong_method = client.get(url)

    assert not_json.status_code == 400
    assert not_json.json()["detail"]
    assert wrong_shape.status_code == 400
    assert "threadId" in wrong_shape.json()["detail"]
    assert wrong_method.status_code == 405
    assert agent.request_count == 0


# ----------------------------------------------------------------------------------------------------
# raw features
# ----------------------------------------------------------------------------------------------------


def test_each_event_reaches_the_client_before_the_server_goes_on(client: httpx.Client, served: Any) -> None:
    gate = Gate()
    url = served(ScriptedAgent([[Start(), *text_message("m1", "before the gate"), Wait(gate),
                                 *text_message("m2", "after"), Finish()]]))

    with client.stream("POST", url, json=body()) as response:
        events = data_of(response.iter_lines())
        before = [next(events) for _ in range(6)]
        # These six arrived before the gate opened, so each was sent while the server still had more to write.
        assert gate.wait_reached(timeout=10)
        assert not gate.is_open
        gate.open()
        after = list(events)

    assert text(before) == "before the gate"
    assert types(before)[-1] == "TEXT_MESSAGE_END"
    assert squeezed(after) == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"]


def test_each_event_is_its_own_write(client: httpx.Client, served: Any) -> None:
    url = served(ScriptedAgent.chat(reply="one two three four"))

    with client.stream("POST", url, json=body()) as response:
        chunks = list(response.iter_raw())

    assert len(chunks) == 8  # RUN_STARTED, START, four deltas, END, RUN_FINISHED
    assert all(chunk.startswith(b"data: {") and chunk.endswith(b"}\n\n") for chunk in chunks)


def test_bytes_are_sent_as_they_are_one_write_each(client: httpx.Client, served: Any) -> None:
    pieces = [b'data: {"type":"RUN_STA', b'RTED","threadId":"t1","runId":"r1"}\r\n\r\n', b"\xef\xbb\xbf"]
    url = served(ScriptedAgent([pieces, b"event: x\ndata: whole\n\n"]))

    with client.stream("POST", url, json=body("t1", "r1")) as response:
        chunks = list(response.iter_raw())
    with client.stream("POST", url, json=body("t1", "r2")) as response:
        whole = response.read()

    assert chunks == pieces
    assert whole == b"event: x\ndata: whole\n\n"


def test_keep_alive_is_a_comment_frame(client: httpx.Client, served: Any) -> None:
    url = served(ScriptedAgent([[Start(), KeepAlive(), KeepAlive(comment="ping"), Finish()]]))

    with client.stream("POST", url, json=body()) as response:
        raw = response.read()

    frames = raw.split(b"\n\n")
    assert frames[1:3] == [b": keep-alive", b": ping"]
    assert types([json.loads(f[len(b"data: "):]) for f in frames if f.startswith(b"data: ")]) == [
        "RUN_STARTED", "RUN_FINISHED"]


def test_disconnect_cuts_the_stream_mid_run(client: httpx.Client, served: Any) -> None:
    url = served(ScriptedAgent([[Start(), *text_message("m1", "partial"), Disconnect(), Finish()]]))
    received: list[Wire] = []

    with pytest.raises(httpx.RemoteProtocolError):
        with client.stream("POST", url, json=body()) as response:
            received.extend(data_of(response.iter_lines()))

    assert squeezed(received) == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"]


def test_a_gate_left_closed_past_its_timeout_cuts_the_connection(client: httpx.Client, served: Any) -> None:
    agent = ScriptedAgent([[Start(), Wait(Gate(), timeout=0.05), Finish()]])
    url = served(agent)
    received: list[Wire] = []

    with pytest.raises(httpx.RemoteProtocolError):
        with client.stream("POST", url, json=body()) as response:
            received.extend(data_of(response.iter_lines()))

    assert types(received) == ["RUN_STARTED"]
    assert any("gate" in w for w in agent.warnings)


def test_a_client_that_goes_away_releases_a_response_held_at_a_gate(client: httpx.Client) -> None:
    agent = ScriptedAgent([[Start(), Wait(Gate()), Finish()]])
    with serve(agent) as server:
        with client.stream("POST", server.url, json=body("t1", "r1")) as response:
            assert next(data_of(response.iter_lines()))["type"] == "RUN_STARTED"

        assert agent.wait_until(lambda a: a.disconnects == ["r1"], timeout=10)


def test_scripted_http_status_with_body_and_headers(client: httpx.Client, served: Any) -> None:
    url = served(ScriptedAgent([Respond(status=503, body={"detail": "busy"}, headers={"Retry-After": "7"}),
                                Respond(status=422, body="bad input")]))

    busy = client.post(url, json=body("t", "r1"))
    bad = client.post(url, json=body("t", "r2"))

    assert busy.status_code == 503
    assert busy.json() == {"detail": "busy"}
    assert busy.headers["retry-after"] == "7"
    assert busy.headers["content-type"] == "application/json"
    assert bad.status_code == 422
    assert bad.text == "bad input"
    assert bad.headers["content-type"].startswith("text/plain")


def test_non_sse_content_types(client: httpx.Client, served: Any) -> None:
    url = served(ScriptedAgent([Respond(status=200, body="<html>hi</html>", content_type="text/html"),
                                Stream(items=[Start(), Finish()], content_type="application/x-ndjson")]))

    html = client.post(url, json=body("t", "r1"))
    with client.stream("POST", url, json=body("t", "r2")) as response:
        ndjson_type = response.headers["content-type"]
        events = list(data_of(response.iter_lines()))

    assert (html.status_code, html.headers["content-type"], html.text) == (200, "text/html", "<html>hi</html>")
    assert ndjson_type == "application/x-ndjson"
    assert types(events) == ["RUN_STARTED", "RUN_FINISHED"]


def test_a_content_type_given_among_the_headers_is_the_one_sent_alone(client: httpx.Client, served: Any) -> None:
    url = served(ScriptedAgent([Respond(status=200, body="<html>hi</html>", headers={"Content-Type": "text/html"})]))

    html = client.post(url, json=body("t", "r1"))

    assert html.headers.get_list("content-type") == ["text/html"]
    assert html.text == "<html>hi</html>"


def test_a_stream_given_a_content_type_among_its_headers_sends_that_one_alone(client: httpx.Client,
                                                                             served: Any) -> None:
    url = served(ScriptedAgent([Stream(items=[Start(), Finish()], headers={"Content-Type": "application/x-ndjson"})]))

    with client.stream("POST", url, json=body("t", "r1")) as response:
        sent = response.headers.get_list("content-type")
        response.read()

    assert sent == ["application/x-ndjson"]


@pytest.mark.parametrize("kind", [Respond, Stream])
def test_a_content_type_argument_and_a_differing_content_type_header_are_refused_naming_both(kind: Any) -> None:
    given = {"status": 200} if kind is Respond else {"items": []}

    with pytest.raises(ValueError) as refused:
        kind(**given, content_type="text/html", headers={"content-type": "text/plain"})

    assert "content_type='text/html'" in str(refused.value)
    assert "'text/plain'" in str(refused.value)


@pytest.mark.parametrize("kind", [Respond, Stream])
def test_a_content_type_said_twice_alike_is_sent_once(client: httpx.Client, served: Any, kind: Any) -> None:
    given = {"status": 200, "body": "hi"} if kind is Respond else {"items": [b"hi"]}
    url = served(ScriptedAgent([kind(**given, content_type="text/plain", headers={"Content-Type": "text/plain"})]))

    answer = client.post(url, json=body("t", "r1"))

    assert answer.headers.get_list("content-type") == ["text/plain"]


def test_a_script_item_of_the_wrong_kind_is_refused_up_front() -> None:
    with pytest.raises(TypeError):
        ScriptedAgent([["data: not bytes"]])  # type: ignore[list-item]  # the wrong kind, on purpose


@pytest.mark.parametrize(("item", "where"), [
    ({"type": "CUSTOM", "name": "x", "value": float("nan")}, "at '/value': nan is not a JSON number"),
    (CustomEvent(name="x", value={"tags": {"a"}}), "at '/value/tags': a value of type set is not JSON"),
    ({"type": "CUSTOM", "name": "x", "value": {1: "one"}}, "at '/value': key 1 is not a string"),
    (Finish(result={"score": float("inf")}), "at '/result/score': inf is not a JSON number"),
    # (a long key's step cut, its length said)
    ({"type": "CUSTOM", "name": "x", "value": {"k" * 5_000: float("nan")}},
     f"at '/value/{'k' * KEY_CHARS}...(5,000 characters)': nan is not a JSON number"),
], ids=["nan-in-a-wire-dict", "set-in-an-event", "int-key", "inf-in-finish", "long-key"])
def test_a_script_item_json_cannot_carry_is_refused_up_front_naming_where(item: Any, where: str) -> None:
    # The agent sent another value than the one scripted, without a word: orjson writes NaN and +-inf
    # as null, json.dumps a key 1 as "1"; a set raised inside the agent, cutting the response mid-run
    # (the test then failed far from the script's mistake). Now the script is refused when made.
    with pytest.raises(ValueError) as caught:
        ScriptedAgent([[Start(), item, Finish()]])
    assert str(caught.value).startswith("script item 1 holds a value JSON cannot carry ")
    assert where in str(caught.value)

    with pytest.raises(ValueError) as respond:
        Respond(status=500, body={"detail": float("nan")})
    assert "at '/detail': nan is not a JSON number" in str(respond.value)


def test_a_script_item_with_a_lone_surrogate_is_still_sent_as_its_escape(client: httpx.Client, served: Any) -> None:
    # (a producer slicing strings by UTF-16 code unit sends one: scripting it is how its reader is tested)
    url = served(ScriptedAgent([[{"type": "CUSTOM", "name": "half \ud83d", "value": 1}]]))

    with pytest.warns(AguiWarning):
        assert post(client, url, body()) == [{"type": "CUSTOM", "name": "half \ud83d", "value": 1}]


# ----------------------------------------------------------------------------------------------------
# the server
# ----------------------------------------------------------------------------------------------------


def test_serve_listens_on_loopback_and_stop_leaves_no_thread(client: httpx.Client) -> None:
    server = serve(ScriptedAgent.chat())
    thread = server.thread
    assert server.url == f"http://127.0.0.1:{server.port}/"
    assert server.port > 0
    assert thread.is_alive()
    assert post(client, server.url, body())[0]["type"] == "RUN_STARTED"

    server.stop()

    assert not thread.is_alive()
    assert thread not in threading.enumerate()
    with pytest.raises(httpx.ConnectError):
        client.post(server.url, json=body())
    server.stop()  # idempotent


def test_serve_as_a_context_manager_stops_on_exit() -> None:
    with serve(ScriptedAgent.chat()) as server:
        assert server.running

    assert not server.running


@pytest.mark.anyio
async def test_serve_works_from_async_code() -> None:
    async with serve(ScriptedAgent.chat(reply="async hello")) as server:
        async with httpx.AsyncClient(timeout=10.0) as client:
            async with client.stream("POST", server.url, json=body()) as response:
                lines = [line async for line in response.aiter_lines()]

    assert text(list(data_of(iter(lines)))) == "async hello"
    assert not server.running


def test_text_message_deltas_join_back_to_the_text_exactly() -> None:
    events = text_message("m1", "  two  words ")

    deltas = [e.delta for e in events if isinstance(e, TextMessageContentEvent)]
    assert len(deltas) == 3
    assert "".join(deltas) == "  two  words "


def test_serve_returns_the_url_itself() -> None:
    """``serve(app)`` is the URL (a str) as well as the context manager that stops the server."""
    from agui_client import AgentClient

    server = serve(ScriptedAgent.chat("hi there"))
    try:
        assert isinstance(server, str) and server == server.url and server.startswith("http://127.0.0.1:")
        with AgentClient(server) as client:
            assert client.thread().run("hello").text == "hi there"
    finally:
        server.stop()
    assert not server.running


@pytest.mark.parametrize(("given", "said"), [
    ({"headers": {"X-Trace": "a\r\nSet-Cookie: s=1"}},
     "header 'X-Trace' holds a line break or NUL ('a\\r\\nSet-Cookie: s=1'), which would end the header"),
    ({"headers": {"X-Who": "Zoë ✓"}}, "header 'X-Who' holds '✓', which is not Latin-1"),
    ({"content_type": "text/plain\n"}, "content_type holds a line break or NUL"),
    ({"headers": {"Bad Name": "x"}}, "header name 'Bad Name' is not an HTTP token"),
    ({"status": 600}, "got status=600: an HTTP status is a whole number from 100 to 599"),
    ({"status": 99}, "got status=99: an HTTP status is a whole number from 100 to 599"),
    ({"status": True}, "got status=True: an HTTP status is a whole number from 100 to 599"),
], ids=["crlf", "not-latin-1", "lf-in-content-type", "space-in-name", "600", "99", "bool"])
@pytest.mark.parametrize("kind", [Respond, Stream])
def test_a_head_http_cannot_carry_is_refused_when_the_item_is_made(kind: Any, given: dict[str, Any],
                                                                  said: str) -> None:
    # These raised inside the agent as the request came (the Latin-1 encoding, or the server's own
    # check), cutting the response: the test then failed at its client, far from the script's mistake.
    made = {"status": 200, **given} if kind is Respond else {"items": [], **given}

    with pytest.raises(ValueError) as caught:
        kind(**made)

    assert str(caught.value).startswith(f"{kind.__name__}"), str(caught.value)
    assert said in str(caught.value), str(caught.value)


@pytest.mark.parametrize("kind", [Respond, Stream])
def test_a_latin_1_header_and_the_edge_statuses_are_sent_as_given(client: httpx.Client, served: Any,
                                                                kind: Any) -> None:
    made = [kind(status=status, headers={"X-Who": "Zoë"}, **({"body": "x"} if kind is Respond else {"items": [b"x"]}))
            for status in (299, 599)]
    url = served(ScriptedAgent(made))

    answers = [client.post(url, json=body("t", f"r{n}")) for n in (1, 2)]

    assert [(a.status_code, a.headers["x-who"]) for a in answers] == [
        (299, "Zoë"), (599, "Zoë")]
