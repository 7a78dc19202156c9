"""``PostgresStore``: threads in a PostgreSQL table, shared by every replica that reaches the database.

Layout 3: two tables. The thread table (``agui_threads`` unless named otherwise) holds a row per
thread, its *head*::

    thread_id TEXT PRIMARY KEY, version BIGINT, data TEXT, claim TEXT, format INTEGER,
    data_version BIGINT, changes INTEGER, change_bytes BIGINT, record_id TEXT

and the change table (the same name with ``_changes`` after it, in the same schema) a row per run's
change appended since the data was written (:meth:`PostgresStore.append`)::

    thread_id TEXT, seq BIGINT, body TEXT, PRIMARY KEY (thread_id, seq)

``data`` is the JSON text of ``ThreadState.dump()``, exactly as the SQLite store keeps it (``TEXT``
rather than ``jsonb``: ``jsonb`` would reorder keys and drop duplicates, and the record would no longer
be the one the other stores hold). ``claim`` is the owner token of an in-flight run, ``NULL`` when
nobody holds one. A change's ``seq`` is the version its append created, and ``data_version`` the
version whose thread ``data`` holds whole: the thread is ``data`` with the changes of ``seq`` above
``data_version`` (and up to ``version``) folded in, in order. ``changes`` and ``change_bytes`` count
those changes, for the compaction policy; the data's size is ``octet_length(data)``, which PostgreSQL
reads from the value's header without fetching it. ``record_id`` is the id the record got when its
row was inserted (see ``IncrementalStore``'s record ids); no update changes it, and ``NULL`` is a record an
earlier layout made. The thread table's comment numbers its layout
(``agui-client thread store, layout 3``) so a later release can migrate it and this one refuses a
newer layout. A layout-1 table (one row per thread, no change table) or a layout-2 one (no
``record_id``) is migrated when a store opens it: the missing columns are added (with their
defaults, or ``NULL``: a catalog change, no row is rewritten) and the change table is created, in one
transaction under the advisory lock that lines up the stores opening it at once.

A listing (:meth:`PostgresStore.thread_ids`) reads an index on ``thread_id COLLATE "C"`` (named
like the change table, with ``_ids`` in place of ``_changes``), which a store makes when it opens a
table that lacks it: the ids in code point order whatever the database's collation, a page one range
of the index, no row read. The index is not a new layout: an earlier release works on the table as
before, and PostgreSQL keeps the index up to date for every writer.

Every write is one statement in its own transaction (the connection is in autocommit mode), so
PostgreSQL's row lock on the head does the compare-and-set:

* a write to a stored version is a conditional ``UPDATE ... WHERE thread_id = $1 AND version = $2``
  of the head (plus, for a claim, "nobody holds one"; for a release, "the owner holds it"; for every
  write, "the record is of a format this release reads"; for a writer that names a record id,
  "the record has that id", so a thread deleted and created again up to the same version refuses it
  in the same statement). Two writers updating the same row queue on
  its lock, and the second re-checks the condition against the first one's result, so exactly one
  advances it. An append is that ``UPDATE`` and the ``INSERT`` of its change row in one statement
  (``WITH head AS (UPDATE ... RETURNING ...) INSERT ... SELECT ... FROM head``): the change row is
  written only when the head moved, and both commit together;
* the first write of a thread (a creating save, or the first turn's claim) is the ``INSERT ... ON
  CONFLICT (thread_id) DO NOTHING`` of its row: of writers racing on a new thread id, one inserts;
* every write (its ``UPDATE``, a new thread's ``INSERT``, each of a delete's two statements) is a
  data-modifying ``WITH`` whose outer query first asks, in the same statement, that the tables carry no
  trigger or rule but PostgreSQL's own and the trusted ones (``_GATE``): one added after the store
  opened them fails the statement before its write runs, so it runs in no write, not even a
  statement-level one; nothing is written, and a claim refused so sends nothing (``STORE-SCHEMA``).
  A release asks about the thread table alone, the only one it writes.

An append writes the change and a new version of the head row, never the data: PostgreSQL's
``UPDATE`` writes a new row version, but a ``data`` large enough to matter lives out of line (TOAST)
and an unchanged out-of-line value is kept by its pointer, not copied; only a small one (about 2 KiB
or less once compressed) sits in the row and is copied with it. A claim and a release are the same
kind of head update, so neither rewrites the thread either. A load reads the head and its changes in
one statement, one snapshot.

Now and then (the store's :class:`~agui_client.stores.base.Compaction` policy, checked after each
append) the appender folds the changes into the data: it loads the thread (one statement) and folds it
with no lock held, then writes the folded data in one conditional statement that sets
``data_version`` to the version, zeroes the counters and deletes the folded change rows, only if the
row still has the version, change count and record id it folded (a write in between wins, and a later
append folds). A record without an id (an earlier release's) is locked for that statement and read
again first: it is folded only if it is still the very record folded. The thread's other writers never
wait for the fold; the version, the claim and what a load returns never change.

When a write touches no row, the store reads the row and hands it to
:func:`~agui_client.stores.base.check_write`, which raises the error every store raises (or, for a
claim whose owner's own earlier claim is already there, recognises it).

A write returns once PostgreSQL has committed it; how durable a commit is past a crash of the
server is the server's configuration (``synchronous_commit``, ``fsync``; the defaults flush the WAL
at every commit). A killed client leaves the previous version or the next one, never half a write,
and a compaction cut short leaves the changes unfolded.

``psycopg`` (version 3) is imported when a ``PostgresStore`` is made, so ``agui_client`` imports
without the ``postgres`` extra.
"""

from __future__ import annotations

