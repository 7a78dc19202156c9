"""Entries made from a snapshot's whole messages are lazy; the thread they make is the one eager
entries make."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agui_client import (
    AssistantMessage,
    encode,
    replay,
)
from agui_client.types import messages as msg
from agui_client.wire.codec import decode

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
