"""A large ``MESSAGES_SNAPSHOT`` iterated in ``stream()``: the event is the caller's, the thread's messages its own.

The snapshot is past the size read slice by slice (``SLICED_MIN``), with a dict in every message (its
``metadata``, a content part's and a tool call's, an activity's ``content``): the fold copies them all
together. Changing the event changes nothing the thread holds, sends or saves; the thread folding more
(an activity patched, its metadata merged, another snapshot) changes neither the event nor the
messages it handed out before. Each body runs through both shells (``drive``) against a
``ScriptedAgent`` on 127.0.0.1.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from test_handed_out import streamed_spoiling_snapshots

import agui_client as ag
from agui_client.stores import MemoryStore
from agui_client.testing import Finish, ScriptedAgent, Start
from agui_client.wire.slices import SLICED_MIN

COUNT = 3_000


def _messages() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n in range(COUNT):
        out.append({"id": f"u{n}", "role": "user", "metadata": {"source": ["web"], "n": n},
                    "content": [{"type": "text", "text": f"question {n}", "metadata": {"lang": ["en"]}}]})
        out.append({"id": f"a{n}", "role": "assistant", "content": f"answer {n}", "metadata": {"model": "m"},
                    "toolCalls": [{"id": f"c{n}", "type": "function",
                                   "function": {"name": "plan", "arguments": "{}"}, "metadata": {"cost": [n]}}]})
        out.append({"id": f"t{n}", "role": "tool", "toolCallId": f"c{n}", "content": "done",
                    "metadata": {"ms": [n]}})  # (its metadata its only dict)
    out.append({"id": "p1", "role": "activity", "activityType": "plan", "content": {"steps": ["one"]},
                "metadata": {"source": ["agent"]}})
    return out


SNAPSHOT = {"type": "MESSAGES_SNAPSHOT", "messages": _messages()}


def test_the_snapshot_is_large_enough_to_be_read_slice_by_slice() -> None:
    assert len(json.dumps(SNAPSHOT, separators=(",", ":"))) > SLICED_MIN


def test_changing_a_large_snapshot_event_changes_nothing_the_thread_holds_sends_or_saves(
        drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([[Start(), SNAPSHOT, Finish()], [Start(), Finish()]]))
    store = MemoryStore()

    with drive.client(endpoint.url, store=store) as client:
        thread = streamed_spoiling_snapshots(client)
        saved = store.load(thread.id)
        thread.run("again")

    assert thread.state.dump()["messages"][:len(SNAPSHOT["messages"])] == SNAPSHOT["messages"]
    assert saved is not None and saved.data["messages"] == SNAPSHOT["messages"]
    sent = endpoint.received[-1].body["messages"]
    assert sent[:len(SNAPSHOT["messages"]) - 1] == SNAPSHOT["messages"][:-1]  # (activities are not sent)


def test_what_the_thread_folds_after_a_large_snapshot_changes_nothing_handed_out(drive: Any, served: Any) -> None:
    later = [
        {"type": "ACTIVITY_DELTA", "messageId": "p1", "activityType": "plan",
         "patch": [{"op": "add", "path": "/steps/-", "value": "two"}]},
        {"type": "ACTIVITY_SNAPSHOT", "messageId": "p1", "activityType": "plan", "content": {}, "replace": False,
         "metadata": {"source": ["merged"], "more": 1}},
        {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "u0", "role": "user", "content": "only",
                                                    "metadata": {"source": ["restated"]}}]},
    ]
    endpoint = served(ScriptedAgent([[Start(), SNAPSHOT, *later, Finish()]]))
    handed: list[tuple[Any, Any]] = []  # (what was handed out, a deep copy taken then)

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        with thread.stream("plan it") as events:
            for event in events:
                if isinstance(event, ag.MessagesSnapshotEvent) and not handed:
                    held = thread.state.messages
                    handed += [(event.messages, copy.deepcopy(event.messages)), (held, copy.deepcopy(held))]

    for given, then in handed:
        assert given == then
    assert thread.state.messages[0].metadata == {"source": ["restated"]}  # (the thread itself moved on)
    assert thread.state.message("p1").content == {"steps": ["one", "two"]}
    assert handed[1][0][-1].content == {"steps": ["one"]}
