"""The calls and interrupts a run leaves open: which calls are pending after snapshots restate,
complete or answer them, and what a cancelled run or a repeated id leaves."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agui_client import (
    ThreadState,
    encode,
    replay,
)


def _call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "pick", "arguments": "{}"}}


def _snapshot_completing_a_streamed_message(history: list[dict[str, Any]], answered: bool) -> list[dict[str, Any]]:
    # ag-ui-langgraph's shape for parallel frontend calls: the stream starts the first call only, and
    # the closing snapshot restates the message with both.
    restated = {"id": "m1", "role": "assistant", "toolCalls": [_call("c1"), _call("c2")]}
    results = [{"id": "tm2", "role": "tool", "toolCallId": "c2", "content": "done"}] if answered else []
    return [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
            {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "pick", "parentMessageId": "m1"},
            {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "{}"},
            {"type": "TOOL_CALL_END", "toolCallId": "c1"},
            {"type": "MESSAGES_SNAPSHOT", "messages": [*history, restated, *results]},
            {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]


def _padding(count: int) -> list[dict[str, Any]]:
    return [{"id": f"h{i}", "role": "user", "content": "x" * 200} for i in range(count)]


@pytest.mark.parametrize("form", ["events", "jsonl", "jsonl-sliced"])
def test_a_call_first_named_by_a_snapshot_restating_a_streamed_message_is_pending(form: str) -> None:
    # TC-17 with MS-01 (a real producer, ag-ui-langgraph 0.0.47): the derived list is started minus
    # answered, and a call the snapshot adds to a message this run streamed was started in this run.
    history = _padding(2000 if form == "jsonl-sliced" else 1)  # (2000: past the sliced reading's threshold)
    events = _snapshot_completing_a_streamed_message(history, answered=False)
    source: Any = events if form == "events" else "\n".join(json.dumps(e, separators=(",", ":")) for e in events)

    result = replay(source)

    assert result.pending_tool_call_ids == ("c1", "c2")
    assert result.state.pending_tool_call_ids == ("c1", "c2")
    assert result.warnings == ()


def test_a_call_a_snapshot_names_with_its_result_is_not_pending() -> None:
    result = replay(_snapshot_completing_a_streamed_message([], answered=True))

    assert result.pending_tool_call_ids == ("c1",)


def test_a_started_call_is_answered_by_a_result_event_even_after_its_message_was_replaced() -> None:
    # TC-17: a call this run started by TOOL_CALL_START is answered by a TOOL_CALL_RESULT, never by a
    # snapshot's tool message (the reference's rule too). An activity taking its message's id before a
    # snapshot restates the message, call and result does not make it a call the snapshot first named
    # (golden stream tool-call-restated-after-activity; found by the reference differential).
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
              {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "pick", "parentMessageId": "a1"},
              {"type": "TOOL_CALL_END", "toolCallId": "c1"},
              {"type": "ACTIVITY_SNAPSHOT", "messageId": "a1", "activityType": "plan", "content": {"s": 1}},
              {"type": "MESSAGES_SNAPSHOT", "messages": [
                  {"id": "a1", "role": "assistant", "toolCalls": [_call("c1")]},
                  {"id": "t1", "role": "tool", "toolCallId": "c1", "content": "done"}]},
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]
    without_activity = [e for e in events if e["type"] != "ACTIVITY_SNAPSHOT"]

    result, plain = replay(events), replay(without_activity)

    assert result.pending_tool_call_ids == plain.pending_tool_call_ids == ("c1",)
    assert encode(result.state.messages) == encode(plain.state.messages)
    # (the thread's own list leaves out calls its messages answer: the snapshot's t1, in both)
    assert result.state.pending_tool_call_ids == plain.state.pending_tool_call_ids == ()


def test_unanswered_calls_of_restated_history_never_become_pending() -> None:
    # Calls of messages the run did not stream (history, held or not before) stay what they were:
    # offering them would run a frontend tool for a call nobody made in this run.
    old = {"id": "a0", "role": "assistant", "toolCalls": [_call("c0")]}
    thread = ThreadState()
    replay([{"type": "RUN_STARTED", "threadId": "t", "runId": "r0"},
            {"type": "MESSAGES_SNAPSHOT", "messages": [old]},
            {"type": "RUN_FINISHED", "threadId": "t", "runId": "r0", "outcome": {"type": "cancelled"}}], state=thread)

    result = replay([{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
                     {"type": "MESSAGES_SNAPSHOT", "messages": [old, {**old, "id": "a1", "toolCalls": [_call("c9")]}]},
                     {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"}], state=thread)

    assert result.pending_tool_call_ids == ()
    assert thread.pending_tool_call_ids == ()


def test_a_cancelled_run_after_an_interrupted_one_leaves_nothing_open() -> None:
    # LC-11: the cancelled outcome waits for nothing; the interrupts of the run before it are not open after it
    # (IR-27: pending interrupts are cleared by a success or cancelled finish).
    thread = ThreadState()
    interrupt = {"type": "interrupt", "interrupts": [{"id": "i1", "reason": "approval"}]}
    asked = replay([{"type": "RUN_STARTED", "threadId": "t", "runId": "r0"},
                    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r0", "outcome": interrupt}], state=thread)
    assert [i.id for i in asked.interrupts] == ["i1"] and [i.id for i in thread.open_interrupts] == ["i1"]

    stopped = replay([{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
                      {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1", "outcome": {"type": "cancelled"}}],
                     state=thread)

    assert stopped.outcome == "cancelled" and stopped.interrupts == ()
    assert thread.open_interrupts == () and thread.interrupted_run_id is None


def test_a_call_named_twice_in_pending_tool_call_ids_is_pending_once() -> None:
    # TC-18: a non-empty pendingToolCallIds is the list; an id named twice is one call to answer, warned.
    result = replay([{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
                     {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "confirm"},
                     {"type": "TOOL_CALL_END", "toolCallId": "c1"},
                     {"type": "RUN_FINISHED", "threadId": "t", "runId": "r",
                      "outcome": {"type": "success", "pendingToolCallIds": ["c1", "c1"]}}])

    assert result.pending_tool_call_ids == ("c1",) and result.state.pending_tool_call_ids == ("c1",)
    assert [(w.code, w.pointer) for w in result.warnings] == [("TC-18", "/outcome/pendingToolCallIds/1")]


def _one_final_message(shape: str) -> list[dict[str, Any]]:
    # Three ways to the same final message: an assistant message with one call, no result for it.
    text = {"id": "a1", "role": "assistant", "content": "x"}
    with_call = {**text, "toolCalls": [_call("c1")]}
    body: list[dict[str, Any]] = {
        "one snapshot": [{"type": "MESSAGES_SNAPSHOT", "messages": [with_call]}],
        "two snapshots": [{"type": "MESSAGES_SNAPSHOT", "messages": [text]},
                          {"type": "MESSAGES_SNAPSHOT", "messages": [with_call]}],
        "streamed, then a snapshot": [
            {"type": "TEXT_MESSAGE_START", "messageId": "a1", "role": "assistant"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "a1", "delta": "x"},
            {"type": "TEXT_MESSAGE_END", "messageId": "a1"},
            {"type": "MESSAGES_SNAPSHOT", "messages": [with_call]}],
    }[shape]
    return [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, *body,
            {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]


def test_a_message_only_snapshots_built_has_no_pending_calls_however_many_built_it() -> None:
    # Issue 17 item 13 (TC-17): a call is pending when this run started it, by TOOL_CALL_START or on a
    # message this run streamed into; how many snapshots built a message never changes the answer.
    one = replay(_one_final_message("one snapshot"))
    two = replay(_one_final_message("two snapshots"))

    assert one.pending_tool_call_ids == two.pending_tool_call_ids == ()
    assert one.state.messages == two.state.messages
    assert two.state.pending_tool_call_ids == ()


def test_a_call_a_snapshot_adds_to_a_message_the_run_streamed_text_into_is_pending() -> None:
    # A deliberate difference from the reference (which only counts TOOL_CALL_START): the run streamed
    # this message, so the calls its snapshot adds are this run's (the ag-ui-langgraph shape above,
    # with the first part streamed as text); see tests/golden/INDEX.md.
    result = replay(_one_final_message("streamed, then a snapshot"))

    assert result.pending_tool_call_ids == ("c1",)


def test_a_call_a_snapshot_adds_to_input_history_is_not_pending() -> None:
    # LC-17: messages echoed in RUN_STARTED.input are history, not streamed by the run: a snapshot
    # adding a call to one does not offer it as pending (the reference agrees). Streamed ones do.
    def stream(streamed: bool) -> bytes:
        start: dict[str, Any] = {"type": "RUN_STARTED", "threadId": "t1", "runId": "r2"}
        body = []
        if streamed:
            body = [{"type": "TEXT_MESSAGE_START", "messageId": "a1", "role": "assistant"},
                    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "a1", "delta": "earlier"},
                    {"type": "TEXT_MESSAGE_END", "messageId": "a1"}]
        else:
            start["input"] = {"threadId": "t1", "runId": "r2", "messages": [
                {"id": "a1", "role": "assistant", "content": "earlier"}], "tools": [], "context": [], "state": {}}
        snapshot = {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "a1", "role": "assistant", "content": "earlier",
                    "toolCalls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}]}
        events = [start, *body, snapshot, {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r2"}]
        return b"".join(json.dumps(e).encode() + b"\n" for e in events)

    assert replay(stream(streamed=False)).pending_tool_call_ids == ()
    assert replay(stream(streamed=True)).pending_tool_call_ids == ("c1",)
