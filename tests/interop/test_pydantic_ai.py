"""Interop: agui_client against pydantic-ai's AG-UI adapter (a real third-party AG-UI producer).

The agent runs on a scripted ``FunctionModel`` (no network, no keys) and is served by
``AGUIAdapter.dispatch_request`` inside a Starlette app under uvicorn on 127.0.0.1. Everything on the
client side goes through the public API: ``AgentClient`` / ``AsyncAgentClient``, ``Thread.run``,
``resume_builder``, ``add_tool_result``, ``run_until_done``, ``stream``.

Third-party packages are imported inside the fixtures, so the main dev environment can collect this
file and deselect it (``-m "not interop"``); ``.ci/interop.sh`` runs it in ``.venv-interop``.
See NOTES.md for what this producer sends that AG-UI 1.0 does not say.
"""

import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from wire import Recorder, serve

import agui_client
from agui_client import (
    AgentClient,
    AssistantMessage,
    AsyncAgentClient,
    InvalidResumePayload,
    ReasoningMessage,
    Tool,
    ToolMessage,
    UncoveredInterrupts,
    UserMessage,
)

pytestmark = pytest.mark.interop

PICK_COLOR = Tool(name="pick_color", description="Ask the user to pick a colour.",
                  parameters={"type": "object", "properties": {"palette": {"type": "string"}},
                              "required": ["palette"]})
DENIED = '{"pydantic_ai": {"outcome": "denied"}}'


# --------------------------------------------------------------------------------------------------
# the producer: a pydantic-ai agent with a scripted model
# --------------------------------------------------------------------------------------------------

class Producer:
    def __init__(self, url: str, recorder: Recorder, deleted: list[str]) -> None:
        self.url = url
        self.recorder = recorder
        self.deleted = deleted  # paths the approval-gated tool really deleted

    def endpoint(self, path: str = "/agent") -> str:
        return self.url + path


def _script(messages: list[Any]) -> list[Any]:
    """What the scripted model answers: driven by the last request only."""
    from pydantic_ai.messages import ModelRequest, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart

    last = messages[-1]
    assert isinstance(last, ModelRequest)
    returns = [p for p in last.parts if isinstance(p, ToolReturnPart)]
    if returns:
        return [TextPart("tool said: " + "; ".join(str(p.content) for p in returns))]
    prompt = " ".join(str(p.content) for p in last.parts if isinstance(p, UserPromptPart))

    def call(name: str, args: dict[str, Any]) -> Any:
        return ToolCallPart(name, args, tool_call_id=f"{name}-{uuid.uuid4().hex[:8]}")

    if "increment" in prompt:
        return [TextPart("Let me increment."), call("increment", {"by": 2})]
    if "colour" in prompt:
        return [call("pick_color", {"palette": "warm"})]
    if "delete both" in prompt:  # two approval-gated calls in one response (agui probe, issue 19)
        return [call("delete_file", {"path": "/srv/x"}), call("delete_file", {"path": "/srv/y"})]
    if "delete" in prompt:
        return [call("delete_file", {"path": "/srv/x"})]
    return ["THINK:The user greets me.", TextPart("Hello there")]


async def _stream(messages: list[Any], info: Any) -> Any:
    """Stream the scripted answer: thinking, text word by word, tool-call arguments in two deltas."""
    from pydantic_ai.messages import TextPart
    from pydantic_ai.models.function import DeltaThinkingPart, DeltaToolCall

    for index, part in enumerate(_script(messages)):
        if isinstance(part, str):
            yield {index: DeltaThinkingPart(content=part.removeprefix("THINK:"))}
        elif isinstance(part, TextPart):
            for word in re.split(r"(?<= )", part.content):
                yield word
        else:
            args = json.dumps(part.args)
            half = len(args) // 2
            yield {index: DeltaToolCall(name=part.tool_name, json_args=args[:half], tool_call_id=part.tool_call_id)}
            yield {index: DeltaToolCall(json_args=args[half:])}


