"""A ``MemoryStore`` append that makes its own fold due: the change is folded in as the caller handed it.

A run that brings 200 interrupt forms appends some 1.1 MB to a record of half a kilobyte, and the
compaction folds it at once. The store had just encoded that change; parsing it back from its bytes
and walking the result again before writing the fold were two thirds of the append's time. These
prove what the shortcut rests on: the fold reads no text but the record's own earlier parts, walks
nothing but the change (once, to encode it), writes the very bytes the fold from text wrote, never
changes what the caller handed in, and leaves a change that orjson did not write to the fold from text.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from agui_client.errors import StoreError
from agui_client.stores import Compaction, MemoryStore, apply_changes
from agui_client.stores import base as store_base
from agui_client.stores.base import compacted, encode_data
from agui_client.wire import records
from agui_client.wire.values import PlainDict, PlainList

__all__: list[str] = []

#: Fold once the changes outweigh the data (and 1 KiB): the default policy's rule, at a test's size.
AT_ONCE = Compaction(min_bytes=1024, ratio=1.0, max_changes=1024)

DATA = {"format": 1, "threadId": "t", "messages": [{"id": "u1", "role": "user", "content": "forms?"}],
        "openInterrupts": [], "usageByRun": {"r0": [{"inputTokens": 1}]}}


def _forms(count: int) -> list[dict[str, Any]]:
    return [{"id": f"ask-{n}", "reason": "input",
             "responseSchema": {"type": "object", "title": f"form {n} caf\u00e9 \x01",
                                "properties": {f"f{k}": {"type": "string", "maxLength": 40 + k} for k in range(20)}}}
            for n in range(count)]


def _change(count: int = 60) -> dict[str, Any]:
    """A run's change as ThreadState.changes() makes it, larger than the data: its append folds at once."""
    return {"messagesFrom": 1,
            "messages": PlainList([{"id": "a1", "role": "assistant", "content": "here \U0001f600"}]),
            "set": {"openInterrupts": _forms(count), "lastRunId": "r1", "lastOutcome": "interrupt",
                    "state": PlainDict({"n": -0.0, "big": 1.5e300, "list": (1, 2, (3,))})},
            "merge": {"usageByRun": {"r1": [{"inputTokens": 2}]}}}


def _store_with(data: dict[str, Any]) -> MemoryStore:
    store = MemoryStore(compaction=AT_ONCE)
    store.save("t", data, expected_version=None)
    return store


def test_a_change_that_makes_its_own_fold_due_is_neither_parsed_back_nor_walked_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store_with(DATA)
    change = _change()
    change_bytes = len(encode_data("t", change))
    read: list[int] = []
    walked: list[str] = []
    load_record, plain_json = store_base.load_record, records.plain_json

    def reading(text: str | bytes) -> Any:
        read.append(len(text))
        return load_record(text)

    def walking(value: Any, tuples: bool = True) -> bool:
        walked.append(type(value).__name__)
        return plain_json(value, tuples)

    monkeypatch.setattr(store_base, "load_record", reading)
    monkeypatch.setattr(records, "plain_json", walking)
    store.append("t", change, expected_version=1)
    monkeypatch.undo()

    stored = store.load("t")
    assert stored is not None and stored.changes == 0  # (folded by the append)
    assert read == [len(encode_data("t", DATA))]  # (the record's data alone: the change was not read back)
    assert change_bytes not in read
    # The change walked once, by its own encoding; the fold, marked as plain, is not walked through.
    assert walked == ["dict", "PlainDict"]


@pytest.mark.parametrize("change", [
    _change(),
    # (Python's own sequences where a reader makes lists: a tuple of messages, of keys to drop)
    {"messagesFrom": 0, "messages": tuple(_change()["messages"]), "unset": ("usageByRun",),
     "set": {"openInterrupts": _forms(60)}},
    # (a merge into a field the same change sets: applied to a copy, never to the caller's object)
    {"set": {"usageByRun": {"r1": [1]}, "openInterrupts": _forms(60)}, "merge": {"usageByRun": {"r2": [2]}}},
], ids=["a run's change", "tuples", "merge into what it sets"])
def test_the_fold_from_the_change_as_handed_in_writes_what_the_fold_from_its_text_wrote(change: dict[str, Any]) -> None:
    store = _store_with(DATA)
    before = copy.deepcopy(change)
    data_text = store._records["t"].text
    change_text = encode_data("t", change)

    store.append("t", change, expected_version=1)

    record = store._records["t"]
    assert record.count == 0
    assert record.text == compacted("t", data_text, [change_text])  # (the same bytes, byte for byte)
    stored = store.load("t")
    assert stored is not None
    assert stored.data == apply_changes(json.loads(json.dumps(DATA)), [json.loads(change_text)])
    # The caller's change is as it was (a tuple still a tuple, nothing merged into what it set).
    assert change == before and type(change["set"]["openInterrupts"]) is list
    if "unset" in change:
        assert type(change["unset"]) is tuple


def test_the_caller_changing_its_change_after_the_append_changes_nothing_stored() -> None:
    store = _store_with(DATA)
    change = _change()
    expected = apply_changes(json.loads(json.dumps(DATA)), [json.loads(encode_data("t", change))])

    store.append("t", change, expected_version=1)
    change["set"]["openInterrupts"][0]["responseSchema"]["title"] = "changed"
    change["merge"]["usageByRun"]["r1"].append("more")
    first = store.load("t")
    assert first is not None
    first.data["openInterrupts"].clear()  # (what a load hands out is the caller's own too)

    stored = store.load("t")
    assert stored is not None and stored.data == expected


def test_a_change_orjson_did_not_write_is_folded_from_its_text(monkeypatch: pytest.MonkeyPatch) -> None:
    # An integer past 64 bits: orjson refuses it, the standard library writes the record as text. Its
    # fold goes the way every store's goes (parsed from the text, walked before it is written).
    store = _store_with(DATA)
    change = {"set": {"openInterrupts": _forms(60), "state": {"big": 2**70}}}
    read: list[int] = []
    load_record = store_base.load_record
    monkeypatch.setattr(store_base, "load_record", lambda text: read.append(len(text)) or load_record(text))

    store.append("t", change, expected_version=1)
    monkeypatch.undo()

    assert len(encode_data("t", change)) in read
    stored = store.load("t")
    assert stored is not None and stored.changes == 0
    assert stored.data["state"] == {"big": 2**70} and type(stored.data["state"]["big"]) is int
    assert isinstance(store._records["t"].text, str)


def test_a_change_that_cannot_be_folded_still_lands_and_its_load_names_the_thread() -> None:
    # Keeping more messages than the record holds: the fold fails (and is logged), the append stands,
    # and a load says what is wrong, as when the change was folded from its text.
    store = _store_with(DATA)
    damaged = {"messagesFrom": 5, "messages": [], "set": {"openInterrupts": _forms(60)}}

    version = store.append("t", damaged, expected_version=1)

    assert version == 2 and store._records["t"].count == 1
    with pytest.raises(StoreError) as caught:
        store.load("t")
    assert caught.value.thread_id == "t"
    assert "a stored change cannot be read" in str(caught.value)
