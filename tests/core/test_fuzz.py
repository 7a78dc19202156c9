"""Hostile and random input: whatever a server sends, the pipeline answers with a typed error or a fold.

Random sequences of plausible and mangled events (ids reused across kinds and owners, fields of the
wrong type, unknown members, nulls, patches that do not apply, chunks without lanes) are fed through
`replay` and through a collecting `RunSession`; nothing but an `AguiError` may come out, and the
thread must still encode for the next request.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from wirekit import sse

from agui_client import AguiError, RunSession, ThreadState, encode, replay
from agui_client.wire.jsonio import dump_json

ids = st.sampled_from(["m1", "m2", "c1", "c2", "", "s1", "i1"])
owners = st.one_of(st.none(), st.sampled_from(["s1", "s2", ""]))
scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=6), st.floats(allow_nan=False,
                                                                                                  allow_infinity=False))
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                           st.dictionaries(st.text(max_size=4), inner, max_size=3)),
                           max_leaves=6)
pointers = st.sampled_from(["", "/a", "/a/0", "/a/-", "/b/c", "/a~1b", "/0", "/-"])
patch_ops = st.fixed_dictionaries({"op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "bogus"]),
                                   "path": pointers}, optional={"value": json_values, "from": pointers})

TYPES = ["RUN_STARTED", "RUN_FINISHED", "RUN_ERROR", "STEP_STARTED", "STEP_FINISHED", "TEXT_MESSAGE_START",
         "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "TEXT_MESSAGE_CHUNK", "TOOL_CALL_START", "TOOL_CALL_ARGS",
         "TOOL_CALL_END", "TOOL_CALL_CHUNK", "TOOL_CALL_RESULT", "STATE_SNAPSHOT", "STATE_DELTA", "MESSAGES_SNAPSHOT",
         "ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA", "RAW", "CUSTOM", "REASONING_START", "REASONING_MESSAGE_START",
         "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END", "REASONING_MESSAGE_CHUNK", "REASONING_END",
         "REASONING_ENCRYPTED_VALUE", "SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR", "THINKING_START",
         "THINKING_TEXT_MESSAGE_CONTENT", "AGUI_PING"]

interrupt = st.fixed_dictionaries({"id": ids, "reason": st.sampled_from(["approval", "input"])},
                                  optional={"expiresAt": st.sampled_from(["2020-01-01T00:00:00Z", "garbage", ""]),
                                            "responseSchema": st.just({"type": "object"}),
                                            "subagentRunId": owners.filter(lambda o: o is not None)})
outcome = st.one_of(
    st.just({"type": "success"}),
    st.fixed_dictionaries({"type": st.just("success")}, optional={"pendingToolCallIds": st.lists(ids, max_size=3)}),
    st.fixed_dictionaries({"type": st.just("interrupt"), "interrupts": st.lists(interrupt, min_size=1, max_size=3)}),
    st.just({"type": "cancelled"}),
    st.just({"type": "paused"}),
)
message = st.fixed_dictionaries({"id": ids, "role": st.sampled_from(["user", "assistant", "tool", "activity",
                                                                       "reasoning", "system", "wizard"])},
                                optional={"content": st.one_of(st.text(max_size=5), st.just({"k": 1})),
                                          "toolCallId": ids, "activityType": st.just("p"),
                                          "toolCalls": st.just([{"id": "c1", "type": "function",
                                                                 "function": {"name": "f", "arguments": "{}"}}])})


@st.composite
def events(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(TYPES))
    event: dict[str, Any] = {"type": kind}
    fields = {
        "threadId": st.just("t"), "runId": st.sampled_from(["r1", "r2"]), "messageId": ids, "toolCallId": ids,
        "toolCallName": st.sampled_from(["f", "g"]), "delta": st.one_of(st.text(max_size=4), st.just("\ud83d")),
        "stepName": st.sampled_from(["plan", "act"]), "role": st.sampled_from(["assistant", "user", "reasoning"]),
        "parentMessageId": ids, "subagentRunId": owners, "content": st.one_of(st.text(max_size=4), json_values),
        "snapshot": json_values, "delta_patch": st.lists(patch_ops, max_size=3),
        "patch": st.lists(patch_ops, max_size=3),
        "messages": st.lists(message, max_size=3), "activityType": st.just("p"), "replace": st.booleans(),
        "name": st.sampled_from(["acme.x", "sub"]), "value": json_values, "event": json_values,
        "message": st.text(max_size=5), "code": st.text(max_size=3), "outcome": outcome, "result": json_values,
        "subtype": st.sampled_from(["message", "tool-call", "other"]), "entityId": ids, "encryptedValue": st.just("e"),
        "parentSubagentRunId": owners, "timestamp": st.one_of(st.integers(0, 10), st.just("1")),
        "metadata": st.one_of(st.none(), st.dictionaries(st.text(max_size=3), scalars, max_size=2)),
    }
    for name in draw(st.lists(st.sampled_from(sorted(fields)), max_size=7, unique=True)):
        value = draw(fields[name])
        key = "delta" if name == "delta_patch" and kind == "STATE_DELTA" else name
        if name == "delta_patch" and kind != "STATE_DELTA":
            continue
        if value is None and name != "metadata" and draw(st.booleans()):
            continue
        event[key] = value
    return event


streams = st.lists(events(), max_size=25).map(lambda evs: [{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
                                                              *evs])


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams)
def test_any_stream_gives_a_fold_or_a_typed_error(evs: list[dict[str, Any]]) -> None:
    thread = ThreadState()
    try:
        replay(sse(*evs), state=thread)
    except AguiError as exc:
        assert exc.result is not None  # what was folded before the fault comes with the error
    # Whatever happened, the thread can be encoded and sent again.
    dump_json(encode(thread.input_messages()))
    dump_json(thread.to_wire())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams)
def test_a_collecting_session_survives_every_fault(evs: list[dict[str, Any]]) -> None:
    session = RunSession(collect_errors=True)
    for event in evs:
        try:
            session.feed_payload(json.dumps(event).encode("utf-8", "surrogatepass"))
        except AguiError:
            raise AssertionError("collect_errors must not raise") from None
    result = session.end()
    assert result.events == len(evs)
    dump_json(result.state.to_wire())


def _fold_with(evs: list[dict[str, Any]], events: bool) -> tuple[Any, ...]:
    session = RunSession(collect_errors=True, events=events)
    for event in evs:
        session.feed_payload(json.dumps(event).encode("utf-8", "surrogatepass"))
    result = session.end()
    return (json.dumps(result.state.to_wire(), sort_keys=True), [(e.index, e.rule, type(e)) for e in session.errors],
            [(w.code, w.index) for w in result.warnings], result.outcome, result.pending_tool_call_ids)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams)
def test_folding_without_event_objects_changes_nothing(evs: list[dict[str, Any]]) -> None:
    """A session nobody reads events from folds plain deltas straight from their JSON: same outcome."""
    assert _fold_with(evs, events=False) == _fold_with(evs, events=True)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from([
    {"type": "TEXT_MESSAGE_START", "messageId": "m1"}, {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "a"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "b", "timestamp": 5},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "c", "timestamp": "5"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "d", "subagentRunId": "s"},
    {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f"}, {"type": "TOOL_CALL_END", "toolCallId": "c1"},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "{"}, {"type": "TOOL_CALL_ARGS", "toolCallId": "c1",
                                                                  "delta": "}", "timestamp": 2**60},
    {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m2", "delta": "x"},
    {"type": "REASONING_MESSAGE_START", "messageId": "r1", "role": "reasoning"},
    {"type": "REASONING_MESSAGE_CONTENT", "messageId": "r1", "delta": "hm"},
    {"type": "REASONING_MESSAGE_END", "messageId": "r1"}, {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"},
]), max_size=20))
def test_fused_deltas_match_on_dense_delta_streams(evs: list[dict[str, Any]]) -> None:
    stream = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"}, *evs]
    assert _fold_with(stream, events=False) == _fold_with(stream, events=True)


def _fold_compact(evs: list[dict[str, Any]], events: bool) -> tuple[Any, ...]:
    session = RunSession(collect_errors=True, events=events)
    for event in evs:
        session.feed_payload(json.dumps(event, separators=(",", ":")).encode("utf-8", "surrogatepass"))
    result = session.end()
    return (json.dumps(result.state.to_wire(), sort_keys=True), [(e.index, e.rule, type(e)) for e in session.errors],
            [(w.code, w.index, w.pointer) for w in result.warnings], result.state.state_in_sync)


state_patch_ops = st.one_of(
    patch_ops,
    st.fixed_dictionaries({"op": st.sampled_from(["add", "replace", "remove"]),
                           "path": st.sampled_from(["/a", "/a/0", "/a/1", "/a/-", "/b", "/b/c", "/c", "/a~0x", "/a~2"]),
                           "value": json_values}),
    st.just("not an op"), st.just({"op": 1, "path": "/a"}), st.just({"op": "add", "path": 7, "value": 1}),
    st.just({"op": "copy", "path": "/d", "from": "a"}), st.just({"op": "move", "path": "/d", "from": "/a"}),
    st.just({"op": "replace", "path": "/a"}),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(
    st.fixed_dictionaries({"type": st.just("STATE_DELTA"), "delta": st.lists(state_patch_ops, max_size=3)},
                          optional={"timestamp": st.one_of(st.integers(0, 10), st.just("1"), st.just(2**60)),
                                    "subagentRunId": st.just("s"), "rawEvent": st.just({"x": 1})}),
    st.just({"type": "STATE_DELTA", "delta": {"op": "add", "path": "/a", "value": 1}}),
    st.just({"type": "STATE_DELTA"}),
    st.just({"type": "STATE_SNAPSHOT", "snapshot": {"a": [1, 2], "b": {"c": None}}}),
    st.just({"type": "TEXT_MESSAGE_CHUNK", "messageId": "m2", "delta": "x"}),
    st.just({"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"}),
), max_size=20))
# a timestamp just past, and far past, the safe integers: refused, never folded straight from its JSON
@example([{"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": 1}], "timestamp": 2**53}])
@example([{"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": 1}], "timestamp": -(2**60)}])
def test_fused_state_deltas_match_the_event_path(evs: list[dict[str, Any]]) -> None:
    """STATE_DELTA folded straight from its JSON: the same state, errors, warnings and sync flag as the events.

    The fused path does not validate a patch before applying it: it relies on the applier refusing,
    unchanged, whatever the codec would refuse or drop. Malformed and unknown operations are mixed in
    to prove it, and compact JSON takes the codec's write-back fast path.
    """
    stream = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"}, *evs]
    assert _fold_compact(stream, events=False) == _fold_compact(stream, events=True)


_ids = st.sampled_from(["m1", "m2", "c1", "c2", "t1"])
_stamp = {"timestamp": st.one_of(st.integers(0, 9), st.just(2**60), st.just("1"))}
_structural = st.one_of(
    st.fixed_dictionaries({"type": st.just("TEXT_MESSAGE_START"), "messageId": _ids},
                          optional={"role": st.sampled_from(["assistant", "user", None]), **_stamp,
                                    "subagentRunId": st.just("s1"), "metadata": st.just({"k": 1})}),
    st.fixed_dictionaries({"type": st.just("TEXT_MESSAGE_END"), "messageId": _ids},
                          optional={**_stamp, "subagentRunId": st.just("s1")}),
    st.fixed_dictionaries({"type": st.just("TEXT_MESSAGE_CONTENT"), "messageId": _ids,
                           "delta": st.sampled_from(["a", "\ud83d", "\ude00"])}),
    st.fixed_dictionaries({"type": st.just("TOOL_CALL_START"), "toolCallId": _ids,
                           "toolCallName": st.sampled_from(["f", "g"])},
                          optional={"parentMessageId": st.one_of(_ids, st.none()), **_stamp,
                                    "subagentRunId": st.just("s1"), "metadata": st.just({"k": 1})}),
    st.fixed_dictionaries({"type": st.just("TOOL_CALL_ARGS"), "toolCallId": _ids,
                           "delta": st.sampled_from(["{", "}", '{"a":1}', "x"])}),
    st.fixed_dictionaries({"type": st.just("TOOL_CALL_END"), "toolCallId": _ids},
                          optional={**_stamp, "metadata": st.just({"k": 1})}),
    st.fixed_dictionaries({"type": st.just("TOOL_CALL_RESULT"), "messageId": _ids, "toolCallId": _ids,
                           "content": st.one_of(st.sampled_from(["ok", ""]), st.just([{"type": "text", "text": "x"}]))},
                          optional={"role": st.sampled_from(["tool", "user"]), **_stamp,
                                    "subagentRunId": st.just("s1")}),
    st.fixed_dictionaries({"type": st.just("TEXT_MESSAGE_CHUNK"), "messageId": _ids, "delta": st.just("x")}),
    st.fixed_dictionaries({"type": st.just("TOOL_CALL_CHUNK"), "toolCallId": _ids, "toolCallName": st.just("f"),
                           "delta": st.just("{}")}),
    st.fixed_dictionaries({"type": st.just("SUBAGENT_STARTED"), "subagentRunId": st.just("s1"),
                           "name": st.just("sub")}),
    st.just({"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "m1", "role": "user", "content": "hi"},
                                                       {"id": "c2", "role": "activity", "activityType": "p",
                                                        "content": {}}]}),
    st.just({"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"}),
    st.just({"type": "RUN_STARTED", "threadId": "t", "runId": "r2"}),
)


@st.composite
def _conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Mostly well-formed text messages and tool calls (so the plain path is taken), with noise between."""
    out: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 8))):
        shape = draw(st.sampled_from(["text", "call", "call", "noise"]))
        if shape == "text":
            mid = draw(_ids)
            out += [{"type": "TEXT_MESSAGE_START", "messageId": mid},
                    {"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": draw(st.sampled_from(["a", "\ud83d"]))},
                    {"type": "TEXT_MESSAGE_END", "messageId": mid}]
        elif shape == "call":
            cid = draw(_ids)
            start: dict[str, Any] = {"type": "TOOL_CALL_START", "toolCallId": cid, "toolCallName": "f"}
            parent = draw(st.one_of(st.none(), _ids))
            if parent is not None:
                start["parentMessageId"] = parent
            args = draw(st.sampled_from(['{"a":1}', "{"]))
            out += [start, {"type": "TOOL_CALL_ARGS", "toolCallId": cid, "delta": args},
                    {"type": "TOOL_CALL_END", "toolCallId": cid}]
            if draw(st.booleans()):
                out.append({"type": "TOOL_CALL_RESULT", "messageId": draw(_ids), "toolCallId": draw(
                    st.sampled_from([cid, cid, "c9"])), "content": "ok"})
        else:
            out.append(draw(_structural))
    if draw(st.booleans()):
        # perturb: drop, duplicate or stamp one event
        i = draw(st.integers(0, len(out) - 1))
        how = draw(st.sampled_from(["drop", "dup", "stamp"]))
        if how == "drop":
            del out[i]
        elif how == "dup":
            out.insert(i, dict(out[i]))
        else:
            out[i] = {**out[i], "timestamp": draw(_stamp["timestamp"])}
    return out


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.lists(_structural, max_size=25), _conversations()))
def test_fused_starts_ends_and_results_match_the_event_path(evs: list[dict[str, Any]]) -> None:
    """TEXT_MESSAGE_START/END, TOOL_CALL_START/END/RESULT folded from their JSON fold as the events do.

    Ids are drawn from a small pool so that starts repeat, results name messages and calls already
    held, parents are tool calls or other roles, and chunks, subagents, snapshots and a second run
    interleave: every case where the plain path must step aside.
    """
    stream = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"}, *evs]
    assert _fold_compact(stream, events=False) == _fold_compact(stream, events=True)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(streams, _conversations().map(lambda evs: [{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
                                                               *evs])))
