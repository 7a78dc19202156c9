"""A run's save appends what the run changed (``IncrementalStore.append``) instead of rewriting the thread.

Every test body runs through both shells (``drive``) against a real ``ScriptedAgent`` on 127.0.0.1. The
store records which writes it was asked for; what it holds is compared with the thread's whole dump.
(The suite also checks every append against the dump as it is written: ``tests/conftest.py`` turns on
``standing._VERIFY_CHANGES``.)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from threadkit import WholeOnly, finishing

import agui_client as ag
from agui_client.stores import MemoryStore, StoredThread
from agui_client.testing import ScriptedAgent
from agui_client.wire import codec


def _json(value: Any) -> Any:
    return json.loads(json.dumps(value))


class Recording(MemoryStore):
    """A memory store that notes each write it is asked for, and can fail the next append."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []
        self.fail_append = False

    def save(self, thread_id: str, data: Any, *, expected_version: int | None) -> int:
        self.ops.append("save")
        return super().save(thread_id, data, expected_version=expected_version)

    def append(self, thread_id: str, changes: Any, *, expected_version: int) -> int:
        self.ops.append("append")
        if self.fail_append:
            self.fail_append = False
            raise ag.StoreError("the store is down", thread_id=thread_id)
        return super().append(thread_id, changes, expected_version=expected_version)

    def claim(self, thread_id: str, *, expected_version: int | None, owner: str, data: Any = None) -> int:
        self.ops.append("claim" if expected_version is not None else "create")
        return super().claim(thread_id, expected_version=expected_version, owner=owner, data=data)

    def release(self, thread_id: str, *, claimed_version: int, owner: str) -> int:
        self.ops.append("release")
        return super().release(thread_id, claimed_version=claimed_version, owner=owner)


def _stored(store: Any, thread: Any) -> StoredThread:
    stored = store.load(thread.id)
    assert stored is not None
    return stored


def test_a_threads_runs_append_their_changes_and_the_record_is_the_whole_thread(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.chat("fine, thanks"))
    store = Recording()

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        for n in range(5):
            assert thread.run(f"question {n}").outcome == "success"
        stored = _stored(store, thread)

    # The first turn created the record with its claim and saved its run whole (the record held an
    # empty thread: the run's changes were all of it); every later run's save appended its changes.
    assert store.ops == ["create", "save", *["claim", "append"] * 4]
    assert stored.changes == 4 and stored.version == thread.version
    assert stored.data == _json(thread.state.dump())
    assert len(stored.data["messages"]) == 10


def test_a_thread_loaded_by_another_object_appends_to_the_record_it_loaded(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.chat("fine, thanks"))
    store = Recording()

    with drive.client(endpoint.url, store=store) as client:
        first = client.thread()
        first.run("hello")
        again = client.thread(first.id)  # (a later request of a server: the thread loaded from the store)
        store.ops.clear()
        again.run("and again")
        stored = _stored(store, again)
        first.reload()
        store.ops.clear()
        first.run("a third time")
        after = _stored(store, first)

    assert store.ops == ["claim", "append"]
    assert stored.data == _json(again.state.dump())
    assert after.data == _json(first.state.dump()) and len(after.data["messages"]) == 6


def test_a_failed_append_makes_the_next_save_whole(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.chat("fine, thanks"))
    store = Recording()

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        thread.run("one")
        store.fail_append = True
        with pytest.raises(ag.StoreError) as caught:
            thread.run("two")
        assert caught.value.agent_answered is True
        store.ops.clear()
        thread.run("three")  # (the thread still holds run two; the record does not)
        whole = _stored(store, thread)
        thread.run("four")
        stored = _stored(store, thread)

    assert store.ops == ["claim", "save", "claim", "append"]
    assert whole.changes == 0 and [m["content"] for m in whole.data["messages"] if m["role"] == "user"] == [
        "one", "two", "three"]
    assert stored.changes == 1 and stored.data == _json(thread.state.dump())


def test_a_store_without_append_gets_whole_saves(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.chat("fine, thanks"))
    store = WholeOnly()

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        for n in range(3):
            thread.run(f"question {n}")
        loaded = client.thread(thread.id)
        loaded.run("from another object")
        stored = _stored(store, loaded)

    assert store.saves == 4
    assert stored.changes == 0 and stored.data == _json(loaded.state.dump())
    assert len(stored.data["messages"]) == 8


