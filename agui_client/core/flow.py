"""The run protocol, written once: claim, send, fold, save, release.

This is the part that guarantees a thread's runs are neither lost nor sent twice, so it lives in one
place. It is sans-IO: every step that needs the outside world is an *effect* the protocol yields and
a shell carries out, sending back the answer or throwing in what the outside raised (the way h11
hands a connection's events to its caller, or httpx's ``auth_flow`` yields requests):

====================  ==============================================  ==================================
effect                what the shell does                             what it sends back
====================  ==============================================  ==================================
``Write``             ``store.<op>(thread_id, **arguments)``          the version the store returns
``Load``              ``store.load(thread_id)``                       the ``StoredThread`` or ``None``
``Send``              POST the plan's body, open the response         nothing
``RECEIVE``           read the next network read's payloads           a list of payloads; ``None`` at end
``Close``             leave the response as ``with`` leaves it        nothing (what closing raised is
                      (on ``error``, or normally)                     thrown in, replacing ``error``)
``Hand``              give the caller a stream pumping ``receive``    whether it was read to its end
                      and wait for the caller's block to end          (or the block's exception)
a list of events      hand them to the caller, one by one             nothing
``Invoke``            call a tool handler (awaiting it when async)    its output
``Run``               run once more (the tool loop)                   the ``RunResult``
====================  ==============================================  ==================================

``Thread`` and ``AsyncThread`` are pumps of these generators: they differ only in how they carry an
effect out (``await``, a store call in a worker thread, a write shielded from cancellation, a Ctrl-C
held until a write has returned), never in what the protocol decides.

The rules, each decided here once:

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
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import attrs

from ..errors import (
    AguiError,
    ConcurrentResume,
    HTTPStatusError,
    LimitExceeded,
    ProtocolError,
    ResumeRefused,
    StoreError,
    StreamWarning,
    ThreadBusy,
    TransportError,
    UnencodableValue,
)
from ..wire import codec
from ..wire.types import messages as msg
from ..wire.types.base import JSON
from ..wire.types.run import PROTOCOL_VERSION, Context, ResumeEntry, RunAgentInput, Tool
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
from .retry import answers_the_run, served_nothing
from .session import RunResult, RunSession
from .store_traits import traits

if TYPE_CHECKING:
    from ..stores.base import StoredThread

__all__ = ["Conversation", "Flow", "Write", "Load", "Send", "RECEIVE", "Close", "Hand", "Invoke", "Run",
           "ResumeInput"]

#: What ``run(resume=...)`` accepts: a builder or the entries themselves.
ResumeInput = ResumeBuilder | Sequence[ResumeEntry] | None

T = TypeVar("T")
#: A step of the protocol: yields effects, is sent their answers, returns its result.
Flow = Generator[Any, Any, T]

logger = logging.getLogger("agui_client")

#: The thread object whose run (or tool loop) this thread or task is in: its own nested runs may go on.
_RUNNING_HERE: contextvars.ContextVar[Any] = contextvars.ContextVar("agui_client_running_here", default=None)

#: Check every appended change against the whole thread: set to ``stores.base.apply_changes`` (handed in:
#: the sans-IO core imports no store), a thread object keeps a copy of what the store holds, and a save
#: that appends asserts ``apply_changes(copy, [changes]) == dump()``. The tests set it, so every run of
#: the suite on a store checks its saves (it costs a dump and a JSON copy per save).
_VERIFY_CHANGES: Callable[[dict[str, Any], list[Any]], dict[str, Any]] | None = None


# -- the effects ---------------------------------------------------------------------------------------

@attrs.frozen(slots=True)
class Write:
    """Write to the store: ``store.<op>(thread_id, **arguments)``; the answer is the version it returns,
    which the shell also makes the conversation's ``_version`` (even when interrupted mid-write)."""

    op: Literal["claim", "save", "append", "release"]
    arguments: Mapping[str, Any]


@attrs.frozen(slots=True)
class Load:
    """Read the thread's record from the store; the answer is a ``StoredThread`` or ``None``."""


