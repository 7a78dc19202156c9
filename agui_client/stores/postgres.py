"""``PostgresStore``: threads in a PostgreSQL table, shared by every replica that reaches the database.

Layout: one table (``agui_threads`` unless named otherwise) with a row per thread::

    thread_id TEXT PRIMARY KEY, version BIGINT, data TEXT, claim TEXT, format INTEGER

``data`` is the JSON text of ``ThreadState.dump()``, exactly as the SQLite store keeps it (``TEXT``
rather than ``jsonb``: ``jsonb`` would reorder keys and drop duplicates, and the record would no longer
be the one the other stores hold). ``claim`` is the owner token of an in-flight run, ``NULL`` when
nobody holds one. The table's comment numbers its layout (``agui-client thread store, layout 1``) so
a later release can migrate it and this one refuses a newer layout.

Every write is one statement in its own transaction (the connection is in autocommit mode), so
PostgreSQL's row lock does the compare-and-set:

* a write to a stored version is a conditional ``UPDATE ... WHERE thread_id = $1 AND version = $2``
  (plus, for a claim, "nobody holds one"; for a release, "the owner holds it"; for every write, "the
  record is of a format this release reads"). Two writers updating the same row queue on its lock,
  and the second re-checks the condition against the first one's result, so exactly one advances it;
* the first write of a thread (a creating save, or the first turn's claim) is the ``INSERT ... ON
  CONFLICT (thread_id) DO NOTHING`` of its row: of writers racing on a new thread id, one inserts.

When a write touches no row, the store reads the row and hands it to
:func:`~agui_client.stores.base.check_write`, which raises the error every store raises (or, for a
claim whose owner's own earlier claim is already there, recognises it).

A write returns once PostgreSQL has committed it; how durable a commit is past a crash of the
server is the server's configuration (``synchronous_commit``, ``fsync``; the defaults flush the WAL
at every commit). A killed client leaves the previous version or the next one, never half a write.

``psycopg`` (version 3) is imported when a ``PostgresStore`` is made, so ``agui_client`` imports
without the ``postgres`` extra.
"""

from __future__ import annotations

