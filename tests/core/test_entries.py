"""The fold's message entries: the ones a stream writes into are read at full speed, the lazy ones still
read their message when first asked."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agui_client.core.session import RunSession

RESTATED_THEN_STREAMED = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
    {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "u1", "role": "user", "content": "hi"},
                                               {"id": "m1", "role": "assistant", "content": "hello"}]},
    {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": " world"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m2", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m2", "delta": "more"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m2"},
    # A snapshot restating a message still streamed (held as its JSON on the front-end), then more of it.
    {"type": "TEXT_MESSAGE_START", "messageId": "m3", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m3", "delta": "a"},
    {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "u1", "role": "user", "content": "hi"},
                                               {"id": "m3", "role": "assistant", "content": "a"}]},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m3", "delta": "b"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m3"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"},
]


def _fold(events: list[dict[str, Any]], *, front: bool) -> RunSession:
    session = RunSession(events=not front)
    session.fold_read([json.dumps(e, separators=(",", ":")).encode() for e in events])
    return session


@pytest.mark.parametrize("front", [True, False], ids=["front-end", "typed"])
def test_a_message_a_snapshot_restated_and_a_stream_reopened_reads_its_text_then_appends(front: bool) -> None:
    session = _fold(RESTATED_THEN_STREAMED, front=front)
    messages = session.end().state.messages
    assert [(m.id, m.content) for m in messages] == [("u1", "hi"), ("m3", "ab")]
    assert [w.code for w in session.warnings] == ["TX-05/AGUI104"]  # (m1 re-opened)


@pytest.mark.parametrize("front", [True, False], ids=["front-end", "typed"])
def test_the_entries_a_stream_opens_have_no_attribute_hook_and_the_restated_ones_do(front: bool) -> None:
    """A class with ``__getattr__`` has every read of its objects' attributes take the interpreter's slow
    lookup: the entries a stream writes into are of a class without one (the lazy ones keep theirs)."""
    session = _fold(RESTATED_THEN_STREAMED[:2] + RESTATED_THEN_STREAMED[5:7], front=front)
    log = session.state.log
    streamed, restated = log.entry("m2"), log.entry("m1")
    assert streamed is not None and restated is not None
    assert "__getattr__" not in {name for cls in type(streamed).__mro__ for name in vars(cls)}
    assert hasattr(type(restated), "__getattr__")
    assert restated.text == ["hello"]  # (read from its message when first asked)
