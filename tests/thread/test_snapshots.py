"""STATE_SNAPSHOT documents (adopted by run(), copied for stream()), stored threads read off the loop, thread ids.

Every test body runs through both shells (``drive``: sync and async) against a real ``ScriptedAgent``
served by uvicorn on 127.0.0.1; the agent records what it received, so "nothing was sent" is a count of
requests.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

import agui_client as ag
from agui_client.stores import MemoryStore
from agui_client.testing import (
    Finish,
    ScriptedAgent,
    Start,
)

SNAPSHOT = {"plan": ["drop staging"], "step": 1, "nested": {"k": [1, 2]}}


def _snapshot_then_deltas() -> ScriptedAgent:
    return ScriptedAgent([[
        Start(),
        {"type": "STATE_SNAPSHOT", "snapshot": SNAPSHOT},
        {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/step", "value": 2},
                                          {"op": "add", "path": "/nested/k/-", "value": 3}]},
        Finish(),
    ]])


def _copies_of_snapshots(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    # (the fold's snapshots are copied by wire.values.foreign_copy, which calls its module's copy_json)
    from agui_client.wire import values as fold

    copied: list[Any] = []
    real = fold.copy_json

    def spy(value: Any) -> Any:
        if isinstance(value, dict) and "plan" in value:
            copied.append(value)
        return real(value)

    monkeypatch.setattr(fold, "copy_json", spy)
    return copied


def _keeps_no_callers_payload(thread: Any) -> bool:
    """After a run, a snapshot event the application folds by hand is copied, never held as it is: a run
    that kept its own payloads uncopied leaves no such mode behind."""
    mine = {"mine": [1]}
    thread.state.apply(ag.StateSnapshotEvent(snapshot=mine))
    mine["mine"].append(2)
    return bool(thread.state.state == {"mine": [1]})


def test_run_keeps_a_state_snapshot_uncopied_and_leaves_no_mode_behind(
        drive: Any, served: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint = served(_snapshot_then_deltas())
    copied = _copies_of_snapshots(monkeypatch)

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        result = thread.run("hi")

        assert result.outcome == "success"
        assert copied == []  # the snapshot's document became the thread's state as decoded
        assert thread.state.state == {"plan": ["drop staging"], "step": 2, "nested": {"k": [1, 2, 3]}}
        stored = client.store.load(thread.id)
        assert stored is not None and stored.data["state"] == thread.state.state
        assert _keeps_no_callers_payload(thread)


def test_stream_hands_out_snapshot_events_the_fold_never_mutates(
        drive: Any, served: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint = served(_snapshot_then_deltas())
    copied = _copies_of_snapshots(monkeypatch)

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        with thread.stream("hi") as events:
            snapshots = [e for e in events if isinstance(e, ag.StateSnapshotEvent)]

        assert copied != []
        assert [e.snapshot for e in snapshots] == [SNAPSHOT]  # the later deltas went to the thread's copy
        assert thread.state.state == {"plan": ["drop staging"], "step": 2, "nested": {"k": [1, 2, 3]}}
        assert _keeps_no_callers_payload(thread)


def test_a_failed_run_leaves_no_mode_behind(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([[Start(), {"type": "STATE_SNAPSHOT", "snapshot": SNAPSHOT}, b"data: {oops\n\n"]]))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        with pytest.raises(ag.ProtocolError):
            thread.run("hi")

        assert _keeps_no_callers_payload(thread)


def test_load_thread_reads_the_store_off_the_event_loop() -> None:
    """``AsyncAgentClient.load_thread`` reads a blocking store (SQLite, Redis) in a worker thread: the
    event loop goes on meanwhile (here it must run to release the store's read at all)."""

    release = threading.Event()

    class SlowStore(MemoryStore):
        def load(self, thread_id: str) -> Any:
            if not release.wait(10):
                raise AssertionError("the store was read on the event loop, which stood still")
            return super().load(thread_id)

    store = SlowStore()
    store.save("t", ag.ThreadState(messages=[ag.UserMessage(id="u1", content="hi")]).dump(), expected_version=None)

    async def main() -> ag.AsyncThread:
        async with ag.AsyncAgentClient("http://127.0.0.1:9/agent", store=store) as client:
            loading = asyncio.ensure_future(client.load_thread("t"))
            await asyncio.sleep(0)
            release.set()  # reached only while the read waits elsewhere
            return await loading

    thread = asyncio.run(main())
    assert thread.version == 1
    assert [m.content for m in thread.state.messages] == ["hi"]


def test_a_thread_id_with_a_lone_surrogate_is_refused_before_anything(drive: Any, served: Any) -> None:
    # No store can key it and the agent would be sent another id (U+FFFD): refused, typed.
    endpoint = served(ScriptedAgent.chat("hi"))
    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.UnencodableValue) as caught:
            client.thread("t-\udc80")
    assert caught.value.field == "threadId" and endpoint.agent.request_count == 0
