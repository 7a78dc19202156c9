"""Snapshots folded from their JSON: the plain message shape, its promise, and the fold that holds it.

A session nobody reads events from keeps a MESSAGES_SNAPSHOT's messages as the JSON they arrived as
when every one is in the plain shape (``agui_client.wire.codec.held_messages``), and types a message only when it is
read. These tests hold that path to the typed one: the plain shape never admits a message the codec
would refuse, warn about or encode differently, and a thread folded either way reads, dumps, saves
and continues the same.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agui_client import RunSession, ThreadState, encode, replay
from agui_client.core.fold.entries import Entry as _Entry
from agui_client.core.fold.entries import wire_entry as _wire_entry
from agui_client.errors import AguiError
from agui_client.types import messages as msg
from agui_client.wire import codec as _codec
from agui_client.wire import shapes
from agui_client.wire.codec import decode
from agui_client.wire.sink import collect_warnings

ROOT = Path(__file__).resolve().parents[2]


def plain_messages(items: Any) -> set[str] | None:
    """The roles of ``items`` when the fold may hold every one as its JSON (``codec.held_messages``), else ``None``."""
    return {m["role"] for m in items} if _codec.held_messages(items) else None


@pytest.fixture(scope="module")
def snapshot_history() -> list[dict[str, Any]]:
    """The messages of bench/gen.py's snapshot stream (2,000 of them, every role and shape it makes)."""
    sys.path.insert(0, str(ROOT))
    try:
        from bench import gen
    finally:
        sys.path.remove(str(ROOT))
    history: list[dict[str, Any]] = gen.Gen(7, 1.0).history(2000)
    return history


text = st.text(max_size=4)
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), text)
metadata = st.one_of(st.dictionaries(text, json_leaf, max_size=2), st.just([]), st.just("m"), st.none())
# Each value drawn from the type it should have, or from a wrong one now and then.
maybe_str = st.one_of(text, text, text, st.none(), st.just(1), st.just(["x"]))
source = st.one_of(
    st.fixed_dictionaries({"type": st.just("url"), "value": maybe_str}, optional={"mimeType": maybe_str}),
    st.fixed_dictionaries({"type": st.just("data"), "value": maybe_str}, optional={"mimeType": maybe_str}),
    st.fixed_dictionaries({"type": st.just("file"), "value": maybe_str},
                          optional={"mimeType": maybe_str, "provider": maybe_str, "extra": text}),
    st.fixed_dictionaries({"type": st.sampled_from(["blob", None]), "value": text}),
)
part = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": maybe_str},
                          optional={"id": maybe_str, "metadata": metadata, "source": source}),
    st.fixed_dictionaries({"type": st.sampled_from(["image", "audio", "video", "document"]), "source": source},
                          optional={"id": maybe_str, "metadata": metadata, "text": text}),
    st.fixed_dictionaries({"type": st.sampled_from(["binary", None, 3])}),
    st.just("not a part"),
)
content = st.one_of(text, text, st.lists(part, max_size=3), st.none(), st.just(7), st.just({"k": 1}))
call = st.one_of(
    st.fixed_dictionaries({"id": maybe_str, "type": st.sampled_from(["function", "function", "other", None]),
                           "function": st.one_of(
                               st.fixed_dictionaries({"name": maybe_str, "arguments": maybe_str}),
                               st.fixed_dictionaries({"name": text}),
                               st.fixed_dictionaries({"name": text, "arguments": text, "extra": text}))},
                          optional={"encryptedValue": maybe_str, "metadata": metadata, "extra": text}),
    st.fixed_dictionaries({"id": text, "function": st.fixed_dictionaries({"name": text, "arguments": text})}),
)
message = st.fixed_dictionaries(
    {"id": st.one_of(text, text, text, st.none(), st.just(5)),
     "role": st.sampled_from(["system", "developer", "user", "assistant", "tool", "reasoning", "activity", "wizard"])},
    optional={"content": content, "name": maybe_str, "toolCalls": st.one_of(st.lists(call, max_size=2), st.none()),
              "toolCallId": maybe_str, "error": maybe_str, "encryptedValue": maybe_str, "metadata": metadata,
              "subagentRunId": maybe_str, "activityType": text, "tool_call_id": text, "extra": text})


