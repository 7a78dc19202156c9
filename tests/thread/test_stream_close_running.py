"""A sync stream's block left while another OS thread reads it: nothing the reader runs is closed, and
whatever the two threads' timing, exactly one of them settles the run.

Before, the stream's events were one generator that the block's leaving side closed unless it ran.
CPython 3.11's ``generator.close()`` reads the running thread's frame before it looks at whether the
generator runs, and the process died of a segmentation fault once in a full test run (the reader inside
a tool handler while the block was left: tests/thread/test_stream_left_while_read.py); a look first
narrowed that to the moment between the look and the close. Now nothing is closed: the leaving side
marks the stream left and then looks whether a reader holds its one ``_token``; a reader takes the token
and then looks at the mark. These tests hold each side at the points that matter (gates, no sleeps),
on a stream whose steps are the test's own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import agui_client as ag
from agui_client import _streams
from agui_client.wire.types.run import RunAgentInput

BOUND = 10.0


class Pump:
    """A run's steps as a thread's pump gives them (:func:`_streams.stepped_by`): each a list of the events
    one read folded, driven through a generator as the pump's flow is, and the settling the block hands
    over, with the OS thread each ran in."""

    def __init__(self, reads: int, hold: threading.Event | None = None) -> None:
        self.flow = self._flow(reads)
        self.hold = hold
        self.inside = threading.Event()
        self.steps = 0
        self.settled: list[str] = []

    def _flow(self, reads: int) -> Iterator[list[Any]]:
        for n in range(reads):
            yield [ag.TextMessageContentEvent(message_id="m", delta=f"{n}a"),
                   ag.TextMessageContentEvent(message_id="m", delta=f"{n}b")]

    def step(self) -> Any:
        """A read's events, or once the flow is over, the run's result (here a string: the stream ends)."""
        self.steps += 1
        self.inside.set()
        if self.hold is not None:
            assert self.hold.wait(BOUND)
        return next(self.flow, "result")

    def settle(self) -> None:
        self.settled.append(threading.current_thread().name)


class HeldToken(list[bool]):
    """A stream's ``_token`` that, once a reader took it, holds that reader there (before it looks at
    whether the block was left) until ``go`` opens."""

    def __init__(self) -> None:
        super().__init__([True])
        self.took = threading.Event()
        self.go = threading.Event()

    def pop(self, index: Any = -1) -> bool:
        taken = super().pop(index)
        self.took.set()
        assert self.go.wait(BOUND)
        return taken


def stream_of(pump: Pump) -> ag.RunStream:
    stream = ag.RunStream(RunAgentInput(thread_id="t", run_id="r"))
    _streams.stepped_by(stream, pump.step)
    return stream


def in_thread(read: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    """``read()`` in an OS thread named "reader": what it returned or raised."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(read())
        except BaseException as exc:  # (the test says what it was)
            out.append(exc)

    thread = threading.Thread(target=run, name="reader", daemon=True)
    thread.start()
    return thread, out


def deltas(events: Any) -> list[str]:
    return [event.delta for event in events]


def test_a_reader_that_took_the_token_as_the_block_was_left_takes_no_step_and_settles_the_run() -> None:
    # The reader took the token and is held before it looks at the mark: the leaving side, looking now,
    # finds a reader inside and hands it the settling. The reader then sees the mark, takes no step (a
    # step alongside the settling would drive the run's flow with it) and settles.
    pump = Pump(reads=3)
    stream = stream_of(pump)
    token = stream._token = HeldToken()
    reader, out = in_thread(lambda: deltas(stream))
    assert token.took.wait(BOUND)

    with pytest.raises(ag.StreamMisused) as left:
        _streams.stream_left(stream, pump.settle)
    assert (left.value.code, left.value.run_id) == ("STREAM-SHARED", "r")
    token.go.set()
    reader.join(BOUND)

    assert out == [[]]
    assert pump.steps == 0 and pump.settled == ["reader"]
    assert deltas(stream) == []  # (over: a later read takes no step either)
    assert pump.steps == 0 and token == [True]  # (given back)


def test_a_reader_that_comes_after_the_block_was_left_takes_no_step() -> None:
    pump = Pump(reads=3)
    stream = stream_of(pump)
    events = iter(stream)
    assert next(events).delta == "0a"

    _streams.stream_left(stream, pump.settle)  # (no reader inside: the settling is the caller's)

    assert pump.settled == []
    assert deltas(events) == [] and deltas(stream) == []
    assert pump.steps == 1


