"""The store protocol, the record it hands out, and the compare-and-set rules every store obeys.

The rules live here once, as :func:`check_write`: given the record's current head (version, claim,
format) and a requested write, it either names the head to write or raises the error. The memory
and SQLite stores call it inside their lock or transaction; the Redis store evaluates the same
conditions in a Lua script (it has to be atomic on the server) and, when the script refuses, calls
:func:`check_write` on the head the script saw, so every store raises the same error with the same
attributes.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, Protocol, runtime_checkable

from attrs import frozen
from typing_extensions import Self

from .._inert import named, quoted_name
from ..errors import ConcurrentResume, StoreError
from ..wire.records import RepeatedKey, dump_record, load_record
from ..wire.sink import warn
from ..wire.types.base import brief_repr
from ..wire.values import PlainDict

__all__ = ["STORE_FORMAT_VERSION", "StoredThread", "ThreadStore", "IncrementalStore", "ListingStore", "Head",
           "check_write", "apply_changes", "Compaction", "new_record_id", "MAX_LISTING_PAGE", "MAX_THREAD_ID_BYTES",
           "MAX_VERSION", "check_thread_id", "check_version",
           # What the four stores share (not the package's API: ``agui_client.stores`` lists that).
           "StoreBase", "check_page", "check_record_id", "MAX_RECORD_ID", "check_owner", "creation_data",
           "encode_data", "decode_record", "checked_head", "fold_when_due", "as_text", "compacted",
           "store_closed", "Operation", "trusted_names", "untrusted_note", "warn_trusted_absent"]

_log = logging.getLogger("agui_client.stores")

#: Version of the record layout a store writes. A store refuses to read or overwrite a record with a
#: higher number, so an older release never garbles a newer one's.
#:
#: * 1: version, data, claim, format: the whole thread, rewritten by every save.
#: * 2: the same, plus the changes appended since ``data`` was written (``IncrementalStore.append``),
#:   each one run's :func:`apply_changes` input; a compaction folds them into ``data``. A format-1
#:   record is a format-2 record without changes, so it loads as it is (the migration on load), and
#:   its next write stores it as format 2.
STORE_FORMAT_VERSION = 2

Operation = Literal["save", "claim", "release", "append"]


@frozen(kw_only=True)
class StoredThread:
    """One thread as a store holds it.

    Attributes:
        thread_id: the thread.
        version: increases by one on every successful write (``save``, ``claim``, ``release``); the
            first save creates version 1. A record at version 0 was created by a claim (the first run
            of a new thread, in flight) and never saved.
        data: the thread's ``ThreadState.dump()`` output, JSON-ready; a fresh dict on every load,
            so the caller may keep or change it.
        claim: the owner token of an in-flight run, or ``None`` when nobody holds one.
        format: the record format it was written in (``STORE_FORMAT_VERSION`` at the time).
        changes: how many appended changes ``data`` was rebuilt from (0 for a record written whole, or
            just compacted); the data is the same either way.
        record_id: the id the record got when it was created (see :class:`IncrementalStore`); a thread
            deleted and created again under the same id has another one. ``None`` for a record made by
            a release that kept none.
    """

    thread_id: str
    version: int
    data: dict[str, Any]
    claim: str | None
    format: int
    changes: int = 0
    record_id: str | None = None

    # (``data`` is the whole thread, every message in it: shown as its number of keys, ids and counts as
    # they are; ``thread.dump()`` or the field itself give it all)
    __repr__ = brief_repr


@runtime_checkable
class ThreadStore(Protocol):
    """Where threads live between runs: one synchronous compare-and-set protocol.

    Every write names the version the writer last saw and fails with
    :class:`~agui_client.errors.ConcurrentResume` when the stored version has moved on, so two
    writers can never both advance a thread from the same version. Other failures raise
    :class:`~agui_client.errors.StoreError`. Implementations are safe to share between threads.

    Record ids are an extension of this protocol (see :class:`IncrementalStore`): a store written
    without them still works, and a thread object passes ``record_id`` only to methods that take it.
    """

    def load(self, thread_id: str) -> StoredThread | None:
        """The stored thread, or ``None`` when there is none."""
        ...

    def save(self, thread_id: str, data: Mapping[str, Any], *, expected_version: int | None) -> int:
        """Write the thread's data if nobody wrote since ``expected_version``; return the new version.

        ``expected_version=None`` creates the thread (version 1) and fails if it exists already.
        A successful save clears any claim.
        """
        ...

    def claim(self, thread_id: str, *, expected_version: int | None, owner: str,
              data: Mapping[str, Any] | None = None) -> int:
        """Mark a run as in flight before any request goes out; return the new version.

        Succeeds only if the stored version is ``expected_version`` and nobody holds a claim; the
        data is unchanged, the version goes up by one and the claim records ``owner``.

        ``expected_version=None`` claims a thread the store does not hold yet: it creates the record
        with ``data`` (required then, refused otherwise), claimed by ``owner``, at version 0, and
        fails if the record exists, so of writers racing on a new thread id exactly one may send.
        The holder's first save then makes version 1, as a creating save would.

        A claim is recognised by its owner: when the record already holds the claim this call would
        make (version ``expected_version + 1``, or 0 for a create, claimed by ``owner``), it returns
        that version and writes nothing. That is the owner's own earlier claim whose reply was lost;
        it sent nothing under it (it never learnt it held it), so taking it now sends once. A
        claim the owner knows it holds (the record at ``expected_version``) stays refused.
        """
        ...

    def release(self, thread_id: str, *, claimed_version: int, owner: str) -> int:
        """Undo a claim whose request never reached the agent; return the new version.

        Succeeds only if the stored version is still ``claimed_version`` (what ``claim`` returned)
        and ``owner`` holds the claim.
        """
        ...

    def delete(self, thread_id: str) -> None:
        """Forget the thread (nothing happens when there is none)."""
        ...

    def close(self) -> None:
        """Release the store's resources; later calls raise ``StoreError``. Closing twice is fine."""
        ...


