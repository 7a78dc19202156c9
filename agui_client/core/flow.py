"""The run protocol, written once: claim, send, fold, save, release.

This is the part that guarantees a thread's runs are neither lost nor sent twice, so it lives in one
place. It is sans-IO: every step that needs the outside world is an *effect* the protocol yields and
a shell carries out, sending back the answer or throwing in what the outside raised (the way h11
hands a connection's events to its caller, or httpx's ``auth_flow`` yields requests). The effects,
and what a shell does for each, are ``core/effects.py``.

``Thread`` and ``AsyncThread`` are pumps of these generators: they differ only in how they carry an
effect out (``await``, a store call in a worker thread, a write shielded from cancellation, a Ctrl-C
held until a write has returned), never in what the protocol decides.

The rules, each decided here once (how a claim is taken, a run saved and a claim given back, against
what the store holds, is the thread's standing, ``core/standing.py``):

* every run claims the thread before anything is sent, a new thread by creating its record claimed,
  so of two writers racing on one thread exactly one sends;
* a run is saved when its terminal event is folded, before the caller sees it: as its changes
  (``append``) when the store can take them and its record holds the thread as last written, else
  whole (a new thread's first run too: its changes are all of it);
* a run that fails or is interrupted gives its claim back, unless it is a resume whose request may
  have reached the agent: that one stays claimed until someone decides (``release_claim()``);
* a failed save is the error the caller sees, and says the agent answered.
"""

from __future__ import annotations

import contextvars
import json
import logging
import uuid
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any

import attrs

from .._inert import quoted, quoted_name
from ..errors import (
    AguiError,
    ConcurrentResume,
    LimitExceeded,
    ProtocolError,
    StreamWarning,
    ThreadBusy,
    TransportError,
    UnencodableValue,
)
from ..wire import codec
from ..wire.types import messages as msg
from ..wire.types.base import JSON
from ..wire.types.run import PROTOCOL_VERSION, Context, ResumeEntry, RunAgentInput, Tool
from .effects import RECEIVE, Check, Close, Flow, Hand, Invoke, Load, Run, Send, Write
from .exchange import StreamHandle
from .fold import ThreadState, parsed_arguments
from .headers import checked_headers
from .interrupts import (
    ResumeBuilder,
    awaiting_answers,
    check_resume,
    check_target,
    listed_ids,
    warn_absent_payloads,
    without_abandoned_payloads,
)
from .legacy import forward_resume
from .plan import (
    MessageInput,
    Plan,
    ToolHandler,
    checked_seconds,
    declare,
    encode_input,
    is_parts,
    new_messages,
    refuse_unencodable,
    refuse_unencodable_item,
    unencodable,
)
from .result import RunResult
from .schema import DEFAULT_MAX_SCHEMA_STEPS
from .session import RunSession
from .standing import Standing

if TYPE_CHECKING:
    from ..stores.base import StoredThread

__all__ = ["Conversation", "Planning", "ResumeInput", "planned"]

#: What ``run(resume=...)`` accepts: a builder or the entries themselves.
ResumeInput = ResumeBuilder | Sequence[ResumeEntry] | None

#: A run's plan in the making (``Conversation._planning``): it yields the resume's checks (a ``Check``
#: whose ``judge()`` returns the entries), is sent the entries, and returns the plan.
Planning = Generator[Check[tuple[ResumeEntry, ...]], tuple[ResumeEntry, ...], Plan]


def planned(planning: Planning, entries: tuple[ResumeEntry, ...]) -> Plan:
    """The plan ``planning`` makes with ``entries``, what the checks it yielded returned."""
    try:
        planning.send(entries)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    raise AssertionError("a plan yields its checks once")  # pragma: no cover - (_planning yields once)

logger = logging.getLogger("agui_client")

#: The thread object whose run (or tool loop) this thread or task is in: its own nested runs may go on.
_RUNNING_HERE: contextvars.ContextVar[Any] = contextvars.ContextVar("agui_client_running_here", default=None)


