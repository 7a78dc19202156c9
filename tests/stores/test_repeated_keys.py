"""A stored record whose JSON repeats a key is a damaged record: every store refuses it, naming the key.

What comes from the wire already follows this rule (an event repeating a key is refused, naming
where). A record read back from a store did not: the last of the repeated values was taken silently,
so a record holding ``"state"`` twice loaded as whichever came last, and the thread's next save wrote
that one as if it had always been the record's. The stores share one record reader
(``stores.base.decode_record`` over ``wire.records.load_record``), so the rule is written once there.
"""

from __future__ import annotations

import pytest
from backendkit import (
    Backend,
    small,
)

from agui_client.errors import StoreError
from agui_client.stores.base import decode_record
from agui_client.wire.records import RepeatedKey, dump_record, load_record

__all__: list[str] = []


# (each record as another tool could write it: a repeated member at the top, deep inside a message,
# spelled differently, and in a text only the standard library reads, with an escaped lone surrogate)
DAMAGED = [
    ('{"format":1,"threadId":"t","state":{"n":1},"messages":[],"state":{"n":2}}', "state", "/state"),
    ('{"format":1,"threadId":"t","messages":[{"id":"u1","role":"user","content":"a","id":"u2"}]}', "id",
     "/messages/0/id"),
    ('{"format":1,"threadId":"t","state":{},"st\\u0061te":{}}', "state", "/state"),
    ('{"format":1,"threadId":"t\\ud800","messages":[],"messages":[]}', "messages", "/messages"),
]


@pytest.mark.parametrize(("text", "key", "pointer"), DAMAGED)
def test_a_record_repeating_a_key_is_refused_by_every_store_naming_the_key(backend: Backend, text: str,
                                                                           key: str, pointer: str) -> None:
    store = backend.store
    store.save("t", small(1), expected_version=None)
    backend.set_raw("t", "data", text)

    with pytest.raises(StoreError) as caught:
        store.load("t")

    assert caught.value.thread_id == "t"
    said = str(caught.value)
    assert said.startswith("thread 't': the stored record is damaged: its data repeats the key "
                           f"'{key}' (at {pointer})"), said
    assert "restore it from a backup, or delete the thread" in said


def test_a_change_repeating_a_key_is_refused_naming_the_key() -> None:
    # (the stores hand their appended changes to the same reader: one case stands for all of them)
    with pytest.raises(StoreError) as caught:
        decode_record("t", version=2, text=dump_record(small(1)), claim=None, format=2,
                      changes=['{"set":{"state":{"n":1}},"set":{"state":{"n":2}}}'])
    assert caught.value.thread_id == "t"
    assert "a change appended to it repeats the key 'set' (at /set)" in str(caught.value)


def test_records_the_stores_write_still_read_as_written() -> None:
    # The proof that lets a record pass without the exact walk: what dump_record writes (orjson's
    # bytes, or the standard library's ASCII text for what orjson cannot write) is written back the same.
    for record in (small(1), {"state": {"s": "\ud800", "a:b": [1, {"c": None}]}, "messages": []},
                   {"n": 2**70, "x": [{"k": "v:w"}]}):
        assert load_record(dump_record(record)) == record
    assert load_record(b'{ "a" : {"b": 1}, "c" : "x:y" }') == {"a": {"b": 1}, "c": "x:y"}
    with pytest.raises(RepeatedKey) as caught:
        load_record(b'{ "a" : {"b": 1, "b" : 2} }')
    assert (caught.value.key, caught.value.pointer) == ("b", "/a/b")
