"""Strictness and hostile JSON: every case names the error class, its ``.pointer`` and ``.event_type``.

Each payload goes through ``decode_event`` as JSON bytes on *both* parse paths: orjson (the ``fast``
extra) and the standard library (``agui_client.jsonio._orjson`` set to ``None``), because the two
parsers disagree on exactly the inputs below (lone surrogates, huge numbers, deep nesting …) and the
codec must give one verdict whichever is installed. Rule ids are from the spec's rule tables;
``B0xx``/``B1xx`` are the bad-inputs catalogue (sections D and E).
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import corpus
import pytest

from agui_client.errors import AguiWarning, DecodeError, LimitExceeded, ProtocolError
from agui_client.types import events as ev
from agui_client.types import messages as msg
from agui_client.types import run as rn
from agui_client.wire import codec, jsonio, values
from agui_client.wire.codec import decode_event, encode
from agui_client.wire.jsonio import parse_json
from agui_client.wire.sink import collect_warnings


@pytest.fixture(params=["orjson", "stdlib"])
def parse_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once with orjson parsing and once with the standard library."""
    if request.param == "stdlib":
        monkeypatch.setattr(jsonio, "_orjson", None)
        monkeypatch.setattr(values, "ORJSON", None)  # (the copies and surrogate check use it too)
    else:
        assert jsonio._orjson is not None, "orjson (the `fast` extra) must be installed to test its parse path"
    return str(request.param)


