"""``SqliteStore``: threads in one SQLite file (durable, embedded, shared by the processes of one host).

Layout 3 (``PRAGMA user_version = 3``): a thread is one small *head* row and its *parts*::

    agui_threads(thread_id TEXT PRIMARY KEY, version INTEGER, claim TEXT, format INTEGER,
                 changes INTEGER, change_bytes INTEGER, data_bytes INTEGER, record_id TEXT)
    agui_thread_parts(thread_id TEXT, seq INTEGER, body TEXT, PRIMARY KEY (thread_id, seq))

Part ``seq = 0`` holds the record's data (the JSON text of ``ThreadState.dump()``); parts ``1 ..
changes`` hold the changes appended since, one run's :func:`~agui_client.stores.apply_changes`
input each, in order. ``change_bytes`` and ``data_bytes`` are their sizes in UTF-8 bytes, so the
compaction policy is decided from the head alone. ``record_id`` is the id the record got when it was
created (see :class:`~agui_client.stores.IncrementalStore`): every write keeps it, and a write that names
one is refused unless it matches, in the same transaction as the version's compare-and-set; it is
``NULL`` for a record an earlier release created. The head holds nothing large on purpose: SQLite
rewrites a whole row on ``UPDATE``, a large column's overflow pages included, so a claim, a release
or an append that bumps the version rewrites a few dozen bytes whatever the thread's size.

* ``load`` is one ``SELECT`` joining the head and its parts: one statement reads one committed
  snapshot, so a load never sees a head from one write and parts from another.
* ``append`` is one transaction: it inserts the change as the next part and updates the head
  (version + 1, claim cleared, ``changes`` + 1), under the same compare-and-set as a save. It writes
  the change, one head row and their index entries: what the run changed, not the thread.
* ``save`` rewrites part 0, drops the change parts and resets the head's counts.
* ``claim`` and ``release`` update the head row only.
* ``thread_ids`` reads the head table's primary key alone (``WHERE thread_id > ? ORDER BY thread_id
  LIMIT ?``, SQLite's ``BINARY`` order: the ids' UTF-8 bytes, which is code point order): one page is
  one range of the key's index, whatever the number of threads, and no record is read.
* A *compaction* (when ``compaction.due(...)`` after an append) reads the head and the parts (one
  statement, no lock) and folds the changes into the data with no lock held, then writes in one
  more ``BEGIN IMMEDIATE`` transaction: it zeroes the head's counts without touching its version or
  claim, replaces part 0 and deletes the change parts, only if the head still has the version,
  change count and record id that were folded (a write that came in between wins, and the
  compaction is skipped until the next append); for a record without an id (an earlier release's),
  only if its parts are still the very ones folded, compared in that transaction. Every write is
  still one ``BEGIN IMMEDIATE`` transaction that checks the latest head; the fold, which can take a
  while on a big thread, no longer holds the file's write lock.

The store's tables must be as its own statements make them, and carry nothing else (``STORE-SCHEMA``
in docs/codes.md): no trigger, index, constraint, default, generated column, collation or type of the
file's own, which every write would run or obey, but for the triggers and indexes the operator vouches
for by name (``trusted_objects``: theirs to answer for). A store judges them when it opens the file, and again
in each write's transaction when ``PRAGMA schema_version`` (an integer read, a microsecond) says the
file's schema changed since its connection loaded it, and each connection in the read transaction in
which SQLite loads its schema (a change made with the cookie left where it was reaches only connections
opened after it), so what another process adds later is refused before the write. Each connection turns
``PRAGMA foreign_keys`` off: another table's foreign key to the store's tables cascades nothing into a
store's write, however SQLite was built. What
the file holds beside the tables runs in no store statement and is left alone.

Older layouts are migrated when a store opens the file, in one ``BEGIN IMMEDIATE`` transaction
that ends by setting ``user_version = 3``; two processes opening an older file at once queue on the
write lock, and the second finds layout 3. A file with a newer layout is refused.

* Layout 2 (the same without ``record_id``): the column is added (``ALTER TABLE ... ADD COLUMN``, a
  change of the schema only, whatever the file's size). The records it held keep no id (``NULL``:
  ``StoredThread.record_id`` is ``None``, and only writes that name no id pass); the records created
  from then on get one. A process of the previous release that still has the file open keeps
  working, but the records it creates have no id: upgrade every process sharing a file together.
* Layout 1 (one row per thread with its ``data`` in the row): every row's data moves into part 0
  and the head table is rebuilt, with ``record_id`` ``NULL``; the trusted triggers and indexes on it
  are made again on the rebuilt table (one that reads ``data`` refuses the migration). A process of
  that release that still has the file open then fails its next call with ``StoreError`` (no such
  column).

Durability and atomicity:

* WAL journal mode: readers never wait for the writer, and a write is one append to the log that
  either commits whole or not at all, so a process killed mid-save leaves the previous version.
* ``synchronous=FULL``: each commit waits for the log to reach the disk. ``NORMAL`` would survive a
  killed process too, but may lose the last commits on power loss or an OS crash, and a lost claim
  is exactly what lets a resume be sent twice. One fsync per save is small next to an agent run.
* Every write is one ``BEGIN IMMEDIATE`` transaction: it takes the write lock first, reads the head,
  applies :func:`~agui_client.stores.base.check_write`, and writes with a conditional
  ``UPDATE ... WHERE thread_id = ? AND version = ?`` whose row count must be 1.
"""

from __future__ import annotations

import functools
import os
import re
import sqlite3
import string
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import closing, contextmanager
from typing import Any, TypeVar

import attrs
from attrs import frozen

from .._inert import quoted_name
from ..core.redact import displayed_url
from ..errors import StoreError
from .base import (
    Compaction,
    Head,
    Operation,
    StoredThread,
    as_text,
    check_owner,
    check_page,
    check_thread_id,
    check_version,
    checked_head,
    compacted,
    creation_data,
    decode_record,
    encode_data,
    fold_when_due,
    store_closed,
    trusted_names,
    untrusted_note,
    warn_trusted_absent,
)
from .base import StoreBase as _Base
from .base import check_write as _check_write

__all__ = ["SqliteStore"]

_T = TypeVar("_T")