@attrs.frozen(slots=True)
class Send:
    """POST the plan's body and open the response, reporting into ``handle``."""

    plan: Plan
    handle: StreamHandle


class _Receive:
    __slots__ = ()

    def __repr__(self) -> str:
        return "RECEIVE"


#: Read on: the answer is the next network read's payloads, or ``None`` when the response is over.
RECEIVE = _Receive()


@attrs.frozen(slots=True)
class Close:
    """Leave the response as a ``with`` block is left: on ``error``, or normally when it is ``None``."""

    error: BaseException | None


@attrs.frozen(slots=True)
class Hand:
    """Give the caller a stream of the run's events (the shell pumps ``receive`` as the caller reads)
    and wait until the caller's block ends: the answer is whether the stream was read to its end, or
    the block's exception is thrown in."""

    receive: Flow[RunResult]


@attrs.frozen(slots=True)
class Invoke:
    """Call the tool handler for ``call`` (and await what it returns, where the shell can)."""

    call: msg.ToolCall


@attrs.frozen(slots=True)
class Run:
    """Run the thread once more with ``message`` and ``arguments`` (the tool loop's next step)."""

    message: MessageInput
    arguments: Mapping[str, Any]


# -- the conversation ----------------------------------------------------------------------------------

class _Standing:
    """A thread object's standing in the store (the version it holds, its owner token, a claim in
    doubt, a claim its tool loop took early), and the flows that claim, save and give the thread back.
    """

    id: str
    _state: ThreadState

    def __init__(self, store: Any) -> None:
        self._version: int | None = None
        self._owner = f"{uuid.uuid4()}"
        #: The version a claim of this object would have made when the store failed while writing it
        #: (the claim may have landed, its reply lost); ``None`` when no claim is in doubt.
        self._unsure: int | None = None
        #: What the store's methods take (``append``, a creating claim's data, record ids).
        self._traits = traits(store)
        self._preclaimed: int | None = None  # (claimed by run_until_done before its handlers ran)
        #: The id of the record this object read or created (``StoredThread.record_id``), named by its
        #: writes so that a thread deleted and created again up to the version it holds is refused as
        #: another writer's, not appended to. Only the store methods that take it get it.
        self._record_id: str | None = None
        # Whether a save may write only the run's changes (``append``, when the store has it): the
        # record's data is what the state was last marked at (a load, a save, an append, a claim that
        # created the record; claims and releases leave the data as it is). Off while a write of data
        # is in flight or after one failed: the next save is then whole.
        self._in_step = False
        self._held: Any = None  # (_VERIFY_CHANGES: a copy of the record's data)
        self._claimed_at: int | None = None  # (the version this object's last claim made)

    def _claim(self, plan: Plan, interrupted: type[BaseException]) -> Flow[int]:
        # Every run claims the thread before anything is sent: at the version it was built from (a
        # writer whose copy is stale, because another process ran on it since, or who races another,
        # two replicas answering one tool call, is refused here, not after the agent acted twice), or,
        # for a thread the store does not hold yet, by creating its record claimed (two replicas
        # sending the first turn of one new thread id). A claim taken before the tool handlers ran
        # (run_until_done) is this run's.
        if self._preclaimed is not None:
            claimed, self._preclaimed = self._preclaimed, None
            return claimed
        if self._version is None and self._unsure == 0:
            # A create in doubt is sent again with its own record id only when its record is this
            # object's own claim, still at version 0 (the store then knows it for this owner's). Any
            # other record (gone, or moved on: another writer let the claim go and ran it) makes the
            # create a new one, with a new id. The look and the create are two calls, and another
            # replica may delete the thread between them: the create sent again then makes the record
            # anew under the id it names. That is harmless only for a record nobody but this object
            # could have moved past version 0; with the id of one that moved on, an object holding it
            # would pass for the new record's holder once it reached that version. One read, only
            # after a create failed.
            if not _own_create((yield Load()), self._owner, self._record_id):
                self._unsure = None
        yield from self._create_unclaimed()
        before = self._version
        try:
            return (yield from self._claim_now())
        except interrupted as exc:
            if self._version is not None and self._version != before:
                # Claimed, and interrupted before anything was sent: let go.
                yield from self._settle(self._version, plan, None, exc)
            raise

    def _create_unclaimed(self) -> Flow[None]:
        # (a store of the earlier protocol, whose claim cannot create: see _creates_claimed)
        if self._version is None and not self._traits.creates_claimed:
            self._record_id = None  # (a new record: a new id)
            data = self._state.dump()
            self._marked(data)
            yield self._store_write("save", {"data": data, "expected_version": None})
            self._in_step = True

    def _claim_now(self) -> Flow[int]:
        base = self._version
        arguments = self._claim_args()
        if "data" in arguments:
            self._marked(arguments["data"])
        try:
            version: int = yield self._store_write("claim", arguments)
        except StoreError as exc:
            self._claim_lost(exc, base)
            raise
        except ConcurrentResume as exc:
            # The store says what it found; the caller also needs to know that nothing went out and
            # how to catch up (words for the code that holds the thread, and for its log: an HTTP backend
            # gives its own user other words, as examples/fastapi_backend.py does). A record claimed at
            # the very version this object's own claim made holds that claim still (a save or a release
            # would have moved it on): a resume that may have reached the agent kept it. A reload()
            # changes nothing then; letting it go is the caller's decision.
            if exc.args and isinstance(exc.args[0], str):
                own = exc.actual_version is not None and exc.actual_version == base == self._claimed_at
                advice = ("this object holds that claim itself, kept when its resume was interrupted or failed "
                          "after its request went out (the agent may have acted on it): thread.release_claim() "
                          "lets it go once you decided a retry is safe" if own else
                          "thread.reload() catches up with the stored thread, then run again")
                exc.args = (f"{exc.args[0]}. Nothing was sent: {advice}", *exc.args[1:])
            raise
        self._claimed_at = version
        # The first run's save after the claim that created the record is whole, though the record
        # holds the state as marked: the record holds the thread before its first run (empty, nearly
        # always), so the run's changes are the whole thread anyway, and appending them to so small
        # a record would make the store fold them into it at once (Compaction): a second encoding
        # and a decoding of the whole run. The runs after it append.
        return version

    def _claim_args(self) -> dict[str, Any]:
        # A thread the store does not hold yet is claimed by creating its record (claimed, with the
        # thread as it is before the run): of writers racing on a new thread id, one creates it, and
        # only that one sends. Called just before each claim's write, which settles any claim in
        # doubt: were the doubt kept, a reload() after this claim (held, say, after a resume that may
        # have reached the agent) would pass it off as a lost one and the resume would go out again.
        if self._version is None and self._unsure != 0:
            # A new record gets a new id; only the create in doubt, sent again, keeps its own (so the
            # store recognises it). An id kept from an earlier create would let a thread made again
            # pass for that one with whoever still holds it.
            self._record_id = None
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

    def _save(self, session: RunSession) -> Flow[None]:
        state = self._state
        try:
            # Written by the store before the protocol goes on, so sharing the state is safe.
            if self._in_step and self._traits.appends and self._version is not None and not state.restates_messages():
                # The record holds the state as marked: the run's changes are what it lacks.
                changes = state.changes()
                if _VERIFY_CHANGES is not None:
                    self._verify(_VERIFY_CHANGES, changes)
                state.mark()
                self._in_step = False
                yield self._store_write("append", {"changes": changes, "expected_version": self._version})
            else:
                data = state.dump(share_state=True)
                self._marked(data)
                yield self._store_write("save", {"data": data, "expected_version": self._version})
            self._in_step = True
        except (ConcurrentResume, StoreError) as exc:
            _unsaved(exc, session)
            raise

    def _store_write(self, op: Literal["claim", "save", "append", "release"], arguments: dict[str, Any]) -> Write:
        # The record id goes to every write of a store method that takes it: a create names the id it
        # mints (see _claim_args), every other write the id of the record it read or created.
        if op in self._traits.names_records:
            if arguments.get("expected_version", 0) is None and self._record_id is None:
                self._record_id = uuid.uuid4().hex
            if self._record_id is not None:
                arguments["record_id"] = self._record_id
        return Write(op, arguments)

    def _marked(self, data: Mapping[str, Any]) -> None:
        # The state as dumped into ``data`` is about to be written whole: changes count from here. Until
        # the write returns, the record's data is unknown (a failed write leaves the next save whole).
        self._state.mark()
        self._in_step = False
        if _VERIFY_CHANGES is not None:
            self._held = _json_copy(data)

    def _verify(self, apply_changes: Callable[[dict[str, Any], list[Any]], dict[str, Any]],
                changes: Mapping[str, Any]) -> None:
        # (_VERIFY_CHANGES) What the store will hold after the append is what a whole save would write.
        whole, change = _json_copy(self._state.dump()), _json_copy(changes)
        if whole is None or change is None or self._held is None:
            self._held = None  # (not JSON: the store refuses it; the next save is whole)
            return
        rebuilt = apply_changes(self._held, [change])
        if rebuilt != whole:
            differ = sorted(k for k in rebuilt.keys() | whole.keys() if rebuilt.get(k) != whole.get(k))
            raise AssertionError(f"thread {self.id!r}: the appended changes rebuild another thread than dump() "
                                 f"(fields {differ}); change: {change!r}")
        self._held = whole

    def _settle(self, claimed: int | None, plan: Plan, handle: StreamHandle | None,
                exc: BaseException) -> Flow[None]:
        """After a run failed (``exc`` an ``AguiError``) or was interrupted from outside (Ctrl-C, a
        cancelled task, the caller's own exception): give its claim back, unless the agent may have
        acted on it (a resume whose request may have reached the agent stays claimed)."""
        if claimed is None or self._version != claimed:
            return  # (no claim, or the run's save already ended it)
        if isinstance(exc, AguiError):
            if getattr(exc, "thread_saved", False) or isinstance(exc, ConcurrentResume):
                # (the save ended the claim; or the store refused the run's save: the record moved on or
                # vanished, and the claim with it)
                return
            if plan.resuming and _reached_agent(exc):
                _claim_note(exc, self._owner, claimed)
                return
        elif _keeps_claim(self.id, plan, handle, self._owner, claimed):
            return
        # (a release that fails too is logged: the run's own error is the one to see)
        yield from self._release(claimed, logged=True)

    def _release(self, claimed: int, *, logged: bool = False) -> Flow[None]:
        """Give back this object's claim taken at ``claimed`` (nothing once a save moved the version on).

        A run that is not a resume lets go of the thread when it fails or is left: sending the turn
        again is the caller's ordinary retry, not a decision taken twice. ``logged``: on the way out of
        a failure or an interruption, which is what the caller must see, a release that fails is
        logged instead of raised.
        """
        if self._version != claimed:
            return
        try:
            yield self._store_write("release", {"claimed_version": claimed, "owner": self._owner})
        except Exception as exc:
            if not logged:
                raise
            logger.warning("thread %s: could not release its claim after the run failed or was interrupted: %s",
                           self.id, exc)


