"""A record's head at the end of a 64-bit version, or damaged: a typed error from every store.

The stores keep a version in a signed 64-bit integer (SQLite's INTEGER, PostgreSQL's bigint, Redis's
Lua numbers in its scripts, exact only to 2**53). A record at such a version (written by another
tool, or damaged) could not be advanced: SQLite raised a raw ``OverflowError``, PostgreSQL a bigint
error naming no version, the memory store wrote 2**63 and Redis compared versions as doubles. Every
store now writes versions up to ``MAX_VERSION`` (2**53 - 1) and refuses to go past it with a
``StoreError`` naming the thread and the version, by one rule (``check_version``), and reads such a
record as it is.
"""

from __future__ import annotations

import pytest
from backendkit import (
    Backend,
    small,
)

from agui_client.errors import StoreError
from agui_client.stores.base import MAX_VERSION

__all__: list[str] = []

LAST = 2**63 - 1


def test_a_record_at_the_last_version_loads_and_is_never_advanced_past_it(backend: Backend) -> None:
    store = backend.store
    store.save("t", small(1), expected_version=None)
    backend.set_raw("t", "version", LAST)
    stored = store.load("t")
    assert stored is not None and stored.version == LAST
    writes = {
        "save": lambda: store.save("t", small(2), expected_version=LAST),
        "append": lambda: store.append("t", {"set": {"state": {}}}, expected_version=LAST),  # type: ignore[attr-defined]
        "claim": lambda: store.claim("t", expected_version=LAST, owner="me"),
    }
    for name, write in writes.items():
        with pytest.raises(StoreError) as caught:
            write()
        assert caught.value.thread_id == "t", name
        assert "version" in str(caught.value) and str(LAST) in str(caught.value), (name, str(caught.value))
    after = store.load("t")
    assert after is not None and after.version == LAST and after.data == small(1) and after.claim is None


def test_the_last_version_is_written_exactly_and_then_the_record_is_refused(backend: Backend) -> None:
    # (2**53 - 1 is exact in a double: the Redis script's comparison holds up to it, not past it)
    store = backend.store
    store.save("t", small(1), expected_version=None)
    backend.set_raw("t", "version", MAX_VERSION - 1)
    assert store.save("t", small(2), expected_version=MAX_VERSION - 1) == MAX_VERSION
    stored = store.load("t")
    assert stored is not None and stored.version == MAX_VERSION and stored.data == small(2)
    with pytest.raises(StoreError) as caught:
        store.claim("t", expected_version=MAX_VERSION, owner="me")
    assert caught.value.thread_id == "t" and str(MAX_VERSION) in str(caught.value)


def test_a_version_that_is_not_an_integer_is_refused_as_an_argument(backend: Backend) -> None:
    store = backend.store
    store.save("t", small(1), expected_version=None)
    for wrong in ("1", 1.0, True):
        with pytest.raises(ValueError) as caught:
            store.save("t", small(2), expected_version=wrong)  # type: ignore[arg-type]
        assert "expected_version" in str(caught.value)
    stored = store.load("t")
    assert stored is not None and stored.version == 1


def test_a_negative_stored_version_is_a_damaged_record_and_a_negative_expected_version_an_argument_error(
        backend: Backend) -> None:
    store = backend.store
    store.save("t", small(1), expected_version=None)
    backend.set_raw("t", "version", -5)
    with pytest.raises(StoreError) as caught:
        store.load("t")
    assert caught.value.thread_id == "t" and "damaged" in str(caught.value)
    with pytest.raises(ValueError) as refused:
        store.save("t", small(2), expected_version=-5)
    assert "expected_version" in str(refused.value)
