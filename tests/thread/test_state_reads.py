"""What a read of ``thread.state.state`` hands out, and what following the state as a run streams costs.

Each read is a copy of the reader's own: what one caller changes in it reaches no other read, nor the
thread's state, nor what the thread sends or saves. A read copies the whole state, so a backend showing
the state as a run streams reads it after the events that change it: 2,000 text deltas beside 1.3 MB of
state cost two walks of it, not 2,000. Both shells (``drive``), against a ``ScriptedAgent`` on 127.0.0.1.
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


def test_following_the_state_by_the_events_that_change_it_copies_it_once_a_change(
        drive: Any, served: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint = served(_streams_text_beside_state())
    copies: list[str] = []
    # (any whole walk of the state: its bytes made, or a copy made without them; the delta an event
    # handed out brought keeps the state plain, so it is not copied as a value built elsewhere)
    for name in ("frozen_json", "copy_json", "deep_copy"):
        real = getattr(document, name)
        monkeypatch.setattr(document, name, lambda value, real=real, name=name: copies.append(name) or real(value))
    store = MemoryStore()
    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        reads: list[Any] = []
        with thread.stream("go") as events:
            copies.clear()  # (the request's own copy of the state, made before it was sent)
            seen = 0
            for event in events:
                seen += 1
                if event.TYPE in ("STATE_SNAPSHOT", "STATE_DELTA"):
                    reads.append(thread.state.state)
        # the snapshot, then the delta at the end: two changes of the state, two walks for 2,000+ events
        assert seen > DELTAS and copies == ["frozen_json", "frozen_json"]
        assert reads == [STATE, {**STATE, "done": True}] and reads[0] is not reads[1]
        # what the caller changes stays its own: the thread sends and saves its own state
        reads[-1]["rows"].clear()
        thread.run("again")
        sent = endpoint.received[-1].body["state"]
        assert sent == {**STATE, "done": True}
        loaded = client.thread(thread.id)
        assert loaded.state.state == {**STATE, "done": True}
    assert endpoint.agent.request_count == 2


def test_what_one_caller_changes_in_a_read_of_the_state_no_other_read_sees(drive: Any, served: Any) -> None:
    # Two parts of an application read the state (a view drawing it, a handler deciding on it); one changes
    # what it was handed. The other's read, before the state next changes and after, is the thread's
    # state: a copy of its own, never the copy another read was handed.
    endpoint = served(ScriptedAgent([[Start(), {"type": "STATE_SNAPSHOT", "snapshot": {"rows": [1, 2]}},
                                      {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
                                      {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"},
                                      {"type": "TEXT_MESSAGE_END", "messageId": "m"}, Finish()]]))
    with drive.client(endpoint.url) as client:
        thread = client.thread()
        during: list[Any] = []
        with thread.stream("go") as events:
            for event in events:
                if event.TYPE == "TEXT_MESSAGE_CONTENT":  # (the state unchanged since the snapshot)
                    mine = thread.state.state
                    mine["rows"].append("mine")
                    during.append(thread.state.state)
        first = thread.state.state
        first["rows"].clear()
        second = thread.state.state

    assert mine == {"rows": [1, 2, "mine"]} and during == [{"rows": [1, 2]}] and during[0] is not mine
    assert second == {"rows": [1, 2]} and second is not first and first == {"rows": []}


def test_reads_between_two_changes_are_made_from_one_kept_form_each_a_tree_of_its_own(
        drive: Any, served: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Read after every event, the state is walked once a change (its bytes made), and each read is built
    # from those bytes: every dict and list new, so what one read changes, at any depth, no other read sees.
    endpoint = served(_streams_text_beside_state())
    walks: list[int] = []
    real = document.frozen_json
    monkeypatch.setattr(document, "frozen_json", lambda value: walks.append(1) or real(value))
    with drive.client(endpoint.url) as client:
        thread = client.thread()
        reads: list[Any] = []
        with thread.stream("go") as events:
            walks.clear()  # (the request's own copy of the state, made before it was sent)
            for event in events:
                if event.TYPE == "TEXT_MESSAGE_CONTENT" and len(reads) < 50:
                    reads.append(thread.state.state)
        assert len(walks) == 1 and len(reads) == 50
        reads[0]["rows"][0]["text"] = "changed"
        reads[1]["rows"].clear()
        reads[2]["more"] = True
        assert all(read == STATE for read in reads[3:])
        rows = [read["rows"] for read in reads] + [row for read in reads for row in read["rows"][:3]]
        assert len({id(container) for container in rows}) == len(rows)
        assert thread.state.state == {**STATE, "done": True} and len(walks) == 2