@pytest.fixture(scope="module")
def producer() -> Iterator[Producer]:
    from ag_ui.core import EventType, StateSnapshotEvent
    from pydantic import BaseModel
    from pydantic_ai import Agent, DeferredToolRequests, RunContext
    from pydantic_ai.messages import ToolReturn
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.ui import StateDeps
    from pydantic_ai.ui.ag_ui import AGUIAdapter
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    class Counter(BaseModel):
        count: int = 0

    deleted: list[str] = []
    agent = Agent(FunctionModel(stream_function=_stream), deps_type=StateDeps[Counter],
                  output_type=[str, DeferredToolRequests])

    @agent.tool
    def increment(ctx: RunContext[StateDeps[Counter]], by: int) -> ToolReturn:
        """Add ``by`` to the shared counter."""
        ctx.deps.state.count += by
        # The adapter emits AG-UI events found in a tool return's metadata: the documented way to
        # send state from a backend tool.
        return ToolReturn(return_value=f"count is {ctx.deps.state.count}",
                          metadata=[StateSnapshotEvent(type=EventType.STATE_SNAPSHOT,
                                                       snapshot=ctx.deps.state.model_dump())])

    @agent.tool_plain(requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file (needs a person's approval)."""
        deleted.append(path)
        return f"deleted {path}"

    async def current(request: Request) -> Response:
        return await AGUIAdapter.dispatch_request(request, agent=agent, deps=StateDeps(Counter()))

    async def legacy(request: Request) -> Response:
        # The same agent as a server configured for pre-1.0 clients.
        return await AGUIAdapter.dispatch_request(request, agent=agent, deps=StateDeps(Counter()),
                                                  ag_ui_version="0.1.10")

    recorder = Recorder(Starlette(routes=[Route("/agent", current, methods=["POST"]),
                                          Route("/legacy", legacy, methods=["POST"])]))
    with serve(recorder) as url:
        yield Producer(url, recorder, deleted)


@pytest.fixture
def client(producer: Producer) -> Iterator[AgentClient]:
    with AgentClient(producer.endpoint()) as c:
        yield c


def _types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


# --------------------------------------------------------------------------------------------------
# agui probe (issue 19): the interrupt rules judged by the probe; NOTES.md records these reports
# --------------------------------------------------------------------------------------------------

#: The probe's verdicts (NOTES.md, "agui probe"), check by check, in report order.
PROBE_AGENT = {"stream-rules": "pass", "pause-as-success": "pass", "interrupt-count": "pass",
               "interrupt-ids-unique": "pass", "response-schema": "pass", "tool-call-id": "pass",
               "subagent-run-id": "n/a", "expires-at": "n/a", "answers-proceed": "pass", "approval-result": "pass",
               "unknown-entry": "warn", "fresh-thread-resume": "warn", "uncovered-resume": "pass",
               "repeated-resume": "pass"}
#: ``ag_ui_version="0.1.10"``: approvals end as success with the gated call unanswered.
PROBE_LEGACY = {**{check: "n/a" for check in PROBE_AGENT}, "stream-rules": "pass", "pause-as-success": "warn",
                "fresh-thread-resume": "warn"}


@pytest.mark.parametrize(("path", "prompt", "verdicts", "deleted"), [
    ("/agent", "please delete /srv/x", PROBE_AGENT, ["/srv/x"]),
    ("/agent", "please delete both /srv/x and /srv/y", PROBE_AGENT, ["/srv/x", "/srv/y"]),
    ("/legacy", "please delete /srv/x", PROBE_LEGACY, []),
])
def test_probe_verdicts(producer: Producer, path: str, prompt: str, verdicts: dict[str, str],
                        deleted: list[str]) -> None:
    from agui_client.testing import probe

    before = len(producer.deleted)
    report = probe(producer.endpoint(path), prompt=prompt, defective=True)

    assert {c.id: c.verdict for c in report.checks} == verdicts
    assert report.failures == ()
    # The answer runs only: nothing repeated, nothing uncovered. (In any order: pydantic-ai runs a
    # turn's approved tool calls at once, so two deletions may finish either way round.)
    assert sorted(producer.deleted[before:]) == sorted(deleted)
    runs = {r.name: r for r in report.runs}
    # An entry naming an interrupt it did not raise fails the run instead of being skipped (a SHOULD).
    assert "does not start with the expected 'int-' prefix" in (runs["fresh-resume"].detail or "")
    if path == "/agent":
        assert "does not start with the expected 'int-' prefix" in (runs["unknown-entry"].detail or "")
        # The uncovered resume is refused by the transport (an exception in the adapter), which conforms.
        assert (runs["uncovered"].outcome, runs["uncovered"].detail) == ("rejected", "HTTP 500: Internal Server Error")
        assert runs["repeat"].outcome == "error"
    else:
        pause = "\n".join(e.detail for e in report.check("pause-as-success").evidence)
        assert "(delete_file) left unanswered (named pending)" in pause


# --------------------------------------------------------------------------------------------------
# (a) chat
# --------------------------------------------------------------------------------------------------

def test_chat_two_turns(producer: Producer, client: AgentClient) -> None:
    thread = client.thread()
    first = thread.run("hi")

    assert first.outcome == "success"
    assert first.error is None and first.interrupts == () and first.pending_tool_call_ids == ()
    assert first.text == "Hello there"
    assert first.warnings == ()
    wire = producer.recorder.events()
    assert wire[0]["type"] == "RUN_STARTED" and wire[0]["protocolVersion"] == "1.0"
    assert wire[-1] == {**wire[-1], "type": "RUN_FINISHED", "outcome": {"type": "success"}}
    assert _types(wire)[1:6] == ["REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT",
                                 "REASONING_MESSAGE_END", "REASONING_END"]
    user, reasoning, answer = thread.state.messages
    assert isinstance(user, UserMessage) and user.content == "hi"
    assert isinstance(reasoning, ReasoningMessage) and reasoning.content == "The user greets me."
    assert isinstance(answer, AssistantMessage) and answer.content == "Hello there"
    assert [m.id for m in first.new_messages] == [reasoning.id, answer.id]

    second = thread.run("hi again")
    assert second.outcome == "success" and second.text == "Hello there" and second.warnings == ()
    sent = producer.recorder.request()
    # The whole history goes back (the reasoning message too) and the producer accepts it.
    assert [m["role"] for m in sent["messages"]] == ["user", "reasoning", "assistant", "user"]
    assert [m["id"] for m in sent["messages"][:3]] == [user.id, reasoning.id, answer.id]
    assert sent["protocolVersion"] == "1.0"
    assert len(thread.state.messages) == 6


# --------------------------------------------------------------------------------------------------
# (b) a backend tool call with state
# --------------------------------------------------------------------------------------------------

def test_backend_tool_with_state(producer: Producer, client: AgentClient) -> None:
    thread = client.thread()
    result = thread.run("please increment", state={"count": 5})

    assert result.outcome == "success" and result.warnings == ()
    assert result.pending_tool_call_ids == ()  # the backend answered its own call in the run
    assert thread.state.state == {"count": 7}  # 5 sent in, +2 by the tool, STATE_SNAPSHOT back out
    assert producer.recorder.request()["state"] == {"count": 5}
    user, asked, tool, final = thread.state.messages
    assert isinstance(asked, AssistantMessage) and asked.content == "Let me increment."
    (call,) = asked.tool_calls or ()
    assert call.function.name == "increment"
    assert json.loads(call.function.arguments) == {"by": 2}  # two TOOL_CALL_ARGS deltas, concatenated
    assert isinstance(tool, ToolMessage) and tool.tool_call_id == call.id and tool.content == "count is 7"
    assert isinstance(final, AssistantMessage) and final.content == "tool said: count is 7"
    wire = _types(producer.recorder.events())
    assert wire.count("TOOL_CALL_ARGS") == 2
    assert wire.index("TOOL_CALL_RESULT") < wire.index("STATE_SNAPSHOT")

    # The next run carries the state the last one left behind (SP-15).
    again = thread.run("increment again")
    assert again.outcome == "success"
    assert producer.recorder.request()["state"] == {"count": 7}
    assert thread.state.state == {"count": 9}


# --------------------------------------------------------------------------------------------------
# (c) a frontend tool call
# --------------------------------------------------------------------------------------------------

def test_frontend_tool_answered_next_run(producer: Producer, client: AgentClient) -> None:
    thread = client.thread()
    first = thread.run("pick a colour", tools=[PICK_COLOR])

    assert first.outcome == "success" and first.warnings == ()
    (call_id,) = first.pending_tool_call_ids
    assert producer.recorder.events()[-1]["outcome"] == {"type": "success", "pendingToolCallIds": [call_id]}
    (call,) = first.pending_tool_calls
    assert call.function.name == "pick_color" and json.loads(call.function.arguments) == {"palette": "warm"}
    assert thread.state.open_interrupts == ()
    # The call's parent: pydantic-ai opens and closes an empty assistant text message to hold it.
    (parent,) = [m for m in thread.state.messages if isinstance(m, AssistantMessage)]
    assert parent.content == "" and parent.tool_calls == (call,)

    thread.add_tool_result(call_id, "red")
    second = thread.run(tools=[PICK_COLOR])
    assert second.outcome == "success" and second.pending_tool_call_ids == () and second.warnings == ()
    assert second.text == "tool said: red"
    sent = producer.recorder.request()
    assert sent["messages"][-1] == {**sent["messages"][-1], "role": "tool", "toolCallId": call_id, "content": "red"}
    assert "resume" not in sent  # a frontend tool's answer rides the messages, never a resume list (TC-20)


def test_frontend_tool_with_handler(producer: Producer) -> None:
    with AgentClient(producer.endpoint()) as client:
        thread = client.thread(tool_handlers={"pick_color": lambda palette: f"teal from {palette}"})
        result = thread.run_until_done("pick a colour")

    assert result.outcome == "success" and result.text == "tool said: teal from warm"
    # The handler's signature became the declared tool (tools=None -> declared from tool_handlers).
    (tool,) = producer.recorder.request(-2)["tools"]
    assert tool["name"] == "pick_color" and tool["parameters"]["required"] == ["palette"]


# --------------------------------------------------------------------------------------------------
# (d) requires_approval=True: the 1.0 interrupt outcome, resumed three ways
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("decision", "tool_said", "executed"), [
    ("approve", "deleted /srv/x", True),
    ("reject", "not today", False),
    ("cancel", "Cancelled by user.", False),
])
def test_approval_interrupt_resumed(producer: Producer, client: AgentClient, decision: str, tool_said: str,
                                    executed: bool) -> None:
    before = len(producer.deleted)
    thread = client.thread()
    first = thread.run("delete the file")

    assert first.outcome == "interrupt" and first.warnings == ()
    assert first.pending_tool_call_ids == ()  # the interrupt outcome carries no pending calls (TC-19)
    (interrupt,) = first.interrupts
    assert thread.state.open_interrupts == first.interrupts
    (asked,) = [m for m in thread.state.messages if isinstance(m, AssistantMessage)]
    (call,) = asked.tool_calls or ()
    assert interrupt.id == f"int-{call.id}" and interrupt.tool_call_id == call.id
    assert interrupt.reason == "tool_call"
    assert interrupt.message == 'Approve delete_file({"path":"/srv/x"})?'
    assert interrupt.response_schema == {
        "type": "object", "required": ["approved"],
        "properties": {"approved": {"type": "boolean"}, "editedArgs": {"type": "object"},
                       "reason": {"type": "string"}}}
    assert producer.deleted[before:] == []

    # Continuing without covering the interrupt is refused before anything is sent (IR-13, IR-14).
    sent_before = len(producer.recorder.exchanges)
    with pytest.raises(UncoveredInterrupts) as refused:
        thread.run("never mind, just chat")
    assert refused.value.ids == (interrupt.id,)
    assert len(producer.recorder.exchanges) == sent_before
    assert thread.state.open_interrupts == first.interrupts

    builder = thread.resume_builder()
    if decision == "approve":
        builder.answer(interrupt.id, {"approved": True})
    elif decision == "reject":
        builder.answer(interrupt.id, {"approved": False, "reason": "not today"})
    else:
        builder.abandon(interrupt.id)
    second = thread.run(resume=builder)

    assert second.outcome == "success" and second.warnings == ()
    assert thread.state.open_interrupts == ()
    assert second.text == f"tool said: {tool_said}"
    assert producer.deleted[before:] == (["/srv/x"] if executed else [])
    sent = producer.recorder.request()
    expected_entry: dict[str, Any] = {"interruptId": interrupt.id,
                                      "status": "cancelled" if decision == "cancel" else "resolved"}
    if decision != "cancel":
        expected_entry["payload"] = builder.entries[0].payload
    assert sent["resume"] == [expected_entry]
    assert sent["threadId"] == thread.id
    # The resumed run answers a call made by the previous run: TOOL_CALL_RESULT without a new
    # START/ARGS/END (IR-28), placed right after the call's assistant message (TC-13).
    wire = producer.recorder.events()
    assert "TOOL_CALL_START" not in _types(wire)
    assert [e["toolCallId"] for e in wire if e["type"] == "TOOL_CALL_RESULT"] == [call.id]
    messages = thread.state.messages
    tool = messages[messages.index(asked) + 1]
    assert isinstance(tool, ToolMessage) and tool.tool_call_id == call.id and tool.content == tool_said
    # A refusal's outcome rides a REASONING_ENCRYPTED_VALUE aimed at the tool message; it is kept
    # opaque on the message and sent back with the history.
    assert tool.encrypted_value == (None if executed else DENIED)
    follow_up = thread.run("thanks")
    assert follow_up.outcome == "success"
    (echoed,) = [m for m in producer.recorder.request()["messages"] if m["role"] == "tool"]
    assert echoed.get("encryptedValue") == (None if executed else DENIED)


def test_approval_payload_checked_against_the_producers_schema(producer: Producer, client: AgentClient) -> None:
    thread = client.thread()
    (interrupt,) = thread.run("delete the file").interrupts
    sent_before = len(producer.recorder.exchanges)

    # pydantic-ai advertises approved as a boolean; "yes" is refused here, before anything is sent.
    with pytest.raises(InvalidResumePayload) as refused:
        thread.run(resume=thread.resume_builder().answer(interrupt.id, {"approved": "yes"}))
    assert refused.value.ids == (interrupt.id,)
    assert len(producer.recorder.exchanges) == sent_before
    assert thread.state.open_interrupts == (interrupt,)

    fixed = thread.run(resume=thread.resume_builder().answer(interrupt.id, {"approved": True}))
    assert fixed.outcome == "success" and fixed.text == "tool said: deleted /srv/x"


@pytest.mark.anyio
async def test_approval_with_async_client(producer: Producer) -> None:
    async with AsyncAgentClient(producer.endpoint()) as client:
        thread = client.thread()
        first = await thread.run("delete the file")
        assert first.outcome == "interrupt"
        (interrupt,) = first.interrupts
        second = await thread.run(resume=thread.resume_builder().answer(
            interrupt.id, {"approved": True, "editedArgs": {"path": "/srv/edited"}}))
    assert second.outcome == "success"
    assert second.text == "tool said: deleted /srv/edited"  # editedArgs replaced the proposed arguments
    assert producer.deleted[-1] == "/srv/edited"


# --------------------------------------------------------------------------------------------------
# the same agent configured for pre-1.0 clients (ag_ui_version="0.1.10")
# --------------------------------------------------------------------------------------------------

def test_legacy_server_thinking_events_read_as_reasoning(producer: Producer) -> None:
    with AgentClient(producer.endpoint("/legacy")) as client:
        thread = client.thread()
        result = thread.run("hi")

    wire = producer.recorder.events()
    assert _types(wire)[1:6] == ["THINKING_START", "THINKING_TEXT_MESSAGE_START", "THINKING_TEXT_MESSAGE_CONTENT",
                                 "THINKING_TEXT_MESSAGE_END", "THINKING_END"]
    assert "protocolVersion" not in wire[0] and "outcome" not in wire[-1]
    assert result.outcome == "success" and result.text == "Hello there"
    # RS-09: read as REASONING_* with one deprecation warning per event type.
    assert [(w.code, w.event_type) for w in result.warnings] == [
        ("RS-09", kind) for kind in _types(wire)[1:6]]
    (reasoning,) = [m for m in thread.state.messages if isinstance(m, ReasoningMessage)]
    assert reasoning.content == "The user greets me."


def test_legacy_server_approval_reads_as_a_pending_tool_call(producer: Producer) -> None:
    before = len(producer.deleted)
    with AgentClient(producer.endpoint("/legacy")) as client:
        thread = client.thread()
        result = thread.run("delete the file")

        # A pre-1.0 server ends the approval stop with a bare RUN_FINISHED: no outcome at all.
        assert producer.recorder.events()[-1].keys() == {"type", "timestamp", "threadId", "runId"}
        # Read as success (LC-09) with the call derived as pending (TC-17): nothing to resume.
        assert result.outcome == "success" and result.interrupts == () and thread.state.open_interrupts == ()
        (call,) = result.pending_tool_calls
        assert call.function.name == "delete_file" and result.warnings == ()

        # The only continuation the thread offers is a tool result, which this server takes as the
        # tool's own return value: the gated tool never runs.
        thread.add_tool_result(call.id, "pretend it was deleted")
        after = thread.run()
    assert after.outcome == "success" and after.text == "tool said: pretend it was deleted"
    assert producer.deleted[before:] == []


def test_client_module_is_the_one_under_test() -> None:
    # Guard against testing an installed copy instead of the working tree.
    assert agui_client.__file__ is not None and "site-packages" not in agui_client.__file__