class Conversation(_Standing):
    """One thread object's side of the protocol: the folded state, its standing in the store (the
    version it holds, its owner token, a claim in doubt), and the protocol's steps as flows.

    ``Thread`` and ``AsyncThread`` are conversations whose shells carry the effects out.
    """

    def __init__(self, store: Any, thread_id: str, clock: Callable[[], datetime] | None,
                 tool_handlers: Mapping[str, ToolHandler] | None, legacy_interrupts: str | None = None) -> None:
        if not thread_id.isascii() and unencodable(thread_id):
            # (a lone surrogate: no store could key it, and the agent would be sent another id)
            raise UnencodableValue(f"nothing was sent: the thread id {thread_id!r} holds a lone surrogate",
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
        return (f"<{type(self).__name__} id={self.id!r} version={self._version!r} "
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
        parts = is_parts(content)
        refuse_unencodable("content", codec.encode(list(content)) if parts else content,
                           f"the result for tool call {tool_call_id!r}")
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

    def _take(self, stored: StoredThread | None) -> None:
        # A store's record is a fresh dict (ThreadStore.load): the thread may hold its JSON as it is.
        if stored is None:
            # No record holds a claim in doubt any more: the next create is a new record, with a new id.
            self._unsure = None
        else:
            held = _json_copy(stored.data) if _VERIFY_CHANGES is not None else None  # (before the thread holds it)
            try:
                state = ThreadState.load(stored.data, adopt=True)
            except (AguiError, ValueError, TypeError, AttributeError, KeyError, RecursionError) as exc:
                # A damaged or foreign record (or one of a newer data format): the store's error, naming
                # the thread, whatever part of the rebuild found it.
                raise StoreError(f"thread {self.id!r}: the stored record cannot be read: {exc}",
                                 thread_id=self.id) from exc
            self._state = state
            self._state.thread_id = self.id
            self._state.legacy_interrupts = self._legacy
            self._version = stored.version
            self._record_id = stored.record_id
            self._in_step, self._held = True, held  # (loaded: marked at the record's data)
            if stored.claim is not None and stored.claim == self._owner and stored.version == self._unsure:
                # This object's own claim whose reply was lost: nothing was sent under it. The thread
                # keeps the version it claimed from, so its next run's claim is recognised by the store
                # as this owner's (ThreadStore.claim) instead of refused as held.
                self._version = stored.version - 1 if stored.version else None

    # -- the plan --------------------------------------------------------------------------------------

    def _plan(self, message: MessageInput, resume: ResumeInput, tools: Sequence[Tool] | None,
              context: Sequence[Context] | None, forwarded_props: JSON, state: JSON,
              run_id: str | None, pending_unknown: bool = False, run_timeout: float | None = None,
              headers: Mapping[str, str] | None = None) -> Plan:
        # Everything here runs before the thread is claimed and before any byte is sent: a refusal
        # leaves the thread as it was.
        checked = checked_headers(headers)
        run_timeout = checked_seconds("run_timeout", run_timeout)
        new = new_messages(message)
        open_interrupts = self._state.open_interrupts
        entries = without_abandoned_payloads(self._resume_entries(resume, pending_unknown))
        # The egress check: the same rules as build(), judged now, whatever built the list (IR-13, IR-14);
        # and again before a try sent after a wait (max_retries), when an interrupt may have expired.
        def recheck() -> None:
            check_resume(open_interrupts, entries, now=self._clock, pending_unknown=pending_unknown)
        recheck()
        sent = entries
        via = self._state.open_interrupts_via
        if via is not None and entries:
            # Interrupts the legacy bridge read: the answers go where that producer reads them, and
            # only there (a resume list as well would be two answers to one question).
            forwarded_props = forward_resume(via, forwarded_props, entries, open_interrupts)
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
            state=state if replace_state else self._state.state,
            tools=tuple(tools) if tools is not None else (),
            context=tuple(context) if context is not None else (),
            forwarded_props=forwarded_props if forwarded_props is not None else {},
            resume=sent or None,
            protocol_version=PROTOCOL_VERSION,
        )
        return Plan(run_input=run_input, new_messages=new, state=state, replace_state=replace_state,
                    resuming=bool(entries), body=encode_input(run_input), run_timeout=run_timeout,
                    headers=checked, recheck=recheck if entries else None)

    def _resume_entries(self, resume: ResumeInput, pending_unknown: bool) -> tuple[ResumeEntry, ...]:
        """The entries ``resume`` gives, refused as the open interrupts require (before anything is sent)."""
        open_interrupts = self._state.open_interrupts
        if open_interrupts and not resume:
            # Not a resume that left some out: a run that would move past the questions. Said so, with
            # the questions and the way to answer them (still an UncoveredInterrupts).
            raise awaiting_answers(self.id, open_interrupts)
        if isinstance(resume, ResumeBuilder):
            check_target(resume, self.id, self._state.interrupted_run_id, open_interrupts,
                                 lambda: [run.run_id for run in self._state.runs])
            return resume.build(pending_unknown=pending_unknown)
        return tuple(resume or ())

    def _refuse_early(self, arguments: Mapping[str, Any]) -> None:
        """The run's resume checks, judged before the tool loop runs a handler: a run they refuse must not
        have had an action taken, or a tool answer added, on its behalf."""
        resume, pending_unknown = arguments.get("resume"), bool(arguments.get("pending_unknown", False))
        # (an abandoning entry's payload is dropped, as the run drops it; the run itself warns of it)
        entries = [attrs.evolve(e, payload=None) if isinstance(e, ResumeEntry) and e.status == "cancelled" else e
                   for e in self._resume_entries(resume, pending_unknown)]
        check_resume(self._state.open_interrupts, entries, now=self._clock, pending_unknown=pending_unknown)

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
                          budget=handle.budget)

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
            self._refuse_early(arguments)
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
        # (%r for what the agent chose: a call id is written to the application's log, and a terminal,
        # as it came: an escape sequence in it would act there)
        # (and through the run's redactor: an agent echoing the request's token as its call id, or into the
        # arguments a handler's error quotes, must not get it into the application's log)
        redact = self._redact
        logger.warning("tool handler %r raised %s for call %r; the agent is told the call failed",
                       call.function.name, redact(repr(exc)) if redact else repr(exc),
                       redact(call.id) if redact else call.id)
        self.add_tool_result(call.id, f"error: {exc}", error=str(exc))


