"""The run protocol pumped by hand: no socket, no store, no event loop.

``core/flow.py`` is the one statement of claim -> send -> fold -> save -> release; ``Thread`` and
``AsyncThread`` only carry its effects out. These tests are a third pump: they answer each effect
from a script and record what the protocol asked for, so the order of the steps and the failure rule
are checked where they are written, apart from any I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import attrs
import pytest

from agui_client import RunResult, StoreError, TransportError
from agui_client.core.effects import RECEIVE, Close, Hand, Send, Write
from agui_client.core.exchange import StreamHandle
from agui_client.core.flow import Conversation
from agui_client.core.plan import Plan


class _Store:
    """Only its ``claim`` signature is read (the protocol asks whether a claim can create the record)."""

    def claim(self, thread_id: str, *, expected_version: int | None, owner: str, data: Any = None) -> int:
        raise AssertionError("the protocol never calls the store: the pump does")


def _events(run_id: str = "r1") -> list[str]:
    return [json.dumps(e) for e in (
        {"type": "RUN_STARTED", "threadId": "t1", "runId": run_id},
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "hi"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        {"type": "RUN_FINISHED", "threadId": "t1", "runId": run_id},
    )]


class Pump:
    """Answers each effect with ``answer(effect)`` (a value, or an exception to throw in) and records it."""

    def __init__(self, conversation: Conversation, answer: Callable[[Any], Any]) -> None:
        self.conversation = conversation
        self.answer = answer
        self.effects: list[Any] = []

    def drive(self, flow: Any) -> Any:
        reply: Any = None
        error: BaseException | None = None
        while True:
            try:
                effect = flow.send(reply) if error is None else flow.throw(error)
            except StopIteration as stop:
                return stop.value
            self.effects.append(effect)
            if isinstance(effect, Hand):
                return effect  # (the caller's block runs now: the test goes on from here)
            reply, error = None, None
            outcome = self.answer(effect)
            if isinstance(outcome, BaseException):
                error = outcome
                if isinstance(effect, Write) and getattr(outcome, "landed", None) is not None:
                    self.conversation._version = outcome.landed  # (the write landed before the interruption)
                continue
            reply = outcome
            if isinstance(effect, Write):
                self.conversation._version = outcome  # (a shell keeps the version the store returned)

    def kinds(self) -> list[str]:
        names = []
        for effect in self.effects:
            if isinstance(effect, Write):
                names.append(f"write:{effect.op}")
            elif effect is RECEIVE:
                names.append("receive")
            else:
                names.append(type(effect).__name__.lower())
        return names


def _turn(conversation: Conversation, *, resuming: bool = False, quiet: bool = True,
          interrupted: type[BaseException] = KeyboardInterrupt) -> tuple[Any, Plan, StreamHandle]:
    plan = conversation._plan("hello", None, None, None, None, None, "r1")
    if resuming:
        plan = attrs.evolve(plan, resuming=True)
    handle = StreamHandle()
    return conversation._turn(plan, handle, quiet=quiet, interrupted=interrupted), plan, handle


def _reads(*reads: list[str] | None) -> Callable[[Any], Any]:
    """Answers writes with the next version, the response with ``reads`` in turn, the rest with None."""
    pending = list(reads)
    versions = iter(range(100))

    def answer(effect: Any) -> Any:
        if isinstance(effect, Write):
            return next(versions)
        if effect is RECEIVE:
            return pending.pop(0)
        return None
    return answer


def test_a_new_thread_is_claimed_sent_folded_saved_and_closed_in_that_order() -> None:
    conversation = Conversation(_Store(), "t1", None, None)
    flow, plan, handle = _turn(conversation)
    pump = Pump(conversation, _reads(_events(), None))

    result = pump.drive(flow)

    assert isinstance(result, RunResult) and result.outcome == "success" and result.text == "hi"
    assert pump.kinds() == ["write:claim", "send", "receive", "write:save", "receive", "close"]
    claim = pump.effects[0]
    # A thread the store does not hold is claimed by creating its record (the first turn claims too).
    assert claim.arguments["expected_version"] is None and "data" in claim.arguments
    assert claim.arguments["owner"] == conversation._owner
    assert pump.effects[1] == Send(plan, handle) and pump.effects[-1] == Close(None)
    # The save names the version the claim made, and holds the folded reply.
    save = pump.effects[3]
    assert save.arguments["expected_version"] == 0
    assert [m["id"] for m in save.arguments["data"]["messages"]][-1] == "m1"


def _cut_while_reading(resuming: bool) -> tuple[Pump, TransportError, pytest.ExceptionInfo[TransportError]]:
    """A turn (or a resume) whose response is cut while it is read, pumped to its end."""
    conversation = Conversation(_Store(), "t1", None, None)
    flow, _, _ = _turn(conversation, resuming=resuming)
    cut = TransportError("connection reset", request_sent=True)
    answers = _reads()

    def answer(effect: Any) -> Any:
        return cut if effect is RECEIVE else answers(effect)
    pump = Pump(conversation, answer)
    with pytest.raises(TransportError) as caught:
        pump.drive(flow)
    return pump, cut, caught


def test_a_failed_turn_closes_the_response_then_gives_its_claim_back() -> None:
    pump, cut, caught = _cut_while_reading(resuming=False)

    assert caught.value is cut
    assert pump.kinds() == ["write:claim", "send", "receive", "close", "write:release"]
    assert pump.effects[3] == Close(cut)
    assert pump.effects[4].arguments == {"claimed_version": 0, "owner": pump.conversation._owner}


def test_a_resume_that_may_have_reached_the_agent_keeps_its_claim() -> None:
    pump, cut, caught = _cut_while_reading(resuming=True)

    assert caught.value is cut
    assert pump.kinds() == ["write:claim", "send", "receive", "close"]  # no release
    assert getattr(caught.value, "claim_held", False) is True


def test_a_resume_that_never_left_gives_its_claim_back() -> None:
    conversation = Conversation(_Store(), "t1", None, None)
    flow, _, _ = _turn(conversation, resuming=True)
    refused = TransportError("could not reach the agent", request_sent=False)
    answers = _reads()

    def answer(effect: Any) -> Any:
        return refused if isinstance(effect, Send) else answers(effect)
    pump = Pump(conversation, answer)

    with pytest.raises(TransportError):
        pump.drive(flow)

    # (opening failed: there is no response to close)
    assert pump.kinds() == ["write:claim", "send", "write:release"]


class _Interrupted(BaseException):
    """What an interruption from outside is in a shell (Ctrl-C, a cancelled task): here, a test's own."""

    landed: int | None = None