def _decoded_quietly(value: dict[str, Any]) -> msg.Message | None:
    """The typed message, if the codec reads ``value`` without an error or a warning."""
    try:
        with collect_warnings() as sink, warnings.catch_warnings():
            warnings.simplefilter("error")
            message = decode(value, msg.Message)  # type: ignore[arg-type]
    except (AguiError, Warning):
        return None
    return None if sink.items else message


plain_call = st.fixed_dictionaries(
    {"id": text, "type": st.just("function"), "function": st.fixed_dictionaries({"name": text, "arguments": text})},
    optional={"encryptedValue": text, "metadata": st.dictionaries(text, json_leaf, max_size=2)})
plain_part = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": text}, optional={"id": text, "metadata": st.just({})}),
    st.fixed_dictionaries({"type": st.sampled_from(["image", "audio", "video", "document"]), "source": st.one_of(
        st.fixed_dictionaries({"type": st.just("url"), "value": text}, optional={"mimeType": text}),
        st.fixed_dictionaries({"type": st.just("data"), "value": text, "mimeType": text}),
        st.fixed_dictionaries({"type": st.just("file"), "value": text},
                              optional={"mimeType": text, "provider": text}))}),
)
_common = {"encryptedValue": text, "metadata": st.dictionaries(text, json_leaf, max_size=2), "subagentRunId": text}
plain_message = st.one_of(
    st.fixed_dictionaries({"id": text, "role": st.sampled_from(["system", "developer"]), "content": text},
                          optional={"name": text, **_common}),
    st.fixed_dictionaries({"id": text, "role": st.just("user"), "content": st.one_of(text, st.lists(plain_part))},
                          optional={"name": text, **_common}),
    st.fixed_dictionaries({"id": text, "role": st.just("assistant")},
                          optional={"content": text, "toolCalls": st.lists(plain_call, max_size=2), "name": text,
                                    **_common}),
    st.fixed_dictionaries({"id": text, "role": st.just("tool"), "toolCallId": text,
                           "content": st.one_of(text, st.lists(plain_part, max_size=2))},
                          optional={"error": text, **_common}),
    st.fixed_dictionaries({"id": text, "role": st.just("reasoning"), "content": text}, optional=_common),
)
odd_values = st.sampled_from([None, 1, 1.5, True, "s", [], ["x"], {}, {"k": None}])


@st.composite
def mangled(draw: st.DrawFn) -> dict[str, Any]:
    """A plain message with one thing changed somewhere inside it: a value replaced, a key dropped or added."""
    value = json.loads(json.dumps(draw(plain_message)))
    holders: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            holders.append(node)
            for child in node.values():
                walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)
    walk(value)
    target = draw(st.sampled_from(holders))
    how = draw(st.sampled_from(["set", "drop", "add"]))
    if how == "add" or not target:
        target[draw(st.sampled_from(["extra", "tool_call_id", "toolCallId", "name", "content", "id", "mimeType",
                                     "provider", "text", "source", "activityType"]))] = draw(odd_values | text)
    else:
        key = draw(st.sampled_from(sorted(target)))
        if how == "drop":
            del target[key]
        else:
            target[key] = draw(odd_values | text)
    return value


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(plain_message, mangled(), message))
def test_a_plain_message_decodes_silently_and_encodes_back_to_itself(value: dict[str, Any]) -> None:
    """The promise the fold relies on: plain means read without a word and written back unchanged."""
    if plain_messages([value]) is None:
        return
    message = _decoded_quietly(value)
    assert message is not None, value
    assert encode(message) == value


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(plain_message, mangled(), message), max_size=4))
def test_the_list_validator_accepts_what_each_messages_own_validator_accepts(values: list[dict[str, Any]]) -> None:
    """A snapshot's list is checked by one generated function with every message's checks inline (for
    speed); it is the same rule as each message class's own validator, read per shape."""
    one = _codec._derived.validator(_codec.HeldMessage)
    assert one is not None

    def valid(value: Any) -> bool:
        try:
            return bool(shapes.charged(shapes.Allowance(), one, value))  # (a new shape is compiled)
        except _codec.Fallback:
            return False
    assert _codec.held_messages(values) == all(map(valid, values))