@runtime_checkable
class IncrementalStore(ThreadStore, Protocol):
    """A store that can add one run's changes to a thread's record instead of rewriting all of it.

    Every store here is one. A run's save then writes what the run changed (its messages, the small
    fields, the usage and subagents it touched; see :func:`apply_changes`), so a long thread's saves
    cost what a short one's do; ``load`` hands out the whole thread as before, and the store folds
    the changes into one record now and then (a *compaction*, see :class:`Compaction`), which never
    changes the version or what ``load`` returns.

    **Record ids.** Such a store also gives every record an id when it is created (the creating
    ``save`` or ``claim``'s ``record_id``, or :func:`new_record_id`), keeps it until the record is
    deleted, and hands it out as ``StoredThread.record_id``. A write that names a ``record_id`` is
    refused (``ConcurrentResume``) unless the record still has that id, so a writer holding a thread
    that was deleted and created again since, and written up to the very version it holds, does not
    mistake the new thread for its own (its claim would send the old thread's history, its append
    would mix two threads). ``record_id=None`` checks nothing. :func:`check_write` applies the rule.
    """

    def save(self, thread_id: str, data: Mapping[str, Any], *, expected_version: int | None,
             record_id: str | None = None) -> int:
        """:meth:`ThreadStore.save`; a create's record gets ``record_id`` (or a random one)."""
        ...

    def claim(self, thread_id: str, *, expected_version: int | None, owner: str,
              data: Mapping[str, Any] | None = None, record_id: str | None = None) -> int:
        """:meth:`ThreadStore.claim`; a create's record gets ``record_id`` (or a random one), and a
        create sent again is recognised as the owner's only with the same ``record_id``."""
        ...

    def release(self, thread_id: str, *, claimed_version: int, owner: str, record_id: str | None = None) -> int:
        """:meth:`ThreadStore.release`, refused when the record's id is not a named ``record_id``."""
        ...

    def append(self, thread_id: str, changes: Mapping[str, Any], *, expected_version: int,
               record_id: str | None = None) -> int:
        """Add ``changes`` to the thread's record if nobody wrote since ``expected_version``; return the
        new version.

        The same compare-and-set as :meth:`ThreadStore.save` (the version goes up by one, any claim is
        cleared), for a record that exists: ``load`` then returns ``apply_changes(data, [changes])``.
        Name the ``record_id`` the writer read or created: changes appended onto another record (one
        deleted and created again up to the same version) would mix two threads.
        """
        ...


#: The most thread ids one :meth:`ListingStore.thread_ids` call returns: a page bounds what one call
#: reads and holds, whatever the number of threads.
MAX_LISTING_PAGE = 1000


