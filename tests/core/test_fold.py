"""The fold: properties over random streams, snapshots that never change under the caller, and the
details the golden vectors do not pin (surrogate rejoining, incomplete entities, usage per run)."""

from __future__ import annotations

import copy
import datetime
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from patch_oracle import reference_apply
from wirekit import sse

from agui_client import (
    AssistantMessage,
    DecodeError,
    RunFinishedEvent,
    RunSession,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ThreadState,
    TokenUsage,
    decode_event,
    encode,
    replay,
)
from agui_client.types import ToolCallArgsEvent, ToolCallEndEvent, ToolCallStartEvent
from agui_client.types import messages as msg
from agui_client.types.messages import FunctionCall, ToolCall
from agui_client.wire.codec import decode

START = RunStartedEvent(thread_id="t", run_id="r")
FINISH = RunFinishedEvent(thread_id="t", run_id="r")

text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)


@st.composite
def conversations(draw: st.DrawFn) -> list[tuple[str, str, list[str]]]:
    """Messages and tool calls, each a list of deltas: ("text" | "tool", id, deltas)."""
    items = []
    for n in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["text", "tool"]))
        items.append((kind, f"{kind}{n}", draw(st.lists(text, min_size=1, max_size=5))))
    return items


def _explicit(items: list[tuple[str, str, list[str]]]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]
    for kind, entity, deltas in items:
        if kind == "text":
            events.append({"type": "TEXT_MESSAGE_START", "messageId": entity, "role": "assistant"})
            events += [{"type": "TEXT_MESSAGE_CONTENT", "messageId": entity, "delta": d} for d in deltas if d]
            events.append({"type": "TEXT_MESSAGE_END", "messageId": entity})
        else:
            events.append({"type": "TOOL_CALL_START", "toolCallId": entity, "toolCallName": "f",
                           "parentMessageId": "holder"})
            events += [{"type": "TOOL_CALL_ARGS", "toolCallId": entity, "delta": d} for d in deltas]
            events.append({"type": "TOOL_CALL_END", "toolCallId": entity})
    events.append({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})
    return events


def _chunked(items: list[tuple[str, str, list[str]]]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]
    for kind, entity, deltas in items:
        for i, delta in enumerate(deltas):
            if kind == "text":
                chunk: dict[str, Any] = {"type": "TEXT_MESSAGE_CHUNK", "delta": delta}
                if i == 0:
                    chunk.update(messageId=entity, role="assistant")
            else:
                chunk = {"type": "TOOL_CALL_CHUNK", "delta": delta}
                if i == 0:
                    chunk.update(toolCallId=entity, toolCallName="f", parentMessageId="holder")
            events.append(chunk)
    events.append({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})
    return events


@settings(max_examples=150, deadline=None)
@given(conversations())
def test_a_stream_folds_the_same_whether_chunked_or_not(items: list[tuple[str, str, list[str]]]) -> None:
    explicit = replay(_explicit(items))
    chunked = replay(_chunked(items))
    assert encode(chunked.state.messages) == encode(explicit.state.messages)
    assert chunked.pending_tool_call_ids == explicit.pending_tool_call_ids


leaf = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["x", "y"]))
keys = st.sampled_from(["a", "b", "c"])
documents = st.recursive(leaf, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(keys, inner,
                                                                                                      max_size=3)),
                         max_leaves=8)


@st.composite
def valid_patches(draw: st.DrawFn, document: Any) -> list[dict[str, Any]]:
    """A patch that applies to ``document``: ops aimed at paths that exist (or may be added)."""
    doc = copy.deepcopy(document)
    ops = []
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(doc)
        path, parent_is_list = draw(st.sampled_from(paths))
        choice = draw(st.sampled_from(["add", "replace", "remove"] if path else ["replace"]))
        if choice == "remove" and path:
            op = {"op": "remove", "path": path}
        elif choice == "add" and parent_is_list is not None:
            op = {"op": "add", "path": path, "value": draw(leaf)}
        else:
            op = {"op": "replace", "path": path, "value": draw(documents)}
        doc = reference_apply(doc, [op])
        ops.append(op)
    return ops


def _paths(doc: Any, prefix: str = "", parent: bool | None = None) -> list[tuple[str, bool | None]]:
    out: list[tuple[str, bool | None]] = [(prefix, parent)]
    if isinstance(doc, dict):
        for key, value in doc.items():
            out += _paths(value, f"{prefix}/{key}", False)
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            out += _paths(value, f"{prefix}/{i}", True)
    return out


# (derandomized, which also turns the example database off: the same 150 examples in every run. It failed
# once with HypothesisDeprecationWarning, "Do not use the `random` module inside strategies": the global
# generator moved while a draw ran, as the client's retry jitter, drawn from it in another thread, could
# make it do; the jitter now has a generator of its own, tests/thread/test_retries.py)
@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.data())
def test_state_after_n_deltas_equals_the_patches_applied_to_a_plain_dict(data: st.DataObject) -> None:
    snapshot = data.draw(st.dictionaries(keys, documents, max_size=3))
    expected = copy.deepcopy(snapshot)
    events: list[Any] = [START, StateSnapshotEvent(snapshot=snapshot)]
    for _ in range(data.draw(st.integers(1, 6))):
        patch = data.draw(valid_patches(expected))
        expected = reference_apply(expected, patch)
        events.append(StateDeltaEvent(delta=tuple(patch)))
    result = replay([*events, FINISH])
    assert json.dumps(result.state.state, sort_keys=True) == json.dumps(expected, sort_keys=True)