@settings(max_examples=300, deadline=None)
@given(plain_message)
def test_every_well_formed_message_but_an_activity_is_plain(value: dict[str, Any]) -> None:
    assert _decoded_quietly(value) is not None  # (the strategy makes what the codec reads silently)
    assert plain_messages([value]) == {value["role"]}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plain_message)
def test_a_plain_message_thaws_as_its_typed_form_does(value: dict[str, Any]) -> None:
    """An entry held as JSON reads the same text, value and attributes as one made from the typed message."""
    typed = decode(value, msg.Message)  # type: ignore[arg-type]
    from_json = _wire_entry(value)
    from_typed = _Entry.of(typed)
    assert (from_json.text, from_json.value, from_json.attrs) == (from_typed.text, from_typed.value, from_typed.attrs)
    assert from_json.freeze(None) == typed


def test_the_shapes_real_snapshots_use_are_plain(snapshot_history: list[dict[str, Any]]) -> None:
    """The generator's history (every role, tool calls, multimodal parts) takes the plain path whole."""
    assert plain_messages(snapshot_history) == {"system", "user", "assistant", "tool", "reasoning", "developer"}


@pytest.mark.parametrize("bad", [
    {"id": "a", "role": "assistant", "content": None},          # an explicit null
    {"id": "a", "role": "activity", "activityType": "p", "content": {}},  # activities: typed path
    {"id": "a", "role": "user", "content": "x", "tool_call_id": "c"},  # a snake_case key (warned)
    {"id": "a", "role": "tool", "content": "x"},                 # a tool message without its call
    {"id": "a", "role": "assistant", "toolCalls": [{"id": "c", "type": "function", "function": {"name": "f"}}]},
    {"id": "a", "role": "assistant",                             # a tool call of another type
     "toolCalls": [{"id": "c", "type": "other", "function": {"name": "f", "arguments": ""}}]},
    {"role": "user", "content": "x"},                            # no id
    {"id": "a", "role": ["user"], "content": "x"},               # an unhashable role
])
def test_what_is_not_plain(bad: dict[str, Any]) -> None:
    assert plain_messages([{"id": "ok", "role": "user", "content": "x"}, bad]) is None


# -- the fold --------------------------------------------------------------------------------------

snapshot_message = st.one_of(
    st.fixed_dictionaries({"id": st.sampled_from(["m1", "m2", "m3"]), "role": st.sampled_from(["user", "system"]),
                           "content": st.sampled_from(["hi", "\u00e9t\u00e9"])}),
    st.fixed_dictionaries({"id": st.sampled_from(["m1", "a1", "a2"]), "role": st.just("assistant")},
                          optional={"content": st.just("ok"),
                                    "toolCalls": st.lists(st.fixed_dictionaries({
                                        "id": st.sampled_from(["c1", "c2", "c3"]), "type": st.just("function"),
                                        "function": st.fixed_dictionaries({"name": st.sampled_from(["f", "g"]),
                                                                          "arguments": st.just("{}")})}),
                                        min_size=1, max_size=2)}),
    st.fixed_dictionaries({"id": st.sampled_from(["t1", "t2", "m2"]), "role": st.just("tool"),
                           "toolCallId": st.sampled_from(["c1", "c2", "c9"]),
                           "content": st.one_of(st.just("done"), st.just([{"type": "text", "text": "x"}]))},
                          optional={"error": st.just("e")}),
    st.fixed_dictionaries({"id": st.sampled_from(["r1", "m3"]), "role": st.just("reasoning"),
                           "content": st.just("thinking")}, optional={"subagentRunId": st.just("s1")}),
    st.just({"id": "x1", "role": "activity", "activityType": "p", "content": {"n": 1}}),  # not plain
)
snapshot = st.fixed_dictionaries({"type": st.just("MESSAGES_SNAPSHOT"),
                                  "messages": st.lists(snapshot_message, max_size=5)},
                                 optional={"timestamp": st.sampled_from([1, "2"])})