#: ``PRAGMA user_version`` of the table layout this release creates and reads.
_SCHEMA_VERSION = 3
#: Idle connections kept for reuse; more are opened when more threads write at once, then closed.
_MAX_IDLE = 8

# The head rows: no large column, so updating one rewrites a few dozen bytes (see the module docstring).
_HEADS = """
CREATE TABLE agui_threads (
    thread_id TEXT PRIMARY KEY NOT NULL,
    version INTEGER NOT NULL,
    claim TEXT,
    format INTEGER NOT NULL,
    changes INTEGER NOT NULL DEFAULT 0,
    change_bytes INTEGER NOT NULL DEFAULT 0,
    data_bytes INTEGER NOT NULL DEFAULT 0,
    record_id TEXT
)
"""
# A rowid table (not WITHOUT ROWID): its rows may be megabytes, and a rowid table keeps a large body
# in the row's own overflow pages while the primary key's index stays small.
_PARTS = """
CREATE TABLE agui_thread_parts (
    thread_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (thread_id, seq)
)
"""
#: The statements the earlier layouts' tables were made with, as their releases ran them: what a file of
#: that layout holds, judged before it is migrated (never to be edited; the layout-1 release's ``IF NOT
#: EXISTS`` is not kept in the file's schema, so it is not here).
_EARLIER: dict[int, tuple[str, ...]] = {
    1: ("CREATE TABLE agui_threads (thread_id TEXT PRIMARY KEY NOT NULL, version INTEGER NOT NULL,"
        " data TEXT NOT NULL, claim TEXT, format INTEGER NOT NULL)",),
    2: ("CREATE TABLE agui_threads (thread_id TEXT PRIMARY KEY NOT NULL, version INTEGER NOT NULL, claim TEXT,"
        " format INTEGER NOT NULL, changes INTEGER NOT NULL DEFAULT 0, change_bytes INTEGER NOT NULL DEFAULT 0,"
        " data_bytes INTEGER NOT NULL DEFAULT 0)", _PARTS),
}
_SELECT_HEAD = ("SELECT version, claim, format, changes, change_bytes, data_bytes, record_id FROM agui_threads"
                " WHERE thread_id = ?")
# One statement, one snapshot: the head and every part as one committed write left them. The bodies
# are read as bytes (the JSON reader takes UTF-8 bytes as they are): a body another tool wrote as text
# that is not UTF-8 is then refused as JSON, naming the thread, where sqlite3's own decode error quoted
# the start of it (a thread's content) in the message.
_SELECT_RECORD = (
    "SELECT h.version, h.claim, h.format, h.changes, h.record_id, p.seq, CAST(p.body AS BLOB)"
    " FROM agui_threads AS h"
    " LEFT JOIN agui_thread_parts AS p ON p.thread_id = h.thread_id WHERE h.thread_id = ? ORDER BY p.seq"
)

# A write's statements on the head table (a create, every other write, a delete); a layout-1 migration
# also compiles them against the triggers it makes again (``_migrate_from_layout_1``).
_INSERT_HEAD = ("INSERT INTO agui_threads (thread_id, version, claim, format, data_bytes, record_id)"
                " VALUES (?, ?, ?, ?, ?, ?)")
_UPDATE_HEAD = ("UPDATE agui_threads SET version = ?, claim = ?, format = ?, changes = ?, change_bytes = ?,"
                " data_bytes = ? WHERE thread_id = ? AND version = ? AND record_id IS ?")
_DELETE_HEAD = "DELETE FROM agui_threads WHERE thread_id = ?"

# The listing: the head table's primary key alone, in BINARY order (the UTF-8 bytes: code point order).
_IDS_FIRST = "SELECT thread_id FROM agui_threads ORDER BY thread_id LIMIT ?"
_IDS_AFTER = "SELECT thread_id FROM agui_threads WHERE thread_id > ? ORDER BY thread_id LIMIT ?"


@frozen(kw_only=True)
class _StoredHead:
    """A head row: the compare-and-set head plus the sizes the compaction policy reads."""

    head: Head
    changes: int
    change_bytes: int
    data_bytes: int
    #: The row's ``record_id`` exactly as stored (``head.record_id`` reads an empty one as none).
    record_id: str | None = None