def test_handed_out_snapshots_never_change_under_the_caller() -> None:
    thread = ThreadState()
    thread.apply(START)
    thread.apply(TextMessageStartEvent(message_id="m"))
    thread.apply(TextMessageContentEvent(message_id="m", delta="one"))
    before = thread.messages
    state_before = thread.state
    thread.apply(TextMessageContentEvent(message_id="m", delta=" two"))
    thread.apply(StateSnapshotEvent(snapshot={"a": [1]}))
    thread.apply(StateDeltaEvent(delta=({"op": "add", "path": "/a/-", "value": 2},)))
    assert before[0].content == "one" and thread.messages[0].content == "one two"
    assert state_before == {}
    kept = thread.state
    kept["a"].append(99)                                   # the caller's copy, not the thread's
    assert thread.dump()["state"] == {"a": [1, 2]} and thread.to_wire()["state"] == {"a": [1, 2]}
    assert thread.state == {"a": [1, 2]}                   # (another read: its own copy, not the changed one)
    thread.apply(StateDeltaEvent(delta=({"op": "add", "path": "/b", "value": 3},)))
    assert thread.state == {"a": [1, 2], "b": 3} and kept == {"a": [1, 2, 99]}


def test_the_snapshot_event_is_not_mutated_by_later_deltas() -> None:
    snapshot = StateSnapshotEvent(snapshot={"items": []})
    replay([START, snapshot, StateDeltaEvent(delta=({"op": "add", "path": "/items/-", "value": 1},)), FINISH])
    assert snapshot.snapshot == {"items": []}


def test_surrogate_halves_split_across_deltas_are_rejoined() -> None:
    """B093: a UTF-16 producer splits an emoji into two deltas, one half each."""
    result = replay([START, TextMessageStartEvent(message_id="m"),
                     TextMessageContentEvent(message_id="m", delta="hi \ud83d"),
                     TextMessageContentEvent(message_id="m", delta="\ude00!"),
                     TextMessageEndEvent(message_id="m"), FINISH])
    message = result.state.message("m")
    assert isinstance(message, AssistantMessage) and message.content == "hi \U0001f600!"
    assert message.content.encode("utf-8")                  # the thread can be sent again
    assert not [w for w in result.warnings if w.code == "UTF16-SURROGATE"]


def test_an_unpaired_half_becomes_a_replacement_character_with_a_warning() -> None:
    result = replay([START, TextMessageStartEvent(message_id="m"),
                     TextMessageContentEvent(message_id="m", delta="x\ud800y"), TextMessageEndEvent(message_id="m"),
                     FINISH])
    assert result.state.message("m").content == "x\ufffdy"  # type: ignore[union-attr]
    assert [w.code for w in result.warnings if w.code == "UTF16-SURROGATE"] == ["UTF16-SURROGATE"]


def test_tool_arguments_stay_raw_and_parse_when_they_are_json() -> None:
    from agui_client import parsed_arguments

    result = replay([START, ToolCallStartEvent(tool_call_id="c", tool_call_name="f"),
                     ToolCallArgsEvent(tool_call_id="c", delta='{"a":'),
                     ToolCallArgsEvent(tool_call_id="c", delta="1}"),
                     ToolCallEndEvent(tool_call_id="c"), FINISH])
    call = result.state.tool_call("c")
    assert call is not None and call.function.arguments == '{"a":1}'
    assert parsed_arguments(call) == {"a": 1}
    assert result.pending_tool_call_ids == ("c",)


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


def test_an_encrypted_value_for_an_activity_is_for_nothing_the_thread_holds() -> None:
    # RS-08: an encrypted value belongs to a message or a tool call; an activity carries none, so nothing
    # is stored and the producer is told.
    result = replay([{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
                     {"type": "ACTIVITY_SNAPSHOT", "messageId": "a1", "activityType": "plan", "content": {"step": 1}},
                     {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "message", "entityId": "a1",
                      "encryptedValue": "xyz"},
                     {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}])

    assert [w.code for w in result.warnings] == ["RS-08"]
    assert encode(result.state.messages) == [{"id": "a1", "role": "activity", "activityType": "plan",
                                              "content": {"step": 1}}]


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


def _frames_deep(frames: int, work: Any) -> Any:
    return work() if frames == 0 else _frames_deep(frames - 1, work)


@pytest.mark.parametrize("form", ["events", "jsonl"])
def test_state_nested_as_deep_as_the_decoder_admits_folds_copies_and_saves(form: str) -> None:
    # B095's trap: 505 levels pass the decoder (512), but orjson copies only 255 and copy.deepcopy
    # recursed twice a level: the thread could fold such a state and then never hand it out, save it or
    # send it again (a RecursionError on every later run). Called 200 frames deep, as from an app.
    deep = "[" * 505 + "1" + "]" * 505
    lines = ['{"type":"RUN_STARTED","threadId":"t","runId":"r"}',
             '{"type":"STATE_SNAPSHOT","snapshot":{"d":' + deep + "}}",
             '{"type":"STATE_DELTA","delta":[{"op":"add","path":"/e","value":' + deep + "}]}",
             '{"type":"RUN_FINISHED","threadId":"t","runId":"r"}']
    source: Any = [json.loads(line) for line in lines] if form == "events" else "\n".join(lines).encode()

    def work() -> tuple[Any, Any, Any]:
        result = replay(source)
        view = result.state.state
        again = ThreadState.load(json.loads(json.dumps(result.state.dump())))
        return result, view, again.state

    result, view, loaded = _frames_deep(200, work)

    assert result.warnings == ()
    assert view == loaded == {"d": json.loads(deep), "e": json.loads(deep)}
    assert view["d"] is not loaded["d"]


@pytest.mark.parametrize(("patch", "content"), [
    pytest.param([{"op": "replace", "path": "", "value": [1, 2]}], None, id="replace-with-an-array"),
    pytest.param([{"op": "add", "path": "/x", "value": 1}, {"op": "add", "path": "", "value": "s"}], None,
                 id="add-a-string-after-a-change"),
    pytest.param([{"op": "copy", "from": "/steps", "path": ""}], None, id="copy-a-child-over-it"),
    pytest.param([{"op": "replace", "path": "", "value": {"done": True}}], {"done": True}, id="an-object-is-fine"),
])
def test_an_activity_patch_that_leaves_content_not_an_object_changes_nothing(
    patch: list[dict[str, Any]], content: dict[str, Any] | None
) -> None:
    # AC-01/AC-05: an activity's content is an object. Applied, such a patch folded silently and made
    # the thread impossible to load again (a stored thread could no longer be opened).
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
              {"type": "ACTIVITY_SNAPSHOT", "messageId": "a1", "activityType": "plan", "content": {"steps": [1]}},
              {"type": "ACTIVITY_DELTA", "messageId": "a1", "activityType": "plan", "patch": patch},
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]

    result = replay(events)

    (activity,) = result.messages
    assert activity.content == (content if content is not None else {"steps": [1]})  # type: ignore[union-attr]
    codes = [(w.code, w.pointer) for w in result.warnings]
    assert codes == ([] if content is not None else [("AC-05", f"/patch/{len(patch) - 1}")])
    again = ThreadState.load(json.loads(json.dumps(result.state.dump())))
    assert again.messages == result.messages


