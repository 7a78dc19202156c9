"""Cross-check against the official pydantic models (ag-ui-protocol 1.0.0, ``ag_ui.core``).

For every event and value of the corpus both libraries must read the same thing and write the same
wire form: ``encode(ours) == official.model_dump(by_alias=True, exclude_none=True, mode="json")``.

Where the official models are lax on purpose ("Coercion is pydantic's default: the strict contract is
the specification's validation corpus, not this class", ``GeneratedBaseModel``) we are stricter, and
where they refuse what a 1.0 *consumer* must tolerate (unknown types, legacy shapes) we are more
tolerant. Each such divergence has its own test below showing both behaviours, with the reason.
"""

from __future__ import annotations

import json
from typing import Any

import corpus
import pytest
from ag_ui import core as official
from pydantic import BaseModel, TypeAdapter, ValidationError

from agui_client.errors import DecodeError
from agui_client.types import events as ev
from agui_client.types import messages as msg
from agui_client.types import run as rn
from agui_client.wire.codec import decode, decode_event, encode
from agui_client.wire.sink import collect_warnings

EVENT = TypeAdapter(official.Event)

#: The official type for each ``VALUES`` sample, by the sample name's prefix.
OFFICIAL_VALUE_TYPES: dict[str, Any] = {
    "RunAgentInput": official.RunAgentInput,
    "Interrupt": official.Interrupt,
    "ResumeEntry": official.ResumeEntry,
    "Tool": official.Tool,
    "Context": official.Context,
    "RunFinishedOutcome": official.RunFinishedOutcome,
    "SubagentFinishedOutcome": official.SubagentFinishedOutcome,
    "TokenUsage": official.TokenUsage,
    "ToolCall": official.ToolCall,
    "FunctionCall": official.FunctionCall,
    "Message": official.Message,
    "ContentPart": official.ContentPart,
    "PartSource": official.PartSource,
    "AgentCapabilities": official.AgentCapabilities,
    "SubagentInfo": official.capabilities.SubagentInfo,
}

#: Samples whose meaning includes a ``null`` that ``exclude_none=True`` deletes (see the test below).
EXCLUDE_NONE_IS_LOSSY = {
    "STATE_SNAPSHOT/null", "RAW/null", "CUSTOM/null",
    "STATE_DELTA/min", "STATE_DELTA/full", "ACTIVITY_DELTA/min", "ACTIVITY_DELTA/full",
}


def official_dump(model: Any, adapter: TypeAdapter[Any] | None = None, *, exclude_none: bool = True) -> Any:
    if adapter is not None:
        return adapter.dump_python(model, by_alias=True, exclude_none=exclude_none, mode="json")
    assert isinstance(model, BaseModel)
    return model.model_dump(by_alias=True, exclude_none=exclude_none, mode="json")


def wire(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)


# ------------------------------------------------------------------------------------------------
# Agreement over the whole corpus
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "sample"), corpus.event_samples(), ids=[n for n, _ in corpus.EVENTS])
def test_official_models_read_every_event_as_we_do(name: str, sample: dict[str, Any]) -> None:
    theirs = EVENT.validate_python(sample)
    ours = decode_event(sample)
    assert type(ours).__name__ == type(theirs).__name__
    expected = official_dump(theirs, exclude_none=name not in EXCLUDE_NONE_IS_LOSSY)
    assert encode(ours) == expected == sample


@pytest.mark.parametrize(("name", "sample"), corpus.event_samples(), ids=[n for n, _ in corpus.EVENTS])
def test_official_models_read_every_event_text_as_we_do(name: str, sample: dict[str, Any]) -> None:
    text = wire(sample)
    theirs = EVENT.validate_json(text)
    expected = official_dump(theirs, exclude_none=name not in EXCLUDE_NONE_IS_LOSSY)
    assert encode(decode_event(text)) == expected