after = st.sampled_from([
    {"type": "TOOL_CALL_RESULT", "messageId": "t3", "toolCallId": "c1", "content": "late"},
    {"type": "TOOL_CALL_RESULT", "messageId": "t1", "toolCallId": "c2", "content": "again"},
    {"type": "TOOL_CALL_START", "toolCallId": "c4", "toolCallName": "g", "parentMessageId": "a1"},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c4", "delta": "{}"},
    {"type": "TOOL_CALL_END", "toolCallId": "c4"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m1"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "more"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
    {"type": "TEXT_MESSAGE_START", "messageId": "n1"},
    {"type": "TEXT_MESSAGE_END", "messageId": "n1"},
    {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "tool-call", "entityId": "c1", "encryptedValue": "z"},
    {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "message", "entityId": "m2", "encryptedValue": "z"},
    {"type": "ACTIVITY_SNAPSHOT", "messageId": "x2", "activityType": "p", "content": {"n": 2}},
    {"type": "TEXT_MESSAGE_CHUNK", "messageId": "k1", "delta": "chunk"},
    {"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "sub"},
    {"type": "TOOL_CALL_RESULT", "messageId": "t5", "toolCallId": "c2", "content": "x", "subagentRunId": "s1"},
    {"type": "TOOL_CALL_RESULT", "messageId": "t6", "toolCallId": "c3", "content": "x", "subagentRunId": "s2"},
    {"type": "REASONING_MESSAGE_CONTENT", "messageId": "r1", "delta": "x", "subagentRunId": "s1"},
    {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "tool-call", "entityId": "c1", "encryptedValue": "z",
     "subagentRunId": "s1"},
    {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "message", "entityId": "r1", "encryptedValue": "z",
     "subagentRunId": "s1"},
    {"type": "TOOL_CALL_START", "toolCallId": "c2", "toolCallName": "f", "subagentRunId": "s1"},
    {"type": "REASONING_MESSAGE_START", "messageId": "r1", "role": "reasoning", "subagentRunId": "s2"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"},
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r2"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r2", "outcome": {"type": "success",
                                                                         "pendingToolCallIds": ["c1", "c3"]}},
])


def _fold(evs: list[dict[str, Any]], events: bool) -> tuple[Any, ...]:
    session = RunSession(collect_errors=True, events=events)
    for event in evs:
        session.feed_payload(json.dumps(event, separators=(",", ":")).encode())
    result = session.end()
    state = result.state
    # The saves first, while entries may still hold JSON (reading a message types it).
    saved = json.dumps(state.dump(share_state=True), sort_keys=True)
    dumped = json.dumps(state.dump(), sort_keys=True)
    return (saved, dumped, json.dumps(state.to_wire(), sort_keys=True),
            [(e.index, e.rule, type(e)) for e in session.errors],
            [(w.code, w.index, w.pointer) for w in result.warnings],
            [(run.run_id, list(run.new_message_ids), run.pending_tool_call_ids) for run in state.runs],
            [encode(m) for m in result.new_messages], state.pending_tool_call_ids)


_REASONING_SNAPSHOT = {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "r1", "role": "reasoning", "content": "x"}]}
_CALL_SNAPSHOT = {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "a1", "role": "assistant", "toolCalls": [
    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}]}


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(snapshot, after, after), max_size=12))
# the owners a snapshot records, each met by a tag that disagrees
@example([_REASONING_SNAPSHOT, {"type": "REASONING_MESSAGE_START", "messageId": "r1", "role": "reasoning",
                                "subagentRunId": "s2"}])
@example([_CALL_SNAPSHOT, {"type": "TEXT_MESSAGE_START", "messageId": "a1", "subagentRunId": "s1"}])
# owners a snapshot names, met by tags that agree with them
@example([{"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "sub"},
          {"type": "MESSAGES_SNAPSHOT", "messages": [
              {"id": "r1", "role": "reasoning", "content": "x", "subagentRunId": "s1"},
              {"id": "a1", "role": "assistant", "subagentRunId": "s1", "toolCalls": [
                  {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}]},
          {"type": "REASONING_MESSAGE_START", "messageId": "r1", "role": "reasoning", "subagentRunId": "s1"},
          {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "tool-call", "entityId": "c1", "encryptedValue": "z",
           "subagentRunId": "s1"}])
# one message holding two calls with one id: the index names the last, lazily made or not
@example([{"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "a1", "role": "assistant", "toolCalls": [
    {"id": "c1", "type": "function", "function": {"name": n, "arguments": "{}"}} for n in ("f", "g")]}]},
    {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "tool-call", "entityId": "c1", "encryptedValue": "z"}])
@example([_CALL_SNAPSHOT, {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "tool-call", "entityId": "c1",
                           "encryptedValue": "z", "subagentRunId": "s1"}])
