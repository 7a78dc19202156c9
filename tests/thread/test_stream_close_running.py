"""A sync stream's events are never closed while another OS thread runs them.

CPython 3.11's ``generator.close()`` reads the running thread's frame before it looks at whether the
generator runs, and a frame in the middle of a call can read as one inside ``yield from``: the process
died of a segmentation fault once in a full test run (the reader inside a tool handler while the
stream's block was left: tests/thread/test_stream_left_while_read.py). The events are asked first.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from agui_client import _streams


class _Events:
    """The events' generator as the closing side sees it: whether a thread runs it, and the closes asked."""

    def __init__(self, running: bool) -> None:
        self.gi_running = running
        self.closes = 0

    def close(self) -> None:
        self.closes += 1


@pytest.mark.parametrize("running", [True, False])
def test_events_another_thread_runs_are_not_closed_and_others_are(running: bool) -> None:
    events = _Events(running)
    closed = _streams._closed_unless_running(SimpleNamespace(_events=events))  # type: ignore[arg-type]
    assert closed is not running
    assert events.closes == (0 if running else 1)


def test_a_generator_running_in_another_thread_goes_on_untouched() -> None:
    inside, release = threading.Event(), threading.Event()

    def wait() -> None:
        inside.set()
        assert release.wait(30)

    def events() -> Iterator[int]:
        yield 1
        wait()  # (a call in progress: the frame state CPython 3.11's close() misread)
        yield 2

    gen = events()
    assert next(gen) == 1
    seen: list[int] = []
    reader = threading.Thread(target=lambda: seen.append(next(gen)))
    reader.start()
    assert inside.wait(30)
    assert _streams._closed_unless_running(SimpleNamespace(_events=gen)) is False  # type: ignore[arg-type]
    release.set()
    reader.join(30)
    assert seen == [2]  # (not closed: it went on to its next value)
    assert _streams._closed_unless_running(SimpleNamespace(_events=gen)) is True
    assert gen.gi_frame is None  # (closed now that nothing runs it)