def wire(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


def _finished(outcome: Any) -> bytes:
    return wire({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": outcome})


def _run_end(kind: str, **fields: Any) -> dict[str, Any]:
    """A RUN_FINISHED or RUN_ERROR with its required fields, and ``fields``."""
    required = {"threadId": "t", "runId": "r"} if kind == "RUN_FINISHED" else {"message": "m"}
    return {"type": kind, **required, **fields}


def _delta(ops: Any) -> bytes:
    return wire({"type": "STATE_DELTA", "delta": ops})


def _nested(depth: int) -> bytes:
    return b'{"type":"CUSTOM","name":"deep","value":' + b"[" * depth + b"]" * depth + b"}"


# (payload, error class, pointer, event_type)
REJECTED = [
    # E: schema violations of known fields
    pytest.param(wire({"type": "TEXT_MESSAGE_END", "messageId": "m", "timestamp": "123"}), DecodeError,
                 "/timestamp", "TEXT_MESSAGE_END", id="B114-timestamp-numeric-string"),
    pytest.param(wire({"type": "TEXT_MESSAGE_END", "messageId": "m", "timestamp": 1.5}), DecodeError,
                 "/timestamp", "TEXT_MESSAGE_END", id="B115-timestamp-float"),
    pytest.param(wire({"type": "TEXT_MESSAGE_END", "messageId": "m", "timestamp": 1.0}), DecodeError,
                 "/timestamp", "TEXT_MESSAGE_END", id="UK-09-timestamp-integral-float"),
    pytest.param(wire({"type": "TEXT_MESSAGE_END", "messageId": "m", "timestamp": True}), DecodeError,
                 "/timestamp", "TEXT_MESSAGE_END", id="UK-09-timestamp-boolean"),
    pytest.param(wire({"type": "TEXT_MESSAGE_END", "messageId": "m", "timestamp": 2**53}), DecodeError,
                 "/timestamp", "TEXT_MESSAGE_END", id="UK-09-timestamp-beyond-safe-integer"),
    pytest.param(wire({"type": "ACTIVITY_SNAPSHOT", "messageId": "a", "activityType": "p", "content": {},
                       "replace": "false"}), DecodeError, "/replace", "ACTIVITY_SNAPSHOT", id="B117-replace-string"),
    pytest.param(wire({"type": "TEXT_MESSAGE_START", "message_id": "m1"}), DecodeError, "/messageId",
                 "TEXT_MESSAGE_START", id="B127-snake-case-key"),
    pytest.param(wire({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": 5}), DecodeError, "/delta",
                 "TEXT_MESSAGE_CONTENT", id="B113-delta-number"),
    pytest.param(wire({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "tool"}), DecodeError, "/role",
                 "TEXT_MESSAGE_START", id="B118-text-role-tool"),
    pytest.param(wire({"type": "REASONING_MESSAGE_START", "messageId": "r"}), DecodeError, "/role",
                 "REASONING_MESSAGE_START", id="B119-reasoning-start-without-role"),
    pytest.param(wire({"type": "RUN_STARTED", "runId": "r"}), DecodeError, "/threadId", "RUN_STARTED",
                 id="B126-run-started-without-thread-id"),
    # UK-07 / B110-B111: null where the schema says absent-or-value
    pytest.param(wire({"type": "TEXT_MESSAGE_END", "messageId": "m", "metadata": None}), DecodeError,
                 "/metadata", "TEXT_MESSAGE_END", id="B110-metadata-null"),
    pytest.param(wire({"type": "TEXT_MESSAGE_START", "messageId": "m", "subagentRunId": None}), DecodeError,
                 "/subagentRunId", "TEXT_MESSAGE_START", id="B111-subagent-run-id-null-on-event"),
    pytest.param(wire({"type": "MESSAGES_SNAPSHOT", "messages": [
        {"id": "u1", "role": "user", "content": "hi"},
        {"id": "a1", "role": "assistant", "content": "yo", "subagentRunId": None}]}), DecodeError,
        "/messages/1/subagentRunId", "MESSAGES_SNAPSHOT", id="subagent-run-id-null-on-snapshot-message"),
    pytest.param(_finished({"type": "interrupt", "interrupts": [{"id": "i1", "reason": "r", "subagentRunId": None}]}),
                 DecodeError, "/outcome/interrupts/0/subagentRunId", "RUN_FINISHED",
                 id="subagent-run-id-null-on-interrupt"),
    pytest.param(wire({"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "a1", "role": "assistant", "metadata": None}]}),
                 DecodeError, "/messages/0/metadata", "MESSAGES_SNAPSHOT", id="metadata-null-on-message"),
    # M: interrupt outcomes (IR-03 and the schema's minItems)
    pytest.param(_finished({"type": "success", "interrupts": [{"id": "i1", "reason": "r"}]}), DecodeError,
                 "/outcome/interrupts", "RUN_FINISHED", id="IR-03-success-outcome-with-interrupts"),
    pytest.param(_finished({"type": "cancelled", "interrupts": [{"id": "i1", "reason": "r"}]}), DecodeError,
                 "/outcome/interrupts", "RUN_FINISHED", id="cancelled-outcome-with-interrupts"),
    pytest.param(_finished({"type": "interrupt", "interrupts": []}), DecodeError, "/outcome/interrupts",
                 "RUN_FINISHED", id="interrupt-outcome-empty"),
    pytest.param(_finished({"type": "interrupt"}), DecodeError, "/outcome/interrupts", "RUN_FINISHED",
                 id="interrupt-outcome-without-interrupts"),
    pytest.param(_finished({"type": "interrupt",
                            "interrupts": [{"id": "i1", "reason": "r"}, {"id": 7, "reason": "r"}]}),
                 DecodeError, "/outcome/interrupts/1/id", "RUN_FINISHED", id="interrupt-id-wrong-type"),
    pytest.param(_finished({"type": "interrupt", "interrupts": [{"id": "i1", "reason": "r", "responseSchema": True}]}),
                 DecodeError, "/outcome/interrupts/0/responseSchema", "RUN_FINISHED",
                 id="interrupt-boolean-response-schema"),
    pytest.param(_finished({"type": "interrupt", "interrupts": [{"id": "i1"}]}), DecodeError,
                 "/outcome/interrupts/0/reason", "RUN_FINISHED", id="interrupt-without-reason"),
    pytest.param(_finished({"interrupts": []}), DecodeError,
                 "/outcome/type", "RUN_FINISHED", id="outcome-without-type"),
    # I: STATE_DELTA / ACTIVITY_DELTA patches
    pytest.param(_delta({"op": "add", "path": "/a", "value": 1}), DecodeError, "/delta", "STATE_DELTA",
                 id="B125-delta-object"),
    pytest.param(_delta([{"op": "add", "path": "a", "value": 1}]), DecodeError, "/delta/0/path", "STATE_DELTA",
                 id="delta-pointer-without-slash"),
    pytest.param(_delta([{"op": "remove", "path": "/ok"}, {"op": "remove", "path": "/a~2"}]), DecodeError,
                 "/delta/1/path", "STATE_DELTA", id="delta-pointer-bad-escape"),
    pytest.param(_delta([{"op": "add", "path": "/a"}]), DecodeError, "/delta/0/value", "STATE_DELTA",
                 id="delta-add-without-value"),
    pytest.param(_delta([{"op": "test", "path": "/a"}]), DecodeError, "/delta/0/value", "STATE_DELTA",
                 id="delta-test-without-value"),
    pytest.param(_delta([{"op": "move", "path": "/a"}]), DecodeError, "/delta/0/from", "STATE_DELTA",
                 id="delta-move-without-from"),
    pytest.param(_delta([{"op": "copy", "path": "/a", "from": "b"}]), DecodeError, "/delta/0/from", "STATE_DELTA",
                 id="delta-copy-bad-from"),
    pytest.param(_delta(["add"]), DecodeError, "/delta/0", "STATE_DELTA", id="delta-op-not-object"),
    pytest.param(wire({"type": "ACTIVITY_DELTA", "messageId": "a", "activityType": "p",
                       "patch": [{"op": "replace", "path": "x", "value": 1}]}), DecodeError, "/patch/0/path",
                 "ACTIVITY_DELTA", id="activity-patch-bad-pointer"),
    # D: payload shape
    pytest.param(b"null", DecodeError, "", None, id="B085-null"),
    pytest.param(b"42", DecodeError, "", None, id="B085-number"),
    pytest.param(b'"RUN_STARTED"', DecodeError, "", None, id="B085-string"),
    pytest.param(b"[]", DecodeError, "", None, id="array"),
    pytest.param(b"{}", DecodeError, "/type", None, id="B086-empty-object"),
    pytest.param(b'{"type":5}', DecodeError, "/type", None, id="B087-type-number"),
    pytest.param(b'{"type":null}', DecodeError, "/type", None, id="type-null"),
    pytest.param(b'{"type":""}', DecodeError, "/type", None, id="TR-09-type-empty"),
    pytest.param(b'{"type":["RUN_STARTED"]}', DecodeError, "/type", None, id="B087-type-array"),
    pytest.param(b'{"type":{"a":1}}', DecodeError, "/type", None, id="B087-type-object"),
]


@pytest.fixture(params=["spaced", "compact"])
def spacing(request: pytest.FixtureRequest) -> str:
    """Payloads as ``json.dumps`` writes them, and compact as orjson, pydantic and JSON.stringify write them
    (the codec has a shortcut for text that orjson would write back byte for byte)."""
    return str(request.param)


def respace(payload: bytes, spacing: str) -> bytes:
    if spacing == "spaced":
        return payload
    return json.dumps(json.loads(payload), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


@pytest.mark.parametrize(("payload", "error", "pointer", "event_type"), REJECTED)
def test_malformed_payload_is_rejected_naming_the_field(
    parse_path: str, spacing: str, payload: bytes, error: type[ProtocolError], pointer: str, event_type: str | None
) -> None:
    with collect_warnings(), pytest.raises(error) as info:
        decode_event(respace(payload, spacing))
    assert type(info.value) is error
    assert info.value.pointer == pointer
    assert info.value.event_type == event_type


@pytest.mark.parametrize("op", [pytest.param({"path": "/a", "value": 1}, id="missing"),
                                pytest.param({"op": 3, "path": "/a", "value": 1}, id="not-a-string"),
                                pytest.param({"op": ["add"], "path": "/a", "value": 1}, id="unhashable"),
                                pytest.param({"op": None, "path": "/a", "value": 1}, id="null")])
def test_a_patch_operation_without_a_string_op_is_kept_as_an_unknown_one(parse_path: str, op: dict[str, Any]) -> None:
    # SP-07: it names no operation JSON Patch defines, as "merge" does not; the fold skips its patch with a
    # warning (the reference drops the operation and applies the rest), rather than failing the run.
    event = decode_event(_delta([op, {"op": "add", "path": "/b", "value": 2}]))
    assert isinstance(event, ev.StateDeltaEvent)
    assert event.delta[0] == op


# Not JSON at all, or JSON Python would mis-read: (payload, error, pointer, event_type)
HOSTILE = [
    pytest.param(b"{not json", DecodeError, None, None, id="B083-not-json"),
    pytest.param(b'{"type":"CUSTOM","name":"x","value":NaN}', DecodeError, None, None, id="B089-NaN"),
    pytest.param(b'{"type":"CUSTOM","name":"x","value":Infinity}', DecodeError, None, None, id="B089-Infinity"),
    pytest.param(b'{"type":"CUSTOM","name":"x","value":-Infinity}', DecodeError, None, None, id="B089-minus-Infinity"),
    pytest.param(b'{"type":"TEXT_MESSAGE_END","messageId":"m","timestamp":1e400}', DecodeError, "/timestamp",
                 "TEXT_MESSAGE_END", id="B090-overflow-in-known-int-field"),
    pytest.param(b'{"type":"STATE_SNAPSHOT","snapshot":{"a/b":[0,-1E+400]}}', DecodeError, "/snapshot/a~1b/1",
                 "STATE_SNAPSHOT", id="B090-overflow-in-opaque-snapshot"),
    pytest.param(b'{"type":"CUSTOM","name":"x","value":' + b"7" * 5000 + b"}", DecodeError, None, None,
                 id="B091-5000-digit-integer-opaque"),
    pytest.param(b'{"type":"TEXT_MESSAGE_END","messageId":"m","timestamp":-' + b"9" * 5000 + b"}", DecodeError,
                 None, None, id="B091-5000-digit-integer-in-int-field"),
    pytest.param(b'\xef\xbb\xbf{"type":"TEXT_MESSAGE_END","messageId":"m"}', DecodeError, None, None,
                 id="byte-order-mark"),
    pytest.param(b'{"type":"CUSTOM","name":"a","value":1,"name":"b"}', DecodeError, "/name", "CUSTOM",
                 id="duplicated-top-level-key"),
    pytest.param(b'{"type":"TEXT_MESSAGE_END","type":"RUN_ERROR","messageId":"m","message":"x"}', DecodeError,
                 "/type", None, id="duplicated-type-key"),
    pytest.param(b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a\x00b"}', DecodeError, None, None,
                 id="raw-NUL-in-string"),
    pytest.param(b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a\nb"}', DecodeError, None, None,
                 id="raw-newline-in-string"),
    pytest.param(b'{"type":"TEXT_MESSAGE_END","messageId":"m"} {}', DecodeError, None, None, id="trailing-data"),
]


# Byte-level faults: only bytes can carry them (a str is already decoded).
HOSTILE_BYTES = [
    pytest.param(b'{"type":"CUSTOM","name":"\xff\xfe","value":1}', DecodeError, None, None, id="invalid-utf8"),
    pytest.param(b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"\xed\xa0\xbd"}', DecodeError, None, None,
                 id="utf8-encoded-surrogate"),
    pytest.param(b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"\xc3"}', DecodeError, None, None,
                 id="truncated-utf8-sequence"),
]


@pytest.mark.parametrize(("payload", "error", "pointer", "event_type"), HOSTILE)
@pytest.mark.parametrize("as_text", [False, True], ids=["bytes", "str"])
def test_hostile_json_gives_a_decode_error_never_a_python_error(
    parse_path: str, as_text: bool, payload: bytes, error: type[ProtocolError], pointer: str | None,
    event_type: str | None,
) -> None:
    data: bytes | str = payload.decode("utf-8") if as_text else payload
    with collect_warnings(), pytest.raises(error) as info:
        decode_event(data)
    assert type(info.value) is error
    assert info.value.pointer == pointer
    assert info.value.event_type == event_type


@pytest.mark.parametrize(("payload", "error", "pointer", "event_type"), HOSTILE_BYTES)
def test_invalid_utf8_gives_a_decode_error(
    parse_path: str, payload: bytes, error: type[ProtocolError], pointer: str | None, event_type: str | None
) -> None:
    with collect_warnings(), pytest.raises(error) as info:
        decode_event(payload)
    assert type(info.value) is error
    assert (info.value.pointer, info.value.event_type) == (pointer, event_type)
    assert "UTF-8" in str(info.value)


def test_hundred_thousand_nested_arrays_hit_the_depth_limit_and_the_process_survives(parse_path: str) -> None:
    deep = b'{"type":"STATE_SNAPSHOT","snapshot":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with pytest.raises(LimitExceeded) as info:
        decode_event(deep)
    assert info.value.limit == codec.DEFAULT_MAX_DEPTH == 512
    assert info.value.pointer == ""
    deep_objects = b'{"type":"CUSTOM","name":"x","value":' + b'{"a":' * 100_000 + b"1" + b"}" * 100_000 + b"}"
    with pytest.raises(LimitExceeded):
        decode_event(deep_objects)
    # the interpreter is intact: the next event decodes normally
    assert decode_event(b'{"type":"TEXT_MESSAGE_END","messageId":"m"}') == ev.TextMessageEndEvent(message_id="m")


def test_nesting_between_the_limit_and_the_parsers_own_limits_is_refused(parse_path: str) -> None:
    """600 levels: orjson (limit 1024) and json (recursion ~1000) both parse it; the codec must still refuse."""
    with pytest.raises(LimitExceeded) as info:
        decode_event(_nested(600))
    assert info.value.limit == 512


def test_max_depth_is_configurable(parse_path: str) -> None:
    event = decode_event(_nested(300))
    assert isinstance(event, ev.CustomEvent)
    depth, value = 0, event.value
    while isinstance(value, list):
        depth, value = depth + 1, (value[0] if value else None)
    assert depth == 300
    with pytest.raises(LimitExceeded) as info:
        decode_event(_nested(300), max_depth=256)
    assert info.value.limit == 256
    # the event object is level 1: 255 nested arrays are exactly at a 256 limit
    assert isinstance(decode_event(_nested(255), max_depth=256), ev.CustomEvent)
    with pytest.raises(LimitExceeded):
        decode_event(_nested(256), max_depth=256)
    with pytest.raises(LimitExceeded):
        parse_json(b"[[[1]]]", max_depth=2)
    assert parse_json(b"[[1]]", max_depth=2) == [[1]]


@pytest.mark.parametrize("as_text", [False, True], ids=["bytes", "str"])
def test_lone_surrogate_escape_is_accepted(parse_path: str, as_text: bool) -> None:
    """B093: UTF-16 producers split an emoji across two deltas; each half must decode (the fold rejoins them)."""
    halves = [r'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"\ud83d"}',
              r'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"\ude00"}']
    deltas = []
    for half in halves:
        event = decode_event(half if as_text else half.encode("ascii"))
        assert isinstance(event, ev.TextMessageContentEvent)
        deltas.append(event.delta)
    assert deltas == ["\ud83d", "\ude00"]
    assert "".join(deltas).encode("utf-16", "surrogatepass").decode("utf-16") == "😀"


def test_escaped_nul_and_control_characters_are_accepted(parse_path: str) -> None:
    event = decode_event(rb'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a\u0000b\n\t"}')
    assert isinstance(event, ev.TextMessageContentEvent)
    assert event.delta == "a\x00b\n\t"


def test_big_numbers_that_are_fine_are_read_exactly(parse_path: str) -> None:
    """The gate that sends big numbers to the stdlib parser must not refuse what is valid."""
    event = decode_event(b'{"type":"STATE_SNAPSHOT","snapshot":{"big":123456789012345678901234567890,'
                         b'"e":1e300,"neg":-1.5e-300,"txt":"1e999 and 99999999999999999999"}}')
    assert isinstance(event, ev.StateSnapshotEvent)
    assert event.snapshot == {"big": 123456789012345678901234567890, "e": 1e300, "neg": -1.5e-300,
                              "txt": "1e999 and 99999999999999999999"}
    assert type(event.snapshot["big"]) is int
    ts = decode_event(b'{"type":"TEXT_MESSAGE_END","messageId":"m","timestamp":9007199254740991}')
    assert isinstance(ts, ev.TextMessageEndEvent) and ts.timestamp == 2**53 - 1


def test_duplicated_key_nested_in_free_form_json_follows_last_wins(parse_path: str) -> None:
    """Duplicates inside opaque JSON do not change the event's meaning; JSON.parse keeps the last."""
    event = decode_event(b'{"type":"CUSTOM","name":"x","value":{"k":1,"k":2}}')
    assert isinstance(event, ev.CustomEvent)
    assert event.value == {"k": 2}


def test_duplicated_key_nested_is_refused_when_the_event_repeats_a_key_name(parse_path: str) -> None:
    """When a top-level key name appears twice in the text, the whole payload is checked exactly."""
    payload = b'{"type":"CUSTOM","name":"x","value":{"name":1,"name":2}}'
    with pytest.raises(DecodeError) as info:
        decode_event(payload)
    # The pointer names the repeated member where it is, not a top-level key of its name.
    assert (info.value.pointer, info.value.event_type) == ("/value/name", "CUSTOM")
    deeper = (b'{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":'
              b'[{"id":"i0","reason":"a"},{"id":"i1","reason":"a","metadata":{"a/b~":1,"a/b~":2}}]}}')
    with pytest.raises(DecodeError) as info:
        decode_event(deeper)
    assert info.value.pointer == "/outcome/interrupts/1/metadata/a~1b~0"
    assert "'a/b~'" in str(info.value)
    with pytest.raises(DecodeError) as info:  # (a repeated type inside a value is no repeated event type)
        decode_event(b'{"type":"CUSTOM","name":"x","value":{"type":1,"type":2}}')
    assert (info.value.pointer, info.value.event_type) == ("/value/type", "CUSTOM")


def test_finding_a_repeated_key_costs_no_more_memory_for_being_deep(parse_path: str) -> None:
    # The repeated member is named where it is (its pointer); the walk that finds it once built the
    # pointer of every container it passed, each as long as its depth: a 200 KB event of 50,000 small
    # arrays 500 levels down took some 75 MB to refuse, against 30 for the same arrays one level down
    # (an event of a few MB could take gigabytes); now it takes what reading the arrays does.
    import tracemalloc

    def peak(depth: int) -> int:
        body = "[" * depth + ",".join(["[0]"] * 50_000) + "]" * depth
        payload = b'{"type":"CUSTOM","name":"x","value":' + body.encode() + b',"name":"y"}'
        tracemalloc.start()
        try:
            with pytest.raises(DecodeError) as info:
                parse_json(payload)
            used = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        # (after the finally, not in it: a payload not refused fails as DID NOT RAISE, not as the
        # ExceptionInfo's own error about a value read before the block ended)
        assert (info.value.pointer, info.value.event_type) == ("/name", "CUSTOM")
        return used

    shallow, deep = peak(1), peak(500)
    assert deep < 1.5 * shallow, (deep, shallow)


def test_duplicated_key_check_sees_keys_written_with_escapes(parse_path: str) -> None:
    with pytest.raises(DecodeError) as info:
        decode_event(b'{"type":"CUSTOM","name":"a","value":1,"n\\u0061me":"b"}')
    assert info.value.pointer == "/name"
    with pytest.raises(DecodeError):
        decode_event(b'{"type":"CUSTOM", "name" : "a", "value":1, "name" :"b"}')


# ------------------------------------------------------------------------------------------------
# Tolerated with a warning (UK-02 .. UK-06, RS-09, LC-10, MS-05)
# ------------------------------------------------------------------------------------------------

# (payload, expected decoded wire form, [(code, pointer)])
TOLERATED = [
    pytest.param(_finished(None), {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
                 [("UK-06", "/outcome")], id="B107-legacy-null-outcome"),
    pytest.param(wire({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "result": None, "rawEvent": None}),
                 {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
                 [("UK-06", "/result"), ("UK-06", "/rawEvent")], id="B109-legacy-null-result-and-raw-event"),
    pytest.param(wire({"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f", "parentMessageId": None}),
                 {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"},
                 [("UK-06", "/parentMessageId")], id="legacy-null-parent-message-id"),
    pytest.param(wire({"type": "TOOL_CALL_CHUNK", "toolCallId": "c", "parentMessageId": None}),
                 {"type": "TOOL_CALL_CHUNK", "toolCallId": "c"},
                 [("UK-06", "/parentMessageId")], id="legacy-null-parent-message-id-on-chunk"),
    # beyond UK-06's list: usage is telemetry (a usage the client cannot read costs only the usage) on
    # both events that carry it, and a subagent's absent outcome is success (SA-07)
    *(pytest.param(wire(_run_end(kind, usage=None)), _run_end(kind), [("UK-06", "/usage")],
                   id=f"legacy-null-usage-on-{kind.lower()}") for kind in ("RUN_FINISHED", "RUN_ERROR")),
    pytest.param(wire({"type": "SUBAGENT_FINISHED", "subagentRunId": "s", "result": None, "outcome": None}),
                 {"type": "SUBAGENT_FINISHED", "subagentRunId": "s"},
                 [("UK-06", "/result"), ("UK-06", "/outcome")], id="legacy-null-subagent-result-and-outcome"),
    pytest.param(wire({"type": "TEXT_MESSAGE_END", "messageId": "m", "rawEvent": None}),
                 {"type": "TEXT_MESSAGE_END", "messageId": "m"}, [("UK-06", "/rawEvent")],
                 id="legacy-null-raw-event-on-any-event"),
    pytest.param(wire({"type": "RUN_STARTED", "threadId": "t", "runId": "r", "input": {
        "threadId": "t", "runId": "r", "messages": [], "state": None, "tools": None, "forwardedProps": None}}),
                 {"type": "RUN_STARTED", "threadId": "t", "runId": "r",
                  "input": {"threadId": "t", "runId": "r", "messages": []}},
                 [("UK-06", "/input/state"), ("UK-06", "/input/tools"), ("UK-06", "/input/forwardedProps")],
                 id="legacy-nulls-in-run-started-input"),
    pytest.param(_finished({"type": "paused"}), {"type": "RUN_FINISHED", "threadId": "t", "runId": "r",
                                                 "outcome": {"type": "success"}},
                 [("LC-10", "/outcome")], id="B106-unknown-outcome-read-as-success"),
    pytest.param(wire({"type": "SUBAGENT_FINISHED", "subagentRunId": "s", "outcome": {"type": "exploded"}}),
                 {"type": "SUBAGENT_FINISHED", "subagentRunId": "s", "outcome": {"type": "success"}},
                 [("SA-07", "/outcome")], id="unknown-subagent-outcome-read-as-success"),
    pytest.param(wire({"type": "TOOL_CALL_RESULT", "messageId": "t1", "toolCallId": "c", "content": [
        {"type": "hologram", "beam": 1}, {"type": "text", "text": "hi"}]}),
                 {"type": "TOOL_CALL_RESULT", "messageId": "t1", "toolCallId": "c",
                  "content": [{"type": "text", "text": "hi"}]}, [("UK-04", "/content/0")],
                 id="B122-unknown-content-part"),
    pytest.param(wire({"type": "MESSAGES_SNAPSHOT", "messages": [
        {"id": "u1", "role": "wizard", "content": "hi"}, {"id": "u2", "role": "user", "content": "yo"}]}),
                 {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "u2", "role": "user", "content": "yo"}]},
                 [("MS-05", "/messages/0")], id="B123-unknown-role-in-snapshot"),
    pytest.param(wire({"type": "TEXT_MESSAGE_START", "messageId": "m1", "futureField": 1}),
                 {"type": "TEXT_MESSAGE_START", "messageId": "m1"}, [("UK-03", "/futureField")],
                 id="B105-unknown-field"),
    # UK-03: an unknown member is tolerated whatever its value; the null rule (UK-06) is for known fields
    pytest.param(wire({"type": "CUSTOM", "name": "x", "value": 1, "futureField": None}),
                 {"type": "CUSTOM", "name": "x", "value": 1}, [("UK-03", "/futureField")],
                 id="B105-unknown-field-null"),
    pytest.param(_finished({"type": "interrupt", "interrupts": [{"id": "i1", "reason": "approval", "later": None}]}),
                 {"type": "RUN_FINISHED", "threadId": "t", "runId": "r",
                  "outcome": {"type": "interrupt", "interrupts": [{"id": "i1", "reason": "approval"}]}},
                 [("UK-03", "/outcome/interrupts/0/later")], id="unknown-field-null-on-an-interrupt"),
    pytest.param(wire({"type": "RUN_FINISHED", "threadId": "t", "runId": "r",
                       "outcome": {"type": "success", "reason": "done"}}),
                 {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "success"}},
                 [("UK-03", "/outcome/reason")], id="unknown-field-on-outcome"),
    # P: a usage entry the schema refuses costs only that entry (B282, a deliberate deviation), a part
    # larger than its total only a warning (B287)
    pytest.param(wire(_run_end("RUN_ERROR", usage=[{"inputTokens": -1}])), _run_end("RUN_ERROR", usage=[]),
                 [("TU-04", "/usage/0/inputTokens")], id="B282-negative-count-on-run-error"),
    pytest.param(wire(_run_end("RUN_FINISHED", usage=[{"provider": "a", "inputTokens": 5}, {"outputTokens": -2}])),
                 _run_end("RUN_FINISHED", usage=[{"provider": "a", "inputTokens": 5}]),
                 [("TU-04", "/usage/1/outputTokens")], id="B282-the-other-entries-kept"),
    pytest.param(wire(_run_end("RUN_FINISHED", usage=[{"inputTokens": 2**53 + 1}])),
                 _run_end("RUN_FINISHED", usage=[]),
                 [("TU-04", "/usage/0/inputTokens")], id="B283-count-beyond-safe-integer"),
    pytest.param(wire(_run_end("RUN_FINISHED", usage={"inputTokens": 1})), _run_end("RUN_FINISHED"),
                 [("TU-01", "/usage")], id="B285-usage-an-object"),
    pytest.param(wire(_run_end("RUN_ERROR", usage="lots")), _run_end("RUN_ERROR"),
                 [("TU-01", "/usage")], id="B285-usage-a-string-on-run-error"),
    pytest.param(wire(_run_end("RUN_FINISHED", usage=[5, {"outputTokens": 1}])),
                 _run_end("RUN_FINISHED", usage=[{"outputTokens": 1}]),
                 [("TU-04", "/usage/0")], id="usage-entry-not-an-object"),
    *(pytest.param(wire(_run_end("RUN_FINISHED", usage=[{"inputTokens": bad}])), _run_end("RUN_FINISHED", usage=[]),
                   [("TU-04", "/usage/0/inputTokens")], id=f"usage-count-{name}")
      for name, bad in (("float", 1.5), ("integral-float", 1.0), ("string", "5"), ("boolean", True), ("null", None))),
    pytest.param(wire(_run_end("RUN_FINISHED", usage=[{"provider": 5}])), _run_end("RUN_FINISHED", usage=[]),
                 [("TU-04", "/usage/0/provider")], id="usage-provider-not-a-string"),
    *(pytest.param(wire(_run_end(kind, usage=usage)), _run_end(kind, usage=usage), [("TU-02", pointer)], id=name)
      for name, kind, usage, pointer in (
          ("B287-reasoning-exceeds-output", "RUN_FINISHED", [{"outputTokens": 5, "reasoningTokens": 9}],
           "/usage/0/reasoningTokens"),
          ("B287-cached-exceeds-input", "RUN_ERROR", [{}, {"inputTokens": 5, "cachedInputTokens": 9}],
           "/usage/1/cachedInputTokens"),
          ("TU-02-cache-parts-exceed-input", "RUN_FINISHED",
           [{"inputTokens": 5, "cachedInputTokens": 3, "cacheWriteInputTokens": 3}], "/usage/0/cacheWriteInputTokens"),
      )),
    pytest.param(wire({"type": "THINKING_TEXT_MESSAGE_START", "messageId": "r1"}),
                 {"type": "REASONING_MESSAGE_START", "messageId": "r1", "role": "reasoning"}, [("RS-09", None)],
                 id="B103-thinking-message-start-translated"),
    pytest.param(wire({"type": "THINKING_TEXT_MESSAGE_CONTENT", "messageId": "r1", "delta": "hmm"}),
                 {"type": "REASONING_MESSAGE_CONTENT", "messageId": "r1", "delta": "hmm"}, [("RS-09", None)],
                 id="B103-thinking-content-translated"),
    pytest.param(wire({"type": "THINKING_END", "messageId": "r1"}), {"type": "REASONING_END", "messageId": "r1"},
                 [("RS-09", None)], id="B103-thinking-end-translated"),
]


@pytest.mark.parametrize(("payload", "expected", "warned"), TOLERATED)
def test_tolerated_input_decodes_with_a_warning(
    parse_path: str, spacing: str, payload: bytes, expected: dict[str, Any], warned: list[tuple[str, str | None]]
) -> None:
    with collect_warnings() as sink:
        event = decode_event(respace(payload, spacing))
    assert encode(event) == expected
    assert [(w.code, w.pointer) for w in sink.items] == warned


def test_unknown_event_type_is_kept_as_unknown_event_with_a_warning(parse_path: str) -> None:
    payload = {"type": "AGUI_PING", "seq": 1, "nested": {"x": None}}
    with collect_warnings() as sink:
        event = decode_event(wire(payload))
    assert event == ev.UnknownEvent(type="AGUI_PING", raw=payload)
    assert encode(event) == payload
    [warning] = sink.items
    assert (warning.code, warning.event_type) == ("UK-02", "AGUI_PING")
    assert "did you mean" not in warning.message


@pytest.mark.parametrize("near_miss", ["textMessageContent", "text-message-content", "Text_Message_Content",
                                       " TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENTS", "TEXT_MESSAGE_CONT"])
def test_unknown_event_type_that_is_a_near_miss_gets_a_hint(parse_path: str, near_miss: str) -> None:
    with collect_warnings() as sink:
        event = decode_event(wire({"type": near_miss, "messageId": "m", "delta": "x"}))
    assert isinstance(event, ev.UnknownEvent)
    [warning] = sink.items
    assert warning.code == "UK-02"
    assert "did you mean TEXT_MESSAGE_CONTENT?" in warning.message


def test_draft_meta_event_is_unknown(parse_path: str) -> None:
    """UK-14: the draft META event is not in the 1.0 union."""
    with collect_warnings() as sink:
        event = decode_event(b'{"type":"META","metaType":"x","payload":{}}')
    assert isinstance(event, ev.UnknownEvent)
    assert [w.code for w in sink.items] == ["UK-02"]


def test_unknown_field_is_ignored_and_warned_once_per_sink(parse_path: str) -> None:
    payload = wire({"type": "TEXT_MESSAGE_START", "messageId": "m1", "futureField": {"a": 1}})
    with collect_warnings() as sink:
        first = decode_event(payload)
        second = decode_event(payload)
    assert first == second == ev.TextMessageStartEvent(message_id="m1")
    [warning] = sink.items
    assert (warning.code, warning.pointer, warning.event_type) == ("UK-03", "/futureField", "TEXT_MESSAGE_START")
    with collect_warnings() as fresh:
        decode_event(payload)
    assert len(fresh.items) == 1  # a new sink (a new run) reports it again


def test_outside_a_sink_warnings_go_through_the_warnings_module(parse_path: str) -> None:
    with pytest.warns(AguiWarning) as unknown_field:
        decode_event(wire({"type": "TEXT_MESSAGE_END", "messageId": "m", "futureField": 1}))
    with pytest.warns(AguiWarning) as no_outcome:
        decode_event(_finished(None))

    assert [str(w.message) for w in unknown_field] == [
        "[UK-03] TEXT_MESSAGE_END, at /futureField: unknown field 'futureField' on TEXT_MESSAGE_END ignored"]
    assert [str(w.message) for w in no_outcome] == [
        "[UK-06] at /outcome: legacy null 'outcome' on RUN_FINISHED read as absent"]


def test_unknown_content_part_in_a_user_message_is_dropped_and_the_message_kept(parse_path: str) -> None:
    payload = wire({"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "u1", "role": "user", "content": [
        {"type": "text", "text": "a"}, {"type": "hologram"}, {"type": "text", "text": "b"}]}]})
    with collect_warnings() as sink:
        event = decode_event(payload)
    assert isinstance(event, ev.MessagesSnapshotEvent)
    [message] = event.messages
    assert isinstance(message, msg.UserMessage)
    assert message.content == (msg.TextPart(text="a"), msg.TextPart(text="b"))
    assert [w.code for w in sink.items] == ["UK-04"]


def test_unknown_outcome_type_is_never_read_as_an_interrupt(parse_path: str) -> None:
    """A bogus outcome with interrupts-shaped data must not become an interrupt (nor leak its interrupts)."""
    with collect_warnings():
        event = decode_event(_finished({"type": "bogus", "interrupts": [{"id": "i1", "reason": "r"}]}))
    assert isinstance(event, ev.RunFinishedEvent)
    assert event.outcome == rn.RunFinishedSuccessOutcome()


def test_thinking_event_without_message_id_is_left_to_the_session(parse_path: str) -> None:
    """Legacy THINKING_* events carry no ids; the codec reads one event at a time, so it cannot mint one that
    the matching THINKING_END would share. It hands such an event on untouched (as ``UnknownEvent``, without
    a warning) and the run session, which knows the open span, translates it (golden ``thinking-legacy``)."""
    payload = {"type": "THINKING_START", "title": "plan"}
    with collect_warnings() as sink:
        event = decode_event(wire(payload))
    assert event == ev.UnknownEvent(type="THINKING_START", raw=payload)
    assert sink.items == []


def test_a_mapping_is_decoded_without_reparsing() -> None:
    value = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi", "timestamp": 5}
    assert decode_event(value) == ev.TextMessageContentEvent(message_id="m", delta="hi", timestamp=5)
    with pytest.raises(DecodeError) as info:
        decode_event({**value, "timestamp": "5"})
    assert info.value.pointer == "/timestamp"


def test_decode_errors_say_where_in_their_message(parse_path: str) -> None:
    with collect_warnings(), pytest.raises(DecodeError) as info:
        decode_event(_finished({"type": "interrupt", "interrupts": [{"id": "i1", "reason": "r"}, {"id": 7}]}))
    text = str(info.value)
    assert "RUN_FINISHED" in text and "/outcome/interrupts/1/id" in text


@pytest.mark.parametrize("payload", [
    b'{"type":"CUSTOM","name":"12345678901234567890123","value":{"a":[1,2]}}',
    b'{"type":"CUSTOM","name":"x","value":{"id":"msg_69434802190441449421",'
    b'"n":[5, 18446744073709551615, -9223372036854775808]}}',
])
def test_a_long_digit_run_in_a_string_is_read_by_orjson(payload: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run of 20 digits is mostly an id; when orjson read no float at all, it read no integer inexactly."""
    assert jsonio._orjson is not None, "the dev extra installs orjson: this path must be tested"

    def no_stdlib(raw: Any, max_depth: int) -> Any:
        raise AssertionError("the stdlib parser was not needed")
    monkeypatch.setattr(jsonio, "_parse_stdlib", no_stdlib)
    assert parse_json(payload) == json.loads(payload)


@pytest.mark.parametrize("payload", [
    b'{"type":"CUSTOM","name":"12345678901234567890","value":{"f":1.5,"n":123456789012345678901234}}',
    b'{"type":"CUSTOM","name":"x","value":[1.5,-123456789012345678901234]}',
    b'{"type":"CUSTOM","name":"x","value":{"n":{"m":[18446744073709551616]}}}',
])
def test_a_float_beside_a_long_digit_run_still_sends_the_payload_to_the_exact_parser(
    parse_path: str, payload: bytes,
) -> None:
    value = parse_json(payload)
    assert value == json.loads(payload)
    assert repr(value) == repr(json.loads(payload))  # integers exact, not floats that compare equal


def test_a_subclass_of_a_json_type_is_refused_by_name() -> None:
    """Python values are read by their exact JSON type; a subclass is named, not called what it derives from."""
    class Tags(list):  # type: ignore[type-arg]
        pass

    with pytest.raises(DecodeError) as caught:
        codec.decode(Tags(), tuple[msg.Message, ...])
    assert str(caught.value) == "at /, [UK-05/AGUI504]: expected an array, got a Tags, not a plain list"
    assert caught.value.pointer == ""


def test_data_to_send_with_lone_surrogates_is_written_with_escapes_that_keep_it_exact(parse_path: str) -> None:
    # UTF16-SURROGATE's class outside streamed text (state, ids, keys, tool results): the request must be UTF-8.
    # Halves side by side are one character again; a lone half is written as its JSON escape, the string
    # the producer wrote, and the caller hears of it. U+FFFD (as before) made two keys one, the object
    # sent repeating a key, and two interrupt ids one, the resume naming neither.
    # (keys built from pairs: a linter reading the source takes the two lone halves for one key)
    keys = dict([("k\udc00", "x\ud800y"), ("k\udc01", 2)])
    value = {"state": {**keys, "pair": "\ud83d" + "\ude00"}, "id": "a\ud800"}
    with pytest.warns(AguiWarning) as caught:
        written = jsonio.dump_json(value)
    assert [str(w.message) for w in caught] == [
        "[UTF16-SURROGATE] lone UTF-16 surrogates in data to send were written as \\uXXXX escapes"]
    assert written.isascii() is False and b"\\udc00" in written and b"\\ud800" in written
    # (every key once, every value exact; the pair joined)
    assert json.loads(written) == {"state": {**keys, "pair": "\U0001f600"}, "id": "a\ud800"}
    assert len(json.loads(written)["state"]) == 3


def test_a_kept_usage_entrys_own_warning_is_given_once(parse_path: str, recwarn: pytest.WarningsRecorder) -> None:
    """The usage check reads each entry on trial before the event is read; the trial's warnings (an unknown
    key in the entry) are not given a second time, even outside a sink (where nothing de-duplicates them)."""
    import warnings

    warnings.simplefilter("always")
    event = decode_event(wire(_run_end("RUN_FINISHED", usage=[{"inputTokens": 1, "futureCount": 2}])))
    assert isinstance(event, ev.RunFinishedEvent) and event.usage == (rn.TokenUsage(input_tokens=1),)
    assert [w.category for w in recwarn.list] == [AguiWarning]


def test_an_unknown_patch_op_is_kept_in_the_event_for_the_fold_to_refuse_the_whole_patch(parse_path: str) -> None:
    # SP-07 / AGUI303: the event is read as it came (no warning here); the fold skips the whole patch
    # and says so (tests/core/test_fold.py), where the reference drops the op and applies the rest.
    ops = [{"op": "merge", "path": "/a", "value": 1}, {"op": "remove", "path": "/b"}]
    with collect_warnings() as sink:
        event = decode_event(_delta(ops))
    assert event == ev.StateDeltaEvent(delta=tuple(ops))
    assert sink.items == []


@pytest.mark.parametrize(("payload", "rule"), [
    pytest.param(b'{"type":"CUSTOM",', "TR-09/AGUI502", id="B083-not-json"),
    pytest.param(b"\xff\xfe", "TR-09/AGUI502", id="B089-invalid-utf8"),
    pytest.param(b'{"type":"CUSTOM","name":"x","value":NaN}', "TR-09/AGUI502", id="B090-nan"),
    pytest.param(b"[1]", "TR-09/AGUI502", id="B085-not-an-object"),
    pytest.param(b'{"type":5}', "TR-09/AGUI504", id="B087-type-number"),
    pytest.param(b"{}", "TR-09/AGUI504", id="B086-no-type"),
    pytest.param(_nested(600), "TR-09/AGUI502", id="B094-too-deep"),
    pytest.param(wire({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": 5}), "UK-05/AGUI504",
                 id="B071-schema"),
])
def test_a_decode_error_names_its_rule_and_validator_code(parse_path: str, payload: bytes, rule: str) -> None:
    # The conventions: an error carries the AGUInnn code where one exists (payload not JSON: AGUI502; a
    # known event's field malformed: AGUI504), with the rule it breaks.
    with pytest.raises(ProtocolError) as caught:
        decode_event(payload)
    assert caught.value.rule == rule


@pytest.mark.parametrize("number", ["-9223372036854775809", "-9999999999999999999", "-9223372036854775808",
                                    "18446744073709551616"])
def test_an_integer_beyond_64_bits_is_read_exactly(parse_path: str, number: str) -> None:
    # orjson reads an integer below -2**63 (19 digits) as a float, not only one of 20+ digits.
    event = decode_event(f'{{"type":"STATE_SNAPSHOT","snapshot":{{"n":{number},"f":1.5}}}}'.encode())
    assert isinstance(event, ev.StateSnapshotEvent)
    assert event.snapshot["n"] == int(number) and type(event.snapshot["n"]) is int


def _minimal(kind: str) -> dict[str, Any]:
    """The smallest valid wire object of an event type (every required field)."""
    for _, sample in corpus.event_samples():
        if sample["type"] == kind:
            return dict(sample)
    raise AssertionError(f"no corpus sample of {kind}")


@pytest.mark.parametrize("kind", sorted(k for k, cls in ev.EVENT_TYPES.items()
                                        if "role" not in {a.name for a in attrs.fields(cls)}))
def test_a_null_role_on_an_event_that_has_none_is_an_unknown_member_like_any_other(parse_path: str,
                                                                                   kind: str) -> None:
    """Hardening item 15: ``"role": null`` on an event without a role field is tolerated with the same
    warning as any other unknown member set to null, never a DecodeError."""
    sample = _minimal(kind)
    with collect_warnings() as sink:
        expected = decode_event(wire({**sample, "futureMember": None}))
    other = [(w.code, w.pointer) for w in sink.items]
    with collect_warnings() as sink:
        event = decode_event(wire({**sample, "role": None}))
    assert event == expected
    assert [(w.code, w.pointer) for w in sink.items] == [(code, "/role") for code, _ in other] == [("UK-03", "/role")]


def test_a_null_type_on_a_message_is_an_unknown_member_like_any_other(parse_path: str) -> None:
    with collect_warnings() as sink:
        message = codec.decode({"id": "u", "role": "user", "content": "x", "type": None}, msg.Message)
    assert message == msg.UserMessage(id="u", content="x")
    assert [(w.code, w.pointer) for w in sink.items] == [("UK-03", "/type")]


@pytest.mark.parametrize("text, holds", [
    ("plain ascii", False),
    ("caf\u00e9 \u4e16 \U0001f600", False),
    ("a lone half \ud83d", True),
    ("\ude00 a low half first", True),
    ("a pair written as halves \ud83d\ude00", True),
    ("", False),
])
def test_has_surrogate_answers_the_same_with_orjson_and_without(parse_path: str, text: str, holds: bool) -> None:
    # (orjson answers by refusing to write the text, the standard library with a regular expression)
    assert values.has_surrogate(text) is holds
    assert values.has_surrogate("x" * 100_000 + text) is holds
