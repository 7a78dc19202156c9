"""A warning or an error about a nested object of an event names its whole JSON pointer.

An unknown key inside ``RUN_FINISHED.outcome.interrupts[0]`` (or a message of a snapshot, a tool call's
``function`` …) was warned of "at /key": the converter's hook for the class said it where it read the
object, knowing nothing of where that object sat. Errors already named their whole place (they unwind
through each container). Each case below is one nested object type the wire types define, reached
from an event; the walk at the end checks that every such type has its case.
"""

from __future__ import annotations

import copy
import json
import sys
import typing
import warnings
from typing import Any

import attrs
import pytest

from agui_client import DecodeError
from agui_client.errors import AguiWarning
from agui_client.wire.codec import decode_event, decode_value
from agui_client.wire.sink import WarningSink
from agui_client.wire.types import messages as msg
from agui_client.wire.types import run as rn
from agui_client.wire.types.events import EVENT_TYPES

SOURCE = {"type": "data", "value": "aGk=", "mimeType": "image/png"}
INPUT = {"threadId": "t", "runId": "r", "messages": [], "tools": [{"name": "f", "description": "d"}],
         "context": [{"description": "d", "value": "v"}], "resume": [{"interruptId": "i", "status": "resolved"}]}


def _snapshot(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "u0", "role": "user", "content": "hi"}, *messages]}


def _result(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "c", "content": [*parts]}