def test_a_save_encodes_streamed_messages_exactly_as_their_typed_form(evs: list[dict[str, Any]]) -> None:
    """``dump()`` encodes a streamed entry without freezing it; the result is ``encode(thread.messages)``."""
    def fold() -> ThreadState:
        session = RunSession(collect_errors=True, events=False)
        for event in evs:
            session.feed_payload(json.dumps(event, separators=(",", ":")).encode("utf-8", "surrogatepass"))
        session.end()
        return session.state

    saved, typed = fold(), fold()
    assert saved.dump()["messages"] == encode(typed.messages)
    assert [(w.code, w.message) for w in saved.warnings] == [(w.code, w.message) for w in typed.warnings]


_payload_pieces = st.one_of(
    st.builds(lambda e: json.dumps(e, separators=(",", ":")).encode("utf-8", "surrogatepass"), events()),
    st.sampled_from([b'{"type":"RAW","event":1,"event":2}',
                     b'{"type":"CUSTOM","name":"n","value":123456789012345678901}',
                     b'{"type":"CUSTOM","name":"n","value":1.5e400}', b' {"type":"RAW","event":{}}', b'[1,2]', b'1',
                     b'{"type":"RAW","event":{}},{"type":"RAW","event":{}}', b'{"type":"RAW"', b'',
                     b'{"type":"RAW","event":"\\ud83d"}', b'{"type":"RAW","event":"\xff"}',
                     b'{"type":"CUSTOM","name":"n","value":{"a":1,"a":2}}', b'{"type" : "RAW", "event" : 1}']),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_payload_pieces, max_size=12))
