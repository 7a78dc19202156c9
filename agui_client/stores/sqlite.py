"""``SqliteStore``: threads in one SQLite file (durable, embedded, shared by the processes of one host).

Layout: one table ``agui_threads(thread_id TEXT PRIMARY KEY, version INTEGER, data TEXT, claim TEXT,
format INTEGER)``; ``data`` is the JSON text of ``ThreadState.dump()``. ``PRAGMA user_version`` numbers
the table layout so a later release can migrate it.

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

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

from ..errors import StoreError
from .base import (
    Head,
    Operation,
    StoredThread,
    _check_owner,
    _closed,
    _creation_data,
    _decode_record,
    _encode_data,
    checked_head,
)
from .base import _StoreBase as _Base
from .base import check_write as _check_write

__all__ = ["SqliteStore"]

_T = TypeVar("_T")

#: ``PRAGMA user_version`` of the table layout this release creates and reads.
_SCHEMA_VERSION = 1
#: Idle connections kept for reuse; more are opened when more threads write at once, then closed.
_MAX_IDLE = 8

_SCHEMA = """
CREATE TABLE IF NOT EXISTS agui_threads (
    thread_id TEXT PRIMARY KEY NOT NULL,
    version INTEGER NOT NULL,
    data TEXT NOT NULL,
    claim TEXT,
    format INTEGER NOT NULL
)
"""


class SqliteStore(_Base):
    """Threads in a SQLite database file, safe to share between threads and processes.

    Args:
        path: the database file (created when missing). ``":memory:"`` is refused: each
            connection would see its own empty database; use ``MemoryStore``.
        timeout: seconds a write waits for another writer's lock before failing with ``StoreError``.

    Raises:
        StoreError: the file cannot be opened, is not a database, cannot use WAL mode, or holds a
            newer table layout.

    Example::

        with SqliteStore("threads.db") as store:
            stored = store.load("t1")
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 30.0) -> None:
        self._path = os.fspath(path)
        if self._path in ("", ":memory:") or self._path.startswith("file:"):
            raise ValueError(f"SqliteStore needs a database file path, not {self._path!r} (use MemoryStore)")
        self._timeout = timeout
        self._lock = threading.Lock()
        # A small pool instead of one connection per call or per thread: closing a WAL database's
        # last connection checkpoints and removes the log (an extra fsync per call), and connections
        # tied to threads would pile up when threads come and go. A pooled connection is used by one
        # thread at a time, so check_same_thread can be off.
        self._idle: list[sqlite3.Connection] = []
        self._closed = False
        try:
            with self._connection() as conn:
                # Persistent in the file: set once here, every later connection opens in WAL mode.
                mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise StoreError(f"SQLite store {self._path}: cannot use WAL journal mode (got {mode!r})")
                self._transaction(conn, self._create_schema)
        except BaseException:
            self.close()
            raise

    # -- the protocol --------------------------------------------------------------------------------

    def load(self, thread_id: str) -> StoredThread | None:
        """The stored thread, or ``None`` when there is none.

        Raises:
            StoreError: the database failed, the store is closed, or the record is unreadable or of a
                newer format.
        """
        with self._connection(thread_id) as conn:
            # One statement outside a transaction reads one committed snapshot.
            row = conn.execute(
                "SELECT version, data, claim, format FROM agui_threads WHERE thread_id = ?", (thread_id,)
            ).fetchone()
        if row is None:
            return None
        version, text, claim, format = row
        return _decode_record(thread_id, version=version, text=text, claim=claim, format=format)

    def save(self, thread_id: str, data: Mapping[str, Any], *, expected_version: int | None) -> int:
        """Compare-and-set the thread's data; see :meth:`ThreadStore.save`.

        Raises:
            ConcurrentResume: the stored version is not ``expected_version`` (or the thread exists, for a create).
            StoreError: the data is not JSON-ready, the database failed, the store is closed, or the
                record is of a newer format.
        """
        return self._write(thread_id, "save", expected_version=expected_version, owner=None,
                           text=_as_text(_encode_data(thread_id, data)))

    def claim(self, thread_id: str, *, expected_version: int | None, owner: str,
              data: Mapping[str, Any] | None = None) -> int:
        """Claim the thread for a run (``expected_version=None``: create it claimed, with ``data``);
        see :meth:`ThreadStore.claim`.

        Raises:
            ConcurrentResume: the version moved on, somebody holds a claim, or (a create) the thread exists.
            StoreError: the data is not JSON-ready, the database failed, the store is closed, or the
                record is of a newer format.
        """
        _check_owner(owner)
        created = _creation_data(thread_id, expected_version, data)
        return self._write(thread_id, "claim", expected_version=expected_version, owner=owner,
                           text=None if created is None else _as_text(created))

    def release(self, thread_id: str, *, claimed_version: int, owner: str) -> int:
        """Undo a claim; see :meth:`ThreadStore.release`.

        Raises:
            ConcurrentResume: the version moved on, or ``owner`` does not hold the claim.
            StoreError: the database failed, the store is closed, or the record is of a newer format.
        """
        _check_owner(owner)
        return self._write(thread_id, "release", expected_version=claimed_version, owner=owner, text=None)

    def delete(self, thread_id: str) -> None:
        """Forget the thread (nothing happens when there is none).

        Raises:
            StoreError: the database failed, or the store is closed.
        """
        with self._connection(thread_id) as conn:
            self._transaction(conn, lambda c: c.execute("DELETE FROM agui_threads WHERE thread_id = ?", (thread_id,)))

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
        text: str | None,
    ) -> int:
        def write(conn: sqlite3.Connection) -> Head:
            row = conn.execute(
                "SELECT version, claim, format FROM agui_threads WHERE thread_id = ?", (thread_id,)
            ).fetchone()
            head = None if row is None else checked_head(thread_id, row[0], row[1], row[2])
            new = _check_write(thread_id, head, operation, expected_version=expected_version, owner=owner)
            if new == head:
                return new  # (the owner's own claim, recognised: nothing to write)
            if head is None:
                assert text is not None  # only a create (a save or a claim) finds no record and passes check_write
                conn.execute(
                    "INSERT INTO agui_threads (thread_id, version, data, claim, format) VALUES (?, ?, ?, ?, ?)",
                    (thread_id, new.version, text, new.claim, new.format),
                )
                return new
            # BEGIN IMMEDIATE already holds the write lock, so the head cannot have moved; the
            # version condition makes the compare-and-set hold even if that ever stops being true.
            cursor = conn.execute(
                "UPDATE agui_threads SET version = ?, claim = ?, format = ?, data = coalesce(?, data)"
                " WHERE thread_id = ? AND version = ?",
                (new.version, new.claim, new.format, text, thread_id, head.version),
            )
            if cursor.rowcount != 1:
                raise StoreError(f"thread {thread_id!r} changed while this writer held the lock", thread_id=thread_id)
            return new

        with self._connection(thread_id) as conn:
            return self._transaction(conn, write).version

    def _transaction(self, conn: sqlite3.Connection, body: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run ``body(conn)`` in one ``BEGIN IMMEDIATE`` transaction; roll back on any exception."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = body(conn)
        except BaseException:
            # SQLite may have rolled back already (a full disk, say); a second ROLLBACK would hide the cause.
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return result

    def _create_schema(self, conn: sqlite3.Connection) -> None:
        (layout,) = conn.execute("PRAGMA user_version").fetchone()
        if layout > _SCHEMA_VERSION:
            raise StoreError(
                f"SQLite store {self._path}: table layout {layout} is newer than this release reads "
                f"({_SCHEMA_VERSION}); upgrade agui-client"
            )
        if layout < _SCHEMA_VERSION:
            conn.execute(_SCHEMA)
            conn.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")

    @contextmanager
    def _connection(self, thread_id: str | None = None) -> Iterator[sqlite3.Connection]:
        """A connection for one operation; ``sqlite3.Error`` leaves as ``StoreError``."""
        with self._lock:
            if self._closed:
                raise _closed(thread_id)
            conn = self._idle.pop() if self._idle else None
        try:
            if conn is None:
                conn = self._connect()
            yield conn
        except sqlite3.Error as exc:
            where = f"thread {thread_id!r} in " if thread_id is not None else ""
            raise StoreError(f"SQLite store failed for {where}{self._path}: {exc}", thread_id=thread_id) from exc
        finally:
            if conn is not None:
                self._give_back(conn)

    def _connect(self) -> sqlite3.Connection:
        # isolation_level=None: no implicit transactions; every write spells out BEGIN IMMEDIATE.
        conn = sqlite3.connect(self._path, timeout=self._timeout, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA synchronous = FULL")
        except BaseException:
            conn.close()
            raise
        return conn

    def _give_back(self, conn: sqlite3.Connection) -> None:
        # A lost race (ConcurrentResume) leaves a healthy connection; one stuck in a transaction does not.
        try:
            reuse = not conn.in_transaction
        except sqlite3.Error:
            reuse = False
        with self._lock:
            if reuse and not self._closed and len(self._idle) < _MAX_IDLE:
                self._idle.append(conn)
                return
        conn.close()


def _as_text(encoded: str | bytes) -> str:
    # Stored as TEXT whatever the encoder gave, so the column reads the same to any SQLite tool.
    return encoded.decode("utf-8") if isinstance(encoded, bytes) else encoded