@pytest.mark.parametrize(("name", "cls", "sample"), corpus.value_samples(), ids=[n for n, _, _ in corpus.VALUES])
def test_official_models_read_every_value_as_we_do(name: str, cls: Any, sample: dict[str, Any]) -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(OFFICIAL_VALUE_TYPES[name.split("/")[0]])
    theirs = adapter.validate_python(sample)
    assert encode(decode(sample, cls)) == official_dump(theirs, adapter) == sample


@pytest.mark.parametrize(("name", "sample"), corpus.INPUTS, ids=[n for n, _ in corpus.INPUTS])
def test_official_run_agent_input_model_validate_agrees(name: str, sample: dict[str, Any]) -> None:
    theirs = official.RunAgentInput.model_validate(sample)
    ours = decode(sample, rn.RunAgentInput)
    assert encode(ours) == official_dump(theirs)
    assert [type(m).__name__ for m in ours.messages] == [type(m).__name__ for m in theirs.messages]


def test_exclude_none_deletes_nulls_that_are_data_where_we_keep_them() -> None:
    """``exclude_none=True`` removes every None-valued *field*, including required any-JSON fields
    (CUSTOM.value, STATE_SNAPSHOT.snapshot, RAW.event) and a JSON Patch op's ``value``: the dump is then
    not even valid against the official model. The models' own omission serializer (no
    ``exclude_none``) keeps them, and agrees with us: only optional fields are omitted (UK-06)."""
    for name in sorted(EXCLUDE_NONE_IS_LOSSY):
        sample = dict(corpus.EVENTS)[name]
        theirs = EVENT.validate_python(sample)
        assert official_dump(theirs) != sample
        assert official_dump(theirs, exclude_none=False) == encode(decode_event(sample)) == sample
    custom = EVENT.validate_python({"type": "CUSTOM", "name": "x", "value": None})
    with pytest.raises(ValidationError):
        EVENT.validate_python(official_dump(custom))  # {"type": "CUSTOM", "name": "x"}: value missing


# ------------------------------------------------------------------------------------------------
# Where we are deliberately stricter
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "coerced"), [("123", 123), (1.0, 1), (True, 1)], ids=["string", "float", "bool"])
def test_timestamp_is_never_coerced(value: Any, coerced: int) -> None:
    """UK-09 / B114: timestamp is an integer, "floats and strings are invalid". pydantic's lax mode turns
    ``"123"``, ``1.0`` and ``true`` into ``123``/``1``, inventing a value the producer never sent (UK-05)."""
    sample = {"type": "TEXT_MESSAGE_END", "messageId": "m", "timestamp": value}
    assert EVENT.validate_python(sample).timestamp == coerced
    with pytest.raises(DecodeError) as info:
        decode_event(sample)
    assert (info.value.pointer, info.value.event_type) == ("/timestamp", "TEXT_MESSAGE_END")


def test_boolean_fields_are_never_coerced() -> None:
    """B117: ``"replace": "false"`` is a string; pydantic reads it as ``False`` (so the activity is merged,
    not replaced). A wrong reading of a flag is worse than a refusal."""
    sample = {"type": "ACTIVITY_SNAPSHOT", "messageId": "a", "activityType": "p", "content": {}, "replace": "false"}
    assert EVENT.validate_python(sample).replace is False
    with pytest.raises(DecodeError) as info:
        decode_event(sample)
    assert info.value.pointer == "/replace"


def test_snake_case_wire_keys_are_not_fields() -> None:
    """B127: the wire is camelCase. ``populate_by_name=True`` exists for Python constructors, but it also
    makes the official models read ``message_id`` off the wire, hiding a producer bug that every other
    consumer (the reference TS client included) rejects."""
    sample = {"type": "TEXT_MESSAGE_START", "message_id": "m1"}
    assert official_dump(EVENT.validate_python(sample)) == {"type": "TEXT_MESSAGE_START", "messageId": "m1"}
    with collect_warnings(), pytest.raises(DecodeError) as info:
        decode_event(sample)
    assert info.value.pointer == "/messageId"