@runtime_checkable
class ListingStore(ThreadStore, Protocol):
    """A store that can list the threads it holds, a page at a time (the "past conversations").

    An optional capability, apart from :class:`ThreadStore` as :class:`IncrementalStore` is: every
    store shipped here is one, and a store written for the bare protocol still works everywhere
    except in a listing (``AgentClient.thread_ids`` then raises ``TypeError``). Check with
    ``isinstance(store, ListingStore)``.

    **Order.** By thread id, in Unicode code point order (Python's ``sorted`` of the ids, and the
    byte order of their UTF-8: SQLite's ``BINARY`` collation, PostgreSQL's ``"C"``, Redis's
    lexicographic order), the same in every store whatever the database's locale. The order never
    depends on when a thread was written, so a write can never move a thread from one page to
    another while a listing goes on.

    **Paging by key.** ``after`` is the last id of the page before (``None``: from the start); the
    page holds the ids that come after it, so a thread created or deleted meanwhile never makes a
    listing see an id twice or skip one that stood throughout, and ``after`` may name a thread that
    was deleted since (or never existed). A page shorter than ``limit`` is the last one.

    **What is listed.** Every record the store holds, whatever its format or version; the records
    themselves are never read (a listing reads ids alone, from an index). That includes a thread
    whose first run claimed its record and has not saved yet (version 0, claimed: its first run is
    in flight, or its writer died before knowing whether the request went out); ``load`` tells
    (``version == 0`` and a ``claim``), and running the thread again follows the claim rules as for
    any thread. A deleted thread is not listed.

    Example::

        after = None
        while True:
            page = store.thread_ids(after=after, limit=100)
            for thread_id in page:
                print(thread_id)
            if len(page) < 100:
                break
            after = page[-1]
    """

    def thread_ids(self, *, after: str | None = None, limit: int = 100) -> list[str]:
        """Up to ``limit`` ids of the stored threads that come after ``after``, in code point order.

        Args:
            after: the last id of the previous page, ``None`` for the first page.
            limit: the most ids to return, 1 to :data:`MAX_LISTING_PAGE`.

        Raises:
            ValueError: ``limit`` is out of range, or ``after`` is not a string.
            StoreError: the backend failed, or the store is closed.
        """
        ...


#: The longest thread id a store takes, in UTF-8 bytes. PostgreSQL's primary-key index refuses an
#: entry of more than about 2,700 bytes; one bound for every store keeps a thread movable between them.
MAX_THREAD_ID_BYTES = 1024


def check_thread_id(thread_id: str, *, stored: bool = False) -> None:
    """Refuse (``StoreError``, naming the id) a thread id that not every store can hold as itself.

    One rule for every store and every method, so an id is kept by all of them or by none: it must be
    a ``str`` (PostgreSQL would keep ``5`` as ``"5"``, SQLite and the memory store as an ``int``),
    encodable as UTF-8 (a lone surrogate is not), free of NUL (PostgreSQL's text refuses it) and at
    most :data:`MAX_THREAD_ID_BYTES` long. Empty, blank or odd ids (``/``, ``..``, ``%``, ``*``) are
    kept: no store makes a file name or a pattern of an id.

    ``stored``: the id names a record that may be there already (``load``, ``delete``), where the length
    is not asked. Releases before the bound kept longer ids, and the listing gives them: such a thread
    stays readable and deletable, and only writing it is refused (its claim, before a run sends anything).
    """
    problem = _thread_id_problem(thread_id, stored=stored)
    if problem is not None:
        raise StoreError(f"thread id {_shown(thread_id)} {problem}; nothing was read or written",
                         thread_id=thread_id if isinstance(thread_id, str) else None)


def _thread_id_problem(thread_id: object, *, stored: bool = False) -> str | None:
    if type(thread_id) is not str:
        return f"is a {type(thread_id).__name__}, not a string"
    if "\x00" in thread_id:
        return "holds a NUL character"
    try:
        size = len(thread_id.encode("utf-8"))
    except UnicodeEncodeError:
        return "holds a lone surrogate (it is not UTF-8)"
    if size > MAX_THREAD_ID_BYTES and not stored:
        return f"is {size} bytes of UTF-8, more than the {MAX_THREAD_ID_BYTES} a store takes"
    return None


def _shown(thread_id: object) -> str:
    # An id quoted in a message is cut short: the id of a megabyte is the case being reported (and cut as
    # every id is, with a digest, so two ids refused read differently).
    return quoted_name(thread_id, 60)


#: The last version a store writes. Versions go up by one per write, so no thread reaches it; a record
#: at it was written by another tool or damaged. The bound is the Redis store's: its scripts read a
#: version as a Lua number, a double, exact only up to 2**53 (SQLite and PostgreSQL stop at 2**63 - 1).
MAX_VERSION = 2**53 - 1


