"""Pre-1.0 content parts in a message read as 1.0 parts, as the reference client reads them.

Found by the reference differential (golden ``messages-snapshot-binary-parts``,
``messages-snapshot-media-metadata-null``, ``run-started-input-binary-part``,
``run-started-input-nested-legacy-nulls``): a ``binary`` part of a snapshot's user message was dropped as
an unknown part, a media part's ``metadata: null`` failed the run. A tool result's parts are not read so
(``tool-result-binary-part``, ``tool-result-media-metadata-null``): the reference refuses them there too.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agui_client import ProtocolError, ThreadState, encode, replay
from agui_client.types import messages as msg
from agui_client.wire import codec
from agui_client.wire.sink import WarningSink, collect_warnings
from agui_client.wire.slices import SLICED_MIN

__all__: list[str] = []

PNG = {"type": "data", "value": "iVBORw0KGgo=", "mimeType": "image/png"}


def _stream(*events: dict[str, Any]) -> bytes:
    run = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, *events,
           {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]
    return "\n".join(json.dumps(e) for e in run).encode()


def _snapshot(*content: Any, role: str = "user") -> dict[str, Any]:
    message: dict[str, Any] = {"id": "u1", "role": role, "content": list(content)}
    if role == "tool":
        message["toolCallId"] = "c1"
    return {"type": "MESSAGES_SNAPSHOT", "messages": [message]}


def _content(stream: bytes) -> tuple[list[Any], list[tuple[str, str]]]:
    thread = ThreadState()
    result = replay(stream, state=thread, format="jsonl")
    return encode(thread.messages)[0]["content"], [(w.code, w.pointer) for w in result.warnings]


def test_a_binary_part_is_the_media_part_its_mime_type_names() -> None:
    content, warned = _content(_stream(_snapshot(
        {"type": "binary", "mimeType": "image/jpeg", "data": "/9j/", "filename": "cat.jpg", "id": "f0"},
        {"type": "binary", "mimeType": "audio/wav", "url": "https://x/a.wav"},
        {"type": "binary", "mimeType": "video/mp4", "url": "https://x/v.mp4"},
        {"type": "binary", "mimeType": "application/pdf", "data": "JVBE"},
        {"type": "binary", "mimeType": "image", "data": "AA"})))
    assert content == [
        {"type": "image", "source": {"type": "data", "value": "/9j/", "mimeType": "image/jpeg"},
         "metadata": {"filename": "cat.jpg"}},
        {"type": "audio", "source": {"type": "url", "value": "https://x/a.wav", "mimeType": "audio/wav"}},
        {"type": "video", "source": {"type": "url", "value": "https://x/v.mp4", "mimeType": "video/mp4"}},
        {"type": "document", "source": {"type": "data", "value": "JVBE", "mimeType": "application/pdf"}},
        {"type": "document", "source": {"type": "data", "value": "AA", "mimeType": "image"}},
    ]
    assert warned == [("UK-04", "/messages/0/content")]  # (the message's place first, as UK-03's)


def test_data_and_url_are_chosen_by_javascript_truthiness_and_an_id_alone_is_dropped() -> None:
    content, warned = _content(_stream(_snapshot(
        {"type": "text", "text": "x"},
        {"type": "binary", "mimeType": "image/png", "data": "", "url": "https://x/a", "filename": ""},
        {"type": "binary", "mimeType": "image/png", "data": 0, "url": "https://x/b", "filename": 0},
        {"type": "binary", "mimeType": "image/png", "id": "file-123"},
        {"type": "binary", "data": "AAAA"})))
    assert content == [{"type": "text", "text": "x"},
                       {"type": "image", "source": {"type": "url", "value": "https://x/a", "mimeType": "image/png"}},
                       {"type": "image", "source": {"type": "url", "value": "https://x/b", "mimeType": "image/png"}}]
    # read as 1.0 (one warning), then each of the two left binary dropped as an unknown part
    assert [code for code, _ in warned] == ["UK-04", "UK-04", "UK-04"]


def test_a_binary_part_repeating_a_media_part_of_its_message_is_dropped() -> None:
    named = {"type": "image", "source": PNG, "metadata": {"filename": "p.png"}}
    content, _ = _content(_stream(_snapshot(
        named,
        {"type": "binary", "mimeType": "image/png", "data": PNG["value"], "filename": "p.png"},
        {"type": "binary", "mimeType": "image/png", "data": PNG["value"], "filename": "q.png"},
        {"type": "binary", "mimeType": "image/png", "data": PNG["value"]},
        {"type": "binary", "mimeType": "audio/x", "data": "BB"},
        {"type": "binary", "mimeType": "audio/x", "data": "BB"})))
    # the same file named alike, or unnamed, is the one already there; binary twice is kept twice (the
    # reference compares with the message's 1.0 parts only)
    audio = {"type": "audio", "source": {"type": "data", "value": "BB", "mimeType": "audio/x"}}
    assert content == [named, {"type": "image", "source": PNG, "metadata": {"filename": "q.png"}}, audio, audio]


def test_a_media_parts_null_metadata_is_absent_in_a_message_and_refused_in_a_tool_result() -> None:
    content, warned = _content(_stream(_snapshot({"type": "document", "source": PNG, "metadata": None},
                                                 role="tool")))
    assert content == [{"type": "document", "source": PNG}]
    assert warned == [("UK-06", "/messages/0/content")]

    result = [{"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f"},
              {"type": "TOOL_CALL_END", "toolCallId": "c1"},
              {"type": "TOOL_CALL_RESULT", "toolCallId": "c1", "messageId": "t1",
               "content": [{"type": "image", "source": PNG, "metadata": None}]}]
    with pytest.raises(ProtocolError) as refused:
        replay(_stream(*result), format="jsonl")
    assert refused.value.pointer == "/content/0/metadata"


def test_a_tool_results_binary_part_is_dropped_as_unknown() -> None:
    thread = ThreadState()
    replay(_stream({"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f"},
                   {"type": "TOOL_CALL_END", "toolCallId": "c1"},
                   {"type": "TOOL_CALL_RESULT", "toolCallId": "c1", "messageId": "t1", "content": [
                       {"type": "text", "text": "r"}, {"type": "binary", "mimeType": "image/png", "data": "AA"}]}),
           state=thread, format="jsonl")
    assert encode(thread.messages)[-1]["content"] == [{"type": "text", "text": "r"}]


def test_the_run_inputs_echo_reads_old_parts_and_nested_legacy_nulls() -> None:
    echo = {"threadId": "t", "runId": "r", "context": [], "state": {}, "forwardedProps": {},
            "messages": [{"id": "u1", "role": "user", "content": [
                {"type": "binary", "mimeType": "image/gif", "url": "https://x/a.gif"},
                {"type": "audio", "source": PNG, "metadata": None}]}],
            "tools": [{"name": "f", "description": "d", "parameters": None}],
            "resume": [{"interruptId": "i1", "status": "resolved", "payload": None}]}
    sink = WarningSink()
    with collect_warnings(sink):
        event = codec.decode_event(json.dumps({"type": "RUN_STARTED", "threadId": "t", "runId": "r", "input": echo}))
    assert sorted({(w.code, w.pointer) for w in sink.items}) == [
        ("UK-04", "/input/messages/0/content"), ("UK-06", "/input/messages/0/content"),
        ("UK-06", "/input/resume/0/payload"), ("UK-06", "/input/tools/0/parameters")]
    assert event.input is not None
    assert event.input.tools[0].parameters is None and event.input.resume is not None
    assert event.input.resume[0].payload is None
    part = event.input.messages[0].content[0]
    assert isinstance(part, msg.ImagePart) and isinstance(part.source, msg.UrlSource)
    assert encode(event.input.messages[0])["content"][1] == {"type": "audio", "source": PNG}


def test_a_large_snapshot_read_in_slices_reads_old_parts_too() -> None:
    filler = [{"id": f"m{i}", "role": "assistant", "content": "x" * 200} for i in range(SLICED_MIN // 200 + 10)]
    snapshot = {"type": "MESSAGES_SNAPSHOT", "messages": [
        *filler, {"id": "u1", "role": "user", "content": [{"type": "binary", "mimeType": "image/png", "data": "AA"}]}]}
    raw = json.dumps(snapshot).encode()
    assert len(raw) >= SLICED_MIN
    sink = WarningSink()
    with collect_warnings(sink):
        event = codec.decode_event(raw)
    assert [w.code for w in sink.items] == ["UK-04"]
    assert encode(event.messages[-1])["content"] == [
        {"type": "image", "source": {"type": "data", "value": "AA", "mimeType": "image/png"}}]