@pytest.mark.parametrize("form", ["events", "jsonl"])
def test_a_run_s_copies_are_bounded_in_all_and_the_next_run_may_copy_again(form: str) -> None:
    # B194 across deltas: a few bytes of "copy" each repeat a 4 MB string in the state (which every
    # save and the next request write out again). A run's patches may copy 16 MiB in all; past that
    # a delta is refused (SP-06, state unchanged, out of sync), and a new run starts afresh.
    def run(run_id: str, copies: range, snapshot: bool) -> list[dict[str, Any]]:
        return [{"type": "RUN_STARTED", "threadId": "t", "runId": run_id},
                *([{"type": "STATE_SNAPSHOT", "snapshot": {"s": "x" * 4_000_000}}] if snapshot else []),
                *({"type": "STATE_DELTA", "delta": [{"op": "copy", "from": "/s", "path": f"/c{i}"}]} for i in copies),
                {"type": "RUN_FINISHED", "threadId": "t", "runId": run_id}]

    def source(events: list[dict[str, Any]]) -> Any:
        return events if form == "events" else "\n".join(json.dumps(e) for e in events).encode()

    thread = ThreadState()
    first = replay(source(run("r1", range(5), snapshot=True)), state=thread)
    assert sorted(thread.state) == ["c0", "c1", "c2", "c3", "s"]
    assert [(w.code, w.index) for w in first.warnings] == [("SP-06/AGUI302", 6)]
    assert thread.state_in_sync is False

    second = replay(source(run("r2", range(5, 6), snapshot=False)), state=thread)
    assert second.warnings == () and "c5" in thread.state


@pytest.mark.parametrize("form", ["events", "jsonl"])
def test_a_patch_with_an_op_json_patch_does_not_define_is_skipped_whole(form: str) -> None:
    # SP-07 / AGUI303, bad-inputs' verdict for a 1.0 consumer: a patch applies whole or not at all;
    # dropping the unknown op and applying the rest (the reference) makes a state nobody asked for.
    patch = [{"op": "add", "path": "/b", "value": 2}, {"op": "merge", "path": "/c", "value": 3}]
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
              {"type": "STATE_SNAPSHOT", "snapshot": {"a": 1}},
              {"type": "STATE_DELTA", "delta": patch},
              {"type": "ACTIVITY_SNAPSHOT", "messageId": "p", "activityType": "plan", "content": {"a": 1}},
              {"type": "ACTIVITY_DELTA", "messageId": "p", "activityType": "plan", "patch": patch},
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]
    source: Any = events if form == "events" else "\n".join(json.dumps(e) for e in events).encode()

    result = replay(source)

    assert result.state.state == {"a": 1} and result.state.state_in_sync is False
    assert result.messages[0].content == {"a": 1}  # type: ignore[union-attr]
    assert [(w.code, w.index, w.pointer) for w in result.warnings] == [
        ("SP-07/AGUI303", 2, "/delta/1"), ("SP-07/AGUI303", 4, "/patch/1")]


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


def test_arguments_that_are_not_json_are_kept_with_a_warning() -> None:
    result = replay([START, ToolCallStartEvent(tool_call_id="c", tool_call_name="f"),
                     ToolCallArgsEvent(tool_call_id="c", delta="{not json"), ToolCallEndEvent(tool_call_id="c"),
                     FINISH])
    assert result.state.tool_call("c").function.arguments == "{not json"  # type: ignore[union-attr]
    assert any(w.code == "TC-06/AGUI204" for w in result.warnings)


@pytest.mark.parametrize("deltas", [["[" * 100_000], ["[" * 50_000, "[" * 50_000]])
def test_arguments_nested_deeper_than_a_parser_goes_are_kept_with_a_warning_not_a_crash(deltas: list[str]) -> None:
    # Tool arguments are free text (TC-06): 100,000 "[" is legal on the wire, and the parsers'
    # recursion must not escape replay() as a RecursionError (B094's class).
    result = replay([START, ToolCallStartEvent(tool_call_id="c", tool_call_name="f"),
                     *(ToolCallArgsEvent(tool_call_id="c", delta=d) for d in deltas),
                     ToolCallEndEvent(tool_call_id="c"),
                     FINISH])
    assert result.state.tool_call("c").function.arguments == "[" * 100_000  # type: ignore[union-attr]
    assert [w.code for w in result.warnings] == ["TC-06/AGUI204"]


def test_usage_is_kept_per_run_and_summed_for_the_thread() -> None:
    thread = ThreadState()
    replay([START, RunFinishedEvent(thread_id="t", run_id="r", usage=(TokenUsage(input_tokens=3, output_tokens=2),))],
           state=thread)
    second = replay([RunStartedEvent(thread_id="t", run_id="r2"),
                     RunFinishedEvent(thread_id="t", run_id="r2", usage=(TokenUsage(input_tokens=5),))], state=thread)
    assert second.total_usage.input_tokens == 5                  # the run's own, not carried over (IR-22)
    assert thread.usage_by_run["r"][0].output_tokens == 2
    total = thread.total_usage
    assert (total.input_tokens, total.output_tokens, total.reasoning_tokens) == (8, 2, None)


