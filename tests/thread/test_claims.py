"""Claims across writers and replicas: stale copies, racing replicas, a run that lets go, a save that fails,
one run at a time.

Every test body runs through both shells (``drive``: sync and async) against a real ``ScriptedAgent``
served by uvicorn on 127.0.0.1; the agent records what it received, so "nothing was sent" is a count of
requests.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from threadkit import WholeOnly, finishing, interrupted

import agui_client as ag
from agui_client.stores import MemoryStore, SqliteStore
from agui_client.testing import (
    Finish,
    Gate,
    Respond,
    ScriptedAgent,
    Start,
    Wait,
    serve,
    text_message,
)


class _GoesDown(MemoryStore):
    """A store that fails (``StoreError``) on every write once ``down`` is set: Redis gone mid-run."""

    down = False

    def save(self, thread_id: str, data: Any, *, expected_version: int | None) -> int:
        self._fail(thread_id)
        return super().save(thread_id, data, expected_version=expected_version)

    def append(self, thread_id: str, changes: Any, *, expected_version: int) -> int:
        self._fail(thread_id)
        return super().append(thread_id, changes, expected_version=expected_version)

    def release(self, thread_id: str, *, claimed_version: int, owner: str) -> int:
        self._fail(thread_id)
        return super().release(thread_id, claimed_version=claimed_version, owner=owner)

    def _fail(self, thread_id: str) -> None:
        if self.down:
            raise ag.StoreError("the store is down", thread_id=thread_id)


def test_a_stale_copy_of_a_thread_is_refused_before_it_sends_anything(drive: Any, served: Any) -> None:
    # Nothing lost or sent twice across replicas, for every run (not only resumes): a copy loaded
    # before another writer ran on the thread would send stale history that skips the interrupt the
    # other run raised. It is refused by its claim, before the request; reload() catches up.
    endpoint = served(ScriptedAgent([finishing(None), finishing(
        {"type": "interrupt", "interrupts": [{"id": "i1", "reason": "approval"}]})], stateless=True))

    with drive.client(endpoint.url, store=MemoryStore()) as client:
        first = client.thread()
        first.run("hello")
        stale = client.thread(first.id)
        first.run("delete it")  # interrupted: the stale copy does not know
        with pytest.raises(ag.ConcurrentResume):
            stale.run("something else")
        sent = endpoint.agent.request_count
        stale.reload()

    assert sent == 2
    assert [i.id for i in stale.open_interrupts] == ["i1"]


class _LosesOneReply(MemoryStore):
    """A memory store whose next claim lands and then fails as if its reply were lost."""

    lose_next_claim = False

    def claim(self, thread_id: str, *, expected_version: int | None, owner: str, data: Any = None,
              record_id: str | None = None) -> int:
        version = super().claim(thread_id, expected_version=expected_version, owner=owner, data=data,
                                record_id=record_id)
        if self.lose_next_claim:
            self.lose_next_claim = False
            raise ag.StoreError("the connection dropped before the reply", thread_id=thread_id)
        return version


def _created_in_doubt(client: Any, store: Any) -> Any:
    """A new thread of ``client`` whose first run's claim landed in ``store`` and whose reply was lost."""
    thread = client.thread()
    store.lose_next_claim = True
    with pytest.raises(ag.StoreError):
        thread.run("lost")
    return thread


@pytest.mark.parametrize("reloaded", [True, False], ids=["reloaded", "run-again"])
def test_a_create_in_doubt_whose_record_was_deleted_makes_its_new_record_with_a_new_id(
        drive: Any, served: Any, reloaded: bool) -> None:
    # The id of a create whose reply was lost is kept for the create sent again (the store recognises
    # it as the same owner's), but not once the record is gone, whether a reload() found that out or
    # the next run looks before it creates: a new record with the old id would pass for the old one
    # with whoever still holds it.
    endpoint = served(ScriptedAgent.chat("noted"))
    store = _LosesOneReply()

    with drive.client(endpoint.url, store=store) as client:
        doubtful = _created_in_doubt(client, store)
        holder = client.thread(doubtful.id)
        holder.release_claim(force=True)
        old = store.load(holder.id)
        store.delete(holder.id)
        if reloaded:
            doubtful.reload()
        doubtful.run("a new thread")
        new = store.load(doubtful.id)
        with pytest.raises(ag.ConcurrentResume) as refused:
            holder.run("stale")
        assert refused.value.thread_id == holder.id and "deleted and created again" in str(refused.value)

    assert old is not None and new is not None and (old.version, new.version) == (1, 1)
    assert new.record_id != old.record_id
    assert endpoint.agent.request_count == 1


