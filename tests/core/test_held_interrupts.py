"""Open interrupts are held one per id, the first, however they reach the thread.

A repeated interrupt id is one question (an answer names an id), so the fold holds the first of each id.
The stream path did (IR-06, ``docs/codes.md#ir-06``); a stored record listing an interrupt twice
(written by another tool, or damaged) loaded both copies, as did a ``RUN_FINISHED`` too malformed to
decode (IR-27) and ``ThreadState(open_interrupts=...)``: a resume then had to cover one id twice, which
no resume list can (a second entry is a duplicate). One rule, the ledger's, for every way in.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agui_client import replay
from agui_client.core.fold import ThreadState
from agui_client.errors import ProtocolError
from agui_client.types import Interrupt

__all__: list[str] = []

FIRST = {"id": "i", "reason": "confirm", "message": "first"}
SECOND = {"id": "i", "reason": "confirm", "message": "second"}
OTHER = {"id": "j", "reason": "confirm", "message": "other"}


def _streamed(interrupts: list[dict[str, Any]], **extra: Any) -> ThreadState:
    stream = "\n".join(json.dumps(event) for event in [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r",
         "outcome": {"type": "interrupt", "interrupts": interrupts, **extra}}])
    state = ThreadState()
    with pytest.raises(ProtocolError):
        replay(stream, state=state)
    return state


def _held(state: ThreadState) -> list[tuple[str, str | None]]:
    return [(i.id, i.message) for i in state.open_interrupts]


def test_the_stream_path_holds_the_first_of_a_repeated_id() -> None:
    assert _held(_streamed([FIRST, SECOND, OTHER])) == [("i", "first"), ("j", "other")]


def test_a_stored_record_listing_an_interrupt_twice_loads_the_first_as_the_stream_does() -> None:
    record = ThreadState(thread_id="t", open_interrupts=[Interrupt(id="j", reason="confirm")],
                         interrupted_run_id="r").dump()
    record["openInterrupts"] = [FIRST, SECOND, OTHER]
    loaded = ThreadState.load(record)
    assert _held(loaded) == _held(_streamed([FIRST, SECOND, OTHER])) == [("i", "first"), ("j", "other")]
    assert loaded.interrupted_run_id == "r"
    assert [i["message"] for i in loaded.dump()["openInterrupts"]] == ["first", "other"]


def test_a_thread_made_with_an_interrupt_twice_holds_the_first() -> None:
    state = ThreadState(open_interrupts=[Interrupt(id="i", reason="confirm", message="first"),
                                         Interrupt(id="i", reason="confirm", message="second")],
                        interrupted_run_id="r")
    assert _held(state) == [("i", "first")]


def test_a_malformed_interrupt_outcome_holds_the_first_of_a_repeated_id() -> None:
    # (a boolean responseSchema makes the RUN_FINISHED undecodable: IR-27 holds what it can read)
    state = _streamed([{**FIRST, "responseSchema": True}, SECOND, OTHER])
    assert _held(state) == [("i", "first"), ("j", "other")]


@pytest.mark.parametrize("first", [FIRST, {**FIRST, "responseSchema": True}], ids=["IR-06", "IR-27"])
def test_the_refusals_interrupts_are_those_the_thread_holds(first: dict[str, Any]) -> None:
    # The error listed every copy as sent while the thread held one per id: a caller answering what the
    # error named would have covered one id twice.
    stream = "\n".join(json.dumps(event) for event in [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r",
         "outcome": {"type": "interrupt", "interrupts": [first, SECOND, OTHER]}}])
    state = ThreadState()
    with pytest.raises(ProtocolError) as refused:
        replay(stream, state=state)
    named = refused.value.interrupts  # type: ignore[attr-defined]
    assert [(i.id, i.message) for i in named] == _held(state) == [("i", "first"), ("j", "other")]
