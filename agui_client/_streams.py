"""The streams a thread hands out: one run's events (``RunStream``), or every run of a tool loop's
(``LoopStream``), each event folded into the thread before the caller sees it.

What a stream offers beyond its events (the text deltas, ``get_final_result()``, ``result``) is written
once, in a base class per shell, whatever the stream carries; the thread's pumps (``thread.py``) fill
the stream as they read.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from functools import partial, wraps
from types import TracebackType
from typing import Any, ParamSpec, TypeVar

from ._inert import quoted_name
from .core.fold import ThreadState
from .core.result import RunResult
from .errors import StreamMisused, StreamNotFinished
from .wire.types import events as ev
from .wire.types import messages as msg
from .wire.types.run import RunAgentInput

__all__ = ["RunStream", "AsyncRunStream", "LoopStream", "AsyncLoopStream",
           # How a thread's pump fills the streams it hands out (not the package's API):
           "stepped_by", "runs_in", "stream_left", "end", "ended", "fail", "failure", "failed_settling", "ran",
           "reading",
           # How a thread's stream() and stream_until_done() hand out their block (neither is the API):
           "entered_once", "async_entered_once"]

_P = ParamSpec("_P")
_T = TypeVar("_T")

logger = logging.getLogger("agui_client")


class _Ending:
    """How a stream ends, in either shell: the thread it folds into, its result once it ended, the error
    it failed with; what it carries (one run, or a tool loop's) says what ``StreamNotFinished`` names."""

    def __init__(self, state: ThreadState | None) -> None:
        self._state = state
        self._result: RunResult | None = None
        self._failed: BaseException | None = None
        # A store error's text as the thread's log lines write it (through the run's redactor), for the
        # line a reader writes when the settling the block handed it fails (stream_left).
        self._said: Callable[[BaseException], str] = str

    @property
    def result(self) -> RunResult:
        """The ``RunResult``, once the stream ended or its ``with`` block was left (a tool loop's is
        its last run's).

        Raises:
            StreamNotFinished: the stream is still being read (or failed: the error raised in the
                block carries what was folded).
        """
        if self._result is None:
            raise self._unfinished()
        return self._result

    def _unfinished(self) -> StreamNotFinished:
        raise NotImplementedError

    def _run_read(self) -> str | None:
        """The run this stream reads now (for the errors that name it)."""
        raise NotImplementedError


class _Stream(_Ending):
    """What a stream of folded events offers, whatever runs it carries (sync)."""

    def __init__(self, state: ThreadState | None) -> None:
        super().__init__(state)
        # How its readers (_Reader) take the events, as an async stream's do: the pump's step (None once
        # the stream is over or its block was left), what a run's result leads to (a tool loop's next
        # run's step; None: the stream is over), and the rest of the last step's events (None: none).
        self._step: Callable[[], Any] | None = None
        self._after: Callable[[RunResult], Callable[[], Any] | None] | None = None
        self._rest: Iterator[ev.Event | ev.UnknownEvent] | None = None
        # The one token a reader takes (pops) to go inside a step and gives back after: a second reader
        # finding none is refused, and the block's leaving side looks at it to learn whether a reader is
        # inside. (A list's pop and append are each one step under the interpreter's lock, as a Lock's
        # acquire is, at a quarter of the cost: taken once a read's events, most often once an event.)
        self._token: list[bool] = [True]
        # How the block's leaving side hands the run's settling to a reader inside a step (stream_left):
        # the block was left (for good), the settling handed over (taken once), and the lock both sides
        # take around the hand-over.
        self._left = False
        self._settle: Callable[[], Any] | None = None
        self._lock = threading.Lock()

    def __iter__(self) -> Iterator[ev.Event | ev.UnknownEvent]:
        return _Reader(self)

    @property
    def text_stream(self) -> Iterator[str]:
        """The main agent's text as it streams: each ``TEXT_MESSAGE_CONTENT`` delta of an assistant
        message that no subagent owns, as ``str``. Subagents' text: :meth:`text_deltas`.

        It reads the same events as iterating the stream does (each event reaches one reader).
        """
        return self.text_deltas()

    def text_deltas(self, *, subagents: bool = False) -> Iterator[str]:
        """The assistant text deltas as they stream; ``subagents=True`` also yields subagents' text
        (tell them apart by iterating the events: each carries ``subagent_run_id``)."""
        pick = _TextPicker(self._state, subagents)
        for event in self:
            text = pick(event)
            if text is not None:
                yield text

    def get_final_result(self) -> RunResult:
        """Read the rest of the stream (each event still folded) and return its ``RunResult``.

        Raises:
            ProtocolError, TransportError: reading the rest failed, as iterating would (the error's
                ``.result`` holds what was folded).
            StreamNotFinished: the stream had already failed in this block.
        """
        if self._result is None:
            for _ in self:
                pass
        return self.result


class _AsyncStream(_Ending):
    """What a stream of folded events offers, whatever runs it carries (async: see :class:`_Stream`)."""

    def __init__(self, state: ThreadState | None) -> None:
        super().__init__(state)
        # How its readers (_read) take the events: the pump's step (_BUSY while a reader is inside it,
        # None once the stream is over or its block was left), what a run's result leads to (a tool
        # loop's next run's step; None: the stream is over), and the rest of a step's events a reader
        # left before their end (None: none).
        self._step: Callable[[], Awaitable[Any]] | None = None
        self._after: Callable[[RunResult], Awaitable[Callable[[], Awaitable[Any]] | None]] | None = None
        self._rest: Iterator[ev.Event | ev.UnknownEvent] | None = None
        # The run's settling, handed by the block's leaving side to the reader inside a step (stream_left).
        self._settle: Callable[[], Awaitable[Any]] | None = None

    def __aiter__(self) -> AsyncIterator[ev.Event | ev.UnknownEvent]:
        return _read(self)

    @property
    def text_stream(self) -> AsyncIterator[str]:
        """The main agent's text deltas as they stream (see :attr:`RunStream.text_stream`)."""
        return self.text_deltas()

    async def text_deltas(self, *, subagents: bool = False) -> AsyncIterator[str]:
        """The assistant text deltas, subagents' too when asked (see :meth:`RunStream.text_deltas`)."""
        pick = _TextPicker(self._state, subagents)
        async for event in self:
            text = pick(event)
            if text is not None:
                yield text

    async def get_final_result(self) -> RunResult:
        """Read the rest of the stream and return its ``RunResult`` (see :meth:`RunStream.get_final_result`)."""
        if self._result is None:
            async for _ in self:
                pass
        return self.result


class _OneRun(_Ending):
    """What a stream of one run adds, in either shell: the run's input (set by the stream's ``__init__``)."""

    run_input: RunAgentInput

    def __repr__(self) -> str:
        return _stream_repr(self, f"thread_id={quoted_name(self.run_input.thread_id)} "
                                  f"run_id={quoted_name(self.run_input.run_id)}")

    def _unfinished(self) -> StreamNotFinished:
        return _not_finished(self.run_input.run_id, self._failed)

    def _run_read(self) -> str | None:
        return self.run_input.run_id


class _Runs(_Ending):
    """What a tool loop's stream adds, in either shell: each run's result, and the run being read."""

    def __init__(self, state: ThreadState | None) -> None:
        super().__init__(state)
        self._results: list[RunResult] = []
        self._run_id: str | None = None  # (the run being read, for StreamNotFinished; None between runs)

    def __repr__(self) -> str:
        return _stream_repr(self, f"thread_id={quoted_name(self._state.thread_id if self._state else None)} "
                                  f"runs={len(self._results)}")

    def _run_read(self) -> str | None:
        return self._run_id

    @property
    def results(self) -> tuple[RunResult, ...]:
        """Each run's ``RunResult``, in order, as far as the loop went (a run left by ``break`` included; one
        left by an error has no result: the error's ``.result`` holds what was folded)."""
        return tuple(self._results)

    def _unfinished(self) -> StreamNotFinished:
        if self._run_id is not None or not self._results:
            return _not_finished(self._run_id, self._failed, "the tool loop")
        # Between runs: the last run ended and the next had not opened (its claim refused, a handler
        # interrupted, the run refused as it was made). Naming the run that ended would point at a run
        # that went well; what the caller can act on is the error, and the runs that ended.
        last = quoted_name(self._results[-1].run_id)
        failed = self._failed
        if failed is not None:
            return StreamNotFinished(f"the tool loop failed after run {last} ended, before its next run opened "
                                     f"({type(failed).__name__}: {failed}), so it has no result; .results holds "
                                     "each run that ended", run_id=None, failed=failed)
        return StreamNotFinished(f"the tool loop has not ended (run {last} ended, its next has not opened); read "
                                 ".result after the with block, or call get_final_result() to read the rest first",
                                 run_id=None)


class RunStream(_OneRun, _Stream):
    """The events of one run as they arrive, typed and already folded into the thread.

    Iterate it for the events (``*_CHUNK`` shorthand arrives expanded), or read ``text_stream`` for the
    main agent's text alone. ``result`` is the ``RunResult`` once the stream ended (or the ``with`` block
    was left); ``get_final_result()`` reads the rest first. Leaving the ``with`` block early closes the
    response, and the result says so (``outcome`` ``None`` and a ``TR-16`` warning: docs/streaming.md).
    A stream has one reader at a time (a second task or thread reading at once is refused, as is a
    second entry of its block: :class:`~agui_client.errors.StreamMisused`). Its block left while another
    task or thread is reading it raises ``StreamMisused`` (``STREAM-SHARED``) there; that reader settles
    the run when its read comes back, as leaving the block would have, and its iteration then ends.

    Example::

        with thread.stream("Summarise the report") as stream:
            for text in stream.text_stream:
                print(text, end="", flush=True)
        result = stream.result                 # a RunResult: the stream ended
        print(result.outcome)
    """

    def __init__(self, run_input: RunAgentInput, state: ThreadState | None = None) -> None:
        super().__init__(state)
        self.run_input = run_input


class AsyncRunStream(_OneRun, _AsyncStream):
    """The async twin of :class:`RunStream` (``async for``; ``await get_final_result()``).

    Example::

        thread = client.thread()
        async with thread.stream("Summarise the report") as stream:  # entered, not awaited
            async for text in stream.text_stream:
                print(text, end="", flush=True)
        print(stream.result.outcome)  # a RunResult: the stream ended
    """

    def __init__(self, run_input: RunAgentInput, state: ThreadState | None = None) -> None:
        super().__init__(state)
        self.run_input = run_input


class LoopStream(_Runs, _Stream):
    """The events of every run of a tool loop (``thread.stream_until_done()``), in order, each folded
    into the thread before it is yielded; the tool handlers run between one run's terminal event and
    the next run's first.

    Iterating it, ``text_stream``, ``text_deltas()`` and ``get_final_result()`` read as a
    :class:`RunStream`'s do, across the runs. ``results`` holds each run's ``RunResult`` as it ended;
    ``result`` is the last one once the loop stopped (or the ``with`` block was left: leaving early
    closes the open run's response, as leaving a stream does, and the loop stops there).

    Example::

        thread = client.thread(tool_handlers={"confirm_choice": lambda question: "yes"})
        with thread.stream_until_done("Pick one for me") as loop:
            for text in loop.text_stream:      # every run's text as sent (nothing between two answers)
                print(text, end="", flush=True)
        print(loop.result.outcome, len(loop.results))  # success 2
    """

    def __init__(self, state: ThreadState | None = None) -> None:
        super().__init__(state)


class AsyncLoopStream(_Runs, _AsyncStream):
    """The async twin of :class:`LoopStream` (``async for``; ``await get_final_result()``).

    Example::

        thread = client.thread(tool_handlers={"confirm_choice": lambda question: "yes"})
        async with thread.stream_until_done("Pick one for me") as loop:  # entered, not awaited
            async for text in loop.text_stream:
                print(text, end="", flush=True)
        print(loop.result.outcome, len(loop.results))  # success 2
    """

    def __init__(self, state: ThreadState | None = None) -> None:
        super().__init__(state)


class _Reader:
    """One reader's way through a sync stream's events (what ``iter(stream)`` returns): the events
    themselves, one at a time, or :class:`StreamMisused` for a second OS thread reading while another is
    inside a step.

    It takes the pump's steps itself, as an async stream's readers do (:func:`_read`), and hands out
    what each folded. A step is taken holding the stream's one ``_token``, taken without waiting: a
    second reader finding none is refused, and the block's leaving side looks at it (never waits on it)
    to learn whether a reader is inside (:func:`stream_left`). The events a step folded are the
    stream's, not the reader's: a reader that leaves early (``break``) leaves the rest to the next, and
    two threads taking them between steps each get different ones. ``close()`` ends the events.

    Before, the events were one generator, and the block's leaving side closed it unless it ran. The
    generator's ``close()`` with another thread running it could kill the process (CPython 3.11 reads
    the running thread's frame first), and a thread could start running it between the look and the
    close. Nothing is closed now: the leaving side marks the stream left and then looks at ``_token``;
    the reader takes ``_token`` and then looks at the mark. Each side writes before it reads, so at least
    one sees the other: a reader that took ``_token`` too late takes no step, and one inside at the look is
    handed the run's settling, which it does as its step comes out (the mark seen), its iteration ending
    there: no more events (or its step's error). Not ``STREAM-SHARED``: it was the one reader, and the
    misuse, leaving the block while it read, is reported where it was made, to the block's side.

    An event costs a call of ours where it cost a generator's step; a step (one read's events, most often
    one payload's) costs the token taken and given back.
    """

    __slots__ = ("_stream",)

    def __init__(self, stream: _Stream) -> None:
        self._stream = stream

    def __iter__(self) -> _Reader:
        return self

    def __next__(self) -> ev.Event | ev.UnknownEvent:
        stream = self._stream
        while True:
            rest = stream._rest
            if rest is not None:
                event = next(rest, None)  # (an event is never None)
                if event is not None:
                    return event
            token = stream._token
            try:
                token.pop()
            except IndexError:
                raise _shared(stream) from None  # (another is inside a step: this reader was, and settles, nothing)
            try:
                # (another reader took a step since this one looked: its events are read first; the rest
                # is set before the token is given back, so no step's events are taken twice or passed over)
                step = stream._step
                if stream._rest is not rest:
                    item: list[ev.Event | ev.UnknownEvent] | tuple[()] | None = ()
                elif step is None or stream._left:
                    item = None  # (over, or left: a step alongside the settling would drive the run's flow)
                else:
                    item = step()
                    if type(item) is not list:
                        item = _after_result(stream, item)
                if item is None:
                    stream._rest = None
                elif len(item) == 1:
                    stream._rest = None  # (a read's one event, the usual case: handed at once, nothing left)
                elif item:
                    stream._rest = iter(item)
            except BaseException as exc:
                stream._step = None  # (a step that raised ends the events, as a generator that raised was over)
                token.append(True)
                if stream._left:
                    _settled_here(stream, exc)
                raise
            token.append(True)
            # (the mark looked at after the token was given back: the block, left while this reader was
            # inside a step, handed it the run's settling; left before it took the token, no step was taken)
            if stream._left:
                _settled_here(stream)
                raise StopIteration
            if item is None:
                raise StopIteration
            if len(item) == 1:
                return item[0]

    def close(self) -> None:
        """End the stream's events here, as closing the generator this used to be did: the run is left.

        Holding the token as the stream's block is left, it is handed the run's settling as a reader inside
        a step is, and settles the run here (what it raises is raised).

        Raises:
            StreamMisused: another OS thread is inside a step of the stream (``STREAM-SHARED``).
        """
        stream = self._stream
        token = stream._token
        try:
            token.pop()
        except IndexError:
            raise _shared(stream) from None
        stream._step = stream._rest = None
        token.append(True)
        # (the mark looked at after the token was given back, as a reader does: the block's leaving side,
        # looking while this held it, handed the settling here, and nobody else would make it)
        if stream._left:
            _settled_here(stream)


def _after_result(stream: _Stream, result: Any) -> list[ev.Event | ev.UnknownEvent] | None:
    """What a run's ``result`` leads to (``_after``): the events of a tool loop's next run's first step
    (taken on as the stream's step), or ``None``: the stream is over, or its block was left meanwhile (a
    tool loop's handlers ran: the run they opened is not read from)."""
    while True:
        assert stream._after is not None  # (set with the step: stepped_by, runs_in)
        step = stream._after(result)
        if step is None or stream._left:
            stream._step = None
            return None
        stream._step = step
        result = step()
        if type(result) is list:
            return result


def _settled_here(stream: _Stream, raising: BaseException | None = None) -> bool:
    """Settle the run in this OS thread when the block's leaving side handed it over while this thread was
    inside the stream's step (:func:`stream_left`); whether it did. Taken under the stream's lock, once.
    ``raising``: the step's own error, on its way out (see :func:`_settling_failed`)."""
    with stream._lock:
        settle, stream._settle = stream._settle, None
    if settle is None:
        return False  # (the leaving side settled it, or the block is not left)
    stream._step = stream._rest = stream._after = None  # (over: every later read ends at once)
    try:
        settle()
    except Exception as failed:
        if raising is None:
            raise
        _settling_failed(stream, raising, failed)
    return True


def _settling_failed(stream: _Ending, raising: BaseException, failed: Exception) -> None:
    """The settling handed to a reader failed (the store, giving the claim back) while the reader's step
    raised ``raising``: logged, not raised. The step's error is what that reader must see, as the block's
    own exit has a failed release logged while a run's error or interruption goes on: a cancelled task
    that ended with a ``StoreError`` in place of its ``CancelledError`` would break what awaits it (a task
    group, a timeout), and Ctrl-C would pass for a store failure."""
    run = stream._run_read()
    which = f"run {quoted_name(run)}" if run is not None else "a tool loop"
    # (the store's text through the run's redactor: a store of the application's own may quote the
    # credential it shares with the agent's endpoint, and a log line is written whatever the caller does)
    logger.warning("%s: settling it after its stream's block was left failed while the reader inside a step "
                   "ended with %s: %s", which, type(raising).__name__, stream._said(failed))


async def _read(stream: _AsyncStream) -> AsyncIterator[ev.Event | ev.UnknownEvent]:
    """One task's way through a stream's events, a run's or a tool loop's (what ``aiter(stream)``
    returns): the events themselves, or :class:`StreamMisused` for a second task reading while another
    is inside a step.

    Each reader is a generator of its own that takes the pump's steps itself (a step folds the next
    read's events): an event costs one generator's step, as when the pump itself was the generator,
    where a reader object wrapping that generator cost each event a call of ours (120-160 ns end to
    end). A task runs alone until it awaits, so the look at the step and the step cannot be split by
    another reader of the same loop. A run's last step returns its result, which ``stream._after``
    takes: it ends a run's stream, and carries a tool loop on (its handlers, its next run, whose steps
    the reader goes on taking) while the stream stays busy.

    The events a step folded are the stream's, not the reader's: a reader that leaves early (``break``,
    ``aclose()``, or the loop finalizing one left behind) leaves the rest to the next. Leaving the
    ``async with`` block ends the stream (:func:`stream_left`); left while a reader is inside a step, the
    block hands that reader the run's settling, which it does as the step comes out, and its iteration
    ends there (as :class:`_Reader`'s does, and why).
    """
    while True:
        rest = stream._rest
        if rest is not None:
            for event in rest:  # (an async generator has no ``yield from``)
                yield event
            if stream._rest is rest:  # (another reader may have gone on past it already)
                stream._rest = None
        step = stream._step
        if step is None:
            return
        if step is _BUSY:
            raise _shared(stream)
        stream._step = _BUSY
        try:
            item = await step()
            # (a run's last step returns its result; past it, a tool loop's next run is not begun once the
            # block was left meanwhile)
            while type(item) is not list and stream._settle is None:
                assert stream._after is not None  # (set with the step: stepped_by, runs_in)
                step = await stream._after(item)
                if step is None or stream._settle is not None:
                    break  # (left while _after ran, a tool loop's handlers: the run it opened is not read from)
                item = await step()
        except BaseException as raised:
            stream._step = None  # (a step that raised ends the events, as a generator that raised is over)
            if stream._settle is not None:
                await _async_settled_here(stream, raised)
            raise
        # The block's leaving side, finding this reader inside the step, handed it the run's settling
        # (stream_left). A task runs alone until it awaits: between the step's end and this look, and between
        # the leaving side's look at _BUSY and its hand-over, there is none, so one of the two settles.
        if stream._settle is not None:
            await _async_settled_here(stream)
            return
        if type(item) is not list:  # (the stream is over: nothing comes after its last run's result)
            stream._step = None
            return
        stream._step = step
        if len(item) == 1:
            yield item[0]  # (a read's one event, the usual case: left here, nothing of it is left over)
        else:
            stream._rest = iter(item)


async def _async_settled_here(stream: _AsyncStream, raising: BaseException | None = None) -> None:
    """Settle the run in this task, as the block's leaving side handed it over (:func:`stream_left`);
    ``raising``: the step's own error, on its way out (see :func:`_settling_failed`)."""
    settle, stream._settle = stream._settle, None
    assert settle is not None
    stream._step = stream._rest = stream._after = None  # (over: every later read ends at once)
    try:
        await settle()
    except Exception as failed:
        if raising is None:
            raise
        _settling_failed(stream, raising, failed)


#: What an async stream holds as its step while a reader is inside it.
_BUSY: Any = object()


def _shared(stream: _Ending, *, left: bool = False) -> StreamMisused:
    run = stream._run_read()
    which = f"run {quoted_name(run)}: " if run is not None else ""
    if left:
        return StreamMisused(f"{which}this stream's block was left while another task or thread was reading its "
                             "events; that reader settles the run as its read comes back (the response closed, "
                             "the claim given back) and reads no more, and this thread object runs nothing else "
                             "until then. Read a stream in its block, in one place, and hand the events on (a "
                             "queue) to whoever else needs them", code="STREAM-SHARED", run_id=run)
    return StreamMisused(f"{which}this stream's events are being read by another task or thread already; one "
                         "reader at a time, each event once: read it in one place and hand the events on (a "
                         "queue) to whoever else needs them. Nothing was read here; the other reader goes on",
                         code="STREAM-SHARED", run_id=run)


class _Block:
    """The block one ``thread.stream(...)`` (or ``stream_until_done``) call opens, entered once.

    contextlib's block, entered again, raised ``AttributeError: ... has no attribute 'args'``: nothing
    was sent twice, but the words named neither the stream nor the mistake.
    """

    __slots__ = ("_opens", "_entered", "_what", "_run_id")

    def __init__(self, opens: Any, what: str) -> None:
        self._opens = opens
        self._what = what
        self._entered = False
        self._run_id: str | None = None

    def _enter_once(self) -> None:
        if self._entered:
            run = f" (run {quoted_name(self._run_id)})" if self._run_id is not None else ""
            raise StreamMisused(f"this thread.{self._what}(...) block{run} was entered already: one call sends one "
                                f"run and opens one block; call thread.{self._what}(...) again for another run. "
                                "Nothing was sent", code="STREAM-REENTERED", run_id=self._run_id)
        self._entered = True

    def _opened(self, stream: Any) -> Any:
        self._run_id = stream._run_read()
        return stream


class _SyncBlock(_Block, AbstractContextManager[Any]):
    __slots__ = ()

    def __enter__(self) -> Any:
        self._enter_once()
        return self._opened(self._opens.__enter__())

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool | None:
        return self._opens.__exit__(kind, exc, tb)  # type: ignore[no-any-return]


class _AsyncBlock(_Block, AbstractAsyncContextManager[Any]):
    __slots__ = ()

    async def __aenter__(self) -> Any:
        self._enter_once()
        return self._opened(await self._opens.__aenter__())

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> bool | None:
        return await self._opens.__aexit__(kind, exc, tb)  # type: ignore[no-any-return]


def entered_once(opens: Callable[_P, AbstractContextManager[_T]]) -> Callable[_P, AbstractContextManager[_T]]:
    """``opens`` (a ``@contextmanager`` method), its block refusing a second entry with ``StreamMisused``."""
    @wraps(opens)
    def stream(*args: _P.args, **kwargs: _P.kwargs) -> AbstractContextManager[_T]:
        return _SyncBlock(opens(*args, **kwargs), opens.__name__)
    return stream


def async_entered_once(opens: Callable[_P, AbstractAsyncContextManager[_T]]
                       ) -> Callable[_P, AbstractAsyncContextManager[_T]]:
    """:func:`entered_once` for an ``@asynccontextmanager`` method."""
    @wraps(opens)
    def stream(*args: _P.args, **kwargs: _P.kwargs) -> AbstractAsyncContextManager[_T]:
        return _AsyncBlock(opens(*args, **kwargs), opens.__name__)
    return stream


class _TextPicker:
    """Which text deltas a text stream yields: assistant messages' (an absent role is assistant),
    the main agent's only unless ``subagents``.

    A message's owner and role are on its ``TEXT_MESSAGE_START``; a delta may leave its owner out. A
    message whose start this reader did not see (the caller read it as an event) is looked up once in
    the thread, which has folded it.
    """

    __slots__ = ("_state", "_subagents", "_wanted")

    def __init__(self, state: ThreadState | None, subagents: bool) -> None:
        self._state = state
        self._subagents = subagents
        self._wanted: dict[str, bool] = {}

    def __call__(self, event: ev.Event | ev.UnknownEvent) -> str | None:
        kind = type(event)
        if kind is ev.TextMessageContentEvent:
            assert isinstance(event, ev.TextMessageContentEvent)
            wanted = self._wanted.get(event.message_id)
            if wanted is None:
                wanted = self._wanted[event.message_id] = self._held(event.message_id)
            return event.delta if wanted and (self._subagents or event.subagent_run_id is None) else None
        if kind is ev.TextMessageStartEvent:
            assert isinstance(event, ev.TextMessageStartEvent)
            self._wanted[event.message_id] = self._judge(event.role, event.subagent_run_id)
        return None

    def _judge(self, role: str | None, owner: str | None) -> bool:
        return role in (None, "assistant") and (self._subagents or owner is None)

    def _held(self, message_id: str) -> bool:
        message = self._state.message(message_id) if self._state is not None else None
        if not isinstance(message, msg.AssistantMessage):
            return False  # (another role's text; a message the thread does not hold was refused by the verifier)
        return self._subagents or message.subagent_run_id is None


# -- how a pump fills a stream ------------------------------------------------------------------------
# The streams' state is written by the thread's pumps (thread.py) and read by the caller through the
# properties above; these are the pump's side, so that only this module touches the fields.

def stepped_by(stream: RunStream | AsyncRunStream, drive: Callable[..., Any], *arguments: Any) -> None:
    """Give a run's stream the step of its pump, ``drive(*arguments)``: each step returns the events one
    read folded (a list), or the run's result once it ended (which ends the stream).

    The stream's readers take the steps themselves (:class:`_Reader`, :func:`_read`).
    """
    stream._step = partial(drive, *arguments)
    if isinstance(stream, AsyncRunStream):
        stream._after = partial(_run_ended, stream)
    else:
        stream._after = partial(end, stream)


def runs_in(loop: LoopStream | AsyncLoopStream, run: RunStream | AsyncRunStream | None,
            after: Callable[[RunResult], Any]) -> None:
    """Give a tool loop's stream its events: those of ``run`` (its first run's stream; ``None``: the loop
    ended before it opened one), then those of each run ``after(result)`` opens (awaited, in the async
    shell) once the run before ended with ``result``, until it returns ``None`` (the loop is over).

    The loop's stream takes each run's steps itself, as the run's own stream would have (each run's
    stream is the pump's, never the caller's): an event of the loop costs what one of a run's stream
    does, and the one-reader rule is the run stream's.
    """
    loop._step = None if run is None else run._step
    if isinstance(loop, AsyncLoopStream):
        loop._after = partial(_async_next_step, after)
    else:
        loop._after = partial(_next_step, after)


async def _run_ended(stream: AsyncRunStream, result: RunResult) -> None:
    """An async run's ``_after``: the stream ended with ``result``, and has no step after it."""
    end(stream, result)


def _next_step(after: Callable[[RunResult], RunStream | None], result: RunResult) -> Callable[[], Any] | None:
    """A sync tool loop's ``_after``: the step of the run ``after(result)`` opens, or ``None``."""
    run = after(result)
    return None if run is None else run._step


async def _async_next_step(after: Callable[[RunResult], Awaitable[AsyncRunStream | None]],
                           result: RunResult) -> Callable[[], Awaitable[Any]] | None:
    """An async tool loop's ``_after``: the step of the run ``await after(result)`` opens, or ``None``."""
    run = await after(result)
    return None if run is None else run._step


def stream_left(stream: _Stream | _AsyncStream, settle: Callable[[], Any],
                said: Callable[[BaseException], str] = str) -> None:
    """The block of a run's stream or a tool loop's was left, and ``settle`` (awaited, in the async shell)
    settles its run as the block's exit does (the response closed, the claim given back, the result
    recorded): the stream yields nothing more (read after the block, it is over). Returns when the caller
    is to call ``settle`` now. ``said``: a store error's text as the thread's log lines write it (through
    the run's redactor), for the line the reader logs when ``settle`` fails there.

    Raises:
        StreamMisused: another task or OS thread is inside a step of the stream. ``settle`` is handed to
            it: a second party driving the run's flow while that reader drives it is not safe. Once its
            step returns or raises, that reader calls ``settle``, and its iteration ends (its step's error
            raised, or no more events), as any reader's does after the block.
    """
    stream._said = said
    if isinstance(stream, _AsyncStream):
        if stream._step is _BUSY:
            stream._settle = settle  # (the look and the hand-over: no await between them, see _read)
            raise _shared(stream, left=True)
        stream._rest = None
        # (what a run's result leads to holds the stream, a tool loop's through its pump: let go, the
        # stream is freed with its last reference rather than by the cycle collector, with all it holds)
        stream._after = None
    else:
        # One of the two settles, the reader inside a step or this side, whatever their timing. The mark is
        # set before the look at the token, and a reader takes the token before it looks at the mark (see
        # _Reader): a reader that took it after the look sees the mark and takes no step; one inside at the
        # look sees the mark once it gave the token back, and takes the hand-over under the lock this side
        # holds while it makes it. Nothing is closed, so nothing touches a step another thread runs.
        with stream._lock:
            stream._left = True
            handed = not stream._token
            if handed:
                stream._settle = settle
            else:
                stream._rest = stream._after = None  # (the events end: a later read takes no step)
        if handed:
            raise _shared(stream, left=True)
    stream._step = None  # (a step holds its run's exchange: a stream kept for its result keeps none of it)


def ended(stream: _Stream | _AsyncStream) -> RunResult | None:
    """The result ``stream`` ended with, or ``None`` while it has not (where ``result`` raises)."""
    return stream._result


def end(stream: _Stream | _AsyncStream, result: RunResult) -> None:
    """Record the result ``stream`` ended with (a tool loop's: the last run's)."""
    stream._result = result


def fail(stream: _Stream | _AsyncStream, exc: BaseException) -> None:
    """Record that ``stream`` failed on ``exc``, in the caller's block or in the tool loop its events
    ran (``result`` then says so)."""
    stream._failed = exc


def failure(stream: _Stream | _AsyncStream) -> BaseException | None:
    """What ``stream`` failed with (recorded by :func:`fail`), or ``None``."""
    return stream._failed


def failed_settling(stream: _Stream | _AsyncStream, raised: BaseException) -> None:
    """Settling ``stream`` as its block was left failed (the store, giving the claim back) with no result
    recorded: ``result`` names that failure, where it said the stream had not ended yet (read after the
    block, it has). Whoever settled it, the block's own exit or the reader a block left inside a step, the
    stream records the same; an error the block raised was recorded before the settling began."""
    if stream._result is None and stream._failed is None:
        stream._failed = raised


def ran(loop: LoopStream | AsyncLoopStream, result: RunResult) -> None:
    """Add the result of one of a tool loop's runs to its ``results`` (the loop reads no run until the
    next opens: :func:`reading`)."""
    loop._results.append(result)
    loop._run_id = None


def reading(loop: LoopStream | AsyncLoopStream, run_id: str | None) -> None:
    """Name the run a tool loop's stream reads now (a ``StreamNotFinished`` names it)."""
    loop._run_id = run_id


def _stream_repr(stream: _Ending, which: str) -> str:
    """Which run (or loop) a stream reads, and whether it is still being read, ended (with what) or failed."""
    if stream._result is not None:
        where = f"ended outcome={stream._result.outcome!r}"
    elif stream._failed is not None:
        where = f"failed ({type(stream._failed).__name__})"
    else:
        where = "streaming"
    return f"<{type(stream).__name__} {which} {where}>"


def _not_finished(run_id: str | None, failed: BaseException | None, what: str = "the stream") -> StreamNotFinished:
    if failed is not None:
        # A protocol or transport error carries what was folded; a store's failure to settle the run (its
        # release) may carry none, and the thread object keeps the fold then.
        where = "the error's .result" if getattr(failed, "result", None) is not None else "the thread"
        return StreamNotFinished(f"run {quoted_name(run_id)}: {what} failed ({type(failed).__name__}: {failed}), so "
                                 f"it has no result; {where} holds what was folded", run_id=run_id, failed=failed)
    return StreamNotFinished(f"run {quoted_name(run_id)}: {what} has not ended; read .result after the with block, "
                             "or call get_final_result() to read the rest first", run_id=run_id)