def test_a_thread_survives_dump_and_load() -> None:
    thread = ThreadState()
    replay(_explicit([("text", "m", ["hello"]), ("tool", "c", ['{"x":1}'])]), state=thread)
    again = ThreadState.load(json.loads(json.dumps(thread.dump())))
    assert encode(again.messages) == encode(thread.messages)
    assert again.state == thread.state
    assert again.pending_tool_call_ids == thread.pending_tool_call_ids


@pytest.mark.parametrize(("part", "damage", "pointer"), [
    pytest.param("openInterrupts", lambda d: d["openInterrupts"][0].update(expiresAt=5),
                 "/openInterrupts/0/expiresAt", id="interrupt"),
    pytest.param("messages", lambda d: d["messages"][1].update(content=7), "/messages/1/content", id="message"),
    pytest.param("usageByRun", lambda d: d["usageByRun"].update({"r/1": [{"inputTokens": "x"}]}),
                 "/usageByRun/r~11/0/inputTokens", id="usage"),
])
def test_a_damaged_record_is_refused_naming_the_field_in_the_record(part: str, damage: Any, pointer: str) -> None:
    # A record edited by hand or by another tool: the error names where in the record, not where in
    # the one part of it that was being read (/0/expiresAt said neither which part nor which thread field).
    thread = ThreadState()
    replay(_explicit([("text", "m", ["hello"]), ("text", "n", ["again"])])[:-1]
           + [{"type": "RUN_FINISHED", "threadId": "t", "runId": "r",
               "outcome": {"type": "interrupt", "interrupts": [{"id": "i1", "reason": "approval"}]}}], state=thread)
    record = json.loads(json.dumps(thread.dump()))
    damage(record)
    with pytest.raises(DecodeError) as caught:
        ThreadState.load(record, adopt=part != "messages")
    assert caught.value.pointer == pointer
    assert f"at {pointer}" in str(caught.value)


def test_an_activity_handed_out_does_not_change_when_a_delta_arrives() -> None:
    from agui_client import ActivityDeltaEvent, ActivitySnapshotEvent

    thread = ThreadState()
    thread.apply(START)
    thread.apply(ActivitySnapshotEvent(message_id="a", activity_type="progress", content={"percent": 10}))
    before = thread.messages[0]
    thread.apply(ActivityDeltaEvent(message_id="a", activity_type="progress",
                                    patch=({"op": "replace", "path": "/percent", "value": 50},)))
    assert before.content == {"percent": 10}  # type: ignore[union-attr]
    assert thread.messages[0].content == {"percent": 50}  # type: ignore[union-attr]


def test_surrogate_halves_split_across_tool_arguments_are_rejoined() -> None:
    result = replay([START, ToolCallStartEvent(tool_call_id="c", tool_call_name="f"),
                     ToolCallArgsEvent(tool_call_id="c", delta='{"e":"\ud83d'),
                     ToolCallArgsEvent(tool_call_id="c", delta='\ude00"}'), ToolCallEndEvent(tool_call_id="c"),
                     FINISH])
    call = result.state.tool_call("c")
    assert call is not None and call.function.arguments == '{"e":"\U0001f600"}'


# --------------------------------------------------------------------------------------------------
# Entries made from whole messages (a snapshot's) are lazy: they read their content and attributes
# from the message only when something asks. Whatever follows, the thread must be exactly what
# eager entries (everything read at once) give.
# --------------------------------------------------------------------------------------------------

_SNAPSHOT_MESSAGES: list[dict[str, Any]] = [
    {"id": "a1", "role": "assistant", "content": "hello", "name": "bot", "metadata": {"k": 1}},
    {"id": "a2", "role": "assistant", "toolCalls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"x\":"}, "metadata": {"m": 1}},
        {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
    {"id": "u1", "role": "user", "content": "hi", "subagentRunId": "s"},
    {"id": "u2", "role": "user", "content": [{"type": "text", "text": "part"}]},
    {"id": "t1", "role": "tool", "toolCallId": "c2", "content": "done", "error": "e"},
    {"id": "r1", "role": "reasoning", "content": "think", "encryptedValue": "enc"},
    {"id": "v1", "role": "activity", "activityType": "plan", "content": {"steps": [1]}},
    {"id": "d1", "role": "developer", "content": "dev"},
]