def test_a_snapshot_folded_from_json_folds_as_the_typed_event(evs: list[dict[str, Any]]) -> None:
    """Repeated ids, a snapshot outside a run, non-plain members, later events that change, answer or
    extend a snapshot message: the JSON path either steps aside or ends exactly where the typed one does."""
    stream = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"}, *evs]
    assert _fold(stream, events=False) == _fold(stream, events=True)


def test_a_large_snapshot_is_held_as_json_and_read_as_typed_messages(snapshot_history: list[dict[str, Any]]) -> None:
    """The sliced reading of a large snapshot takes the same path; reads and copies leave it intact."""
    stream = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
              {"type": "MESSAGES_SNAPSHOT", "messages": snapshot_history},
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"}]
    body = "".join(f"data: {json.dumps(e, separators=(',', ':'))}\n\n" for e in stream).encode()
    assert len(body) > 256 * 1024  # past the size read slice by slice
    state = replay(body).state
    assert all(type(held) is dict for held in state.log.entries)  # held as JSON: no entry, nothing typed yet
    copy = state.dump()["messages"]
    copy[0]["content"] = "changed"
    assert state.dump()["messages"] == snapshot_history  # a dump is the caller's to change
    assert type(state.log.entries[0]) is dict
    typed = ThreadState()
    session = RunSession(typed)
    for event in stream:
        session.feed_payload(json.dumps(event).encode())
    session.end()
    assert encode(state.messages) == snapshot_history == encode(typed.messages)
    assert not any(type(held) is dict for held in state.log.entries)  # reading made them all, at once
    saved = json.loads(json.dumps(state.dump(share_state=True)))  # what a store writes and reads back
    assert ThreadState.load(saved).messages == typed.messages


@pytest.mark.parametrize("odd", ["activity", "repeated id", "null name"])
def test_a_large_snapshot_that_is_not_all_plain_folds_as_the_typed_event(
        snapshot_history: list[dict[str, Any]], odd: str) -> None:
    """Past the sliced size, a message the plain shape refuses (late in the list) or an id the fold
    refuses sends the whole snapshot down the typed path: same thread, same warnings."""
    messages = [dict(m) for m in snapshot_history]
    if odd == "activity":
        messages.append({"id": "act", "role": "activity", "activityType": "p", "content": {"n": 1}})
    elif odd == "repeated id":
        messages.append({**messages[3], "content": "again"} if messages[3]["role"] != "assistant"
                        else {"id": messages[3]["id"], "role": "user", "content": "again"})
    else:
        messages[-1] = {**messages[-1], "name": None} if messages[-1]["role"] != "tool" else {
            "id": messages[-1]["id"], "role": "user", "content": "x", "name": None}
    stream = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
              {"type": "MESSAGES_SNAPSHOT", "messages": messages},
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"}]
    payloads = [json.dumps(e, separators=(",", ":")).encode() for e in stream]
    assert len(payloads[1]) > 256 * 1024

    def fold(events: bool) -> tuple[Any, ...]:
        session = RunSession(events=events, collect_errors=True)
        for payload in payloads:
            session.feed_payload(payload)
        result = session.end()
        return (encode(result.state.messages), [(w.code, w.index) for w in result.warnings],
                [(type(e), e.index, e.pointer) for e in session.errors])

    fused, typed = fold(False), fold(True)
    assert fused == typed
    assert (odd == "repeated id") == any(code == "MS-01" for code, _ in typed[1])
    assert (odd == "null name") == bool(typed[2])  # a null where a value or nothing belongs is refused


# -- a stored thread ---------------------------------------------------------------------------------

def _continue(state: ThreadState, evs: list[dict[str, Any]], events: bool = False) -> tuple[Any, ...]:
    """Fold another run into ``state`` and say everything about where it ends."""
    session = RunSession(state, collect_errors=True, events=events)
    for event in [{"type": "RUN_STARTED", "threadId": "t", "runId": "r9"}, *evs]:
        session.feed_payload(json.dumps(event, separators=(",", ":")).encode())
    result = session.end()
    return (json.dumps(state.dump(share_state=True), sort_keys=True), json.dumps(state.to_wire(), sort_keys=True),
            [(e.index, e.rule, type(e)) for e in session.errors],
            [(w.code, w.index, w.pointer) for w in result.warnings], state.pending_tool_call_ids)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(snapshot, after, after), max_size=8), st.lists(after, max_size=6))