# -- the conversation ----------------------------------------------------------------------------------

class Conversation(Standing):
    """One thread object's side of the protocol: the folded state, its standing in the store (the
    version it holds, its owner token, a claim in doubt), and the protocol's steps as flows.

    ``Thread`` and ``AsyncThread`` are conversations whose shells carry the effects out.
    """

    def __init__(self, store: Any, thread_id: str, clock: Callable[[], datetime] | None,
                 tool_handlers: Mapping[str, ToolHandler] | None, legacy_interrupts: str | None = None) -> None:
        if not thread_id.isascii() and unencodable(thread_id):
            # (a lone surrogate: no store could key it, and the agent would be sent another id)
            raise UnencodableValue(f"nothing was sent: the thread id {quoted_name(thread_id)} holds a lone surrogate",
                                   field="threadId", pointer="", reason="a lone surrogate")
        self.id = thread_id
        self._store = store
        self._clock = clock
        self.tool_handlers: dict[str, ToolHandler] = dict(tool_handlers or {})
        self._legacy = legacy_interrupts
        self._state = ThreadState(thread_id=thread_id, legacy_interrupts=legacy_interrupts)
        super().__init__(store)
        self._running = 0  # (runs of this object in flight: its tool loop's own runs nest in the loop)
        # Held while ``_running`` is looked at and changed: a lock in the shells (the core starts no
        # thread), since OS threads may share one object.
        self._taking: AbstractContextManager[Any] = nullcontext()
        # The last run's redactor (its request's credentials): a log line naming what the agent chose
        # (a call id echoing the token) passes through it.
        self._redact: Callable[[str], str] | None = None

    def __repr__(self) -> str:
        # What a person printing a thread wants to know: which one, where it stands in the store, and
        # whether it waits for answers. Counts only: the messages are the agent's text, unbounded.
        state = self._state
        return (f"<{type(self).__name__} id={quoted_name(self.id)} version={self._version!r} "
                f"messages={len(state.messages)} open_interrupts={listed_ids([i.id for i in state.open_interrupts])}>")

    # -- what the caller reads and adds ----------------------------------------------------------------

    @property
    def state(self) -> ThreadState:
        """The thread's folded state (messages, shared state, open interrupts, usage …)."""
        return self._state

    @property
    def version(self) -> int | None:
        """The version of the thread in the store (``None`` before it was stored; 0 while the first run
        holds the record its claim created)."""
        return self._version

    @property
    def open_interrupts(self) -> tuple[Any, ...]:
        """The interrupts waiting for an answer."""
        return self._state.open_interrupts

    def resume_builder(self, now: datetime | Callable[[], datetime] | None = None) -> ResumeBuilder:
        """A builder bound to this thread, its interrupted run and its open interrupts.

        ``run(resume=builder)`` refuses it (``MisdirectedResume``, nothing sent) on another thread, or
        once this thread has been interrupted again: interrupt ids are unique only within a run, so a
        kept builder must not answer a new question that reuses an id. ``now`` defaults to the
        client's clock.
        """
        # (the ledger's own, not a read's copies: the builder copies them from the bytes the ledger keeps)
        return ResumeBuilder(self._state.ledger.kept, now=now if now is not None else self._clock,
                             thread_id=self.id, run_id=self._state.interrupted_run_id)

    def add_message(self, message: msg.Message) -> None:
        """Add a message to the thread; the next run carries it."""
        self._state.add_message(message)

    def add_tool_result(self, tool_call_id: str, content: str | Sequence[msg.ContentPart] | JSON, *,
                        message_id: str | None = None, error: str | None = None) -> msg.ToolMessage:
        """Answer a frontend tool call; the next run carries the tool message (TC-20).

        Non-string content that is not a list of content parts is sent as JSON text.

        Raises:
            UnencodableValue: ``content`` is not JSON (a set, ``NaN``, a lone surrogate …); nothing
                was added.
        """
        parts = is_parts(content)
        refuse_unencodable("content", codec.encode(list(content)) if parts else content,
                           f"the result for tool call {quoted_name(tool_call_id)}")
        if not isinstance(content, str) and not parts:
            content = json.dumps(content, ensure_ascii=False)
        return self._state.add_tool_result(tool_call_id, content, message_id=message_id or str(uuid.uuid4()),
                                           error=error)

    # -- one run at a time ----------------------------------------------------------------------------

    @contextmanager
    def _exclusive(self, *, loop: bool = False) -> Iterator[None]:
        # One run at a time per object: a second one, or a reload() in the middle, would interleave
        # two histories or drop the run; the claim is per object, so it cannot arbitrate them. The
        # tool loop (``loop``) holds it across its runs and handlers; its own runs, made in its
        # thread or task, nest.
        # Looking and taking are one step (``_taking``): two OS threads sharing an object could both find
        # it idle, then claim as its one owner (the store takes that for a lost reply) and both send.
        # The lock is re-entrant: a run's stream left open is given back when the garbage collector
        # closes it, in whatever code of the thread was allocating then, this look under the lock too.
        with self._taking:
            busy = self._busy()
            if not busy:
                self._running += 1
        if busy:
            raise _thread_busy(self.id, "start another run")
        try:
            with self._looping() if loop else nullcontext():
                yield
        finally:
            with self._taking:
                self._running -= 1

    def _kept_busy(self) -> Callable[[], None]:
        """Hold the object as ``_exclusive()`` does, past the end of that block, until the call this
        returns is made (once). A stream's block left while another reader is inside a step leaves the
        run to that reader to settle: no other run may start on the object before it has."""
        with self._taking:
            self._running += 1

        def let_go() -> None:
            with self._taking:
                self._running -= 1
        return let_go

    @contextmanager
    def _looping(self) -> Iterator[None]:
        # While the tool loop works (its handlers, its own runs): those runs nest in it. A streaming loop
        # holds the object with ``_exclusive()`` and is looping only between the events it hands out, so
        # the caller's own block, which runs between them, cannot start a run on it.
        token = _RUNNING_HERE.set(self)
        try:
            yield
        finally:
            _RUNNING_HERE.reset(token)

    def _busy(self) -> bool:
        """Whether another run of this object is in flight (not the tool loop's own, which nest)."""
        return bool(self._running) and _RUNNING_HERE.get() is not self

    def _idle(self, doing: str) -> None:
        if self._busy():
            raise _thread_busy(self.id, doing)

    # -- the plan --------------------------------------------------------------------------------------

    def _plan(self, message: MessageInput, resume: ResumeInput, tools: Sequence[Tool] | None,
              context: Sequence[Context] | None, forwarded_props: JSON, state: JSON,
              run_id: str | None, pending_unknown: bool = False, run_timeout: float | None = None,
              headers: Mapping[str, str] | None = None) -> Plan:
        """The run's plan, its checks made here (see :meth:`_planning`)."""
        planning = self._planning(message, resume, tools, context, forwarded_props, state, run_id, pending_unknown,
                                  run_timeout, headers)
        return planned(planning, next(planning).judge())

    def _planning(self, message: MessageInput, resume: ResumeInput, tools: Sequence[Tool] | None,
                  context: Sequence[Context] | None, forwarded_props: JSON, state: JSON,
                  run_id: str | None, pending_unknown: bool = False, run_timeout: float | None = None,
                  headers: Mapping[str, str] | None = None) -> Planning:
        """The run's plan, made in two halves around the resume's checks: it yields them (a :class:`Check`
        whose ``judge()`` reads the answers, the caller's builder and the open interrupts, nothing else of
        the thread's), is sent what the judge returns, and returns the plan (:func:`planned`). The
        async shell makes costly checks in a worker thread (they may take seconds of CPU) and both halves
        on the loop, where its other tasks read and change the thread."""
        # Everything here runs before the thread is claimed and before any byte is sent: a refusal
        # leaves the thread as it was.
        checked = checked_headers(headers)
        run_timeout = checked_seconds("run_timeout", run_timeout)
        new = new_messages(message)
        # The interrupts the checks read (and only read): the thread's own, not a read's copies of every
        # schema (200 forms: some 0.17 s of the loop a read). The thread replaces them as it folds, never
        # changes them in place, so a worker thread reads them while the loop goes on.
        open_interrupts = self._state.ledger.open_interrupts
        answering = self._answering(resume, pending_unknown)
        now, ceiling = self._clock, self._schema_ceiling()

        def answered() -> tuple[ResumeEntry, ...]:
            entries = without_abandoned_payloads(answering())
            # The egress check: the same rules as build(), judged now, whatever built the list (IR-13, IR-14)
            check_resume(open_interrupts, entries, now=now, pending_unknown=pending_unknown, max_schema_steps=ceiling)
            return entries

        costly = self._checks_schemas(resume)
        entries = yield Check(answered, costly)

        def recheck() -> None:
            # (again before a try sent after a wait, max_retries, when an interrupt may have expired)
            check_resume(open_interrupts, entries, now=self._clock, pending_unknown=pending_unknown,
                         max_schema_steps=self._schema_ceiling())
        sent = entries
        via = self._state.open_interrupts_via
        if via is not None and entries:
            # Interrupts the legacy bridge read: the answers go where that producer reads them, and
            # only there (a resume list as well would be two answers to one question).
            forwarded_props = forward_resume(via, forwarded_props, entries, self._state.open_interrupts)
            sent = ()
        else:
            warn_absent_payloads(entries)
        if tools is None and self.tool_handlers:
            tools = [declare(name, handler) for name, handler in self.tool_handlers.items()]
        replace_state = state is not None  # None: keep the thread's state (send `set_state(None)` for null)
        # What the caller hands this run is checked where it can be named; the thread's own history
        # came from JSON or was checked when it was added.
        if replace_state:
            refuse_unencodable("state", state, "the state")
        if forwarded_props is not None:
            refuse_unencodable("forwardedProps", forwarded_props, "forwarded_props")
        for field, items in (("context", context), ("tools", tools)):
            for n, item in enumerate(items or ()):
                refuse_unencodable_item(field, item, f"{field} item {n}", prefix=f"/{n}")
        history = self._state.input_messages()
        for n, item in enumerate(new):
            refuse_unencodable_item("messages", item, "the new message", prefix=f"/{len(history) + n}")
        run_input = RunAgentInput(
            thread_id=self.id,
            run_id=run_id or str(uuid.uuid4()),
            messages=(*history, *new),
            state=state if replace_state else self._state.document.copy(),  # (the input is handed out: its own)
            tools=tuple(tools) if tools is not None else (),
            context=tuple(context) if context is not None else (),
            forwarded_props=forwarded_props if forwarded_props is not None else {},
            resume=sent or None,
            protocol_version=PROTOCOL_VERSION,
        )
        return Plan(run_input=run_input, new_messages=new, state=state, replace_state=replace_state,
                    resuming=bool(entries), body=encode_input(run_input), run_timeout=run_timeout,
                    headers=checked, recheck=Check(recheck, costly) if entries else None)

    def _answering(self, resume: ResumeInput, pending_unknown: bool) -> Callable[[], tuple[ResumeEntry, ...]]:
        """The entries ``resume`` gives, refused as the open interrupts require (before anything is sent),
        in two halves: what the thread's state refuses is refused now; the call returned builds the
        entries (a builder checks its answers), reading nothing of the thread's."""
        open_interrupts = self._state.ledger.open_interrupts  # (only read here, as the plan's checks read them)
        if open_interrupts and not resume:
            # Not a resume that left some out: a run that would move past the questions. Said so, with
            # the questions and the way to answer them (still an UncoveredInterrupts; they go with the
            # error: copies).
            raise awaiting_answers(self.id, self._state.open_interrupts)
        if isinstance(resume, ResumeBuilder):
            check_target(resume, self.id, self._state.interrupted_run_id, open_interrupts,
                                 lambda: [run.run_id for run in self._state.runs])
            return partial(resume.build, pending_unknown=pending_unknown, max_schema_steps=self._schema_ceiling())
        entries = tuple(resume or ())
        return lambda: entries

    def _early_check(self, arguments: Mapping[str, Any]) -> Check[None]:
        """The run's resume checks, judged before the tool loop runs a handler: a run they refuse must not
        have had an action taken, or a tool answer added, on its behalf. What the thread's state refuses
        is refused now; the rest is the ``Check`` returned, made as the plan's are (:meth:`_planning`)."""
        resume, pending_unknown = arguments.get("resume"), bool(arguments.get("pending_unknown", False))
        answering = self._answering(resume, pending_unknown)
        # (the thread's own interrupts, only read, as the plan's checks read them: see _planning)
        open_interrupts, now, ceiling = self._state.ledger.open_interrupts, self._clock, self._schema_ceiling()

        def judge() -> None:
            # (an abandoning entry's payload is dropped, as the run drops it; the run itself warns of it)
            entries = [attrs.evolve(e, payload=None) if isinstance(e, ResumeEntry) and e.status == "cancelled"
                       else e for e in answering()]
            check_resume(open_interrupts, entries, now=now, pending_unknown=pending_unknown, max_schema_steps=ceiling)
        return Check(judge, self._checks_schemas(resume))

    def _checks_schemas(self, resume: ResumeInput) -> bool:
        """Whether planning a run with ``resume`` checks answers against the open interrupts' schemas (the
        async shell plans such a run in a worker thread: a check may take seconds of CPU)."""
        # (only read: the ledger's own interrupts, not a read's copies of every schema)
        return bool(resume) and any(i.response_schema is not None for i in self._state.ledger.open_interrupts)

    def _schema_ceiling(self) -> int | None:
        """The most steps a resume's schema checks may spend (the shells give their client's
        ``max_schema_steps``; the response's session refuses schemas that would buy more)."""
        return DEFAULT_MAX_SCHEMA_STEPS

    # -- a run -------------------------------------------------------------------------------------------

    def _turn(self, plan: Plan, handle: StreamHandle, *, quiet: bool,
              interrupted: type[BaseException]) -> Flow[RunResult | None]:
        """One run: claim, send, fold (here, or by the caller reading a stream), save, and give the claim
        back or keep it by the failure rule.

        ``quiet``: nobody reads the events (``run()``): each read is folded at once and the run's result
        returned. Otherwise the flow hands the caller a stream (``Hand``) and returns, once the caller's
        block ended, the result so far when the stream was not read to its end (else ``None``: the stream
        has it). ``interrupted`` is what an interruption from outside is in this shell (Ctrl-C, a
        cancelled task): claimed as it came, the thread is let go at once.
        """
        claimed = yield from self._claim(plan, interrupted)
        finished = True
        result: RunResult | None = None
        handle.before_resend = plan.recheck
        try:
            yield Send(plan, handle)
            try:
                session = self._begin(plan, handle, quiet=quiet)
                if quiet:
                    result = yield from self._receive(session, handle, quiet=True)
                else:
                    finished = yield Hand(self._receive(session, handle, quiet=False))
            except BaseException as exc:
                yield Close(exc)
                raise
            yield Close(None)
        except BaseException as exc:
            yield from self._settle(claimed, plan, handle, exc)
            raise
        if quiet:
            return result
        if not plan.resuming and claimed is not None:
            # Left before the end: not saved; a no-op once the run's save moved the version on.
            yield from self._release(claimed)
        if finished:
            return None
        if not session.terminated:
            self._left_early(session, plan)
        return self._current(session, handle)

    def _receive(self, session: RunSession, handle: StreamHandle, *, quiet: bool) -> Flow[RunResult]:
        """Fold the response read by read, save the thread each time a run ended, and return the result."""
        # The index the last save was made at. A response may carry several runs (a recorded multi-run
        # stream, a run after an interrupt), and a late RUN_ERROR may follow the end (CL-02): each run's
        # end is saved, so the store never holds less than the thread the caller was handed.
        saved_at: int | None = None
        try:
            while (batch := (yield RECEIVE)) is not None:
                if not session.admit(batch):  # (within max_run_memory, or refused before it is folded)
                    continue
                if quiet:
                    # A read's payloads at once, no event made (run() reads none, and a step per
                    # payload cost a tenth of a chat stream's fold).
                    self._warnings_into(session, handle)
                    session.fold_read(batch)
                    if session.terminated and saved_at != session.index:
                        # Saved once the read holding the terminal event is folded, not when the
                        # producer gets round to closing the response.
                        yield from self._save(session)
                        saved_at = session.index
                    continue
                for payload in batch:
                    self._warnings_into(session, handle)
                    events = session.feed_payload(payload)
                    if events:
                        if session.terminated and saved_at != session.index:
                            yield from self._save(session)  # (before the terminal event reaches the caller)
                            saved_at = session.index
                        yield events
        except AguiError as exc:
            yield from self._fault(exc, session, handle, saved_at is not None)
        self._warnings_into(session, handle)
        result = session.end()
        if saved_at is None or (session.terminated and saved_at != session.index):
            yield from self._save(session)
        return result

    def _begin(self, plan: Plan, handle: StreamHandle, *, quiet: bool) -> RunSession:
        # The session reports the run's errors through the redactor of the request that was sent.
        redact = handle.redactor.text if handle.redactor else None
        self._redact = redact
        for message in plan.new_messages:
            self._state.add_message(message)
        if plan.replace_state:
            self._state.set_state(plan.state)
        # run() reads no events (quiet): their session reads plain events without making them, and the
        # thread may keep what the payloads it parsed hold (a STATE_SNAPSHOT's document) uncopied.
        return RunSession(self._state, run_input=plan.run_input, events=not quiet, redact=redact,
                          budget=handle.budget, max_patch_ops=handle.max_patch_ops,
                          max_schema_steps=handle.max_schema_steps)

    def _fault(self, exc: AguiError, session: RunSession, handle: StreamHandle, saved: bool) -> Flow[None]:
        """A fault while reading the run: raised, located and carrying the run so far, unless the run
        had already ended and been saved (then a warning, and the run stands)."""
        if saved and _warned_after_the_end(exc, session):
            return
        self._stamp(exc, session, handle)
        if not saved and _asked(exc):
            yield from self._save(session)
            _kept(exc)
        raise exc

    def _warnings_into(self, session: RunSession, handle: StreamHandle) -> None:
        if handle.warnings:
            # (found below the session: the run they belong to is the session's)
            session.warnings.extend(w if w.run_id is not None else attrs.evolve(w, run_id=session.run_id)
                                    for w in handle.warnings)
            handle.warnings.clear()

    def _stamp(self, exc: AguiError, session: RunSession, handle: StreamHandle) -> None:
        # Faults found below the session (a framing or size-limit error, an idle timeout) still say
        # where they happened and carry what was folded before them, like the session's own errors.
        if isinstance(exc, ProtocolError):
            exc.locate(run_id=session.run_id, index=session.index)
        elif isinstance(exc, TransportError) and exc.index is None:
            exc.run_id, exc.index = session.run_id, session.index
        if exc.result is None:
            session.mark_cut()  # (the session's own errors did; a transport fault is found here)
            self._warnings_into(session, handle)
            exc.result = session.result()

    def _left_early(self, session: RunSession, plan: Plan) -> None:
        """The caller left the stream before the run's terminal event: the response was closed, and the
        result says so (a ``TR-16`` warning), never a silent ``outcome=None``.

        What was streamed is cut where it stopped, as after a dropped connection (messages kept as far
        as they went, flagged incomplete; a cut tool call is never offered as pending).
        """
        session.mark_cut()
        held = ("the resume's request reached the agent, so the thread stays claimed (release_claim() to "
                "try again deliberately)" if plan.resuming else "the thread was given back")
        session.warnings.append(StreamWarning(
            code="TR-16", message=f"the stream was left after {session.index} events, before the run ended: the "
                                  f"response was closed and the run is incomplete (not saved; {held})",
            run_id=session.run_id or plan.run_input.run_id, index=session.index))

    def _current(self, session: RunSession, handle: StreamHandle) -> RunResult:
        self._warnings_into(session, handle)
        return session.result()

    # -- the store -----------------------------------------------------------------------------------

    def _release_claim(self, force: bool) -> Flow[None]:
        self._idle("release the claim")
        stored: StoredThread | None = yield Load()
        if stored is not None and stored.claim is not None:
            _refuse_foreign_claim(self.id, stored, self._owner, force)
            held = self._version
            if held is None or stored.version not in (held, held + 1) or (
                    self._record_id is not None and stored.record_id != self._record_id):
                # This object does not hold the record whose claim it lets go (it never loaded it,
                # or another writer ran since): it takes the record first, since after the release
                # it holds the version the release makes. Else its next run would claim that version
                # with its own, older, history and save it over the thread.
                self._take(stored)
            arguments = {"claimed_version": stored.version, "owner": stored.claim}
            if "release" in self._traits.names_records and stored.record_id is not None:
                arguments["record_id"] = stored.record_id  # (the record it read, not one made since)
            yield Write("release", arguments)

    def _reload(self) -> Flow[None]:
        self._idle("reload")
        self._take((yield Load()))

    # -- the tool loop -------------------------------------------------------------------------------

    def _until_done(self, message: MessageInput, max_steps: int, arguments: Mapping[str, Any]) -> Flow[RunResult]:
        checked_headers(arguments.get("headers"))  # (refused before a handler runs, as the resume checks are)
        held = self._held_calls()
        if held is not None:
            yield self._early_check(arguments)
            yield from self._answer_tools(held)
        result = yield from self._run_claimed(message, arguments)
        for _ in range(max_steps - 1):
            calls = self._handled_calls(result.pending_tool_calls) if result.outcome == "success" else None
            if calls is None:
                break
            yield from self._answer_tools(calls)
            result = yield from self._run_claimed(None, {name: arguments.get(name) for name in
                                                          ("tools", "context", "forwarded_props",
                                                                                   "run_timeout", "headers")})
        return result

    def _answer_tools(self, calls: Sequence[msg.ToolCall]) -> Flow[None]:
        # Claimed first: a replica answering the same calls is refused before a handler runs twice.
        yield from self._create_unclaimed()
        before = self._version
        try:
            self._preclaimed = yield from self._claim_now()
            for call in calls:
                try:
                    output = yield Invoke(call)
                except Exception as exc:  # noqa: BLE001 - a failing tool is reported to the agent, as a tool would
                    self._tool_failed(call, exc)
                    continue
                self.add_tool_result(call.id, output)
        except BaseException:
            if self._preclaimed is None and self._version != before:
                self._preclaimed = self._version  # (the claim landed as the interruption came)
            yield from self._release_preclaimed()
            raise

    def _run_claimed(self, message: MessageInput, arguments: Mapping[str, Any]) -> Flow[RunResult]:
        try:
            result: RunResult = yield Run(message, arguments)
        finally:
            yield from self._release_preclaimed()  # (a no-op once the run took the claim over)
        return result

    def _release_preclaimed(self) -> Flow[None]:
        claimed, self._preclaimed = self._preclaimed, None
        if claimed is not None:
            yield from self._release(claimed, logged=True)

    def _handled_calls(self, calls: Sequence[msg.ToolCall]) -> Sequence[msg.ToolCall] | None:
        """``calls`` when there are some and every one has a handler, else ``None``."""
        if not calls or any(c.function.name not in self.tool_handlers for c in calls):
            return None
        return calls

    def _held_calls(self) -> Sequence[msg.ToolCall] | None:
        # The calls the thread's last run left unanswered (here, or on another replica), if all handled.
        state = self._state
        calls = [state.tool_call(call_id) for call_id in state.pending_tool_call_ids]
        return self._handled_calls([c for c in calls if c is not None])

    def _invoke(self, call: msg.ToolCall) -> Any:
        handler = self.tool_handlers[call.function.name]
        arguments = parsed_arguments(call)
        return handler(**arguments) if isinstance(arguments, dict) else handler(arguments)

    def _tool_failed(self, call: msg.ToolCall, exc: Exception) -> None:
        # (the tool's name and the call's id are the agent's: quoted as ids, so an escape sequence in one
        # cannot act on the terminal showing the application's log, a megabyte id is cut, and two that
        # differ read differently; and through the run's redactor first: an agent echoing the request's
        # token as its call id, or into the arguments a handler's error quotes, must not get it into the
        # application's log, and a cut token would no longer be found whole; the error, which may quote a
        # megabyte of the arguments, is then cut as every error and log line cuts the agent's words)
        redact = self._redact
        logger.warning("tool handler %s raised %s for call %s; the agent is told the call failed",
                       quoted_name(redact(call.function.name) if redact else call.function.name),
                       quoted(redact(repr(exc)) if redact else repr(exc)),
                       quoted_name(redact(call.id) if redact else call.id))
        self.add_tool_result(call.id, f"error: {exc}", error=str(exc))