def test_an_interruption_as_the_claim_lands_lets_the_thread_go_before_anything_is_sent() -> None:
    conversation = Conversation(_Store(), "t1", None, None)
    flow, _, _ = _turn(conversation, interrupted=_Interrupted)
    interruption = _Interrupted()
    interruption.landed = 0  # (the claim landed; its caller was interrupted before it heard)
    answers = _reads()

    def answer(effect: Any) -> Any:
        return interruption if isinstance(effect, Write) and effect.op == "claim" else answers(effect)
    pump = Pump(conversation, answer)

    with pytest.raises(_Interrupted):
        pump.drive(flow)

    assert pump.kinds() == ["write:claim", "write:release"]


def test_a_store_failure_while_claiming_leaves_the_claim_in_doubt_for_the_same_object() -> None:
    conversation = Conversation(_Store(), "t1", None, None)
    flow, _, _ = _turn(conversation)
    lost = StoreError("connection dropped", thread_id="t1")
    pump = Pump(conversation, lambda effect: lost)

    with pytest.raises(StoreError):
        pump.drive(flow)

    assert pump.kinds() == ["write:claim"]  # nothing sent, nothing released
    assert conversation._unsure == 0  # (the version the claim would have made: this object's next run takes it up)


def test_a_stream_is_handed_to_the_caller_and_a_block_left_early_gives_a_turns_claim_back() -> None:
    conversation = Conversation(_Store(), "t1", None, None)
    flow, _, _ = _turn(conversation, quiet=False)
    pump = Pump(conversation, _reads())

    hand = pump.drive(flow)
    assert isinstance(hand, Hand)
    assert pump.kinds() == ["write:claim", "send", "hand"]
    # The caller reads one read's events (the events come as a list, the save before the terminal one)...
    receive = hand.receive
    assert next(receive) is RECEIVE
    delivered = receive.send(_events()[:2])
    assert [type(e).__name__ for e in delivered] == ["RunStartedEvent"]
    # ...and leaves its block before the end: the response is closed, then the claim given back.
    assert flow.send(False) == Close(None)
    tail = Pump(conversation, _reads())
    result = tail.drive(flow)
    assert tail.kinds() == ["write:release"]
    assert tail.effects[0].arguments == {"claimed_version": 0, "owner": conversation._owner}
    assert result is not None and result.outcome is None  # (the run so far: it never ended)