def _finished(outcome: dict[str, Any], **rest: Any) -> dict[str, Any]:
    return {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": outcome, **rest}


ASSISTANT = {"id": "a", "role": "assistant",
             "toolCalls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}

#: (the nested class, an event holding one, the pointer of that object in it)
CASES: list[tuple[type, dict[str, Any], str]] = [
    (rn.RunAgentInput, {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "input": INPUT}, "/input"),
    (rn.Tool, {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "input": INPUT}, "/input/tools/0"),
    (rn.Context, {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "input": INPUT}, "/input/context/0"),
    (rn.ResumeEntry, {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "input": INPUT}, "/input/resume/0"),
    (msg.DeveloperMessage, _snapshot({"id": "d", "role": "developer", "content": "x"}), "/messages/1"),
    (msg.SystemMessage, _snapshot({"id": "s", "role": "system", "content": "x"}), "/messages/1"),
    (msg.AssistantMessage, _snapshot(ASSISTANT), "/messages/1"),
    (msg.ToolCall, _snapshot(ASSISTANT), "/messages/1/toolCalls/0"),
    (msg.FunctionCall, _snapshot(ASSISTANT), "/messages/1/toolCalls/0/function"),
    (msg.UserMessage, _snapshot({"id": "u", "role": "user", "content": "x"}), "/messages/1"),
    (msg.ToolMessage, _snapshot({"id": "t", "role": "tool", "toolCallId": "c", "content": "x"}), "/messages/1"),
    (msg.ActivityMessage, _snapshot({"id": "v", "role": "activity", "activityType": "plan", "content": {}}),
     "/messages/1"),
    (msg.ReasoningMessage, _snapshot({"id": "g", "role": "reasoning", "content": "x"}), "/messages/1"),
    (msg.TextPart, _snapshot({"id": "u", "role": "user", "content": [{"type": "text", "text": "x"}]}),
     "/messages/1/content/0"),
    (msg.ImagePart, _result({"type": "text", "text": "x"}, {"type": "image", "source": SOURCE}), "/content/1"),
    (msg.AudioPart, _result({"type": "audio", "source": SOURCE}), "/content/0"),
    (msg.VideoPart, _result({"type": "video", "source": SOURCE}), "/content/0"),
    (msg.DocumentPart, _result({"type": "document", "source": SOURCE}), "/content/0"),
    (msg.DataSource, _result({"type": "image", "source": SOURCE}), "/content/0/source"),
    (msg.UrlSource, _result({"type": "image", "source": {"type": "url", "value": "https://x.example/a.png"}}),
     "/content/0/source"),
    (msg.FileSource, _result({"type": "image", "source": {"type": "file", "value": "f-1"}}), "/content/0/source"),
    (rn.RunFinishedSuccessOutcome, _finished({"type": "success"}), "/outcome"),
    (rn.RunFinishedInterruptOutcome, _finished({"type": "interrupt", "interrupts": [{"id": "i", "reason": "input"}]}),
     "/outcome"),
    (rn.Interrupt, _finished({"type": "interrupt", "interrupts": [{"id": "i0", "reason": "input"},
                                                                   {"id": "i1", "reason": "input"}]}),
     "/outcome/interrupts/1"),
    (rn.RunFinishedCancelledOutcome, _finished({"type": "cancelled"}), "/outcome"),
    (rn.TokenUsage, _finished({"type": "success"}, usage=[{"inputTokens": 1}]), "/usage/0"),
    (rn.SubagentFinishedSuccessOutcome, {"type": "SUBAGENT_FINISHED", "subagentRunId": "s",
                                         "outcome": {"type": "success"}}, "/outcome"),
    (rn.SubagentFinishedSuspendedOutcome, {"type": "SUBAGENT_FINISHED", "subagentRunId": "s",
                                           "outcome": {"type": "suspended"}}, "/outcome"),
]
IDS = [cls.__name__ for cls, _, _ in CASES]


def _at(value: Any, pointer: str) -> Any:
    for step in pointer.split("/")[1:]:
        value = value[int(step)] if isinstance(value, list) else value[step]
    return value


def _put(value: Any, pointer: str, item: Any) -> None:
    parent, _, last = pointer.rpartition("/")
    container = _at(value, parent)
    container[int(last) if isinstance(container, list) else last] = item


@pytest.mark.parametrize(("cls", "event", "pointer"), CASES, ids=IDS)
def test_an_unknown_key_of_a_nested_object_is_warned_of_at_its_whole_pointer(cls: type, event: dict[str, Any],
                                                                             pointer: str) -> None:
    assert decode_value(copy.deepcopy(event), WarningSink()) is not None  # (the case is a valid event)
    value = copy.deepcopy(event)
    _at(value, pointer)["zz~odd/key"] = 1
    sink = WarningSink()

    decode_value(value, sink)

    assert [(w.code, w.pointer) for w in sink.items] == [("UK-03", pointer + "/zz~0odd~1key")], sink.items


@pytest.mark.parametrize(("cls", "event", "pointer"), CASES, ids=IDS)
def test_an_unknown_key_of_a_nested_object_read_from_bytes_is_warned_of_at_its_whole_pointer(
        cls: type, event: dict[str, Any], pointer: str) -> None:
    # (bytes take the fast readers first, which leave anything that warns to the checked path)
    value = copy.deepcopy(event)
    _at(value, pointer)["zzUnknown"] = {"deep": [1]}
    with pytest.warns(Warning) as caught:
        decode_event(json.dumps(value).encode())

    said = [str(w.message) for w in caught]
    assert len(said) == 1 and f"at {pointer}/zzUnknown" in said[0], said


#: (a usage entry of the wrong type is dropped with a warning, not refused: see the test after)
REFUSED = [case for case in CASES if case[0] is not rn.TokenUsage]


@pytest.mark.parametrize(("cls", "event", "pointer"), REFUSED, ids=[cls.__name__ for cls, _, _ in REFUSED])
def test_a_nested_object_of_the_wrong_type_is_refused_at_its_whole_pointer(cls: type, event: dict[str, Any],
                                                                          pointer: str) -> None:
    value = copy.deepcopy(event)
    _put(value, pointer, 5)

    with pytest.raises(DecodeError) as caught:
        decode_value(value, WarningSink())

    assert caught.value.pointer == pointer, str(caught.value)


@pytest.mark.parametrize(("event", "pointer", "code"), [
    (_snapshot({"id": "u", "role": "user", "content": [{"type": "text", "text": "x"}, {"type": "hologram"}]}),
     "/messages/1/content/1", "UK-04"),
    (_snapshot({"id": "q", "role": "alien", "content": "x"}), "/messages/1", "MS-05"),
    ({"type": "RUN_STARTED", "threadId": "t", "runId": "r",
      "input": {**INPUT, "tools": [INPUT["tools"][0], {"name": "g", "description": "d", "parameters": None}]}},
     "/input/tools/1/parameters", "UK-06"),
    (_finished({"type": "success"}, usage=[{"inputTokens": 1}, 5]), "/usage/1", "TU-04"),
], ids=["dropped-part", "dropped-message", "legacy-null", "dropped-usage-entry"])
def test_a_nested_objects_other_warnings_name_its_place(event: dict[str, Any], pointer: str, code: str) -> None:
    sink = WarningSink()
    decode_value(event, sink)
    assert [(w.code, w.pointer) for w in sink.items] == [(code, pointer)], sink.items


def _nested_classes() -> set[type]:
    """Every attrs class an event's fields reach, the union members included."""
    found: set[type] = set()
    pending = list(EVENT_TYPES.values())
    while pending:
        cls = pending.pop()
        attrs.resolve_types(cls)
        for field in attrs.fields(cls):
            stack = [field.type]
            while stack:
                t = stack.pop()
                if attrs.has(t):
                    if t not in found:
                        found.add(t)
                        pending.append(t)
                else:
                    stack.extend(a for a in typing.get_args(t) if a is not Ellipsis)
    return found


def test_every_nested_object_type_of_the_events_has_a_case() -> None:
    assert _nested_classes() == {cls for cls, _, _ in CASES}
    for cls, event, pointer in CASES:  # (each case's pointer leads to an object)
        assert isinstance(_at(event, pointer), dict), cls


def test_placing_a_nested_warning_notes_a_bounded_number_of_containers() -> None:
    # A warning's place is found by noting each container of the value read, once. The agent chooses how
    # many a value holds: a RUN_STARTED whose input carries a state of 300,000 empty arrays and one
    # unknown key in a tool cost some 60 MB to place that one warning, charged to nothing. At most
    # located.MOST_NOTED containers are noted; a warning about an object past them keeps its own pointer.
    import tracemalloc

    from agui_client.wire import located

    event = copy.deepcopy(CASES[1][1])
    event["input"]["state"] = [[] for _ in range(300_000)]
    event["input"]["tools"][0]["zzUnknown"] = 1
    sink = WarningSink()

    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        decode_value(event, sink)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()

    assert [w.code for w in sink.items] == ["UK-03"]
    assert sink.items[0].pointer in ("/input/tools/0/zzUnknown", "/zzUnknown")
    assert peak < located.MOST_NOTED * 400, peak


def _line() -> int:
    """The line of the call to this function."""
    return sys._getframe(1).f_lineno


@pytest.mark.parametrize("data", ["value", "bytes"])
@pytest.mark.parametrize(("event", "pointer"), [
    ({"type": "RUN_STARTED", "threadId": "t", "runId": "r", "zz": 1}, "/zz"),
    (_finished({"type": "interrupt", "interrupts": [{"id": "i", "reason": "input", "zz": 1}]}),
     "/outcome/interrupts/0/zz"),
    (_snapshot({"id": "u", "role": "user", "content": [{"type": "text", "text": "x", "zz": 1}]}),
     "/messages/1/content/0/zz"),
], ids=["top-level", "nested", "nested-deeper"])
def test_a_warning_shown_through_python_warnings_is_placed_at_the_callers_line(
        event: dict[str, Any], pointer: str, data: str) -> None:
    # A fixed stacklevel placed a warning about an event's own field inside the codec, and one about a
    # nested object a frame further in (generated code of the converter's): neither at the line that decoded.
    given: Any = json.dumps(event).encode() if data == "bytes" else event
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        called_at = _line() + 1
        decode_event(given)
    # (only the package's: a ResourceWarning of an earlier test's socket, collected here, is recorded too)
    [shown] = [warning for warning in caught if issubclass(warning.category, AguiWarning)]
    assert shown.category is AguiWarning and f"at {pointer}:" in str(shown.message)
    assert (shown.filename, shown.lineno) == (__file__, called_at)