_FOLLOW_UPS: list[list[dict[str, Any]]] = [
    [{"type": "TEXT_MESSAGE_START", "messageId": "a1", "role": "assistant"},
     {"type": "TEXT_MESSAGE_CONTENT", "messageId": "a1", "delta": " more"},
     {"type": "TEXT_MESSAGE_END", "messageId": "a1", "metadata": {"z": 2}}],
    [{"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "1}"}],
    [{"type": "TOOL_CALL_START", "toolCallId": "c3", "toolCallName": "h", "parentMessageId": "a1"},
     {"type": "TOOL_CALL_ARGS", "toolCallId": "c3", "delta": "{}"},
     {"type": "TOOL_CALL_END", "toolCallId": "c3"}],
    [{"type": "TOOL_CALL_RESULT", "messageId": "t2", "toolCallId": "c1", "content": "ok"}],
    [{"type": "REASONING_ENCRYPTED_VALUE", "subtype": "message", "entityId": "u1", "encryptedValue": "x"}],
    [{"type": "REASONING_ENCRYPTED_VALUE", "subtype": "tool-call", "entityId": "c2", "encryptedValue": "y"}],
    [{"type": "ACTIVITY_DELTA", "messageId": "v1", "activityType": "plan",
      "patch": [{"op": "add", "path": "/steps/-", "value": 2}]}],
    [{"type": "ACTIVITY_SNAPSHOT", "messageId": "v1", "activityType": "plan", "content": {"a": 1},
      "replace": False, "metadata": {"q": 1}}],
    [{"type": "REASONING_MESSAGE_START", "messageId": "r1", "role": "reasoning"},
     {"type": "REASONING_MESSAGE_CONTENT", "messageId": "r1", "delta": "!"},
     {"type": "REASONING_MESSAGE_END", "messageId": "r1"}],
    [{"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "u1", "role": "user", "content": "again"}]}],
    [{"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "n1", "role": "user", "content": "new"}],
      "metadata": {"@ag-ui/client": {"authoritativeActivityTypes": ["other"]}}}],
]


def _add_entries_one_by_one(messages: Any, entries: list[Any], by_id: dict[str, Any],
                            calls: dict[str, Any], shared: set[str]) -> None:
    """``log.hold`` as ``Entry.of`` and ``MessageLog.index`` would do it, message by message."""
    from agui_client.core.fold import entries as fold_module

    for message in messages:
        entry = fold_module.Entry.of(message)
        entries.append(entry)
        by_id[entry.id] = entry
        for call in entry.calls or ():
            calls[call.id] = (entry, call)


def test_snapshot_entries_made_in_bulk_are_those_made_one_by_one() -> None:
    from agui_client.core.fold import log as fold_module

    messages = [decode(m, msg.Message) for m in _SNAPSHOT_MESSAGES]
    made: list[tuple[list[Any], dict[str, Any], dict[str, Any]]] = []
    for add in (fold_module.hold, _add_entries_one_by_one):
        entries: list[Any] = []
        by_id: dict[str, Any] = {}
        calls: dict[str, Any] = {}
        add(messages, entries, by_id, calls, set())
        made.append((entries, by_id, calls))

    def slots(entry: Any) -> dict[str, Any]:
        out = {name: getattr(entry, name) for name in ("id", "role", "frozen", "source", "complete")}
        out["calls"] = None if entry.calls is None else [
            {name: getattr(c, name) for name in c.__slots__} for c in entry.calls]
        out["text"], out["value"], out["attrs"] = entry.text, entry.value, entry.attrs  # thawed alike
        return out
    (bulk, bulk_ids, bulk_calls), (single, single_ids, single_calls) = made
    assert [slots(e) for e in bulk] == [slots(e) for e in single]
    assert list(bulk_ids) == list(single_ids) and all(bulk_ids[k] is bulk[i] for i, k in enumerate(bulk_ids))
    assert list(bulk_calls) == list(single_calls) == ["c1", "c2"]
    assert all(bulk_calls[k][0] is bulk_ids["a2"] and bulk_calls[k][1] in bulk_ids["a2"].calls for k in bulk_calls)


def _fold_lazy_or_eager(events: list[dict[str, Any]], eager: bool, monkeypatch: Any) -> Any:
    from agui_client.core.fold import entries as fold_module
    from agui_client.core.session import RunSession

    if eager:
        lazy_of = fold_module.Entry.of.__func__  # type: ignore[attr-defined]

        def eager_of(cls: Any, message: Any) -> Any:
            entry = lazy_of(cls, message)
            entry._thaw(message)
            return entry
        monkeypatch.setattr(fold_module.Entry, "of", classmethod(eager_of))
        # The snapshot merge makes its new entries in bulk; the eager fold makes them one by one (a message
        # held as its JSON is held as it is either way).
        from agui_client.core.fold import snapshots as snapshots_module
        bulk = snapshots_module.hold

        def one_by_one(messages: Any, entries: list[Any], by_id: dict[str, Any], calls: dict[str, Any],
                       shared: set[str]) -> bool:
            lazy = False
            for message in messages:
                if type(message) is dict:
                    lazy = bulk((message,), entries, by_id, calls, shared) or lazy
                else:
                    _add_entries_one_by_one((message,), entries, by_id, calls, shared)
            return lazy
        monkeypatch.setattr(snapshots_module, "hold", one_by_one)
    session = RunSession(collect_errors=True, events=False)
    for event in events:
        session.feed_payload(json.dumps(event))
    result = session.end()
    monkeypatch.undo()
    state = result.state
    return (state.to_wire(), [(w.code, w.pointer, w.index) for w in result.warnings],
            [(type(e).__name__, e.pointer, e.index) for e in session.errors], state.pending_tool_call_ids,
            [encode(m) for m in result.new_messages], sorted(state.incomplete_ids))


@settings(max_examples=120, deadline=None)
@given(st.lists(st.sampled_from(range(len(_FOLLOW_UPS))), max_size=6), st.permutations(_SNAPSHOT_MESSAGES))
def test_a_snapshot_folds_the_same_with_lazy_and_eager_entries(picks: list[int], messages: list[Any]) -> None:
    import pytest

    events: list[dict[str, Any]] = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
                                    {"type": "MESSAGES_SNAPSHOT", "messages": messages}]
    for pick in picks:
        events += copy.deepcopy(_FOLLOW_UPS[pick])
    events.append({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})
    with pytest.MonkeyPatch.context() as monkeypatch:
        lazy = _fold_lazy_or_eager(events, False, monkeypatch)
        eager = _fold_lazy_or_eager(events, True, monkeypatch)
    assert lazy == eager


def test_a_tool_call_continued_in_a_snapshot_message_keeps_the_message_attributes() -> None:
    """TOOL_CALL_ARGS on a snapshot's call rebuilds the message without ever reading its other slots
    first: the rebuilt message still has them."""
    events: list[dict[str, Any]] = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "MESSAGES_SNAPSHOT", "messages": [_SNAPSHOT_MESSAGES[1] | {"content": "c", "name": "n"}]},
        {"type": "TOOL_CALL_START", "toolCallId": "c9", "toolCallName": "f", "parentMessageId": "a2"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c9", "delta": "{}"},
        {"type": "TOOL_CALL_END", "toolCallId": "c9"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    [message] = replay([json.dumps(e) for e in events]).messages
    assert isinstance(message, AssistantMessage)
    assert (message.content, message.name) == ("c", "n")
    assert [c.id for c in message.tool_calls or ()] == ["c1", "c2", "c9"]


@pytest.mark.parametrize("bad", [float("nan"), {"x": float("inf")}, {"when": datetime.date(2026, 1, 1)}, [{1, 2}]])
def test_state_the_application_sets_must_be_json(bad: Any) -> None:
    """The fast copy would quietly turn NaN into null or a date into a string; the thread refuses instead."""
    thread = ThreadState()
    with pytest.raises(ValueError) as refused:
        thread.set_state(bad)
    assert "state must be JSON" in str(refused.value)
    with pytest.raises(ValueError) as refused:
        ThreadState(state=bad)
    assert "state must be JSON" in str(refused.value)
    assert thread.state == {}


def test_state_the_application_sets_is_kept_exactly() -> None:
    value = {"big": 2**70, "f": 0.1, "n": None, "nested": [{"k": [True]}]}
    thread = ThreadState()
    thread.set_state(value)
    assert thread.state == value
    assert type(thread.state["big"]) is int


def test_a_snapshot_adds_to_the_runs_new_messages_only_ids_neither_held_nor_there_before() -> None:
    """m0 was there before the run (a later snapshot brings it back: not new); a1 was streamed in the run
    (held when the snapshot repeats it: listed once); u2 is new."""
    from agui_client.types import MessagesSnapshotEvent, UserMessage

    thread = ThreadState(messages=[UserMessage(id="m0", content="old")])
    old, streamed, added = (UserMessage(id="m0", content="old"), AssistantMessage(id="a1", content="hi"),
                            UserMessage(id="u2", content="new"))
    for event in [START, TextMessageStartEvent(message_id="a1"), TextMessageContentEvent(message_id="a1", delta="hi"),
                  TextMessageEndEvent(message_id="a1"), MessagesSnapshotEvent(messages=(streamed,)),
                  MessagesSnapshotEvent(messages=(old, streamed, added)), FINISH]:
        thread.apply(event)
    run = thread.last_run
    assert run is not None and run.new_message_ids == ("a1", "u2")
    assert sorted(m.id for m in thread.messages) == ["a1", "m0", "u2"]


@pytest.mark.parametrize("runs", [1, 2])
def test_a_message_the_run_added_and_a_snapshot_dropped_is_not_one_of_its_new_messages(runs: int) -> None:
    """ag-ui-langgraph streams its answer under one id and its closing snapshot holds it under the AIMessage's
    (golden messages-snapshot-drops-streamed-message): the run's new messages are those the thread holds,
    as the reference's ``newMessages`` (``new_message_ids`` used to keep the streamed id). With two runs in
    the response, the snapshot of the second drops what the first streamed."""
    head = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
            {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "21 degrees"},
            {"type": "TEXT_MESSAGE_END", "messageId": "m1"}]
    if runs == 2:
        head += [{"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"},
                 {"type": "RUN_STARTED", "threadId": "t", "runId": "r2"}]
    tail = [{"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "u1", "role": "user", "content": "weather?"},
                                                       {"id": "ai1", "role": "assistant", "content": "21 degrees"}]},
            {"type": "RUN_FINISHED", "threadId": "t", "runId": f"r{runs}"}]
    thread = ThreadState(messages=[msg.UserMessage(id="u1", content="weather?")])

    result = replay([*head, *tail], state=thread)

    assert [m.id for m in thread.messages] == ["u1", "ai1"]
    assert result.new_message_ids == ("ai1",)
    assert [m.id for m in result.new_messages] == ["ai1"]


def _said(message_id: str, text: str) -> list[dict[str, Any]]:
    """A whole assistant message ``message_id`` saying ``text``, as a run streams it."""
    return [{"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": text},
            {"type": "TEXT_MESSAGE_END", "messageId": message_id}]


def test_a_message_one_run_dropped_and_a_later_run_added_again_stands_where_the_later_run_added_it() -> None:
    """Two runs in one response (golden runs-readd-dropped-message): r1 streams x and y and its snapshot
    keeps only y; r2 streams x again. The thread holds [y, x], x being r2's message, and the reference's
    ``newMessages`` are [y, x]; ours were [x, y] (x placed where r1 first added it, the message r1 dropped)."""
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"}, *_said("x", "first"), *_said("y", "kept"),
              {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "y", "role": "assistant", "content": "kept"}]},
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"},
              {"type": "RUN_STARTED", "threadId": "t", "runId": "r2"}, *_said("x", "again"),
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r2"}]
    thread = ThreadState()

    result = replay(events, state=thread)

    assert [m.id for m in thread.messages] == ["y", "x"]
    assert result.new_message_ids == ("y", "x")
    assert [run.new_message_ids for run in thread.runs] == [("y",), ("x",)]


