"""Record ids: a thread deleted and created again is another record, even at the same version.

A writer that holds a thread at version 2, while another deletes it and creates a new thread under the
same id and writes it up to version 2, used to pass every compare-and-set: its append then added its
run's changes onto a record it never held (the two threads mixed), and its claim let a run go out with
the old thread's history. Every write that names the record id it read or created is now refused
unless the record still has it; every store, the same rule (``check_write``).
"""

from __future__ import annotations

from typing import Any

import pytest
from backendkit import (
    Backend,
    small,
)

from agui_client.errors import ConcurrentResume
from agui_client.stores import ThreadStore
from agui_client.testing import ScriptedAgent

__all__: list[str] = []


@pytest.fixture
def store(backend: Backend) -> ThreadStore:
    return backend.store


def test_a_thread_object_holding_a_thread_made_again_is_refused_before_it_sends(
        backend: Backend, drive: Any, served: Any) -> None:
    # Through the run protocol (both shells), every store: another store object on the same records
    # (another process) deletes the thread and makes it again up to the version the old object holds.
    # The version alone cannot tell: the old object's claim names the record it created, so it is
    # refused before it sends the old thread's history, and nothing is written, not even a claim
    # (its save would have appended onto the new thread's record).
    endpoint = served(ScriptedAgent.chat("noted"))
    store, other_store = backend.store, backend.reopen()

    with drive.client(endpoint.url, store=store) as client, drive.client(endpoint.url, store=other_store) as other:
        old = client.thread()
        old.run("the old thread")
        first = store.load(old.id)
        other_store.delete(old.id)
        new = other.thread(old.id)
        new.run("the new thread")
        assert (old.version, new.version) == (1, 1)
        before = store.load(old.id)
        with pytest.raises(ConcurrentResume) as refused:
            old.run("stale")
        assert refused.value.thread_id == old.id and "deleted and created again" in str(refused.value)
        sent = endpoint.agent.request_count
        after = store.load(old.id)
        old.reload()

    assert sent == 2
    assert first is not None and after is not None and first.record_id != after.record_id
    assert isinstance(after.record_id, str) and after == before
    assert (after.version, after.claim) == (1, None)
    assert [m["content"] for m in after.data["messages"]][0] == "the new thread"
    assert old.state.messages == new.state.messages


def _recreated(store: ThreadStore, old: str, new: str) -> None:
    """Thread ``t`` at version 2 with record id ``old``, then deleted and made again with ``new`` up to
    version 2: the same version, another record."""
    store.save("t", small(1), expected_version=None, record_id=old)
    assert store.save("t", small(2), expected_version=1, record_id=old) == 2
    store.delete("t")
    store.save("t", small(8), expected_version=None, record_id=new)
    assert store.save("t", small(9), expected_version=1, record_id=new) == 2


@pytest.mark.parametrize("write", ["append", "save", "claim"])
def test_a_stale_writer_is_refused_by_a_record_made_again_at_its_version(store: ThreadStore, write: str) -> None:
    _recreated(store, "old-record", "new-record")
    before = store.load("t")
    assert before is not None and before.version == 2 and before.record_id == "new-record"

    with pytest.raises(ConcurrentResume) as refused:
        if write == "append":
            store.append("t", {"messagesFrom": 1, "messages": [{"id": "x", "role": "user", "content": "stale"}]},  # type: ignore[attr-defined]
                         expected_version=2, record_id="old-record")
        elif write == "save":
            store.save("t", small(3), expected_version=2, record_id="old-record")
        else:
            store.claim("t", expected_version=2, owner="stale", record_id="old-record")
    assert "deleted and created again" in str(refused.value)

    assert (refused.value.thread_id, refused.value.expected_version, refused.value.actual_version) == ("t", 2, 2)
    assert store.load("t") == before  # (nothing written)


def test_a_stale_release_is_refused_too(store: ThreadStore) -> None:
    store.claim("t", expected_version=None, owner="a", data=small(1), record_id="old-record")
    store.delete("t")
    store.claim("t", expected_version=None, owner="a", data=small(2), record_id="new-record")

    with pytest.raises(ConcurrentResume) as refused:
        store.release("t", claimed_version=0, owner="a", record_id="old-record")
    assert refused.value.thread_id == "t" and "deleted and created again" in str(refused.value)
    stored = store.load("t")
    assert stored is not None and stored.claim == "a" and stored.record_id == "new-record"


def test_the_record_id_is_kept_by_every_write_until_the_thread_is_deleted(store: ThreadStore) -> None:
    seen = []
    store.claim("t", expected_version=None, owner="a", data=small(1), record_id="r1")
    seen.append(store.load("t"))
    store.save("t", small(2), expected_version=0, record_id="r1")
    seen.append(store.load("t"))
    store.append("t", {"set": {"lastRunId": "run-2"}}, expected_version=1, record_id="r1")  # type: ignore[attr-defined]
    seen.append(store.load("t"))
    store.claim("t", expected_version=2, owner="a")  # (no id named: nothing checked, nothing changed)
    seen.append(store.load("t"))
    store.release("t", claimed_version=3, owner="a", record_id="r1")
    seen.append(store.load("t"))

    assert [(s.version, s.record_id) for s in seen if s is not None] == [(0, "r1"), (1, "r1"), (2, "r1"), (3, "r1"),
                                                                         (4, "r1")]


def test_a_create_without_a_record_id_gets_a_fresh_one(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)
    first = store.load("t")
    store.delete("t")
    store.claim("t", expected_version=None, owner="a", data=small(1))
    second = store.load("t")

    assert first is not None and second is not None
    assert isinstance(first.record_id, str) and isinstance(second.record_id, str)
    assert len(first.record_id) >= 16 and first.record_id != second.record_id


def test_writes_that_name_no_record_id_check_nothing(store: ThreadStore) -> None:
    # (the earlier protocol: a caller, or a store wrapper, that never heard of record ids)
    _recreated(store, "old-record", "new-record")

    assert store.save("t", small(3), expected_version=2) == 3
    assert store.claim("t", expected_version=3, owner="a") == 4
    assert store.release("t", claimed_version=4, owner="a") == 5


def test_a_lost_creating_claim_is_recognised_only_with_its_own_record_id(store: ThreadStore) -> None:
    assert store.claim("t", expected_version=None, owner="a", data=small(1), record_id="mine") == 0

    # (the same owner's retry after a lost reply: the same id, recognised, nothing written)
    assert store.claim("t", expected_version=None, owner="a", data=small(1), record_id="mine") == 0
    with pytest.raises(ConcurrentResume) as refused:
        store.claim("t", expected_version=None, owner="a", data=small(1), record_id="another")
    assert refused.value.thread_id == "t" and "already exists" in str(refused.value)
    stored = store.load("t")
    assert stored is not None and (stored.version, stored.claim, stored.record_id) == (0, "a", "mine")


@pytest.mark.parametrize("bad", ["", "x" * 129, 7, b"bytes"])
def test_a_malformed_record_id_is_refused_before_anything_is_written(store: ThreadStore, bad: Any) -> None:
    with pytest.raises(ValueError) as refused:
        store.save("t", small(1), expected_version=None, record_id=bad)
    assert "record id" in str(refused.value)
    assert store.load("t") is None
    store.save("t", small(1), expected_version=None, record_id="ok")
    with pytest.raises(ValueError) as refused:
        store.append("t", {"set": {}}, expected_version=1, record_id=bad)  # type: ignore[attr-defined]
    assert "record id" in str(refused.value)
    stored = store.load("t")
    assert stored is not None and stored.version == 1
