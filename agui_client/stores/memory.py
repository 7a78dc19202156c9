"""``MemoryStore``: threads in a dict, for one process (the default store, and tests)."""

from __future__ import annotations

import bisect
import threading
from collections.abc import Mapping
from typing import Any

import attrs
from attrs import frozen

from .base import (
    Compaction,
    Head,
    Operation,
    StoredThread,
    check_owner,
    check_page,
    check_thread_id,
    compacted,
    creation_data,
    decode_record,
    encode_data,
    fold_when_due,
    store_closed,
)
from .base import StoreBase as _Base
from .base import check_write as _check_write

__all__ = ["MemoryStore"]


@frozen(kw_only=True)
class _Record:
    head: Head
    # JSON rather than the dict: a load hands out a fresh copy, and data that another store could
    # not hold (not JSON-ready) fails here too, so moving to SQLite or Redis changes nothing. Kept in
    # the form the encoder gave (UTF-8 bytes or text): a conversion would cost a second copy.
    text: str | bytes
    # The runs' changes appended since ``text`` was written (format 2): the first ``count`` of
    # ``changes``, and their bytes in all. The list is only ever appended to, and the records of one
    # thread share it until a save or a compaction starts a new one: an append then costs the same
    # at the thousandth change as at the first, and an older record (a load in progress) still reads
    # its own ``count``.
    changes: list[str | bytes] = attrs.field(factory=list)
    count: int = 0
    change_bytes: int = 0


#: Records this large or larger are kept as orjson wrote them (see ``_kept``).
_EXACT_COPY_BELOW = 256 * 1024