def test_a_message_a_later_run_dropped_and_a_third_added_again_stands_where_the_third_added_it() -> None:
    """Three runs in one response: r1 streams x and w, r2's snapshot keeps only w, r3 streams x again.
    The thread holds [w, x], x being r3's message; the result said ("x", "w"), x where r1 had added it
    (two runs name x: the later one's addition is the one the thread holds)."""
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"}, *_said("x", "first"), *_said("w", "kept"),
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"},
              {"type": "RUN_STARTED", "threadId": "t", "runId": "r2"},
              {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "w", "role": "assistant", "content": "kept"}]},
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r2"},
              {"type": "RUN_STARTED", "threadId": "t", "runId": "r3"}, *_said("x", "again"),
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r3"}]
    thread = ThreadState()

    result = replay(events, state=thread)

    assert [m.id for m in thread.messages] == ["w", "x"]
    assert result.new_message_ids == ("w", "x")
    assert [m.id for m in result.new_messages] == ["w", "x"]


def test_a_runs_record_names_no_message_a_snapshot_of_the_run_dropped() -> None:
    """The record a thread keeps of a run (``thread.state.last_run``, ``runs``) says the run's new messages
    as its result does: m1, streamed and then dropped by the closing snapshot, is no message of the thread
    (the record used to name it). What the run added, as it added it, stays ``added_message_ids``."""
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
              {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
              {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "21 degrees"},
              {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
              {"type": "TEXT_MESSAGE_START", "messageId": "m2", "role": "assistant"},
              {"type": "TEXT_MESSAGE_END", "messageId": "m2"},
              {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "ai1", "role": "assistant", "content": "21 degrees"},
                                                         {"id": "m2", "role": "assistant", "content": ""}]},
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"}]
    thread = ThreadState()

    result = replay(events, state=thread)

    run = thread.last_run
    assert run is not None and run is thread.runs[-1]
    assert run.new_message_ids == result.new_message_ids == ("m2", "ai1")
    assert all(thread.message(i) is not None for i in run.new_message_ids)
    assert run.added_message_ids == ["m1", "m2", "ai1"]