class _Racing:
    """A store whose next claim lands and then fails as if its reply were lost, and whose next load is
    followed at once by ``after_next_load()`` (another replica's write between a read and what follows)."""

    lose_next_claim = False
    after_next_load: Callable[[], object] | None = None

    def claim(self, thread_id: str, *, expected_version: int | None, owner: str, data: Any = None,
              record_id: str | None = None) -> int:
        version: int = super().claim(  # type: ignore[misc]
            thread_id, expected_version=expected_version, owner=owner, data=data, record_id=record_id)
        if self.lose_next_claim:
            self.lose_next_claim = False
            raise ag.StoreError("the connection dropped before the reply", thread_id=thread_id)
        return version

    def load(self, thread_id: str) -> Any:
        stored = super().load(thread_id)  # type: ignore[misc]
        after, self.after_next_load = self.after_next_load, None
        if after is not None:
            after()
        return stored


class _RacingMemory(_Racing, MemoryStore):
    pass


class _RacingSqlite(_Racing, SqliteStore):
    pass


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_create_in_doubt_whose_record_moved_on_is_not_sent_again_with_its_id_when_a_delete_follows_the_read(
        drive: Any, served: Any, tmp_path: Path, kind: str) -> None:
    # The race the look before a create in doubt left open: the look finds the record (so the create
    # used to keep its id), another replica deletes it, and the create sent again made a new record
    # with the old id. Here the record had moved on (a holder let the claim go and holds it at version
    # 1), so the thread made again reached version 1 under that id and the holder's stale run passed.
    # The id is kept only when the look finds this object's own create, still claimed at version 0.
    # (On SQLite the delete is another store object's, as another process's would be.)
    endpoint = served(ScriptedAgent.chat("noted"))
    path = tmp_path / "threads.db"
    store = _RacingMemory() if kind == "memory" else _RacingSqlite(path)
    other = store if kind == "memory" else SqliteStore(path)

    with store, other, drive.client(endpoint.url, store=store) as client:
        doubtful = _created_in_doubt(client, store)
        holder = client.thread(doubtful.id)
        holder.release_claim(force=True)
        old = other.load(holder.id)
        store.after_next_load = lambda: other.delete(doubtful.id)
        doubtful.run("a new thread")
        new = other.load(doubtful.id)
        with pytest.raises(ag.ConcurrentResume) as refused:
            holder.run("stale")
        assert refused.value.thread_id == holder.id and "deleted and created again" in str(refused.value)

    assert old is not None and new is not None and (old.version, new.version) == (1, 1)
    assert new.record_id != old.record_id
    assert [m.content for m in endpoint.agent.requests[-1].messages] == ["a new thread"]
    assert endpoint.agent.request_count == 1


def test_a_create_in_doubt_found_as_its_own_claim_is_sent_again_with_its_id_and_recognised(
        drive: Any, served: Any) -> None:
    # The create landed and its reply was lost: the look finds this object's own claim at version 0,
    # and the create sent again with the same id is the store's to recognise (nothing claimed twice).
    endpoint = served(ScriptedAgent.chat("noted"))
    store = _LosesOneReply()

    with drive.client(endpoint.url, store=store) as client:
        doubtful = _created_in_doubt(client, store)
        created = store.load(doubtful.id)
        doubtful.run("again")
        saved = store.load(doubtful.id)

    assert created is not None and saved is not None
    assert (created.version, saved.version, saved.claim) == (0, 1, None)
    assert saved.record_id == created.record_id
    assert endpoint.agent.request_count == 1


def test_release_claim_by_an_object_that_never_loaded_the_thread_takes_it_first(drive: Any, served: Any) -> None:
    # The object was made before another writer created the thread (so it holds no record), and that
    # writer died holding a claim: letting the claim go leaves the object at the version the release
    # makes, so it must hold that record's history too, or its next run would send its own (none)
    # and save it over the thread.
    endpoint = served(ScriptedAgent.chat("noted"))
    store = MemoryStore()

    with drive.client(endpoint.url, store=store) as client:
        early = client.thread()
        writer = client.thread(early.id)
        writer.run("first")
        writer.run("second")
        dead = store.load(early.id)
        assert dead is not None
        store.claim(early.id, expected_version=dead.version, owner="a replica that died")
        early.release_claim(force=True)
        early.run("third")

    sent = endpoint.agent.requests[-1]
    assert [m.content for m in sent.messages] == ["first", "noted", "second", "noted", "third"]
    stored = store.load(early.id)
    assert stored is not None and len(stored.data["messages"]) == 6