@example([_CALL_SNAPSHOT], [{"type": "TOOL_CALL_RESULT", "messageId": "t3", "toolCallId": "c1", "content": "late"}])
def test_a_stored_thread_held_as_json_reads_and_folds_on_as_the_typed_load(
        first: list[dict[str, Any]], then: list[dict[str, Any]]) -> None:
    """A thread brought back from a store keeps its plain messages as JSON (``_load(adopt=True)``, what
    ``Thread`` does): it reads, saves and folds a later run exactly as the typed ``load`` does."""
    session = RunSession(collect_errors=True)
    for event in [{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"}, *first]:
        session.feed_payload(json.dumps(event).encode())
    record = json.dumps(session.end().state.dump(share_state=True))
    typed = ThreadState.load(json.loads(record))
    adopted = ThreadState.load(json.loads(record), adopt=True)
    assert (adopted.version, adopted.thread_id, adopted.open_interrupts) == (typed.version, typed.thread_id,
                                                                             typed.open_interrupts)
    assert _continue(ThreadState.load(json.loads(record), adopt=True), then) == _continue(typed, then)
    # Events read as they fold (Thread.stream()): the typed handlers meet the messages held as JSON.
    assert _continue(ThreadState.load(json.loads(record), adopt=True), then, events=True) \
        == _continue(ThreadState.load(json.loads(record)), then, events=True)
    assert adopted.messages == ThreadState.load(json.loads(record)).messages


def test_a_thread_loaded_from_a_store_holds_its_messages_as_json(snapshot_history: list[dict[str, Any]]) -> None:
    from agui_client import AgentClient
    from agui_client.stores import MemoryStore

    state = ThreadState(messages=decode(snapshot_history, tuple[msg.Message, ...]), thread_id="t")
    store = MemoryStore()
    store.save("t", state.dump(), expected_version=None)
    with AgentClient("http://127.0.0.1:9/agent", store=store) as client:
        thread = client.thread("t")
        assert all(type(held) is dict for held in thread.state.log.entries)  # no entry, nothing typed until read
        assert encode(thread.state.messages) == snapshot_history
        thread.reload()
        assert type(thread.state.log.entries[-1]) is dict


def test_a_shared_dump_loads_as_a_copy() -> None:
    """``dump(share_state=True)`` (what a save gets) loads like ``dump()``, and shares nothing with the thread."""
    state = ThreadState(messages=[msg.UserMessage(id="u1", content="hi")], state={"items": [1]}, thread_id="t")
    shared = state.dump(share_state=True)
    loaded = ThreadState.load(shared)
    assert loaded.to_wire() == ThreadState.load(state.dump()).to_wire() == state.to_wire()
    shared["state"]["items"].append(3)
    shared["messages"][0]["content"] = "changed"
    assert loaded.state == {"items": [1]}
    assert loaded.messages == (msg.UserMessage(id="u1", content="hi"),)


@pytest.mark.parametrize("adopt", [True, False])
def test_a_stored_state_that_is_not_json_is_refused(adopt: bool) -> None:
    with pytest.raises(ValueError) as refused:
        ThreadState.load({"messages": [], "state": {"seen": {1, 2}}}, adopt=adopt)
    assert "state must be JSON" in str(refused.value)


def test_a_large_snapshot_records_owners_named_in_any_slice(snapshot_history: list[dict[str, Any]]) -> None:
    """Past the sliced size, what the verifier needs (owners, reasoning ids, tool calls) is gathered slice by
    slice: an owner named only in the first slice, and later events that meet it, fold as the typed event."""
    messages = [dict(m) for m in snapshot_history]
    first_reasoning = next(m for m in messages if m["role"] == "reasoning")
    first_reasoning["subagentRunId"] = "s1"
    holder = next(m for m in messages if m["role"] == "assistant" and "toolCalls" in m)
    holder["subagentRunId"] = "s1"
    call_id = holder["toolCalls"][0]["id"]
    later = [m for m in messages if m["role"] == "user"][-1]
    stream = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
              {"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "sub"},
              {"type": "MESSAGES_SNAPSHOT", "messages": messages},
              {"type": "REASONING_MESSAGE_START", "messageId": first_reasoning["id"], "role": "reasoning",
               "subagentRunId": "s1"},
              {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "tool-call", "entityId": call_id,
               "encryptedValue": "z", "subagentRunId": "s1"},
              {"type": "TEXT_MESSAGE_START", "messageId": later["id"], "subagentRunId": "s1"}]
    assert messages.index(holder) < 100 and messages.index(first_reasoning) < 100  # in the first slice
    assert len(json.dumps(stream[2])) > 256 * 1024
    fused, typed = _fold(stream, events=False), _fold(stream, events=True)
    assert fused == typed
    # s1's reasoning message and call are its own (events 3, 4); the parent's message is not (5, SA-11);
    # and the stream stops without RUN_FINISHED (6).
    assert [(index, rule.split("/")[0]) for index, rule, _ in typed[3]] == [(5, "SA-11"), (6, "LC-04")]


@pytest.mark.parametrize("read_first", ["messages", "new_messages"])
def test_messages_typed_in_one_decode_keep_their_tool_calls_for_later_events(read_first: str) -> None:
    """Reading a thread's messages types every one held as JSON in one decode; a snapshot message's
    tool calls, not asked for before, are still there for the events that follow (a result placed after
    its call, an encrypted value for it), exactly as when the snapshot was typed on arrival."""
    head = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
            {"type": "MESSAGES_SNAPSHOT", "messages": [
                {"id": "u1", "role": "user", "content": "hi"},
                {"id": "a1", "role": "assistant", "toolCalls": [
                    {"id": c, "type": "function", "function": {"name": "f", "arguments": "{}"}} for c in ("c1", "c2")]},
                {"id": "u2", "role": "user", "content": "later"}]}]
    tail = [{"type": "TOOL_CALL_RESULT", "messageId": "t2", "toolCallId": "c2", "content": "done"},
            {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "tool-call", "entityId": "c1", "encryptedValue": "z"},
            {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"}]

    def fold(events: bool) -> tuple[Any, ...]:
        session = RunSession(events=events)
        for event in head:
            session.feed_payload(json.dumps(event).encode())
        read = session.state.messages if read_first == "messages" else session.result().new_messages
        assert [m.id for m in read] == ["u1", "a1", "u2"]
        for event in tail:
            session.feed_payload(json.dumps(event).encode())
        result = session.end()
        # The saves too: a message typed from its JSON is written as that JSON until it changes (a1 did,
        # and reading the messages again typed it anew).
        assert len(result.state.messages) == 4
        saved = json.loads(json.dumps(result.state.dump(share_state=True)))["messages"]
        assert saved == result.state.dump()["messages"]
        return result.state.to_wire(), [w.code for w in result.warnings], saved

    fused, typed = fold(False), fold(True)
    assert fused == typed
    assert [m["id"] for m in fused[0]["messages"]] == ["u1", "a1", "t2", "u2"]
    assert fused[0]["messages"][1]["toolCalls"][0]["encryptedValue"] == "z"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(snapshot, after, after), max_size=10), st.sampled_from([1, 24, 90, 400]))
# what an earlier slice gathered, met by an event after a later slice gathered more of the same kind
@example([{"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "r1", "role": "reasoning", "content": "x"},
                                                      {"id": "m3", "role": "reasoning", "content": "y"}]},
          {"type": "REASONING_MESSAGE_START", "messageId": "r1", "role": "reasoning", "subagentRunId": "s2"}], 1)