def test_a_runs_record_names_its_message_renamed_after_the_run_ended() -> None:
    """A result folded (``ThreadState.apply``, no verifier) after RUN_FINISHED whose id is its call's (TC-09)
    renames the assistant message the run made for the call (named after the call, no parent given): the
    record still names that message, under its new id, as its list of ids added does (it said none)."""
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
              {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "lookup"},
              {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "{}"},
              {"type": "TOOL_CALL_END", "toolCallId": "c1"},
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"},
              {"type": "TOOL_CALL_RESULT", "toolCallId": "c1", "messageId": "c1", "content": "ok"}]
    thread = ThreadState()

    for event in events:
        thread.apply(decode_event(event))

    run = thread.last_run
    assert run is not None
    assert [m.id for m in thread.messages] == ["c1.assistant", "c1"]
    assert run.new_message_ids == ("c1.assistant",)
    assert run.added_message_ids == ["c1.assistant"]


@pytest.mark.parametrize("middle", [0, 1])
def test_a_message_held_before_the_response_dropped_by_one_run_and_restored_by_another_is_not_new(middle: int) -> None:
    """Several runs in one response (golden runs-snapshot-restores-earlier-message, found by the reference
    differential): r1's snapshot drops the user's u1, r2 (after ``middle`` runs between) restores it. Each
    run counts what it did not find at its start, so u1 was counted new to the response; it was held before
    it, so it is not (the reference's ``newMessages``). A message r1 added, that r2 drops and r3 restores, is
    new to the response and stays so."""
    def run(rid: str, *body: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"type": "RUN_STARTED", "threadId": "t", "runId": rid}, *body,
                {"type": "RUN_FINISHED", "threadId": "t", "runId": rid}]

    user = {"id": "u1", "role": "user", "content": "hello"}
    a1 = {"id": "a1", "role": "assistant", "content": "first"}
    events = run("r1", {"type": "MESSAGES_SNAPSHOT", "messages": [a1]})
    for n in range(middle):
        events += run(f"m{n}", {"type": "TEXT_MESSAGE_START", "messageId": f"x{n}", "role": "assistant"},
                      {"type": "TEXT_MESSAGE_END", "messageId": f"x{n}"})
    events += run("r2", {"type": "MESSAGES_SNAPSHOT", "messages": [user]})
    events += run("r3", {"type": "MESSAGES_SNAPSHOT", "messages": [user, a1]})
    thread = ThreadState(messages=[msg.UserMessage(id="u1", content="hello")])

    result = replay(events, state=thread)

    assert [m.id for m in thread.messages] == ["u1", "a1"]
    assert result.new_message_ids == ("a1",)
    assert [m.id for m in result.new_messages] == ["a1"]


