"""Messages and calls streamed again: a reopened message appends, a call replayed in a later run
takes its arguments again, text streamed into a message a snapshot retyped extends it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agui_client import (
    AssistantMessage,
    RunSession,
    ThreadState,
    encode,
    replay,
)
from agui_client.types import ToolCallEndEvent


def _reopen(message_id: str, *deltas: str) -> list[dict[str, Any]]:
    return [{"type": "TEXT_MESSAGE_START", "messageId": message_id},
            *({"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": d} for d in deltas),
            {"type": "TEXT_MESSAGE_END", "messageId": message_id}]


_CALL = [{"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f", "parentMessageId": "p"},
         {"type": "TOOL_CALL_END", "toolCallId": "c"}]
REOPENED = {
    "a-tool-message": ([*_CALL, {"type": "TOOL_CALL_RESULT", "toolCallId": "c", "messageId": "t", "content": "ok"},
                        *_reopen("t", "x")], ("t", "okx")),
    "an-assistant-message-without-content": ([*_CALL, *_reopen("p")], ("p", None)),
    "the-same-then-text": ([*_CALL, *_reopen("p", "x")], ("p", "x")),
    "a-snapshot-message-without-content": (
        [{"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "p", "role": "assistant"}]}, *_reopen("p")], ("p", None)),
}


@pytest.mark.parametrize("case", REOPENED)
@pytest.mark.parametrize("form", ["events", "jsonl"])
def test_a_reopened_message_appends_to_what_it_held(case: str, form: str) -> None:
    # TX-05 (the reference's reading, with our warning): a re-opened id appends to its content, a tool
    # message's included (its result was lost); one that had none gains none unless text arrives.
    body, (message_id, content) = REOPENED[case]
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, *body,
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]
    source: Any = events if form == "events" else "\n".join(json.dumps(e) for e in events).encode()

    result = replay(source)

    wire = {m["id"]: m for m in encode(result.messages)}
    assert wire[message_id].get("content") == content
    assert [w.code for w in result.warnings] == ["TX-05/AGUI104"]


@pytest.mark.parametrize(("again", "expected"), [
    pytest.param(['{"action": ', '"one"}'], '{"action": "one"}', id="the-same-arguments-again"),
    pytest.param(['{"action": "two"}'], '{"action": "two"}', id="new-arguments-replace-them"),
    pytest.param([], '{"action": "one"}', id="none-keeps-the-old-ones"),
])
@pytest.mark.parametrize("form", ["events", "jsonl"])
def test_a_call_replayed_in_a_later_run_takes_its_arguments_again_not_twice(
    again: list[str], expected: str, form: str
) -> None:
    # TC-22 on a real producer's resume (ag-ui-langgraph, interrupt() inside a tool): the call of the
    # earlier run comes again, START, ARGS and END. Appending gave '{"action": "one"}{"action": "one"}'
    # at its END (and a TC-06 "not JSON" warning), which only a later snapshot repaired.
    def stream(run_id: str, deltas: list[str], finish: dict[str, Any]) -> Any:
        events = [{"type": "RUN_STARTED", "threadId": "t", "runId": run_id},
                  {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "risky", "parentMessageId": "a"},
                  *({"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": d} for d in deltas),
                  {"type": "TOOL_CALL_END", "toolCallId": "c"},
                  {"type": "RUN_FINISHED", "threadId": "t", "runId": run_id, **finish}]
        return events if form == "events" else "\n".join(json.dumps(e) for e in events).encode()

    thread = ThreadState()
    asked = {"outcome": {"type": "interrupt", "interrupts": [{"id": "i", "reason": "approval", "toolCallId": "c"}]}}
    replay(stream("r1", ['{"action": "one"}'], asked), state=thread)
    session = RunSession(thread)
    seen = []
    second = stream("r2", again, {})
    for item in (second if form == "events" else second.splitlines()):
        folded = session.feed_event(item) if form == "events" else session.feed_payload(item)
        if any(isinstance(event, ToolCallEndEvent) for event in folded):
            seen.append(thread.tool_call("c").function.arguments)  # type: ignore[union-attr]
    result = session.end()

    assert seen == [expected]
    assert result.warnings == ()
    assert [c.function.arguments for m in thread.messages if isinstance(m, AssistantMessage)
            for c in m.tool_calls or ()] == [expected]


def test_text_streamed_into_a_message_a_snapshot_made_a_tool_message_extends_its_content() -> None:
    # TX-01: the snapshot gave m1 the content "U" (as a tool message, whose content is not streamed);
    # the next delta appends to it, as for every other role (it used to replace it: "b").
    events = [{"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"},
              {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
              {"type": "MESSAGES_SNAPSHOT",
               "messages": [{"id": "m1", "role": "tool", "content": "U", "toolCallId": "c"}]},
              {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "b"},
              {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
              {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"}]
    data = b"".join(json.dumps(e).encode() + b"\n" for e in events)

    from agui_client import decode_event

    for source in (data, [decode_event(e) for e in events]):
        assert replay(source).state.message("m1").content == "Ub"  # type: ignore[union-attr]