def check_version(thread_id: str, expected_version: int | None) -> None:
    """Refuse a write from ``expected_version`` that is not an integer (``ValueError``) or that would
    go past :data:`MAX_VERSION` (``StoreError``), before anything is written.

    :func:`check_write` applies it; the SQLite, Redis and PostgreSQL stores call it before they read the
    record (an argument's error comes before the record's), and before a conditional write that would
    otherwise compare in doubles (Redis) or overflow (PostgreSQL's bigint)."""
    if expected_version is None:
        return
    if type(expected_version) is not int or expected_version < 0:
        raise ValueError(f"thread {quoted_name(thread_id)}: expected_version is a version (an integer, 0 or "
                         f"more) or None, not {expected_version!r}")
    if expected_version >= MAX_VERSION:
        raise StoreError(f"thread {quoted_name(thread_id)} is at version {expected_version}, not below the "
                         f"last a store writes ({MAX_VERSION}): the record is damaged or was written by another tool",
                         thread_id=thread_id)


def check_page(after: str | None, limit: int) -> None:
    """Refuse a listing's arguments before anything is read."""
    # (an id a listing gave, however long: see check_thread_id's ``stored``)
    problem = None if after is None else _thread_id_problem(after, stored=True)
    if problem is not None:
        raise ValueError(f"after is the last thread id of the previous page or None; {_shown(after)} {problem}")
    if type(limit) is not int or not 1 <= limit <= MAX_LISTING_PAGE:
        raise ValueError(f"limit is a number of thread ids from 1 to {MAX_LISTING_PAGE}, not {limit!r}")


@frozen(kw_only=True)
class Compaction:
    """When a store folds a record's appended changes into its data (after the append that crosses it).

    The store weighs the policy after every append, so a thread written by one writer holds, after each
    append, fewer than ``max_changes`` unfolded changes and fewer bytes of them than the larger of
    ``min_bytes`` and ``ratio`` times its data: it cannot grow without being folded. A fold is skipped
    when another write lands between its read and its write (that write wins), or fails (logged at
    debug level); the next append weighs the policy again.

    Attributes:
        min_bytes: changes smaller than this in all wait (a short thread keeps them) until there are
            ``max_changes`` of them; it bounds how often a small thread is rewritten, not its size.
        ratio: fold once the changes' bytes reach this share of the data's bytes: the data is then
            rewritten once for every as many bytes appended as it holds, so a save's cost stays what
            the run changed on average, and a load reads at most ``1 + ratio`` times the thread (once
            the changes pass ``min_bytes``, and unless a fold failed or was skipped).
        max_changes: fold once there are this many, whatever their size (each costs a load a decode).
    """

    min_bytes: int = 64 * 1024
    ratio: float = 1.0
    max_changes: int = 1024

    def due(self, data_bytes: int, change_bytes: int, changes: int) -> bool:
        """Whether a record of ``data_bytes`` with ``changes`` appended changes of ``change_bytes`` in
        all should be folded now."""
        if changes >= self.max_changes:
            return True
        return change_bytes >= self.min_bytes and change_bytes >= self.ratio * data_bytes


@frozen(kw_only=True)
class Head:
    """The part of a stored record the compare-and-set rules look at."""

    version: int
    claim: str | None
    format: int
    record_id: str | None = None


#: The longest record id: a write refuses a longer one, and a load a stored one (a record another tool
#: wrote, or a damaged one), as the id is held by each thread object and sent back with each write.
MAX_RECORD_ID = 128


def new_record_id() -> str:
    """A fresh random record id (what a store gives a record created without one)."""
    return secrets.token_hex(12)


def check_record_id(record_id: str | None) -> None:
    """Refuse a record id that is not a string of 1 to 128 characters (before anything is written)."""
    if record_id is not None and (type(record_id) is not str or not 0 < len(record_id) <= MAX_RECORD_ID):
        raise ValueError(f"a record id is a string of 1 to {MAX_RECORD_ID} characters")