def test_a_batch_is_read_exactly_as_its_payloads_one_by_one(payloads: list[bytes]) -> None:
    """``parse_batch`` returns what ``parse_json`` returns for each payload, or ``None``; never another reading."""
    from agui_client.errors import ProtocolError
    from agui_client.wire import jsonio

    batch = jsonio.parse_batch(payloads)
    if batch is None:
        return
    for payload, value in zip(payloads, batch, strict=True):
        try:
            expected = jsonio.parse_json(payload)
        except ProtocolError:
            raise AssertionError(f"a batch read a payload parse_json refuses: {payload!r}") from None
        assert repr(value) == repr(expected)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(streams, _conversations().map(lambda evs: [{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
                                                               *evs])))
def test_replay_reading_whole_reads_folds_as_one_payload_at_a_time(evs: list[dict[str, Any]]) -> None:
    body = sse(*evs, compact=True)
    session = RunSession(collect_errors=True, events=False)
    for event in evs:
        session.feed_payload(json.dumps(event, separators=(",", ":")).encode("utf-8", "surrogatepass"))
    one_by_one = session.end()
    try:
        replayed = replay(body)
    except AguiError as exc:
        assert session.errors, exc  # the payload-at-a-time fold met a fault too
        assert exc.index == session.errors[0].index and type(exc) is type(session.errors[0])
        return
    assert not session.errors
    assert json.dumps(replayed.state.to_wire(), sort_keys=True) == json.dumps(one_by_one.state.to_wire(),
                                                                                sort_keys=True)
    assert [(w.code, w.index) for w in replayed.warnings] == [(w.code, w.index) for w in one_by_one.warnings]
