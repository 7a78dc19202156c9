"""``RedisStore``: threads in Redis, shared by every replica of an application.

Each thread is one hash at ``<prefix><thread_id>``, so a delete is one ``DEL`` and every write lands
on one key. Its fields (record format 2):

``version``, ``claim``, ``format``
    the head: the version, the owner token of an in-flight run (empty when nobody holds one), and
    the record format;
``data``
    the JSON text of ``ThreadState.dump()`` as last written whole (a save, a thread's creation, or a
    compaction);
``c:1`` … ``c:<n>`` and ``changes`` (*n*)
    the runs' changes appended since (:meth:`RedisStore.append`), each the JSON text of one
    :func:`~agui_client.stores.apply_changes` input, folded onto ``data`` in numeric order on load;
``change_bytes``, ``data_bytes``
    the sizes the :class:`~agui_client.stores.Compaction` policy weighs, kept by the writes so no
    write has to measure the record;
``record``
    the record id (:attr:`~agui_client.stores.StoredThread.record_id`), written when the thread is
    created (the creating write's ``record_id``, or a fresh :func:`~agui_client.stores.new_record_id`)
    and never changed until the hash is deleted. A write that names a ``record_id`` is refused unless
    this field holds it, checked in the same script as the version; a compaction checks it too, so
    neither ever writes into a thread deleted and created again under the same id meanwhile. An
    empty or absent field (a record an earlier release wrote) is no id.

The listing (:meth:`RedisStore.thread_ids`) reads a sorted set of the thread ids (``index_key``, by
default ``agui-ids:<prefix>``), every member at score 0 so that ``ZRANGEBYLEX`` pages it in byte order.
A thread's creation adds its id in the write script that creates the hash, and a delete removes both
in one script, so the index never misses a thread this release made. Threads an earlier release wrote
are added by the first listing on the prefix (``SCAN`` in batches, then the mark
``<index_key>:complete``); an id whose hash is gone is dropped as a listing meets it. Every write
that lands states its thread's entry again (a no-op when it is there), so a thread a process of an
earlier release created after that first listing is listed from this release's next write to it, or
once the mark is deleted (the next listing indexes again): upgrade the processes sharing a prefix
together.

Every write is one Lua script run (``EVALSHA``, falling back to ``EVAL``), so Redis does the
compare-and-set atomically. An append sends only its change: the script adds one ``c:<n>`` field and
updates the head and the counters (``HSET`` of a new field, whatever the size of ``data``); a claim
or a release changes the head alone. Reads are one ``HGETALL``, one consistent snapshot of data and
changes. A compaction (after an append that makes ``compaction.due(...)`` true) reads the record,
folds the changes into new ``data`` in this process, and runs a second script that writes it, drops
the ``c:*`` fields and resets the counters only if the version, the change count and the creation
record id are still what it read, so a racing writer is never lost (a compaction that loses the race is
skipped); for a record without an id, only if its data and changes are still the ones it folded (the
script compares them). Neither script can stop half-way: every check comes before the first write, and Redis
refuses a script over its memory limit only before that first write.

A record of format 1 (``version``, ``data``, ``claim``, ``format`` only, as earlier releases wrote
it) is a format-2 record without changes: it loads as it is, and its next save or append stores it
as format 2 (a claim or a release keeps its format, as in the other stores). It has no record id, and
keeps none: writers that name none write it as before, a writer that names one is refused.

How durable a save is past a Redis restart is Redis's configuration (``appendonly yes`` with
``appendfsync always`` for the strongest promise); the store promises that no reader ever sees half a
write, and that no two writers both advance a thread from the same version.

``redis`` is imported when a ``RedisStore`` is made, so ``agui_client`` imports without the extra.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from attrs import frozen

from .._inert import quoted_name
from ..errors import StoreError
from .base import (
    STORE_FORMAT_VERSION,
    Compaction,
    Operation,
    StoredThread,
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
    new_record_id,
    store_closed,
)
from .base import StoreBase as _Base
from .base import check_write as _check_write

if TYPE_CHECKING:
    import redis as _redis

__all__ = ["RedisStore"]

# Drops the fields c:1 .. c:n (HDEL in slices: Lua's unpack takes a bounded number of values).
_DROP_CHANGES = """
local function drop_changes(key, n)
  local first = 1
  while first <= n do
    local fields = {}
    for i = first, math.min(n, first + 499) do fields[#fields + 1] = 'c:' .. i end
    redis.call('HDEL', key, unpack(fields))
    first = first + 500
  end
end
"""

# KEYS[1]: the thread's hash, KEYS[2]: the listing's index. ARGV: operation, expected version ("" for a
# create), owner, text (the data of a save or a create, the change of an append), format, the thread id
# (a create adds it to the index), the record id a create stores ("" for the other writes), the record
# id the writer names ("": none, nothing checked).
# Returns {1, new version} ({1, new version, data bytes, change bytes, changes} for an append), or
# {0, version as stored ('' when absent), claim, format, record id} when refused: the Python side then runs
# check_write on that head to raise the same error the other stores raise. A claim that finds the very
# claim it asks for (its owner's, one version on; version 0 for a create; of the record it names, if it
# names one) answers that version and writes nothing, as check_write recognises it. Every check comes
# before the first write.
_SCRIPT = _DROP_CHANGES + """
local key = KEYS[1]
local op, expected, owner, text, ours = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local thread_id, created, named = ARGV[6], ARGV[7], ARGV[8]
local head = redis.call('HMGET', key, 'version', 'claim', 'format', 'changes', 'change_bytes', 'data_bytes',
                        'record')
local version = head[1] and tonumber(head[1])
local claim = head[2] or ''
local format = tonumber(head[3] or '1')
local changes = tonumber(head[4] or '0') or 0
local record = head[7] or ''
-- (the version as stored, '' for no record: one that is not a number is a damaged record, not none)
local function refused() return {0, head[1] or '', claim, format, record} end
local function whole(new_version, new_claim)
  -- A save or a creation: the data written whole, the changes appended before it gone.
  if changes > 0 then drop_changes(key, changes) end
  redis.call('HSET', key, 'version', new_version, 'data', text, 'claim', new_claim, 'format', ours,
             'changes', 0, 'change_bytes', 0, 'data_bytes', #text)
  if created ~= '' then redis.call('HSET', key, 'record', created) end
end
if expected == '' and op ~= 'release' and op ~= 'append' then
  if version then
    if op == 'claim' and version == 0 and claim == owner and (named == '' or named == record) then return {1, 0} end
    return refused()
  end
  -- A creation, and the thread's entry in the index with it (the same script: never one without the other).
  redis.call('ZADD', KEYS[2], 0, thread_id)
  if op == 'save' then
    whole(1, '')
    return {1, 1}
  end
  whole(0, owner)
  return {1, 0}
end
expected = tonumber(expected)
if not version or not expected or format > ours then return refused() end
-- (another record under this id: the one the writer held was deleted and created again)
if named ~= '' and named ~= record then return refused() end
if op == 'claim' and claim ~= '' and claim == owner and version == expected + 1 then return {1, version} end
if version ~= expected then return refused() end
if (op == 'claim' and claim ~= '') or (op == 'release' and claim ~= owner) then return refused() end
if op ~= 'save' and op ~= 'append' and op ~= 'claim' and op ~= 'release' then
  return redis.error_reply('agui store: unknown operation ' .. op)
end
-- Every write that lands (re)states the thread's entry in the index, after its checks: a no-op for a
-- thread already there, and the entry of one an earlier release created after the index was built.
-- It is the first write: a key of another kind under the index's name (another application's) fails
-- it, and a script stopped by an error keeps what it wrote before, so nothing else may come first.
redis.call('ZADD', KEYS[2], 0, thread_id)
if op == 'save' then
  whole(version + 1, '')
elseif op == 'append' then
  local n = changes + 1
  -- A format-1 record has no data_bytes yet: HSTRLEN measures the field without reading it out.
  local data_bytes = tonumber(head[6] or '') or redis.call('HSTRLEN', key, 'data')
  local change_bytes = tonumber(head[5] or '0') + #text
  redis.call('HSET', key, 'version', version + 1, 'claim', '', 'format', ours, 'c:' .. n, text,
             'changes', n, 'change_bytes', change_bytes, 'data_bytes', data_bytes)
  return {1, version + 1, data_bytes, change_bytes, n}
elseif op == 'claim' then
  redis.call('HSET', key, 'version', version + 1, 'claim', owner)
else
  redis.call('HSET', key, 'version', version + 1, 'claim', '')
end
return {1, version + 1}
"""

# KEYS[1]: the thread's hash. ARGV: the version, change count and record id the compaction read ('' for none),
# the folded data, the format this release writes; for a record without an id, then the data and the
# changes it folded. Writes the data and drops the changes only if the record has not moved since it was
# read (1), else leaves it alone (0). The version and the claim stay. A record without an id (an earlier
# release's) has none to tell a thread made again from it, up to the same version and change count: its
# data and changes must still be the very ones folded.
_COMPACT = _DROP_CHANGES + """
local key = KEYS[1]
local version, changes, token, text, ours = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], ARGV[4], tonumber(ARGV[5])
local head = redis.call('HMGET', key, 'version', 'changes', 'record', 'format')
if not head[1] or tonumber(head[1]) ~= version or tonumber(head[2] or '0') ~= changes
    or (head[3] or '') ~= token or tonumber(head[4] or '1') > ours or changes < 1 then
  return 0