class SqliteStore(_Base):
    """Threads in a SQLite database file, safe to share between threads and processes.

    Args:
        path: the database file (created when missing), as text, bytes or a path object, as
            ``sqlite3.connect`` takes it. ``":memory:"`` is refused: each connection would see its own
            empty database; use ``MemoryStore``.
        timeout: seconds a write waits for another writer's lock before failing with ``StoreError``.
        compaction: when appended changes are folded into the record (the default: :class:`Compaction`).
        trusted_objects: names of triggers and indexes on the store's tables that the operator vouches
            for (an audit trigger, an index of their own), as the file spells them; everything else the
            store does not make is still refused, at open and before each write. A name is compared
            exactly and trusts whatever the file holds under it, so the operator owns what it does: a
            trusted trigger that clears the claim breaks the one-sender guarantee (two processes send
            the same resume), one that never ends holds every write, and whoever can write the file can
            put other code under the name. A trusted name on none of the tables is warned about
            (``STORE-TRUSTED-ABSENT``), not refused.

    Raises:
        StoreError: the path holds a NUL or is a directory; the file cannot be opened or written, is not
            a database, is another application's database (it holds tables and no agui_client layout,
            or tables of our names with other columns: nothing is written to it), cannot use WAL mode,
            or holds a newer table layout; its store tables carry a trigger, an index, a constraint or
            a column of the file's own, beside those named in ``trusted_objects`` (``code``
            ``STORE-SCHEMA``; a write refuses one added later).
        ValueError: ``trusted_objects`` is a single string, or holds an empty name, one that is not a
            string, or the name of a store table or of SQLite's own objects (trusting the table itself
            would trust any change to its columns and keys).

    Example::

        with SqliteStore("threads.db") as store:
            stored = store.load("t1")
    """

    def __init__(self, path: str | bytes | os.PathLike[str] | os.PathLike[bytes], *, timeout: float = 30.0,
                 compaction: Compaction | None = None, trusted_objects: Iterable[str] = ()) -> None:
        # Bytes are taken as sqlite3.connect takes them (a name from os.listdir(b".") opens its file):
        # decoded as the file system's names are, so the checks and messages below read one text path,
        # and undecodable bytes come back unchanged when sqlite3 encodes the name again.
        self._path = os.fsdecode(path)
        if self._path in ("", ":memory:") or self._path.startswith("file:"):
            raise ValueError(f"SqliteStore needs a database file path, not {self._path!r} (use MemoryStore)")
        self._where = _shown_path(self._path)
        if "\x00" in self._path:
            # (sqlite3 raised a bare ValueError, "embedded null character", naming no path and no store)
            raise StoreError(f"SQLite store {self._where}: the path holds a NUL character, which no file name "
                             "can; nothing was opened")
        self._trusted = _trusted_objects(trusted_objects)
        self._timeout = timeout
        self.compaction = compaction or Compaction()
        self._lock = threading.Lock()
        # A small pool instead of one connection per call or per thread: closing a WAL database's
        # last connection checkpoints and removes the log (an extra fsync per call), and connections
        # tied to threads would pile up when threads come and go. A pooled connection is used by one
        # thread at a time, so check_same_thread can be off.
        self._idle: list[_Connection] = []
        self._closed = False
        # The file's schema cookie (``PRAGMA schema_version``, which SQLite moves on every change of the
        # schema, by any process) when the store last judged the schema its own; None until the open has
        # judged the file. Each connection keeps the cookie its own schema was loaded and judged under
        # (``_Connection``): every write compares the file's cookie with that one, in its transaction. A
        # schema judged foreign under this cookie was changed without moving it (the refusal says so).
        self._schema_cookie: int | None = None
        try:
            with self._connection() as conn:
                # Looked at before WAL mode is set: the mode is kept in the file's header, so setting it
                # on another application's database would change that file after all (checked again
                # in the transaction below, where a process making the tables at once cannot interleave).
                # Read in one read transaction: the layout number and the schema are two reads, and a
                # store migrating the file in another process could commit between them (layout 2 read,
                # then layout 3's columns: judged foreign).
                conn.execute("BEGIN")
                try:
                    self._layout(conn)
                finally:
                    conn.execute("ROLLBACK")
                # Persistent in the file: set once here, every later connection opens in WAL mode.
                mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise StoreError(f"SQLite store {self._where}: cannot use WAL journal mode (got {mode!r})")
                self._transaction(conn, None, self._create_schema)
        except BaseException:
            self.close()
            raise

    # -- the protocol --------------------------------------------------------------------------------

    def load(self, thread_id: str) -> StoredThread | None:
        """The stored thread: its data with the appended changes folded in, or ``None`` when there is none.

        Raises:
            StoreError: the database failed, the store is closed, or the record is unreadable or of a
                newer format.
        """
        check_thread_id(thread_id, stored=True)
        with self._connection(thread_id) as conn:
            rows = conn.execute(_SELECT_RECORD, (thread_id,)).fetchall()
        if not rows:
            return None
        (version, claim, format, _, record_id), text, changes = _record(thread_id, rows)
        return decode_record(thread_id, version=version, text=text, claim=claim, format=format,
                              changes=changes, record_id=record_id)

    def save(self, thread_id: str, data: Mapping[str, Any], *, expected_version: int | None,
             record_id: str | None = None) -> int:
        """Compare-and-set the thread's data; see :meth:`ThreadStore.save`.

        Raises:
            ConcurrentResume: the stored version is not ``expected_version`` (or the thread exists, for a create),
                or the record's id is not ``record_id``.
            StoreError: the data is not JSON-ready, the database failed, the store is closed, or the
                record is of a newer format.
        """
        check_thread_id(thread_id)
        encoded = encode_data(thread_id, data)
        return self._write(thread_id, "save", expected_version=expected_version, owner=None,
                           record_id=record_id, text=as_text(encoded), size=len(encoded)).head.version

    def append(self, thread_id: str, changes: Mapping[str, Any], *, expected_version: int,
               record_id: str | None = None) -> int:
        """Compare-and-set one run's changes onto the thread's record; see :meth:`IncrementalStore.append`.

        Writes the change and the head row, not the thread. When the record's changes are then due for
        folding (``compaction``), a second transaction folds them; if that fails, the append stands
        (it is logged at debug level and tried again after the next append).

        Raises:
            ConcurrentResume: the stored version is not ``expected_version``, the thread is gone, or the
                record's id is not ``record_id``.
            StoreError: the changes are not JSON-ready, the database failed, the store is closed, or the
                record is of a newer format.
        """
        check_thread_id(thread_id)
        encoded = encode_data(thread_id, changes)
        written = self._write(thread_id, "append", expected_version=expected_version, owner=None,
                              record_id=record_id, text=as_text(encoded), size=len(encoded))
        fold_when_due(f"SQLite store {self._where}", thread_id, self.compaction,
                       (written.data_bytes, written.change_bytes, written.changes),
                       lambda: self._compact(thread_id, written))
        return written.head.version

    def claim(self, thread_id: str, *, expected_version: int | None, owner: str,
              data: Mapping[str, Any] | None = None, record_id: str | None = None) -> int:
        """Claim the thread for a run (``expected_version=None``: create it claimed, with ``data``);
        see :meth:`ThreadStore.claim`.

        Raises:
            ConcurrentResume: the version moved on, somebody holds a claim, (a create) the thread exists, or
                the record's id is not ``record_id``.
            StoreError: the data is not JSON-ready, the database failed, the store is closed, or the
                record is of a newer format.
        """
        check_thread_id(thread_id)
        check_owner(owner)
        created = creation_data(thread_id, expected_version, data)
        return self._write(thread_id, "claim", expected_version=expected_version, owner=owner,
                           record_id=record_id, text=None if created is None else as_text(created),
                           size=0 if created is None else len(created)).head.version

    def release(self, thread_id: str, *, claimed_version: int, owner: str, record_id: str | None = None) -> int:
        """Undo a claim; see :meth:`ThreadStore.release`.

        Raises:
            ConcurrentResume: the version moved on, ``owner`` does not hold the claim, or the record's id
                is not ``record_id``.
            StoreError: the database failed, the store is closed, or the record is of a newer format.
        """
        check_thread_id(thread_id)
        check_owner(owner)
        return self._write(thread_id, "release", expected_version=claimed_version, owner=owner,
                           record_id=record_id, text=None, size=0).head.version

    def delete(self, thread_id: str) -> None:
        """Forget the thread (nothing happens when there is none).

        Raises:
            StoreError: the database failed, or the store is closed.
        """
        check_thread_id(thread_id, stored=True)
        def delete(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM agui_thread_parts WHERE thread_id = ?", (thread_id,))
            conn.execute(_DELETE_HEAD, (thread_id,))

        with self._connection(thread_id) as conn:
            self._transaction(conn, thread_id, delete)

    def thread_ids(self, *, after: str | None = None, limit: int = 100) -> list[str]:
        """Up to ``limit`` ids of the stored threads after ``after``, in code point order; see
        :class:`~agui_client.stores.ListingStore`.

        One statement on the head table's primary key: a range of its index, no record read.

        Raises:
            ValueError: ``limit`` is out of range, or ``after`` is not a string.
            StoreError: the database failed, or the store is closed.
        """
        check_page(after, limit)
        with self._connection() as conn:
            if after is None:
                rows = conn.execute(_IDS_FIRST, (limit,)).fetchall()
            else:
                rows = conn.execute(_IDS_AFTER, (after, limit)).fetchall()
        return [_listed_id(self._where, row[0]) for row in rows]

    def close(self) -> None:
        """Close the store's connections; later calls raise ``StoreError``. Closing twice is fine."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    # -- internals -------------------------------------------------------------------------------------

    def _write(
        self, thread_id: str, operation: Operation, *, expected_version: int | None, owner: str | None,
        text: str | None, size: int, record_id: str | None = None,
    ) -> _StoredHead:
        """One compare-and-set write in one transaction; returns the head row as it now stands.

        ``text`` is the new data (a save, a creating claim) or the change (an append), ``size`` its bytes;
        ``record_id`` the id a create gives the record, or the one a write to it requires (``None``: any).
        """
        check_version(thread_id, expected_version)  # (an argument's error before the file's)

        def write(conn: sqlite3.Connection) -> _StoredHead:
            row = conn.execute(_SELECT_HEAD, (thread_id,)).fetchone()
            stored = None if row is None else _stored_head(thread_id, row)
            new = _check_write(thread_id, None if stored is None else stored.head, operation,
                               expected_version=expected_version, owner=owner, record_id=record_id)
            if stored is None:
                assert text is not None  # only a create (a save or a claim) finds no record and passes check_write
                conn.execute(
                    _INSERT_HEAD,
                    (thread_id, new.version, new.claim, new.format, size, new.record_id),
                )
                conn.execute("INSERT OR REPLACE INTO agui_thread_parts (thread_id, seq, body) VALUES (?, 0, ?)",
                             (thread_id, text))
                return _StoredHead(head=new, changes=0, change_bytes=0, data_bytes=size, record_id=new.record_id)
            if new == stored.head:
                return stored  # (the owner's own claim, recognised: nothing to write)
            if operation == "append":
                assert text is not None
                after = attrs.evolve(stored, head=new, changes=stored.changes + 1,
                                     change_bytes=stored.change_bytes + size)
                conn.execute("INSERT INTO agui_thread_parts (thread_id, seq, body) VALUES (?, ?, ?)",
                             (thread_id, after.changes, text))
            elif operation == "save":
                assert text is not None
                after = attrs.evolve(stored, head=new, changes=0, change_bytes=0, data_bytes=size)
                # An UPDATE rather than a REPLACE: SQLite then writes only the pages whose bytes changed
                # when the new data is as long as the old.
                replaced = conn.execute("UPDATE agui_thread_parts SET body = ? WHERE thread_id = ? AND seq = 0",
                                        (text, thread_id))
                if replaced.rowcount != 1:
                    raise _damaged(thread_id, "its data is missing")
                if stored.changes:
                    conn.execute("DELETE FROM agui_thread_parts WHERE thread_id = ? AND seq > 0", (thread_id,))
            else:  # a claim or a release: the head row only
                after = attrs.evolve(stored, head=new)
            # BEGIN IMMEDIATE already holds the write lock, so the head cannot have moved; the
            # version and record id conditions make the compare-and-set hold even if that ever stops
            # being true. The record id is not set: every write but a create keeps it.
            cursor = conn.execute(
                _UPDATE_HEAD,
                (new.version, new.claim, new.format, after.changes, after.change_bytes, after.data_bytes,
                 thread_id, stored.head.version, stored.record_id),
            )
            if cursor.rowcount != 1:
                raise StoreError(f"thread {quoted_name(thread_id)} changed while this writer held the "
                                 "lock", thread_id=thread_id)
            return after

        with self._connection(thread_id) as conn:
            return self._transaction(conn, thread_id, write)

    def _compact(self, thread_id: str, appended: _StoredHead) -> bool:
        """Fold the record's changes into its data if it is still as the append ``appended`` left it.

        Returns whether it folded (``False``: another write came in between, and wins).
        """
        # The record is read and folded with no lock held (one statement, one snapshot; WAL readers do
        # not hold writers up): a SQLite write lock is the whole file's, and every other thread of the
        # file would wait while a big thread is decoded, folded and encoded again. The write then
        # checks, under the lock, that the head is still the one folded; a write in between wins.
        with self._connection(thread_id) as conn:
            rows = conn.execute(_SELECT_RECORD, (thread_id,)).fetchall()
        if not rows:
            return False
        (version, _, _, changes, record_id), text, parts = _record(thread_id, rows)
        # (the record id too: a thread deleted and made again up to the same version and count is
        # another record, whose changes its own next append will fold)
        if (version, changes, record_id) != (appended.head.version, appended.changes, appended.record_id):
            return False
        encoded = compacted(thread_id, text, parts)
        folded = as_text(encoded)

        def write(conn: sqlite3.Connection) -> bool:
            # The version, the change count and the record id say the parts are the ones folded: an
            # append moves the first two, a save resets the count and moves the version, a delete and
            # a create give another record id. A record without an id (made by an earlier release, or by
            # a process of it still running) has none to tell a thread made again from it: its parts
            # must still be the very ones folded (compared under the lock, a copy's cost, only for such
            # records), or a thread made again and brought up to the same version and count would take
            # the old one's fold.
            if record_id is None and not _holds_parts(conn, thread_id, text, parts):
                return False
            cursor = conn.execute(
                "UPDATE agui_threads SET changes = 0, change_bytes = 0, data_bytes = ?"
                " WHERE thread_id = ? AND version = ? AND changes = ? AND record_id IS ?",
                # (UTF-8 bytes, as every write counts them: the encoder gives bytes, or ASCII text)
                (len(encoded), thread_id, version, changes, record_id),
            )
            if cursor.rowcount != 1:
                return False
            # The version and the claim stay: a compaction changes how the record is kept, not what it holds.
            conn.execute("UPDATE agui_thread_parts SET body = ? WHERE thread_id = ? AND seq = 0",
                         (folded, thread_id))
            conn.execute("DELETE FROM agui_thread_parts WHERE thread_id = ? AND seq > 0", (thread_id,))
            return True

        with self._connection(thread_id) as conn:
            return self._transaction(conn, thread_id, write)

    def _transaction(self, conn: _Connection, thread_id: str | None,
                     body: Callable[[_Connection], _T]) -> _T:
        """Run ``body(conn)`` in one ``BEGIN IMMEDIATE`` transaction, once the file's schema is still the
        store's own; roll back on any exception."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            self._check_schema(conn, thread_id)
            result = body(conn)
        except BaseException:
            # SQLite may have rolled back already (a full disk, say); a second ROLLBACK would hide the cause.
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return result

    def _layout(self, conn: sqlite3.Connection) -> int:
        """The file's table layout (0: none yet), or ``StoreError`` for another application's database, or
        for a store's whose schema holds what agui_client does not make."""
        (layout,) = conn.execute("PRAGMA user_version").fetchone()
        foreign = _foreign_layout(conn, layout)
        unknown = _unknown_schema(conn, layout, self._trusted) if foreign is None else None
        if foreign is not None or unknown is not None:
            raise StoreError(
                f"SQLite store {self._where}: the file is a SQLite database but not an agui_client store "
                f"({foreign or unknown}); nothing was changed in it. Give SqliteStore a file of its own: a new "
                "path, where it creates the file and its tables", code=None if unknown is None else "STORE-SCHEMA"
            )
        return int(layout)

    def _check_schema(self, conn: _Connection, thread_id: str | None) -> None:
        """Before a write, in its transaction: the schema the connection runs is still the store's own.

        Another process may add a trigger, an index or a column after the store opened the file; the
        write would then run it. Reading the schema cookie costs a few microseconds; when it moved since
        the connection last judged its schema, SQLite loads the schema again in this very transaction,
        and it is read and judged again here (the write lock, held since ``BEGIN IMMEDIATE``, keeps it
        from moving again before the write).

        A change hidden from the cookie (``PRAGMA writable_schema`` edits, or ``PRAGMA schema_version``
        set back after a ``CREATE TRIGGER``) is never loaded by a connection that already holds the
        schema: it runs what it loaded, and that was judged when it loaded it (``_judge_loaded``, in the
        read transaction the connection opened with), however the file changed since, even twice over.
        """
        if self._schema_cookie is None:
            return  # (the open judges the file itself, in _create_schema)
        (cookie,) = conn.execute("PRAGMA schema_version").fetchone()
        if cookie != conn.cookie:
            conn.cookie, conn.foreign = cookie, self._verdict(conn)
        if conn.foreign is None:
            self._schema_cookie = cookie  # (changed, and still ours: a VACUUM, or ANALYZE's statistics)
            return
        # (the store's last judged cookie: a schema judged foreign under it was changed without moving it)
        hidden = (" without moving its schema cookie (PRAGMA writable_schema, or schema_version set back)"
                  if cookie == self._schema_cookie else "")
        raise StoreError(
            f"SQLite store {self._where}: the file's schema changed after the store opened it{hidden} "
            f"({conn.foreign}); nothing was written. Remove what was added to the file, or give SqliteStore a "
            "file of its own", thread_id=thread_id, code="STORE-SCHEMA")

    def _verdict(self, conn: sqlite3.Connection) -> str | None:
        """What the file's store tables carry that the current layout's do not, as this connection reads the
        file now (``None``: nothing)."""
        (layout,) = conn.execute("PRAGMA user_version").fetchone()
        why = _foreign_layout(conn, layout) or _unknown_schema(conn, layout, self._trusted)
        if why is None and layout != _SCHEMA_VERSION:
            why = f"its table layout is now {quoted_name(layout)}, not {_SCHEMA_VERSION}"
        return why

    def _judge_loaded(self, conn: _Connection) -> None:
        """A new connection's schema, judged in the read transaction in which SQLite loads it.

        SQLite reads a connection's schema once, at its first statement that needs it, and again only
        when the cookie moves; judging the file at any later moment judges what the file says then, not
        what the connection runs. Two hidden changes in a row (a trigger written in before a connection
        first reads the schema, taken out again before its first write) left it running a trigger that
        the judgement at its first write no longer saw. So the connection's first statements are one
        read transaction: the cookie (which opens the transaction's snapshot and loads nothing), then the
        judgement, whose reads load the schema from that same snapshot. The verdict is kept with the
        connection and read by its writes (``_check_schema``); a load or a listing, which run no trigger,
        go on. About 110 µs of CPU time once per connection the pool opens, nothing per write.
        """
        conn.execute("BEGIN")
        try:
            (conn.cookie,) = conn.execute("PRAGMA schema_version").fetchone()
            conn.foreign = self._verdict(conn)
        finally:
            conn.execute("ROLLBACK")

    def _create_schema(self, conn: _Connection) -> None:
        # Inside BEGIN IMMEDIATE: of processes opening the file at once, one creates or migrates the
        # tables and the others then find the current layout.
        layout = self._layout(conn)
        if layout > _SCHEMA_VERSION:
            raise StoreError(
                f"SQLite store {self._where}: table layout {layout} is newer than this release reads "
                f"({_SCHEMA_VERSION}); upgrade agui-client"
            )
        if layout != _SCHEMA_VERSION:
            try:
                _migrate(conn, layout)
            except _NotMadeAgain as exc:
                raise StoreError(
                    f"SQLite store {self._where}: the {exc.kind} {quoted_name(exc.name, 40)}, named in "
                    f"trusted_objects, cannot be made again on the head table of table layout {_SCHEMA_VERSION}, "
                    f"which the file's layout 1 is migrated to ({quoted_name(str(exc.error), 80)}: the thread "
                    "data moved out of that table, into agui_thread_parts); nothing was changed. Drop it, let the "
                    "store migrate the file, and make it again for the new layout", code="STORE-SCHEMA") from exc.error
            conn.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")
        # (judged above, or made by the statements just run, in this transaction: the store's own)
        self._schema_cookie = conn.cookie = conn.execute("PRAGMA schema_version").fetchone()[0]
        conn.foreign = None
        absent = _absent(conn, self._trusted)
        if absent:
            warn_trusted_absent(f"SQLite store {self._where}", absent, "trigger or index", "its tables")

    @contextmanager
    def _connection(self, thread_id: str | None = None) -> Iterator[_Connection]:
        """A connection for one operation; ``sqlite3.Error`` leaves as ``StoreError``."""
        with self._lock:
            if self._closed:
                raise store_closed(thread_id)
            conn = self._idle.pop() if self._idle else None
        try:
            if conn is None:
                conn = self._connect()
            yield conn
        except sqlite3.Error as exc:
            where = f"thread {quoted_name(thread_id)} in " if thread_id is not None else ""
            raise StoreError(f"SQLite store failed for {where}{self._where}: {exc}{_advice(exc, self._path)}",
                             thread_id=thread_id) from exc
        finally:
            if conn is not None:
                self._give_back(conn)

    def _connect(self) -> _Connection:
        # isolation_level=None: no implicit transactions; every write spells out BEGIN IMMEDIATE.
        conn = sqlite3.connect(self._path, timeout=self._timeout, isolation_level=None, check_same_thread=False,
                               factory=_Connection)
        try:
            self._judge_loaded(conn)  # (first: the PRAGMAs below would load the schema on their own)
            conn.execute("PRAGMA synchronous = FULL")
            # Off whatever SQLite was built with (SQLITE_DEFAULT_FOREIGN_KEYS=1 turns it on): the store's
            # tables declare no foreign key, but another table's foreign key to them would run its ON
            # DELETE CASCADE (and that table's triggers, never judged) inside the store's delete and the
            # layout-1 migration's DROP TABLE, or refuse them (RESTRICT).
            conn.execute("PRAGMA foreign_keys = OFF")
        except BaseException:
            conn.close()
            raise
        return conn

    def _give_back(self, conn: _Connection) -> None:
        # A lost race (ConcurrentResume) leaves a healthy connection; one stuck in a transaction does not.
        try:
            # (nor one whose schema was judged foreign: a write of it is refused, and a new connection reads
            # the file's schema as it is now, which may be the store's own again)
            reuse = not conn.in_transaction and conn.foreign is None
        except sqlite3.Error:
            reuse = False
        with self._lock:
            if reuse and not self._closed and len(self._idle) < _MAX_IDLE:
                self._idle.append(conn)
                return
        conn.close()



class _Connection(sqlite3.Connection):
    """A pooled connection that knows the schema it runs: the cookie under which it was loaded and what
    was found foreign in it (``None``: nothing); see ``SqliteStore._check_schema``."""

    cookie: int | None = None
    foreign: str | None = None


def _migrate(conn: sqlite3.Connection, layout: int) -> None:
    """Make the current layout's tables from those of ``layout`` (0: none), in the caller's transaction."""
    if layout == 0:
        conn.execute(_HEADS)
        conn.execute(_PARTS)
    elif layout == 1:
        _migrate_from_layout_1(conn)  # (straight to layout 3: its head table has the record_id column)
    else:
        # Layout 2: a change of the schema only; the records already stored keep no id (NULL).
        conn.execute("ALTER TABLE agui_threads ADD COLUMN record_id TEXT")


def _migrate_from_layout_1(conn: sqlite3.Connection) -> None:
    """Layout 1 (``agui_threads`` rows holding their ``data``) to the current layout, in the caller's
    transaction: each row's data becomes its part 0, and the head table is rebuilt without the data
    column (the records keep no record id: ``NULL``).

    The triggers and indexes on the head table go with the table the rebuild drops, and are made again
    on the new one, from the statements the file keeps for them, once its rows are in (an audit trigger
    records none of the migration's copies). They are the operator's, trusted by name: the open judged
    the file before migrating it and refused any other. One that cannot be made again (it names the
    ``data`` column, which moved to the parts) is ``_NotMadeAgain``, and the caller's transaction rolls
    the whole migration back.
    """
    own = conn.execute("SELECT type, name, sql FROM sqlite_master WHERE tbl_name = 'agui_threads' COLLATE NOCASE"
                       " AND type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY type, name").fetchall()
    conn.execute(_PARTS)
    conn.execute("INSERT INTO agui_thread_parts (thread_id, seq, body) SELECT thread_id, 0, data FROM agui_threads")
    conn.execute(_HEADS.replace("agui_threads", "agui_threads_migrated"))
    conn.execute(
        "INSERT INTO agui_threads_migrated (thread_id, version, claim, format, changes, change_bytes, data_bytes)"
        " SELECT thread_id, version, claim, format, 0, 0, length(CAST(data AS BLOB)) FROM agui_threads"
    )
    conn.execute("DROP TABLE agui_threads")
    conn.execute("ALTER TABLE agui_threads_migrated RENAME TO agui_threads")
    for kind, name, statement in own:
        try:
            conn.execute(statement)
            if kind == "trigger":
                # (SQLite resolves a trigger's columns only when it compiles a statement that fires it)
                for write in (_INSERT_HEAD, _UPDATE_HEAD, _DELETE_HEAD):
                    conn.execute(f"EXPLAIN {write}", (None,) * write.count("?"))
        except sqlite3.Error as exc:
            raise _NotMadeAgain(kind, name, exc) from exc


class _NotMadeAgain(Exception):
    """A trusted trigger or index a layout-1 migration could not make again on the rebuilt head table."""

    def __init__(self, kind: str, name: str, error: sqlite3.Error) -> None:
        super().__init__(kind, name, error)
        self.kind, self.name, self.error = kind, name, error


def _stored_head(thread_id: str, row: tuple[Any, ...]) -> _StoredHead:
    version, claim, format, changes, change_bytes, data_bytes, record_id = row
    head = checked_head(thread_id, version, claim, format, record_id)
    if not all(type(n) is int and n >= 0 for n in (changes, change_bytes, data_bytes)):
        raise StoreError(f"thread {quoted_name(thread_id)}: the stored record's change counts are damaged "
                         f"({', '.join(quoted_name(n) for n in (changes, change_bytes, data_bytes))})",
                         thread_id=thread_id)
    # (the row's own value is kept for the UPDATE's condition)
    return _StoredHead(head=head, changes=changes,
                       change_bytes=change_bytes, data_bytes=data_bytes, record_id=record_id)


def _record(thread_id: str, rows: list[tuple[Any, ...]]) -> tuple[tuple[Any, ...], bytes, list[bytes]]:
    """A ``_SELECT_RECORD`` answer as its head columns, its data and its changes, checked against each other."""
    _check_parts(thread_id, rows[0][3], [row[5] for row in rows])
    return rows[0][:5], rows[0][6], [row[6] for row in rows[1:]]


def _holds_parts(conn: sqlite3.Connection, thread_id: str, text: bytes, parts: list[bytes]) -> bool:
    """Whether the thread's record holds exactly the data ``text`` and the changes ``parts``, now."""
    rows = conn.execute(_SELECT_RECORD, (thread_id,)).fetchall()
    return bool(rows) and _record(thread_id, rows)[1:] == (text, parts)


def _check_parts(thread_id: str, changes: Any, seqs: list[Any]) -> None:
    """The parts a head promises, data (0) then changes ``1 .. changes``, are the parts stored."""
    if type(changes) is not int or seqs != list(range(changes + 1)):
        found = "none" if seqs == [None] else f"{len(seqs)}"
        raise _damaged(thread_id, f"its head counts {quoted_name(changes)} changes after its data, but {found} parts "
                                  "are stored")


#: The columns each table layout's tables have: a file lacking one is another application's (one with more is
#: judged by ``_unknown_schema``, as a store's tables changed by hand).
_COLUMNS: dict[int, dict[str, frozenset[str]]] = {
    1: {"agui_threads": frozenset({"thread_id", "version", "data", "claim", "format"})},
    2: {"agui_threads": frozenset({"thread_id", "version", "claim", "format", "changes", "change_bytes", "data_bytes"}),
        "agui_thread_parts": frozenset({"thread_id", "seq", "body"})},
}
_COLUMNS[3] = {**_COLUMNS[2], "agui_threads": _COLUMNS[2]["agui_threads"] | {"record_id"}}


def _foreign_layout(conn: sqlite3.Connection, layout: int) -> str | None:
    """Why the open file is another application's database and not a store (``None``: it is a store, a
    newer one, or a new file).

    Every layout sets ``user_version`` in the transaction that makes its tables, so a file without one
    that holds tables is someone else's: making ours beside them would also set the file's one
    ``user_version``, which the other application may read as its own schema's number. A file whose
    number is a layout's must have that layout's tables and columns; sqlite's own words for one that
    does not ("table agui_threads already exists", "no such column") said nothing of what the file was.
    """
    tables = [name for (name,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
        " ORDER BY name")]
    if layout == 0:
        return None if not tables else f"it holds the tables {_names(tables)} and no agui_client table layout"
    expected = _COLUMNS.get(layout)
    if expected is None:
        # (a newer layout is judged by its name alone: its columns are a later release's to say)
        return None if layout > _SCHEMA_VERSION and "agui_threads" in tables else (
            f"its user_version is {layout}, which no agui_client table layout uses, and it holds "
            f"the tables {_names(tables)}")
    for table, columns in expected.items():
        if table not in tables:
            return f"its user_version is {layout}, agui_client's table layout {layout}, but it has no {table} table"
        found = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        if not columns <= found:
            return (f"its {table} table has the columns {_names(sorted(found))}, not those of agui_client's "
                    f"table layout {layout}")
    return None


#: A schema as compared: rows of ``sqlite_master`` (type, name, table, statement) whose table is one of
#: ``_TABLES``, names in ASCII lower case (as SQLite compares them), statements as ``_normalised`` gives.
_Schema = frozenset[tuple[str, str, str, str | None]]
#: The tables any layout has. The store's statements touch these alone, and SQLite runs a schema
#: object (a trigger, an index's expressions, a constraint) only for a statement on its own table: the
#: rest of the file (an application's tables, views, their triggers; ANALYZE's statistics) runs nothing
#: a store does, and a file shared so keeps working, as it did.
_TABLES = frozenset({"agui_threads", "agui_thread_parts"})
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def _normalised(statement: str) -> str:
    """A ``CREATE`` statement as compared: white space collapsed (none around brackets and commas), ASCII
    lower case, and a quoted name of plain letters unquoted. SQLite reads the forms alike, and two
    statements that differ in anything else (a constraint, a default, a collation, a comment) differ."""
    spaced = re.sub(r"\s*([(),])\s*", r"\1", " ".join(statement.split())).translate(_ASCII_LOWER)
    return re.sub(r'"([a-z_][a-z0-9_]*)"', r"\1", spaced)


def _schema_of(conn: sqlite3.Connection) -> dict[tuple[str, str, str, str | None], str]:
    """The schema of the file's store tables as compared (see ``_Schema``), each row with its object's name
    as the file spells it."""
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    return {(kind, name.translate(_ASCII_LOWER), table.translate(_ASCII_LOWER),
             None if sql is None else _normalised(sql)): name
            for kind, name, table, sql in rows if table.translate(_ASCII_LOWER) in _TABLES}


@functools.cache
def _known_schemas() -> dict[int, frozenset[_Schema]]:
    """Every schema agui_client's own statements leave its tables with, by layout: each layout's tables as
    its release made them, and the current layout's made new or migrated from each earlier one.

    Made once, by running those statements in a database in memory, so the text is SQLite's own for
    them (a renamed table's name quoted, an added column spliced into the statement) and no copy of it
    is kept by hand.
    """
    def made(statements: tuple[str, ...], migrated_from: int | None) -> _Schema:
        with closing(sqlite3.connect(":memory:", isolation_level=None)) as conn:
            for statement in statements:
                conn.execute(statement)
            if migrated_from is not None:
                _migrate(conn, migrated_from)
            return frozenset(_schema_of(conn))

    earlier = {layout: frozenset({made(statements, None)}) for layout, statements in _EARLIER.items()}
    # (layout 0, a new file: none of the store's tables, nor anything on them)
    return {0: frozenset({frozenset()}), **earlier,
            _SCHEMA_VERSION: frozenset({made((), 0), *(made(s, n) for n, s in _EARLIER.items())})}


def _unknown_schema(conn: sqlite3.Connection, layout: int, trusted: frozenset[str] = frozenset()) -> str | None:
    """What the file's store tables carry that agui_client's tables of ``layout`` do not, but for the
    triggers and indexes named in ``trusted`` (``None``: nothing, or a layout this release does not know,
    which the caller judges).

    What SQLite keeps with a table is code and meaning the file brings, run or obeyed by every write to
    it: a trigger that never ends held each claim for ever (in a thread no caller can cancel), one that
    undoes a claim let two replicas send; a CHECK, a DEFAULT or a generated column can compute a
    gigabyte per write; an index runs its expressions and its WHERE clause on every write; a collation
    or a type of the file's own changes what a claim compares, and a table without its primary key
    lets two claims both win. So the tables and all they carry must be exactly what agui_client's own
    statements leave, nothing more.
    """
    known = _known_schemas().get(layout)
    # (the operator's own objects, by the name the file spells: compared as if they were not there)
    found = {row: name for row, name in _schema_of(conn).items() if not _is_trusted(row, name, trusted)}
    if known is None or frozenset(found) in known:
        return None
    ours: set[tuple[str, str, str, str | None]] = set().union(*known)
    strange = sorted((row for row in found if row not in ours), key=lambda row: (row[0], row[1]))
    triggers = [found[row] for row in strange if row[0] == "trigger"]
    indexes = [found[row] for row in strange if row[0] == "index"]
    changed = [found[row] for row in strange if row[0] == "table"]
    others = [f"{row[0]} {quoted_name(found[row], 40)}" for row in strange
              if row[0] not in ("trigger", "index", "table")]
    why = []
    if triggers:
        why.append(f"its tables carry the triggers {_names(triggers)}, code of the file's own that every write "
                   "would run; agui_client makes none")
    if indexes:
        why.append(f"its tables carry the indexes {_names(indexes)}, whose expressions and conditions every write "
                   "would compute; agui_client makes none but its primary keys'")
    if changed:
        why.append(f"its tables {_names(changed)} are not made as agui_client makes them (a column, a constraint, "
                   "a default, a collation or a type of the file's own, which every write would run or obey)")
    if others:
        why.append(f"it holds {', '.join(others[:8])} under the names of agui_client's tables")
    shown = "; ".join(why) or "its tables lack what agui_client makes with them (a primary key's index)"
    return shown + untrusted_note(_absent(conn, trusted))


#: The objects a store may be told to trust: those with a name of their own on its tables.
_TRUSTABLE = ("trigger", "index")


def _trusted_objects(names: Iterable[str]) -> frozenset[str]:
    """``trusted_objects`` checked (see :func:`~agui_client.stores.base.trusted_names`), refusing the store's
    own tables and SQLite's names: trusting a table would trust any change to its columns and keys, and
    ``sqlite_`` names are SQLite's (a primary key's index), made by the statements already compared."""
    trusted = trusted_names("SqliteStore", names)
    wrong = sorted(name for name in trusted
                   if name.translate(_ASCII_LOWER) in _TABLES or name.translate(_ASCII_LOWER).startswith("sqlite_"))
    if wrong:
        raise ValueError(f"SqliteStore trusts triggers and indexes by name, not the table or SQLite object "
                         f"{quoted_name(wrong[0])}: what a store table is made of is always judged")
    return trusted


def _is_trusted(row: tuple[str, str, str, str | None], name: str, trusted: frozenset[str]) -> bool:
    return row[0] in _TRUSTABLE and name in trusted


def _absent(conn: sqlite3.Connection, trusted: frozenset[str]) -> list[str]:
    """The trusted names that no trigger or index on the store's tables has, in order."""
    if not trusted:
        return []
    present = {name for row, name in _schema_of(conn).items() if row[0] in _TRUSTABLE}
    return sorted(trusted - present)


def _names(names: list[str]) -> str:
    shown = ", ".join(quoted_name(name, 40) for name in names[:8])
    return shown + (f" and {len(names) - 8} more" if len(names) > 8 else "") if names else "none"


def _advice(exc: sqlite3.Error, path: str) -> str:
    """What the person can do about a sqlite3 error that is about the file itself (``""``: nothing to add)."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name.startswith("SQLITE_READONLY"):
        return ("; this process cannot write the file, or the directory it is in (SQLite writes its -wal and "
                "-shm files there): a store writes on every run, so give it a file and a directory it can write")
    if name.startswith("SQLITE_CANTOPEN"):
        if os.path.isdir(path):
            return "; the path is a directory: name a file (in that directory, say)"
        return "; check that the file's directory exists and that this process can create and write files in it"
    if name == "SQLITE_NOTADB":
        return "; the file is not a SQLite database: give SqliteStore a file of its own (a new path)"
    return ""


def _shown_path(path: str) -> str:
    """The path for a message: as a URL is shown when it is one (someone gave a DSN: no credentials), and
    escaped where ``repr`` would (a NUL, a line break), cut short when long."""
    shown = displayed_url(path) if "://" in path else path
    return quoted_name(shown, 200)


def _listed_id(path: str, thread_id: Any) -> str:
    # A row another tool wrote may hold a number or bytes as its id (SQLite keeps what it is given).
    if type(thread_id) is not str:
        raise StoreError(f"SQLite store {path}: a stored thread id is not text ({quoted_name(thread_id)})")
    return thread_id


def _damaged(thread_id: str, why: str) -> StoreError:
    return StoreError(f"thread {quoted_name(thread_id)}: the stored record is damaged: {why}", thread_id=thread_id)
