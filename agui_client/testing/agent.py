"""``ScriptedAgent``: a real AG-UI 1.0 agent as a raw ASGI app, playing scripted runs.

Its script, one step per run on a thread, is made of the items of ``script.py`` (events, wire dicts,
:class:`Start`, :class:`Finish`, markers, ``bytes``, :class:`Stream`, :class:`Respond`, or a callable
making one of them from the ``RunAgentInput``). This module plays them: the request accepted
(``endpoint.py``), each item framed and sent, gates and pauses waited out, a deliberate cut made.

The agent behaves as the interrupts page asks of a producer that keeps checkpoints: it remembers the
interrupts each thread's last run raised and, on the next input, skips resume entries that name
none of them with a warning (a ``CUSTOM`` event named ``agui.warning``), and never lets a run end as
success while one of them is left uncovered (``on_uncovered``).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

import attrs
from attrs import frozen

from ..errors import ProtocolError
from ..wire.codec import decode_value, encode
from ..wire.jsonio import dump_json
from ..wire.sink import collect_warnings
from ..wire.types.base import JSON
from ..wire.types.events import CustomEvent, RunErrorEvent, RunFinishedEvent, RunStartedEvent
from ..wire.types.run import Interrupt, ResumeEntry, RunAgentInput, RunFinishedInterruptOutcome
from . import scenarios
from .endpoint import Receive, Scope, Send, accept_run, encode_headers, respond
from .scenarios import ANSWER_SCHEMA
from .script import (
    Disconnect,
    Finish,
    Item,
    KeepAlive,
    Pause,
    Respond,
    Start,
    Step,
    Stream,
    Wait,
    check_result,
    header_type,
)

__all__ = [
    "ScriptedAgent",
    "OnUncovered",
    "Fault",
    "FAULTS",
    "WARNING_EVENT",
]

#: ``CUSTOM`` event name under which the agent reports a skipped resume entry.
WARNING_EVENT = "agui.warning"

#: What to do with an interrupt left open by a resuming input: reject it before the run starts with a
#: stream opening with ``RUN_ERROR`` (code ``uncovered_interrupt``), or run what the covered entries
#: permit and end with the interrupt outcome again, carrying the still-open interrupts.
OnUncovered = Literal["error", "reinterrupt"]

#: A producer fault the agent can play on purpose, for tools that check producers (``agui probe``):
#:
#: * ``succeed-uncovered``: a resume leaving an interrupt uncovered runs anyway and ends as the step ends it
#:   (success), the uncovered interrupt silently dropped;
#: * ``perform-uncovered``: the same, and an absent entry is taken as approval (``{"approved": true}``);
#: * ``last-entry-only``: only the last resume entry is read; the interrupts the others answered are
#:   dropped without a word (an approved action lost, the run still a success);
#: * ``repeat-interrupt-id``: every interrupt of an interrupt outcome carries the first one's id;
#: * ``pause-as-custom``: an interrupt outcome becomes a ``CUSTOM`` ``on_interrupt`` event carrying the
#:   interrupts, then a plain success (the pre-1.0 way some adapters ask);
#: * ``pause-as-tool-call``: an interrupt outcome becomes an unanswered ``confirm_action`` tool call and a
#:   plain success;
#: * ``fail-unknown-entry``: a resume entry naming no open interrupt fails the run (a stream opening with
#:   ``RUN_ERROR``, code ``unknown_interrupt``) instead of being skipped;
#: * ``repeat-action``: a resume entry naming no open interrupt is trusted and handed to the step (a
#:   repeated resume repeats its action, in :meth:`ScriptedAgent.approvals`).
Fault = Literal["succeed-uncovered", "perform-uncovered", "last-entry-only", "repeat-interrupt-id",
                "pause-as-custom", "pause-as-tool-call", "fail-unknown-entry", "repeat-action"]

#: Every :data:`Fault`.
FAULTS: tuple[str, ...] = ("succeed-uncovered", "perform-uncovered", "last-entry-only", "repeat-interrupt-id",
                           "pause-as-custom", "pause-as-tool-call", "fail-unknown-entry", "repeat-action")

# The faults that let a run go on past an interrupt the resume left uncovered.
_DROPS_UNCOVERED = frozenset({"succeed-uncovered", "perform-uncovered", "last-entry-only"})

_SSE_TYPE = "text/event-stream"


#: Set (in the request's task) when a :class:`Disconnect` cuts the response on purpose: the server's
#: "returned without completing response" error is then what the script asked for, not a fault.
_CUT_ON_PURPOSE: contextvars.ContextVar[bool] = contextvars.ContextVar("agui_testing_cut", default=False)


class _DeliberateCut(logging.Filter):
    """Drops uvicorn's error about an incomplete response for a response a script cut on purpose only
    (any other app's, or this agent's for another reason, is still logged)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (_CUT_ON_PURPOSE.get() and record.msg == "ASGI callable returned without completing response.")