class MemoryStore(_Base):
    """Threads kept in this process's memory; lost when it exits.

    Safe to share between threads (one lock guards every operation). Follows the same rules as the
    durable stores, so code tested against it behaves the same against them, including the
    incremental record (:meth:`append`, folded by ``compaction``).

    Args:
        compaction: when appended changes are folded into the record (the default: :class:`Compaction`).

    Example::

        with MemoryStore() as store:
            version = store.save("t1", state.dump(), expected_version=None)
    """

    def __init__(self, *, compaction: Compaction | None = None) -> None:
        self.compaction = compaction or Compaction()
        self._lock = threading.Lock()
        self._records: dict[str, _Record] = {}
        # The ids of ``_records``, sorted, for ``thread_ids``: a page is a bisection and a slice, and a
        # thread's creation or deletion an insertion or a removal (a move of pointers, no sort).
        self._ids: list[str] = []
        self._closed = False

    def load(self, thread_id: str) -> StoredThread | None:
        """The stored thread, or ``None`` when there is none.

        Raises:
            StoreError: the store is closed, or the record was written by a newer release.
        """
        check_thread_id(thread_id, stored=True)
        with self._lock:
            if self._closed:
                raise store_closed(thread_id)
            record = self._records.get(thread_id)
        if record is None:
            return None
        head = record.head
        return decode_record(thread_id, version=head.version, text=record.text, claim=head.claim, format=head.format,
                              changes=record.changes[:record.count], record_id=head.record_id)

    def save(self, thread_id: str, data: Mapping[str, Any], *, expected_version: int | None,
             record_id: str | None = None) -> int:
        """Compare-and-set the thread's data; see :meth:`ThreadStore.save`.

        Raises:
            ConcurrentResume: the stored version is not ``expected_version`` (or the thread exists, for a create),
                or the record's id is not ``record_id``.
            StoreError: the data is not JSON-ready, the store is closed, or the record is of a newer format.
        """
        check_thread_id(thread_id)
        text = _kept(encode_data(thread_id, data))
        with self._lock:
            head = self._write_head(thread_id, "save", expected_version=expected_version, owner=None,
                                    record_id=record_id)
            if expected_version is None:  # (a create: check_write found no record)
                bisect.insort(self._ids, thread_id)
            self._records[thread_id] = _Record(head=head, text=text)
        return head.version

    def append(self, thread_id: str, changes: Mapping[str, Any], *, expected_version: int,
               record_id: str | None = None) -> int:
        """Compare-and-set one run's changes onto the thread's record; see :meth:`IncrementalStore.append`.

        Raises:
            ConcurrentResume: the stored version is not ``expected_version``, the thread is gone, or the
                record's id is not ``record_id``.
            StoreError: the changes are not JSON-ready, the store is closed, or the record is of a newer format.
        """
        check_thread_id(thread_id)
        text = _kept(encode_data(thread_id, changes))
        with self._lock:
            head = self._write_head(thread_id, "append", expected_version=expected_version, owner=None,
                                    record_id=record_id)
            record = self._records[thread_id]
            # (the list is the latest record's: its count is its length, as nothing between this
            # append and the record's replacement can fail)
            record.changes.append(text)
            appended = _Record(head=head, text=record.text, changes=record.changes, count=record.count + 1,
                               change_bytes=record.change_bytes + len(text))
            self._records[thread_id] = appended
        # The change as handed in, when orjson wrote it (its text holds exactly that): a fold due now
        # takes it as it is rather than parsing it back.
        written = changes if isinstance(text, bytes) else None
        fold_when_due("MemoryStore", thread_id, self.compaction,
                       (len(appended.text), appended.change_bytes, appended.count),
                       lambda: self._fold(thread_id, appended, written))
        return head.version

    def _fold(self, thread_id: str, appended: _Record, last: Mapping[str, Any] | None) -> None:
        # Folded outside the lock (a large thread takes milliseconds), and kept only if nobody wrote
        # since: the record is still the very one the append stored. The change that made the fold due
        # is often most of it (a run that brought 200 forms: 1.1 MB appended to 0.5 KB): it is folded
        # in from the caller's mapping, which the append has just encoded, not parsed back from its
        # bytes, and the fold is written without the walk that decides how to write a record: every
        # part is this store's own orjson bytes (only orjson's path writes bytes), which read back as
        # plain JSON. Parsing the 1.1 MB back, the reader's proofs and the walk were 15 of the append's
        # 24 ms (best of 7; 26-32 ms medians under load, the parse's containers bringing the collector).
        texts = appended.changes[:appended.count - (last is not None)]
        plain = last is not None and isinstance(appended.text, bytes) and all(type(t) is bytes for t in texts)
        folded = _kept(compacted(thread_id, appended.text, texts, last=last, plain=plain))
        with self._lock:
            if self._records.get(thread_id) is appended:
                self._records[thread_id] = _Record(head=appended.head, text=folded)

    def claim(self, thread_id: str, *, expected_version: int | None, owner: str,
              data: Mapping[str, Any] | None = None, record_id: str | None = None) -> int:
        """Claim the thread for a run (``expected_version=None``: create it claimed, with ``data``);
        see :meth:`ThreadStore.claim`.

        Raises:
            ConcurrentResume: the version moved on, somebody holds a claim, (a create) the thread exists, or
                the record's id is not ``record_id``.
            StoreError: the data is not JSON-ready, the store is closed, or the record is of a newer format.
        """
        check_thread_id(thread_id)
        check_owner(owner)
        created = creation_data(thread_id, expected_version, data)
        text = None if created is None else _kept(created)
        with self._lock:
            record = self._records.get(thread_id)
            head = self._write_head(thread_id, "claim", expected_version=expected_version, owner=owner,
                                    record_id=record_id)
            if record is None:
                assert text is not None  # (only a create passes check_write without a record)
                bisect.insort(self._ids, thread_id)
                self._records[thread_id] = _Record(head=head, text=text)
            elif head != record.head:  # (equal: the owner's own claim, recognised; nothing to write)
                self._records[thread_id] = attrs.evolve(record, head=head)
        return head.version

    def release(self, thread_id: str, *, claimed_version: int, owner: str, record_id: str | None = None) -> int:
        """Undo a claim; see :meth:`ThreadStore.release`.

        Raises:
            ConcurrentResume: the version moved on, ``owner`` does not hold the claim, or the record's id
                is not ``record_id``.
            StoreError: the store is closed, or the record is of a newer format.
        """
        check_thread_id(thread_id)
        check_owner(owner)
        with self._lock:
            head = self._write_head(thread_id, "release", expected_version=claimed_version, owner=owner,
                                    record_id=record_id)
            self._records[thread_id] = attrs.evolve(self._records[thread_id], head=head)
        return head.version

    def delete(self, thread_id: str) -> None:
        """Forget the thread (nothing happens when there is none).

        Raises:
            StoreError: the store is closed.
        """
        check_thread_id(thread_id, stored=True)
        with self._lock:
            if self._closed:
                raise store_closed(thread_id)
            if self._records.pop(thread_id, None) is not None:
                del self._ids[bisect.bisect_left(self._ids, thread_id)]

    def thread_ids(self, *, after: str | None = None, limit: int = 100) -> list[str]:
        """Up to ``limit`` ids of the stored threads after ``after``, in code point order; see
        :class:`~agui_client.stores.ListingStore`.

        Raises:
            ValueError: ``limit`` is out of range, or ``after`` is not a string.
            StoreError: the store is closed.
        """
        check_page(after, limit)
        with self._lock:
            if self._closed:
                raise store_closed()
            start = 0 if after is None else bisect.bisect_right(self._ids, after)
            return self._ids[start:start + limit]

    def close(self) -> None:
        """Drop every thread; later calls raise ``StoreError``."""
        with self._lock:
            self._closed = True
            self._records.clear()
            self._ids.clear()

    def _write_head(
        self, thread_id: str, operation: Operation, *, expected_version: int | None, owner: str | None,
        record_id: str | None,
    ) -> Head:
        # Called with the lock held.
        if self._closed:
            raise store_closed(thread_id)
        record = self._records.get(thread_id)
        return _check_write(thread_id, None if record is None else record.head, operation,
                            expected_version=expected_version, owner=owner, record_id=record_id)


def _kept(text: str | bytes) -> str | bytes:
    if isinstance(text, bytes) and len(text) < _EXACT_COPY_BELOW:
        # orjson hands back its whole output buffer, two to five times the JSON for a small record: a
        # record kept for the life of the thread is worth an exact-size copy. A large one's buffer is
        # as large against its JSON (orjson 3.13: 2.5 times, by tracemalloc), but its untouched tail
        # is not resident: 20 records of 1.7 MB kept so grew the process by 1.01 times their JSON, as
        # exact copies by 1.06. The copy would cost some 0.3 ms a MB and double the save's peak memory
        # for a moment.
        return bytes(memoryview(text))
    return text
