"""The state and activity documents: deep states, patches that would break an activity's content,
the copy budget of a run's patches, unknown ops, and which states a save may trust as JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agui_client import (
    ThreadState,
    replay,
)


def _frames_deep(frames: int, work: Any) -> Any:
    return work() if frames == 0 else _frames_deep(frames - 1, work)


@pytest.mark.parametrize("form", ["events", "jsonl"])
def test_state_nested_as_deep_as_the_decoder_admits_folds_copies_and_saves(form: str) -> None:
    # B095's trap: 505 levels pass the decoder (512), but orjson copies only 255 and copy.deepcopy
    # recursed twice a level: the thread could fold such a state and then never hand it out, save it or
    # send it again (a RecursionError on every later run). Called 200 frames deep, as from an app.
    deep = "[" * 505 + "1" + "]" * 505
    lines = ['{"type":"RUN_STARTED","threadId":"t","runId":"r"}',
             '{"type":"STATE_SNAPSHOT","snapshot":{"d":' + deep + "}}",
             '{"type":"STATE_DELTA","delta":[{"op":"add","path":"/e","value":' + deep + "}]}",
             '{"type":"RUN_FINISHED","threadId":"t","runId":"r"}']
    source: Any = [json.loads(line) for line in lines] if form == "events" else "\n".join(lines).encode()

    def work() -> tuple[Any, Any, Any]:
        result = replay(source)
        view = result.state.state
        again = ThreadState.load(json.loads(json.dumps(result.state.dump())))
        return result, view, again.state

    result, view, loaded = _frames_deep(200, work)

    assert result.warnings == ()
    assert view == loaded == {"d": json.loads(deep), "e": json.loads(deep)}
    assert view["d"] is not loaded["d"]


@pytest.mark.parametrize(("patch", "content"), [
    pytest.param([{"op": "replace", "path": "", "value": [1, 2]}], None, id="replace-with-an-array"),
    pytest.param([{"op": "add", "path": "/x", "value": 1}, {"op": "add", "path": "", "value": "s"}], None,
                 id="add-a-string-after-a-change"),
    pytest.param([{"op": "copy", "from": "/steps", "path": ""}], None, id="copy-a-child-over-it"),
    pytest.param([{"op": "replace", "path": "", "value": {"done": True}}], {"done": True}, id="an-object-is-fine"),
])
def test_an_activity_patch_that_leaves_content_not_an_object_changes_nothing(
    patch: list[dict[str, Any]], content: dict[str, Any] | None
) -> None:
    # AC-01/AC-05: an activity's content is an object. Applied, such a patch folded silently and made
    # the thread impossible to load again (a stored thread could no longer be opened).
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
              {"type": "ACTIVITY_SNAPSHOT", "messageId": "a1", "activityType": "plan", "content": {"steps": [1]}},
              {"type": "ACTIVITY_DELTA", "messageId": "a1", "activityType": "plan", "patch": patch},
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]

    result = replay(events)

    (activity,) = result.messages
    assert activity.content == (content if content is not None else {"steps": [1]})  # type: ignore[union-attr]
    codes = [(w.code, w.pointer) for w in result.warnings]
    assert codes == ([] if content is not None else [("AC-05", f"/patch/{len(patch) - 1}")])
    again = ThreadState.load(json.loads(json.dumps(result.state.dump())))
    assert again.messages == result.messages


@pytest.mark.parametrize("form", ["events", "jsonl"])
def test_a_run_s_copies_are_bounded_in_all_and_the_next_run_may_copy_again(form: str) -> None:
    # B194 across deltas: a few bytes of "copy" each repeat a 4 MB string in the state (which every
    # save and the next request write out again). A run's patches may copy 16 MiB in all; past that
    # a delta is refused (SP-06, state unchanged, out of sync), and a new run starts afresh.
    def run(run_id: str, copies: range, snapshot: bool) -> list[dict[str, Any]]:
        return [{"type": "RUN_STARTED", "threadId": "t", "runId": run_id},
                *([{"type": "STATE_SNAPSHOT", "snapshot": {"s": "x" * 4_000_000}}] if snapshot else []),
                *({"type": "STATE_DELTA", "delta": [{"op": "copy", "from": "/s", "path": f"/c{i}"}]} for i in copies),
                {"type": "RUN_FINISHED", "threadId": "t", "runId": run_id}]

    def source(events: list[dict[str, Any]]) -> Any:
        return events if form == "events" else "\n".join(json.dumps(e) for e in events).encode()

    thread = ThreadState()
    first = replay(source(run("r1", range(5), snapshot=True)), state=thread)
    assert sorted(thread.state) == ["c0", "c1", "c2", "c3", "s"]
    assert [(w.code, w.index) for w in first.warnings] == [("SP-06/AGUI302", 6)]
    assert thread.state_in_sync is False

    second = replay(source(run("r2", range(5, 6), snapshot=False)), state=thread)
    assert second.warnings == () and "c5" in thread.state


@pytest.mark.parametrize("form", ["events", "jsonl"])
def test_a_patch_with_an_op_json_patch_does_not_define_is_skipped_whole(form: str) -> None:
    # SP-07 / AGUI303, bad-inputs' verdict for a 1.0 consumer: a patch applies whole or not at all;
    # dropping the unknown op and applying the rest (the reference) makes a state nobody asked for.
    patch = [{"op": "add", "path": "/b", "value": 2}, {"op": "merge", "path": "/c", "value": 3}]
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
              {"type": "STATE_SNAPSHOT", "snapshot": {"a": 1}},
              {"type": "STATE_DELTA", "delta": patch},
              {"type": "ACTIVITY_SNAPSHOT", "messageId": "p", "activityType": "plan", "content": {"a": 1}},
              {"type": "ACTIVITY_DELTA", "messageId": "p", "activityType": "plan", "patch": patch},
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]
    source: Any = events if form == "events" else "\n".join(json.dumps(e) for e in events).encode()

    result = replay(source)

    assert result.state.state == {"a": 1} and result.state.state_in_sync is False
    assert result.messages[0].content == {"a": 1}  # type: ignore[union-attr]
    assert [(w.code, w.index, w.pointer) for w in result.warnings] == [
        ("SP-07/AGUI303", 2, "/delta/1"), ("SP-07/AGUI303", 4, "/patch/1")]


def test_a_save_marks_a_state_it_parsed_itself_as_checked_and_no_other() -> None:
    """The store skips its plain-JSON walk only for state the thread parsed or validated itself."""
    from agui_client import StateDeltaEvent, replay
    from agui_client.errors import StoreError
    from agui_client.stores import MemoryStore
    from agui_client.wire.values import PlainDict

    body = (b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
            b'data: {"type":"STATE_SNAPSHOT","snapshot":{"a":[1,2],"b":{"c":"d"}}}\n\n'
            b'data: {"type":"STATE_DELTA","delta":[{"op":"add","path":"/e","value":{"f":1.5}}]}\n\n'
            b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n')
    thread = replay(body).state
    shared = thread.dump(share_state=True)["state"]
    assert type(shared) is PlainDict and shared == {"a": [1, 2], "b": {"c": "d"}, "e": {"f": 1.5}}
    assert type(thread.dump()["state"]) is dict  # a plain copy when the state is not shared
    store = MemoryStore()
    store.save("t", thread.dump(share_state=True), expected_version=None)
    loaded = store.load("t")
    assert loaded is not None and loaded.data["state"] == shared

    # A patch whose values came with an event object built elsewhere is not vouched for: the store walks
    # the state and refuses what JSON cannot hold, instead of orjson writing NaN as null.
    thread.apply(StateDeltaEvent(delta=({"op": "add", "path": "/n", "value": float("nan")},)))
    assert type(thread.dump(share_state=True)["state"]) is dict
    with pytest.raises(StoreError):
        MemoryStore().save("t", thread.dump(share_state=True), expected_version=None)
    thread.set_state({"fresh": True})  # validated: vouched for again
    assert type(thread.dump(share_state=True)["state"]) is PlainDict


def test_a_hand_built_state_snapshot_is_copied_as_it_is_and_not_vouched_for() -> None:
    """Before: the orjson copy turned NaN into null silently. Now the value is kept, and a save refuses it."""
    import math

    from agui_client import StateSnapshotEvent
    from agui_client.errors import StoreError
    from agui_client.stores import MemoryStore
    from agui_client.wire.values import PlainDict

    thread = ThreadState()
    snapshot = {"x": float("nan"), "nested": {"y": [1]}}
    thread.apply(StateSnapshotEvent(snapshot=snapshot))
    held = thread.dump(share_state=True)["state"]
    assert math.isnan(held["x"]) and type(held) is dict
    assert math.isnan(thread.state["x"])  # the caller's copy too
    assert held["nested"] is not snapshot["nested"]  # a copy: the event keeps its own dict
    with pytest.raises(StoreError):
        MemoryStore().save("t", thread.dump(share_state=True), expected_version=None)
    thread.apply(StateSnapshotEvent(snapshot={"ok": [1, 2]}))  # plain: copied fast and vouched for
    assert type(thread.dump(share_state=True)["state"]) is PlainDict
