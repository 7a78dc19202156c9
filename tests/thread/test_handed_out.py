"""What the thread hands out is the caller's: changing its dicts changes nothing the thread holds.

An ``Interrupt`` and a ``SubagentRecord`` are frozen, but an interrupt's ``responseSchema`` and
``metadata`` and a subagent's ``result`` are dicts. A caller changing the ones it was handed (a form
filling in defaults, a UI dropping a field it cannot show) changed the thread's own: the schema a
resume is checked against, and the record the next save writes. So did changing an event iterated in
``stream()`` (a ``MESSAGES_SNAPSHOT``'s messages, a subagent's result, a pre-1.0 ask), and a
``ThreadState.copy()`` shared its messages' dicts with the thread it copied. Every body that runs a
thread runs through both shells (``drive``) against a ``ScriptedAgent`` on 127.0.0.1; "nothing was
sent" is a count of requests.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

import agui_client as ag
from agui_client.core import interrupts as interrupts_module
from agui_client.stores import MemoryStore
from agui_client.testing import Finish, ScriptedAgent, Start

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
ASKED = {"id": "i1", "reason": "input", "responseSchema": SCHEMA, "metadata": {"tags": ["deploy"]}}


def _asks_then_finishes() -> ScriptedAgent:
    return ScriptedAgent([[Start(), Finish(outcome={"type": "interrupt", "interrupts": [ASKED]})],
                          [Start(), Finish()]])


def _spoil(interrupts: Any) -> None:
    """What a careless caller does to interrupts it was handed: every nested container changed."""
    for interrupt in interrupts:
        interrupt.response_schema["required"].clear()
        interrupt.response_schema["properties"]["ok"]["type"] = "string"
        interrupt.metadata["tags"].append("spoiled")


def _held(thread: Any) -> list[dict[str, Any]]:
    return list(thread.state.dump()["openInterrupts"])


@pytest.mark.parametrize("how", ["run", "stream"])
def test_changing_a_handed_out_interrupt_changes_neither_the_check_nor_the_record(
        drive: Any, served: Any, how: str) -> None:
    endpoint = served(_asks_then_finishes())
    store = MemoryStore()

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        if how == "run":
            _spoil(thread.run("deploy").interrupts)
        else:
            with thread.stream("deploy") as events:
                for event in events:
                    if isinstance(event, ag.RunFinishedEvent):
                        _spoil(event.outcome.interrupts)
        _spoil(thread.open_interrupts)
        _spoil(thread.state.open_interrupts)
        builder = thread.resume_builder()
        _spoil(builder.interrupts)
        with pytest.raises(ag.InvalidResumePayload) as caught:
            thread.run(resume=builder.answer("i1", {}))
        held = _held(thread)
        saved = store.load(thread.id)
        result = thread.run(resume=thread.resume_builder().answer("i1", {"ok": True}))

    assert caught.value.ids == ("i1",)
    assert endpoint.agent.request_count == 2  # the refused resume sent nothing; the valid one went out
    assert held == [ASKED]
    assert saved is not None and saved.data["openInterrupts"] == [ASKED]
    assert result.outcome == "success"


def test_a_loaded_threads_interrupts_are_its_own(drive: Any, served: Any) -> None:
    endpoint = served(_asks_then_finishes())
    store = MemoryStore()

    with drive.client(endpoint.url, store=store) as client:
        client.thread("t1").run("deploy")
        loaded = client.thread("t1")
        _spoil(loaded.open_interrupts)
        with pytest.raises(ag.InvalidResumePayload):
            loaded.run(resume=loaded.resume_builder().answer("i1", {"ok": "yes"}))

    assert _held(loaded) == [ASKED]
    assert endpoint.agent.request_count == 1


def test_a_loaded_threads_last_run_hands_out_interrupts_of_its_own(drive: Any, served: Any) -> None:
    # A loaded thread's record of its last run was given the very interrupts the thread held open:
    # changing those the run record handed out changed the schema a resume is checked against.
    endpoint = served(_asks_then_finishes())
    store = MemoryStore()

    with drive.client(endpoint.url, store=store) as client:
        client.thread("t1").run("deploy")
        loaded = client.thread("t1")
        _spoil(loaded.state.runs[-1].interrupts)
        with pytest.raises(ag.InvalidResumePayload) as caught:
            loaded.run(resume=loaded.resume_builder().answer("i1", {"ok": "yes"}))

    assert caught.value.ids == ("i1",)
    assert _held(loaded) == [ASKED]
    assert endpoint.agent.request_count == 1


@pytest.mark.parametrize("how", ["run", "stream"])
def test_a_threads_reads_and_builders_copy_interrupts_off_the_wire_without_a_walk(
        drive: Any, served: Any, how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The fold kept the bytes of what it parsed: a read and a builder copy from them, no plain_json walk
    # (with 200 forms each walk was 4-5 ms of the caller's thread, before the copy itself).
    endpoint = served(_asks_then_finishes())
    walked: list[Any] = []
    walk = interrupts_module.plain_json
    monkeypatch.setattr(interrupts_module, "plain_json", lambda value, tuples=True: walked.append(value) or walk(
        value, tuples))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        if how == "run":
            thread.run("deploy")
        else:
            with thread.stream("deploy") as events:
                for _ in events:
                    pass
        read = thread.open_interrupts
        builder = thread.resume_builder()

    assert walked == []
    assert [ag.encode(i) for i in read] == [ag.encode(i) for i in builder.interrupts] == [ASKED]


def test_an_unbound_builder_keeps_its_own_schemas() -> None:
    given = ag.Interrupt(id="i1", reason="input", response_schema={"type": "object", "required": ["ok"]})
    builder = ag.ResumeBuilder([given])
    given.response_schema["required"].clear()
    builder.interrupts[0].response_schema["required"].clear()

    with pytest.raises(ag.InvalidResumePayload) as caught:
        builder.answer("i1", {}).build()

    assert caught.value.ids == ("i1",)


@pytest.mark.parametrize("how", ["run", "stream"])
def test_changing_a_subagents_result_handed_out_changes_neither_the_thread_nor_the_record(
        drive: Any, served: Any, how: str) -> None:
    finished = {"type": "SUBAGENT_FINISHED", "subagentRunId": "sa1", "result": {"rows": [1]}}
    endpoint = served(ScriptedAgent([[Start(), {"type": "SUBAGENT_STARTED", "subagentRunId": "sa1", "name": "search"},
                                      finished, Finish()]]))
    store = MemoryStore()

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        if how == "run":
            thread.run("look it up")
        else:
            with thread.stream("look it up") as events:
                for event in events:
                    if isinstance(event, ag.SubagentFinishedEvent):
                        event.result["rows"].append("from the event")
        thread.state.subagents["sa1"].result["rows"].append("from the record")
        saved = store.load(thread.id)

    assert thread.state.subagents["sa1"].result == {"rows": [1]}
    assert thread.state.dump()["subagents"]["sa1"]["result"] == {"rows": [1]}
    assert saved is not None and saved.data["subagents"]["sa1"]["result"] == {"rows": [1]}


def test_changing_a_legacy_ask_handed_out_changes_nothing_the_bridge_reads(drive: Any, served: Any) -> None:
    # A pre-1.0 producer asks in a CUSTOM event; the bridge reads the ask at the run's end, after the
    # event went to the caller: what the caller did to it in between must not become the interrupt.
    ask = {"reason": "tool_approval", "message": "Delete /srv/x?", "responseSchema": {"type": "object",
                                                                                    "required": ["approved"]}}
    endpoint = served(ScriptedAgent([[Start(), {"type": "CUSTOM", "name": "on_interrupt", "value": ask}, Finish()]]))

    with drive.client(endpoint.url, legacy_interrupts="langgraph") as client:
        thread = client.thread()
        with thread.stream("clean up") as events:
            for event in events:
                if isinstance(event, ag.CustomEvent):
                    event.value["message"] = "spoiled"
                    event.value["responseSchema"]["required"].clear()

    [interrupt] = thread.open_interrupts
    assert (interrupt.message, interrupt.response_schema) == ("Delete /srv/x?", ask["responseSchema"])


SNAPSHOT_MESSAGES = [
    {"id": "u1", "role": "user", "metadata": {"source": ["web"]},
     "content": [{"type": "text", "text": "plan it", "metadata": {"lang": ["en"]}}]},
    {"id": "a1", "role": "assistant", "content": "calling",
     "toolCalls": [{"id": "c1", "type": "function", "function": {"name": "plan", "arguments": "{}"},
                    "metadata": {"cost": [1]}}]},
    {"id": "t1", "role": "tool", "toolCallId": "c1", "content": "done"},
    {"id": "p1", "role": "activity", "activityType": "plan", "content": {"steps": ["one"]}},
]


def spoil_messages(messages: Any) -> None:
    """What a careless caller does to the messages it was handed: every dict inside changed (each list in
    it grown, a key added): its ``metadata``, an activity's ``content``, a content part's and a tool
    call's ``metadata``."""
    for message in messages:
        dicts = [message.metadata]
        if isinstance(message, ag.ActivityMessage):
            dicts.append(message.content)
        elif isinstance(message, ag.UserMessage) and not isinstance(message.content, str):
            dicts += [part.metadata for part in message.content]
        elif isinstance(message, ag.AssistantMessage):
            dicts += [call.metadata for call in message.tool_calls or ()]
        for held in dicts:
            if held is not None:
                for value in list(held.values()):
                    if isinstance(value, list):
                        value.append("spoiled")
                held["spoiled"] = True