def _thread_busy(thread_id: str, doing: str) -> ThreadBusy:
    return ThreadBusy(f"thread {thread_id!r}: cannot {doing} while this object is running a run (one run at a "
                      "time per Thread object; load another object for concurrent work)", thread_id=thread_id)


def _json_copy(value: Any) -> Any:
    """A copy of ``value`` through JSON text (``None`` when it is not JSON), for ``_VERIFY_CHANGES``."""
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError):
        return None


def _unsaved(exc: ConcurrentResume | StoreError, session: RunSession) -> None:
    """The run's own save failed after the agent answered: the error says so, and carries the run.

    Told only that another writer got there first, or that the store failed, a caller would take it
    for a refusal before anything was sent, and its retry would send the turn again.
    """
    exc.result = session.result()
    exc.agent_answered = True
    exc.args = (f"the agent answered run {session.run_id}, but saving the thread failed: {exc}", *exc.args[1:])


def _asked(exc: AguiError) -> bool:
    """The run ended with interrupts the session had to refuse but holds open (IR-27)."""
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


def _own_create(stored: StoredThread | None, owner: str, record_id: str | None) -> bool:
    """Whether ``stored`` is the record of this owner's create whose reply was lost: version 0, claimed
    by ``owner``, with the id the create named (any, for a store that takes none)."""
    return (stored is not None and stored.version == 0 and stored.claim == owner
            and record_id in (None, stored.record_id))


def _refuse_foreign_claim(thread_id: str, stored: StoredThread, owner: str, force: bool) -> None:
    # Quietly doing nothing would let the caller believe the thread is free to run again.
    if not force and stored.claim != owner:
        raise ConcurrentResume(f"thread {thread_id!r} is claimed by another writer (owner {stored.claim}); "
                               f"release_claim(force=True) takes it back once that writer is surely gone",
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


def _keeps_claim(thread_id: str, plan: Plan, handle: StreamHandle | None, owner: str, version: int) -> bool:
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
        # A 4xx is the agent refusing the request, and a 503 with a Retry-After the agent saying it did
        # not serve it (what a retry sends again after, core/retry.py, which bets a resume on it):
        # nothing was acted on, so the claim can go. Not when the answer is to the GET a 303 sent the
        # client on to: the agent took the resume then, whatever that GET met.
        return not answers_the_run(exc) or not (400 <= exc.status_code < 500 or served_nothing(exc))
    if isinstance(exc, TransportError):
        return exc.request_sent
    return not isinstance(exc, ResumeRefused)
