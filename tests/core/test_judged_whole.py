"""A message's text and a call's arguments judged whole when they ended (UTF-16 halves joined or
repaired) are not looked at again by what saves or reads the thread later; a text that changed after
that verdict still is, whatever changed it."""

from __future__ import annotations

from typing import Any

import pytest
from foldkit import FINISH, START

from agui_client import (
    AssistantMessage,
    RunFinishedEvent,
    RunSession,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ThreadState,
    encode,
    replay,
)
from agui_client.core.fold import entries
from agui_client.core.fold.entries import Call, Entry
from agui_client.errors import StreamWarning
from agui_client.types import ToolCallArgsEvent, ToolCallEndEvent, ToolCallStartEvent
from agui_client.wire.records import dump_record


def _looks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids whose parts are read again (joined and judged) from now on."""
    seen: list[str] = []
    real = entries.read_parts

    def spy(parts: list[str], warn: list[StreamWarning] | None, entity: str, *,
            streamed: bool) -> tuple[list[str], str]:
        seen.append(entity)
        return real(parts, warn, entity, streamed=streamed)

    monkeypatch.setattr(entries, "read_parts", spy)
    return seen


def _run(*events: Any, run_id: str = "r") -> list[Any]:
    return [RunStartedEvent(thread_id="t", run_id=run_id), *events, RunFinishedEvent(thread_id="t", run_id=run_id)]


def _message(monkeypatch: pytest.MonkeyPatch) -> tuple[ThreadState, list[str]]:
    state = replay([START, TextMessageStartEvent(message_id="m"),
                    TextMessageContentEvent(message_id="m", delta="caf\u00e9 \ud83d"),
                    TextMessageContentEvent(message_id="m", delta="\ude00"), TextMessageEndEvent(message_id="m"),
                    ToolCallStartEvent(tool_call_id="c", tool_call_name="f", parent_message_id="m"),
                    ToolCallArgsEvent(tool_call_id="c", delta='{"x":"\u00e9'),
                    ToolCallArgsEvent(tool_call_id="c", delta='"}'), ToolCallEndEvent(tool_call_id="c"),
                    FINISH]).state
    return state, _looks(monkeypatch)


def test_a_save_and_a_read_take_the_verdict_the_fold_gave_at_the_end(monkeypatch: pytest.MonkeyPatch) -> None:
    state, seen = _message(monkeypatch)
    saved = state.dump()
    (message,) = saved["messages"]
    assert message["content"] == "caf\u00e9 \U0001f600"
    assert message["toolCalls"][0]["function"]["arguments"] == '{"x":"\u00e9"}'
    read = state.message("m")
    assert isinstance(read, AssistantMessage) and read.content == "caf\u00e9 \U0001f600"
    assert read.tool_calls is not None and read.tool_calls[0].function.arguments == '{"x":"\u00e9"}'
    assert seen == []


def test_arguments_streamed_again_after_the_verdict_are_judged_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call of an earlier run sent again: its new arguments, one part holding a lone half, replace the ones
    judged; a save mid-stream writes them repaired (a copy: the pair may still be completed), not as sent."""
    state, seen = _message(monkeypatch)
    session = RunSession(state=state)
    for event in [RunStartedEvent(thread_id="t", run_id="r2"),
                  ToolCallStartEvent(tool_call_id="c", tool_call_name="f", parent_message_id="m"),
                  ToolCallArgsEvent(tool_call_id="c", delta='{"x":"\ud83d')]:
        session.feed_event(event)
    saved = state.dump()
    assert saved["messages"][0]["toolCalls"][0]["function"]["arguments"] == '{"x":"\ufffd'
    dump_record(saved)  # (the record can be written: no lone half in it)
    assert seen == ["c"]
    session.feed_event(ToolCallArgsEvent(tool_call_id="c", delta='\ude00"}'))
    session.feed_event(ToolCallEndEvent(tool_call_id="c"))
    call = state.tool_call("c")
    assert call is not None and call.function.arguments == '{"x":"\U0001f600"}'


def test_a_text_that_changed_after_the_verdict_is_judged_again() -> None:
    warnings: list[StreamWarning] = []
    entry = Entry("m", "assistant")
    entry.text = ["caf\u00e9"]
    entry.judged_whole(warnings)
    entry.text = ["caf\u00e9 \ud800"]  # (another string, however it came)
    assert entry.wire(warnings) == {"id": "m", "role": "assistant", "content": "caf\u00e9 \ufffd"}
    assert [w.code for w in warnings] == ["UTF16-SURROGATE"]
    entry.text = ["caf\u00e9 \ud800\ud800"]  # (one part again, another string: its own look)
    entry.frozen = None
    frozen = entry.freeze(warnings)
    assert isinstance(frozen, AssistantMessage) and frozen.content == "caf\u00e9 \ufffd\ufffd"


def test_arguments_judged_are_built_into_a_call_without_a_second_look(monkeypatch: pytest.MonkeyPatch) -> None:
    # (a call the fold had not frozen when its arguments were judged, as one whose stream was cut)
    warnings: list[StreamWarning] = []
    call = Call("c", "f", '{"x":"\u00e9"}')
    call.judged_whole(warnings)
    seen = _looks(monkeypatch)
    assert call.freeze(warnings).function.arguments == '{"x":"\u00e9"}'
    assert seen == [] and warnings == []


def test_arguments_that_changed_after_the_verdict_are_judged_again() -> None:
    warnings: list[StreamWarning] = []
    call = Call("c", "f", '{"x":"\u00e9"}')
    call.judged_whole(warnings)
    call.args = ['{"x":"\ud800"}']
    wire = call.wire(warnings)
    assert wire is not None and wire["function"]["arguments"] == '{"x":"\ufffd"}'
    assert [w.code for w in warnings] == ["UTF16-SURROGATE"]
    call.args = ['{"x":"\ud800"} \ud800']  # (one part again, another string: its own look)
    assert call.freeze(warnings).function.arguments == '{"x":"\ufffd"} \ufffd'


def test_a_message_the_application_gave_is_judged_when_read_again() -> None:
    """No verdict is taken from a message built outside the fold: re-opened by a run (TX-05), its text is
    looked at when saved mid-run (a repaired copy) and judged at its end."""
    state = ThreadState(messages=(AssistantMessage(id="m", content="caf\u00e9 \ud800"),))
    session = RunSession(state=state)
    session.feed_event(RunStartedEvent(thread_id="t", run_id="r"))
    session.feed_event(TextMessageStartEvent(message_id="m"))
    assert state.dump()["messages"][0]["content"] == "caf\u00e9 \ufffd"
    session.feed_event(TextMessageEndEvent(message_id="m"))
    assert encode(state.message("m"))["content"] == "caf\u00e9 \ufffd"
