"""Thread ids a store cannot hold the same way everywhere are refused by every store, before anything is read.

A lone surrogate used to escape as a raw ``UnicodeEncodeError`` from SQLite, Redis and PostgreSQL (and
be kept by ``MemoryStore``); a NUL was kept by three stores and refused by PostgreSQL's text type; a
megabyte id was kept by three and broke PostgreSQL's index; an ``int`` or ``bytes`` id was kept by
``MemoryStore`` and SQLite as itself and by PostgreSQL as its text (``5`` loaded back as ``"5"``). Every
store now applies one rule (``check_thread_id``): a ``StoreError`` naming the id, for every method
(but for an id too long only, which an earlier release may have stored: read and deleted, never written).
Ids that are odd but storable (empty, blank, path separators, the metacharacters of SQL ``LIKE``, of
Redis globs) round-trip in every store and are listed as themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from backendkit import (
    Backend,
    small,
)

from agui_client.errors import StoreError
from agui_client.stores import MAX_THREAD_ID_BYTES, ThreadStore

__all__: list[str] = []


REFUSED: dict[str, Any] = {
    "lone surrogate": "t\ud800",
    "NUL": "t\x00u",
    "longer than the limit": "x" * (MAX_THREAD_ID_BYTES + 1),
    "a megabyte": "x" * (1 << 20),
    "multi-byte past the limit": "\u00e9" * (MAX_THREAD_ID_BYTES // 2 + 1),
    "int": 5,
    "bytes": b"t",
    "None": None,
}

#: Refused for a write only: an earlier release may have stored such an id, so it is read and deleted.
TOO_LONG = ("longer than the limit", "a megabyte", "multi-byte past the limit")

STORABLE = ["", " \t ", "../../etc/passwd", "a/b\\c", "a%", "a_", "%", "_", "a*", "a?", "a[", "[a-z]*", "a]",
            "it's", 'say "hi"', "x" * MAX_THREAD_ID_BYTES, "\u00e9" * (MAX_THREAD_ID_BYTES // 2),
            "\U0001f600 t", "a:changes", "t\x1b[31m"]


def _calls(store: ThreadStore, thread_id: Any) -> dict[str, Callable[[], object]]:
    appendable: Any = store
    return {
        "load": lambda: store.load(thread_id),
        "save": lambda: store.save(thread_id, small(1), expected_version=None),
        "save at a version": lambda: store.save(thread_id, small(2), expected_version=1),
        "append": lambda: appendable.append(thread_id, {"set": {"state": {}}}, expected_version=1),
        "claim": lambda: store.claim(thread_id, expected_version=1, owner="me"),
        "creating claim": lambda: store.claim(thread_id, expected_version=None, owner="me", data=small(1)),
        "release": lambda: store.release(thread_id, claimed_version=2, owner="me"),
        "delete": lambda: store.delete(thread_id),
    }


@pytest.mark.parametrize("kind", list(REFUSED))
def test_an_id_no_store_can_hold_is_a_store_error_from_every_method_and_nothing_is_stored(
        backend: Backend, kind: str) -> None:
    thread_id = REFUSED[kind]
    store = backend.store
    for name, call in _calls(store, thread_id).items():
        if name in ("load", "delete") and kind in TOO_LONG:  # (read and deleted as an earlier release stored it)
            assert call() is None, name
            continue
        with pytest.raises(StoreError) as caught:
            call()
        assert caught.value.thread_id == (thread_id if isinstance(thread_id, str) else None), name
        shown = str(caught.value)
        assert "thread id" in shown and len(shown) < 300, (name, shown[:300])
    listing: Any = store
    assert listing.thread_ids() == []


@pytest.mark.parametrize("kind", list(REFUSED))
def test_a_listing_after_an_id_no_store_can_hold_is_refused_as_a_bad_argument(backend: Backend, kind: str) -> None:
    listing: Any = backend.store
    if REFUSED[kind] is None or kind in TOO_LONG:  # (None is the first page; a long id, one a listing may give)
        assert listing.thread_ids(after=REFUSED[kind]) == []
        return
    with pytest.raises(ValueError) as caught:
        listing.thread_ids(after=REFUSED[kind])
    assert "after" in str(caught.value) and len(str(caught.value)) < 300


def test_odd_but_storable_ids_round_trip_and_are_listed_as_themselves_in_every_store(backend: Backend) -> None:
    store = backend.store
    for thread_id in STORABLE:
        assert store.save(thread_id, small(1), expected_version=None) == 1
        assert store.claim(thread_id, expected_version=1, owner="me") == 2
    for thread_id in STORABLE:
        stored = store.load(thread_id)
        assert stored is not None and stored.thread_id == thread_id and stored.version == 2, repr(thread_id)
        assert stored.data == small(1)
    listing: Any = store
    assert listing.thread_ids(limit=1000) == sorted(STORABLE)
    # A pattern character in one id never reaches another thread's record.
    store.delete("%")
    store.delete("[a-z]*")
    assert store.load("a%") is not None and store.load("a_") is not None and store.load("a*") is not None
    assert listing.thread_ids(limit=1000) == sorted(set(STORABLE) - {"%", "[a-z]*"})
    assert listing.thread_ids(after="a%", limit=2) == sorted(STORABLE)[sorted(STORABLE).index("a%") + 1:][:2]


def test_a_long_id_an_earlier_release_stored_is_listed_loaded_paged_past_and_deleted(
        backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    # Releases before the id rule kept ids past MAX_THREAD_ID_BYTES (the SQLite, Redis and memory stores
    # any length, PostgreSQL some 2,700 bytes). The listing gave such an id, but loading it, deleting
    # it, or asking for the page after it (the listing's own last id) was refused: a clean-up going
    # through every thread stopped there. What is stored stays readable and deletable; only a write
    # (the claim that comes before a run's request) is refused, so nothing is sent for it.
    import sys

    store = backend.store
    legacy = "x" * (MAX_THREAD_ID_BYTES + 1)
    written = sys.modules[type(store).__module__]
    with monkeypatch.context() as earlier:  # (the store as an earlier release was: no id rule)
        earlier.setattr(written, "check_thread_id", lambda thread_id: None)
        assert store.save(legacy, small(1), expected_version=None) == 1
    assert store.save("y", small(2), expected_version=None) == 1
    listing: Any = store
    assert listing.thread_ids(limit=1) == [legacy]
    assert listing.thread_ids(after=legacy) == ["y"]
    stored = store.load(legacy)
    assert stored is not None and stored.data == small(1) and stored.version == 1
    with pytest.raises(StoreError) as refused:
        store.claim(legacy, expected_version=1, owner="me")
    assert refused.value.thread_id == legacy and "1025 bytes" in str(refused.value)
    assert store.load(legacy).version == 1  # type: ignore[union-attr]
    store.delete(legacy)
    assert store.load(legacy) is None and listing.thread_ids() == ["y"]