def check_write(
    thread_id: str,
    head: Head | None,
    operation: Operation,
    *,
    expected_version: int | None,
    owner: str | None = None,
    record_id: str | None = None,
) -> Head:
    """Apply the compare-and-set rules to one requested write.

    Args:
        thread_id: the thread.
        head: the record as stored now, or ``None`` when there is none.
        operation: ``"save"``, ``"append"`` (a save of a run's changes, to a record that exists),
            ``"claim"`` or ``"release"``.
        expected_version: the version the writer holds (``None`` for a save or a claim that creates).
        owner: the claim owner (``claim`` and ``release``).
        record_id: a create's record id (``None``: a random one); for a write to a stored record, the
            record id it must have (``None``: any).

    Returns:
        The head to store (the data is the caller's business: ``save`` replaces it, a creating
        ``claim`` writes it, the others keep it). It is ``head`` itself when a claim finds its owner's
        own claim already stored (see :meth:`ThreadStore.claim`): the store then writes nothing.

    Raises:
        ConcurrentResume: the stored version is not the expected one, the thread exists already (a
            create) or is gone, or the claim is not in the state the operation needs. ``expected_version``
            is 0 for a create; ``actual_version`` is ``None`` when there is no record. Also when the
            record's id is not ``record_id`` (the thread was deleted and created again).
        StoreError: the record was written by a newer release (it is never overwritten).
    """
    check_record_id(record_id)
    check_version(thread_id, expected_version)
    if expected_version is None:
        if operation in ("release", "append"):
            raise ValueError(f"{operation} needs the version the writer holds")
        if head is None:
            created = record_id or new_record_id()
            if operation == "save":
                return Head(version=1, claim=None, format=STORE_FORMAT_VERSION, record_id=created)
            return Head(version=0, claim=owner, format=STORE_FORMAT_VERSION, record_id=created)
        if operation == "claim" and _own_claim(head, 0, owner) and record_id in (None, head.record_id):
            return head
        held = "" if head.claim is None else f", claimed by {quoted_name(head.claim)}"
        raise ConcurrentResume(
            f"thread {quoted_name(thread_id)} already exists (version {head.version}{held}); load it and run "
            "it from its version",
            thread_id=thread_id, expected_version=0, actual_version=head.version,
        )
    if head is None:
        raise ConcurrentResume(
            f"thread {quoted_name(thread_id)} is not in the store (another writer deleted it, or it was never saved)",
            thread_id=thread_id, expected_version=expected_version, actual_version=None,
        )
    if head.format > STORE_FORMAT_VERSION:
        raise _newer_format(thread_id, head.format)
    if record_id is not None and head.record_id != record_id:
        raise ConcurrentResume(
            f"thread {quoted_name(thread_id)} was deleted and created again since this writer read it (its record is "
            f"another one, at version {head.version}); load it again",
            thread_id=thread_id, expected_version=expected_version, actual_version=head.version,
        )
    if operation == "claim" and _own_claim(head, expected_version + 1, owner):
        return head
    if head.version != expected_version:
        raise ConcurrentResume(
            f"thread {quoted_name(thread_id)} is at version {head.version}, not {expected_version}: "
            "another writer got there first",
            thread_id=thread_id, expected_version=expected_version, actual_version=head.version,
        )
    new_version = head.version + 1
    if operation in ("save", "append"):
        return Head(version=new_version, claim=None, format=STORE_FORMAT_VERSION, record_id=head.record_id)
    if operation == "claim":
        if head.claim is not None:
            raise ConcurrentResume(
                f"thread {quoted_name(thread_id)} is already claimed by {quoted_name(head.claim)} at version "
                f"{head.version}",
                thread_id=thread_id, expected_version=expected_version, actual_version=head.version,
            )
        return Head(version=new_version, claim=owner, format=head.format, record_id=head.record_id)
    if head.claim != owner:
        held = "nobody" if head.claim is None else quoted_name(head.claim)
        raise ConcurrentResume(
            f"thread {quoted_name(thread_id)} at version {head.version} is claimed by {held}, not {owner!r}",
            thread_id=thread_id, expected_version=expected_version, actual_version=head.version,
        )
    return Head(version=new_version, claim=None, format=head.format, record_id=head.record_id)


def _own_claim(head: Head, claimed_version: int, owner: str | None) -> bool:
    # The record holds exactly the claim this owner asks for: its own earlier claim, whose reply it
    # never got. Only one version on from the one the writer holds, so a claim the writer knows it
    # holds (kept after a resume that may have reached the agent) is never taken a second time.
    return owner is not None and head.claim == owner and head.version == claimed_version