end
if token == '' then
  if redis.call('HGET', key, 'data') ~= ARGV[6] then return 0 end
  for i = 1, changes do
    if redis.call('HGET', key, 'c:' .. i) ~= ARGV[6 + i] then return 0 end
  end
end
drop_changes(key, changes)
redis.call('HSET', key, 'data', text, 'changes', 0, 'change_bytes', 0, 'data_bytes', #text)
return 1
"""


# KEYS[1]: the thread's hash, KEYS[2]: the listing's index. ARGV[1]: the thread id. A delete forgets both,
# the index entry first: a key of another kind under the index's name fails the script before the hash goes.
_DELETE = """
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('DEL', KEYS[1])
return 1
"""

# KEYS[1]: the listing's index, KEYS[2]: its "every earlier record indexed" mark. ARGV: the prefix, the
# range's start ('-', or '(' and an id), how many ids to look at. Returns {0} when the mark is missing
# (the caller indexes the earlier records first), else {1, ids looked at, the last of them, the ids
# whose hash stands...}. An id whose hash is gone (deleted by an earlier release, which knew no index,
# or by hand, or expired) is dropped from the index here, in the script, so a thread created under it
# meanwhile cannot lose its entry. One run looks at a bounded number of ids, however many are gone:
# the caller asks again from the last one until its page is full or the index ends.
_LIST = """
if redis.call('EXISTS', KEYS[2]) == 0 then return {0} end
local prefix = ARGV[1]
local ids = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[2], '+', 'LIMIT', 0, tonumber(ARGV[3]))
local page = {1, #ids, ids[#ids] or ''}
for _, id in ipairs(ids) do
  if redis.call('EXISTS', prefix .. id) == 1 then page[#page + 1] = id else redis.call('ZREM', KEYS[1], id) end
end
return page
"""

# KEYS[1]: the listing's index. ARGV: the prefix, then keys a SCAN found under it. Adds the thread of
# each key that holds a thread record (a hash with a version), checked here so that a thread deleted
# since the SCAN is not indexed again.
_INDEX = """
local prefix = ARGV[1]
local added = 0
for i = 2, #ARGV do
  local key = ARGV[i]
  if redis.call('TYPE', key)['ok'] == 'hash' and redis.call('HEXISTS', key, 'version') == 1 then
    added = added + redis.call('ZADD', KEYS[1], 0, string.sub(key, #prefix + 1))
  end
end
return added
"""

#: Keys one SCAN step asks for while the earlier records are indexed (a hint: Redis may answer a few more).
_INDEX_BATCH = 1000


class RedisStore(_Base):
    """Threads in Redis, for applications whose replicas share threads.

    Args:
        url_or_client: a ``redis://`` URL (the store makes the client and closes it), or a
            synchronous ``redis.Redis`` client (the caller keeps ownership; ``close()`` leaves it
            open). Clients with or without ``decode_responses`` both work.
        prefix: prepended to the thread id to make the key.
        index_key: the sorted set listing the thread ids (:meth:`thread_ids`); by default
            ``"agui-ids:" + prefix``, outside the prefix so that no thread's key can be it. Its mark
            ``index_key + ":complete"`` says the records written before the index existed were added.
        compaction: when appended changes are folded into the record's data (the default:
            :class:`~agui_client.stores.Compaction`).

    Raises:
        ImportError: the ``redis`` extra is not installed.
        TypeError: an asyncio client was given (the async shells call the store in a worker thread).

    Example::

        with RedisStore("redis://127.0.0.1:6379/0") as store:
            version = store.claim("t1", expected_version=3, owner=token)
    """

    def __init__(self, url_or_client: str | _redis.Redis, *, prefix: str = "agui:thread:",
                 compaction: Compaction | None = None, index_key: str | None = None) -> None:
        try:
            import redis
            import redis.asyncio
        except ImportError as exc:
            raise ImportError("RedisStore needs the redis extra: pip install 'agui-client[redis]'") from exc
        if isinstance(url_or_client, redis.asyncio.Redis):
            raise TypeError("RedisStore needs a synchronous redis.Redis client; async code calls it in a worker thread")
        self.compaction = compaction or Compaction()
        self._redis_error: type[Exception] = redis.RedisError
        # What a dropped connection raises: the command may have run, its reply is lost.
        self._connection_lost: tuple[type[Exception], ...] = (redis.ConnectionError, redis.TimeoutError)
        self._owns_client = isinstance(url_or_client, str)
        self._client: _redis.Redis = (
            redis.Redis.from_url(url_or_client) if isinstance(url_or_client, str) else url_or_client
        )
        self._prefix = prefix
        self._index = "agui-ids:" + prefix if index_key is None else index_key
        self._indexed = self._index + ":complete"
        self._script = self._client.register_script(_SCRIPT)
        self._compact_script = self._client.register_script(_COMPACT)
        self._delete_script = self._client.register_script(_DELETE)
        self._list_script = self._client.register_script(_LIST)
        self._index_script = self._client.register_script(_INDEX)
        self._closed = False

    def load(self, thread_id: str) -> StoredThread | None:
        """The stored thread: its data with the changes appended since folded in, or ``None`` when there
        is none.

        Raises:
            StoreError: Redis failed, the store is closed, or the record is unreadable or of a newer format.
        """
        check_thread_id(thread_id, stored=True)
        record = self._read(thread_id)
        if record is None:
            return None
        return decode_record(thread_id, version=record.version, text=record.text, claim=record.claim,
                              format=record.format, changes=record.changes, record_id=record.record_id)

    def save(self, thread_id: str, data: Mapping[str, Any], *, expected_version: int | None,
             record_id: str | None = None) -> int:
        """Compare-and-set the thread's data; see :meth:`ThreadStore.save`.

        The data is written whole and the changes appended before it are dropped.

        Raises:
            ConcurrentResume: the stored version is not ``expected_version`` (or the thread exists, for a create),
                or the record's id is not ``record_id``.
            StoreError: the data is not JSON-ready, Redis failed, the store is closed, or the record is
                of a newer format.
        """
        check_thread_id(thread_id)
        text = encode_data(thread_id, data)
        return self._write(thread_id, "save", expected_version=expected_version, owner=None, text=text,
                           record_id=record_id)[0]

    def append(self, thread_id: str, changes: Mapping[str, Any], *, expected_version: int,
               record_id: str | None = None) -> int:
        """Compare-and-set one run's changes onto the thread's record; see :meth:`IncrementalStore.append`.

        Sends and stores the changes alone (one new hash field), whatever the size of the thread. When
        the record's changes are then due for a compaction (``self.compaction``), folds them into its
        data; a compaction that fails or finds the record moved on is skipped (logged at debug level),
        since the append has landed.

        Raises:
            ConcurrentResume: the stored version is not ``expected_version``, the thread is gone, or the
                record's id is not ``record_id``.
            StoreError: the changes are not JSON-ready, Redis failed, the store is closed, or the record
                is of a newer format.
        """
        check_thread_id(thread_id)
        text = encode_data(thread_id, changes)
        version, counts = self._write(thread_id, "append", expected_version=expected_version, owner=None, text=text,
                                      record_id=record_id)
        fold_when_due("Redis store", thread_id, self.compaction, counts,
                       lambda: self._compact(thread_id))
        return version

    def claim(self, thread_id: str, *, expected_version: int | None, owner: str,
              data: Mapping[str, Any] | None = None, record_id: str | None = None) -> int:
        """Claim the thread for a run (``expected_version=None``: create it claimed, with ``data``);
        see :meth:`ThreadStore.claim`.

        A claim whose reply is lost (the connection dropped after Redis ran the script) is sent once
        more on a fresh connection: the claim is recognised by its owner, so the second attempt either
        lands or finds the first one, and never claims twice (a create sends the same record id again).

        Raises:
            ConcurrentResume: the version moved on, somebody holds a claim, (a create) the thread exists, or
                the record's id is not ``record_id``.
            StoreError: the data is not JSON-ready, Redis failed (twice, for a lost connection), the store
                is closed, or the record is of a newer format.
        """
        check_thread_id(thread_id)
        check_owner(owner)
        return self._write(thread_id, "claim", expected_version=expected_version, owner=owner,
                           text=creation_data(thread_id, expected_version, data), record_id=record_id)[0]

    def release(self, thread_id: str, *, claimed_version: int, owner: str, record_id: str | None = None) -> int:
        """Undo a claim; see :meth:`ThreadStore.release`.

        Raises:
            ConcurrentResume: the version moved on, ``owner`` does not hold the claim, or the record's id
                is not ``record_id``.
            StoreError: Redis failed, the store is closed, or the record is of a newer format.
        """
        check_thread_id(thread_id)
        check_owner(owner)
        return self._write(thread_id, "release", expected_version=claimed_version, owner=owner, text=None,
                           record_id=record_id)[0]

    def delete(self, thread_id: str) -> None:
        """Forget the thread (nothing happens when there is none).

        Raises:
            StoreError: Redis failed, or the store is closed.
        """
        check_thread_id(thread_id, stored=True)
        with self._calls(thread_id, self._key(thread_id), self._index):
            self._delete_script(keys=[self._key(thread_id), self._index], args=[thread_id])

    def thread_ids(self, *, after: str | None = None, limit: int = 100) -> list[str]:
        """Up to ``limit`` ids of the stored threads after ``after``, in code point order; see
        :class:`~agui_client.stores.ListingStore`.

        Read from the index (a sorted set, ``ZRANGEBYLEX``: the UTF-8 bytes' order), which every create
        and delete keeps in the same script as the record, never with ``KEYS``. An id whose hash is gone
        (deleted by an earlier release, by hand, or expired) is dropped from the index when a listing
        meets it. The first listing on a prefix indexes the threads written before the index existed
        (by an earlier release): a ``SCAN`` of the prefix, a batch at a time, once; then it marks the
        index complete.

        Raises:
            ValueError: ``limit`` is out of range, or ``after`` is not a string.
            StoreError: Redis failed, or the store is closed.
        """
        check_page(after, limit)
        page: list[str] = []
        start = "-" if after is None else "(" + after
        indexed = False
        with self._calls(None, index=self._index):
            while len(page) < limit:
                want = limit - len(page)
                answer = self._list_script(keys=[self._index, self._indexed], args=[self._prefix, start, str(want)])
                if int(answer[0]) == 0:
                    if indexed:
                        raise StoreError(f"Redis store: the mark {self._indexed!r} went missing while this listing "
                                         "indexed the earlier records; list again")
                    self._index_earlier_records()
                    indexed = True
                    continue
                page += [_text(thread_id) for thread_id in answer[3:]]
                if int(answer[1]) < want:
                    break  # (the index ends)
                start = "(" + _text(answer[2])  # (ids were gone: go on past the last one looked at)
        return page

    def _index_earlier_records(self) -> None:
        """Add every thread record under the prefix to the index (a ``SCAN``, then a script per batch),
        then mark the index complete. Memory stays one batch, whatever the number of keys; two stores
        doing it at once only add the same ids twice."""
        pattern = _glob_escaped(self._prefix) + "*"
        cursor: int = 0
        while True:
            cursor, keys = self._client.scan(cursor=cursor, match=pattern, count=_INDEX_BATCH)
            if keys:
                self._index_script(keys=[self._index], args=[self._prefix, *keys])
            if int(cursor) == 0:
                break
        self._client.set(self._indexed, "1")

    def close(self) -> None:
        """Close the client if the store made it; later calls raise ``StoreError``. Closing twice is fine."""
        if self._closed:
            return
        self._closed = True
        if self._owns_client:
            self._client.close()

    # -- internals -------------------------------------------------------------------------------------

    def _key(self, thread_id: str) -> str:
        key = self._prefix + thread_id
        if key in (self._index, self._indexed):
            # An index under the prefix (``index_key`` inside it, or ``prefix=""``) is a key some thread
            # id names: its delete would drop every thread from the listing, its save corrupt it.
            raise StoreError(f"thread id {quoted_name(thread_id)} names the listing's own key {quoted_name(key)} "
                             "under this store's "
                             "prefix; choose another id (or an index_key outside the prefix)", thread_id=thread_id)
        return key

    def _read(self, thread_id: str) -> _Record | None:
        """The record's fields, from one ``HGETALL`` (one consistent snapshot)."""
        with self._calls(thread_id, self._key(thread_id)):
            fields: Mapping[Any, Any] = self._client.hgetall(self._key(thread_id))
        if not fields:
            return None
        record = {_text(k): v for k, v in fields.items()}
        try:
            count = int(record.get("changes", 0))
            if count < 0:
                raise ValueError(f"changes = {count}")
            return _Record(
                version=int(record["version"]),
                text=_text(record["data"]),
                claim=_text(record.get("claim", b"")) or None,
                format=int(record.get("format", 1)),  # (as the write script reads it: the first format)
                changes=[record[f"c:{n}"] for n in range(1, count + 1)],
                record_id=_text(record.get("record", b"")) or None,
            )
        except (KeyError, ValueError, UnicodeDecodeError) as exc:
            raise self._not_a_record(thread_id, exc) from exc

    def _not_a_record(self, thread_id: str, exc: Exception) -> StoreError:
        # A decode error's repr holds every byte of the field (a thread's content, of any size): said
        # by where it failed instead. Others are cut short, for the same reason.
        if isinstance(exc, UnicodeDecodeError):
            why = f"a field holds bytes that are not UTF-8 (at byte {exc.start})"
        else:
            why = repr(exc) if len(repr(exc)) <= 120 else repr(exc)[:110] + "..."
        return StoreError(f"thread {quoted_name(thread_id)}: key {quoted_name(self._key(thread_id))} is damaged, not "
                          "a thread record "
                          f"({why})", thread_id=thread_id)

    def _compact(self, thread_id: str) -> bool:
        """Fold the record's changes into its data, unless the record moves on meanwhile."""
        record = self._read(thread_id)
        if record is None or not record.changes or record.format > STORE_FORMAT_VERSION:
            return False
        text = compacted(thread_id, record.text, record.changes)
        args = [str(record.version), str(len(record.changes)), record.record_id or "", text, str(STORE_FORMAT_VERSION)]
        if record.record_id is None:
            args += [record.text, *record.changes]  # (compared by the script: see _COMPACT)
        with self._calls(thread_id, self._key(thread_id)):
            done = self._compact_script(keys=[self._key(thread_id)], args=args)
        return int(done) == 1

    def _write(
        self, thread_id: str, operation: Operation, *, expected_version: int | None, owner: str | None,
        text: str | bytes | None, record_id: str | None,
    ) -> tuple[int, tuple[int, int, int] | None]:
        """Run the write script; returns the new version, then (an append) the data's bytes, the
        changes' bytes and their count (``None`` for the other writes)."""
        # A create stores the id it is given or a fresh one (the same one if a lost claim is sent again,
        # as args is made once); only an id the caller named is checked against a stored record.
        check_record_id(record_id)
        check_version(thread_id, expected_version)  # (the script compares versions as doubles)
        created = (record_id or new_record_id()) if expected_version is None else ""
        args: list[str | bytes] = [operation, "" if expected_version is None else str(expected_version),
                                   owner or "", text or "", str(STORE_FORMAT_VERSION), thread_id, created,
                                   record_id or ""]
        keys = [self._key(thread_id), self._index]
        with self._calls(thread_id, *keys):
            try:
                reply = self._script(keys=keys, args=args)
            except self._connection_lost:
                if operation != "claim":
                    raise  # (a save, an append or a release sent again would be refused by its own landing)
                reply = self._script(keys=keys, args=args)
        if int(reply[0]) == 1:
            counts = tuple(int(value) for value in reply[2:5])
            return int(reply[1]), (counts[0], counts[1], counts[2]) if counts else None
        try:
            stored = _text(reply[1])
            version = None if stored == "" else int(stored)
            claim, format, stored_id = _text(reply[2]), int(reply[3]), _text(reply[4])
        except (ValueError, UnicodeDecodeError) as exc:  # (a damaged record's head, read back by the script)
            raise self._not_a_record(thread_id, exc) from exc
        head = None if version is None else checked_head(thread_id, version, claim, format, stored_id)
        _check_write(thread_id, head, operation, expected_version=expected_version, owner=owner,
                     record_id=record_id)
        # The script and check_write disagree: a bug, never a silent success.
        raise StoreError(f"thread {quoted_name(thread_id)}: Redis refused the {operation} for no known reason (head "
                         f"{head})",
                         thread_id=thread_id)

    @contextmanager
    def _calls(self, thread_id: str | None, record: str | None = None, index: str | None = None) -> Iterator[None]:
        """Redis's own errors leave as ``StoreError``; one about a key's kind (``WRONGTYPE``) names the key
        of the call's (the thread's hash ``record``, the listing's ``index``) that is not what the store
        keeps there."""
        if self._closed:
            raise store_closed(thread_id)
        try:
            yield
        except self._redis_error as exc:
            where = "" if thread_id is None else f" for thread {quoted_name(thread_id)}"
            misplaced = self._misplaced(record, index) if str(exc).startswith("WRONGTYPE") else None
            if misplaced is not None:
                key, found, what = misplaced
                raise StoreError(
                    f"Redis store failed{where}: key {quoted_name(key)} holds a {quoted_name(found)}, not the {what} "
                    "the store keeps under that name: another application's key, or one written by hand; nothing "
                    "was written. Remove or rename it, or give the store a prefix (index_key) of its own",
                    thread_id=thread_id) from exc
            raise StoreError(f"Redis store failed{where}: {exc}", thread_id=thread_id) from exc
        except UnicodeDecodeError as exc:  # (a client with decode_responses=True, reading a hash that is not text)
            where = "a listing" if thread_id is None else f"thread {quoted_name(thread_id)}"
            raise StoreError(f"{where}: Redis answered with bytes that are not UTF-8 (a damaged or "
                             f"foreign record): {exc}", thread_id=thread_id) from exc

    def _misplaced(self, record: str | None, index: str | None) -> tuple[str, str, str] | None:
        """After Redis refused a call for a key's kind: the call's key that holds another kind than the store
        keeps there (the key, its kind, what the store keeps), or ``None``. A round trip of its own, after
        such a failure only; every script fails on such a key before its first write, so nothing was
        written."""
        try:
            for key, kind, what in ((record, "hash", "thread record (a hash)"),
                                    (index, "zset", "listing's index (a zset)")):
                found = None if key is None else _text(self._client.type(key))
                if found not in (None, "none", kind):
                    assert key is not None
                    return key, str(found), what
        except self._redis_error:
            return None  # (the call's own error stands)
        return None


@frozen(kw_only=True)
class _Record:
    """A thread's hash as one ``HGETALL`` read it."""

    version: int
    text: str
    claim: str | None
    format: int
    changes: list[str | bytes]
    record_id: str | None


def _glob_escaped(text: str) -> str:
    # SCAN's MATCH is a glob: a prefix holding *, ?, [, ] or a backslash matches them only escaped.
    return "".join("\\" + char if char in "*?[]\\" else char for char in text)


def _text(value: Any) -> str:
    # Clients made with decode_responses=True answer str, the others bytes.
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)