def _quiet_deliberate_cuts() -> None:
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _DeliberateCut) for f in logger.filters):
        logger.addFilter(_DeliberateCut())



# --------------------------------------------------------------------------------------------------
# The agent
# --------------------------------------------------------------------------------------------------




@frozen(kw_only=True)
class _Plan:
    """What one request gets: a rejection, or a step to play with the resume bookkeeping applied."""

    run_input: RunAgentInput
    step: Step | None = None
    notices: tuple[str, ...] = ()
    reject: RunErrorEvent | None = None
    still_open: tuple[Interrupt, ...] = ()


class ScriptedAgent:
    """An AG-UI 1.0 agent that plays scripted runs, for tests and demos (an ASGI 3 app; asyncio).

    It answers ``POST`` on any path with a ``RunAgentInput`` body; a malformed body gets ``400``
    with ``{"detail": ...}``, another method ``405``.

    A *step* is what one run plays: a list of items streamed in order (events or wire dicts,
    :class:`Start` and :class:`Finish` for ``RUN_STARTED``/``RUN_FINISHED`` with the request's ids,
    :class:`KeepAlive`, :class:`Wait`, :class:`Pause`, :class:`Disconnect`, raw ``bytes``); the whole
    body as ``bytes``; a :class:`Stream` (items under a chosen status and headers); a :class:`Respond`
    (a plain HTTP answer); or a callable taking the ``RunAgentInput`` and returning one of these.
    Presets: :meth:`demo`, :meth:`chat`, :meth:`interrupts`, :meth:`approvals`, :meth:`frontend_tool`.

    Example::

        from agui_client import AgentClient, Interrupt, RunFinishedInterruptOutcome
        from agui_client.testing import Finish, ScriptedAgent, Start, serve, text_message

        def answered(run_input):  # a step made from the request: here, the resume it carries
            (entry,) = run_input.resume
            return [Start(), *text_message("m2", f"{entry.interrupt_id}: {entry.payload}"), Finish()]

        asks = RunFinishedInterruptOutcome(interrupts=(Interrupt(id="ask-1", reason="input", message="Sure?"),))
        agent = ScriptedAgent([[Start(), Finish(outcome=asks)], answered])
        with serve(agent) as server, AgentClient(server.url) as client:
            thread = client.thread()
            asked = thread.run("Do it")  # run 0 of the thread plays script[0], run 1 script[1]
            done = thread.run(resume=thread.resume_builder().answer("ask-1", {"sure": True}))
            print(asked.outcome, "->", done.text)  # interrupt -> ask-1: {'sure': True}

    Args:
        script: the steps; run ``n`` on a thread plays ``script[n]``.
        cycle: start over once a thread has played every step; otherwise a further run is rejected
            with a stream opening with ``RUN_ERROR`` (code ``script_exhausted``).
        on_uncovered: ``"error"`` or ``"reinterrupt"``, see :data:`OnUncovered`.
        stateless: keep no interrupts between runs (a conformant producer that has nothing to notice):
            steps see the input's resume list untouched and nothing is checked.
        faults: producer faults to play on purpose (see :data:`Fault`), for testing tools that judge
            producers; none by default. The resume faults act on the agent's bookkeeping, so with
            ``stateless=True`` only the outcome faults (``repeat-interrupt-id``, ``pause-as-*``) apply.

    Resume handling (unless ``stateless``): the interrupts a thread's last ``RUN_FINISHED`` raised
    stay open until a later ``RUN_FINISHED`` on the thread ends otherwise (a ``RUN_ERROR`` leaves
    them open). An entry naming none of them is skipped: the step sees the input without it, the
    stream carries a ``CUSTOM`` ``agui.warning`` event right after ``RUN_STARTED``, and
    :attr:`warnings` records it. An open interrupt with no entry is never taken as abandoned: see
    ``on_uncovered``.

    Raises:
        TypeError: a step or item is of no kind above.
        ValueError: an item holds a value JSON cannot carry (``NaN``, a set, a non-string key …), which
            would go out as another value or not at all (a lone surrogate is sent, as its escape). A
            callable's step is checked when it is made, and the request gets a ``500``.
    """

    def __init__(self, script: Sequence[Step] = (), *, cycle: bool = False, on_uncovered: OnUncovered = "error",
                 stateless: bool = False, faults: Iterable[Fault] = ()) -> None:
        if on_uncovered not in ("error", "reinterrupt"):
            raise ValueError(f"on_uncovered must be 'error' or 'reinterrupt', not {on_uncovered!r}")
        self.faults: frozenset[str] = frozenset(faults)
        unknown = sorted(self.faults.difference(FAULTS))
        if unknown:
            raise ValueError(f"unknown fault(s) {unknown}; the faults are {', '.join(FAULTS)}")
        for step in script:
            if not callable(step):
                check_result(step)
        self._script: tuple[Step, ...] = tuple(script)
        self.cycle = cycle
        self.on_uncovered: OnUncovered = on_uncovered
        self.stateless = stateless
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._requests: list[RunAgentInput] = []
        self._request_headers: list[dict[str, str]] = []
        self._disconnects: list[str] = []
        self._warnings: list[str] = []
        self._runs: dict[str, int] = {}
        self._open: dict[str, tuple[Interrupt, ...]] = {}

    # ---- introspection ---------------------------------------------------------------------------

    @property
    def requests(self) -> list[RunAgentInput]:
        """Every well-formed input received, decoded, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def request_headers(self) -> list[dict[str, str]]:
        """The headers of each well-formed input received, in the order of :attr:`requests` (a copy):
        one dict per request, names lower-cased, a name sent more than once with its values joined by
        ``", "``.

        For tests of what the client sends (credentials per run, trace context)::

            thread.run("hi", headers={"Authorization": "Bearer user-1"})
            assert agent.request_headers[-1]["authorization"] == "Bearer user-1"
        """
        with self._lock:
            return [dict(headers) for headers in self._request_headers]

    @property
    def request_count(self) -> int:
        """How many well-formed inputs arrived."""
        with self._lock:
            return len(self._requests)

    @property
    def warnings(self) -> list[str]:
        """What the agent tolerated or refused, for a person (skipped entries, decoding notes...), a copy."""
        with self._lock:
            return list(self._warnings)

    @property
    def disconnects(self) -> list[str]:
        """Run ids of responses whose client went away before the stream ended, in order (a copy)."""
        with self._lock:
            return list(self._disconnects)

    def wait_until(self, predicate: Callable[[ScriptedAgent], bool], timeout: float = 10.0) -> bool:
        """Block until ``predicate(agent)`` holds, re-checking whenever the agent records something.

        For tests that must wait for the server side (``agent.wait_until(lambda a: a.disconnects)``)
        without sleeping. Returns ``False`` if ``timeout`` seconds pass first.
        """
        with self._changed:
            return self._changed.wait_for(lambda: predicate(self), timeout)

    def open_interrupts(self, thread_id: str) -> tuple[Interrupt, ...]:
        """The interrupts the thread's last interrupted run raised that no later run has closed."""
        with self._lock:
            return self._open.get(thread_id, ())

    def reset(self) -> None:
        """Forget every request, warning, thread position and open interrupt."""
        with self._lock:
            self._requests.clear()
            self._request_headers.clear()
            self._warnings.clear()
            self._runs.clear()
            self._open.clear()
            self._disconnects.clear()

    # ---- ready-made scenarios --------------------------------------------------------------------

    @classmethod
    def chat(cls, reply: str | Callable[[RunAgentInput], str] = "Hello! How can I help you today?", *,
             on_uncovered: OnUncovered = "error") -> ScriptedAgent:
        """Every run streams ``reply`` (a string, or computed from the input) word by word, then succeeds."""
        return cls([scenarios.chat_step(reply)], cycle=True, on_uncovered=on_uncovered)

    @classmethod
    def demo(cls, *, expires_in: float | None = 600.0, clock: Callable[[], datetime] | None = None,
             on_uncovered: OnUncovered = "error") -> ScriptedAgent:
        """The demo behind ``agui demo``: an agent that asks before deleting an environment.

        A new message gets reasoning, streamed text, a backend tool call with its result, a subagent's
        attributed text, state and activity updates, and ends with ONE approval interrupt (reason
        ``approval``) for the pending ``delete_environment`` call, with a ``responseSchema``
        (``approved`` boolean required; ``environment`` enum with a default; ``comment``; ``ttl_minutes``
        integer with a default) and an ``expiresAt`` ``expires_in`` seconds after ``clock()`` (an aware
        ``datetime``, UTC now by default), plus usage. The resume: approved -> the call's
        ``TOOL_CALL_RESULT``, a confirmation and a state delta; declined -> text saying nothing was
        done; cancelled -> text saying the request was abandoned; all succeed.
        """
        agent = cls(cycle=True, on_uncovered=on_uncovered)
        agent._script = (scenarios.demo_step(agent.open_interrupts, expires_in=expires_in, clock=clock),)
        return agent

    @classmethod
    def frontend_tool(cls, tool_name: str = "confirm_choice", *, arguments: JSON = None,
                      on_uncovered: OnUncovered = "error") -> ScriptedAgent:
        """A new message makes the agent call the frontend tool ``tool_name`` and succeed with the call
        pending (``pendingToolCallIds``); an input whose last message is the tool's answer gets text
        quoting it. ``arguments`` default to ``{"question": "Which option do you prefer?"}``.
        """
        return cls([scenarios.frontend_tool_step(tool_name, arguments)], cycle=True, on_uncovered=on_uncovered)

    @classmethod
    def interrupts(cls, n: int = 2, *, reason: str = "input", expires_at: str | Sequence[str | None] | None = None,
                   response_schema: Mapping[str, Any] | Sequence[Mapping[str, Any] | None] | None = ANSWER_SCHEMA,
                   on_uncovered: OnUncovered = "error", faults: Iterable[Fault] = ()) -> ScriptedAgent:
        """A new message gets a run ending with ``n`` interrupts ``interrupt-1`` ... ``interrupt-n``; the
        resume honours each answer.

        Args:
            n: how many interrupts (at least 1).
            reason: every interrupt's reason.
            expires_at: one ``expiresAt`` for all, or one per interrupt (``None``: absent).
            response_schema: one schema for all, or one per interrupt (``None``: absent); by default
                :data:`ANSWER_SCHEMA` (an object with a required string ``answer``).
            on_uncovered: see :data:`OnUncovered`.
            faults: producer faults to play (see :data:`Fault`).

        The resume streams one text message per entry (``interrupt-1: answered {...}`` or
        ``interrupt-1: abandoned``) and succeeds with ``result`` ``{"answers": {id: payload},
        "abandoned": [id, ...]}``.
        """
        if n < 1:
            raise ValueError("an interrupt outcome carries at least one interrupt")
        agent = cls(cycle=True, on_uncovered=on_uncovered, faults=faults)
        agent._script = (scenarios.interrupts_step(agent.open_interrupts, n=n, reason=reason, expires_at=expires_at,
                                              response_schema=response_schema),)
        return agent

    @classmethod
    def approvals(cls, n: int = 1, *, tool_name: str = "delete_file", on_uncovered: OnUncovered = "error",
                  stateless: bool = False, faults: Iterable[Fault] = ()) -> ScriptedAgent:
        """A new message makes the agent call ``tool_name`` ``n`` times, each call gated on an approval.

        Each interrupt is ``approve-<toolCallId>`` (reason ``tool_call``, the call's ``toolCallId``, a
        ``responseSchema`` with a required boolean ``approved``); the calls are streamed in the same run.
        The resume is read from the input alone, as a producer that keeps no checkpoint reads it: each
        entry whose call the messages hold gets that call's ``TOOL_CALL_RESULT`` (``{"status": "done"}``,
        ``"denied"`` or ``"cancelled"``), then the run succeeds. With ``stateless=False`` (the default)
        the agent's own bookkeeping still applies first (unknown entries skipped, uncovered interrupts
        refused per ``on_uncovered``); ``faults`` are played on top (see :data:`Fault`).
        """
        if n < 1:
            raise ValueError("an interrupt outcome carries at least one interrupt")
        agent = cls(cycle=True, on_uncovered=on_uncovered, stateless=stateless, faults=faults)
        agent._script = (scenarios.approvals_step(n=n, tool_name=tool_name, repeat="repeat-action" in agent.faults),)
        return agent

    # ---- ASGI ------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI 3 entry point."""
        accepted = await accept_run(scope, receive, send)
        if accepted is None:
            return
        run_input, warned = accepted
        plan = self._plan(run_input, [f"request: {message}" for message in warned], _received_headers(scope))
        if plan.reject is not None:
            await self._stream(send, receive, Stream(items=[plan.reject]), plan)
            return
        assert plan.step is not None
        step: Any = plan.step
        if callable(step):
            step = step(plan.run_input)
            if inspect.isawaitable(step):
                step = await step
        result = check_result(step)
        if isinstance(result, Respond):
            await respond(send, result)
            return
        stream = Stream(items=[result]) if isinstance(result, bytes) else (
            result if isinstance(result, Stream) else Stream(items=result))
        stream = attrs.evolve(stream, items=self._decorate(list(stream.items), plan))
        await self._stream(send, receive, stream, plan)

    # ---- the producer's bookkeeping --------------------------------------------------------------

    def _plan(self, run_input: RunAgentInput, notes: list[str], headers: dict[str, str] | None = None) -> _Plan:
        thread = run_input.thread_id
        with self._changed:
            self._changed.notify_all()
            self._requests.append(run_input)
            self._request_headers.append(headers or {})
            self._warnings += notes
            kept: list[ResumeEntry] = []
            notices: list[str] = []
            uncovered: tuple[Interrupt, ...] = ()
            if not self.stateless:
                open_ = {i.id: i for i in self._open.get(thread, ())}
                entries = run_input.resume or ()
                if "last-entry-only" in self.faults:
                    entries = entries[-1:]
                for entry in entries:
                    if entry.interrupt_id not in open_ and self.faults & {"fail-unknown-entry", "repeat-action"}:
                        if "repeat-action" in self.faults:
                            kept.append(entry)
                            continue
                        message = f"resume entry for unknown interrupt {entry.interrupt_id!r}"
                        self._warnings.append(message)
                        return _Plan(run_input=run_input,
                                     reject=RunErrorEvent(message=message, code="unknown_interrupt"))
                    if entry.interrupt_id not in open_:
                        notices.append(f"resume entry for unknown interrupt {entry.interrupt_id!r} skipped: "
                                       f"run {run_input.run_id!r} does not continue an interrupt with that id")
                    elif any(k.interrupt_id == entry.interrupt_id for k in kept):
                        notices.append(f"duplicate resume entry for interrupt {entry.interrupt_id!r} skipped")
                    else:
                        kept.append(entry)
                self._warnings += notices
                covered = {k.interrupt_id for k in kept}
                uncovered = tuple(i for i in open_.values() if i.id not in covered)
                if uncovered and self.faults & _DROPS_UNCOVERED:
                    if "perform-uncovered" in self.faults:
                        kept += [ResumeEntry(interrupt_id=i.id, status="resolved", payload={"approved": True})
                                 for i in uncovered]
                    uncovered = ()  # the fault: nothing keeps them open
                if uncovered and self.on_uncovered == "error":
                    ids = ", ".join(repr(i.id) for i in uncovered)
                    message = f"the resume list leaves interrupt(s) {ids} uncovered; they stay open"
                    self._warnings.append(message)
                    return _Plan(run_input=run_input,
                                 reject=RunErrorEvent(message=message, code="uncovered_interrupt"))
            step = self._next_step(thread)
            if step is None:
                message = f"the script has no step for run {self._runs[thread]} of thread {thread!r}"
                self._warnings.append(message)
                return _Plan(run_input=run_input, reject=RunErrorEvent(message=message, code="script_exhausted"))
            if not self.stateless and run_input.resume is not None:
                run_input = attrs.evolve(run_input, resume=tuple(kept))
            return _Plan(run_input=run_input, step=step, notices=tuple(notices), still_open=uncovered)

    def _next_step(self, thread: str) -> Step | None:
        index = self._runs.get(thread, 0)
        self._runs[thread] = index + 1
        if self.cycle and self._script:
            index %= len(self._script)
        return self._script[index] if index < len(self._script) else None

    def _decorate(self, items: list[Item], plan: _Plan) -> list[Item]:
        if plan.notices:
            at = next((i + 1 for i, item in enumerate(items) if _is_run_started(item)), 0)
            items[at:at] = [CustomEvent(name=WARNING_EVENT, value=notice) for notice in plan.notices]
        if plan.still_open:
            # "reinterrupt": whatever the step meant to end with, the still-open interrupts keep the run
            # from ending as success (a new interrupt the step raised rides along).
            for i in range(len(items) - 1, -1, -1):
                finished = _as_run_finished(items[i], plan.run_input)
                if finished is not None:
                    raised = finished.outcome.interrupts if isinstance(
                        finished.outcome, RunFinishedInterruptOutcome) else ()
                    outcome = RunFinishedInterruptOutcome(interrupts=plan.still_open + raised)
                    items[i] = attrs.evolve(finished, outcome=outcome)
                    break
        if self.faults:
            items = _faulty_outcome(items, self.faults, plan.run_input)
        return items

    def _played(self, plan: _Plan) -> Callable[[Item], bytes]:
        run_input = plan.run_input

        def frame(item: Item) -> bytes:
            finished = _as_run_finished(item, run_input)
            if finished is not None and not self.stateless:
                with self._changed:
                    self._changed.notify_all()
                    if isinstance(finished.outcome, RunFinishedInterruptOutcome):
                        self._open[run_input.thread_id] = finished.outcome.interrupts
                    else:
                        self._open.pop(run_input.thread_id, None)
            if isinstance(item, Mapping):
                payload: Any = dict(item)
            elif isinstance(item, Start):
                payload = encode(RunStartedEvent(thread_id=run_input.thread_id, run_id=run_input.run_id,
                                                 protocol_version=item.protocol_version))
            else:
                payload = encode(finished if finished is not None else item)
            return b"data: " + dump_json(payload) + b"\n\n"
        return frame

    async def _stream(self, send: Send, receive: Receive, stream: Stream, plan: _Plan) -> None:
        frame = self._played(plan)
        headers = [(b"cache-control", b"no-cache"), (b"x-accel-buffering", b"no"), *encode_headers(stream.headers)]
        if header_type(stream.headers) is None:
            headers.insert(0, (b"content-type", (stream.content_type or _SSE_TYPE).encode("latin-1")))
        await send({"type": "http.response.start", "status": stream.status, "headers": headers})
        # A client that goes away must release a response held at a Wait or Pause, or the server
        # could not shut down until the gate opens.
        gone = asyncio.ensure_future(_disconnect(receive))
        try:
            for item in stream.items:
                if gone.done():
                    self._gone(plan.run_input.run_id)
                    return
                if isinstance(item, Wait):
                    if not await _race(item.gate.arrive(), gone, item.timeout):
                        if gone.done():
                            self._gone(plan.run_input.run_id)
                        else:
                            self._note(f"a Wait gate was not opened within {item.timeout} s; connection cut")
                        return
                elif isinstance(item, Pause):
                    await _race(asyncio.sleep(item.seconds), gone, None)
                elif isinstance(item, Disconnect):
                    # Returning without the final body message makes the server close the connection
                    # with the body incomplete (and say so in its log, unless told it was on purpose).
                    _CUT_ON_PURPOSE.set(True)
                    _quiet_deliberate_cuts()
                    return
                elif isinstance(item, KeepAlive):
                    await _body(send, b": " + item.comment.encode() + b"\n\n")
                elif isinstance(item, bytes):
                    await _body(send, item)
                else:
                    await _body(send, frame(item))
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            gone.cancel()

    def _note(self, message: str) -> None:
        with self._changed:
            self._warnings.append(message)
            self._changed.notify_all()

    def _gone(self, run_id: str) -> None:
        with self._changed:
            self._disconnects.append(run_id)
            self._changed.notify_all()