@pytest.mark.parametrize("kind", ["success", "cancelled"])
def test_a_closed_outcome_carrying_interrupts_is_refused(kind: str) -> None:
    """IR-03: success and cancelled are closed; "a success with an interrupt still pending would be a
    contradiction, not an extension" (the official docstring). ``extra="allow"`` accepts it silently, so a
    consumer built on the models reads a run that is waiting for an answer as finished."""
    sample = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r",
              "outcome": {"type": kind, "interrupts": [{"id": "i1", "reason": "approval"}]}}
    theirs = EVENT.validate_python(sample)
    assert theirs.outcome.type == kind
    assert theirs.outcome.model_extra == {"interrupts": [{"id": "i1", "reason": "approval"}]}
    with pytest.raises(DecodeError) as info:
        decode_event(sample)
    assert (info.value.pointer, info.value.event_type) == ("/outcome/interrupts", "RUN_FINISHED")


@pytest.mark.parametrize(("sample", "pointer"), [
    ({"type": "TEXT_MESSAGE_END", "messageId": "m", "metadata": None}, "/metadata"),
    ({"type": "TEXT_MESSAGE_END", "messageId": "m", "subagentRunId": None}, "/subagentRunId"),
    ({"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "u", "role": "user", "content": "x", "subagentRunId": None}]},
     "/messages/0/subagentRunId"),
    ({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {
        "type": "interrupt", "interrupts": [{"id": "i", "reason": "r", "subagentRunId": None}]}},
     "/outcome/interrupts/0/subagentRunId"),
    ({"type": "TEXT_MESSAGE_START", "messageId": "m", "name": None}, "/name"),
], ids=["event-metadata", "event-subagent-run-id", "message-subagent-run-id", "interrupt-subagent-run-id",
        "text-message-name"])
def test_null_where_the_schema_says_absent_or_value_is_refused(sample: Any, pointer: str) -> None:
    """UK-06 / UK-07 / B110-B111: optional fields are omitted, never null; a null ``metadata`` object or
    ``subagentRunId`` is malformed (the reference TS client rejects it). pydantic's ``Optional[...]``
    reads it as absent: for ``subagentRunId`` that silently re-attributes a subagent's work to the parent."""
    assert official_dump(EVENT.validate_python(sample)) != sample  # the null is silently dropped
    with pytest.raises(DecodeError) as info:
        decode_event(sample)
    assert info.value.pointer == pointer


def test_reasoning_message_start_needs_its_role() -> None:
    """RS-06 / B119: ``role`` is required on the wire (the schema lists it in ``required``); the official
    model gives it a default, so a producer that forgets it goes unnoticed."""
    sample = {"type": "REASONING_MESSAGE_START", "messageId": "r"}
    assert EVENT.validate_python(sample).role == "reasoning"
    with pytest.raises(DecodeError) as info:
        decode_event(sample)
    assert info.value.pointer == "/role"


def test_duplicated_keys_and_non_json_numbers_are_refused() -> None:
    """B089 and the event-object duplicate rule: pydantic's JSON parser reads ``NaN`` (not JSON, and not
    re-serialisable) and lets the last duplicate win, so two readers of one payload can disagree."""
    nan = '{"type":"CUSTOM","name":"x","value":NaN}'
    value = EVENT.validate_json(nan).value
    assert value != value
    with pytest.raises(DecodeError):
        decode_event(nan)
    duplicate = '{"type":"CUSTOM","name":"a","value":1,"name":"b"}'
    assert EVENT.validate_json(duplicate).name == "b"
    with pytest.raises(DecodeError) as info:
        decode_event(duplicate)
    assert info.value.pointer == "/name"


# ------------------------------------------------------------------------------------------------
# Where we are deliberately more tolerant (a 1.0 consumer must keep reading)
# ------------------------------------------------------------------------------------------------


def test_legacy_nulls_are_read_as_absent_with_a_warning() -> None:
    """UK-06 / B107 / B109: both read ``outcome: null``, ``result: null``, ``rawEvent: null`` as absent; we also
    say so, because the producer is behind the omission rule."""
    sample = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": None, "result": None,
              "rawEvent": None}
    expected = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
    assert official_dump(EVENT.validate_python(sample)) == expected
    with collect_warnings() as sink:
        assert encode(decode_event(sample)) == expected
    assert sorted(w.pointer or "" for w in sink.items) == ["/outcome", "/rawEvent", "/result"]