def test_a_block_left_while_a_reader_is_inside_a_step_closes_nothing_and_the_reader_settles() -> None:
    hold = threading.Event()
    pump = Pump(reads=3, hold=hold)
    stream = stream_of(pump)
    reader, out = in_thread(lambda: deltas(stream))
    assert pump.inside.wait(BOUND)

    with pytest.raises(ag.StreamMisused) as left:
        _streams.stream_left(stream, pump.settle)
    assert left.value.code == "STREAM-SHARED"
    assert pump.flow.gi_frame is not None and pump.settled == []  # (its flow untouched, the settling handed)
    hold.set()
    reader.join(BOUND)

    # (the step came out with its read's events, folded and not handed: the block was left)
    assert out == [[]] and pump.steps == 1
    assert pump.settled == ["reader"]
    assert pump.flow.gi_frame is not None  # (still nothing closed: the settling is what ends the run)


def test_a_second_reader_while_one_is_inside_a_step_is_refused_and_the_first_goes_on() -> None:
    hold = threading.Event()
    pump = Pump(reads=2, hold=hold)
    stream = stream_of(pump)
    reader, out = in_thread(lambda: deltas(stream))
    assert pump.inside.wait(BOUND)

    with pytest.raises(ag.StreamMisused) as refused:
        next(iter(stream))
    assert refused.value.code == "STREAM-SHARED"
    with pytest.raises(ag.StreamMisused) as closing:
        iter(stream).close()  # type: ignore[attr-defined]
    assert closing.value.code == "STREAM-SHARED"
    hold.set()
    reader.join(BOUND)

    assert out == [["0a", "0b", "1a", "1b"]] and pump.steps == 3  # (the third: the flow's end, as a result)


def test_a_steps_events_are_read_once_across_readers_and_close_ends_them() -> None:
    pump = Pump(reads=3)
    stream = stream_of(pump)
    first, second = iter(stream), iter(stream)
    assert [next(first).delta, next(second).delta, next(first).delta] == ["0a", "0b", "1a"]
    assert pump.steps == 2  # (one step a read, taken only once its events were all read)

    first.close()  # type: ignore[attr-defined]

    assert deltas(second) == [] and pump.steps == 2


class HeldEnd:
    """The rest of a step's events, none left, whose first reader to find that out is held there (before
    it takes the token for a step of its own) until ``go`` opens; a later reader finds it out at once."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.go = threading.Event()

    def __iter__(self) -> HeldEnd:
        return self

    def __next__(self) -> Any:
        if not self.reached.is_set():
            self.reached.set()
            assert self.go.wait(BOUND)
        raise StopIteration


def test_a_reader_that_found_no_events_left_reads_the_step_another_reader_took_meanwhile() -> None:
    # The reader held found the last step's events all read; meanwhile another reader took the next step.
    # The held reader, once it has the token, sees a step was taken since it looked: it reads that step's
    # events rather than taking another step over them (which would have passed "0b" over).
    pump = Pump(reads=2)
    stream = stream_of(pump)
    held = stream._rest = HeldEnd()
    reader, out = in_thread(lambda: next(iter(stream)).delta)
    assert held.reached.wait(BOUND)

    assert next(iter(stream)).delta == "0a"
    held.go.set()
    reader.join(BOUND)

    assert out == ["0b"] and pump.steps == 1
    assert deltas(stream) == ["1a", "1b"]


def test_a_step_that_raised_ends_the_events_and_a_later_read_takes_no_step() -> None:
    # As a generator that raised was over: the reader has the step's error, and a later read, by it or by
    # another, ends at once rather than driving the run's flow again past the failure.
    calls: list[int] = []

    def failing() -> Any:
        calls.append(1)
        raise ConnectionResetError("the agent went away")

    stream = ag.RunStream(RunAgentInput(thread_id="t", run_id="r"))
    _streams.stepped_by(stream, failing)
    events = iter(stream)
    with pytest.raises(ConnectionResetError):
        next(events)

    assert deltas(events) == [] and deltas(stream) == []
    assert calls == [1] and stream._token == [True]  # (given back)


def test_a_close_holding_the_token_as_the_block_was_left_settles_the_run() -> None:
    # close() takes the token as a step does: the leaving side, looking while it is held, finds the token
    # out and hands the settling over. The closer must take it, as a reader does, or nobody settles the
    # run (its claim kept until it expires).
    pump = Pump(reads=3)
    stream = stream_of(pump)
    token = stream._token = HeldToken()
    events = iter(stream)
    closer, out = in_thread(events.close)  # type: ignore[attr-defined]
    assert token.took.wait(BOUND)

    with pytest.raises(ag.StreamMisused) as left:
        _streams.stream_left(stream, pump.settle)
    assert left.value.code == "STREAM-SHARED"
    token.go.set()
    closer.join(BOUND)

    assert out == [None] and pump.steps == 0
    assert pump.settled == ["reader"] and token == [True]
    assert deltas(stream) == []
