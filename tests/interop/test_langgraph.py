"""Interop: agui_client against LangGraph's AG-UI adapter (``ag-ui-langgraph``, a real producer).

A small LangGraph graph (MemorySaver checkpointer) drives a fake chat model
(``GenericFakeChatModel``: no network, no keys): a chat node, a ``ToolNode`` backend tool that
updates graph state, frontend tools that end the run, and an approval node that calls
``interrupt()``. It is served by ``add_langgraph_fastapi_endpoint`` twice on one FastAPI app:

* ``/default`` - ``LangGraphAgent`` as shipped: RAW passthrough on, ``emit_interrupt_outcome=False``;
* ``/v1``      - the same graph with ``emit_interrupt_outcome=True`` (the AG-UI 1.0 interrupt outcome);
* ``/lean``    - the defaults with ``emit_raw_events=False`` (for the legacy bridge's tests).

Everything on the client side goes through the public API. Third-party packages are imported inside
the fixture, so the main dev environment can collect this file and deselect it
(``-m "not interop"``); ``.ci/interop.sh`` runs it in ``.venv-interop``. See NOTES.md.
"""

import contextlib
import json
import re
import uuid
from collections.abc import Iterator
from typing import Annotated, Any

import pytest
from wire import Recorder, serve

from agui_client import (
    AgentClient,
    AssistantMessage,
    AsyncAgentClient,
    CustomEvent,
    InvalidResumePayload,
    NothingToResume,
    RawEvent,
    ResumeEntry,
    Tool,
    ToolCallEndEvent,
    ToolMessage,
    UncoveredInterrupts,
    UserMessage,
)

pytestmark = [
    pytest.mark.interop,
    # ag-ui-langgraph 0.0.47 calls a deprecated LangGraph API on every run (get_schema_keys ->
    # get_config_jsonschema). The warning is raised in the server thread; under the project's
    # filterwarnings=error it would turn every run into RUN_ERROR. Only that warning is let through.
    pytest.mark.filterwarnings("ignore:`get_config_jsonschema` is deprecated"),
]

PICK_COLOR = Tool(name="pick_color", description="Ask the user to pick a colour.",
                  parameters={"type": "object", "properties": {"palette": {"type": "string"}},
                              "required": ["palette"]})
