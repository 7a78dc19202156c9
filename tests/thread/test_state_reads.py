"""Reading ``thread.state.state`` after every event copies the state once a change, not once a read.

A backend showing the state as a run streams reads it after each event; each read was a copy of the
whole state (2,000 events: 2,000 copies). The copy is made once a change of the state and handed to
every read until the next one; what a caller changes in it reaches neither the thread's state nor what
the thread sends or saves. Both shells (``drive``), against a ``ScriptedAgent`` on 127.0.0.1.
"""

from __future__ import annotations

from typing import Any

import pytest

from agui_client.core.fold import document
from agui_client.stores import MemoryStore
from agui_client.testing import Finish, ScriptedAgent, Start

STATE = {"rows": [{"n": n, "text": "some words"} for n in range(500)]}
DELTAS = 2_000


def _streams_text_beside_state() -> ScriptedAgent:
    events: list[Any] = [Start(), {"type": "STATE_SNAPSHOT", "snapshot": STATE},
                         {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}]
    events += [{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": f"w{n} "} for n in range(DELTAS)]
    events += [{"type": "TEXT_MESSAGE_END", "messageId": "m"},
               {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/done", "value": True}]}, Finish()]
    return ScriptedAgent([events, [Start(), Finish()]])


def test_reading_the_state_after_every_event_copies_it_once_a_change(
        drive: Any, served: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint = served(_streams_text_beside_state())
    copies: list[int] = []
    real = document.copy_json
    monkeypatch.setattr(document, "copy_json", lambda value: copies.append(1) or real(value))
    store = MemoryStore()
    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        reads: list[Any] = []
        with thread.stream("go") as events:
            copies.clear()  # (the request's own copy of the state, made before it was sent)
            for _ in events:
                reads.append(thread.state.state)
        # the snapshot, then the delta at the end: two changes of the state, two copies for 2,000+ reads
        assert len(reads) > DELTAS and len(copies) == 2
        snapshot_reads = [read for read in reads if read == STATE]
        assert len(snapshot_reads) > DELTAS and all(read is snapshot_reads[0] for read in snapshot_reads)
        # what the caller changes stays its own: the thread sends and saves its own state
        reads[-1]["rows"].clear()
        thread.run("again")
        sent = endpoint.received[-1].body["state"]
        assert sent == {**STATE, "done": True}
        loaded = client.thread(thread.id)
        assert loaded.state.state == {**STATE, "done": True}
    assert endpoint.agent.request_count == 2