def test_unknown_event_type_is_kept_not_refused() -> None:
    """UK-02 / B101: the official union refuses a type it does not know; a consumer reading a newer producer
    must skip it (with a warning) and go on."""
    sample = {"type": "AGUI_PING", "seq": 1}
    with pytest.raises(ValidationError):
        EVENT.validate_python(sample)
    with collect_warnings() as sink:
        assert decode_event(sample) == ev.UnknownEvent(type="AGUI_PING", raw=sample)
    assert [w.code for w in sink.items] == ["UK-02"]


def test_thinking_events_are_translated_not_refused() -> None:
    """RS-09 / B103: THINKING_* left the protocol in 1.0 and the models refuse them; the reference client
    translates them to REASONING_* with a deprecation warning, and so do we."""
    sample = {"type": "THINKING_TEXT_MESSAGE_CONTENT", "messageId": "r", "delta": "hmm"}
    with pytest.raises(ValidationError):
        EVENT.validate_python(sample)
    with collect_warnings() as sink:
        assert decode_event(sample) == ev.ReasoningMessageContentEvent(message_id="r", delta="hmm")
    assert [w.code for w in sink.items] == ["RS-09"]


def test_unknown_outcome_type_reads_as_success_not_refused() -> None:
    """LC-10 / B106: "an outcome a consumer does not recognise is stripped and read as success" (the official
    RunFinishedCancelledOutcome docstring), yet the official union raises ``union_tag_invalid``, losing the
    whole RUN_FINISHED (and with it the end of the run)."""
    sample = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "paused"}}
    with pytest.raises(ValidationError):
        EVENT.validate_python(sample)
    with collect_warnings() as sink:
        event = decode_event(sample)
    assert isinstance(event, ev.RunFinishedEvent) and event.outcome == rn.RunFinishedSuccessOutcome()
    assert [w.code for w in sink.items] == ["LC-10"]


def test_unknown_union_members_are_dropped_not_refused() -> None:
    """UK-04 / B122 / B123: an unknown content part or message role is removed with a warning and the rest
    is kept; an unknown patch op is kept in the event (the fold then skips the whole patch, SP-07 /
    AGUI303). The official models refuse the whole event."""
    part = {"type": "TOOL_CALL_RESULT", "messageId": "t", "toolCallId": "c",
            "content": [{"type": "hologram"}, {"type": "text", "text": "hi"}]}
    role = {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "w", "role": "wizard", "content": "x"},
                                                      {"id": "u", "role": "user", "content": "y"}]}
    op = {"type": "STATE_DELTA", "delta": [{"op": "merge", "path": "/a", "value": 1}]}
    for sample in (part, role, op):
        with pytest.raises(ValidationError):
            EVENT.validate_python(sample)
    with collect_warnings() as sink:
        assert decode_event(part) == ev.ToolCallResultEvent(message_id="t", tool_call_id="c",
                                                            content=(msg.TextPart(text="hi"),))
        assert decode_event(role) == ev.MessagesSnapshotEvent(messages=(msg.UserMessage(id="u", content="y"),))
        assert decode_event(op) == ev.StateDeltaEvent(delta=({"op": "merge", "path": "/a", "value": 1},))
    assert [w.code for w in sink.items] == ["UK-04", "MS-05"]


