"""What ``AsyncThread``'s pump does its own way, written by hand (``thread.py`` here is the source of the
sync shell; ``_sync/thread_io.py`` is this module's sync counterpart): a store call in a worker thread
(on the loop for a ``MemoryStore``), a cancelled store call waited out, a handler's coroutine awaited.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, TypeVar

import anyio.to_thread
import sniffio
from anyio.lowlevel import checkpoint

from ..core.effects import Check, Write
from ..core.flow import Conversation, planned
from ..core.plan import Plan, ToolHandler
from ..wire.sink import worker_context

__all__ = ["AsyncThreadIO", "INTERRUPTED", "calls_on_loop", "in_worker", "judged", "turn"]

T = TypeVar("T")

#: What ends a run from outside, which the flow settles as an interruption: a cancelled task (in the
#: sync shell, a Ctrl-C).
INTERRUPTED = asyncio.CancelledError


class AsyncThreadIO(Conversation):
    """The store calls and handler calls of ``AsyncThread``'s pump: awaited, the store's in a worker
    thread unless it is a ``MemoryStore`` of its own (``calls_on_loop``)."""

    def __init__(self, store: Any, thread_id: str, clock: Callable[[], datetime] | None,
                 tool_handlers: Mapping[str, ToolHandler] | None, legacy_interrupts: str | None = None) -> None:
        super().__init__(store, thread_id, clock, tool_handlers, legacy_interrupts)
        self._on_loop = calls_on_loop(store)
        # (loops in several OS threads may share the object, as a sync one; re-entrant: see Conversation._exclusive)
        self._taking = threading.RLock()

    async def _planned(self, *arguments: Any, **keywords: Any) -> Plan:
        """The run's plan (``Conversation._planning``, given the arguments as they came), its checks made
        where :func:`judged` makes them (a check of answers against the interrupts' schemas in a worker
        thread), the rest on the loop, where its other tasks read and change the thread. The thread
        object is held (``_exclusive``) while the plan is made, as while its run is in flight."""
        planning = self._planning(*arguments, **keywords)
        return planned(planning, await judged(next(planning)))

    async def _load(self) -> Any:
        """The thread's stored record, read in a worker thread (on the loop for a ``MemoryStore``)."""
        if self._on_loop:
            return self._store.load(self.id)
        return await in_worker(self._store.load, self.id)

    async def _handler_output(self, output: Any) -> Any:
        """What a tool handler returned, awaited when it is a coroutine (an ``async def`` handler)."""
        return await output if inspect.isawaitable(output) else output

    async def _write(self, effect: Write) -> int:
        """Run a store write in a worker thread and keep ``_version`` the store's, even when cancelled."""
        call = getattr(self._store, effect.op)
        if self._on_loop:
            # (an in-memory store: a worker thread would cost more than the call.) The write encodes
            # what the run changed: the loop gets a whole turn first (``turn``: the tasks timers woke
            # too), so that it is a step of its own, not one with the fold of the read that ended the
            # run. A cancellation that comes in that turn lets the write land first, as a worker
            # thread's would, and the caller sees the cancellation, as from a worker thread
            # (``in_worker``), even when the write then fails: its error in the cancellation's place
            # would pass for an ordinary failure of a task not cancelled.
            try:
                await turn()
            except BaseException:
                try:
                    self._version = call(self.id, **effect.arguments)
                except Exception:  # noqa: BLE001, S110 - the cancellation is what the caller sees
                    pass
                raise
            self._version = call(self.id, **effect.arguments)
            return self._version
        landed: list[int] = []

        def write() -> int:
            landed.append(call(self.id, **effect.arguments))
            return landed[0]

        # A cancellation cannot stop a write running in its thread: it is waited out (``in_worker``),
        # and the version it landed kept, so the thread never loses track of a claim or a save.
        try:
            self._version = await in_worker(write)
        except asyncio.CancelledError:
            if landed:
                self._version = landed[0]
            raise
        return self._version