APPROVAL_SCHEMA = {"type": "object", "required": ["approved"],
                   "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}}}


# --------------------------------------------------------------------------------------------------
# the producer: a LangGraph graph behind ag-ui-langgraph
# --------------------------------------------------------------------------------------------------

class Producer:
    def __init__(self, url: str, recorder: Recorder, deleted: list[str]) -> None:
        self.url = url
        self.recorder = recorder
        self.deleted = deleted  # paths the approval node really deleted

    def endpoint(self, path: str) -> str:
        return self.url + path


def _reply(state: dict[str, Any]) -> Any:
    """The scripted model: answers the last message of the graph state."""
    from langchain_core.messages import AIMessage, ToolMessage

    last = state["messages"][-1]
    if isinstance(last, ToolMessage):
        return AIMessage(content=f"tool said: {last.content}")

    def raw(name: str, args: dict[str, Any]) -> dict[str, Any]:
        # GenericFakeChatModel streams content and additional_kwargs, not AIMessage.tool_calls: the
        # call goes in the OpenAI wire form, which langchain-core turns into tool_call_chunks.
        return {"id": f"call_{name}_{uuid.uuid4().hex[:8]}", "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)}}

    def call(content: str, name: str, args: dict[str, Any]) -> Any:
        return AIMessage(content=content, additional_kwargs={"tool_calls": [raw(name, args)]})

    text = str(last.content)
    if "two colours" in text:
        return AIMessage(content="", additional_kwargs={"tool_calls": [
            raw("pick_color", {"palette": "warm"}), raw("pick_color", {"palette": "cold"})]})
    if "increment" in text:
        return call("Let me increment.", "increment", {"by": 2})
    if "colour" in text:
        return call("", "pick_color", {"palette": "warm"})
    if "delete" in text:
        return call("", "delete_file", {"path": "/srv/x"})
    return AIMessage(content="Hello there")


@pytest.fixture(scope="module")
def producer() -> Iterator[Producer]:
    with running_producer() as running:
        yield running


@contextlib.contextmanager
def running_producer() -> Iterator[Producer]:
    """The producer on 127.0.0.1 (also used by ``record_legacy.py``)."""
    from ag_ui_langgraph import LangGraphAgent, add_langgraph_fastapi_endpoint
    from fastapi import FastAPI
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import ToolMessage
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import InjectedToolCallId, tool
    from langgraph.checkpoint.memory import MemorySaver
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import InjectedState, ToolNode
    from langgraph.types import Command, interrupt

    deleted: list[str] = []

    class State(MessagesState):
        count: int
        tools: list[dict[str, Any]]  # the frontend tools the client offered (filled in by the adapter)

    async def chat(state: State, config: RunnableConfig) -> dict[str, Any]:
        model = GenericFakeChatModel(messages=iter([_reply(state)]))
        return {"messages": [await model.ainvoke(state["messages"], config)]}

    @tool
    def increment(by: int, tool_call_id: Annotated[str, InjectedToolCallId],
                  state: Annotated[dict[str, Any], InjectedState]) -> Command:
        """Add ``by`` to the shared counter."""
        count = (state.get("count") or 0) + by
        return Command(update={"count": count,
                               "messages": [ToolMessage(f"count is {count}", tool_call_id=tool_call_id)]})

    def approve(state: State) -> dict[str, Any]:
        call = state["messages"][-1].tool_calls[0]
        path = call["args"]["path"]
        answer = interrupt({"reason": "tool_approval", "message": f"Delete {path}?", "toolCallId": call["id"],
                            "responseSchema": APPROVAL_SCHEMA})
        if isinstance(answer, dict) and answer.get("__agui_cancelled__"):
            content = "cancelled"  # the adapter's sentinel for a `cancelled` resume entry
        elif isinstance(answer, dict) and answer.get("approved") is True:
            deleted.append(path)
            content = f"deleted {path}"
        else:
            content = f"rejected: {answer.get('reason') if isinstance(answer, dict) else answer}"
        return {"messages": [ToolMessage(content, tool_call_id=call["id"])]}

    def route(state: State) -> str:
        calls = getattr(state["messages"][-1], "tool_calls", None) or []
        if not calls:
            return END
        name = calls[0]["name"]
        if name == "increment":
            return "tools"
        if name == "delete_file":
            return "approve"
        return END  # a frontend tool: the run ends and the client answers it

    builder = StateGraph(State)
    builder.add_node("chat", chat)
    builder.add_node("tools", ToolNode([increment]))
    builder.add_node("approve", approve)
    builder.add_edge(START, "chat")
    builder.add_conditional_edges("chat", route, ["tools", "approve", END])
    builder.add_edge("tools", "chat")
    builder.add_edge("approve", "chat")
    graph = builder.compile(checkpointer=MemorySaver())

    app = FastAPI()
    add_langgraph_fastapi_endpoint(app, LangGraphAgent(name="default", graph=graph), "/default")
    add_langgraph_fastapi_endpoint(app, LangGraphAgent(name="v1", graph=graph, emit_interrupt_outcome=True), "/v1")
    # The shipped defaults without the RAW passthrough: the CUSTOM on_interrupt then carries no rawEvent
    # (so no LangGraph interrupt id), the legacy bridge's other case.
    add_langgraph_fastapi_endpoint(app, LangGraphAgent(name="lean", graph=graph, emit_raw_events=False), "/lean")
    recorder = Recorder(app)
    with serve(recorder) as url:
        yield Producer(url, recorder, deleted)


@pytest.fixture
def default(producer: Producer) -> Iterator[AgentClient]:
    with AgentClient(producer.endpoint("/default")) as client:
        yield client


@pytest.fixture
def v1(producer: Producer) -> Iterator[AgentClient]:
    with AgentClient(producer.endpoint("/v1")) as client:
        yield client


def _types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def _calls(messages: Any) -> list[Any]:
    return [c for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls or ()]


def _snapshot_ids(events: list[dict[str, Any]]) -> list[str]:
    (last,) = [e for e in events if e["type"] == "MESSAGES_SNAPSHOT"][-1:]
    return [m["id"] for m in last["messages"]]


# --------------------------------------------------------------------------------------------------
# agui probe (issue 19): the interrupt rules judged by the probe; NOTES.md records these reports
# --------------------------------------------------------------------------------------------------

#: The probe's verdicts on each endpoint (NOTES.md, "agui probe"), check by check, in report order.
PROBE_VERDICTS = {
    # Shipped defaults: the pause is a CUSTOM on_interrupt plus a success with the gated call
    # unanswered, so no interrupt outcome exists for the resume checks to use.
    "/default": {"stream-rules": "pass", "pause-as-success": "warn", "interrupt-count": "n/a",
                 "interrupt-ids-unique": "n/a", "response-schema": "n/a", "tool-call-id": "n/a",
                 "subagent-run-id": "n/a", "expires-at": "n/a", "answers-proceed": "n/a", "approval-result": "n/a",
                 "unknown-entry": "n/a", "fresh-thread-resume": "warn", "uncovered-resume": "n/a",
                 "repeated-resume": "n/a"},
    "/v1": {"stream-rules": "pass", "pause-as-success": "pass", "interrupt-count": "pass",
            "interrupt-ids-unique": "pass", "response-schema": "pass", "tool-call-id": "pass",
            "subagent-run-id": "n/a", "expires-at": "n/a", "answers-proceed": "pass", "approval-result": "pass",
            "unknown-entry": "pass", "fresh-thread-resume": "warn", "uncovered-resume": "pass",
            "repeated-resume": "pass"},
}


@pytest.mark.parametrize("path", ["/default", "/v1"])
def test_probe_verdicts(producer: Producer, path: str) -> None:
    from agui_client.testing import probe

    before = len(producer.deleted)
    report = probe(producer.endpoint(path), prompt="please delete /srv/x", defective=True)

    assert {c.id: c.verdict for c in report.checks} == PROBE_VERDICTS[path]
    assert report.failures == ()
    # A resume list on a new thread takes the adapter's resume path: the prompt never reaches the graph,
    # whose model node then fails on an empty message list.
    fresh = report.check("fresh-thread-resume").evidence[0].detail
    assert fresh.startswith("RUN_ERROR: list index out of range")
    if path == "/default":
        pause = "\n".join(e.detail for e in report.check("pause-as-success").evidence)
        assert "CUSTOM event on_interrupt" in pause and "(delete_file) left unanswered" in pause
        assert producer.deleted[before:] == []
    else:
        assert report.check("uncovered-resume").reason == "interrupted again with the uncovered interrupt"
        # Only the answer run deleted: the unknown-entry run's two entries reached the graph as the
        # adapter's resume map, which the approve node reads as a rejection. Its tool message still
        # came, so the approval-result heuristic passes; the side effect shows what happened.
        assert producer.deleted[before:] == ["/srv/x"]


# --------------------------------------------------------------------------------------------------
# chat
# --------------------------------------------------------------------------------------------------

def test_chat_two_turns(producer: Producer, default: AgentClient) -> None:
    thread = default.thread()
    first = thread.run("hi")

    assert first.outcome == "success" and first.error is None and first.warnings == ()
    assert first.text == "Hello there"
    wire = producer.recorder.events()
    # No protocolVersion (read quietly as a producer from before versioning, PV-04) and no outcome
    # (success, LC-09); the adapter's RAW passthrough of every LangGraph event is on by default.
    assert "protocolVersion" not in wire[0] and "outcome" not in wire[-1]
    assert _types(wire).count("RAW") > 0
    assert "chat" in [s.name for s in first.steps] and all(s.finished for s in first.steps)
    user, answer = thread.state.messages
    assert isinstance(user, UserMessage) and isinstance(answer, AssistantMessage)
    assert answer.content == "Hello there"
    assert [user.id, answer.id] == _snapshot_ids(wire)
    # STATE_SNAPSHOT carries the whole graph state, LangGraph's own serialised messages included.
    assert [m["type"] for m in thread.state.state["messages"]] == ["human", "ai"]
    left = json.loads(json.dumps(thread.state.state))

    second = thread.run("hi again")
    assert second.outcome == "success" and second.text == "Hello there" and second.warnings == ()
    sent = producer.recorder.request()
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user"]
    assert sent["state"] == left  # the state the last run left goes back as is, graph messages and all
    assert [m.id for m in thread.state.messages] == _snapshot_ids(producer.recorder.events())
    assert len(thread.state.messages) == 4


def test_raw_events_reach_the_stream(producer: Producer, default: AgentClient) -> None:
    thread = default.thread()
    with thread.stream("hi") as events:
        raw = [e for e in events if isinstance(e, RawEvent)]
    assert events.result is not None and events.result.outcome == "success"
    assert len(raw) == _types(producer.recorder.events()).count("RAW")
    assert {e.event["event"] for e in raw} >= {"on_chain_start", "on_chat_model_stream"}


# --------------------------------------------------------------------------------------------------
# a backend tool call with state
# --------------------------------------------------------------------------------------------------

def test_backend_tool_with_state(producer: Producer, default: AgentClient) -> None:
    thread = default.thread()
    result = thread.run("please increment", state={"count": 5})

    assert result.outcome == "success" and result.warnings == ()
    assert result.pending_tool_call_ids == ()
    assert producer.recorder.request()["state"] == {"count": 5}
    assert thread.state.state["count"] == 7  # 5 sent in, +2 by the ToolNode's Command, STATE_SNAPSHOT back
    wire = producer.recorder.events()
    assert "TOOL_CALL_ARGS" not in _types(wire)  # see NOTES.md: the adapter drops a first chunk's args
    (wire_result,) = [e for e in wire if e["type"] == "TOOL_CALL_RESULT"]
    asked = next(m for m in thread.state.messages if isinstance(m, AssistantMessage) and m.tool_calls)
    (call,) = asked.tool_calls or ()
    assert asked.content == "Let me increment."
    assert call.function.name == "increment"
    assert json.loads(call.function.arguments) == {"by": 2}  # filled in by the closing MESSAGES_SNAPSHOT
    # The streamed result is keyed by the call id; the snapshot names the real tool message id: the
    # thread ends up with the snapshot's message only, once.
    assert wire_result["messageId"] == wire_result["toolCallId"] == call.id
    (tool,) = [m for m in thread.state.messages if isinstance(m, ToolMessage)]
    assert tool.tool_call_id == call.id and tool.content == "count is 7"
    assert tool.id != call.id
    assert sorted(m.id for m in thread.state.messages) == sorted(_snapshot_ids(wire))
    final = [m for m in thread.state.messages if isinstance(m, AssistantMessage)][-1]
    assert final.content == "tool said: count is 7"
    assert result.text == "Let me increment.\n\ntool said: count is 7"

    again = thread.run("increment again")
    assert again.outcome == "success"
    assert producer.recorder.request()["state"]["count"] == 7  # the state the last run left (SP-15)
    assert thread.state.state["count"] == 9


# --------------------------------------------------------------------------------------------------
# a frontend tool call
# --------------------------------------------------------------------------------------------------

def test_frontend_tool_answered_next_run(producer: Producer, default: AgentClient) -> None:
    thread = default.thread()
    first = thread.run("pick a colour", tools=[PICK_COLOR])

    assert first.outcome == "success" and first.warnings == ()
    assert producer.recorder.events()[-1].keys() == {"type", "threadId", "runId"}  # no outcome at all
    (call,) = first.pending_tool_calls  # derived from the stream: started, not answered (TC-17)
    assert call.function.name == "pick_color" and json.loads(call.function.arguments) == {"palette": "warm"}
    assert thread.state.open_interrupts == ()
    # The adapter puts the offered tools into the graph state, and so into STATE_SNAPSHOT.
    assert [t["name"] for t in thread.state.state["tools"]] == ["pick_color"]

    thread.add_tool_result(call.id, "red")
    second = thread.run(tools=[PICK_COLOR])
    assert second.outcome == "success" and second.pending_tool_call_ids == () and second.warnings == ()
    assert second.text == "tool said: red"
    sent = producer.recorder.request()
    assert sent["messages"][-1] == {**sent["messages"][-1], "role": "tool", "toolCallId": call.id, "content": "red"}
    assert [m.id for m in thread.state.messages] == _snapshot_ids(producer.recorder.events())


def test_parallel_frontend_calls_named_only_by_the_snapshot_are_pending(producer: Producer,
                                                                        default: AgentClient) -> None:
    # The adapter streams TOOL_CALL_START/END for the first of two calls in one model message; the
    # second reaches the client only in the closing MESSAGES_SNAPSHOT, and RUN_FINISHED names none.
    # Both were made in this run (TC-17 with MS-01): a handler loop that saw one would leave the
    # other unanswered in every later request.
    first = default.thread().run("pick two colours", tools=[PICK_COLOR])

    started = [e["toolCallId"] for e in producer.recorder.events() if e["type"] == "TOOL_CALL_START"]
    assert len(started) == 1  # the producer's quirk this test is about
    assert first.outcome == "success" and first.warnings == ()
    assert len(first.pending_tool_call_ids) == 2 and first.pending_tool_call_ids[0] == started[0]
    assert sorted(json.loads(c.function.arguments)["palette"] for c in first.pending_tool_calls) == ["cold", "warm"]

    picked: list[str] = []
    thread = default.thread(tool_handlers={"pick_color": lambda palette: picked.append(palette) or palette})
    done = thread.run_until_done("pick two colours", tools=[PICK_COLOR])

    assert done.outcome == "success" and done.pending_tool_call_ids == ()
    assert sorted(picked) == ["cold", "warm"]
    calls = {c.id for m in thread.state.messages if isinstance(m, AssistantMessage) for c in m.tool_calls or ()}
    assert {m.tool_call_id for m in thread.state.messages if isinstance(m, ToolMessage)} == calls


def test_tool_call_arguments_arrive_only_with_the_snapshot(producer: Producer, default: AgentClient) -> None:
    thread = default.thread()
    seen_at_end: dict[str, str] = {}
    with thread.stream("pick a colour", tools=[PICK_COLOR]) as events:
        for event in events:
            if isinstance(event, ToolCallEndEvent):
                live = thread.state.tool_call(event.tool_call_id)
                assert live is not None
                seen_at_end[event.tool_call_id] = live.function.arguments
    assert events.result is not None
    (call_id,) = events.result.pending_tool_call_ids
    # At TOOL_CALL_END the call has no arguments (a no-argument call, TC-07); the MESSAGES_SNAPSHOT
    # before RUN_FINISHED supplies them.
    assert seen_at_end == {call_id: ""}
    final = thread.state.tool_call(call_id)
    assert final is not None and json.loads(final.function.arguments) == {"palette": "warm"}


# --------------------------------------------------------------------------------------------------
# interrupt(): with the 1.0 interrupt outcome (emit_interrupt_outcome=True)
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("decision", "tool_said", "executed"), [
    ("approve", "deleted /srv/x", True),
    ("reject", "rejected: not today", False),
    ("cancel", "cancelled", False),
])
def test_interrupt_outcome_resumed(producer: Producer, v1: AgentClient, decision: str, tool_said: str,
                                   executed: bool) -> None:
    before = len(producer.deleted)
    thread = v1.thread()
    first = thread.run("delete the file")

    assert first.outcome == "interrupt" and first.warnings == ()
    assert first.pending_tool_call_ids == ()
    (interrupt,) = first.interrupts
    assert thread.state.open_interrupts == first.interrupts
    (call,) = _calls(thread.state.messages)
    assert call.function.name == "delete_file"
    assert re.fullmatch(r"[0-9a-f]{32}", interrupt.id)  # LangGraph's own interrupt id
    assert interrupt.reason == "tool_approval" and interrupt.message == "Delete /srv/x?"
    assert interrupt.tool_call_id == call.id
    assert interrupt.response_schema == APPROVAL_SCHEMA
    assert interrupt.metadata is not None and interrupt.metadata["langgraph"]["raw"]["toolCallId"] == call.id
    wire = producer.recorder.events()
    # The legacy CUSTOM on_interrupt still precedes the outcome; its value is a JSON *string*.
    (legacy,) = [e for e in wire if e["type"] == "CUSTOM"]
    assert legacy["name"] == "on_interrupt" and json.loads(legacy["value"])["toolCallId"] == call.id
    assert wire[-1]["outcome"]["type"] == "interrupt"
    assert producer.deleted[before:] == []

    sent_before = len(producer.recorder.exchanges)
    with pytest.raises(UncoveredInterrupts) as refused:
        thread.run("never mind")
    assert refused.value.ids == (interrupt.id,)
    assert len(producer.recorder.exchanges) == sent_before

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
    entry = producer.recorder.request()["resume"]
    assert entry == [{"interruptId": interrupt.id, "status": "cancelled" if decision == "cancel" else "resolved",
                      **({"payload": builder.entries[0].payload} if decision != "cancel" else {})}]
    (tool,) = [m for m in thread.state.messages if isinstance(m, ToolMessage)]
    assert tool.tool_call_id == call.id and tool.content == tool_said
    # The node's ToolMessage reaches the client through MESSAGES_SNAPSHOT only (no TOOL_CALL_RESULT).
    assert "TOOL_CALL_RESULT" not in _types(producer.recorder.events())
    assert sorted(m.id for m in thread.state.messages) == sorted(_snapshot_ids(producer.recorder.events()))


@pytest.mark.anyio
async def test_interrupt_outcome_with_async_client(producer: Producer) -> None:
    before = len(producer.deleted)
    async with AsyncAgentClient(producer.endpoint("/v1")) as client:
        thread = client.thread()
        first = await thread.run("delete the file")
        assert first.outcome == "interrupt"
        (interrupt,) = first.interrupts
        second = await thread.run(resume=thread.resume_builder().answer(interrupt.id, {"approved": True}))
    assert second.outcome == "success" and second.text == "tool said: deleted /srv/x"
    assert producer.deleted[before:] == ["/srv/x"]


# --------------------------------------------------------------------------------------------------
# interrupt(): as shipped (emit_interrupt_outcome=False) - no interrupt outcome on the wire
# --------------------------------------------------------------------------------------------------

def test_default_interrupt_reads_as_success_with_a_pending_call(producer: Producer, default: AgentClient) -> None:
    before = len(producer.deleted)
    thread = default.thread()
    with thread.stream("delete the file") as events:
        custom = [e for e in events if isinstance(e, CustomEvent)]
    result = events.result
    assert result is not None

    # The run stopped at interrupt() but ends with a bare RUN_FINISHED: read as success (LC-09),
    # the gated call derived as pending (TC-17), no interrupt to answer. The interrupt only shows as
    # a CUSTOM event whose value is the interrupt() payload as a JSON string.
    assert producer.recorder.events()[-1].keys() == {"type", "threadId", "runId"}
    assert result.outcome == "success" and result.interrupts == ()
    # The one thing the client adds: a warning that the agent asked the pre-1.0 way (docs/legacy-interrupts.md).
    assert [w.code for w in result.warnings] == ["LEGACY-CUSTOM-INTERRUPT"]
    assert thread.state.open_interrupts == ()
    (call,) = result.pending_tool_calls
    assert call.function.name == "delete_file"
    (on_interrupt,) = custom
    assert on_interrupt.name == "on_interrupt"
    assert isinstance(on_interrupt.value, str) and json.loads(on_interrupt.value)["toolCallId"] == call.id

    # A resume list answers nothing on this thread: refused before sending (IR-10).
    sent_before = len(producer.recorder.exchanges)
    with pytest.raises(NothingToResume):
        thread.run(resume=[ResumeEntry(interrupt_id="anything", status="cancelled")])
    assert len(producer.recorder.exchanges) == sent_before

    # Answering the pending call as a frontend tool does not resume the graph: the adapter replays the
    # interrupt (RUN_STARTED, CUSTOM on_interrupt, bare RUN_FINISHED) and the run reads as success again.
    thread.add_tool_result(call.id, "approved")
    again = thread.run()
    assert _types(producer.recorder.events()) == ["RUN_STARTED", "CUSTOM", "RUN_FINISHED"]
    assert again.outcome == "success" and again.pending_tool_call_ids == () and again.new_messages == ()
    assert [w.code for w in again.warnings] == ["LEGACY-CUSTOM-INTERRUPT"]
    assert producer.deleted[before:] == []


def test_default_interrupt_resumed_through_forwarded_props(producer: Producer, default: AgentClient) -> None:
    before = len(producer.deleted)
    thread = default.thread()
    first = thread.run("delete the file")
    assert first.outcome == "success" and len(first.pending_tool_call_ids) == 1

    # The adapter's own (deprecated) resume channel, through the public forwarded_props argument.
    second = thread.run(forwarded_props={"command": {"resume": {"approved": True}}})
    assert second.outcome == "success" and second.text == "tool said: deleted /srv/x"
    assert producer.deleted[before:] == ["/srv/x"]
    sent = producer.recorder.request()
    assert "resume" not in sent and sent["forwardedProps"] == {"command": {"resume": {"approved": True}}}
    (tool,) = [m for m in thread.state.messages if isinstance(m, ToolMessage)]
    assert tool.tool_call_id == first.pending_tool_call_ids[0] and tool.content == "deleted /srv/x"


# --------------------------------------------------------------------------------------------------
# interrupt(): as shipped, through the client's legacy bridge (legacy_interrupts="langgraph")
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("decision", "tool_said", "executed"), [
    ("approve", "deleted /srv/x", True),
    ("reject", "rejected: not today", False),
    ("abandon", "cancelled", False),
])
def test_legacy_interrupt_bridged(producer: Producer, decision: str, tool_said: str, executed: bool) -> None:
    before = len(producer.deleted)
    with AgentClient(producer.endpoint("/default"), legacy_interrupts="langgraph") as client:
        thread = client.thread()
        first = thread.run("delete the file")

        wire = producer.recorder.events()
        assert wire[-1].keys() == {"type", "threadId", "runId"}  # success on the wire
        (legacy,) = [e for e in wire if e["type"] == "CUSTOM"]
        assert first.outcome == "interrupt" and first.bridged == "langgraph" and first.warnings == ()
        (interrupt,) = first.interrupts
        (call,) = _calls(thread.state.messages)
        assert interrupt.id == legacy["rawEvent"]["id"] and re.fullmatch(r"[0-9a-f]{32}", interrupt.id)
        assert interrupt.reason == "tool_approval" and interrupt.message == "Delete /srv/x?"
        assert interrupt.tool_call_id == call.id and interrupt.response_schema == APPROVAL_SCHEMA
        assert first.pending_tool_call_ids == () and thread.open_interrupts == first.interrupts

        # The resume rules apply unchanged: an incomplete or invalid answer is refused before sending.
        sent_before = len(producer.recorder.exchanges)
        with pytest.raises(UncoveredInterrupts):
            thread.run("never mind")
        with pytest.raises(InvalidResumePayload):
            thread.run(resume=thread.resume_builder().answer(interrupt.id, {"approved": "yes"}))
        assert len(producer.recorder.exchanges) == sent_before
        assert producer.deleted[before:] == []

        builder = thread.resume_builder()
        if decision == "approve":
            builder.answer(interrupt.id, {"approved": True})
        elif decision == "reject":
            builder.answer(interrupt.id, {"approved": False, "reason": "not today"})
        else:
            builder.abandon(interrupt.id)
        second = thread.run(resume=builder)

    sent = producer.recorder.request()
    assert "resume" not in sent  # the answers travel in the producer's channel only
    resume = sent["forwardedProps"]["command"]["resume"]
    assert resume == (builder.entries[0].payload if decision != "abandon"
                      else {"__agui_cancelled__": True, "interrupt_id": interrupt.id})
    assert second.outcome == "success" and second.warnings == () and thread.open_interrupts == ()
    assert second.text == f"tool said: {tool_said}"
    assert producer.deleted[before:] == (["/srv/x"] if executed else [])
    (tool,) = [m for m in thread.state.messages if isinstance(m, ToolMessage)]
    assert tool.tool_call_id == call.id and tool.content == tool_said


@pytest.mark.anyio
async def test_legacy_interrupt_bridged_without_raw_events_async(producer: Producer) -> None:
    before = len(producer.deleted)
    async with AsyncAgentClient(producer.endpoint("/lean"), legacy_interrupts="langgraph") as client:
        thread = client.thread()
        first = await thread.run("delete the file")
        assert "rawEvent" not in [e for e in producer.recorder.events() if e["type"] == "CUSTOM"][0]
        (interrupt,) = first.interrupts
        assert first.outcome == "interrupt" and interrupt.id == f"{first.run_id}:on_interrupt:0"
        second = await thread.run(resume=thread.resume_builder().answer(interrupt.id, {"approved": True}))
    assert producer.recorder.request()["forwardedProps"] == {"command": {"resume": {"approved": True}}}
    assert second.outcome == "success" and second.text == "tool said: deleted /srv/x"
    assert producer.deleted[before:] == ["/srv/x"]