def apply_changes(data: dict[str, Any], changes: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Fold appended changes into a thread's data (``ThreadState.dump()`` output), in place, in order.

    One change (``ThreadState.changes()`` output, one run's save) is a JSON object whose keys are all
    optional:

    ``messagesFrom`` and ``messages``
        the message list keeps its first ``messagesFrom`` messages and goes on with ``messages``
        (``messagesFrom`` is the old length when the run only appended);
    ``set``
        top-level fields replaced whole (``state``, ``openInterrupts``, ``lastRunId`` …);
    ``unset``
        top-level fields removed;
    ``merge``
        per mapping field (``usageByRun``, ``subagents``), the entries added or replaced.

    The last change is only read: what it holds goes into ``data`` as it is and is not changed
    afterwards (a merge into a field the same change sets goes into a copy), so it may be a writer's
    own, still in Python form (a tuple reads as a JSON array), folded without reading it back from its
    text. What an earlier change holds may be changed by a later one: pass those freshly parsed.

    Returns:
        ``data``.

    Raises:
        ValueError: a change is not of this shape, or keeps more messages than there are (a damaged
            record; the stores raise ``StoreError`` naming the thread).

    Example::

        >>> apply_changes({"messages": [1, 2, 3], "state": {}},
        ...               [{"messagesFrom": 2, "messages": [4], "set": {"state": {"n": 1}}}])
        {'messages': [1, 2, 4], 'state': {'n': 1}}
    """
    for change in changes:
        if not isinstance(change, Mapping):
            raise ValueError(f"a stored change is a JSON object, not {type(change).__name__}")
        if "messagesFrom" in change:
            keep, more = change["messagesFrom"], change.get("messages")
            messages = data.setdefault("messages", [])
            if (type(keep) is not int or not isinstance(more, (list, tuple)) or not isinstance(messages, list)
                    or not 0 <= keep <= len(messages)):
                raise ValueError(f"a stored change keeps {quoted_name(keep)} messages of {_length(messages)}")
            del messages[keep:]
            messages.extend(more)
        replaced = change.get("set", {})
        removed = change.get("unset", [])
        merged = change.get("merge", {})
        if (not isinstance(replaced, dict) or not isinstance(merged, dict) or not isinstance(removed, (list, tuple))
                or not all(type(key) is str for key in removed)):
            raise ValueError("a stored change's set, unset or merge is of the wrong type")
        data.update(replaced)
        for key in removed:
            data.pop(key, None)
        for key, entries in merged.items():
            target = data.setdefault(key, {})
            if not isinstance(target, dict) or not isinstance(entries, dict):
                raise ValueError(f"a stored change merges into {quoted_name(key)}, which is not a JSON object")
            if key in replaced:  # (the change's own object, just set: merged into a copy, never changed)
                target = data[key] = dict(target)
            target.update(entries)
    return data


def _length(value: Any) -> str:
    return str(len(value)) if isinstance(value, list) else "none"


# --------------------------------------------------------------------------------------------------
# What the four stores share: this module's API for them, not the package's
# --------------------------------------------------------------------------------------------------


class StoreBase:
    """Context-manager plumbing: ``with SqliteStore(path) as store: ...`` closes it on the way out."""

    def close(self) -> None:  # pragma: no cover - every store overrides it
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def check_owner(owner: str) -> None:
    """Refuse a claim owner that is not a non-empty string."""
    # The stores spell "no claim" as NULL / an absent field; an empty owner would read back as none.
    if not isinstance(owner, str) or not owner:
        raise ValueError("a claim owner must be a non-empty string")


def creation_data(thread_id: str, expected_version: int | None, data: Mapping[str, Any] | None) -> str | bytes | None:
    """The encoded ``data`` of a claim that creates its record (``expected_version=None``); ``None`` for
    a claim of a stored version, which keeps the record's data."""
    if expected_version is None:
        if data is None:
            raise ValueError(f"thread {quoted_name(thread_id)}: a claim that creates the thread needs its data")
        return encode_data(thread_id, data)
    if data is not None:
        raise ValueError(f"thread {quoted_name(thread_id)}: a claim of version {expected_version} keeps "
                         "the stored data; data is only for a claim that creates the thread")
    return None


def encode_data(thread_id: str, data: Mapping[str, Any]) -> str | bytes:
    """JSON for a record's data: UTF-8 ``bytes`` from orjson when it can write the data exactly, else text.

    Both forms hold no lone surrogate, so UTF-8 backends can store them: orjson refuses to write one,
    and the stdlib fallback escapes everything outside ASCII. NaN/Infinity are refused because they
    are not JSON and another reader could not parse them.
    """
    if not isinstance(data, Mapping):
        raise StoreError(f"thread {quoted_name(thread_id)}: data must be a mapping, not {type(data).__name__}",
                         thread_id=thread_id)
    record = data if type(data) is dict else dict(data)
    try:
        return dump_record(record)
    except (TypeError, ValueError, RecursionError) as exc:  # (RecursionError: nested deeper than json goes)
        raise StoreError(f"thread {quoted_name(thread_id)}: data is not JSON-ready: "
                         f"{exc}", thread_id=thread_id) from exc


def decode_record(thread_id: str, *, version: int, text: str | bytes, claim: str | None,
                   format: int, changes: Sequence[str | bytes] = (), record_id: str | None = None) -> StoredThread:
    """A ``StoredThread`` from a record's parts (its data and the changes appended since, in order),
    refusing newer formats and unreadable data."""
    head = checked_head(thread_id, version, claim, format, record_id)
    version, claim, format = head.version, head.claim, head.format
    if format > STORE_FORMAT_VERSION:
        raise _newer_format(thread_id, format)
    data = _loaded(thread_id, text, "its data")
    if not isinstance(data, dict):
        raise StoreError(f"thread {quoted_name(thread_id)}: stored data is not a JSON object", thread_id=thread_id)
    if changes:
        failure: StoreError | None = None
        try:
            apply_changes(data, [_loaded(thread_id, change, "a change appended to it") for change in changes])
        except (ValueError, TypeError, RecursionError) as exc:
            failure = StoreError(f"thread {quoted_name(thread_id)}: a stored change cannot be read: {_cut(str(exc))}",
                                 thread_id=thread_id)
        if failure is not None:
            raise failure  # (outside the handler: see _loaded)
    return StoredThread(thread_id=thread_id, version=version, data=data, claim=claim, format=format,
                        changes=len(changes), record_id=head.record_id)


def checked_head(thread_id: str, version: Any, claim: Any, format: Any, record_id: Any = None) -> Head:
    """A record's head as a backend stored it, refused (``StoreError``) when a foreign or damaged record
    holds something else than integers, a claim owner and a record id; an empty owner is no claim, an
    empty record id no id."""
    # (a version below 0 was never written: every record starts at 0 or 1 and goes up by one)
    damaged = [f"the stored {name} is damaged ({quoted_name(value)})" for name, value, bad in (
        ("record's version", version, type(version) is not int or version < 0),
        ("record's format", format, type(format) is not int),
        ("record's claim", claim, not (claim is None or type(claim) is str)),
        # (longer than a write takes: a thread object keeps the id and sends it back with every write)
        ("record id", record_id,
         not (record_id is None or (type(record_id) is str and len(record_id) <= MAX_RECORD_ID))),
    ) if bad]
    if damaged:
        # Each field named, and quoted as an id is: another tool's field may hold megabytes, or text
        # meant for a terminal.
        raise StoreError(f"thread {quoted_name(thread_id)}: {'; '.join(damaged)}", thread_id=thread_id)
    return Head(version=version, claim=claim or None, format=format, record_id=record_id or None)


def fold_when_due(where: str, thread_id: str, compaction: Compaction, counts: tuple[int, int, int] | None,
                   fold: Callable[[], object]) -> None:
    """After an append landed: fold the thread's changes into its data when ``compaction`` says so
    (``counts``: the data's bytes, the changes' bytes, how many; ``None``: nothing to judge).

    A fold that fails leaves the changes appended, logged at debug level (``where`` names the store):
    the run's save has succeeded whatever the fold does, and the next append tries again.
    """
    if counts is None or not compaction.due(*counts):
        return
    try:
        fold()
    except Exception as exc:  # noqa: BLE001 - see the docstring
        _log.debug("%s: compaction of thread %s skipped (not compacted until a later append): %s", where,
                   quoted_name(thread_id), exc)


def as_text(encoded: str | bytes) -> str:
    """A record's JSON as text, whatever the encoder gave (for a TEXT column, read the same by every tool)."""
    return encoded.decode("utf-8") if isinstance(encoded, bytes) else encoded


def compacted(thread_id: str, text: str | bytes, changes: Sequence[str | bytes], *,
              last: Mapping[str, Any] | None = None, plain: bool = False) -> str | bytes:
    """The record's data with its changes folded in, as one JSON document (a compaction).

    Args:
        last: one change more, folded in after ``changes`` as its writer handed it to the store, not
            read back from its text: only for a change the store has just written with orjson
            (``encode_data`` gave bytes), which holds exactly what its text does. A large change that
            makes its own append's fold due is then not parsed again (see :func:`apply_changes`).
        plain: ``text`` and ``changes`` were all written by ``encode_data`` as orjson's bytes, in this
            process, and ``last`` too: what they read as is plain JSON (the walk that decides how to
            write a record has nothing to find in it), so the fold is written without walking it.
    """
    stored = decode_record(thread_id, version=0, text=text, claim=None, format=STORE_FORMAT_VERSION,
                            changes=changes)
    data = stored.data
    if last is not None:
        apply_changes(data, [last])  # (a ValueError for a change of the wrong shape: the fold is skipped)
    if plain:
        return dump_record(PlainDict(data))
    return encode_data(thread_id, data)


def _loaded(thread_id: str, text: str | bytes, where: str) -> Any:
    """A record's JSON (its data, or a change: ``where``), or a ``StoreError`` saying where it is not JSON.

    The error is raised outside the handler, so that neither its cause nor its context is the parser's
    error: a ``JSONDecodeError`` holds the whole text it read (``.doc``), and a ``UnicodeDecodeError``
    the whole bytes (``.object``). A record of hundreds of megabytes stayed alive as long as the error
    did (a log handler, a traceback kept for a report), and a secret in the record rode along with it.
    The error says where the text breaks, with a few characters around it.
    """
    try:
        return load_record(text)
    except RepeatedKey as exc:
        failure = _repeated(thread_id, where, exc)
    except (ValueError, RecursionError) as exc:
        what = "stored data" if where == "its data" else "a stored change"
        failure = StoreError(f"thread {quoted_name(thread_id)}: {what} is not JSON: {_parse_fault(exc, text)}",
                             thread_id=thread_id)
    raise failure


#: How many characters on each side of a parse fault its error quotes.
_AROUND = 8


def _parse_fault(exc: BaseException, text: str | bytes) -> str:
    """What a parser's refusal says, with where and a short excerpt, holding nothing of the parser's error."""
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 at byte {exc.start}"
    position = getattr(exc, "pos", None)
    if isinstance(exc, json.JSONDecodeError) and type(position) is int:
        # (the stdlib reads bytes as the text they decode to, and counts its position in that)
        shown = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        near = shown[max(0, position - _AROUND):position + _AROUND]
        return f"{exc.msg} at character {position} (near {quoted_name(near)})"
    return _cut(str(exc) or type(exc).__name__)


def _cut(text: str) -> str:
    # (a parser's or a change's message may quote what it read: at most a line of it is kept)
    return text if len(text) <= 200 else text[:200] + "…"


def _repeated(thread_id: str, where: str, exc: RepeatedKey) -> StoreError:
    # The wire's rule for a repeated key (an event repeating one is refused, naming it) applied to what
    # a store hands back: every store reads its records here, so they all refuse the same record alike.
    return StoreError(f"thread {quoted_name(thread_id)}: the stored record is damaged: {where} repeats the key "
                      f"{quoted_name(exc.key)} (at {named(exc.pointer)}), and which value is the thread's cannot be "
                      "told; no writer of agui_client makes such a record: restore it from a backup, or "
                      "delete the thread", thread_id=thread_id)


def _newer_format(thread_id: str, format: int) -> StoreError:
    return StoreError(
        f"thread {quoted_name(thread_id)} was stored in record format {format}; this release reads up to "
        f"{STORE_FORMAT_VERSION} (upgrade agui-client)",
        thread_id=thread_id,
    )


def store_closed(thread_id: str | None = None) -> StoreError:
    """The error a closed store raises for any call (naming the thread when the call has one)."""
    return StoreError("the store is closed", thread_id=thread_id, closed=True)


def trusted_names(store: str, names: Iterable[str]) -> frozenset[str]:
    """The ``trusted_objects`` a store was given, checked: names of objects on its tables the operator
    vouches for, compared exactly as the catalog spells them.

    A single string is refused rather than read as its letters (``trusted_objects="audit"`` would trust
    objects named ``a``, ``u`` ...), and so is an empty name or one that is not a string: no catalog
    holds either, and each is a mistake the operator should see now, not a trust that never matches.
    """
    if isinstance(names, (str, bytes)):
        raise ValueError(f"{store} takes trusted_objects as a collection of names, not the single string "
                         f"{quoted_name(names)}: write ({quoted_name(names)},)")
    found = tuple(names)
    wrong = [name for name in found if type(name) is not str or not name]
    if wrong:
        raise ValueError(f"{store} takes trusted_objects as non-empty names, not {quoted_name(wrong[0])}")
    return frozenset(found)


def untrusted_note(absent: Sequence[str]) -> str:
    """What a ``STORE-SCHEMA`` refusal adds when some trusted names matched nothing: often the typo that
    left the operator's own object untrusted (``""`` when every trusted name was found)."""
    if not absent:
        return ""
    return f" (trusted_objects names {_names_shown(absent)}, found on none of them: a misspelling?)"


def warn_trusted_absent(where: str, absent: Sequence[str], kind: str, place: str) -> None:
    """Warn (``STORE-TRUSTED-ABSENT``) that trusted names match no object on the store's tables.

    A warning, not a refusal: an operator adds a trigger and the name that trusts it on different days,
    and drops one before the other, and a store refusing to open in between would stop every replica
    for a name that, absent, lets nothing run. Yet a misspelt name trusts nothing while the operator
    believes it does (and a later object under the intended name is refused), so it is said when the store opens.
    """
    warn("STORE-TRUSTED-ABSENT", f"{where}: trusted_objects names {_names_shown(absent)}, but no {kind} on "
                                 f"{place} has that name; check the spelling (names are compared exactly), or "
                                 "remove a name whose object was dropped")


def _names_shown(names: Sequence[str]) -> str:
    shown = ", ".join(quoted_name(name, 40) for name in names[:8])
    return shown + (f" and {len(names) - 8} more" if len(names) > 8 else "")