def test_a_save_marks_a_state_it_parsed_itself_as_checked_and_no_other() -> None:
    """The store skips its plain-JSON walk only for state the thread parsed or validated itself."""
    from agui_client import StateDeltaEvent, replay
    from agui_client.errors import StoreError
    from agui_client.stores import MemoryStore
    from agui_client.wire.values import PlainDict

    body = (b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
            b'data: {"type":"STATE_SNAPSHOT","snapshot":{"a":[1,2],"b":{"c":"d"}}}\n\n'
            b'data: {"type":"STATE_DELTA","delta":[{"op":"add","path":"/e","value":{"f":1.5}}]}\n\n'
            b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n')
    thread = replay(body).state
    shared = thread.dump(share_state=True)["state"]
    assert type(shared) is PlainDict and shared == {"a": [1, 2], "b": {"c": "d"}, "e": {"f": 1.5}}
    assert type(thread.dump()["state"]) is dict  # a plain copy when the state is not shared
    store = MemoryStore()
    store.save("t", thread.dump(share_state=True), expected_version=None)
    loaded = store.load("t")
    assert loaded is not None and loaded.data["state"] == shared

    # A patch whose values came with an event object built elsewhere is not vouched for: the store walks
    # the state and refuses what JSON cannot hold, instead of orjson writing NaN as null.
    thread.apply(StateDeltaEvent(delta=({"op": "add", "path": "/n", "value": float("nan")},)))
    assert type(thread.dump(share_state=True)["state"]) is dict
    with pytest.raises(StoreError):
        MemoryStore().save("t", thread.dump(share_state=True), expected_version=None)
    thread.set_state({"fresh": True})  # validated: vouched for again
    assert type(thread.dump(share_state=True)["state"]) is PlainDict


def test_a_hand_built_state_snapshot_is_copied_as_it_is_and_not_vouched_for() -> None:
    """Before: the orjson copy turned NaN into null silently. Now the value is kept, and a save refuses it."""
    import math

    from agui_client import StateSnapshotEvent
    from agui_client.errors import StoreError
    from agui_client.stores import MemoryStore
    from agui_client.wire.values import PlainDict

    thread = ThreadState()
    snapshot = {"x": float("nan"), "nested": {"y": [1]}}
    thread.apply(StateSnapshotEvent(snapshot=snapshot))
    held = thread.dump(share_state=True)["state"]
    assert math.isnan(held["x"]) and type(held) is dict
    assert math.isnan(thread.state["x"])  # the caller's copy too
    assert held["nested"] is not snapshot["nested"]  # a copy: the event keeps its own dict
    with pytest.raises(StoreError):
        MemoryStore().save("t", thread.dump(share_state=True), expected_version=None)
    thread.apply(StateSnapshotEvent(snapshot={"ok": [1, 2]}))  # plain: copied fast and vouched for
    assert type(thread.dump(share_state=True)["state"]) is PlainDict


def _runs_each_adding_a_message(n: int) -> list[Any]:
    events: list[Any] = []
    for r in range(n):
        events += [RunStartedEvent(thread_id="t", run_id=f"r{r}"),
                   TextMessageStartEvent(message_id=f"m{r}"), TextMessageContentEvent(message_id=f"m{r}", delta="x"),
                   TextMessageEndEvent(message_id=f"m{r}"), RunFinishedEvent(thread_id="t", run_id=f"r{r}")]
    return events


def test_a_thread_of_many_runs_holds_memory_linear_in_its_length() -> None:
    # Each run used to keep a copy of every message id the thread held when it started: 8,000 runs of
    # one message each held 1.4 GB. What a run found is now kept as what changed since it started.
    import tracemalloc

    peaks = []
    for n in (500, 2000):
        events = _runs_each_adding_a_message(n)
        tracemalloc.start()
        result = replay(events)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert len(result.state.messages) == n and result.state.last_run.new_message_ids == (f"m{n - 1}",)  # type: ignore[union-attr]

    assert peaks[1] / peaks[0] < 6  # linear: ~4; a copy of the ids per run: ~16


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


@pytest.mark.parametrize("kind", ["text", "tool call"])
def test_metadata_merged_event_by_event_never_changes_what_was_already_read(kind: str) -> None:
    # TX-11: metadata merges key by key. The fold merges in place (a copy per event cost the square of
    # the stream with ever new keys), so what was read before (a message, a wire dict) must keep its own.
    thread = ThreadState()
    session = RunSession(thread)
    session.feed_event(START)
    if kind == "text":
        session.feed_event(TextMessageStartEvent(message_id="m", metadata={"k0": 0}))
        more = [TextMessageContentEvent(message_id="m", delta="x", metadata={f"k{i}": i}) for i in range(1, 4)]
        read = lambda: thread.message("m").metadata  # noqa: E731
        wire = lambda: thread.to_wire()["messages"][-1]["metadata"]  # noqa: E731
    else:
        session.feed_event(ToolCallStartEvent(tool_call_id="c", tool_call_name="f", metadata={"k0": 0}))
        more = [ToolCallArgsEvent(tool_call_id="c", delta="{}", metadata={f"k{i}": i}) for i in range(1, 4)]
        read = lambda: thread.tool_call("c").metadata  # noqa: E731
        wire = lambda: thread.to_wire()["messages"][-1]["toolCalls"][0]["metadata"]  # noqa: E731
    session.feed_event(more[0])
    first, first_wire = read(), wire()
    for event in more[1:]:
        session.feed_event(event)

    assert first == first_wire == {"k0": 0, "k1": 1}
    assert read() == wire() == {"k0": 0, "k1": 1, "k2": 2, "k3": 3}
    assert type(read()) is dict and type(wire()) is dict


# -- nothing handed out changes afterwards (hardening item 11) -------------------------------------

def _activity_run(run_id: str, *events: dict[str, Any]) -> bytes:
    body = [{"type": "RUN_STARTED", "threadId": "t", "runId": run_id}, *events,
            {"type": "RUN_FINISHED", "threadId": "t", "runId": run_id}]
    return sse(*body)


_PLAN = {"type": "ACTIVITY_SNAPSHOT", "messageId": "a1", "activityType": "plan", "content": {"steps": [1]}}
_ADD = {"type": "ACTIVITY_DELTA", "messageId": "a1", "activityType": "plan",
        "patch": [{"op": "add", "path": "/steps/-", "value": 2}]}


@pytest.mark.parametrize("between", [
    pytest.param({"type": "ACTIVITY_SNAPSHOT", "messageId": "a1", "activityType": "plan", "content": {"x": 1},
                  "replace": False, "metadata": {"m": 1}}, id="kept-by-replace-false"),
    pytest.param({"type": "ACTIVITY_DELTA", "messageId": "a1", "activityType": "plan",
                  "patch": [{"op": "remove", "path": "/missing"}]}, id="after-a-failed-delta"),
    pytest.param({"type": "ACTIVITY_DELTA", "messageId": "a1", "activityType": "plan",
                  "patch": [{"op": "add", "path": "/seen", "value": True}]}, id="after-a-delta"),
])
def test_an_activity_delta_never_changes_what_was_handed_out(between: dict[str, Any]) -> None:
    from agui_client import replay

    thread = ThreadState()
    first = replay(_activity_run("r1", _PLAN), state=thread)
    held = thread.messages[-1]
    shown = thread.to_wire()["messages"][-1]
    earlier = first.new_messages[-1]
    before = (json.dumps(held.content), json.dumps(shown), json.dumps(earlier.content))
    replay(_activity_run("r2", between, _ADD), state=thread)
    assert (json.dumps(held.content), json.dumps(shown), json.dumps(earlier.content)) == before
    assert thread.messages[-1].content["steps"] == [1, 2]  # (the thread itself moved on)


def test_an_activity_from_an_application_s_snapshot_event_is_not_patched_in_place() -> None:
    from agui_client import RunSession
    from agui_client.types import events as ev

    content = {"steps": [1]}
    snapshot = ev.MessagesSnapshotEvent(messages=(msg.ActivityMessage(id="a1", activity_type="plan",
                                                                      content=content),))
    session = RunSession()
    session.feed_event(ev.RunStartedEvent(thread_id="t", run_id="r1"))
    session.feed_event(snapshot)
    session.feed_event(ev.ActivitySnapshotEvent(message_id="a1", activity_type="plan", content={"x": 1},
                                                replace=False, metadata={"m": 1}))
    session.feed_event(ev.ActivityDeltaEvent(message_id="a1", activity_type="plan",
                                             patch=({"op": "add", "path": "/steps/-", "value": 2},)))
    assert content == {"steps": [1]}  # the application's event is as it made it
    assert session.state.messages[-1].content["steps"] == [1, 2]