def test_a_usage_entry_the_schema_refuses_is_dropped_not_the_event() -> None:
    """TU-04 / B282 / B285: the official models refuse the whole RUN_FINISHED or RUN_ERROR for one bad token count
    (as the reference client fails the run); usage is telemetry, so we drop only the entry (or a usage that is
    not an array) with a warning, and keep the outcome or the failure."""
    negative = {"type": "RUN_ERROR", "message": "m", "usage": [{"inputTokens": -1}, {"outputTokens": 2}]}
    not_a_list = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "success"},
                  "usage": {}}
    for sample in (negative, not_a_list):
        with pytest.raises(ValidationError):
            EVENT.validate_python(sample)
    with collect_warnings() as sink:
        assert decode_event(negative) == ev.RunErrorEvent(message="m", usage=(rn.TokenUsage(output_tokens=2),))
        assert decode_event(not_a_list) == ev.RunFinishedEvent(thread_id="t", run_id="r",
                                                               outcome=rn.RunFinishedSuccessOutcome())
    assert [(w.code, w.pointer) for w in sink.items] == [("TU-04", "/usage/0/inputTokens"),
                                                          ("TU-01", "/usage")]


def test_unknown_fields_are_ignored_not_kept() -> None:
    """UK-03: both tolerate an unknown field. The official models keep it (``extra="allow"``) and write it
    back; we drop it with a warning (as the reference TS client strips it), so what we send is 1.0 only."""
    sample = {"type": "TEXT_MESSAGE_END", "messageId": "m", "futureField": {"a": None}}
    assert official_dump(EVENT.validate_python(sample)) == sample
    with collect_warnings() as sink:
        assert encode(decode_event(sample)) == {"type": "TEXT_MESSAGE_END", "messageId": "m"}
    assert [(w.code, w.pointer) for w in sink.items] == [("UK-03", "/futureField")]


# ------------------------------------------------------------------------------------------------
# Where both refuse
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("sample", "pointer"), [
    ({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "interrupt", "interrupts": []}},
     "/outcome/interrupts"),
    ({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {
        "type": "interrupt", "interrupts": [{"id": "i", "reason": "r", "responseSchema": True}]}},
     "/outcome/interrupts/0/responseSchema"),
    ({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "tool"}, "/role"),
    ({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": 5}, "/delta"),
    ({"type": "TEXT_MESSAGE_END", "messageId": "m", "timestamp": 1.5}, "/timestamp"),
    ({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "a", "value": 1}]}, "/delta/0/path"),
    ({"type": "RUN_STARTED", "runId": "r"}, "/threadId"),
    ({"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "a", "role": "assistant", "toolCalls": [
        {"id": "c", "type": "bogus", "function": {"name": "f", "arguments": ""}}]}]},
     "/messages/0/toolCalls/0/type"),
    ({"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "a", "role": "assistant", "toolCalls": [
        {"id": "c", "type": "function", "function": {"name": "f"}}]}]},
     "/messages/0/toolCalls/0/function/arguments"),
], ids=["empty-interrupts", "boolean-response-schema", "text-role-tool", "delta-number", "timestamp-fraction",
        "pointer-without-slash", "missing-thread-id", "tool-call-type", "function-arguments"])
def test_both_refuse(sample: dict[str, Any], pointer: str) -> None:
    """Agreement on refusals. ``responseSchema: true`` is a valid JSON Schema, but the 1.0 schema restricts it
    to an object ("recorded as a known divergence", the official docstring) and the reference TS client
    rejects it too (golden ``interrupt-response-schema-true``)."""
    with pytest.raises(ValidationError):
        EVENT.validate_python(sample)
    with pytest.raises(DecodeError) as info:
        decode_event(sample)
    assert info.value.pointer == pointer


def test_a_tool_call_without_its_type_tag_reads_as_a_function_call() -> None:
    """The schema requires ``"type": "function"`` on a tool call; both the official model (a default) and we
    (the tag of the only kind there is) read a missing one as ``function``, and write it back."""
    sample = {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "a", "role": "assistant", "toolCalls": [
        {"id": "c", "function": {"name": "f", "arguments": "{}"}}]}]}
    expected = {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "a", "role": "assistant", "toolCalls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}]}
    assert official_dump(EVENT.validate_python(sample)) == expected
    assert encode(decode_event(sample)) == expected
