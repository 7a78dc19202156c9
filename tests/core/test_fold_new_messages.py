"""What a run added: its new messages and its record across snapshots that drop, restore or rename
messages, in one run or several, and a thread of many runs held in linear memory."""

from __future__ import annotations

from typing import Any

import pytest
from foldkit import FINISH, START

from agui_client import (
    AssistantMessage,
    RunFinishedEvent,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ThreadState,
    decode_event,
    replay,
)
from agui_client.types import messages as msg


def test_a_snapshot_adds_to_the_runs_new_messages_only_ids_neither_held_nor_there_before() -> None:
    """m0 was there before the run (a later snapshot brings it back: not new); a1 was streamed in the run
    (held when the snapshot repeats it: listed once); u2 is new."""
    from agui_client.types import MessagesSnapshotEvent, UserMessage

    thread = ThreadState(messages=[UserMessage(id="m0", content="old")])
    old, streamed, added = (UserMessage(id="m0", content="old"), AssistantMessage(id="a1", content="hi"),
                            UserMessage(id="u2", content="new"))
    for event in [START, TextMessageStartEvent(message_id="a1"), TextMessageContentEvent(message_id="a1", delta="hi"),
                  TextMessageEndEvent(message_id="a1"), MessagesSnapshotEvent(messages=(streamed,)),
                  MessagesSnapshotEvent(messages=(old, streamed, added)), FINISH]:
        thread.apply(event)
    run = thread.last_run
    assert run is not None and run.new_message_ids == ("a1", "u2")
    assert sorted(m.id for m in thread.messages) == ["a1", "m0", "u2"]


@pytest.mark.parametrize("runs", [1, 2])
def test_a_message_the_run_added_and_a_snapshot_dropped_is_not_one_of_its_new_messages(runs: int) -> None:
    """ag-ui-langgraph streams its answer under one id and its closing snapshot holds it under the AIMessage's
    (golden messages-snapshot-drops-streamed-message): the run's new messages are those the thread holds,
    as the reference's ``newMessages`` (``new_message_ids`` used to keep the streamed id). With two runs in
    the response, the snapshot of the second drops what the first streamed."""
    head = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
            {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "21 degrees"},
            {"type": "TEXT_MESSAGE_END", "messageId": "m1"}]
    if runs == 2:
        head += [{"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"},
                 {"type": "RUN_STARTED", "threadId": "t", "runId": "r2"}]
    tail = [{"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "u1", "role": "user", "content": "weather?"},
                                                       {"id": "ai1", "role": "assistant", "content": "21 degrees"}]},
            {"type": "RUN_FINISHED", "threadId": "t", "runId": f"r{runs}"}]
    thread = ThreadState(messages=[msg.UserMessage(id="u1", content="weather?")])

    result = replay([*head, *tail], state=thread)

    assert [m.id for m in thread.messages] == ["u1", "ai1"]
    assert result.new_message_ids == ("ai1",)
    assert [m.id for m in result.new_messages] == ["ai1"]


def _said(message_id: str, text: str) -> list[dict[str, Any]]:
    """A whole assistant message ``message_id`` saying ``text``, as a run streams it."""
    return [{"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": text},
            {"type": "TEXT_MESSAGE_END", "messageId": message_id}]


def test_a_message_one_run_dropped_and_a_later_run_added_again_stands_where_the_later_run_added_it() -> None:
    """Two runs in one response (golden runs-readd-dropped-message): r1 streams x and y and its snapshot
    keeps only y; r2 streams x again. The thread holds [y, x], x being r2's message, and the reference's
    ``newMessages`` are [y, x]; ours were [x, y] (x placed where r1 first added it, the message r1 dropped)."""
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"}, *_said("x", "first"), *_said("y", "kept"),
              {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "y", "role": "assistant", "content": "kept"}]},
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"},
              {"type": "RUN_STARTED", "threadId": "t", "runId": "r2"}, *_said("x", "again"),
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r2"}]
    thread = ThreadState()

    result = replay(events, state=thread)

    assert [m.id for m in thread.messages] == ["y", "x"]
    assert result.new_message_ids == ("y", "x")
    assert [run.new_message_ids for run in thread.runs] == [("y",), ("x",)]


def test_a_message_a_later_run_dropped_and_a_third_added_again_stands_where_the_third_added_it() -> None:
    """Three runs in one response: r1 streams x and w, r2's snapshot keeps only w, r3 streams x again.
    The thread holds [w, x], x being r3's message; the result said ("x", "w"), x where r1 had added it
    (two runs name x: the later one's addition is the one the thread holds)."""
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"}, *_said("x", "first"), *_said("w", "kept"),
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"},
              {"type": "RUN_STARTED", "threadId": "t", "runId": "r2"},
              {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "w", "role": "assistant", "content": "kept"}]},
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r2"},
              {"type": "RUN_STARTED", "threadId": "t", "runId": "r3"}, *_said("x", "again"),
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r3"}]
    thread = ThreadState()

    result = replay(events, state=thread)

    assert [m.id for m in thread.messages] == ["w", "x"]
    assert result.new_message_ids == ("w", "x")
    assert [m.id for m in result.new_messages] == ["w", "x"]


