"""Reading a thread while a run streams into it never changes what the run folds.

A chat shows each delta as it comes: it reads ``thread.state.messages`` (or a store saves the thread)
between any two events. A read used to keep the repair it made of the text as it stood, so a UTF-16 pair
split across two deltas (B093), or across a restarted call's later END and its next START (TC-05), was
two U+FFFD for a reader and one character for a fold nobody read. Every golden stream is folded both ways.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from agui_client import ProtocolError, RunSession, ThreadState, encode
from agui_client.types import Message
from agui_client.wire.codec import decode

STREAMS = Path(__file__).resolve().parents[1] / "golden" / "streams"
NAMES = sorted(p.name.removesuffix(".jsonl") for p in STREAMS.glob("*.jsonl"))
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _minted(text: str) -> str:
    """``text`` with the ids the fold minted (a legacy reasoning message's) numbered in order."""
    seen: dict[str, str] = {}
    return UUID.sub(lambda m: seen.setdefault(m.group(), f"<minted:{len(seen)}>"), text)


def _fold(name: str, *, read: bool) -> tuple[Any, list[tuple[str, str]]]:
    seed_path = STREAMS / f"{name}.input.json"
    seed = json.loads(seed_path.read_text()) if seed_path.exists() else {}
    thread = ThreadState(messages=decode(seed.get("messages", []), tuple[Message, ...]),
                         state=seed.get("state", {}), thread_id=seed.get("threadId"))
    session = RunSession(state=thread)
    for line in (STREAMS / f"{name}.jsonl").read_bytes().splitlines():
        if not line.strip():
            continue
        try:
            session.feed_payload(line)
        except ProtocolError:
            break
        if read:
            thread.messages  # noqa: B018  (what a chat showing each delta does)
            thread.dump()  # (what a save does)
    result = session.result()
    return encode(thread.messages), [(w.code, w.message) for w in result.warnings]


@pytest.mark.parametrize("name", NAMES)
def test_reading_the_thread_at_every_event_folds_what_an_unread_fold_does(name: str) -> None:
    read, unread = (_minted(json.dumps(_fold(name, read=r))) for r in (True, False))
    assert read == unread


@pytest.mark.parametrize("name", ["text-surrogate-split", "tool-call-restarted-surrogate-split",
                                  "tool-call-restarted-surrogate-split-across-later-end"])
def test_a_pair_split_across_deltas_is_one_character_for_a_reader_at_every_event(name: str) -> None:
    messages, warnings = _fold(name, read=True)
    held = messages[-1].get("content") or messages[-1]["toolCalls"][0]["function"]["arguments"]
    assert "\U0001f600" in held and "\ufffd" not in held
    assert "UTF16-SURROGATE" not in [code for code, _ in warnings]


def test_a_reader_between_the_halves_sees_a_repaired_copy() -> None:
    # What a read hands out can always be encoded and sent (a lone half is shown as U+FFFD), and what
    # it showed is not what the thread keeps: the next delta pairs the half.
    thread = ThreadState()
    session = RunSession(state=thread)
    for event in ({"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
                  {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
                  {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi \ud83d"}):
        session.feed_payload(json.dumps(event))
    shown = thread.message("m")
    assert shown is not None and shown.content == "hi \ufffd"
    assert thread.dump()["messages"][0]["content"] == "hi \ufffd"
    session.feed_payload(json.dumps({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "\ude00"}))
    assert thread.message("m").content == "hi \U0001f600"  # type: ignore[union-attr]
    assert shown.content == "hi \ufffd"  # (what was handed out never changes)
