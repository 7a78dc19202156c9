"""A stored thread written by another tool, or damaged: each field of the wrong type is refused, named.

``ThreadState.load`` reads what a store hands it. Several fields were read with Python's loose
coercions: ``pendingToolCallIds: "ab"`` loaded as the two calls ``"a"`` and ``"b"`` (an object as its
keys), ``stateInSync: "no"`` as true, ``format: true`` as 1, ``lastOutcome: "exploded"`` as a run's
outcome, a subagent of any shape as whatever attrs took; others failed deep inside (``'int' object
has no attribute 'items'``), an error that named no field. Each is now a ``ValueError`` naming the
field (a ``StoreError`` naming the thread too, once a client builds the thread).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agui_client import AgentClient
from agui_client.core.fold import ThreadState
from agui_client.errors import StoreError
from agui_client.stores import MemoryStore
from agui_client.types import UserMessage

__all__: list[str] = []

SUBAGENT = {"subagent_run_id": "s1", "name": "helper", "run_id": "r", "status": "success", "description": None,
            "parent_subagent_run_id": None, "parent_tool_call_id": None, "parent_message_id": None,
            "result": {"ok": True}, "interrupt_ids": [], "error": None}


def _record(**fields: Any) -> dict[str, Any]:
    data = ThreadState(thread_id="t", messages=[UserMessage(id="u1", content="hi")]).dump()
    data.update(fields)
    return data


WRONG = [
    ("pendingToolCallIds", "ab", "pendingToolCallIds"),
    ("pendingToolCallIds", {"call-1": 1}, "pendingToolCallIds"),
    ("pendingToolCallIds", None, "pendingToolCallIds"),
    ("pendingToolCallIds", 5, "pendingToolCallIds"),
    ("stateInSync", "no", "stateInSync"),
    ("stateInSync", 0, "stateInSync"),
    ("stateInSync", None, "stateInSync"),
    ("format", True, "format"),
    ("format", 0, "format"),
    ("format", "1", "format"),
    ("lastOutcome", "exploded", "lastOutcome"),
    ("usageByRun", [], "usageByRun"),
    ("usageByRun", None, "usageByRun"),
    ("usageByRun", "x", "usageByRun"),
    ("subagents", [], "subagents"),
    ("subagents", None, "subagents"),
    ("subagents", {"s1": 5}, "/subagents/s1"),
    ("subagents", {"s1": {**SUBAGENT, "status": "exploded"}}, "/subagents/s1/status"),
    ("subagents", {"s1": {**SUBAGENT, "name": 5}}, "/subagents/s1/name"),
    ("subagents", {"s1": {**SUBAGENT, "run_id": ["r"]}}, "/subagents/s1/run_id"),
    ("subagents", {"s1": {**SUBAGENT, "interrupt_ids": "ab"}}, "/subagents/s1/interrupt_ids"),
    ("subagents", {"s1": {**SUBAGENT, "interrupt_ids": [1]}}, "/subagents/s1/interrupt_ids"),
    ("subagents", {"s1": {**SUBAGENT, "error": "boom"}}, "/subagents/s1/error"),
    ("subagents", {"s1": {**SUBAGENT, "error": {"message": 5}}}, "/subagents/s1/error"),
    ("subagents", {"s1": {**SUBAGENT, "error": {"message": "m", "late": "yes"}}}, "/subagents/s1/error"),
    ("subagents", {"s1": {**SUBAGENT, "surprise": 1}}, "/subagents/s1/surprise"),
    ("subagents", {"s1": {k: v for k, v in SUBAGENT.items() if k != "name"}}, "/subagents/s1/name"),
]


@pytest.mark.parametrize(("field", "value", "named"), WRONG)
def test_a_field_of_the_wrong_type_is_refused_naming_it(field: str, value: Any, named: str) -> None:
    with pytest.raises(ValueError) as caught:
        ThreadState.load(_record(**{field: value}))
    assert named in str(caught.value), str(caught.value)


@pytest.mark.parametrize(("field", "value", "named"), [WRONG[0], next(r for r in WRONG if r[2].endswith("/status"))])
def test_a_client_reports_the_thread_and_the_field(field: str, value: Any, named: str) -> None:
    store = MemoryStore()
    store.save("t", _record(**{field: value}), expected_version=None)
    with AgentClient("http://127.0.0.1:9/agent", store=store) as client, pytest.raises(StoreError) as caught:
        client.thread("t")
    assert caught.value.thread_id == "t"
    assert "thread 't'" in str(caught.value) and named in str(caught.value)


def test_well_formed_fields_still_load_as_written() -> None:
    error = {"message": "failed", "code": "E1", "late": False}
    record = _record(pendingToolCallIds=[], stateInSync=False, format=1, usageByRun={},
                     subagents={"s1": SUBAGENT, "s2": {**SUBAGENT, "subagent_run_id": "s2", "status": "error",
                                                       "interrupt_ids": ["i1"], "error": error}})
    loaded = ThreadState.load(record)
    again = json.loads(json.dumps(loaded.dump()))  # (the dump holds tuples where JSON has arrays)
    assert again["subagents"] == record["subagents"] and again["stateInSync"] is False
    # (a record of an earlier release without the newer fields still loads)
    older = {k: v for k, v in record.items() if k not in ("stateInSync", "usageByRun", "subagents",
                                                          "pendingToolCallIds")}
    assert ThreadState.load(older).dump()["stateInSync"] is True


def test_a_dump_loads_as_it_is_without_a_json_round_trip() -> None:
    record = _record(subagents={"s1": {**SUBAGENT, "status": "suspended", "interrupt_ids": ["i1"]}})
    dumped = ThreadState.load(record).dump()
    assert ThreadState.load(dumped).dump() == dumped
    assert ThreadState.load(ThreadState.load(record).dump(share_state=True)).dump() == dumped


REPEATED = [{"id": "m", "role": "user", "content": "a"}, {"id": "n", "role": "assistant", "content": "c"},
            {"id": "m", "role": "user", "content": "b"}]


@pytest.mark.parametrize("adopt", [False, True])
def test_a_record_repeating_a_message_id_loads_one_message_by_the_snapshot_rule(adopt: bool) -> None:
    # A thread holds one message per id; a MESSAGES_SNAPSHOT repeating one keeps the last, at the
    # first's place (MS-01). A record repeating one loaded both, and the next run sent both to the agent.
    from agui_client import AguiWarning, replay

    streamed = ThreadState()
    result = replay([{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
                     {"type": "MESSAGES_SNAPSHOT", "messages": REPEATED},
                     {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}], state=streamed)
    with pytest.warns(AguiWarning) as warned:
        loaded = ThreadState.load(_record(messages=json.loads(json.dumps(REPEATED))), adopt=adopt)

    held = [(m.id, m.content) for m in loaded.messages]
    assert held == [(m.id, m.content) for m in streamed.messages] == [("m", "b"), ("n", "c")]
    assert [w.code for w in result.warnings] == ["MS-01"]
    assert any("MS-01" in str(w.message) and "/messages/2/id" in str(w.message) for w in warned)
    assert [m["id"] for m in loaded.dump()["messages"]] == ["m", "n"]


@pytest.mark.parametrize("adopt", [False, True])
def test_a_record_repeating_a_message_id_is_written_whole_by_the_first_change(adopt: bool) -> None:
    # The thread holds one message fewer than the record; a change counted from the record's list
    # ("keep the first 2, add one") kept the record's first copy of "m", and dropped the one the thread
    # held: reloaded, the thread said "a" where it had said "b".
    from agui_client import AguiWarning, replay
    from agui_client.stores import apply_changes

    record = _record(messages=json.loads(json.dumps(REPEATED)))
    with pytest.warns(AguiWarning):
        loaded = ThreadState.load(json.loads(json.dumps(record)), adopt=adopt)
    replay([{"type": "RUN_STARTED", "threadId": "t", "runId": "r2"},
            {"type": "TEXT_MESSAGE_START", "messageId": "o", "role": "assistant"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "o", "delta": "d"},
            {"type": "TEXT_MESSAGE_END", "messageId": "o"},
            {"type": "RUN_FINISHED", "threadId": "t", "runId": "r2"}], state=loaded)

    stored = apply_changes(record, [json.loads(json.dumps(loaded.changes()))])
    assert [(m["id"], m["content"]) for m in stored["messages"]] == [("m", "b"), ("n", "c"), ("o", "d")]
    assert stored["messages"] == loaded.dump()["messages"]


def test_a_thread_made_with_a_message_id_twice_holds_one_by_the_snapshot_rule() -> None:
    # ThreadState(messages=...) is the third way messages come in whole, after a MESSAGES_SNAPSHOT and a
    # stored record: it kept both copies, so the thread's next run sent the agent two messages of one id,
    # and a dump of it loaded (by the record's rule) as another thread than the one dumped.
    from agui_client import AguiWarning
    from agui_client.types import AssistantMessage

    given = [UserMessage(id="m", content="a"), AssistantMessage(id="n", content="c"), UserMessage(id="m", content="b")]
    with pytest.warns(AguiWarning) as warned:
        made = ThreadState(messages=given)

    assert [(m.id, m.content) for m in made.messages] == [("m", "b"), ("n", "c")]
    assert [str(w.message) for w in warned] == ["[MS-01] at /messages/2/id: snapshot repeats message id 'm'; "
                                               "the last wins"]
    assert ThreadState.load(made.dump()).dump()["messages"] == made.dump()["messages"]