@example([{"type": "MESSAGES_SNAPSHOT", "messages": [
    {"id": m, "role": "assistant",
     "toolCalls": [{"id": c, "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    for m, c in (("a1", "c1"), ("a2", "c2"))]},
    {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "tool-call", "entityId": "c1", "encryptedValue": "z",
     "subagentRunId": "s1"}], 1)
def test_a_snapshot_read_slice_by_slice_folds_as_the_typed_event(evs: list[dict[str, Any]], step: int) -> None:
    """The sliced reading of large snapshots, forced on every snapshot with slices of every size: what is
    gathered slice by slice (ids, owners, reasoning ids, calls) folds, saves and continues exactly as the
    typed event does."""
    from agui_client.core import session as session_module
    from agui_client.wire import codec, slices

    stream = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"}, *evs]
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(session_module, "SLICED_MIN", 0)
        monkeypatch.setattr(codec, "SLICED_MIN", 0)
        monkeypatch.setattr(slices, "_SLICE", step)
        assert _fold(stream, events=False) == _fold(stream, events=True)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(snapshot, after, after, after), max_size=14), st.integers(0, 14), st.booleans())
@example([{"type": "TEXT_MESSAGE_START", "messageId": "m1"}, {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1",
          "delta": "a"}, {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
          {"type": "TEXT_MESSAGE_START", "messageId": "m1"}, {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1",
          "delta": "b"}, {"type": "TEXT_MESSAGE_END", "messageId": "m1"}], 3, False)
@example([{"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "m1", "role": "assistant"}]},
          {"type": "TEXT_MESSAGE_START", "messageId": "m1"},
          {"type": "TOOL_CALL_RESULT", "messageId": "t3", "toolCallId": "c1", "content": "late"}], 2, False)
def test_a_save_between_events_changes_no_later_save(evs: list[dict[str, Any]], cut: int, events: bool) -> None:
    """A save keeps what it built for each finished message (the next save reuses it); a message that
    changes afterwards (re-opened, answered, encrypted, replaced by a snapshot) is built again: the last
    save is the one a thread that was never saved in between makes."""
    stream = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"}, *evs]

    def last_save(save_at: int | None) -> str:
        session = RunSession(collect_errors=True, events=events)
        for i, event in enumerate(stream):
            if i == save_at:
                session.state.dump(share_state=True)
            session.feed_payload(json.dumps(event).encode())
        session.end()
        return json.dumps(session.state.dump(share_state=True), sort_keys=True)

    assert last_save(cut + 1) == last_save(None)


def test_a_runs_new_messages_leave_a_stored_threads_json_as_it_is(snapshot_history: list[dict[str, Any]]) -> None:
    """``result.new_messages`` types only the run's messages: a long stored thread's others stay JSON."""
    stored = ThreadState(messages=decode(snapshot_history, tuple[msg.Message, ...]), thread_id="t")
    state = ThreadState.load(json.loads(json.dumps(stored.dump())), adopt=True)
    session = RunSession(state, events=False)
    for event in [{"type": "RUN_STARTED", "threadId": "t", "runId": "r2"},
                  {"type": "TEXT_MESSAGE_START", "messageId": "new", "role": "assistant"},
                  {"type": "TEXT_MESSAGE_CONTENT", "messageId": "new", "delta": "hello"},
                  {"type": "TEXT_MESSAGE_END", "messageId": "new"},
                  {"type": "RUN_FINISHED", "threadId": "t", "runId": "r2"}]:
        session.feed_payload(json.dumps(event).encode())
    result = session.end()
    assert [(m.id, m.content) for m in result.new_messages] == [("new", "hello")]
    assert sum(type(held) is dict for held in state.log.entries) == len(snapshot_history)
    assert encode(state.messages[:-1]) == snapshot_history  # (and all are read as they were)


@pytest.mark.parametrize("events", [False, True])
def test_a_save_while_a_message_without_content_is_reopened_leaves_it_without_content(events: bool) -> None:
    """Found by the hypothesis test above: a snapshot's m1 without content, re-opened (TX-05) and cut before
    any text. A save in between built its wire form: that marked the entry whole (reading the tool calls of
    an entry held as JSON said so) and turned its text from no fragment into one empty fragment, so the cut
    no longer took the content away again and m1 kept ``"content": ""``; without the save it keeps none."""
    stream = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
              {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "m1", "role": "assistant"}]},
              {"type": "TEXT_MESSAGE_START", "messageId": "m1"}]
    session = RunSession(collect_errors=True, events=events)
    for event in stream:
        session.feed_payload(json.dumps(event).encode())
    saved = session.state.dump(share_state=True)
    assert saved["messages"] == [{"id": "m1", "role": "assistant", "content": ""}]  # (open: no text yet)
    session.feed_payload(json.dumps({"type": "TOOL_CALL_RESULT", "messageId": "t3", "toolCallId": "c1",
                                     "content": "late"}).encode())
    session.end()
    assert session.state.dump(share_state=True)["messages"][0] == {"id": "m1", "role": "assistant"}
