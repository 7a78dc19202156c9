"""What ``Thread``'s pump does its own way, written by hand (the sync counterpart of
``_async/thread_io.py``; ``thread.py`` here is generated): a store call made where it is asked for, a
Ctrl-C held until a store write returned, an ``async def`` handler refused.
"""

from __future__ import annotations

import inspect
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from ..core.effects import Check, Write
from ..core.flow import Conversation
from ..core.plan import Plan

__all__ = ["ThreadIO", "INTERRUPTED", "judged"]

T = TypeVar("T")

#: What ends a run from outside, which the flow settles as an interruption: a Ctrl-C (in the async
#: shell, a cancelled task).
INTERRUPTED = KeyboardInterrupt


class ThreadIO(Conversation):
    """The store calls and handler calls of ``Thread``'s pump, made in the calling thread."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._taking = threading.RLock()  # (OS threads may share the object; re-entrant: see Conversation._exclusive)

    def _planned(self, *arguments: Any, **keywords: Any) -> Plan:
        """The run's plan (``Conversation._plan``), made here: the sync shell has no loop to keep serving."""
        return self._plan(*arguments, **keywords)

    def _load(self) -> Any:
        """The thread's stored record."""
        return self._store.load(self.id)

    def _handler_output(self, output: Any) -> Any:
        """What a tool handler returned; a coroutine (an ``async def`` handler) is refused: nothing here
        can await it."""
        if inspect.isawaitable(output):
            close = getattr(output, "close", None)
            if close is not None:
                close()  # (a coroutine never awaited would warn at garbage collection)
            raise TypeError("an async handler needs the async client (AsyncThread.run_until_done)")
        return output

    def _write(self, effect: Write) -> int:
        """Carry out a store write and keep ``_version`` the store's, even when Ctrl-C comes in the middle."""
        call = getattr(self._store, effect.op)
        with _interrupt_deferred():
            self._version = call(self.id, **effect.arguments)
        return self._version


def judged(check: Check[T]) -> T:
    """What ``check.judge()`` returns (a resume's answers judged), judged here: the sync shell has no loop
    to keep serving (the async shell judges a costly check in a worker thread)."""
    return check.judge()


@contextmanager
def _interrupt_deferred() -> Iterator[None]:
    """Hold a Ctrl-C that comes during a store write until the write has returned (and been recorded).

    A ``KeyboardInterrupt`` raised inside the store call, after its write landed but before it
    returned, would leave a claim nobody knows of, or a thread a version behind its own save. A second
    Ctrl-C raises at once (a store call that hangs cannot hold the process). Only in the main thread,
    and only while Python's own SIGINT handler is installed (an application's is left alone).
    """
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    caught: list[Any] = []

    def hold(number: int, frame: Any) -> None:
        if caught:  # (a second Ctrl-C: the person means it, even if the store call hangs)
            raise KeyboardInterrupt
        caught.append(frame)

    signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if caught:
            raise KeyboardInterrupt  # (in place of whatever the write raised: the person's Ctrl-C comes first)