import select
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..errors import StoreError
from .base import (
    STORE_FORMAT_VERSION,
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

if TYPE_CHECKING:
    import psycopg
    from psycopg import sql

__all__ = ["PostgresStore"]

#: The table layout this release creates and reads, kept in the table's comment.
_LAYOUT = 1
_COMMENT = "agui-client thread store, layout {}"
#: Idle connections kept for reuse; more are opened when more threads write at once, then closed.
_MAX_IDLE = 8
#: Rounds of "the write touched no row, yet the row read afterwards would allow it" before giving up:
#: only a delete and a re-create between the two statements does that, and it cannot go on for long.
_ATTEMPTS = 3

_CREATE = """
CREATE TABLE {table} (
    thread_id TEXT PRIMARY KEY NOT NULL,
    version BIGINT NOT NULL,
    data TEXT NOT NULL,
    claim TEXT,
    format INTEGER NOT NULL
)
"""
_INSERT = ("INSERT INTO {table} (thread_id, version, data, claim, format) VALUES (%s, %s, %s, %s, %s)"
           " ON CONFLICT (thread_id) DO NOTHING")
_HEAD = "SELECT version, claim, format FROM {table} WHERE thread_id = %s"
_LOAD = "SELECT version, data, claim, format FROM {table} WHERE thread_id = %s"
_DELETE = "DELETE FROM {table} WHERE thread_id = %s"
# The conditional updates: each mirrors check_write's rule for its operation. A stored empty owner
# (a row written by another tool) holds no claim, as checked_head reads it.
_UPDATES: dict[Operation, str] = {
    "save": ("UPDATE {table} SET version = version + 1, data = %(data)s, claim = NULL, format = %(ours)s"
             " WHERE thread_id = %(thread_id)s AND version = %(expected)s AND format <= %(ours)s"),
    "claim": ("UPDATE {table} SET version = version + 1, claim = %(owner)s"
              " WHERE thread_id = %(thread_id)s AND version = %(expected)s AND format <= %(ours)s"
              " AND (claim IS NULL OR claim = '')"),
    "release": ("UPDATE {table} SET version = version + 1, claim = NULL"
                " WHERE thread_id = %(thread_id)s AND version = %(expected)s AND format <= %(ours)s"
                " AND claim = %(owner)s"),
}


class PostgresStore(_Base):
    """Threads in a PostgreSQL table, for applications whose replicas share one database.

    Args:
        dsn: a libpq connection string, ``"host=db dbname=app user=app"`` or
            ``"postgresql://app@db/app"``. The password, if it holds one, never appears in an error.
        table: the table (``"name"`` or ``"schema.name"``); created on first use, with its primary key.
        connect_timeout: seconds a new connection may take before the call fails with ``StoreError``.

    The role needs ``SELECT``, ``INSERT``, ``UPDATE`` and ``DELETE`` on the table, and ``CREATE`` on
    the schema only while the table does not exist yet.

    Raises:
        ImportError: the ``postgres`` extra (psycopg 3) is not installed.
        StoreError: the server cannot be reached, the table cannot be created, or it holds a newer layout.

    Example::

        with PostgresStore("postgresql://app@127.0.0.1/app") as store:
            version = store.claim("t1", expected_version=3, owner=token)
    """

    def __init__(self, dsn: str, *, table: str = "agui_threads", connect_timeout: float = 10.0) -> None:
        try:
            import psycopg
            from psycopg import sql
        except ImportError as exc:
            raise ImportError("PostgresStore needs the postgres extra: pip install 'agui-client[postgres]'") from exc
        parts = table.split(".")
        if not table or len(parts) > 2 or not all(parts):
            raise ValueError(f"PostgresStore needs a table name or schema.name, not {table!r}")
        self._psycopg = psycopg
        self._dsn = dsn
        self._connect_timeout = connect_timeout
        self._where = _describe(dsn, table)
        identifier = sql.Identifier(*parts)
        self._sql: dict[str, sql.Composed] = {
            name: sql.SQL(text).format(table=identifier)
            for name, text in [("insert", _INSERT), ("head", _HEAD), ("load", _LOAD), ("delete", _DELETE),
                               ("create", _CREATE), *_UPDATES.items()]
        }
        self._identifier = identifier
        self._lock = threading.Lock()
        # A small pool, as the SQLite store keeps: a connection is a server process, too dear to open
        # per call, and connections tied to threads would pile up as threads come and go. A pooled
        # connection serves one thread at a time.
        self._idle: list[psycopg.Connection[Any]] = []
        self._closed = False
        try:
            with self._connection() as conn:
                self._create_table(conn)
        except BaseException:
            self.close()
            raise

    # -- the protocol --------------------------------------------------------------------------------

    def load(self, thread_id: str) -> StoredThread | None:
        """The stored thread, or ``None`` when there is none.

        Raises:
            StoreError: PostgreSQL failed, the store is closed, or the record is unreadable or of a
                newer format.
        """
        try:
            with self._connection(thread_id) as conn:
                row = conn.execute(self._sql["load"], (thread_id,)).fetchone()
        except _ConnectionLost:
            # A read changes nothing: read again on a fresh connection.
            with self._connection(thread_id, fresh=True) as conn:
                row = conn.execute(self._sql["load"], (thread_id,)).fetchone()
        if row is None:
            return None
        version, text, claim, format = row
        return _decode_record(thread_id, version=version, text=text, claim=claim, format=format)

    def save(self, thread_id: str, data: Mapping[str, Any], *, expected_version: int | None) -> int:
        """Compare-and-set the thread's data; see :meth:`ThreadStore.save`.

        Raises:
            ConcurrentResume: the stored version is not ``expected_version`` (or the thread exists, for a create).
            StoreError: the data is not JSON-ready, PostgreSQL failed, the store is closed, or the
                record is of a newer format.
        """
        text = _as_text(_encode_data(thread_id, data))
        return self._write(thread_id, "save", expected_version=expected_version, owner=None, text=text)

    def claim(self, thread_id: str, *, expected_version: int | None, owner: str,
              data: Mapping[str, Any] | None = None) -> int:
        """Claim the thread for a run (``expected_version=None``: create it claimed, with ``data``);
        see :meth:`ThreadStore.claim`.

        A claim whose reply is lost (the connection broke after the statement was sent) is sent once
        more on a fresh connection: the claim is recognised by its owner, so the second attempt either
        lands or finds the first one, and never claims twice.

        Raises:
            ConcurrentResume: the version moved on, somebody holds a claim, or (a create) the thread exists.
            StoreError: the data is not JSON-ready, PostgreSQL failed (twice, for a broken connection),
                the store is closed, or the record is of a newer format.
        """
        _check_owner(owner)
        created = _creation_data(thread_id, expected_version, data)
        return self._write(thread_id, "claim", expected_version=expected_version, owner=owner,
                           text=None if created is None else _as_text(created))

    def release(self, thread_id: str, *, claimed_version: int, owner: str) -> int:
        """Undo a claim; see :meth:`ThreadStore.release`.

        Raises:
            ConcurrentResume: the version moved on, or ``owner`` does not hold the claim.
            StoreError: PostgreSQL failed, the store is closed, or the record is of a newer format.
        """
        _check_owner(owner)
        return self._write(thread_id, "release", expected_version=claimed_version, owner=owner, text=None)

    def delete(self, thread_id: str) -> None:
        """Forget the thread (nothing happens when there is none).

        Raises:
            StoreError: PostgreSQL failed, or the store is closed.
        """
        try:
            with self._connection(thread_id) as conn:
                conn.execute(self._sql["delete"], (thread_id,))
        except _ConnectionLost:
            # Deleting twice deletes once: delete again on a fresh connection.
            with self._connection(thread_id, fresh=True) as conn:
                conn.execute(self._sql["delete"], (thread_id,))

    def close(self) -> None:
        """Close the store's connections; later calls raise ``StoreError``. Closing twice is fine."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    # -- internals -------------------------------------------------------------------------------------

    def _write(self, thread_id: str, operation: Operation, *, expected_version: int | None, owner: str | None,
               text: str | None) -> int:
        try:
            return self._write_once(thread_id, operation, expected_version=expected_version, owner=owner, text=text)
        except _ConnectionLost:
            if operation != "claim":
                raise  # (a save or a release sent again would be refused by its own landing)
            return self._write_once(thread_id, operation, expected_version=expected_version, owner=owner, text=text,
                                    fresh=True)

    def _write_once(self, thread_id: str, operation: Operation, *, expected_version: int | None,
                    owner: str | None, text: str | None, fresh: bool = False) -> int:
        with self._connection(thread_id, fresh=fresh) as conn:
            for _attempt in range(_ATTEMPTS):
                if expected_version is None:
                    # The first write of a thread: its row's insert is the compare-and-set.
                    assert text is not None  # (a create always carries its data)
                    new_version = 1 if operation == "save" else 0
                    inserted = conn.execute(self._sql["insert"], (
                        thread_id, new_version, text, owner if operation == "claim" else None, STORE_FORMAT_VERSION,
                    )).rowcount
                    if inserted == 1:
                        return new_version
                else:
                    params = {"thread_id": thread_id, "expected": expected_version, "owner": owner, "data": text,
                              "ours": STORE_FORMAT_VERSION}
                    if conn.execute(self._sql[operation], params).rowcount == 1:
                        return expected_version + 1
                # Refused: the rules, applied to the row as it is now, name the error (or recognise
                # the owner's own claim, stored by an earlier attempt whose reply was lost).
                row = conn.execute(self._sql["head"], (thread_id,)).fetchone()
                head = None if row is None else checked_head(thread_id, *row)
                new = _check_write(thread_id, head, operation, expected_version=expected_version, owner=owner)
                if head is not None and new == head:
                    return head.version
                # The row changed between the two statements (deleted and written again) into one
                # the write is allowed on: try it again.
        raise StoreError(f"thread {thread_id!r} kept changing under a {operation} in {self._where}; try again",
                         thread_id=thread_id)

    def _create_table(self, conn: psycopg.Connection[Any]) -> None:
        name = self._identifier.as_string(conn)
        with conn.transaction():
            # Two processes creating the same table at once would collide on the catalog's unique
            # index; a transaction-scoped advisory lock on the table's name lines them up.
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"agui_client store {name}",))
            exists = conn.execute("SELECT to_regclass(%s)", (name,)).fetchone()
            if exists is None or exists[0] is None:
                conn.execute(self._sql["create"])
                conn.execute(self._psycopg.sql.SQL("COMMENT ON TABLE {} IS {}").format(
                    self._identifier, self._psycopg.sql.Literal(_COMMENT.format(_LAYOUT))))
                return
            row = conn.execute("SELECT obj_description(to_regclass(%s), 'pg_class')", (name,)).fetchone()
        comment = "" if row is None or row[0] is None else str(row[0])
        layout = _layout(comment)
        if layout is not None and layout > _LAYOUT:
            raise StoreError(f"PostgreSQL store {self._where}: table layout {layout} is newer than this release "
                             f"reads ({_LAYOUT}); upgrade agui-client")

    @contextmanager
    def _connection(self, thread_id: str | None = None, *, fresh: bool = False) -> Iterator[psycopg.Connection[Any]]:
        """A connection for one operation (``fresh``: a new one, never an idle one); ``psycopg.Error``
        leaves as ``StoreError``, or ``_ConnectionLost`` when the connection broke under it."""
        conn = None if fresh else self._take_idle(thread_id)
        if fresh:
            with self._lock:
                if self._closed:
                    raise _closed(thread_id)
        try:
            if conn is None:
                # No server-side prepared statements: each statement is a primary-key lookup that
                # plans in microseconds, and a pooler between replicas and the server (PgBouncer in
                # transaction mode) may hand the next statement to a connection that never saw it.
                conn = self._psycopg.connect(self._dsn, autocommit=True, prepare_threshold=None,
                                             connect_timeout=_seconds(self._connect_timeout))
            yield conn
        except self._psycopg.Error as exc:
            where = f"thread {thread_id!r} in " if thread_id is not None else ""
            lost = conn is not None and conn.broken
            error = (_ConnectionLost if lost else StoreError)(
                f"PostgreSQL store failed for {where}{self._where}: {_first_line(exc)}", thread_id=thread_id)
            raise error from exc
        finally:
            if conn is not None:
                self._give_back(conn)

    def _take_idle(self, thread_id: str | None) -> psycopg.Connection[Any] | None:
        """An idle connection that still looks alive, or ``None``."""
        while True:
            with self._lock:
                if self._closed:
                    raise _closed(thread_id)
                if not self._idle:
                    return None
                conn = self._idle.pop()
            if not conn.closed and not conn.broken and not _has_input(conn):
                return conn
            # An idle connection has nothing to read unless the server ended it (a restart, a
            # terminated backend, an idle timeout): its notice and end of stream are waiting. Using
            # it would fail the call, and a save on it could not be sent again.
            conn.close()

    def _give_back(self, conn: psycopg.Connection[Any]) -> None:
        # A lost race (ConcurrentResume) leaves a healthy connection; a broken one, or one left inside
        # a transaction by an error, is closed.
        reuse = (not conn.closed and not conn.broken
                 and conn.info.transaction_status == self._psycopg.pq.TransactionStatus.IDLE)
        with self._lock:
            if reuse and not self._closed and len(self._idle) < _MAX_IDLE:
                self._idle.append(conn)
                return
        conn.close()


class _ConnectionLost(StoreError):
    """The connection broke during a call: the statement may have run, its reply is lost."""


def _has_input(conn: psycopg.Connection[Any]) -> bool:
    # poll() where there is one: select() refuses descriptors past FD_SETSIZE, common in a busy server.
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(conn.fileno(), select.POLLIN)
            return bool(poller.poll(0))
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def _describe(dsn: str, table: str) -> str:
    """Where the store is, for errors: host, port, database and table, never the password."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        params = conninfo_to_dict(dsn)
    except Exception:  # noqa: BLE001 - an unparsable DSN is reported by connect(); here it is only a label
        return f"table {table}"
    host = params.get("host") or params.get("hostaddr") or "localhost"
    port = params.get("port") or "5432"
    database = params.get("dbname") or params.get("user") or ""
    return f"{host}:{port}/{database} table {table}"


def _layout(comment: str) -> int | None:
    # The layout number closes the comment this store writes; a table another tool made (no such
    # comment) is read as layout 1, its columns are what the statements need or they fail.
    prefix = _COMMENT.format("")
    if comment.startswith(prefix) and comment[len(prefix):].isdigit():
        return int(comment[len(prefix):])
    return None


def _seconds(timeout: float) -> int:
    # libpq takes whole seconds, and reads 0 as "wait forever".
    return max(1, round(timeout))


def _first_line(exc: BaseException) -> str:
    # libpq's messages name the host and user but never the password; only the first line is kept,
    # the rest is hints and context.
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _as_text(encoded: str | bytes) -> str:
    # Stored as TEXT whatever the encoder gave, so the column reads the same to psql and to any tool.
    return encoded.decode("utf-8") if isinstance(encoded, bytes) else encoded
