"""How the ``agui`` command stops: Ctrl-C and SIGTERM, at any moment.

Ctrl-C reaches Python as ``KeyboardInterrupt``, raised between any two steps of the main thread. Most
of the command is written to be left at any step (a run's stream closes its response and gives its
claim back, the chat puts the thread back as saved). Two kinds of step are not:

- rich's live displays (the spinner, the redrawn tail of a streaming answer, the reasoning) hide the
  cursor and hook themselves into the console when they start, and undo both when they stop. Cut in
  the middle of ``Live.stop()``, the cursor stayed hidden after the command ended, and the hook kept
  drawing the half-stopped display again under every later line: the spinner reappeared under
  "turn cancelled", the tail under the next prompt. :func:`held_signals` holds Ctrl-C (and SIGTERM)
  while a display starts or stops, and delivers it as soon as the display is whole again.
- Leaving a run's stream after the first Ctrl-C: its exit closes the response, gives a claim back and
  saves the thread. A second Ctrl-C there cut that short; :class:`left_whole` holds it until the run
  is settled. (The library finishes httpcore's close itself when a second Ctrl-C cut it inside a read,
  before the stream's exit began: ``_sync/client_io.close_response``.) The client closes answers
  elsewhere too (one the agent refused, as the stream is entered, before its error is raised): the
  command holds the signals around every close the client makes (``_closing.closes_guarded``, set up
  by ``cli.main``), so a Ctrl-C never cuts one in its middle.
- SIGTERM (``kill``, a service manager, a CI job's timeout) ended the process at once, by default:
  a run's response was not closed, a resume's claim not given back, the cursor left hidden. The
  command now takes it as :class:`Terminated`, a ``KeyboardInterrupt`` (so every step that is safe to
  leave on Ctrl-C is left the same way), which ends the command with :data:`TERMINATED_STATUS`, in
  ``agui chat`` too (where Ctrl-C only cancels the turn in flight).

Signals can only be handled in the main thread: elsewhere (the CLI's classes used by an application's
worker thread) nothing is held or installed, and the application's own handlers are left alone. A
signal the process was started with ignored (``SIG_IGN``: a job started in the background by a shell
without job control) stays ignored.
"""

from __future__ import annotations

import os
import select
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from types import FrameType
from typing import Any, Generic, TypeVar

__all__ = ["Terminated", "TERMINATED_STATUS", "held_signals", "left_whole", "sigterm_as_interrupt", "wait_for_input"]

#: The exit status of a command ended by SIGTERM: 128 + 15, as a shell reports a process the signal killed.
TERMINATED_STATUS = 143


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C's ``KeyboardInterrupt`` would be.

    A ``KeyboardInterrupt``, so that what is left on Ctrl-C (a run's response, its claim, a live display)
    is left the same way; but it ends the command, where ``agui chat`` takes Ctrl-C to cancel a turn.
    """


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise Terminated


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` in the main thread.

    Only in place of the default action (the process killed at once): a handler someone installed,
    or an ignored SIGTERM, is kept. The previous handler is put back when the block ends.
    """
    if not _in_main_thread() or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


#: The signals :func:`held_signals` holds.
_HELD = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def held_signals(*, drop_interrupt: bool = False) -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM until the block ends, then deliver them to their handlers as they came.

    For the few steps that must not be cut in their middle (a live display starting or stopping: see
    the module docstring). Each signal is recorded while the block runs, and raised again once the
    handlers in place before it are back: Ctrl-C then raises ``KeyboardInterrupt`` right after the
    block, as if it had been pressed a moment later; SIGTERM first when both came. A signal that
    arrives before the block has set its handlers up is raised at once, before anything in the block
    ran; one that arrives while they are put back, after the block finished. An ignored signal stays
    ignored; outside the main thread nothing is held.

    With ``drop_interrupt``, a Ctrl-C that comes during the block is not delivered: the block is the
    handling of a Ctrl-C already (the chat cancelling a turn), and a second press while it runs is the
    same request. SIGTERM is delivered all the same.
    """
    if not _in_main_thread():
        yield
        return
    caught: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        caught.append(signum)

    previous: dict[int, Callable[[int, FrameType | None], Any] | int | None] = {}
    try:
        for held in _HELD:
            handler = signal.getsignal(held)
            if handler is signal.SIG_IGN or handler is None:
                continue  # (ignored stays ignored; None: a handler set outside Python, left alone)
            previous[held] = signal.signal(held, hold)
        yield
    finally:
        for number, before in previous.items():
            signal.signal(number, before)
        # Each once (a second Ctrl-C meanwhile is the same request), SIGTERM first: the first handler that
        # raises ends the delivery, and a Ctrl-C's KeyboardInterrupt raised before it lost the SIGTERM (the
        # chat, where Ctrl-C cancels a turn, went on). Terminated is a KeyboardInterrupt: it ends both.
        for number in sorted(dict.fromkeys(caught), key=lambda number: number != signal.SIGTERM):
            if not (drop_interrupt and number == signal.SIGINT):
                signal.raise_signal(number)


_T = TypeVar("_T")


class left_whole(Generic[_T]):  # noqa: N801 - used as a function is: with left_whole(thread.stream(...))
    """``manager`` as it is, but left with Ctrl-C and SIGTERM held (:func:`held_signals`) until its exit is done.

    For a run's stream: its exit closes the response, gives a claim back and saves the thread. A
    second Ctrl-C, pressed while the first one's exit closed the response, cut that close short
    (httpx marks a response closed before httpcore lets go of its connection, and no later close
    finishes it), or the claim's release; it now waits until the run is settled, and is raised
    right after.
    """

    def __init__(self, manager: AbstractContextManager[_T]) -> None:
        self._manager = manager

    def __enter__(self) -> _T:
        return self._manager.__enter__()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, traceback: Any) -> bool | None:
        with held_signals():
            return self._manager.__exit__(kind, exc, traceback)


def wait_for_input(stream: Any) -> None:
    """Wait until the terminal ``stream`` has something to read, or a signal comes (whose handler then
    raises, as Ctrl-C's does), before a prompt's read begins.

    Python notices Ctrl-C in a read only when the signal interrupts the read's system call. One that
    lands after the prompt was written but before the read began (the process descheduled in between)
    was handled only once the person pressed Enter: the command sat at its question with ``^C`` shown.
    Here the wait is a ``select`` on the terminal and on the interpreter's signal wake-up descriptor,
    which the signal's C handler writes to whenever it comes, before the wait or during it; the wait
    then ends, and the interpreter runs the handler at the loop's next step.

    Only for a terminal read in the main thread, on POSIX: a pipe's or a file's reader may hold lines
    in its buffer that ``select`` cannot see (and ends at once anyway), signals reach the main thread
    only, and Windows' ``select`` takes sockets alone. The wake-up descriptor in place before (an event
    loop's) is put back.
    """
    if os.name == "nt" or threading.current_thread() is not threading.main_thread():
        return
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return
    if not os.isatty(fd):
        return
    woken, wake = os.pipe()
    try:
        os.set_blocking(woken, False)
        os.set_blocking(wake, False)
        before = signal.set_wakeup_fd(wake, warn_on_full_buffer=False)
        try:
            while fd not in select.select([fd, woken], [], [])[0]:
                # (a signal: its handler runs at the interpreter's next step, here; one that does not
                # raise, a window's resize, leaves the wait to go on)
                with suppress(BlockingIOError):  # (read to its end: the pipe is left empty)
                    while os.read(woken, 64):
                        pass
        finally:
            signal.set_wakeup_fd(before)
    finally:
        os.close(woken)
        os.close(wake)