def _is_run_started(item: Item) -> bool:
    if isinstance(item, Mapping):
        return item.get("type") == RunStartedEvent.TYPE
    return isinstance(item, (Start, RunStartedEvent))


def _as_run_finished(item: Item, run_input: RunAgentInput) -> RunFinishedEvent | None:
    if isinstance(item, RunFinishedEvent):
        return item
    if isinstance(item, Finish):
        return RunFinishedEvent(thread_id=run_input.thread_id, run_id=run_input.run_id, outcome=item.outcome,
                                result=item.result, usage=item.usage)
    if isinstance(item, Mapping) and item.get("type") == RunFinishedEvent.TYPE:
        try:
            with collect_warnings():
                event = decode_value(dict(item))
        except ProtocolError:
            return None  # a deliberately malformed terminal: sent verbatim, nothing to track
        return event if isinstance(event, RunFinishedEvent) else None
    return None


def _faulty_outcome(items: list[Item], faults: frozenset[str], run_input: RunAgentInput) -> list[Item]:
    """The step's items with the output faults applied to its interrupt outcome (see :data:`Fault`)."""
    for i in range(len(items) - 1, -1, -1):
        finished = _as_run_finished(items[i], run_input)
        if finished is None:
            continue
        if not isinstance(finished.outcome, RunFinishedInterruptOutcome):
            return items
        asked = finished.outcome.interrupts
        if "repeat-interrupt-id" in faults:
            first = asked[0].id
            asked = tuple(attrs.evolve(x, id=first) for x in asked) if len(asked) > 1 else (asked[0], asked[0])
            items[i] = attrs.evolve(finished, outcome=RunFinishedInterruptOutcome(interrupts=asked))
        if "pause-as-custom" in faults:
            value = dump_json([encode(x) for x in asked]).decode()
            items[i:i + 1] = [CustomEvent(name="on_interrupt", value=value), attrs.evolve(finished, outcome=None)]
        elif "pause-as-tool-call" in faults:
            question = asked[0].message or "Shall I go on?"
            items[i:i + 1] = [*scenarios.tool_call(f"{run_input.run_id}-confirm", "confirm_action",
                                                   {"question": question}),
                              attrs.evolve(finished, outcome=None)]
        return items
    return items


def _received_headers(scope: Scope) -> dict[str, str]:
    """A request's headers as :attr:`ScriptedAgent.request_headers` keeps them."""
    headers: dict[str, str] = {}
    for name, value in scope.get("headers", ()):
        key, text = name.decode("latin-1").lower(), value.decode("latin-1")
        headers[key] = f"{headers[key]}, {text}" if key in headers else text
    return headers


async def _body(send: Send, data: bytes) -> None:
    await send({"type": "http.response.body", "body": data, "more_body": True})


async def _disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _race(work: Awaitable[None], gone: asyncio.Future[None], timeout: float | None) -> bool:
    """Run ``work`` until it finishes (``True``), the client goes away or ``timeout`` passes (``False``)."""
    task = asyncio.ensure_future(work)
    done, _ = await asyncio.wait({task, gone}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        return True
    task.cancel()
    return False