def _thread_busy(thread_id: str, doing: str) -> ThreadBusy:
    return ThreadBusy(f"thread {quoted_name(thread_id)}: cannot {doing} while this object is running a run (one run "
                      "at a time per Thread object; load another object for concurrent work)", thread_id=thread_id)


def _asked(exc: AguiError) -> bool:
    """The run ended with interrupts the session had to refuse but holds open (IR-27)."""
    return bool(getattr(exc, "interrupts", None))


def _kept(exc: AguiError) -> None:
    # The agent stopped to ask, however badly it said so: the thread is saved with those interrupts
    # open, so another process or replica cannot move past them either. The save ends a resume's
    # claim (the agent answered it), so the failure handler leaves the store alone.
    exc.thread_saved = True  # type: ignore[attr-defined]


def _refuse_foreign_claim(thread_id: str, stored: StoredThread, owner: str, force: bool) -> None:
    # Quietly doing nothing would let the caller believe the thread is free to run again.
    if not force and stored.claim != owner:
        # (the owner is whatever another writer stored: quoted as an id, never raw on a terminal)
        raise ConcurrentResume(f"thread {quoted_name(thread_id)} is claimed by another writer (owner "
                               f"{quoted_name(stored.claim)}); release_claim(force=True) takes it back once that "
                               "writer is surely gone",
                               thread_id=thread_id, expected_version=stored.version, actual_version=stored.version)


def _warned_after_the_end(exc: AguiError, session: RunSession) -> bool:
    """A transport fault after the run ended and was saved: the run stands, and the fault is a warning.

    Raising would report a finished, saved run as failed, and the caller's ordinary retry would send
    the turn twice. (The stream stays open after the end only for CL-02's one late RUN_ERROR.) The
    response outgrowing ``max_run_bytes`` after the end (``RUN-BYTES``: comments without end, say) is
    such a fault too: the client stops reading a stream that goes on.
    """
    if not (isinstance(exc, TransportError) or (isinstance(exc, LimitExceeded) and exc.rule == "RUN-BYTES")):
        return False
    session.warnings.append(StreamWarning(
        code="TR-13", message=f"the response stayed open after the run ended, then failed: {exc} "
                              "(the run's result stands, and was saved)", run_id=session.run_id, index=session.index))
    return True


