"""Durable thread stores: where a thread waits between runs, and how racing resumes are kept apart.

A thread that stops on an interrupt may be answered minutes later, by another process or another
replica. The store keeps the thread (``ThreadState.dump()``) under a version number, and every write
is a compare-and-set on that version:

* ``save(thread_id, data, expected_version=v)`` writes only if the stored version is still ``v``
  (``None`` creates the thread at version 1) and returns the new version.
* ``claim(thread_id, expected_version=v, owner=token)`` marks a run as in flight *before* any
  request goes out. Of two writers that loaded the same version, only one can claim it; the other
  gets :class:`~agui_client.errors.ConcurrentResume` and sends nothing. The claim holder saves the
  run's result with the version ``claim`` returned (which clears the claim), or, when its request
  never reached the agent, gives the claim back with ``release``. ``expected_version=None`` (with
  ``data``) claims a thread the store does not hold yet by creating its record, claimed, at version
  0: of writers racing on a new thread id, one creates it and sends. A claim is recognised by its
  owner, so a claim sent again after its reply was lost finds itself instead of being refused.
* ``append(thread_id, changes, expected_version=v)`` is a save of one run's changes (what
  ``ThreadState.changes()`` returns) instead of the whole thread: the same compare-and-set, but the
  bytes written are what the run changed, so a thread's thousandth run saves as fast as its tenth.
  ``load`` still returns the whole thread; each store folds the appended changes into one record
  now and then (``Compaction``), never changing the version or what ``load`` returns.
* ``thread_ids(after=..., limit=...)`` lists the threads a store holds, a page at a time, in thread
  id order (:class:`ListingStore`, an optional capability every store here has).
* Anything else that fails (the backend, an unreadable record, a closed store) raises
  :class:`~agui_client.errors.StoreError`.

Four stores follow the same rules (one contract test suite runs against all of them):

* :class:`MemoryStore`: a dict in this process (the default; lost on exit).
* :class:`SqliteStore`: one SQLite file; WAL, ``synchronous=FULL``, one transaction per write.
* :class:`RedisStore`: Redis, shared between replicas; each write one atomic Lua script.
* :class:`PostgresStore`: a PostgreSQL table, shared between replicas; each write one conditional
  ``UPDATE`` (or, for a thread's first write, one ``INSERT``) on the thread's row.

Every record carries a format number (``STORE_FORMAT_VERSION``) so later releases can read old
records, and an older release refuses to read or overwrite a newer one.

The protocol is synchronous, on purpose. A SQLite write and a Redis or PostgreSQL round trip take well under a
millisecond to a few (one fsync), next to agent runs that take seconds, so the async shells simply call
the store in a worker thread (``await asyncio.to_thread(store.claim, ...)``). One protocol keeps the
compare-and-set rules in one place (:func:`~agui_client.stores.base.check_write`) instead of a sync and
an async copy of every store that could drift apart. Every store is safe to share between threads and
is a context manager that closes it.
"""

from __future__ import annotations

from .base import (
    MAX_LISTING_PAGE,
    MAX_THREAD_ID_BYTES,
    STORE_FORMAT_VERSION,
    Compaction,
    IncrementalStore,
    ListingStore,
    StoredThread,
    ThreadStore,
    apply_changes,
    new_record_id,
)
from .memory import MemoryStore
from .postgres import PostgresStore
from .redis import RedisStore
from .sqlite import SqliteStore

__all__ = ["STORE_FORMAT_VERSION", "StoredThread", "ThreadStore", "IncrementalStore", "ListingStore",
           "MAX_LISTING_PAGE", "MAX_THREAD_ID_BYTES", "Compaction", "apply_changes", "new_record_id", "MemoryStore",
           "SqliteStore", "RedisStore", "PostgresStore"]
