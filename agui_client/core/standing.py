"""A thread object's standing in the store, and the flows that change it: claim, save, give back.

The store's half of the run protocol. ``core/flow.py`` decides *when* a run claims the thread, saves
it and gives it back; this module decides *how*, against what the store holds: the version this object
holds and its owner token, a claim whose reply was lost (in doubt), a claim the tool loop took early,
the record's id, and whether a save may append only the run's changes or must write the thread whole.
Every write is an effect (``core/effects.py``) a shell carries out, so this module too is sans-IO.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from .._inert import named, quoted_name
from ..errors import (
    AguiError,
    ConcurrentResume,
    HTTPStatusError,
    ResumeRefused,
    StoreError,
    TransportError,
)
from .effects import Flow, Load, Write
from .exchange import StreamHandle
from .fold import ThreadState
from .headers import RunHeaders
from .plan import Plan
from .retry import answers_the_run, served_nothing
from .session import RunSession
from .store_traits import traits

if TYPE_CHECKING:
    from ..stores.base import StoredThread

__all__ = ["Standing"]

logger = logging.getLogger("agui_client")

#: Check every appended change against the whole thread: set to ``stores.base.apply_changes`` (handed in:
#: the sans-IO core imports no store), a thread object keeps a copy of what the store holds, and a save
#: that appends asserts ``apply_changes(copy, [changes]) == dump()``. The tests set it, so every run of
#: the suite on a store checks its saves (it costs a dump and a JSON copy per save).
_VERIFY_CHANGES: Callable[[dict[str, Any], list[Any]], dict[str, Any]] | None = None


class Standing:
    """A thread object's standing in the store (the version it holds, its owner token, a claim in
    doubt, a claim its tool loop took early), the flows that claim, save and give the thread back, and
    the taking of a record the store handed over (a load, a reload).

    ``Conversation`` (``core/flow.py``) is what it stands for: it supplies the thread's id, its folded
    state and how the legacy interrupts are read.
    """

    id: str
    _state: ThreadState
    _legacy: str | None
    _redact: Callable[[str], str] | None

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
            return (yield from self._claim_now(plan.headers))
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

    def _claim_now(self, headers: RunHeaders = ()) -> Flow[int]:
        base = self._version
        arguments = self._claim_args()
        if "data" in arguments:
            self._marked(arguments["data"])
        try:
            version: int = yield self._store_write("claim", arguments)
        except StoreError as exc:
            self._claim_lost(exc, base, headers)
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

    def _claim_lost(self, exc: StoreError, base: int | None, headers: RunHeaders = ()) -> None:
        # The store failed during the claim: nothing was sent, but the claim may have landed with its
        # reply lost. The thread keeps the version it claimed from, so this object's next run claims
        # it again and the store recognises its own claim; a process that gives up here leaves it held.
        self._unsure = 0 if base is None else base + 1
        # (ids in these log lines, a thread's from a listing, an owner from a stored claim, are written as
        # names: escaped and cut with a digest, bare as these lines always wrote them)
        logger.warning("thread %s: the store failed while claiming it (%s); nothing was sent, but the claim may be "
                       "held at version %s (owner %s): running this thread object again takes it up; if this "
                       "process stops here, release it with release_claim(force=True)", named(self.id),
                       self._store_text(exc, None, headers), self._unsure, named(self._owner))
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
            raise AssertionError(f"thread {quoted_name(self.id)}: the appended changes rebuild another thread than "
                                 f"dump() (fields {differ}); change: {change!r}")
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
        yield from self._release(claimed, logged=True, handle=handle, headers=plan.headers)

    def _release(self, claimed: int, *, logged: bool = False, handle: StreamHandle | None = None,
                 headers: RunHeaders = ()) -> Flow[None]:
        """Give back this object's claim taken at ``claimed`` (nothing once a save moved the version on).

        A run that is not a resume lets go of the thread when it fails or is left: sending the turn
        again is the caller's ordinary retry, not a decision taken twice. ``logged``: on the way out of
        a failure or an interruption, which is what the caller must see, a release that fails is
        logged instead of raised (its text through the run's redactor: ``handle``, ``headers``).
        """
        if self._version != claimed:
            return
        try:
            yield self._store_write("release", {"claimed_version": claimed, "owner": self._owner})
        except Exception as exc:
            if not logged:
                raise
            if isinstance(exc, StoreError) and exc.closed:
                # The caller closed the store (or the client holding it) while the run was in flight: the
                # run's own error says so, and the claim stays as a stopped process leaves one. Nothing
                # here for them to act on, so not a warning, which Python prints when no logging is set up.
                logger.info("thread %s: its claim stays: the store was closed before the run gave it back",
                            named(self.id))
                return
            logger.warning("thread %s: could not release its claim after the run failed or was interrupted: %s",
                           named(self.id), self._store_text(exc, handle, headers))

    def _store_text(self, exc: BaseException, handle: StreamHandle | None,
                    headers: Mapping[str, str] | RunHeaders | None) -> str:
        """A store's error as this object's log lines write it: through the redactor of the run's request.

        A store of the application's own may say anything in its errors: the thread's data it was
        handed (an agent may have echoed the caller's token into a message), or a credential it shares
        with the agent's endpoint. A log line is written whatever the caller does with the error (a
        failed release is only logged), and logs are read by more people than errors: the line must not
        be where that text leaks. The request's redactor once it was sent; before, the one of the
        request the client would send with ``headers``; else the last run's.
        """
        text = str(exc)
        redact = handle.redactor.text if handle is not None and handle.redactor else self._unsent_redact(headers)
        redact = redact or self._redact
        return redact(text) if redact is not None else text

    def _unsent_redact(self, headers: Mapping[str, str] | RunHeaders | None) -> Callable[[str], str] | None:
        """The redactor of a request the client would send with ``headers`` (``None`` here: the core knows
        no client; the shells, which do, say)."""
        return None

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
                raise StoreError(f"thread {quoted_name(self.id)}: the stored record cannot be read: {exc}",
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


def _keeps_claim(thread_id: str, plan: Plan, handle: StreamHandle | None, owner: str, version: int) -> bool:
    """A run interrupted from outside (Ctrl-C, a cancelled task, the caller's own exception): whether
    its claim stays held. Only a resume whose request was handed to httpx keeps it, as after a
    failure: it may have reached the agent. Anything else lets go, as a failed run does."""
    if not (plan.resuming and handle is not None and handle.sent):
        return False
    logger.warning("thread %s: the resume (run %s) was interrupted after its request went out; the thread stays "
                   "claimed at version %s (owner %s): call thread.release_claim() to try again deliberately",
                   named(thread_id), named(plan.run_input.run_id), version, named(owner))
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