def test_a_runs_record_names_no_message_a_snapshot_of_the_run_dropped() -> None:
    """The record a thread keeps of a run (``thread.state.last_run``, ``runs``) says the run's new messages
    as its result does: m1, streamed and then dropped by the closing snapshot, is no message of the thread
    (the record used to name it). What the run added, as it added it, stays ``added_message_ids``."""
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
              {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
              {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "21 degrees"},
              {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
              {"type": "TEXT_MESSAGE_START", "messageId": "m2", "role": "assistant"},
              {"type": "TEXT_MESSAGE_END", "messageId": "m2"},
              {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "ai1", "role": "assistant", "content": "21 degrees"},
                                                         {"id": "m2", "role": "assistant", "content": ""}]},
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"}]
    thread = ThreadState()

    result = replay(events, state=thread)

    run = thread.last_run
    assert run is not None and run is thread.runs[-1]
    assert run.new_message_ids == result.new_message_ids == ("m2", "ai1")
    assert all(thread.message(i) is not None for i in run.new_message_ids)
    assert run.added_message_ids == ["m1", "m2", "ai1"]


def test_a_runs_record_names_its_message_renamed_after_the_run_ended() -> None:
    """A result folded (``ThreadState.apply``, no verifier) after RUN_FINISHED whose id is its call's (TC-09)
    renames the assistant message the run made for the call (named after the call, no parent given): the
    record still names that message, under its new id, as its list of ids added does (it said none)."""
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
              {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "lookup"},
              {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "{}"},
              {"type": "TOOL_CALL_END", "toolCallId": "c1"},
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"},
              {"type": "TOOL_CALL_RESULT", "toolCallId": "c1", "messageId": "c1", "content": "ok"}]
    thread = ThreadState()

    for event in events:
        thread.apply(decode_event(event))

    run = thread.last_run
    assert run is not None
    assert [m.id for m in thread.messages] == ["c1.assistant", "c1"]
    assert run.new_message_ids == ("c1.assistant",)
    assert run.added_message_ids == ["c1.assistant"]


@pytest.mark.parametrize("middle", [0, 1])
def test_a_message_held_before_the_response_dropped_by_one_run_and_restored_by_another_is_not_new(middle: int) -> None:
    """Several runs in one response (golden runs-snapshot-restores-earlier-message, found by the reference
    differential): r1's snapshot drops the user's u1, r2 (after ``middle`` runs between) restores it. Each
    run counts what it did not find at its start, so u1 was counted new to the response; it was held before
    it, so it is not (the reference's ``newMessages``). A message r1 added, that r2 drops and r3 restores, is
    new to the response and stays so."""
    def run(rid: str, *body: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"type": "RUN_STARTED", "threadId": "t", "runId": rid}, *body,
                {"type": "RUN_FINISHED", "threadId": "t", "runId": rid}]

    user = {"id": "u1", "role": "user", "content": "hello"}
    a1 = {"id": "a1", "role": "assistant", "content": "first"}
    events = run("r1", {"type": "MESSAGES_SNAPSHOT", "messages": [a1]})
    for n in range(middle):
        events += run(f"m{n}", {"type": "TEXT_MESSAGE_START", "messageId": f"x{n}", "role": "assistant"},
                      {"type": "TEXT_MESSAGE_END", "messageId": f"x{n}"})
    events += run("r2", {"type": "MESSAGES_SNAPSHOT", "messages": [user]})
    events += run("r3", {"type": "MESSAGES_SNAPSHOT", "messages": [user, a1]})
    thread = ThreadState(messages=[msg.UserMessage(id="u1", content="hello")])

    result = replay(events, state=thread)

    assert [m.id for m in thread.messages] == ["u1", "a1"]
    assert result.new_message_ids == ("a1",)
    assert [m.id for m in result.new_messages] == ["a1"]


def _runs_each_adding_a_message(n: int) -> list[Any]:
    events: list[Any] = []
    for r in range(n):
        events += [RunStartedEvent(thread_id="t", run_id=f"r{r}"),
                   TextMessageStartEvent(message_id=f"m{r}"), TextMessageContentEvent(message_id=f"m{r}", delta="x"),
                   TextMessageEndEvent(message_id=f"m{r}"), RunFinishedEvent(thread_id="t", run_id=f"r{r}")]
    return events


def test_a_thread_of_many_runs_holds_memory_linear_in_its_length() -> None:
    # Each run used to keep a copy of every message id the thread held when it started: 8,000 runs of
    # one message each held 1.4 GB. What a run found is now kept as what changed since it started.
    import tracemalloc

    peaks = []
    for n in (500, 2000):
        events = _runs_each_adding_a_message(n)
        tracemalloc.start()
        result = replay(events)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert len(result.state.messages) == n and result.state.last_run.new_message_ids == (f"m{n - 1}",)  # type: ignore[union-attr]

    assert peaks[1] / peaks[0] < 6  # linear: ~4; a copy of the ids per run: ~16
