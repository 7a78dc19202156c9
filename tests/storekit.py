"""A store written for the bare ``ThreadStore`` protocol, as a user may have written one: none of the
optional capabilities (``append``, ``thread_ids``), every call passed to a ``MemoryStore``. Shared by
the tests of what the library does with such a store (whole saves, no listing).

Beside it, :func:`refused_open`, for the tests of a store that must refuse to open.

(Importable from every test folder: pytest puts this folder on ``sys.path`` for its ``conftest.py``.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agui_client.errors import StoreError
from agui_client.stores import MemoryStore, StoredThread


def refused_open(opening: Callable[[], Any]) -> StoreError:
    """The ``StoreError`` that ``opening()`` (a store's constructor) raises.

    A store that opens when it should have refused is closed before the test fails: ``pytest.raises``
    around the constructor would let the store go unclosed, and a PostgreSQL store's connections stay
    open on the session's one server for the rest of the run.
    """
    try:
        store = opening()
    except StoreError as exc:
        return exc
    store.close()
    raise AssertionError(f"the store opened, though it should have refused: {store!r}")


class BareStore:
    """The protocol's six methods over a ``MemoryStore`` (``inner``); ``saves`` counts the whole saves."""

    def __init__(self) -> None:
        self.inner = MemoryStore()
        self.saves = 0

    def load(self, thread_id: str) -> StoredThread | None:
        return self.inner.load(thread_id)

    def save(self, thread_id: str, data: Mapping[str, Any], *, expected_version: int | None) -> int:
        self.saves += 1
        return self.inner.save(thread_id, data, expected_version=expected_version)

    def claim(self, thread_id: str, *, expected_version: int | None, owner: str,
              data: Mapping[str, Any] | None = None) -> int:
        return self.inner.claim(thread_id, expected_version=expected_version, owner=owner, data=data)

    def release(self, thread_id: str, *, claimed_version: int, owner: str) -> int:
        return self.inner.release(thread_id, claimed_version=claimed_version, owner=owner)

    def delete(self, thread_id: str) -> None:
        self.inner.delete(thread_id)

    def close(self) -> None:
        self.inner.close()
