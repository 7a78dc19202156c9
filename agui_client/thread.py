"""``Thread`` and ``AsyncThread``: one conversation across runs.

A thread owns a ``ThreadState`` and a place in the client's store. Each run: assemble the input from
the thread (its messages without activities, its state, the resume entries), check the interrupt
rules one last time, claim the thread (a new one by creating its record), POST, loop the payloads into a ``RunSession``,
and save the thread at the run's end — before the caller sees the result. Everything but the I/O is
in ``_ThreadCore``, shared by both shells, so they differ only in ``await``.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import logging
import signal
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, NoReturn, cast

import attrs

from .core.fold import ThreadState, parsed_arguments
from .core.interrupts import ResumeBuilder, _warn_absent_payloads, check_resume
from .core.session import RunResult, RunSession
from .errors import (
    AguiError,
    ConcurrentResume,
    HTTPStatusError,
    ProtocolError,
    ResumeRefused,
    StoreError,
    StreamWarning,
    ThreadBusy,
    TransportError,
    UnencodableValue,
)
from .wire import codec
from .wire.jsonio import json_problem
from .wire.types import events as ev
from .wire.types import messages as msg
from .wire.types.base import JSON
from .wire.types.run import PROTOCOL_VERSION, Context, ResumeEntry, RunAgentInput, Tool

if TYPE_CHECKING:
    from .client import AgentClient, AsyncAgentClient, StreamHandle
    from .stores.base import StoredThread

__all__ = ["Thread", "AsyncThread", "RunStream", "AsyncRunStream", "MessageInput", "ResumeInput"]

#: What ``run()`` accepts as the new turn: text (a user message), a message, or several messages.
MessageInput = str | msg.Message | Sequence[msg.Message] | None
#: What ``run(resume=...)`` accepts: a builder or the entries themselves.
ResumeInput = ResumeBuilder | Sequence[ResumeEntry] | None

ToolHandler = Callable[..., Any]

logger = logging.getLogger("agui_client")

#: The thread object whose run (or tool loop) this thread or task is in: its own nested runs may go on.
_RUNNING_HERE: contextvars.ContextVar[Any] = contextvars.ContextVar("agui_client_running_here", default=None)


@attrs.frozen(kw_only=True)
class _Plan:
    run_input: RunAgentInput
    new_messages: tuple[msg.Message, ...]
    state: JSON
    replace_state: bool
    resuming: bool
    #: The encoded request, made before the thread is claimed so a value JSON cannot hold is refused first.
    body: bytes


class _ThreadCore:
    """Everything a thread does that is not I/O."""

    def __init__(self, store: Any, thread_id: str, clock: Callable[[], datetime] | None,
                 tool_handlers: Mapping[str, ToolHandler] | None) -> None:
        if not thread_id.isascii() and _unencodable(thread_id):
            # (a lone surrogate: no store could key it, and the agent would be sent another id)
            raise UnencodableValue(f"nothing was sent: the thread id {thread_id!r} holds a lone surrogate",
                                   field="threadId", pointer="", reason="a lone surrogate")
        self.id = thread_id
        self._store = store
        self._clock = clock
        self.tool_handlers: dict[str, ToolHandler] = dict(tool_handlers or {})
        self._state = ThreadState(thread_id=thread_id)
        self._version: int | None = None
        self._owner = f"{uuid.uuid4()}"
        #: The version a claim of this object would have made when the store failed while writing it
        #: (the claim may have landed, its reply lost); ``None`` when no claim is in doubt.
        self._unsure: int | None = None
        self._creates_claimed = _creates_claimed(store)
        self._take(store.load(thread_id))
        self._running = 0  # (runs of this object in flight: its tool loop's own runs nest in the loop)
        self._preclaimed: int | None = None  # (claimed by run_until_done before its handlers ran)

    @contextmanager
    def _exclusive(self, *, loop: bool = False) -> Iterator[None]:
        # One run at a time per object: a second one, or a reload() in the middle, would interleave
        # two histories or drop the run; the claim is per object, so it cannot arbitrate them. The
        # tool loop (``loop``) holds it across its runs and handlers; its own runs, made in its
        # thread or task, nest.
        self._idle("start another run")
        self._running += 1
        token = _RUNNING_HERE.set(self) if loop else None
        try:
            yield
        finally:
            if token is not None:
                _RUNNING_HERE.reset(token)
            self._running -= 1

    def _idle(self, doing: str) -> None:
        if self._running and _RUNNING_HERE.get() is not self:
            raise ThreadBusy(f"thread {self.id!r}: cannot {doing} while this object is running a run (one run at a "
                             "time per Thread object; load another object for concurrent work)", thread_id=self.id)

    def _take(self, stored: StoredThread | None) -> None:
        # A store's record is a fresh dict (ThreadStore.load): the thread may hold its JSON as it is.
        if stored is not None:
            try:
                state = ThreadState.load(stored.data, adopt=True)
            except (AguiError, ValueError, TypeError, AttributeError, KeyError, RecursionError) as exc:
                # A damaged or foreign record (or one of a newer data format): the store's error, naming
                # the thread, whatever part of the rebuild found it.
                raise StoreError(f"thread {self.id!r}: the stored record cannot be read: {exc}",
                                 thread_id=self.id) from exc
            self._state = state
            self._state.thread_id = self.id
            self._version = stored.version
            if stored.claim is not None and stored.claim == self._owner and stored.version == self._unsure:
                # This object's own claim whose reply was lost: nothing was sent under it. The thread
                # keeps the version it claimed from, so its next run's claim is recognised by the store
                # as this owner's (ThreadStore.claim) instead of refused as held.
                self._version = stored.version - 1 if stored.version else None

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
        return ResumeBuilder(self._state.open_interrupts, now=now if now is not None else self._clock,
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
        parts = _is_parts(content)
        _refuse_unencodable("content", codec.encode(list(content)) if parts else content,
                            f"the result for tool call {tool_call_id!r}")
        if not isinstance(content, str) and not parts:
            content = json.dumps(content, ensure_ascii=False)
        return self._state.add_tool_result(tool_call_id, content, message_id=message_id or str(uuid.uuid4()),
                                           error=error)

    def _plan(self, message: MessageInput, resume: ResumeInput, tools: Sequence[Tool] | None,
              context: Sequence[Context] | None, forwarded_props: JSON, state: JSON,
              run_id: str | None, pending_unknown: bool = False) -> _Plan:
        # Everything here runs before the thread is claimed and before any byte is sent: a refusal
        # leaves the thread as it was.
        new = _messages(message)
        open_interrupts = self._state.open_interrupts
        if isinstance(resume, ResumeBuilder):
            resume._check_target(self.id, self._state.interrupted_run_id, open_interrupts)
            entries = resume.build(pending_unknown=pending_unknown)
        else:
            entries = tuple(resume or ())
        # The egress check: the same rules as build(), judged now, whatever built the list (IR-13, IR-14).
        check_resume(open_interrupts, entries, now=self._clock, pending_unknown=pending_unknown)
        _warn_absent_payloads(entries)
        if tools is None and self.tool_handlers:
            tools = [_declare(name, handler) for name, handler in self.tool_handlers.items()]
        replace_state = state is not None  # None: keep the thread's state (send `set_state(None)` for null)
        # What the caller hands this run is checked where it can be named; the thread's own history
        # came from JSON or was checked when it was added.
        if replace_state:
            _refuse_unencodable("state", state, "the state")
        if forwarded_props is not None:
            _refuse_unencodable("forwardedProps", forwarded_props, "forwarded_props")
        for field, items in (("context", context), ("tools", tools)):
            for n, item in enumerate(items or ()):
                _refuse_unencodable_item(field, item, f"{field} item {n}", prefix=f"/{n}")
        history = self._state.input_messages()
        for n, item in enumerate(new):
            _refuse_unencodable_item("messages", item, "the new message", prefix=f"/{len(history) + n}")
        run_input = RunAgentInput(
            thread_id=self.id,
            run_id=run_id or str(uuid.uuid4()),
            messages=(*history, *new),
            state=state if replace_state else self._state.state,
            tools=tuple(tools) if tools is not None else (),
            context=tuple(context) if context is not None else (),
            forwarded_props=forwarded_props if forwarded_props is not None else {},
            resume=entries or None,
            protocol_version=PROTOCOL_VERSION,
        )
        return _Plan(run_input=run_input, new_messages=new, state=state, replace_state=replace_state,
                     resuming=bool(entries), body=_body(run_input))

    def _begin(self, plan: _Plan, handle: StreamHandle, *, quiet: bool = False) -> RunSession:
        # The session reports the run's errors through the redactor of the request that was sent.
        redact = handle.redactor.text if handle.redactor else None
        for message in plan.new_messages:
            self._state.add_message(message)
        if plan.replace_state:
            self._state.set_state(plan.state)
        # run() reads no events (quiet): their session reads plain events without making them, and the
        # thread may keep what the payloads it parsed hold (a STATE_SNAPSHOT's document) uncopied.
        return RunSession(self._state, run_input=plan.run_input, events=not quiet, redact=redact)

    def _fold_read(self, session: RunSession, handle: StreamHandle, payloads: list[Any]) -> None:
        # run()'s fold of one network read: a group of payloads at a time, no event made or yielded
        # (run() reads none, and a generator step per payload cost a tenth of a chat stream's fold).
        self._warnings_into(session, handle)
        session.fold_read(payloads)

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
        logger.warning("tool handler %r raised %r for call %s; the agent is told the call failed",
                       call.function.name, exc, call.id)
        self.add_tool_result(call.id, f"error: {exc}", error=str(exc))

    def _claim_args(self) -> dict[str, Any]:
        # A thread the store does not hold yet is claimed by creating its record (claimed, with the
        # thread as it is before the run): of writers racing on a new thread id, one creates it, and
        # only that one sends. Called just before each claim's write, which settles any claim in
        # doubt: were the doubt kept, a reload() after this claim (held, say, after a resume that may
        # have reached the agent) would pass it off as a lost one and the resume would go out again.
        self._unsure = None
        if self._version is None:
            return {"expected_version": None, "owner": self._owner, "data": self._state.dump()}
        return {"expected_version": self._version, "owner": self._owner}

    def _claim_lost(self, exc: StoreError, base: int | None) -> None:
        # The store failed during the claim: nothing was sent, but the claim may have landed with its
        # reply lost. The thread keeps the version it claimed from, so this object's next run claims
        # it again and the store recognises its own claim; a process that gives up here leaves it held.
        self._unsure = 0 if base is None else base + 1
        logger.warning("thread %s: the store failed while claiming it (%s); nothing was sent, but the claim may be "
                       "held at version %s (owner %s): running this thread object again takes it up; if this "
                       "process stops here, release it with release_claim(force=True)", self.id, exc, self._unsure,
                       self._owner)
        if hasattr(exc, "add_note"):
            exc.add_note(f"nothing was sent; the claim may be held at version {self._unsure} (owner {self._owner}): "
                         "run this thread object again (it recognises its own claim), or release_claim(force=True)")


def _creates_claimed(store: Any) -> bool:
    """Whether the store's ``claim`` can create a thread it does not hold (it takes ``data``).

    The stores here can. A third-party store written for the earlier protocol (``claim`` without
    ``data``) cannot: a new thread is then created by a save and claimed next (two writes; still one
    sender, since only a claim lets a run send).
    """
    try:
        parameters = inspect.signature(store.claim).parameters.values()
    except (TypeError, ValueError):  # (no signature to read: take it for the current protocol)
        return True
    return any(p.name == "data" or p.kind is p.VAR_KEYWORD for p in parameters)


def _unsaved(exc: ConcurrentResume | StoreError, session: RunSession) -> None:
    """The run's own save failed after the agent answered: the error says so, and carries the run.

    Told only that another writer got there first, or that the store failed, a caller would take it
    for a refusal before anything was sent, and its retry would send the turn again.
    """
    exc.result = session.result()
    exc.agent_answered = True
    exc.args = (f"the agent answered run {session.run_id}, but saving the thread failed: {exc}", *exc.args[1:])


def _discard(awaitable: Any) -> None:
    close = getattr(awaitable, "close", None)
    if close is not None:
        close()  # (a coroutine never awaited would warn at garbage collection)


def _unencodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _refuse_unencodable(field: str, value: Any, what: str, *, prefix: str = "") -> None:
    found = json_problem(value)
    if found is not None:
        _refuse(field, what, prefix + found[0], found[1])


def _refuse_unencodable_item(field: str, item: Any, what: str, *, prefix: str) -> None:
    # A wire object (a Context, a Tool, a message) is checked in its encoded form, where pointers are
    # the wire's; one the converter cannot even encode is refused as a whole.
    try:
        encoded = codec.encode(item)
    except (TypeError, ValueError) as exc:
        _refuse(field, what, prefix, str(exc), cause=exc)
    _refuse_unencodable(field, encoded, what, prefix=prefix)


def _refuse(field: str, what: str, pointer: str, reason: str, *, cause: Exception | None = None) -> NoReturn:
    raise UnencodableValue(f"nothing was sent: {what} is not JSON at {pointer or '/'}: {reason}",
                           field=field, pointer=pointer, reason=reason) from cause


def _body(run_input: RunAgentInput) -> bytes:
    from .client import _request_body

    try:
        return _request_body(run_input)
    except (TypeError, ValueError, OverflowError) as exc:
        # A value the checks above do not reach (a message added to the thread by hand, say): still a
        # typed refusal before the claim, located when the converter's output shows where.
        try:
            found = json_problem(codec.encode(run_input))
        except (TypeError, ValueError):
            found = None
        pointer, reason = found if found is not None else ("", str(exc))
        _refuse("input", "the run input", pointer, reason, cause=exc)


def _is_parts(content: Any) -> bool:
    return isinstance(content, (list, tuple)) and all(
        isinstance(p, (msg.TextPart, msg.ImagePart, msg.AudioPart, msg.VideoPart, msg.DocumentPart)) for p in content
    ) and bool(content)


def _messages(message: MessageInput) -> tuple[msg.Message, ...]:
    if message is None:
        return ()
    if isinstance(message, str):
        return (msg.UserMessage(id=str(uuid.uuid4()), content=message),)
    if isinstance(message, Sequence):
        return tuple(cast("Sequence[msg.Message]", message))
    return (message,)


def _declare(name: str, handler: ToolHandler) -> Tool:
    description = inspect.getdoc(handler) or name
    parameters: dict[str, Any] = {"type": "object", "properties": {}}
    try:
        signature = inspect.signature(handler)
    except (TypeError, ValueError):
        return Tool(name=name, description=description, parameters=parameters)
    types = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array", dict: "object"}
    required = []
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        spec: dict[str, Any] = {}
        annotation = param.annotation
        if isinstance(annotation, str):
            annotation = {"str": str, "int": int, "float": float, "bool": bool, "list": list, "dict": dict}.get(
                annotation, annotation)
        if annotation in types:
            spec["type"] = types[annotation]
        parameters["properties"][param.name] = spec
        if param.default is param.empty:
            required.append(param.name)
    if required:
        parameters["required"] = required
    return Tool(name=name, description=description, parameters=parameters)


def _asked(exc: AguiError) -> bool:
    """The run ended with interrupts the session had to refuse but holds open (B232, B233, B238)."""
    return bool(getattr(exc, "interrupts", None))


def _kept(exc: AguiError) -> None:
    # The agent stopped to ask, however badly it said so: the thread is saved with those interrupts
    # open, so another process or replica cannot move past them either. The save ends a resume's
    # claim (the agent answered it), so the failure handler leaves the store alone.
    exc.thread_saved = True  # type: ignore[attr-defined]


def _claim_note(exc: AguiError, owner: str, version: int | None) -> None:
    # A resume whose request may have reached the agent is never retried silently: the thread stays
    # claimed until someone decides (Thread.release_claim()).
    exc.claim_held = True  # type: ignore[attr-defined]
    if hasattr(exc, "add_note"):
        exc.add_note(f"the resume may have reached the agent; the thread stays claimed at version {version} "
                     f"(owner {owner}); call thread.release_claim() to try again deliberately")


def _refuse_foreign_claim(thread_id: str, stored: StoredThread, owner: str, force: bool) -> None:
    # Quietly doing nothing would let the caller believe the thread is free to run again.
    if not force and stored.claim != owner:
        raise ConcurrentResume(f"thread {thread_id!r} is claimed by another writer (owner {stored.claim}); "
                               f"release_claim(force=True) takes it back once that writer is surely gone",
                               thread_id=thread_id, expected_version=stored.version, actual_version=stored.version)


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


def _retrieved(task: asyncio.Future[Any]) -> None:
    # (a write whose caller was cancelled: its failure was dealt with, or is the cancellation's)
    if not task.cancelled():
        task.exception()


def _warned_after_the_end(exc: AguiError, session: RunSession) -> bool:
    """A transport fault after the run ended and was saved: the run stands, and the fault is a warning.

    Raising would report a finished, saved run as failed, and the caller's ordinary retry would send
    the turn twice. (The stream stays open after the end only for CL-02's one late RUN_ERROR.)
    """
    if not isinstance(exc, TransportError):
        return False
    session.warnings.append(StreamWarning(
        code="TR-13", message=f"the response stayed open after the run ended, then failed: {exc} "
                              "(the run's result stands, and was saved)", run_id=session.run_id, index=session.index))
    return True


def _keeps_claim(thread_id: str, plan: _Plan, handle: StreamHandle | None, owner: str, version: int) -> bool:
    """A run interrupted from outside (Ctrl-C, a cancelled task, the caller's own exception): whether
    its claim stays held. Only a resume whose request was handed to httpx keeps it, as after a
    failure: it may have reached the agent. Anything else lets go, as a failed run does."""
    if not (plan.resuming and handle is not None and handle.sent):
        return False
    logger.warning("thread %s: the resume (run %s) was interrupted after its request went out; the thread stays "
                   "claimed at version %s (owner %s): call thread.release_claim() to try again deliberately",
                   thread_id, plan.run_input.run_id, version, owner)
    return True


def _reached_agent(exc: BaseException) -> bool:
    if isinstance(exc, HTTPStatusError):
        # A 4xx is the agent refusing the request: nothing was acted on, so the claim can go.
        return not (400 <= exc.status_code < 500)
    if isinstance(exc, TransportError):
        return exc.request_sent
    return not isinstance(exc, ResumeRefused)


class RunStream:
    """The events of one run as they arrive, typed and already folded into the thread.

    Iterate it for the events (``*_CHUNK`` shorthand arrives expanded); ``result`` is the
    ``RunResult`` once the stream is exhausted. Leaving the ``with`` block early closes the response.
    """

    def __init__(self, events: Iterator[ev.Event | ev.UnknownEvent], run_input: RunAgentInput) -> None:
        self._events = events
        self.run_input = run_input
        self.result: RunResult | None = None

    def __iter__(self) -> Iterator[ev.Event | ev.UnknownEvent]:
        return self._events


class AsyncRunStream:
    """The async twin of :class:`RunStream`."""

    def __init__(self, events: AsyncIterator[ev.Event | ev.UnknownEvent], run_input: RunAgentInput) -> None:
        self._events = events
        self.run_input = run_input
        self.result: RunResult | None = None

    def __aiter__(self) -> AsyncIterator[ev.Event | ev.UnknownEvent]:
        return self._events


class Thread(_ThreadCore):
    """A conversation with an agent across runs (synchronous).

    Get one from :meth:`AgentClient.thread`. ``run()`` returns the run's ``RunResult``; ``stream()``
    yields its events as they arrive. A thread with open interrupts refuses a run that does not
    resume them, before anything is sent.
    """

    def __init__(self, client: AgentClient, thread_id: str, *,
                 tool_handlers: Mapping[str, ToolHandler] | None = None) -> None:
        super().__init__(client.store, thread_id, client.clock, tool_handlers)
        self.client = client

    def run(self, message: MessageInput = None, *, resume: ResumeInput = None, tools: Sequence[Tool] | None = None,
            context: Sequence[Context] | None = None, forwarded_props: JSON = None, state: JSON = None,
            run_id: str | None = None, pending_unknown: bool = False) -> RunResult:
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
                ``resume`` entries instead of refusing them as answering nothing (B269). When the
                thread does hold open interrupts it changes nothing: entries must cover them.

        Returns:
            The ``RunResult``; a run that ended with ``RUN_ERROR`` has ``outcome == "error"``
            (``raise_for_outcome()`` raises it).

        Raises:
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
            TransportError, HTTPStatusError, IdleTimeout: the exchange failed.
            ProtocolError: the agent broke the protocol (``.result`` holds what was folded).
        """
        from .client import StreamHandle

        with self._exclusive():
            # stream()'s steps, folding each read's payloads at once instead of yielding events.
            plan = self._plan(message, resume, tools, context, forwarded_props, state, run_id, pending_unknown)
            claimed = self._claim(plan)
            handle = StreamHandle()
            try:
                with self.client._open_batches(plan.run_input, handle=handle, body=plan.body) as batches:
                    session = self._begin(plan, handle, quiet=True)
                    saved = False
                    try:
                        for batch in batches:
                            self._fold_read(session, handle, batch)
                            if not saved and session.terminated:
                                # Saved once the read holding the terminal event is folded, not when the
                                # producer gets round to closing the response.
                                self._save(session)
                                saved = True
                    except AguiError as exc:
                        self._fault(exc, session, handle, saved)
                    return self._finish(session, handle, saved)
            except AguiError as exc:
                self._after_failure(exc, claimed, plan)
                raise
            except BaseException:
                self._abandon(claimed, plan, handle)
                raise

    @contextmanager
    def stream(self, message: MessageInput = None, *, resume: ResumeInput = None,
               tools: Sequence[Tool] | None = None, context: Sequence[Context] | None = None,
               forwarded_props: JSON = None, state: JSON = None, run_id: str | None = None,
               pending_unknown: bool = False) -> Iterator[RunStream]:
        """Send a run and yield a :class:`RunStream` of its events, each folded before it is yielded.

        Same arguments and errors as :meth:`run`. The thread is saved when the run ends, before the
        terminal event reaches the caller. Leaving the ``with`` block before the stream ends closes
        the response: what was folded stays in ``thread.state`` but is not saved, and a resume's
        claim stays held (its request reached the agent; see :meth:`release_claim`).
        """
        from .client import StreamHandle

        with self._exclusive():
            plan = self._plan(message, resume, tools, context, forwarded_props, state, run_id, pending_unknown)
            claimed = self._claim(plan)
            handle = StreamHandle()
            stream = RunStream(iter(()), plan.run_input)
            try:
                with self.client._open_batches(plan.run_input, handle=handle, body=plan.body) as batches:
                    payloads = (payload for batch in batches for payload in batch)
                    session = self._begin(plan, handle)
                    stream._events = self._events(session, payloads, handle, stream)
                    yield stream
            except AguiError as exc:
                self._after_failure(exc, claimed, plan)
                raise
            except BaseException:
                self._abandon(claimed, plan, handle)
                raise
            if not plan.resuming and claimed is not None:
                self._release_own(claimed)  # (left early: not saved; a no-op once the run's save moved the version)
            if stream.result is None:
                stream.result = self._current(session, handle)

    def _events(self, session: RunSession, payloads: Iterator[str | bytes], handle: StreamHandle,
                stream: RunStream) -> Iterator[ev.Event | ev.UnknownEvent]:
        saved = False
        try:
            for payload in payloads:
                self._warnings_into(session, handle)
                for event in session.feed_payload(payload):
                    if not saved and session.terminated:
                        self._save(session)
                        saved = True
                    yield event
        except AguiError as exc:
            self._fault(exc, session, handle, saved)
        stream.result = self._finish(session, handle, saved)

    def _fault(self, exc: AguiError, session: RunSession, handle: StreamHandle, saved: bool) -> None:
        """A fault while reading the run: raised, located and carrying the run so far, unless the run
        had already ended and been saved (then a warning, and the run stands)."""
        if saved and _warned_after_the_end(exc, session):
            return
        self._stamp(exc, session, handle)
        if not saved and _asked(exc):
            self._save(session)
            _kept(exc)
        raise exc

    def _finish(self, session: RunSession, handle: StreamHandle, saved: bool) -> RunResult:
        self._warnings_into(session, handle)
        result = session.end()
        if not saved:
            self._save(session)
        return result

    def _current(self, session: RunSession, handle: StreamHandle) -> RunResult:
        self._warnings_into(session, handle)
        return session.result()

    def _claim(self, plan: _Plan) -> int:
        # Every run claims the thread before anything is sent: at the version it was built from (a
        # writer whose copy is stale, because another process ran on it since, or who races another,
        # two replicas answering one tool call, is refused here, not after the agent acted twice), or,
        # for a thread the store does not hold yet, by creating its record claimed (two replicas
        # sending the first turn of one new thread id). A claim taken before the tool handlers ran
        # (run_until_done) is this run's.
        if self._preclaimed is not None:
            claimed, self._preclaimed = self._preclaimed, None
            return claimed
        self._create_unclaimed()
        before = self._version
        try:
            return self._claim_now()
        except KeyboardInterrupt:
            if self._version != before:  # claimed, and interrupted before anything was sent: let go
                self._abandon(self._version, plan, None)
            raise

    def _create_unclaimed(self) -> None:
        # (a store of the earlier protocol, whose claim cannot create: see _creates_claimed)
        if self._version is None and not self._creates_claimed:
            self._write(self._store.save, self.id, self._state.dump(), expected_version=None)

    def _claim_now(self) -> int:
        base = self._version
        arguments = self._claim_args()
        try:
            return self._write(self._store.claim, self.id, **arguments)
        except StoreError as exc:
            self._claim_lost(exc, base)
            raise

    def _write(self, call: Callable[..., int], /, *args: Any, **kwargs: Any) -> int:
        """Run a store write and keep ``_version`` the store's, even when Ctrl-C comes in the middle."""
        with _interrupt_deferred():
            self._version = call(*args, **kwargs)
        return self._version

    def _save(self, session: RunSession) -> None:
        try:
            self._write(self._store.save, self.id, self._state.dump(share_state=True), expected_version=self._version)
        except (ConcurrentResume, StoreError) as exc:
            _unsaved(exc, session)
            raise

    def _after_failure(self, exc: AguiError, claimed: int | None, plan: _Plan) -> None:
        if claimed is None or self._version != claimed or getattr(exc, "thread_saved", False):
            return  # (no claim, or the run's save already ended it)
        if isinstance(exc, ConcurrentResume):
            return  # (the store refused the run's save: the record moved on or vanished, and the claim with it)
        if plan.resuming and _reached_agent(exc):
            _claim_note(exc, self._owner, claimed)
            return
        self._let_go(claimed)  # (a release that fails too is logged: the run's own error is the one to see)

    def _abandon(self, claimed: int | None, plan: _Plan, handle: StreamHandle | None) -> None:
        if claimed is None or self._version != claimed:
            return  # (no claim, or the run's save already ended it)
        if not _keeps_claim(self.id, plan, handle, self._owner, claimed):
            self._let_go(claimed)

    def _let_go(self, claimed: int) -> None:
        """Release this run's claim on the way out of a failure or an interruption, which is what the
        caller must see."""
        try:
            self._release_own(claimed)
        except Exception as exc:  # noqa: BLE001 - (logged instead)
            logger.warning("thread %s: could not release its claim after the run failed or was interrupted: %s",
                           self.id, exc)

    def _release_own(self, claimed: int) -> None:
        # A run that is not a resume lets go of the thread when it fails or is left: sending the turn
        # again is the caller's ordinary retry, not a decision taken twice.
        if self._version == claimed:
            self._write(self._store.release, self.id, claimed_version=claimed, owner=self._owner)

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
        self._idle("release the claim")
        stored = self._store.load(self.id)
        if stored is not None and stored.claim is not None:
            _refuse_foreign_claim(self.id, stored, self._owner, force)
            self._write(self._store.release, self.id, claimed_version=stored.version, owner=stored.claim)

    def reload(self) -> None:
        """Load the thread again from the store (another process may have moved it on)."""
        self._idle("reload")
        self._take(self._store.load(self.id))

    def run_until_done(self, message: MessageInput = None, *, max_steps: int = 8, **kwargs: Any) -> RunResult:
        """Run, answer frontend tool calls with ``tool_handlers``, and run again, until the agent stops.

        Calls the thread already holds unanswered (its last run's, made here or on another replica)
        are answered first, with ``message`` sent after their results. A stored thread is claimed
        before any handler runs, so two replicas never both run the handlers for the same calls (the
        second gets ``ConcurrentResume``). Stops at an interrupt (for the application to answer), an
        error, a call with no handler, or after ``max_steps`` runs.
        """
        with self._exclusive(loop=True):
            held = self._held_calls()
            if held is not None:
                self._answer_tools(held)
            result = self._run_claimed(message, **kwargs)
            for _ in range(max_steps - 1):
                calls = self._handled_calls(result.pending_tool_calls) if result.outcome == "success" else None
                if calls is None:
                    break
                self._answer_tools(calls)
                result = self._run_claimed(tools=kwargs.get("tools"), context=kwargs.get("context"),
                                           forwarded_props=kwargs.get("forwarded_props"))
            return result

    def _answer_tools(self, calls: Sequence[msg.ToolCall]) -> None:
        # Claimed first: a replica answering the same calls is refused before a handler runs twice.
        self._create_unclaimed()
        before = self._version
        try:
            self._preclaimed = self._claim_now()
            for call in calls:
                try:
                    output = self._invoke(call)
                    if inspect.isawaitable(output):
                        _discard(output)
                        raise TypeError("an async handler needs the async client (AsyncThread.run_until_done)")
                except Exception as exc:  # noqa: BLE001 - a failing tool is reported to the agent, as a tool would
                    self._tool_failed(call, exc)
                    continue
                self.add_tool_result(call.id, output)
        except BaseException:
            if self._preclaimed is None and self._version != before:
                self._preclaimed = self._version  # (the claim landed as the interruption came)
            self._drop_preclaim()
            raise

    def _run_claimed(self, message: MessageInput = None, **kwargs: Any) -> RunResult:
        try:
            return self.run(message, **kwargs)
        finally:
            self._drop_preclaim()  # (a no-op once the run took the claim over)

    def _drop_preclaim(self) -> None:
        claimed, self._preclaimed = self._preclaimed, None
        if claimed is not None:
            self._let_go(claimed)


class AsyncThread(_ThreadCore):
    """The async twin of :class:`Thread`: the same methods, with ``await`` and ``async with``."""

    def __init__(self, client: AsyncAgentClient, thread_id: str, *,
                 tool_handlers: Mapping[str, ToolHandler] | None = None) -> None:
        super().__init__(client.store, thread_id, client.clock, tool_handlers)
        self.client = client

    async def run(self, message: MessageInput = None, *, resume: ResumeInput = None,
                  tools: Sequence[Tool] | None = None, context: Sequence[Context] | None = None,
                  forwarded_props: JSON = None, state: JSON = None, run_id: str | None = None,
                  pending_unknown: bool = False) -> RunResult:
        """Send a run and fold it to the end (see :meth:`Thread.run`)."""
        from .client import StreamHandle

        with self._exclusive():
            plan = self._plan(message, resume, tools, context, forwarded_props, state, run_id, pending_unknown)
            claimed = await self._claim(plan)
            handle = StreamHandle()
            try:
                async with self.client._open_batches(plan.run_input, handle=handle, body=plan.body) as batches:
                    session = self._begin(plan, handle, quiet=True)
                    saved = False
                    try:
                        async for batch in batches:
                            self._fold_read(session, handle, batch)
                            if not saved and session.terminated:
                                await self._save(session)
                                saved = True
                    except AguiError as exc:
                        await self._fault(exc, session, handle, saved)
                    return await self._finish(session, handle, saved)
            except AguiError as exc:
                await self._after_failure(exc, claimed, plan)
                raise
            except BaseException:
                await self._abandon(claimed, plan, handle)
                raise

    @asynccontextmanager
    async def stream(self, message: MessageInput = None, *, resume: ResumeInput = None,
                     tools: Sequence[Tool] | None = None, context: Sequence[Context] | None = None,
                     forwarded_props: JSON = None, state: JSON = None, run_id: str | None = None,
                     pending_unknown: bool = False) -> AsyncIterator[AsyncRunStream]:
        """Send a run and yield an :class:`AsyncRunStream` of its events (see :meth:`Thread.stream`)."""
        from .client import StreamHandle, _flatten

        with self._exclusive():
            plan = self._plan(message, resume, tools, context, forwarded_props, state, run_id, pending_unknown)
            claimed = await self._claim(plan)
            handle = StreamHandle()
            stream = AsyncRunStream(_empty(), plan.run_input)
            try:
                async with self.client._open_batches(plan.run_input, handle=handle, body=plan.body) as batches:
                    payloads = _flatten(batches)
                    session = self._begin(plan, handle)
                    stream._events = self._events(session, payloads, handle, stream)
                    yield stream
            except AguiError as exc:
                await self._after_failure(exc, claimed, plan)
                raise
            except BaseException:
                await self._abandon(claimed, plan, handle)
                raise
            if not plan.resuming and claimed is not None:
                await self._release_own(claimed)  # (as Thread.stream)
            if stream.result is None:
                self._warnings_into(session, handle)
                stream.result = session.result()

    async def _events(self, session: RunSession, payloads: AsyncIterator[str | bytes], handle: StreamHandle,
                      stream: AsyncRunStream) -> AsyncIterator[ev.Event | ev.UnknownEvent]:
        saved = False
        try:
            async for payload in payloads:
                self._warnings_into(session, handle)
                for event in session.feed_payload(payload):
                    if not saved and session.terminated:
                        await self._save(session)
                        saved = True
                    yield event
        except AguiError as exc:
            await self._fault(exc, session, handle, saved)
        stream.result = await self._finish(session, handle, saved)

    async def _fault(self, exc: AguiError, session: RunSession, handle: StreamHandle, saved: bool) -> None:
        # (as Thread._fault)
        if saved and _warned_after_the_end(exc, session):
            return
        self._stamp(exc, session, handle)
        if not saved and _asked(exc):
            await self._save(session)
            _kept(exc)
        raise exc

    async def _finish(self, session: RunSession, handle: StreamHandle, saved: bool) -> RunResult:
        self._warnings_into(session, handle)
        result = session.end()
        if not saved:
            await self._save(session)
        return result

    async def _write(self, call: Callable[..., int], /, *args: Any, **kwargs: Any) -> int:
        """Run a store write in a worker thread and keep ``_version`` the store's, even when cancelled."""
        landed: list[int] = []
        finished = threading.Event()

        def write() -> int:
            try:
                landed.append(call(*args, **kwargs))
                return landed[0]
            finally:
                finished.set()

        # Handed to the executor now, as a future no task owns: cancelling tasks (a cancel scope, or
        # every task at asyncio.run()'s shutdown) cannot call the write off once it was asked for.
        future = asyncio.get_running_loop().run_in_executor(None, write)
        future.add_done_callback(_retrieved)
        try:
            self._version = await asyncio.shield(future)
        except asyncio.CancelledError:
            # A cancellation cannot stop a write running in its thread, and a cancel scope (anyio,
            # Starlette) cancels every later await too: block for the rest of the write (a store call,
            # bounded by its own timeouts), so the thread never loses track of a claim or a save.
            finished.wait()
            if landed:
                self._version = landed[0]
            raise
        return self._version

    async def _claim(self, plan: _Plan) -> int:
        # (as Thread._claim: every run, before anything is sent)
        if self._preclaimed is not None:
            claimed, self._preclaimed = self._preclaimed, None
            return claimed
        await self._create_unclaimed()
        before = self._version
        try:
            return await self._claim_now()
        except asyncio.CancelledError:
            if self._version != before:  # claimed, and cancelled before anything was sent: let go
                await self._abandon(self._version, plan, None)
            raise

    async def _create_unclaimed(self) -> None:
        # (as Thread._create_unclaimed)
        if self._version is None and not self._creates_claimed:
            await self._write(self._store.save, self.id, self._state.dump(), expected_version=None)

    async def _claim_now(self) -> int:
        # (as Thread._claim_now)
        base = self._version
        arguments = self._claim_args()
        try:
            return await self._write(self._store.claim, self.id, **arguments)
        except StoreError as exc:
            self._claim_lost(exc, base)
            raise

    async def _save(self, session: RunSession) -> None:
        try:
            # Serialised by the store before this run's generator resumes, so sharing the state is safe.
            await self._write(self._store.save, self.id, self._state.dump(share_state=True),
                              expected_version=self._version)
        except (ConcurrentResume, StoreError) as exc:
            _unsaved(exc, session)
            raise

    async def _after_failure(self, exc: AguiError, claimed: int | None, plan: _Plan) -> None:
        if claimed is None or self._version != claimed or getattr(exc, "thread_saved", False):
            return  # (as Thread._after_failure)
        if isinstance(exc, ConcurrentResume):
            return
        if plan.resuming and _reached_agent(exc):
            _claim_note(exc, self._owner, claimed)
            return
        await self._let_go(claimed)

    async def _abandon(self, claimed: int | None, plan: _Plan, handle: StreamHandle | None) -> None:
        # (as Thread._abandon; a cancelled task lands here)
        if claimed is None or self._version != claimed or _keeps_claim(self.id, plan, handle, self._owner, claimed):
            return
        await self._let_go(claimed)

    async def _let_go(self, claimed: int) -> None:
        # (as Thread._let_go)
        try:
            await self._release_own(claimed)
        except Exception as exc:  # noqa: BLE001 - (logged instead)
            logger.warning("thread %s: could not release its claim after the run failed or was interrupted: %s",
                           self.id, exc)

    async def _release_own(self, claimed: int) -> None:
        # (as Thread._release_own)
        if self._version == claimed:
            await self._write(self._store.release, self.id, claimed_version=claimed, owner=self._owner)

    async def release_claim(self, *, force: bool = False) -> None:
        """Give up this thread's claim after a failed resume (see :meth:`Thread.release_claim`)."""
        self._idle("release the claim")
        stored = await asyncio.to_thread(self._store.load, self.id)
        if stored is not None and stored.claim is not None:
            _refuse_foreign_claim(self.id, stored, self._owner, force)
            await self._write(self._store.release, self.id, claimed_version=stored.version, owner=stored.claim)

    async def reload(self) -> None:
        """Load the thread again from the store (see :meth:`Thread.reload`)."""
        self._idle("reload")
        self._take(await asyncio.to_thread(self._store.load, self.id))

    async def run_until_done(self, message: MessageInput = None, *, max_steps: int = 8, **kwargs: Any) -> RunResult:
        """Run, answer frontend tool calls with ``tool_handlers``, and run again (see :meth:`Thread.run_until_done`).

        ``async def`` handlers are awaited.
        """
        with self._exclusive(loop=True):
            held = self._held_calls()
            if held is not None:
                await self._answer_tools(held)
            result = await self._run_claimed(message, **kwargs)
            for _ in range(max_steps - 1):
                calls = self._handled_calls(result.pending_tool_calls) if result.outcome == "success" else None
                if calls is None:
                    break
                await self._answer_tools(calls)
                result = await self._run_claimed(tools=kwargs.get("tools"), context=kwargs.get("context"),
                                                 forwarded_props=kwargs.get("forwarded_props"))
            return result

    async def _answer_tools(self, calls: Sequence[msg.ToolCall]) -> None:
        # (as Thread._answer_tools; a handler may be a coroutine function, awaited here)
        await self._create_unclaimed()
        before = self._version
        try:
            self._preclaimed = await self._claim_now()
            for call in calls:
                try:
                    output = self._invoke(call)
                    if inspect.isawaitable(output):
                        output = await output
                except Exception as exc:  # noqa: BLE001 - (as Thread._answer_tools)
                    self._tool_failed(call, exc)
                    continue
                self.add_tool_result(call.id, output)
        except BaseException:
            if self._preclaimed is None and self._version != before:
                self._preclaimed = self._version  # (as Thread._answer_tools)
            await self._drop_preclaim()
            raise

    async def _run_claimed(self, message: MessageInput = None, **kwargs: Any) -> RunResult:
        try:
            return await self.run(message, **kwargs)
        finally:
            await self._drop_preclaim()

    async def _drop_preclaim(self) -> None:
        claimed, self._preclaimed = self._preclaimed, None
        if claimed is not None:
            await self._let_go(claimed)


async def _empty() -> AsyncIterator[ev.Event | ev.UnknownEvent]:
    nothing: tuple[ev.Event | ev.UnknownEvent, ...] = ()
    for item in nothing:
        yield item