import hashlib
import logging
import re
import select
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from .._inert import quoted_name
from ..core.redact import MARK, Redactor, redact_exception
from ..errors import StoreError
from .base import (
    STORE_FORMAT_VERSION,
    Compaction,
    Operation,
    StoredThread,
    as_text,
    check_owner,
    check_page,
    check_record_id,
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

if TYPE_CHECKING:
    import psycopg
    from psycopg import sql

# A double-quoted fragment of a libpq message.
_QUOTED = re.compile(r'"([^"]*)"')

#: The stores' logger (base.py logs a skipped compaction to it too).
_log = logging.getLogger("agui_client.stores")

#: What a read returns (``_read``).
_T = TypeVar("_T")

__all__ = ["PostgresStore"]


#: The table layout this release creates and reads, kept in the table's comment.
#:
#: * 1: the thread table alone (thread_id, version, data, claim, format).
#: * 2: the thread table gains data_version, changes, change_bytes, and the change table holds the
#:   changes appended since the data was written.
#: * 3: the thread table gains record_id, the id the record got when it was created.
_LAYOUT = 3
_COMMENT = "agui-client thread store, layout {}"
#: Idle connections kept for reuse; more are opened when more threads write at once, then closed.
_MAX_IDLE = 8
#: Rounds of "the write touched no row, yet the row read afterwards would allow it" before giving up:
#: only a delete and a re-create between the two statements does that, and it cannot go on for long.
_ATTEMPTS = 3
#: PostgreSQL keeps the first 63 bytes of a name (NAMEDATALEN - 1) and drops the rest.
_NAME_BYTES = 63
_CHANGES_SUFFIX = "_changes"
_IDS_SUFFIX = "_ids"

_CREATE = """
CREATE TABLE {table} (
    thread_id TEXT PRIMARY KEY NOT NULL,
    version BIGINT NOT NULL,
    data TEXT NOT NULL,
    claim TEXT,
    format INTEGER NOT NULL,
    data_version BIGINT NOT NULL DEFAULT 0,
    changes INTEGER NOT NULL DEFAULT 0,
    change_bytes BIGINT NOT NULL DEFAULT 0,
    record_id TEXT
)
"""
# Layout 1 to 2: the columns a layout-1 row lacks, with defaults that describe it (its data is the
# whole thread, nothing appended); a constant default is a catalog entry, no row is rewritten.
_MIGRATE = [
    "ALTER TABLE {table} ADD COLUMN IF NOT EXISTS data_version BIGINT NOT NULL DEFAULT 0",
    "ALTER TABLE {table} ADD COLUMN IF NOT EXISTS changes INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE {table} ADD COLUMN IF NOT EXISTS change_bytes BIGINT NOT NULL DEFAULT 0",
    # Layout 2 to 3: a record an earlier release made has no id (NULL, no default: nothing rewritten).
    "ALTER TABLE {table} ADD COLUMN IF NOT EXISTS record_id TEXT",
]
_CREATE_CHANGES = """
CREATE TABLE IF NOT EXISTS {changes} (
    thread_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (thread_id, seq)
)
"""
# The triggers and rules on the store's tables (the two names, as to_regclass reads them; a missing
# table is NULL and matches nothing). PostgreSQL's own (a foreign key's triggers, a view's _RETURN
# rule) are internal and left out. Any role may read these catalogs.
_FOREIGN_CODE = (
    "SELECT kind, name FROM ("
    " SELECT 'trigger' AS kind, tgname::text AS name, tgrelid AS rel FROM pg_trigger WHERE NOT tgisinternal"
    " UNION ALL SELECT 'rule', rulename::text, ev_class FROM pg_rewrite WHERE rulename <> '_RETURN'"
    ") AS found WHERE rel IN (to_regclass(%s), to_regclass(%s)) ORDER BY kind DESC, name"
)
# What every write asks first, in its own statement (no round trip of its own): that the store's tables
# carry no trigger or rule but PostgreSQL's own and those trusted, now. Each write is a data-modifying
# ``WITH`` whose outer query holds this test as a condition on no row: PostgreSQL evaluates such a
# condition once, before the outer query reads anything, so before the ``WITH``'s write runs at all,
# and a write runs its statement-level triggers only when it runs (row-level ones when it touches a
# row). The test fails the statement (a cast PostgreSQL refuses, its words naming the reason, in the
# server's log too) rather than filtering it: a write the outer query never read is still run to its
# end once the outer query is done, and its statement-level triggers with it. So a trigger or a rule
# added after the store opened the tables runs in no write, not even a ``FOR EACH STATEMENT`` one, and the
# store says why (``PostgresStore._refuse_code_since``). ``format`` is a stable function: the planner
# leaves the cast to run time, where the ``CASE`` reaches it only when the test found something. Both
# tables, whichever the write touches, but for a release (``code_changes`` NULL): a claim lets a run send
# whose changes go to the change table, a release lets nothing be sent and touches the thread table alone.
_GATE = ("(CASE WHEN EXISTS (SELECT 1 FROM pg_trigger"
         " WHERE tgrelid IN (to_regclass(%(code_table)s), to_regclass(%(code_changes)s))"
         " AND NOT tgisinternal AND tgname <> ALL(%(code_trusted)s::text[])"
         " UNION ALL SELECT 1 FROM pg_rewrite"
         " WHERE ev_class IN (to_regclass(%(code_table)s), to_regclass(%(code_changes)s))"
         " AND rulename <> ALL(%(code_trusted)s::text[]))"
         " THEN format('agui_client store: its tables carry a trigger or a rule it does not trust;"
         " nothing was written')::integer END) IS NULL")
# A thread's first write (a creating save, or the first turn's claim): its row's insert.
_INSERT = ("WITH head AS (INSERT INTO {table} (thread_id, version, data, claim, format, data_version, record_id)"
           " VALUES (%(thread_id)s, %(version)s, %(data)s, %(owner)s, %(format)s, %(version)s, %(record_id)s)"
           " ON CONFLICT (thread_id) DO NOTHING RETURNING version) SELECT version FROM head WHERE {gate}")
# What a refused write reads: the head (its columns NULL when there is none).
_HEAD = ("SELECT h.version, h.claim, h.format, h.record_id FROM (SELECT) AS one"
         " LEFT JOIN {table} AS h ON h.thread_id = %(thread_id)s")
# The head and the changes the thread is made of, in one statement: one snapshot, never a torn read.
# Only the changes above data_version (those below were folded, or dropped by a save) and up to the
# version (a row left past it by anything else is not part of this thread), and none for a record
# that an earlier release wrote whole (format 1: its data is the thread).
_LOAD = ("SELECT version, data, claim, format, changes, record_id, ARRAY(SELECT body FROM {changes} AS c"
         " WHERE c.thread_id = h.thread_id AND h.format >= 2 AND c.seq > h.data_version AND c.seq <= h.version"
         " ORDER BY c.seq) FROM {table} AS h WHERE thread_id = %s")
# Forgetting a thread forgets its changes: two statements in one transaction, the head first. Its
# delete waits out an append in flight (the head row's lock) and the second statement, with a
# snapshot of its own, then sees that append's change row too; a single statement's one snapshot
# would leave it behind, to be read into a thread created again under the id. Each asks ``_GATE``: a
# trigger added on the change table between the two is refused by the second (and the head's delete
# rolled back with it). The outer query reads neither delete: each runs once it is done.
_DELETE_HEAD = "WITH gone AS (DELETE FROM {table} WHERE thread_id = %(thread_id)s) SELECT WHERE {gate}"
_DELETE_CHANGES = "WITH gone AS (DELETE FROM {changes} WHERE thread_id = %(thread_id)s) SELECT WHERE {gate}"
# The conditional updates: each mirrors check_write's rule for its operation. A stored empty owner
# (a row written by another tool) holds no claim, as checked_head reads it. A statement answers one
# row when it wrote (the head) and none when its condition refused it. ``{record}`` is where a writer
# that names a record id adds "the record has that id" (_RECORD); a record without one (NULL, made by
# an earlier release) has no id a writer could name, so it refuses that writer, as check_write does.
_UPDATES: dict[Operation, str] = {
    # The whole thread again: the changes are dropped with it (those above the new data_version, none).
    "save": ("WITH head AS (UPDATE {table} SET version = version + 1, data = %(data)s, claim = NULL,"
             " format = %(ours)s, data_version = version + 1, changes = 0, change_bytes = 0"
             " WHERE thread_id = %(thread_id)s AND version = %(expected)s AND format <= %(ours)s{record}"
             " RETURNING version),"
             " dropped AS (DELETE FROM {changes} WHERE thread_id = %(thread_id)s AND seq <= (SELECT version FROM head))"
             " SELECT version FROM head WHERE {gate}"),
    # One change: the head moves (the data stays where it is) and the change row is added. A record
    # an earlier release wrote whole (format 1) starts its changes at its current version. A row
    # already at the new seq can only be left over from a deleted thread of the same id: replaced.
    "append": ("WITH head AS (UPDATE {table} SET version = version + 1, claim = NULL, format = %(ours)s,"
               " data_version = CASE WHEN format < 2 THEN version ELSE data_version END,"
               " changes = CASE WHEN format < 2 THEN 0 ELSE changes END + 1,"
               " change_bytes = CASE WHEN format < 2 THEN 0 ELSE change_bytes END + octet_length(%(data)s)"
               " WHERE thread_id = %(thread_id)s AND version = %(expected)s AND format <= %(ours)s{record}"
               " RETURNING version, changes, change_bytes, octet_length(data) AS data_bytes),"
               " added AS (INSERT INTO {changes} (thread_id, seq, body) SELECT %(thread_id)s, version, %(data)s"
               " FROM head ON CONFLICT (thread_id, seq) DO UPDATE SET body = EXCLUDED.body)"
               " SELECT version, changes, change_bytes, data_bytes FROM head WHERE {gate}"),
    "claim": ("WITH head AS (UPDATE {table} SET version = version + 1, claim = %(owner)s"
              " WHERE thread_id = %(thread_id)s AND version = %(expected)s AND format <= %(ours)s"
              " AND (claim IS NULL OR claim = ''){record} RETURNING version) SELECT version FROM head WHERE {gate}"),
    "release": ("WITH head AS (UPDATE {table} SET version = version + 1, claim = NULL"
                " WHERE thread_id = %(thread_id)s AND version = %(expected)s AND format <= %(ours)s"
                " AND claim = %(owner)s{record} RETURNING version) SELECT version FROM head WHERE {gate}"),
}
# A compaction: the folded data replaces data and changes at once, if nobody wrote since the load it
# was built from (same version, same change count, same record: a thread deleted and created again
# up to that version and count is another record); the version and the claim stay as they are.
_COMPACT = ("WITH head AS (UPDATE {table} SET data = %(data)s, data_version = version, changes = 0, change_bytes = 0"
            " WHERE thread_id = %(thread_id)s AND version = %(version)s AND changes = %(changes)s"
            " AND format = %(ours)s AND record_id IS NOT DISTINCT FROM %(record_id)s::text"
            " RETURNING version),"
            " dropped AS (DELETE FROM {changes} WHERE thread_id = %(thread_id)s AND seq <= (SELECT version FROM head))"
            " SELECT version FROM head WHERE {gate}")
_RECORD = " AND (%(record_id)s::text IS NULL OR record_id = %(record_id)s)"
# A compaction of a record without an id holds its row (see PostgresStore._compact) while it reads it again.
_LOCK = "SELECT 1 FROM {table} WHERE thread_id = %s FOR UPDATE"
# The listing: thread ids alone, in code point order whatever the database's collation ("C" compares
# the UTF-8 bytes), read from the index on the ids in that order (_CREATE_IDS) with no row fetched.
_IDS_FIRST = 'SELECT thread_id FROM {table} ORDER BY thread_id COLLATE "C" LIMIT %s'
_IDS_AFTER = 'SELECT thread_id FROM {table} WHERE thread_id COLLATE "C" > %s ORDER BY thread_id COLLATE "C" LIMIT %s'
# The primary key's index is in the database's collation, which "C" order cannot use (unless the
# database's is "C" too, and even then the planner matches collations by name): a second, narrow index
# on the ids alone. PostgreSQL keeps it up to date for every writer, an earlier release's included.
_CREATE_IDS = 'CREATE INDEX IF NOT EXISTS {ids} ON {table} (thread_id COLLATE "C")'


class PostgresStore(_Base):
    """Threads in a PostgreSQL table, for applications whose replicas share one database.

    Args:
        dsn: a libpq connection string, ``"host=db dbname=app user=app"`` or
            ``"postgresql://app@db/app"``. The password, if it holds one, never appears in an error.
        table: the thread table (``"name"`` or ``"schema.name"``); created on first use, with its primary
            key, and its change table (``name_changes``; when that would pass PostgreSQL's 63 bytes,
            the name cut short, a hash of it and ``_changes``).
        connect_timeout: seconds a new connection may take before the call fails with ``StoreError``.
        compaction: when appended changes are folded into the thread's data (the default:
            :class:`~agui_client.stores.base.Compaction`).
        trusted_objects: names of triggers and rules on the two tables that the operator vouches for
            (an audit trigger, say), as the catalog spells them; every other trigger or rule is still
            refused. A name is compared exactly and trusts whatever carries it, on either table, so
            the operator owns what it does: a trusted trigger that clears or rewrites the claim breaks
            the one-sender guarantee (two replicas send the same resume), and one that waits holds
            every write. A trusted name found on neither table is warned about
            (``STORE-TRUSTED-ABSENT``), not refused.

    The role needs ``SELECT``, ``INSERT``, ``UPDATE`` and ``DELETE`` on both tables, and ``CREATE`` on
    the schema while they do not exist yet (or ownership of a layout-1 table, to migrate it).

    Raises:
        ImportError: the ``postgres`` extra (psycopg 3) is not installed.
        StoreError: the server cannot be reached, the tables cannot be created or migrated, the
            table holds a newer layout, or the tables carry a trigger or a rule not named in
            ``trusted_objects`` (``code`` ``STORE-SCHEMA``: either runs inside every write, and can
            clear or rewrite a claim).
        ValueError: ``trusted_objects`` is a single string, or holds an empty name or one that is not
            a string.

    Example::

        with PostgresStore("postgresql://app@127.0.0.1/app") as store:
            version = store.claim("t1", expected_version=3, owner=token)
    """

    def __init__(self, dsn: str, *, table: str = "agui_threads", connect_timeout: float = 10.0,
                 compaction: Compaction | None = None, trusted_objects: Iterable[str] = ()) -> None:
        try:
            import psycopg
            from psycopg import sql
        except ImportError as exc:
            raise ImportError("PostgresStore needs the postgres extra: pip install 'agui-client[postgres]'") from exc
        parts = table.split(".")
        if not table or len(parts) > 2 or not all(parts):
            raise ValueError(f"PostgresStore needs a table name or schema.name, not {table!r}")
        self._trusted = trusted_names("PostgresStore", trusted_objects)
        self.compaction = compaction or Compaction()
        self._psycopg = psycopg
        self._dsn = dsn
        self._connect_timeout = connect_timeout
        self._where = _describe(dsn, table)
        self._redact = _dsn_redactor(dsn)
        identifier = sql.Identifier(*parts)
        changes = sql.Identifier(*parts[:-1], _changes_name(parts[-1]))
        # (an index lives in its table's schema: its name in CREATE INDEX is never qualified)
        self._ids_index = (*parts[:-1], _changes_name(parts[-1], _IDS_SUFFIX))
        self._sql: dict[str, sql.Composed] = {
            name: sql.SQL(text).format(table=identifier, changes=changes, ids=sql.Identifier(self._ids_index[-1]),
                                       gate=sql.SQL(_GATE))
            for name, text in [("insert", _INSERT), ("head", _HEAD), ("load", _LOAD), ("delete_head", _DELETE_HEAD),
                               ("delete_changes", _DELETE_CHANGES), ("ids_first", _IDS_FIRST),
                               ("ids_after", _IDS_AFTER), ("create_ids", _CREATE_IDS),
                               ("create", _CREATE), ("create_changes", _CREATE_CHANGES), ("compact", _COMPACT),
                               ("lock", _LOCK),
                               *((f"migrate{i}", text) for i, text in enumerate(_MIGRATE))]
        }
        for operation, text in _UPDATES.items():
            self._sql[operation] = sql.SQL(text).format(table=identifier, changes=changes, record=sql.SQL(_RECORD),
                                                        gate=sql.SQL(_GATE))
        self._identifier = identifier
        self._changes = changes
        # What every write's check of the tables' code (_GATE) is given: their names, as the open's
        # catalog query spells them (set there), and the trusted names; a release's names the thread
        # table alone (the only one it writes).
        self._code_params: dict[str, Any] = {"code_table": None, "code_changes": None,
                                             "code_trusted": sorted(self._trusted)}
        self._release_code: dict[str, Any] = {}
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
        check_thread_id(thread_id, stored=True)
        row = self._load_row(thread_id)
        if row is None:
            return None
        version, text, claim, format, count, record_id, changes = row
        _check_count(thread_id, format, count, changes)
        return decode_record(thread_id, version=version, text=text, claim=claim, format=format, changes=changes,
                              record_id=record_id)

    def save(self, thread_id: str, data: Mapping[str, Any], *, expected_version: int | None,
             record_id: str | None = None) -> int:
        """Compare-and-set the thread's data; see :meth:`ThreadStore.save`.

        Raises:
            ConcurrentResume: the stored version is not ``expected_version`` (or the thread exists, for a create),
                or the record's id is not ``record_id``.
            StoreError: the data is not JSON-ready, PostgreSQL failed, the store is closed, the
                record is of a newer format, or the tables carry a trigger or a rule not trusted, added
                since the store opened them (``code`` ``STORE-SCHEMA``; nothing was written).
        """
        check_thread_id(thread_id)
        text = as_text(encode_data(thread_id, data))
        return self._write(thread_id, "save", expected_version=expected_version, owner=None, text=text,
                           record_id=record_id)

    def append(self, thread_id: str, changes: Mapping[str, Any], *, expected_version: int,
               record_id: str | None = None) -> int:
        """Compare-and-set one run's changes onto the thread; see :meth:`IncrementalStore.append`.

        One statement moves the head and adds the change row; the data is not written. When the
        store's ``compaction`` says so, the changes are then folded into the data (a failure there is
        logged at debug level and leaves them unfolded: the append has landed). Like a save, an append
        whose reply is lost is not sent again: its own landing would refuse it.

        Raises:
            ConcurrentResume: the stored version is not ``expected_version``, the thread is gone, or the
                record's id is not ``record_id``.
            StoreError: the changes are not JSON-ready, PostgreSQL failed, the store is closed, the
                record is of a newer format, or the tables carry a trigger or a rule not trusted, added
                since the store opened them (``code`` ``STORE-SCHEMA``; nothing was written).
        """
        check_thread_id(thread_id)
        text = as_text(encode_data(thread_id, changes))
        version, counts = self._write_counted(thread_id, "append", expected_version=expected_version, owner=None,
                                              text=text, record_id=record_id)
        fold_when_due(f"PostgreSQL store {self._where}", thread_id, self.compaction, counts,
                       lambda: self._compact(thread_id))
        return version

    def claim(self, thread_id: str, *, expected_version: int | None, owner: str,
              data: Mapping[str, Any] | None = None, record_id: str | None = None) -> int:
        """Claim the thread for a run (``expected_version=None``: create it claimed, with ``data``);
        see :meth:`ThreadStore.claim`.

        A claim whose reply is lost (the connection broke after the statement was sent) is sent once
        more on a fresh connection: the claim is recognised by its owner, so the second attempt either
        lands or finds the first one, and never claims twice.

        Raises:
            ConcurrentResume: the version moved on, somebody holds a claim, (a create) the thread exists, or
                the record's id is not ``record_id``.
            StoreError: the data is not JSON-ready, PostgreSQL failed (twice, for a broken connection),
                the store is closed, the record is of a newer format, or the tables carry a trigger or a
                rule not trusted, added since the store opened them (``code`` ``STORE-SCHEMA``: the
                claim's own statement asks, and nothing was claimed).
        """
        check_thread_id(thread_id)
        check_owner(owner)
        created = creation_data(thread_id, expected_version, data)
        return self._write(thread_id, "claim", expected_version=expected_version, owner=owner,
                           text=None if created is None else as_text(created), record_id=record_id)

    def release(self, thread_id: str, *, claimed_version: int, owner: str, record_id: str | None = None) -> int:
        """Undo a claim; see :meth:`ThreadStore.release`.

        Raises:
            ConcurrentResume: the version moved on, ``owner`` does not hold the claim, or the record's id
                is not ``record_id``.
            StoreError: PostgreSQL failed, the store is closed, the record is of a newer format, or the
                tables carry a trigger or a rule not trusted, added since the store opened them (``code``
                ``STORE-SCHEMA``; nothing was written).
        """
        check_thread_id(thread_id)
        check_owner(owner)
        return self._write(thread_id, "release", expected_version=claimed_version, owner=owner, text=None,
                           record_id=record_id)

    def delete(self, thread_id: str) -> None:
        """Forget the thread (nothing happens when there is none).

        Raises:
            StoreError: PostgreSQL failed, the store is closed, or the tables carry a trigger or a rule
                not trusted, added since the store opened them (``code`` ``STORE-SCHEMA``; nothing was
                deleted).
        """
        check_thread_id(thread_id, stored=True)
        try:
            with self._connection(thread_id) as conn:
                self._delete(conn, thread_id)
        except _ConnectionLost:
            # Deleting twice deletes once: delete again on a fresh connection.
            with self._connection(thread_id, fresh=True) as conn:
                self._delete(conn, thread_id)

    def _delete(self, conn: psycopg.Connection[Any], thread_id: str) -> None:
        params = {"thread_id": thread_id, **self._code_params}
        try:
            with conn.transaction():
                conn.execute(self._sql["delete_head"], params)
                conn.execute(self._sql["delete_changes"], params)
        except self._psycopg.Error:
            # (the transaction is rolled back: the head stays when the second statement refuses)
            self._refuse_code_since(conn, thread_id, "delete")
            raise

    def thread_ids(self, *, after: str | None = None, limit: int = 100) -> list[str]:
        """Up to ``limit`` ids of the stored threads after ``after``, in code point order; see
        :class:`~agui_client.stores.ListingStore`.

        One statement, a range of the ids' index (``thread_id COLLATE "C"``, made when the store opens
        the table): no row of the table is read, and the page costs the same for ten threads or ten
        million.

        Raises:
            ValueError: ``limit`` is out of range, or ``after`` is not a string.
            StoreError: PostgreSQL failed (twice, for a broken connection), or the store is closed.
        """
        check_page(after, limit)
        query, params = ((self._sql["ids_first"], (limit,)) if after is None
                         else (self._sql["ids_after"], (after, limit)))
        rows = self._read(None, lambda conn: conn.execute(query, params).fetchall())
        return [str(row[0]) for row in rows]

    def close(self) -> None:
        """Close the store's connections; later calls raise ``StoreError``. Closing twice is fine."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    # -- internals -------------------------------------------------------------------------------------

    def _write(self, thread_id: str, operation: Operation, *, expected_version: int | None, owner: str | None,
               text: str | None, record_id: str | None) -> int:
        return self._write_counted(thread_id, operation, expected_version=expected_version, owner=owner, text=text,
                                   record_id=record_id)[0]

    def _write_counted(self, thread_id: str, operation: Operation, *, expected_version: int | None,
                       owner: str | None, text: str | None, record_id: str | None
                       ) -> tuple[int, tuple[int, int, int] | None]:
        """The new version, and for an append that landed the record's data bytes, change bytes and
        change count (what the compaction policy weighs)."""
        check_record_id(record_id)  # (refused before anything is sent)
        check_version(thread_id, expected_version)  # (past the last version, the bigint would overflow)
        try:
            return self._write_once(thread_id, operation, expected_version=expected_version, owner=owner, text=text,
                                    record_id=record_id)
        except _ConnectionLost:
            if operation != "claim":
                raise  # (a save, an append or a release sent again would be refused by its own landing)
            return self._write_once(thread_id, operation, expected_version=expected_version, owner=owner, text=text,
                                    record_id=record_id, fresh=True)

    def _write_once(self, thread_id: str, operation: Operation, *, expected_version: int | None,
                    owner: str | None, text: str | None, record_id: str | None, fresh: bool = False
                    ) -> tuple[int, tuple[int, int, int] | None]:
        with self._connection(thread_id, fresh=fresh) as conn:
            for _attempt in range(_ATTEMPTS):
                if expected_version is None:
                    # The first write of a thread: its row's insert is the compare-and-set.
                    assert text is not None  # (a create always carries its data)
                    new = _check_write(thread_id, None, operation, expected_version=None, owner=owner,
                                       record_id=record_id)
                    inserted = self._gated(conn, thread_id, operation, "insert", {
                        "thread_id": thread_id, "version": new.version, "data": text, "owner": new.claim,
                        "format": new.format, "record_id": new.record_id, **self._code_params,
                    }).rowcount
                    if inserted == 1:
                        return new.version, None
                else:
                    code = self._release_code if operation == "release" else self._code_params
                    params = {"thread_id": thread_id, "expected": expected_version, "owner": owner, "data": text,
                              "ours": STORE_FORMAT_VERSION, "record_id": record_id, **code}
                    cursor = self._gated(conn, thread_id, operation, operation, params)
                    if cursor.rowcount == 1:
                        if operation == "append":
                            _version, changes, change_bytes, data_bytes = cursor.fetchone() or (0, 0, 0, 0)
                            return expected_version + 1, (data_bytes, change_bytes, changes)
                        return expected_version + 1, None
                # Refused by the rules, which, applied to the row as it is now, name the error (or recognise
                # the owner's own claim, stored by an earlier attempt whose reply was lost).
                found = conn.execute(self._sql["head"], {"thread_id": thread_id}).fetchone()
                assert found is not None  # (one row, whatever the table holds)
                version, *row = found
                head = None if version is None else checked_head(thread_id, version, *row)
                new = _check_write(thread_id, head, operation, expected_version=expected_version, owner=owner,
                                   record_id=record_id)
                if head is not None and new == head:
                    return head.version, None
                # The row changed between the two statements (deleted and written again) into one
                # the write is allowed on: try it again.
        raise StoreError(f"thread {quoted_name(thread_id)} kept changing under a {operation} in {self._where}; try "
                         "again",
                         thread_id=thread_id)

    def _load_row(self, thread_id: str) -> tuple[Any, ...] | None:
        """The head (version, data, claim, format, change count) and the changes to fold, in one snapshot."""
        return self._read(thread_id, lambda conn: conn.execute(self._sql["load"], (thread_id,)).fetchone())

    def _read(self, thread_id: str | None, read: Callable[[psycopg.Connection[Any]], _T]) -> _T:
        """``read`` on a connection, and once more on a fresh one when the connection broke under it (a
        read changes nothing, so it is safe to repeat)."""
        try:
            with self._connection(thread_id) as conn:
                return read(conn)
        except _ConnectionLost:
            with self._connection(thread_id, fresh=True) as conn:
                return read(conn)

    def _compact(self, thread_id: str) -> bool:
        """Fold the thread's changes into its data; whether it did (not when the thread is gone, has no
        changes to fold, or was written between the read and the write).

        The thread is read (one statement, one snapshot) and folded with no lock held, so its other
        writers do not wait while a big thread is decoded, folded and encoded again; the write is one
        conditional statement that lands only if the row still has the version, change count and
        record id that were folded (an append moves the first two, a save the version, a delete and a
        create the record id). A write in between wins, and the next append's compaction folds. A record
        without an id has none to tell a thread deleted and made again (by a process of an earlier
        release) from it: its row is locked and read again in the write's transaction, and folded only if
        it is still the very record folded.
        """
        row = self._load_row(thread_id)
        if row is None:
            return False
        version, text, _claim, format, count, record_id, changes = row
        if format != STORE_FORMAT_VERSION or not changes:
            return False
        _check_count(thread_id, format, count, changes)
        folded = as_text(compacted(thread_id, text, changes))
        params = {"thread_id": thread_id, "version": version, "changes": count, "data": folded,
                  "ours": STORE_FORMAT_VERSION, "record_id": record_id}
        # (no second attempt on a lost connection: the next append's compaction will do)
        with self._connection(thread_id) as conn:
            try:
                with conn.transaction():
                    if record_id is None:
                        # A record without an id (made by an earlier release, or by a process of it still
                        # running) has none to tell a thread made again from it, up to the same version and
                        # change count: its row is held (its writers wait, for a read) and it must still be
                        # the very record folded.
                        conn.execute(self._sql["lock"], (thread_id,))
                        if conn.execute(self._sql["load"], (thread_id,)).fetchone() != row:
                            return False
                    return conn.execute(self._sql["compact"], {**params, **self._code_params}).rowcount == 1
            except self._psycopg.Error:
                # (refused by a trigger or a rule added since the append: STORE-SCHEMA, which the caller
                # logs; the transaction is rolled back, so the catalog can be asked)
                self._refuse_code_since(conn, thread_id, "compaction")
                raise

    def _create_table(self, conn: psycopg.Connection[Any]) -> None:
        name = self._identifier.as_string(conn)
        self._code_params.update(code_table=name, code_changes=self._changes.as_string(conn))
        self._release_code = {**self._code_params, "code_changes": None}
        sql = self._psycopg.sql
        with conn.transaction():
            # Two processes creating (or migrating) the same table at once would collide on the
            # catalog's unique index; a transaction-scoped advisory lock on the table's name lines them up.
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"agui_client store {name}",))
            self._refuse_foreign_code(conn, name)
            exists = conn.execute("SELECT to_regclass(%s)", (name,)).fetchone()
            if exists is None or exists[0] is None:
                conn.execute(self._sql["create"])
                layout = None
            else:
                row = conn.execute("SELECT obj_description(to_regclass(%s), 'pg_class')", (name,)).fetchone()
                comment = "" if row is None or row[0] is None else str(row[0])
                # A table another tool made (no such comment) is read as layout 1.
                layout = _layout(comment) or 1
                if layout > _LAYOUT:
                    raise StoreError(f"PostgreSQL store {self._where}: table layout {layout} is newer than this "
                                     f"release reads ({_LAYOUT}); upgrade agui-client")
                if layout == _LAYOUT:
                    self._create_ids_index(conn)
                    return
                for i in range(len(_MIGRATE)):
                    conn.execute(self._sql[f"migrate{i}"])
            conn.execute(self._sql["create_changes"])
            self._create_ids_index(conn)
            conn.execute(sql.SQL("COMMENT ON TABLE {} IS {}").format(
                self._identifier, sql.Literal(_COMMENT.format(_LAYOUT))))

    def _gated(self, conn: psycopg.Connection[Any], thread_id: str, operation: str, statement: str,
               params: Mapping[str, Any]) -> psycopg.Cursor[Any]:
        """Run a write's statement (one that asks ``_GATE``); when it fails, say why if the reason is a
        trigger or a rule added since the store opened the tables (``_refuse_code_since``)."""
        try:
            return conn.execute(self._sql[statement], params)
        except self._psycopg.Error:
            # (also a rule PostgreSQL will not apply inside a write's WITH, DO ALSO or DO INSTEAD NOTHING
            # say, which fails the statement before it runs)
            self._refuse_code_since(conn, thread_id, operation)
            raise

    def _refuse_code_since(self, conn: psycopg.Connection[Any], thread_id: str, operation: str) -> None:
        """After a write's statement failed: ``StoreError`` (``STORE-SCHEMA``, naming the thread) when a
        trigger or a rule not trusted is on the tables the write asked about, added after the store opened
        them (the statement's own test, ``_GATE``, failed it, or PostgreSQL refused such a rule in it);
        nothing when none is, or the connection cannot ask (gone; the statement's own error then stands). A
        round trip of its own only here, after a failure."""
        if conn.broken or conn.info.transaction_status != self._psycopg.pq.TransactionStatus.IDLE:
            return
        changes = None if operation == "release" else self._changes.as_string(conn)
        untrusted, _ = self._foreign_code(conn, self._identifier.as_string(conn), changes)
        if untrusted:
            sent = ", and nothing was sent" if operation == "claim" else ""
            # (a run's save refused so may leave its claim held: the release asks too, see _GATE)
            held = (". A run whose save this was may keep its claim: thread.release_claim() gives it back once "
                    "they are gone" if operation in ("save", "append") else "")
            raise StoreError(
                f"PostgreSQL store {self._where}: its tables carry {_kinds(untrusted)}, added after the store "
                "opened them, which agui_client does not make: a trigger or a rule runs with every write and can "
                f"clear or rewrite a claim (two replicas then send the same resume); the {operation} wrote nothing"
                f"{sent}. Drop them (DROP TRIGGER … ON …, DROP RULE … ON …), or name them in trusted_objects if you "
                f"vouch for what they do{held}",
                thread_id=thread_id, code="STORE-SCHEMA")

    def _foreign_code(self, conn: psycopg.Connection[Any], name: str, changes: str | None
                      ) -> tuple[list[tuple[str, str]], list[str]]:
        """The triggers and rules on the store's tables (the change table's ``changes``: ``None`` leaves it
        out) not trusted (kind, name), and the trusted names on neither table."""
        found = [(str(kind), str(n)) for kind, n in conn.execute(_FOREIGN_CODE, (name, changes)).fetchall()]
        untrusted = [(kind, n) for kind, n in found if n not in self._trusted]
        return untrusted, sorted(self._trusted - {n for _, n in found})

    def _refuse_foreign_code(self, conn: psycopg.Connection[Any], name: str) -> None:
        """``StoreError`` (``STORE-SCHEMA``) when the store's tables carry a trigger or a rule the operator
        did not vouch for (``trusted_objects``); a warning (``STORE-TRUSTED-ABSENT``) for a trusted name
        that is on neither table.

        Either runs with the store's writes and can undo what they rely on: a trigger that clears the
        claim (or a rule that rewrites the claim's ``UPDATE``) lets two replicas both send the same
        resume, and either can run any query, for as long as it likes, inside every claim. agui_client
        makes none. Looked at when the store opens the tables (a catalog query, under the advisory
        lock), and by every write's own statement (``_GATE``), so one added later
        is refused before a run sends anything.
        """
        untrusted, absent = self._foreign_code(conn, name, self._changes.as_string(conn))
        if untrusted:
            raise StoreError(
                f"PostgreSQL store {self._where}: its tables carry {_kinds(untrusted)}, which agui_client does not make"
                f"{untrusted_note(absent)}: a trigger or a rule runs with every write and can clear or rewrite a "
                "claim (two replicas then send the same resume); nothing was changed. Drop them (DROP TRIGGER … "
                "ON …, DROP RULE … ON …), name them in trusted_objects if you vouch for what they do, or give "
                "the store a table of its own", code="STORE-SCHEMA")
        if absent:
            warn_trusted_absent(f"PostgreSQL store {self._where}", absent, "trigger or rule", "its tables")

    def _create_ids_index(self, conn: psycopg.Connection[Any]) -> None:
        """The listing's index, made when missing (a table an earlier release made, or one made by hand).

        Not a new layout: an earlier release reads and writes the table as before (PostgreSQL keeps the
        index up to date for it), so replicas can be upgraded one at a time. Looked up first, since a
        ``CREATE INDEX`` takes a lock that waits for the table's writes even when the index exists.
        Building it on a large table holds its writes for the build (seconds for millions of rows);
        ``CREATE INDEX CONCURRENTLY`` under the same name beforehand avoids that (see docs/stores.md).
        A role that may not create it (not the table's owner) opens the table as before.
        """
        name = self._psycopg.sql.Identifier(*self._ids_index).as_string(conn)
        found = conn.execute("SELECT to_regclass(%s)", (name,)).fetchone()
        if found is None or found[0] is None:
            try:
                with conn.transaction():  # (a savepoint: a refusal leaves the opening transaction usable)
                    conn.execute(self._sql["create_ids"])
            except self._psycopg.errors.InsufficientPrivilege as exc:
                # Only the table's owner may index it. A store connecting as another role worked before
                # this index existed and still must: its listing reads the ids without it (correct, in
                # the same order, one scan of the table's ids per page) until the owner creates it.
                _log.debug("PostgreSQL store %s: the listing's index %s is missing and this role may not "
                           "create it (%s); listings scan the table until its owner does", self._where, name,
                           self._redact(_first_line(exc)))

    @contextmanager
    def _connection(self, thread_id: str | None = None, *, fresh: bool = False) -> Iterator[psycopg.Connection[Any]]:
        """A connection for one operation (``fresh``: a new one, never an idle one); ``psycopg.Error``
        leaves as ``StoreError``, or ``_ConnectionLost`` when the connection broke under it."""
        conn = None if fresh else self._take_idle(thread_id)
        if fresh:
            with self._lock:
                if self._closed:
                    raise store_closed(thread_id)
        try:
            if conn is None:
                # No server-side prepared statements: each statement is a primary-key lookup that
                # plans in microseconds, and a pooler between replicas and the server (PgBouncer in
                # transaction mode) may hand the next statement to a connection that never saw it.
                conn = self._psycopg.connect(self._dsn, autocommit=True, prepare_threshold=None,
                                             connect_timeout=_seconds(self._connect_timeout))
            yield conn
        except self._psycopg.Error as exc:
            where = f"thread {quoted_name(thread_id)} in " if thread_id is not None else ""
            lost = conn is not None and conn.broken
            error = (_ConnectionLost if lost else StoreError)(
                f"PostgreSQL store failed for {where}{self._where}: {self._redact(_first_line(exc))}",
                thread_id=thread_id)
            raise error from redact_exception(exc, self._redact)
        finally:
            if conn is not None:
                self._give_back(conn)

    def _take_idle(self, thread_id: str | None) -> psycopg.Connection[Any] | None:
        """An idle connection that still looks alive, or ``None``."""
        while True:
            with self._lock:
                if self._closed:
                    raise store_closed(thread_id)
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


def _kinds(found: list[tuple[str, str]]) -> str:
    """Triggers and rules (kind, name) as a refusal names them: quoted as ids, eight of each at most."""
    kinds = {kind: [quoted_name(n, 40) for k, n in found if k == kind][:8] for kind, _ in found}
    return " and ".join(f"the {kind}s {', '.join(names)}" for kind, names in kinds.items())


def _check_count(thread_id: str, format: int, count: int, changes: list[str]) -> None:
    # A change row missing (or one too many) would fold another thread than the one written: refused.
    if format >= 2 and len(changes) != count:
        raise StoreError(f"thread {quoted_name(thread_id)}: the record counts {count} changes, the change table holds "
                         f"{len(changes)} of them", thread_id=thread_id)


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
    # comment) is read as layout 1 and migrated: its columns are what the statements need or they fail.
    prefix = _COMMENT.format("")
    if comment.startswith(prefix) and comment[len(prefix):].isdigit():
        return int(comment[len(prefix):])
    return None


def _changes_name(table: str, suffix: str = _CHANGES_SUFFIX) -> str:
    """The change table's name for the thread table ``table`` (no schema): ``table_changes``, or, when
    that would pass PostgreSQL's 63 bytes, the table's name cut short, a hash of it and ``_changes``
    (so two long names that share their start still get two change tables). Another ``suffix`` names
    the table's other objects (``_ids``: the listing's index) the same way."""
    # PostgreSQL itself cuts the thread table's name at 63 bytes (on a character boundary): hashing
    # what it keeps makes the long and the cut spelling of one table name the same change table.
    kept = _clip(table, _NAME_BYTES)
    name = kept + suffix
    if len(name.encode("utf-8")) <= _NAME_BYTES:
        return name
    digest = hashlib.sha256(kept.encode("utf-8")).hexdigest()[:8]
    tail = f"_{digest}{suffix}"
    return _clip(kept, _NAME_BYTES - len(tail)) + tail


def _clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes, never inside a character."""
    return text.encode("utf-8")[:limit].decode("utf-8", errors="ignore")


def _seconds(timeout: float) -> int:
    # libpq takes whole seconds, and reads 0 as "wait forever".
    return max(1, round(timeout))


def _dsn_redactor(dsn: str) -> Callable[[str], str]:
    """What keeps a DSN's secrets out of an error: its password (and a URI's userinfo and secret query
    values), in the forms the client's redactor looks for, and every fragment of the DSN a libpq message
    quotes but the host, port, database and user it names: libpq quotes what it could not read
    (``missing "=" after "pass-1234"``, for a password holding an unquoted space)."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        params = conninfo_to_dict(dsn)
    except Exception:  # noqa: BLE001 - an unparsable DSN: every fragment of it libpq quotes is replaced
        params = {}
    named = {str(params[key]) for key in ("host", "hostaddr", "port", "dbname", "user") if params.get(key)}
    password = params.get("password")
    secrets = Redactor.of([("password", str(password))] if password else [], [dsn] if "://" in dsn else [])

    def quoted_part(found: re.Match[str]) -> str:
        part = found[1]
        # (a mark of punctuation, "=", is libpq's own word; a name the DSN gives is kept, as _describe shows it)
        return MARK if len(part) > 2 and part in dsn and part not in named else found[0]

    return lambda text: _QUOTED.sub(quoted_part, secrets.text(text))


def _first_line(exc: BaseException) -> str:
    # Only the first line of libpq's message is kept, the rest is hints and context (the DSN's secrets
    # are taken out by _dsn_redactor: libpq quotes the parts of a DSN it could not read).
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__