async def turn() -> None:
    """Give the loop a whole turn before going on: the callbacks already queued, what its poll finds
    ready, every timer already due, and the tasks all of these wake, then this task.

    ``await asyncio.sleep(0)`` (anyio's ``checkpoint()``) is less than that. It queues the task's next
    step at the end of the loop's ready queue, and asyncio moves the timers that have come due onto that
    queue only at the start of its next pass, behind that step; a task a timer wakes (a ticker, a
    heartbeat, a deadline's check) is queued by the timer's callback behind it again. So the step after
    the turn ran before any of them: an in-memory save after a run's last read held the loop on from
    that read's fold (a 1 ms ticker saw one gap spanning both, 85-95 ms of the loop's CPU on 200 forms),
    and a read loop's next piece went on from the last one's fold. Here the task waits for a timer of
    its own at the current time, which the loop's timer queue orders behind every timer due before it:
    their callbacks run first, and the tasks they wake are queued ahead of this one.

    Under another library than asyncio (trio, through anyio) it is anyio's ``checkpoint()``: trio
    expires the deadlines that have come due before it runs each batch of ready tasks, so the tasks they
    wake run in the same batch as this task's next step (in an order trio picks), not a batch later.
    """
    if sniffio.current_async_library() != "asyncio":
        await checkpoint()
        return
    loop = asyncio.get_running_loop()
    woken = loop.create_future()
    timer = loop.call_at(loop.time(), _wake, woken)
    try:
        await woken
    finally:
        timer.cancel()  # (cancelled while waiting: the timer has nothing left to wake)


def _wake(woken: asyncio.Future[None]) -> None:
    if not woken.done():
        woken.set_result(None)


async def in_worker(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``await asyncio.to_thread(call, ...)``, but a cancelled caller waits for the call to end.

    A store call cannot be stopped once its worker thread runs it: a read left running outlived the
    cancelled ``reload()`` or ``load_thread()``, and the ``async with`` of the client (and the store the
    application closes next) around it; a write must land before the thread knows its version. A
    cancellation is waited out on the loop (it goes on serving); a cancel scope, which cancels that
    wait too, blocks for the rest of the call (a store call, bounded by the store's own timeouts).
    """
    # (as asyncio.to_thread: the call sees the caller's context; a warning it says names the caller's line)
    context = worker_context()
    if sniffio.current_async_library() != "asyncio":
        # Under trio (through anyio): anyio's worker thread, waited for whole (a cancellation is held
        # until the call ends, then raised at the caller's next checkpoint). asyncio's executor, asked
        # for here before, failed every store call but a MemoryStore's: no running asyncio loop.
        return await anyio.to_thread.run_sync(context.run, functools.partial(call, *args, **kwargs))
    finished = threading.Event()

    def work() -> T:
        try:
            return context.run(call, *args, **kwargs)
        finally:
            finished.set()

    # Handed to the executor now, as a future no task owns: cancelling tasks (a cancel scope, or every
    # task at asyncio.run()'s shutdown) cannot call the call off once it was asked for.
    future = asyncio.get_running_loop().run_in_executor(None, work)
    future.add_done_callback(_retrieved)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        try:
            await asyncio.shield(future)
        except asyncio.CancelledError:
            finished.wait()
        except Exception:  # noqa: BLE001, S110 - the read's own failure: the cancellation is what the caller sees
            pass
        raise


async def judged(check: Check[T]) -> T:
    """What ``check.judge()`` returns (a resume's answers judged), judged in a worker thread when it checks
    answers against schemas (``costly``; ``in_worker``: a cancelled caller waits for it), else on the loop.

    A resume's checks may spend up to the client's ``max_schema_steps`` (some 4.5 s of CPU by default;
    0.1 s for one small hostile schema), and on the loop every other run waited for them: a check of 1.1
    million steps held a loop 5.6 s on a loaded two-core machine, and in a worker thread the loop went
    on with ticks 1.8 ms apart (median; 36 ms at the 99th percentile, 72 ms at most: the check holds the
    interpreter's lock between switches). The one way every such check is made: the plan's, the tool
    loop's before its handlers run, and the one before a retried request is sent.
    """
    return await in_worker(check.judge) if check.costly else check.judge()


def calls_on_loop(store: Any) -> bool:
    """Whether the async thread calls ``store`` on the event loop rather than in a worker thread: a
    ``MemoryStore`` whose reads and writes are its own (a dict and a lock held for dict operations).

    Handing such a call to a worker thread cost more than the call (a thread's wake-up and the GIL
    passed back and forth, twice a run: measured by ``python -m bench.concurrency``); a subclass that
    overrides any of them may wait on something, and keeps the worker thread.
    """
    from ..stores.memory import MemoryStore

    kind = type(store)
    return isinstance(store, MemoryStore) and all(
        getattr(kind, name) is getattr(MemoryStore, name) for name in ("load", "save", "append", "claim", "release"))


def _retrieved(task: asyncio.Future[Any]) -> None:
    # (a write whose caller was cancelled: its failure was dealt with, or is the cancellation's)
    if not task.cancelled():
        task.exception()