def test_a_resume_and_a_tool_loop_append_what_they_changed(drive: Any, served: Any) -> None:
    store = Recording()
    asking = served(ScriptedAgent.interrupts(1))
    tools = served(ScriptedAgent.frontend_tool("confirm_choice"))

    with drive.client(asking.url, store=store) as client:
        thread = client.thread()
        assert thread.run("delete it").outcome == "interrupt"
        builder = thread.resume_builder()
        for interrupt in thread.open_interrupts:
            builder.answer(interrupt.id, {"answer": "yes"})
        assert thread.run(resume=builder).outcome == "success"
        asked = _stored(store, thread)
    with drive.client(tools.url, store=store) as client:
        looping = client.thread(tool_handlers={"confirm_choice": lambda question: "blue"})
        assert looping.run_until_done("pick a colour").outcome == "success"
        looped = _stored(store, looping)

    # Each new thread's first run is saved whole; the resume and the tool loop's runs after it append.
    assert store.ops == ["create", "save", "claim", "append", "create", "save", *["claim", "append"] * (
        store.ops.count("append") - 1)]
    assert store.ops.count("append") >= 2
    assert asked.data == _json(thread.state.dump()) and asked.data["openInterrupts"] == []
    assert looped.data == _json(looping.state.dump()) and looped.data["pendingToolCallIds"] == []
    assert [m["role"] for m in looped.data["messages"]].count("tool") == 1


def test_an_interrupted_run_appends_its_open_interrupts(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([finishing(None), finishing(
        {"type": "interrupt", "interrupts": [{"id": "i1", "reason": "approval"}]})], stateless=True))
    store = Recording()

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        thread.run("hello")
        thread.run("again")
        stored = _stored(store, thread)

    assert store.ops[-1] == "append"
    assert stored.data["openInterrupts"] == [{"id": "i1", "reason": "approval"}]
    assert stored.data == _json(thread.state.dump())


def test_a_run_whose_snapshot_restates_the_thread_saves_it_whole(drive: Any, served: Any) -> None:
    # An agent that sends MESSAGES_SNAPSHOT with the whole thread on every run (its messages new
    # objects, equal or not): the run's changes restate every message, so the save writes the thread
    # whole, which costs no more and leaves the store nothing to fold.
    def restating(run_input: Any) -> list[dict[str, Any]]:
        ids = {"threadId": run_input.thread_id, "runId": run_input.run_id}
        history = codec.encode(run_input.messages)
        answer = {"id": f"a-{run_input.run_id}", "role": "assistant", "content": "noted"}
        return [{"type": "RUN_STARTED", **ids}, {"type": "MESSAGES_SNAPSHOT", "messages": [*history, answer]},
                {"type": "RUN_FINISHED", **ids}]

    endpoint = served(ScriptedAgent([restating] * 3, stateless=True))
    store = Recording()

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        for n in range(3):
            assert thread.run(f"question {n}").outcome == "success"
        stored = _stored(store, thread)

    assert store.ops == ["create", "save", "claim", "save", "claim", "save"]
    assert stored.changes == 0 and stored.data == _json(thread.state.dump())
    assert [m["role"] for m in stored.data["messages"]] == ["user", "assistant"] * 3


class AuditedSaves(MemoryStore):
    """An application's store that overrides ``save`` alone, to see every save (it knows no ``append``)."""

    def __init__(self) -> None:
        super().__init__()
        self.saved: list[int | None] = []

    def save(self, thread_id: str, data: Mapping[str, Any], *, expected_version: int | None) -> int:
        self.saved.append(expected_version)
        return super().save(thread_id, data, expected_version=expected_version)


def test_a_store_that_overrides_save_alone_keeps_getting_every_save(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.chat("fine"))
    store = AuditedSaves()

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        for n in range(3):
            thread.run(f"question {n}")
        stored = _stored(store, thread)

    # (each run's save, whole: the append it inherited would have passed its save by)
    assert store.saved == [0, 2, 4]
    assert stored.changes == 0 and stored.data == _json(thread.state.dump())


def test_a_store_class_changed_after_a_thread_object_was_made_is_read_again(
        drive: Any, served: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # What a store's methods take is read once per class (a thread object per request would otherwise
    # read four signatures each time), and again when a method of the class was replaced since.
    endpoint = served(ScriptedAgent.chat("noted"))

    class Audited(MemoryStore):
        pass

    seen: list[int | None] = []

    def save(self: MemoryStore, thread_id: str, data: Any, *, expected_version: int | None) -> int:
        seen.append(expected_version)  # (the earlier protocol: no record_id)
        return MemoryStore.save(self, thread_id, data, expected_version=expected_version)

    with drive.client(endpoint.url, store=Audited()) as client:
        client.thread().run("before")
        monkeypatch.setattr(Audited, "save", save)
        after = client.thread()
        after.run("after")
        after.run("and again")

    assert seen == [0, 2]  # (save overridden alone: whole saves, as for any such subclass)
