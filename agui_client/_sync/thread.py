# generated from agui_client/_async/thread.py by python -m tools.unasync; do not edit (edit the source, run the script)
"""``Thread``: one conversation across runs, in the calling thread (generated from the async ``AsyncThread``).

A thread is a :class:`~agui_client.core.flow.Conversation` (its folded state and its standing in the
client's store) whose run protocol, claim, send, fold, save, release, is written once in
``core/flow.py`` as a generator of effects. ``Thread`` is its pump in the calling thread: it carries
each effect out where it is asked for. What it does differently from the async shell, a Ctrl-C held
until a store write returned, is in the hand-written ``thread_io.py`` beside it.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Callable, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from .._inert import quoted_name
from .._streams import (
    LoopStream,
    RunStream,
    entered_once,
    end,
    ended,
    fail,
    failed_settling,
    failure,
    ran,
    reading,
    runs_in,
    stepped_by,
    stream_left,
)
from ..core.effects import RECEIVE, Check, Close, Flow, Hand, Invoke, Load, Run, Send, Write
from ..core.exchange import StreamHandle
from ..core.flow import ResumeInput
from ..core.headers import RunHeaders, layered
from ..core.plan import MessageInput, ToolHandler
from ..core.result import RunResult
from ..errors import AguiError, StreamMisused
from ..telemetry import UNWATCHED, unsent_redact, watch_loop, watch_run
from ..wire.types.base import JSON
from ..wire.types.run import Context, Tool
from .thread_io import INTERRUPTED, ThreadIO, judged

if TYPE_CHECKING:
    from ..client import AgentClient

__all__ = ["Thread"]


class _Exchange:
    """The response a run has open, as a pump holds it between effects (and the run's telemetry watch)."""

    __slots__ = ("stack", "batches", "watch")

    def __init__(self, watch: Any = UNWATCHED) -> None:
        self.stack = ExitStack()
        self.batches: Iterator[list[str | bytes]] | None = None
        self.watch = watch


class Thread(ThreadIO):
    """A conversation with an agent across runs (synchronous).

    Get one from :meth:`AgentClient.thread`. ``run()`` returns the run's ``RunResult``; ``stream()``
    yields its events as they arrive. A thread with open interrupts refuses a run that does not
    resume them, before anything is sent.

    Example::

        thread = client.thread()  # a new conversation; client.thread(thread_id) loads a stored one
        result = thread.run("hello")  # the whole run, folded
        with thread.stream("tell me more") as stream:  # or its events as they arrive
            for event in stream:
                print(type(event).__name__)
        print(stream.result.outcome, len(thread.state.messages), thread.id)

    Attributes:
        id: the thread's id (keep it to come back: ``client.thread(id)`` loads it from the store).
        client: the client that made it.
        state: the folded state (messages, shared state, open interrupts, usage …).
        tool_handlers: the frontend tools ``run_until_done()`` answers, by name.
    """

    def __init__(self, client: AgentClient, thread_id: str, *,
                 tool_handlers: Mapping[str, ToolHandler] | None = None) -> None:
        super().__init__(client.store, thread_id, client.clock, tool_handlers, client.legacy_interrupts)
        self.client = client
        self._take(self._store.load(thread_id))

    def _schema_ceiling(self) -> int | None:
        # (the client's, read at each check: setting it changes the next resume)
        return self.client.max_schema_steps

    def _unsent_redact(self, headers: Mapping[str, str] | RunHeaders | None) -> Callable[[str], str] | None:
        # (the redactor of the request the client would send with the run's headers: what the store's
        # errors this object logs go through before a request was sent; the run's span looks it up alike)
        return unsent_redact(self.client, headers)

    def run(self, message: MessageInput = None, *, resume: ResumeInput = None,
            tools: Sequence[Tool] | None = None, context: Sequence[Context] | None = None,
            forwarded_props: JSON = None, state: JSON = None, run_id: str | None = None,
            pending_unknown: bool = False, run_timeout: float | None = None,
            headers: Mapping[str, str] | None = None) -> RunResult:
        """Send a run and fold it to the end.

        Args:
            message: the new turn (text becomes a user message), or ``None`` to continue (after tool
                results, or with ``resume``).
            resume: answers to the open interrupts: a ``ResumeBuilder`` or ``ResumeEntry`` items.
            tools: frontend tools offered to the agent (declared from ``tool_handlers`` when omitted).
            context: context items for the agent.
            forwarded_props: opaque properties passed through to the agent.
            state: replaces the shared state sent (and kept) for this run; ``None`` keeps the thread's
                (to send a null state, ``thread.state.set_state(None)`` first).
            run_id: the run's id (a fresh uuid by default).
            pending_unknown: the thread holds no open interrupts but the agent may be waiting on some
                (a thread rebuilt from elsewhere, whose interrupts were never recorded): send the
                ``resume`` entries instead of refusing them as answering nothing (IR-26). When the
                thread does hold open interrupts it changes nothing: entries must cover them.
            run_timeout: this run's overall deadline in seconds from its request (the client's
                ``run_timeout`` by default); past it the run fails with ``RunTimeout``.
            headers: request headers for this run only (a web backend forwarding its user's own
                ``Authorization``, a tenant header …), sent on top of the client's: a name the client
                also sets is replaced, names compared case-insensitively, as httpx merges a request's
                headers over its client's. ``Content-Type`` stays ``application/json`` (another value
                is replaced, with a warning), an ``Accept`` is added after ``text/event-stream``, and
                the trace context of the client's telemetry wins over a same-named header. Their values
                are kept out of errors, logs, records and spans by the client's ``sensitive_headers``
                rules (``Authorization``, ``Cookie``, names holding token, key, auth …: mark others
                there); a redirect to another origin is refused, as for the client's headers. They are
                not part of the thread: a later run, here or in another process, sends its own.
                Example: ``thread.run("hi", headers={"Authorization": f"Bearer {user_token}"})``.

        Returns:
            The ``RunResult``; a run that ended with ``RUN_ERROR`` has ``outcome == "error"``
            (``raise_for_outcome()`` raises it).

        Raises:
            RuntimeError: the client is closed; nothing was sent and the thread was not claimed (the
                same for every call of a thread whose client is closed).
            InvalidHeader: a ``headers`` name or value HTTP cannot carry (a CR or LF, a character
                that is not ASCII, a name that is not a token …); the error names the header, never its
                value; nothing was sent and the thread was not claimed.
            ResumeRefused: the resume list (or its absence) breaks the interrupt rules, or the builder
                was made for another thread or an earlier interrupted run (``MisdirectedResume``);
                nothing was sent.
            UnencodableValue: a value to send is not JSON (a set, bytes, a datetime, ``NaN``, a lone
                surrogate …), in ``state``, ``forwarded_props``, ``context``, ``tools``, the new
                messages or a resume payload (``UnencodableResumePayload``); nothing was sent and the
                thread was not claimed.
            ConcurrentResume: another writer ran or resumed this thread since it was loaded, or is running
                it now (a new thread: another writer created it first); nothing was sent (``reload()``
                catches up). With ``agent_answered`` true it came from the save at the run's end instead
                (the record moved on or vanished): the agent answered, and ``.result`` holds the run.
            StoreError: the store failed. When claiming, nothing was sent (the claim may be held: this
                object's next run takes it up); with ``agent_answered`` true, when saving the answered run.
            TransportError, HTTPStatusError, IdleTimeout, RunTimeout: the exchange failed, or took too
                long (a turn gives the thread back; a resume whose request was written stays claimed).
            ProtocolError: the agent broke the protocol (``.result`` holds what was folded).
        """
        _check_open(self)
        with self._exclusive(), watch_run(self.client, self, run_id, resume, headers) as watch:
            plan = self._planned(message, resume, tools, context, forwarded_props, state, run_id,
                                 pending_unknown, run_timeout, headers)
            watch.planned(plan)
            flow = self._turn(plan, StreamHandle(), quiet=True, interrupted=INTERRUPTED)
            return watch.finished(cast(RunResult, self._drive(flow, _Exchange(watch))))

    @entered_once
    @contextmanager
    def stream(self, message: MessageInput = None, *, resume: ResumeInput = None,
               tools: Sequence[Tool] | None = None, context: Sequence[Context] | None = None,
               forwarded_props: JSON = None, state: JSON = None, run_id: str | None = None,
               pending_unknown: bool = False, run_timeout: float | None = None,
               headers: Mapping[str, str] | None = None) -> Iterator[RunStream]:
        """Send a run and yield a :class:`RunStream` of its events, each folded before it is yielded.

        Same arguments (``headers`` too) and errors as :meth:`run`. The thread is saved when the run ends, before the
        terminal event reaches the caller. Leaving the ``with`` block before the stream ends closes
        the response: what was folded stays in ``thread.state`` but is not saved, and a resume's
        claim stays held (its request reached the agent; see :meth:`release_claim`). Left while another
        task or OS thread reads the stream, the block raises ``StreamMisused`` (``STREAM-SHARED``): that reader
        settles the run as its read comes back, and this object starts no other run until it has.
        """
        _check_open(self)
        with self._exclusive(), watch_run(self.client, self, run_id, resume, headers) as watch:
            plan = self._planned(message, resume, tools, context, forwarded_props, state, run_id,
                                 pending_unknown, run_timeout, headers)
            watch.planned(plan)
            handle = StreamHandle()
            flow = self._turn(plan, handle, quiet=False, interrupted=INTERRUPTED)
            said = partial(self._store_text, handle=handle, headers=plan.headers)
            exchange = _Exchange(watch)
            hand: Hand = self._drive(flow, exchange)
            stream = RunStream(plan.run_input, self._state)
            stepped_by(stream, self._drive, hand.receive, exchange)
            # (read after the block, the stream is over: it yields nothing more. Left while another reader is
            # inside a step, that reader settles the run as its step comes out, and this raises STREAM-SHARED)
            try:
                yield stream
            except BaseException as exc:
                settle = partial(self._leave_stream, flow, exchange, stream, exc, self._kept_busy())
                _left(stream, settle, watch, exc, said)
                settle()
                raise
            settle = partial(self._leave_stream, flow, exchange, stream, None, self._kept_busy())
            _left(stream, settle, watch, None, said)
            settle()

    def release_claim(self, *, force: bool = False) -> None:
        """Give up this thread's claim after a failed resume (you decided a retry is safe).

        Nothing happens when the thread is not claimed.

        Args:
            force: also release a claim held by another writer: the operator's way past a writer
                that died holding one (claims never expire). Make sure it is gone: its request may have
                reached the agent.

        Raises:
            ConcurrentResume: another writer holds the claim and ``force`` is false.
        """
        _check_open(self)
        self._drive(self._release_claim(force), _Exchange())

    def reload(self) -> None:
        """Load the thread again from the store (another process may have moved it on)."""
        _check_open(self)
        self._drive(self._reload(), _Exchange())

    def run_until_done(self, message: MessageInput = None, *, max_steps: int = 8, **kwargs: Any) -> RunResult:
        """Run, answer frontend tool calls with ``tool_handlers``, and run again, until the agent stops.

        Calls the thread already holds unanswered (its last run's, made here or on another replica)
        are answered first, with ``message`` sent after their results. A stored thread is claimed
        before any handler runs, so two replicas never both run the handlers for the same calls (the
        second gets ``ConcurrentResume``). Stops at an interrupt (for the application to answer), an
        error, a call with no handler, or after ``max_steps`` runs.

        ``headers`` (see :meth:`run`) go with every request of the loop, and are checked before any
        handler runs::

            thread.run_until_done("Book it", headers={"Authorization": f"Bearer {user_token}"})

        A handler written as ``async def`` needs the async client, which awaits it (the sync client
        refuses it with ``TypeError``, reported to the agent as the call's failure).

        Returns the last run's ``RunResult``; each run's (their warnings too) are the ``results`` of
        :meth:`stream_until_done`'s loop.
        """
        _check_open(self)
        _check_loop_keywords(kwargs, "run_until_done")
        with self._exclusive(loop=True), watch_loop(self.client, self, max_steps) as watch:
            return watch.finished(cast(RunResult, self._drive(self._until_done(message, max_steps, kwargs),
                                                              _Exchange())))

    @entered_once
    @contextmanager
    def stream_until_done(self, message: MessageInput = None, *, max_steps: int = 8,
                          **kwargs: Any) -> Iterator[LoopStream]:
        """:meth:`run_until_done`, streamed: yields a :class:`LoopStream` of every run's events, in order.

        The same loop, arguments and safety as :meth:`run_until_done` (calls the thread holds answered
        first; the thread claimed before any handler runs; a handler that raises reported to the agent
        as a failed tool result; stops at an interrupt, an error, a call with no handler or after
        ``max_steps`` runs). Each event is folded before it is yielded, as :meth:`stream` does; the
        handlers run between one run's terminal event and the next run's first. Entering the block
        answers the held calls and sends the first run (its errors are raised there, as ``stream()``'s
        are); leaving it early closes the open run's response and stops the loop, as leaving a stream
        does (``TR-16`` when its run had not ended; ``result`` is that run's).

        Example::

            from agui_client import TextMessageContentEvent

            thread = client.thread(tool_handlers={"confirm_choice": lambda question: "yes"})
            with thread.stream_until_done("Pick one for me", max_steps=4) as loop:
                for event in loop:  # every event of every run, each folded; the handler runs between runs
                    if isinstance(event, TextMessageContentEvent):
                        print(event.delta, end="", flush=True)
            print(loop.result.outcome, [r.outcome for r in loop.results])  # success ['success', 'success']
        """
        _check_open(self)
        _check_loop_keywords(kwargs, "stream_until_done")
        with self._exclusive(), watch_loop(self.client, self, max_steps, streamed=True) as watch:
            # (a store error's text through the redactor of the request the loop's runs send: the client's
            # headers and the run headers the loop was given, as a run's own stream redacts it)
            said = partial(self._store_text, handle=None, headers=kwargs.get("headers"))
            loop = LoopStream(self._state)
            pump = _Loop(self._until_done(message, max_steps, kwargs), _Exchange(), watch, loop)
            self._next_run(pump)
            runs_in(loop, pump.stream if pump.opened is not None else None, partial(self._after_run, pump))
            # (read after the block, the loop is over, as a stream is: see stream())
            try:
                yield loop
            except BaseException as exc:
                settle = partial(self._leave_loop, pump, exc, self._kept_busy())
                _left(loop, settle, watch, exc, said)
                settle()
                raise
            settle = partial(self._leave_loop, pump, None, self._kept_busy())
            _left(loop, settle, watch, None, said)
            settle()

    # -- the pump --------------------------------------------------------------------------------------

    def _drive(self, flow: Flow[Any], exchange: _Exchange, *, answer: Any = None,
               error: BaseException | None = None, runs: bool = False) -> Any:
        """Carry ``flow``'s effects out until it returns (its value), hands the caller a stream (the
        ``Hand``) or has events for the caller (the list), or, with ``runs``, asks for a run (the
        ``Run``: the streaming tool loop opens its stream); what an effect raises is thrown in."""
        while True:
            try:
                effect = flow.send(answer) if error is None else flow.throw(error)
            except StopIteration as stop:
                return stop.value
            except AguiError as exc:
                _closed_under(self.client, exc)
                raise
            if type(effect) is list or type(effect) is Hand or (runs and type(effect) is Run):
                return effect
            try:
                answer, error = self._carry(effect, exchange), None
            except BaseException as exc:  # (a cancellation too: the flow decides, and raises what it does not settle)
                answer, error = None, exc


    def _next_run(self, pump: _Loop, answer: Any = None, error: BaseException | None = None) -> None:
        """Carry the streaming tool loop on, from the last run's result (``answer``) or what ended it
        (``error``), to its next run, whose stream it opens, or to its end (``loop.result``)."""
        with self._looping(), pump.watch.working():
            while True:
                try:
                    step = self._drive(pump.flow, pump.exchange, answer=answer, error=error, runs=True)
                except BaseException as exc:
                    # (the loop ended with it: kept, for a caller that catches it inside the block)
                    pump.over = True
                    fail(pump.loop, exc)
                    raise
                if type(step) is not Run:
                    pump.over = True
                    end(pump.loop, step)
                    return
                opened = self.stream(step.message, **step.arguments)
                try:
                    pump.stream = opened.__enter__()
                except BaseException as exc:  # (refused or failed before its events: the flow decides)
                    answer, error = None, exc
                    continue
                pump.opened = opened
                reading(pump.loop, pump.stream.run_input.run_id)
                return

    def _after_run(self, pump: _Loop, result: RunResult) -> RunStream | None:
        """The tool loop's open run ended with ``result`` (its last step returned it, to the loop's stream,
        which reads the run's steps itself): its block is left, the handlers run and the next run opens,
        whose stream this returns (``None``: the loop is over, with its result or an error)."""
        end(pump.stream, result)
        self._next_run(pump, *self._close_run(pump, None))
        return pump.stream if pump.opened is not None else None

    def _close_run(self, pump: _Loop,
                   exc: BaseException | None) -> tuple[RunResult | None, BaseException | None]:
        """Leave the open run's stream as its ``with`` block is left, on ``exc`` or normally: its
        result, or what leaving it raised."""
        opened, pump.opened = pump.opened, None
        with self._looping(), pump.watch.working():
            try:
                if exc is None:
                    opened.__exit__(None, None, None)
                else:
                    opened.__exit__(type(exc), exc, exc.__traceback__)  # (a stream never swallows it)
                    return None, exc
            except BaseException as raised:
                return None, raised
        result = pump.stream.result
        ran(pump.loop, result)
        return result, None

    def _leave_stream(self, flow: Flow[Any], exchange: _Exchange, stream: RunStream,
                      exc: BaseException | None, held: Callable[[], None]) -> None:
        """Settle a stream's run as its block is left, normally or on ``exc``: the response closed, the claim
        given back or kept (the flow's rules), the result recorded; then let go of the object (``held``).

        Called by the leaving side, or by the reader that was inside a step as the block was left
        (``stream_left``); ``exc`` is not raised again here (the leaving side raises it).
        """
        watch = exchange.watch
        try:
            if exc is None:
                result = self._drive(flow, exchange, answer=ended(stream) is not None)
                if ended(stream) is None:
                    end(stream, result)
                watch.finished(stream.result)
                return
            fail(stream, exc)
            if ended(stream) is not None:
                watch.finished(stream.result)  # (the run ended before the caller's block raised)
            self._drive(flow, exchange, error=exc)  # (the flow settles the claim and raises it again)
        except BaseException as raised:
            if raised is not exc:
                failed_settling(stream, raised)
                raise
        finally:
            held()

    def _leave_loop(self, pump: _Loop, exc: BaseException | None, held: Callable[[], None]) -> None:
        """Settle the streaming tool loop as the caller's block is left, normally or on ``exc``, as
        :meth:`_leave_stream` settles a run (by the leaving side, or by the reader inside a step then)."""
        loop, watch = pump.loop, pump.watch
        try:
            if exc is not None:
                fail(loop, exc)
                if ended(loop) is not None:
                    watch.finished(loop.result)  # (the loop ended before the caller's block raised)
            self._stop_loop(pump, exc)  # (an open run and the loop let go; exc raised again)
            if exc is None:
                _loop_left(loop, watch)
        except BaseException as raised:
            if raised is not exc:
                failed_settling(loop, raised)
                raise
        finally:
            held()

    def _stop_loop(self, pump: _Loop, exc: BaseException | None) -> None:
        """The caller's block ended, on ``exc`` or normally: the run still open is left as a stream's
        block is, and the loop's flow stops (giving back a claim it took early); ``exc`` is raised again."""
        if pump.opened is not None:
            result, exc = self._close_run(pump, exc)
            if result is not None:
                end(pump.loop, result)
        if pump.over:
            return
        pump.over = True
        with self._looping(), pump.watch.working():
            if exc is not None:
                self._drive(pump.flow, pump.exchange, error=exc)  # (the flow lets go, and raises it again)
                return
            try:
                self._drive(pump.flow, pump.exchange, error=GeneratorExit())  # (as close() ends a generator)
            except GeneratorExit:
                pass

    def _carry(self, effect: Any, exchange: _Exchange) -> Any:
        kind = type(effect)
        if effect is RECEIVE:
            assert exchange.batches is not None
            return next(exchange.batches, None)
        if kind is Write:
            return self._write(effect)
        if kind is Send:
            plan = effect.plan
            with exchange.watch.sending(effect.handle) as trace:  # (the trace context, when the client has telemetry)
                # (the run's own headers, the trace context over them: it names this run's span)
                exchange.batches = exchange.stack.enter_context(
                    self.client.open_batches(plan.run_input, handle=effect.handle, body=plan.body,
                                             run_timeout=plan.run_timeout, headers=layered(plan.headers, trace)))
            return None
        if kind is Close:
            error = effect.error
            if error is None:
                exchange.stack.close()
            else:  # (as a with statement leaves on an exception: what closing raises replaces it)
                exchange.stack.__exit__(type(error), error, error.__traceback__)
            return None
        if kind is Load:
            return self._load()
        if kind is Invoke:
            return self._handler_output(self._invoke(effect.call))
        if kind is Run:
            return self.run(effect.message, **effect.arguments)
        if kind is Check:
            return judged(effect)
        raise AssertionError(f"not an effect: {effect!r}")


#: The keywords ``run_until_done`` passes on to :meth:`Thread.run`.
_RUN_KEYWORDS = tuple(name for name in inspect.signature(Thread.run).parameters if name not in ("self", "message"))


def _check_open(thread: Thread) -> None:
    """Refuse a call on a thread whose client was closed, before the store or the agent is asked.

    Else a run claimed the thread, and let it go, around httpx's error for a closed client (an
    application's store), or met the store the client closed and logged a claim that "may be held".
    """
    if thread.client.is_closed:
        raise RuntimeError(f"thread {quoted_name(thread.id)}: its {type(thread.client).__name__} is closed; nothing "
                           "was sent: make a new client and load the thread from its store")


def _closed_under(client: AgentClient, exc: AguiError) -> None:
    """Say so on a run's error when its client was closed while it ran: closing the client closes the
    connections of the runs in flight, which then fail as if the agent had cut them (``StreamEnded``) or
    the socket had failed, naming nothing the application did."""
    note = "the client was closed while this run was in flight"
    if client.is_closed and hasattr(exc, "add_note") and note not in getattr(exc, "__notes__", ()):
        exc.add_note(note)


def _check_loop_keywords(given: Mapping[str, Any], method: str) -> None:
    """Refuse, naming ``method`` (``run_until_done`` or ``stream_until_done``), a keyword ``run()`` does
    not take (else the error would name ``Thread.run()``, a call the caller never made, and come after
    the thread's held calls were answered)."""
    unknown = [name for name in given if name not in _RUN_KEYWORDS]
    if unknown:
        hint = (" (the handlers are the thread's: client.thread(tool_handlers=...))"
                if "tool_handlers" in unknown else "")
        raise TypeError(f"{method}() got unexpected keyword argument(s) {unknown}{hint}; it takes "
                        f"message, max_steps and run()'s keywords: {', '.join(_RUN_KEYWORDS)}")


def _loop_left(loop: LoopStream, watch: Any) -> None:
    """A streaming tool loop's block was left normally: the loop ended with its result, or with the
    error its events raised, which the caller's block caught (Ctrl-C around the ``for``, a later run
    refused). That error ended the loop: its span says so, ``result`` raises ``StreamNotFinished``
    naming it, and leaving the block stays quiet, as leaving a stream whose error was caught does."""
    failed = failure(loop)
    if ended(loop) is None and failed is not None:
        watch.failed(failed)
        return
    watch.finished(loop.result)


def _left(stream: RunStream | LoopStream, settle: Callable[[], Any], watch: Any,
          exc: BaseException | None, said: Callable[[BaseException], str]) -> None:
    """The block of ``stream`` was left (on ``exc``, or normally): ``stream_left``, and the span's end where
    the run is settled. Handed to the reader inside a step (``StreamMisused``, raised again), the span ends
    when that reader has settled the run, with its outcome: the block's ``STREAM-SHARED`` is not the run's.
    The watch is told after the hand-over, which another OS thread may take at once: it ends the span once,
    whichever comes first."""
    try:
        stream_left(stream, partial(_settled_by_reader, settle, watch, exc), said)
    except StreamMisused:
        watch.handed()
        raise


def _settled_by_reader(settle: Callable[[], Any], watch: Any, exc: BaseException | None) -> None:
    """Settle a run handed to the reader inside a step, and end its span with what it came to (what
    settling raised, else the block's own error, else the result the settling recorded)."""
    try:
        settle()
    except BaseException as raised:
        watch.settled(raised)
        raise
    watch.settled(exc)


class _Loop:
    """A streaming tool loop as its pump holds it between the events it hands out: the loop's flow
    (``_until_done``) and its store effects' exchange, the loop's watch and stream, the run being read
    (its stream, and the ``with`` that opened it, to leave), and whether the flow ended."""

    __slots__ = ("flow", "exchange", "watch", "loop", "opened", "stream", "over")

    def __init__(self, flow: Flow[RunResult], exchange: _Exchange, watch: Any, loop: LoopStream) -> None:
        self.flow = flow
        self.exchange = exchange
        self.watch = watch
        self.loop = loop
        self.opened: Any = None
        self.stream: Any = None
        self.over = False