def streamed_spoiling_snapshots(client: Any) -> Any:
    """A new thread of ``client`` whose run ("plan it") is streamed, each ``MESSAGES_SNAPSHOT``'s messages
    spoiled (:func:`spoil_messages`) as it is read; returns the thread."""
    thread = client.thread()
    with thread.stream("plan it") as events:
        for event in events:
            if isinstance(event, ag.MessagesSnapshotEvent):
                spoil_messages(event.messages)
    return thread


def test_changing_a_messages_snapshot_event_changes_nothing_the_thread_holds(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([[Start(), {"type": "MESSAGES_SNAPSHOT", "messages": SNAPSHOT_MESSAGES},
                                      Finish()]]))
    store = MemoryStore()

    with drive.client(endpoint.url, store=store) as client:
        thread = streamed_spoiling_snapshots(client)
        saved = store.load(thread.id)

    assert thread.state.dump()["messages"] == SNAPSHOT_MESSAGES
    assert saved is not None and saved.data["messages"] == SNAPSHOT_MESSAGES


def test_a_threads_copy_shares_no_dict_with_it() -> None:
    # ThreadState.copy() says "independent": the dicts inside its messages too, both ways.
    original = ag.ThreadState.load({"threadId": "t1", "messages": copy.deepcopy(SNAPSHOT_MESSAGES)})
    copied = original.copy()

    spoil_messages(copied.messages)
    spoiled_once = copy.deepcopy(copied.dump()["messages"])
    untouched = copy.deepcopy(original.dump()["messages"])
    spoil_messages(original.messages)

    assert untouched == SNAPSHOT_MESSAGES
    assert spoiled_once != SNAPSHOT_MESSAGES
    assert copied.dump()["messages"] == spoiled_once
