"""What a store's load refuses in a record another tool wrote (or damaged), and what its error keeps.

A record that is not JSON was refused with a ``StoreError`` whose cause was the parser's error, which
holds the whole text it read (``JSONDecodeError.doc``): a record of hundreds of megabytes stayed alive
as long as the error, and a secret in it rode along. A stored record id of any length loaded, though a
write takes 1 to 128 characters; a thread object keeps the id and sends it back with every write.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
from backendkit import (
    Backend,
    small,
)

from agui_client.errors import StoreError
from agui_client.stores import RedisStore
from agui_client.stores.base import MAX_RECORD_ID, decode_record
from agui_client.wire.records import dump_record

__all__: list[str] = []

SECRET = "sk-live-0123456789abcdef"
#: The most an error's cause chain may hold in one object (the message and a short excerpt fit).
FEW_KB = 4096


def _held(error: BaseException) -> list[tuple[str, int]]:
    """Every object the error's cause and context chain holds, as (where, size), the errors included."""
    found: list[tuple[str, int]] = []
    seen: set[int] = set()
    pending: list[tuple[str, Any]] = [("error", error)]
    while pending:
        where, value = pending.pop()
        if id(value) in seen or value is None:
            continue
        seen.add(id(value))
        found.append((where, sys.getsizeof(value)))
        if isinstance(value, BaseException):
            pending.extend((f"{where}.args[{i}]", arg) for i, arg in enumerate(value.args))
            pending.extend((f"{where}.{name}", item) for name, item in vars(value).items())
            pending.append((f"{where}.__cause__", value.__cause__))
            pending.append((f"{where}.__context__", value.__context__))
    return found


def _not_json(size: int) -> str:
    # A record cut short: valid JSON up to its last character, a secret inside.
    return '{"format":1,"threadId":"t","state":{"key":"' + SECRET + '","pad":"' + "x" * size + '"'


@pytest.mark.parametrize("size", [100, 2_000_000], ids=["small", "two-megabytes"])
def test_a_record_that_is_not_json_is_refused_holding_none_of_its_text(backend: Backend, size: int) -> None:
    store = backend.store
    store.save("t", small(1), expected_version=None)
    backend.set_raw("t", "data", _not_json(size))

    with pytest.raises(StoreError) as caught:
        store.load("t")

    error = caught.value
    assert error.thread_id == "t"
    said = str(error)
    assert said.startswith("thread 't': stored data is not JSON: "), said[:300]
    assert f"at character {len(_not_json(size))}" in said, said[:300]
    assert SECRET not in said and len(said) < 300
    assert error.__cause__ is None and error.__context__ is None
    assert [(where, held) for where, held in _held(error) if held > FEW_KB] == []


@pytest.mark.parametrize("change", ['{"set":{"state":{"k":"' + SECRET + '"}', b'{"set":\xff' + b"x" * 100_000],
                         ids=["cut-short", "not-utf-8"])
def test_a_change_that_is_not_json_is_refused_holding_none_of_its_text(change: str | bytes) -> None:
    # (the stores hand their appended changes to the same reader: one case stands for all of them)
    with pytest.raises(StoreError) as caught:
        decode_record("t", version=2, text=dump_record(small(1)), claim=None, format=2, changes=[change])

    error = caught.value
    assert error.thread_id == "t"
    assert str(error).startswith("thread 't': a stored change is not JSON: "), str(error)
    assert SECRET not in str(error)
    assert error.__cause__ is None and error.__context__ is None
    assert [(where, held) for where, held in _held(error) if held > FEW_KB] == []


def _set_record_id(backend: Backend, record_id: str) -> None:
    # (Redis keeps the id in the hash's ``record`` field; the others in a ``record_id`` column)
    backend.set_raw("t", "record" if isinstance(backend.store, RedisStore) else "record_id", record_id)


def test_a_stored_record_id_longer_than_a_write_takes_is_refused_on_load(backend: Backend) -> None:
    store = backend.store
    store.save("t", small(1), expected_version=None)
    _set_record_id(backend, "r" * (MAX_RECORD_ID + 1))

    with pytest.raises(StoreError) as caught:
        store.load("t")

    assert caught.value.thread_id == "t"
    said = str(caught.value)
    assert said.startswith("thread 't': the stored record id is damaged ('rrr"), said
    assert len(said) < 300


def test_a_stored_record_id_of_the_longest_length_a_write_takes_loads(backend: Backend) -> None:
    store = backend.store
    store.save("t", small(1), expected_version=None)
    _set_record_id(backend, "r" * MAX_RECORD_ID)

    stored = store.load("t")

    assert stored is not None and stored.record_id == "r" * MAX_RECORD_ID and stored.data == small(1)