class _Forwarding:
    """A store proxy that forwards every call through ``__getattr__`` (audit, metrics)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class _EarlierProtocol(WholeOnly):
    """A store of the earlier protocol: its claim cannot create either, and nothing takes a record id."""

    def claim(self, thread_id: str, *, expected_version: int, owner: str) -> int:  # type: ignore[override]
        return self.inner.claim(thread_id, expected_version=expected_version, owner=owner)


class _DropsOptions(MemoryStore):
    """A subclass whose claim takes ``**options`` and passes none of them on."""

    def claim(self, thread_id: str, *, expected_version: int | None, owner: str, data: Any = None,
              **options: Any) -> int:
        return super().claim(thread_id, expected_version=expected_version, owner=owner, data=data)


@pytest.mark.parametrize("first, second", [("memory", "earlier"), ("earlier", "memory")])
def test_proxies_of_different_stores_are_each_read_for_what_they_take(
        drive: Any, served: Any, first: str, second: str) -> None:
    endpoint = served(ScriptedAgent.chat("noted"))
    made = {"memory": MemoryStore, "earlier": _EarlierProtocol}

    for kind in (first, second):
        inner = made[kind]()
        with drive.client(endpoint.url, store=_Forwarding(inner)) as client:
            thread = client.thread()
            thread.run("hello")
            thread.run("again")
        stored = inner.load(thread.id)
        # (a MemoryStore appends the second run; the earlier protocol's store is saved whole, and its
        # new thread was created by a save before its claim)
        assert stored is not None and stored.version == (3 if kind == "memory" else 5), kind


def test_a_subclass_whose_claim_takes_options_it_drops_still_runs(drive: Any, served: Any) -> None:
    # A record id is named only to a method with a parameter of that name: **options might drop it,
    # and the thread would take the store's random id for the one it named (its save then refused).
    endpoint = served(ScriptedAgent.chat("noted"))

    with drive.client(endpoint.url, store=_DropsOptions()) as client:
        thread = client.thread()
        first = thread.run("hello")
        second = thread.run("again")

    assert (first.outcome, second.outcome, thread.version) == ("success", "success", 3)


def test_two_replicas_answering_one_tool_call_send_it_once(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))

    with drive.client(endpoint.url, store=MemoryStore()) as client:
        asked = client.thread()
        (call_id,) = asked.run("choose").pending_tool_call_ids
        one, two = client.thread(asked.id), client.thread(asked.id)
        one.add_tool_result(call_id, "yes")
        two.add_tool_result(call_id, "no")
        one.run()
        with pytest.raises(ag.ConcurrentResume):
            two.run()

    assert endpoint.agent.request_count == 2
    assert endpoint.received[-1].body["messages"][-1]["content"] == "yes"


@pytest.mark.parametrize("how", ["run", "stream-left-early"])
def test_a_run_that_is_not_a_resume_lets_go_of_the_thread_when_it_fails(drive: Any, served: Any, how: str) -> None:
    # Its claim is released (sending the turn again is an ordinary retry); a resume's stays held.
    endpoint = served(ScriptedAgent([finishing(None), Respond(status=500, body="oops"),
                                     [Start(), *text_message("m1", "a b c d"), Finish()], finishing(None)]))

    with drive.client(endpoint.url, store=MemoryStore()) as client:
        thread = client.thread()
        thread.run("hello")
        with pytest.raises(ag.HTTPStatusError):
            thread.run("again")
        if how == "stream-left-early":
            with thread.stream("and again") as events:
                next(iter(events))
        result = thread.run("once more")
        elsewhere = client.thread(thread.id)

    assert result.outcome == "success"
    assert elsewhere.version == thread.version


def test_a_thread_loaded_from_the_store_sees_runs_made_elsewhere_after_reload(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.chat("noted"))
    store = MemoryStore()

    with drive.client(endpoint.url, store=store) as client:
        writer = client.thread()
        writer.run("first")
        reader = client.thread(writer.id)
        loaded = reader.state.messages
        writer.run("second")
        reader.reload()

    assert loaded == writer.state.messages[:2]
    assert reader.state.messages == writer.state.messages
    assert len(reader.state.messages) == 4


def test_release_claim_refuses_a_claim_another_writer_holds_unless_forced(drive: Any, served: Any) -> None:
    # Returning quietly would let the caller believe the thread is free; force=True is the
    # operator's way past a writer that died mid-resume.
    # (a 500 may come after the agent acted: the resume keeps its claim)
    endpoint = served(ScriptedAgent([[Start(), interrupted("ask-1")], Respond(status=500, body="broke"),
                                     [Start(), Finish()]]))

    with drive.client(endpoint.url, store=MemoryStore()) as client:
        writer = client.thread()
        writer.run("hi")
        with pytest.raises(ag.HTTPStatusError):
            writer.run(resume=writer.resume_builder().answer("ask-1", "go"))
        other = client.thread(writer.id)
        with pytest.raises(ag.ConcurrentResume) as caught:
            other.release_claim()
        other.release_claim(force=True)
        result = other.run(resume=other.resume_builder().answer("ask-1", "go"))

    assert caught.value.thread_id == writer.id and "force=True" in str(caught.value)
    assert result.outcome == "success" and endpoint.agent.request_count == 3


@pytest.mark.parametrize("how", ["run", "stream"])
@pytest.mark.parametrize("resuming", [False, True])
def test_a_response_left_open_after_the_run_ended_does_not_fail_the_saved_run(
    drive: Any, served: Any, gate: Gate, how: str, resuming: bool, caplog: pytest.LogCaptureFixture
) -> None:
    # The run finished and was saved; the agent then kept the response open and went silent. Raising
    # IdleTimeout would report a finished run as failed (a retry would send the turn twice) and, for a
    # resume, claim a hold the save had already ended. The result stands, with a TR-13 warning.
    script = [[Start(), Finish(), Wait(gate, timeout=20)]]
    if resuming:
        script.insert(0, [Start(), interrupted("ask-1")])
    endpoint = served(ScriptedAgent(script))
    store = MemoryStore()

    with drive.client(endpoint.url, store=store, idle_timeout=0.5) as client:
        thread = client.thread()
        if resuming:
            thread.run("hi")
        attempt: dict[str, Any] = ({"resume": thread.resume_builder().answer("ask-1", "go")} if resuming
                                   else {"message": "hi"})
        with caplog.at_level(logging.WARNING, logger="agui_client"):
            if how == "run":
                result = thread.run(**attempt)
            else:
                with thread.stream(**attempt) as events:
                    kinds = [type(e).__name__ for e in events]
                result = events.result
                assert kinds[-1] == "RunFinishedEvent"
    stored = store.load(thread.id)

    assert gate.reached and result is not None and result.outcome == "success"
    assert [w.code for w in result.warnings] == ["TR-13"]
    assert stored is not None and stored.claim is None and thread.version == stored.version
    assert not any("stays claimed" in r.getMessage() for r in caplog.records)


def test_one_run_at_a_time_per_thread_object(drive: Any, served: Any, gate: Gate) -> None:
    # A second run, a reload() or a release_claim() on an object whose run is in flight would
    # interleave two histories, drop the run or free its claim: refused, typed, nothing sent. Once
    # the run has ended, the object runs again.
    endpoint = served(ScriptedAgent([finishing(None), [Start(), Wait(gate), *text_message("a1", "the reply"),
                                                        Finish()], finishing(None)]))
    store = MemoryStore()
    refused: list[str] = []

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        thread.run("hello")
        results: list[Any] = []
        running = threading.Thread(target=lambda: results.append(thread.run("second question")))
        running.start()
        assert gate.wait_reached(10)
        for attempt in (lambda: thread.run("third"), thread.reload, thread.release_claim):
            try:
                attempt()
            except ag.ThreadBusy as exc:
                refused.append(exc.thread_id)
        gate.open()
        running.join(10)
        after = thread.run("afterwards")
    stored = ag.ThreadState.load(store.load(thread.id).data)  # type: ignore[union-attr]

    assert refused == [thread.id] * 3
    assert results[0].outcome == "success" and after.outcome == "success"
    assert endpoint.agent.request_count == 3
    assert [getattr(m, "content", None) for m in stored.messages][1:4] == ["second question", "the reply",
                                                                            "afterwards"]


def test_a_turn_interrupted_in_a_stream_is_not_replaced_by_a_store_error_at_release(
    caplog: pytest.LogCaptureFixture
) -> None:
    # The caller's Ctrl-C inside the block is what reaches the caller, even when the store cannot
    # take the claim back (logged).
    class NoRelease(MemoryStore):
        def release(self, thread_id: str, *, claimed_version: int, owner: str) -> int:
            raise ag.StoreError("the store is down", thread_id=thread_id)

    store = NoRelease()
    store.save("t", ag.ThreadState(messages=[ag.UserMessage(id="u1", content="hi")]).dump(), expected_version=None)
    with serve(ScriptedAgent([[Start(), *text_message("a1", "reply"), Finish()]])) as server:
        with ag.AgentClient(server.url, store=store) as client:
            thread = client.thread("t")
            with caplog.at_level(logging.WARNING, logger="agui_client"), pytest.raises(KeyboardInterrupt):
                with thread.stream("again") as events:
                    next(iter(events))
                    raise KeyboardInterrupt

    assert any("could not release its claim" in r.getMessage() and "the store is down" in r.getMessage()
               for r in caplog.records)


@pytest.mark.parametrize("how", ["run", "stream"])
@pytest.mark.parametrize("fault", ["vanished", "down"])
@pytest.mark.parametrize("turn", ["first", "later", "resume"])
def test_a_save_that_fails_after_the_agent_answered_is_the_error_seen_and_carries_the_run(
    drive: Any, served: Any, how: str, fault: str, turn: str
) -> None:
    # While the agent answers, the record vanishes (an operator's delete, a Redis restart without
    # persistence) or the store goes down: the run's save fails, and so would the release of its
    # claim. The caller sees the save's error, marked as answered, carrying the answered run; never
    # the release's, which would read as a refusal before anything was sent.
    store = _GoesDown()

    def answering(run_input: Any) -> list[Any]:
        if fault == "vanished":
            store.delete(run_input.thread_id)
        else:
            store.down = True
        return [Start(), *text_message("a1", "the answer"), Finish()]

    earlier = {"first": [], "later": [finishing(None)], "resume": [[Start(), interrupted("ask-1")]]}[turn]
    endpoint = served(ScriptedAgent([*earlier, answering]))

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        if earlier:
            thread.run("hello")
        attempt: dict[str, Any] = ({"resume": thread.resume_builder().answer("ask-1", "go")} if turn == "resume"
                                   else {"message": "the question"})
        with pytest.raises((ag.ConcurrentResume, ag.StoreError)) as caught:
            if how == "run":
                thread.run(**attempt)
            else:
                with thread.stream(**attempt) as events:
                    list(events)
    store.down = False
    stored = store.load(thread.id)

    error = caught.value
    assert type(error) is (ag.ConcurrentResume if fault == "vanished" else ag.StoreError)
    assert error.agent_answered is True
    assert error.result is not None and error.result.outcome == "success" and error.result.text == "the answer"
    assert error.result.run_id == endpoint.agent.requests[-1].run_id
    assert endpoint.agent.request_count == len(earlier) + 1
    if fault == "vanished":
        assert stored is None
    else:  # (not saved, and the claim could not be given back either)
        assert stored is not None and stored.claim is not None


def test_a_resume_whose_run_was_saved_reports_no_claim_when_the_caller_then_raises(
    drive: Any, served: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # The save of the finished run ended the claim: the caller's own error afterwards (here inside
    # the block, e.g. raise_for_outcome()) must not be told, or logged, that the thread stays claimed.
    endpoint = served(ScriptedAgent([[Start(), interrupted("ask-1")], [Start(), Finish()]]))
    store = MemoryStore()

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        thread.run("hi")
        with caplog.at_level(logging.WARNING, logger="agui_client"):
            with pytest.raises(LookupError):
                with thread.stream(resume=thread.resume_builder().answer("ask-1", "go")) as events:
                    for _ in events:
                        pass
                    raise LookupError("the caller's own code")
    stored = store.load(thread.id)

    assert stored is not None and stored.claim is None and thread.version == stored.version
    assert not any("claimed" in r.getMessage() for r in caplog.records)
