"""Ids two things may claim: a tool result, a call's own assistant message or a parent of another role
never takes a message's id, and the index of call ids follows the messages that hold them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from foldkit import FINISH, START

from agui_client import (
    AssistantMessage,
    encode,
    replay,
)
from agui_client.types import ToolCallEndEvent, ToolCallStartEvent
from agui_client.types.messages import FunctionCall, ToolCall

RESULT_ID_CASES = {
    # A parentless TOOL_CALL_START: this client names the call's assistant message after the call, and
    # the producer names the result after the call too (the reference ends with two messages "c1").
    "the-call's-own-message": ([{"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f"},
                                {"type": "TOOL_CALL_END", "toolCallId": "c1"},
                                {"type": "TOOL_CALL_RESULT", "toolCallId": "c1", "messageId": "c1", "content": "ok"}],
                               [("c1.assistant", "assistant", None), ("c1", "tool", "ok")]),
    "a-user-message": ([{"type": "TEXT_MESSAGE_START", "messageId": "u", "role": "user"},
                        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "u", "delta": "hi"},
                        {"type": "TEXT_MESSAGE_END", "messageId": "u"},
                        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f", "parentMessageId": "a"},
                        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
                        {"type": "TOOL_CALL_RESULT", "toolCallId": "c1", "messageId": "u", "content": "ok"}],
                       [("u", "user", "hi"), ("a", "assistant", None), ("u.c1", "tool", "ok")]),
    "another-call's-result": ([{"type": "TOOL_CALL_START", "toolCallId": c, "toolCallName": "f", "parentMessageId": "a"}
                               for c in ("c1", "c2")] +
                              [{"type": "TOOL_CALL_END", "toolCallId": c} for c in ("c1", "c2")] +
                              [{"type": "TOOL_CALL_RESULT", "toolCallId": "c1", "messageId": "t", "content": "one"},
                               {"type": "TOOL_CALL_RESULT", "toolCallId": "c2", "messageId": "t", "content": "two"}],
                              [("a", "assistant", None), ("t", "tool", "one"), ("t.c2", "tool", "two")]),
    # ag-ui-langgraph re-emits a call its model did not stream when the tool ends, naming the ToolMessage's
    # id as the call's parent and as the result's (golden tool-call-parent-is-result-id): the message the
    # call's parent created keeps the producer's id, the result gets another.
    "the-call's-parent-named-after-the-result": (
        [{"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f", "parentMessageId": "tm1"},
         {"type": "TOOL_CALL_END", "toolCallId": "c1"},
         {"type": "TOOL_CALL_RESULT", "toolCallId": "c1", "messageId": "tm1", "content": "ok"}],
        [("tm1", "assistant", None), ("tm1.c1", "tool", "ok")]),
    # ... and when the ToolMessage has no id, the call id stands for both (golden tool-call-parent-is-call-id):
    # as for a parentless call, the assistant message is the one renamed.
    "the-call's-own-id-as-its-parent": (
        [{"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f", "parentMessageId": "c1"},
         {"type": "TOOL_CALL_END", "toolCallId": "c1"},
         {"type": "TOOL_CALL_RESULT", "toolCallId": "c1", "messageId": "c1", "content": "ok"}],
        [("c1.assistant", "assistant", None), ("c1", "tool", "ok")]),
}


@pytest.mark.parametrize("case", RESULT_ID_CASES)
@pytest.mark.parametrize("form", ["events", "jsonl"])
def test_a_tool_result_never_replaces_another_message_that_has_its_id(case: str, form: str) -> None:
    # TC-09: a result mints a new message. Replacing whatever held the id deleted it (the call's own
    # assistant message and the call with it, a user message, an earlier result), without a word.
    body, expected = RESULT_ID_CASES[case]
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, *body,
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]
    source: Any = events if form == "events" else "\n".join(json.dumps(e, separators=(",", ":")) for e in events)

    result = replay(source)

    assert [(m["id"], m["role"], m.get("content")) for m in encode(result.messages)] == expected
    assert [(w.code, w.pointer, w.index) for w in result.warnings] == [("TC-09", "/messageId", len(events) - 2)]
    assert result.pending_tool_call_ids == ()
    assert sorted(result.new_message_ids) == sorted(m[0] for m in expected)


FOREIGN_PARENT_CASES = {
    # The call names a user message as its parent and has that message's id (golden
    # tool-call-foreign-parent-id-collides; the reference ends with two messages "u").
    "the-parent's-own-id": ([{"type": "TEXT_MESSAGE_START", "messageId": "u", "role": "user"},
                             {"type": "TEXT_MESSAGE_CONTENT", "messageId": "u", "delta": "hi"},
                             {"type": "TEXT_MESSAGE_END", "messageId": "u"},
                             {"type": "TOOL_CALL_START", "toolCallId": "u", "toolCallName": "f",
                              "parentMessageId": "u"},
                             {"type": "TOOL_CALL_END", "toolCallId": "u"}],
                            [("u", "user", "hi"), ("u.assistant", "assistant", None)]),
    # An activity written over a text message is the parent; the call has its id, and a later ACTIVITY_DELTA
    # for that id still reaches the activity (found by the reference differential, fifteenth round).
    "an-activity's-id": ([{"type": "ACTIVITY_SNAPSHOT", "messageId": "m", "activityType": "plan",
                           "content": {"steps": []}},
                          {"type": "TOOL_CALL_START", "toolCallId": "m", "toolCallName": "f", "parentMessageId": "m"},
                          {"type": "TOOL_CALL_END", "toolCallId": "m"},
                          {"type": "ACTIVITY_DELTA", "messageId": "m", "activityType": "plan",
                           "patch": [{"op": "add", "path": "/steps/-", "value": "b"}]}],
                         [("m", "activity", {"steps": ["b"]}), ("m.assistant", "assistant", None)]),
}


@pytest.mark.parametrize("case", FOREIGN_PARENT_CASES)
def test_a_call_whose_parent_has_another_role_never_shares_an_id_with_a_message(case: str) -> None:
    # TC-08: a call whose parent is a message of another role gets an assistant message keyed by the call's id.
    # When a message held that id already, the thread had two messages under one id (and the older one could
    # no longer be reached by it); it is keyed 'ID.assistant' instead, as a parentless call's (UK-16).
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, *FOREIGN_PARENT_CASES[case][0],
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]

    result = replay(events)

    assert [(m["id"], m["role"], m.get("content")) for m in encode(result.messages)] == FOREIGN_PARENT_CASES[case][1]
    assert sorted(result.new_message_ids) == sorted(m[0] for m in FOREIGN_PARENT_CASES[case][1])
    assert [w.code for w in result.warnings] == ["TC-08"]
    given = FOREIGN_PARENT_CASES[case][1][1][0]  # (the call's message: the id it got, 'ID.assistant')
    assert result.warnings[0].message.endswith(f"its own assistant message, {given!r}"), result.warnings[0].message


def test_the_foreign_parent_warning_names_the_message_the_call_got() -> None:
    # TC-08 said the call "gets its own assistant message" without saying which: usually the call's own
    # id, but 'ID.assistant' (or 'ID.assistant.2' …) when a message held that id already.
    def warning(*before: dict[str, Any]) -> str:
        result = replay([{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, *before,
                         {"type": "TEXT_MESSAGE_START", "messageId": "u", "role": "user"},
                         {"type": "TEXT_MESSAGE_END", "messageId": "u"},
                         {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f", "parentMessageId": "u"},
                         {"type": "TOOL_CALL_END", "toolCallId": "c"},
                         {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}])
        [found] = [w for w in result.warnings if w.code == "TC-08"]
        assert found.message.startswith("parentMessageId 'u' names a user message;"), found.message
        return found.message

    taken = [{"type": kind, "messageId": m, **({"role": "user"} if kind.endswith("START") else {})}
             for m in ("c", "c.assistant") for kind in ("TEXT_MESSAGE_START", "TEXT_MESSAGE_END")]
    assert warning().endswith("its own assistant message, 'c'")
    assert warning(*taken).endswith("its own assistant message, 'c.assistant.2'")


def test_the_rename_warning_says_why_the_assistant_message_had_the_call_id() -> None:
    # The warning used to say only that the call's TOOL_CALL_START "named no parent", also when it named
    # the call's own id as its parent (ag-ui-langgraph, a ToolMessage without id).
    def warning(start: dict[str, Any]) -> str:
        result = replay([{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, start,
                         {"type": "TOOL_CALL_END", "toolCallId": "c1"},
                         {"type": "TOOL_CALL_RESULT", "toolCallId": "c1", "messageId": "c1", "content": "ok"},
                         {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}])
        [found] = [w for w in result.warnings if w.code == "TC-09"]
        return found.message

    parented = warning({"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f", "parentMessageId": "c1"})
    parentless = warning({"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f"})

    assert parented == parentless  # one rule, one message, for both ways the message came by the call's id
    assert "the call's own id as parent" in parented and "'c1.assistant'" in parented


@pytest.mark.parametrize("form", ["events", "jsonl"])
def test_a_parentless_call_never_takes_the_id_of_a_message_already_held(form: str) -> None:
    # The assistant message a parentless TOOL_CALL_START needs is named after the call by this client;
    # when a message already holds that id, the new one gets another (two messages shared one id, and
    # the user's vanished from the index and from new_messages).
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
              {"type": "TEXT_MESSAGE_START", "messageId": "c1", "role": "user"},
              {"type": "TEXT_MESSAGE_CONTENT", "messageId": "c1", "delta": "hi"},
              {"type": "TEXT_MESSAGE_END", "messageId": "c1"},
              {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f"},
              {"type": "TOOL_CALL_END", "toolCallId": "c1"},
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]
    source: Any = events if form == "events" else "\n".join(json.dumps(e) for e in events).encode()

    result = replay(source)

    assert [(m.id, type(m).__name__) for m in result.messages] == [("c1", "UserMessage"),
                                                                   ("c1.assistant", "AssistantMessage")]
    assert [m.id for m in result.new_messages] == ["c1", "c1.assistant"]
    assert result.state.message("c1").content == "hi"  # type: ignore[union-attr]


def test_a_result_sent_again_under_its_id_replaces_it_where_it_stands() -> None:
    result = replay([START, ToolCallStartEvent(tool_call_id="c", tool_call_name="f", parent_message_id="a"),
                     ToolCallEndEvent(tool_call_id="c"),
                     {"type": "TOOL_CALL_RESULT", "toolCallId": "c", "messageId": "t", "content": "first"},
                     {"type": "TOOL_CALL_RESULT", "toolCallId": "c", "messageId": "t", "content": "again"}, FINISH])
    assert [(m["id"], m.get("content")) for m in encode(result.messages)] == [("a", None), ("t", "again")]
    assert result.warnings == ()


def _holding(message_id: str, name: str) -> dict[str, Any]:
    return {"id": message_id, "role": "assistant",
            "toolCalls": [{"id": "c1", "type": "function", "function": {"name": name, "arguments": "{}"}}]}


@pytest.mark.parametrize("form", ["events", "jsonl"])
def test_a_call_id_whose_first_holder_is_replaced_names_the_next_holder(form: str) -> None:
    # UK-16: two messages hold call c1, and the index names the first ("a"). An activity snapshot
    # replacing "a" used to drop c1 from the index although "b" still holds it, so c1's result went to
    # the end of the list; the reference client (a first-match lookup) puts it after "b".
    # (golden: tool-call-id-twice-first-holder-replaced)
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
              {"type": "MESSAGES_SNAPSHOT", "messages": [
                  _holding("a", "f"), {"id": "u0", "role": "user", "content": "x"},
                  _holding("b", "g"), {"id": "u", "role": "user", "content": "hi"}]},
              {"type": "ACTIVITY_SNAPSHOT", "messageId": "a", "activityType": "plan", "content": {"k": 1}},
              {"type": "TOOL_CALL_RESULT", "messageId": "t1", "toolCallId": "c1", "content": "ok"},
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]
    source: Any = events if form == "events" else "\n".join(json.dumps(e) for e in events).encode()

    result = replay(source)

    assert [m["id"] for m in encode(result.messages)] == ["a", "u0", "b", "t1", "u"]


@pytest.mark.parametrize("form", ["events", "jsonl"])
def test_replacing_the_holders_of_calls_no_other_message_held_never_walks_the_list(
        form: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # An agent can replace message after message (an activity snapshot taking each one's id). Looking
    # for another holder of each lost call id walked the whole list every time: 8,000 such pairs took
    # 8 s instead of 1 s. Only an id two messages held is looked for.
    from agui_client.core.fold.log import MessageLog

    walks: list[str] = []
    looked_up = MessageLog._first_holder
    monkeypatch.setattr(MessageLog, "_first_holder",
                        lambda self, call_id, start: walks.append(call_id) or looked_up(self, call_id, start))
    events: list[dict[str, Any]] = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
                                    {"type": "MESSAGES_SNAPSHOT",
                                     "messages": [_holding("h1", "f"), _holding("h2", "g")]}]
    for i in range(50):
        events += [{"type": "TOOL_CALL_START", "toolCallId": f"s{i}", "toolCallName": "f", "parentMessageId": f"m{i}"},
                   {"type": "TOOL_CALL_END", "toolCallId": f"s{i}"}]
    events += [{"type": "ACTIVITY_SNAPSHOT", "messageId": message_id, "activityType": "plan", "content": {}}
               for message_id in ["h1", *(f"m{i}" for i in range(50))]]
    events += [{"type": "TOOL_CALL_RESULT", "messageId": "t1", "toolCallId": "c1", "content": "ok"},
               {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]
    source: Any = events if form == "events" else "\n".join(json.dumps(e) for e in events).encode()

    result = replay(source)

    assert walks == ["c1"]  # (the one id two messages held: h1's, which h2 holds too)
    assert [(m["id"], m["role"]) for m in encode(result.messages)][:4] == [
        ("h1", "activity"), ("h2", "assistant"), ("t1", "tool"), ("m0", "activity")]


def test_a_message_put_before_a_call_s_holder_becomes_its_first_holder_and_leaving_hands_it_back() -> None:
    # The application replaces messages by id (add_message). The index follows the list's order:
    # c1 names the first message that holds it, whichever was written last.
    state = replay([{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
                    {"type": "MESSAGES_SNAPSHOT", "messages": [
                        {"id": "a", "role": "assistant", "content": "no calls"},
                        {"id": "u0", "role": "user", "content": "x"},
                        _holding("b", "g"), {"id": "u", "role": "user", "content": "hi"}]},
                    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]).state
    state.add_message(AssistantMessage(id="a", tool_calls=(
        ToolCall(id="c1", function=FunctionCall(name="f", arguments="{}")),)))
    state.add_tool_result("c1", "first", message_id="t1")
    assert [m.id for m in state.messages] == ["a", "t1", "u0", "b", "u"]

    state.add_message(AssistantMessage(id="a", content="calls taken back"))
    state.add_tool_result("c1", "second", message_id="t2")
    assert [m.id for m in state.messages] == ["a", "t1", "u0", "b", "t2", "u"]
