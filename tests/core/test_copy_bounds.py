"""What JSON Patches may cost the client: bounded work per refusal, bounded copies and shifts per response,
bounded operations per patch."""

from __future__ import annotations

import json
import sys
import tracemalloc
from typing import Any

import pytest

from agui_client import ThreadState, replay
from agui_client.core.patch import (
    DEFAULT_RESPONSE_COPY_ALLOWANCE,
    DEFAULT_RUN_COPY_ALLOWANCE,
    MAX_PATCH_OPS,
    SHIFTS_PER_UNIT,
    PatchFailed,
    apply_patch,
)
from agui_client.core.session import RunSession


def _payload(event: dict[str, Any]) -> bytes:
    return json.dumps(event).encode()


def _members(value: Any) -> int:
    """How many members (list items, object entries) a JSON value holds, at every depth."""
    count, stack = 0, [value]
    while stack:
        node = stack.pop()
        if type(node) is dict:
            count += len(node)
            stack.extend(node.values())
        elif type(node) is list:
            count += len(node)
            stack.extend(node)
    return count


def test_refused_copies_walk_no_further_than_the_allowance_in_all() -> None:
    # Ten 80-byte deltas each asked to copy a subtree four times the run's allowance. The walk used to
    # copy and then measure the whole subtree before refusing it, once per delta (seconds of CPU
    # each, on the caller's event loop). Work is counted here as memory the fold allocates while
    # reading each delta (tracemalloc's peak), never as time: a copy walk allocates as it goes.
    rows = 4096
    big = [[0] * 1024 for _ in range(rows)]  # 4M members: 64 MiB of allowance units
    session = RunSession(ThreadState(thread_id="t", state={"big": big}), events=False)
    session.feed_payload(_payload({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}))
    # What a copy within the allowance may allocate: a list slot for each member it may copy (16 units
    # a member), with room for the lists' growth.
    within_allowance = DEFAULT_RUN_COPY_ALLOWANCE // 16 * 8 * 3 // 2
    peaks = []
    tracemalloc.start()
    try:
        for i in range(10):
            payload = _payload({"type": "STATE_DELTA", "delta": [{"op": "copy", "from": "/big", "path": f"/c{i}"}]})
            tracemalloc.reset_peak()
            before = tracemalloc.get_traced_memory()[0]
            session.feed_payload(payload)
            peaks.append(tracemalloc.get_traced_memory()[1] - before)
    finally:
        tracemalloc.stop()
    session.feed_payload(_payload({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}))
    result = session.end()

    assert [(w.code, w.index) for w in result.warnings] == [("SP-06/AGUI302", i) for i in range(1, 11)]
    assert sorted(result.state.state) == ["big"]
    # The whole subtree copied would be 4096 lists of 1024 slots (32 MiB), each time. The ten refusals
    # together allocate less than one copy within the allowance may: each refused walk spent what it
    # walked, and once the allowance is spent a refusal stops at the first container.
    assert sum(peaks) < within_allowance < rows * 1024 * 8
    assert max(peaks[-5:]) < 64 * 1024


def test_a_response_of_many_runs_copies_no_more_than_the_response_allowance() -> None:
    # Each run's patches get the run's allowance afresh, so a response of many runs used to copy a
    # fresh 16 MiB's worth per run: the runs of one response now share a bound as well.
    size = 2**17  # one copy costs 2 MiB of units: seven fit in a run's allowance
    per_copy = 16 * (size + 1)
    copies_per_run = DEFAULT_RUN_COPY_ALLOWANCE // per_copy
    assert copies_per_run == 7
    runs = 10
    events: list[dict[str, Any]] = []
    for r in range(runs):
        events.append({"type": "RUN_STARTED", "threadId": "t", "runId": f"r{r}"})
        if r == 0:
            events.append({"type": "STATE_SNAPSHOT", "snapshot": {"a": [0] * size}})
        events += [{"type": "STATE_DELTA", "delta": [{"op": "copy", "from": "/a", "path": f"/r{r}c{c}"}]}
                   for c in range(copies_per_run)]
        events.append({"type": "RUN_FINISHED", "threadId": "t", "runId": f"r{r}"})
    response = b"\n".join(_payload(e) for e in events)

    thread = ThreadState(thread_id="t")
    result = replay(response, state=thread)

    copied = DEFAULT_RESPONSE_COPY_ALLOWANCE // per_copy
    assert copied < runs * copies_per_run
    assert len(result.run_ids) == runs and result.outcome == "success"  # only the copies were refused
    assert len(thread.state) == 1 + copied
    assert [w.code for w in result.warnings] == ["SP-06/AGUI302"] * (runs * copies_per_run - copied)
    # The documented bound on what one response's copies make the client hold.
    assert _members(thread.state) <= size + DEFAULT_RESPONSE_COPY_ALLOWANCE // 16

    # The next response starts afresh.
    again = replay([{"type": "RUN_STARTED", "threadId": "t", "runId": "next"},
                    {"type": "STATE_DELTA", "delta": [{"op": "copy", "from": "/a", "path": "/next"}]},
                    {"type": "RUN_FINISHED", "threadId": "t", "runId": "next"}], state=thread)
    assert again.warnings == () and "next" in thread.state


def test_insertions_at_the_front_of_a_huge_list_spend_the_allowance_by_the_elements_they_shift() -> None:
    # Python shifts every element after an insertion or a removal: a delta of 60 bytes adding at
    # ``/a/0`` of a list of a million elements moves all of them. Behind a snapshot of 7 million, one
    # read of such deltas held the event loop 1.9 s (a delta of 5,000 of them, 10 s), and a run could
    # send them for as long as ``max_run_bytes`` allows. Each shift is now charged to the run's allowance.
    size = 2**20
    front = {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a/0", "value": 0}]}
    events: list[dict[str, Any]] = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
                                    {"type": "STATE_SNAPSHOT", "snapshot": {"a": [1] * size}}]
    events += [front] * 100
    events += [{"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a/-", "value": 2}]}] * 3
    events += [{"type": "STATE_DELTA", "delta": [{"op": "remove", "path": "/a/0"}] * 10}]
    events.append({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})

    thread = ThreadState(thread_id="t")
    result = replay(b"\n".join(_payload(e) for e in events), state=thread)

    items = thread.state["a"]
    inserted = len(items) - size - 3
    shifted = sum(size + i for i in range(inserted))
    # Each insertion shifted a million elements: what the allowance pays for is some 64 of them.
    assert shifted <= DEFAULT_RUN_COPY_ALLOWANCE * SHIFTS_PER_UNIT < shifted + size + inserted
    assert items[:inserted] == [0] * inserted and items[inserted] == 1
    # Appending shifts nothing, so it still applies; the removals at the front are refused whole.
    assert items[-3:] == [2, 2, 2]
    assert [(w.code, w.index, w.pointer) for w in result.warnings] == (
        [("SP-06/AGUI302", 2 + i, "/delta/0") for i in range(inserted, 100)] + [("SP-06/AGUI302", 105, "/delta/0")])
    assert "shifting" in result.warnings[0].message


@pytest.mark.parametrize("events", [False, True])
def test_a_patch_of_more_operations_than_one_patch_may_hold_is_refused_whole_before_any_applies(events: bool) -> None:
    # An operation costs the fold a microsecond or two whatever its size: a STATE_DELTA of 16 MiB
    # holds some 480,000 of them, 0.7 s of the event loop in one event.
    def delta(count: int, value: int) -> dict[str, Any]:
        return {"type": "STATE_DELTA", "delta": [{"op": "add", "path": f"/k{i}", "value": value} for i in range(count)]}

    session = RunSession(events=events)
    for event in [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, delta(MAX_PATCH_OPS, 1),
                  delta(MAX_PATCH_OPS + 1, 2), {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]:
        session.feed_payload(_payload(event))
    result = session.end()

    assert len(result.state.state) == MAX_PATCH_OPS and set(result.state.state.values()) == {1}
    [warning] = result.warnings
    assert (warning.code, warning.index, warning.pointer) == ("SP-06/AGUI302", 2, f"/delta/{MAX_PATCH_OPS}")
    assert f"more than the {MAX_PATCH_OPS}" in warning.message


def _list_inserts_while(call: Any) -> int:
    """How many times ``list.insert`` runs while ``call()`` does (each shifts every element after its place)."""
    count = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        # (a method called on an object is reported bound to it)
        if event == "c_call" and getattr(arg, "__name__", None) == "insert" and type(arg.__self__) is list:
            count += 1

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return count


def test_a_refused_patch_puts_the_elements_it_took_from_a_list_back_in_one_slice() -> None:
    # Undone one at a time, each of 2,000 removals at ``/list/0`` put its element back with an insert
    # that shifted the whole list again (20,000 at the front of a list of 100,000: 0.5 s to undo, twice
    # what applying them took). The undo now shifts the list once: no element is inserted on its own.
    doc = {"list": list(range(10_000))}
    patch: list[dict[str, Any]] = [{"op": "remove", "path": "/list/0"}] * 2000
    patch.append({"op": "test", "path": "/list/0", "value": "refused here"})

    def refused() -> None:
        with pytest.raises(PatchFailed) as caught:
            apply_patch(doc, patch)
        assert caught.value.op_index == 2000

    assert _list_inserts_while(refused) == 0
    assert doc == {"list": list(range(10_000))}


_SHIFTING = {  # patches that insert into or remove from lists, refused at their last operation
    "front inserts": [{"op": "add", "path": "/a/0", "value": v} for v in range(50)],
    "inserts in order at the front": [{"op": "add", "path": f"/a/{i}", "value": i} for i in range(9)],
    "appends": [{"op": "add", "path": "/a/-", "value": v} for v in range(9)],
    "inserts in the middle": [{"op": "add", "path": "/a/3", "value": v} for v in range(9)],
    "front removals": [{"op": "remove", "path": "/a/0"}] * 9,
    "removals from the end": [{"op": "remove", "path": f"/a/{i}"} for i in range(9, 0, -1)],
    "removals in the middle": [{"op": "remove", "path": "/a/4"}] * 5,
    "two lists in turn": [{"op": "add", "path": f"/{name}/0", "value": 7} for name in "abab"],
    "inserts then removals": [{"op": "add", "path": "/a/0", "value": 7}] * 3 + [{"op": "remove", "path": "/a/0"}] * 5,
    "removals then inserts": [{"op": "remove", "path": "/a/0"}] * 3 + [{"op": "add", "path": "/a/0", "value": 7}] * 3,
    "nested list": [{"op": "add", "path": "/a/0", "value": [1]}, {"op": "add", "path": "/a/0/0", "value": 2},
                    {"op": "add", "path": "/a/0/0", "value": 3}, {"op": "remove", "path": "/a/1"}],
    "replaced between": [{"op": "add", "path": "/a/0", "value": 7}, {"op": "replace", "path": "/a/0", "value": 8},
                         {"op": "add", "path": "/a/0", "value": 9}],
    "a move between": [{"op": "add", "path": "/a/0", "value": 7}, {"op": "move", "from": "/a/2", "path": "/b/0"},
                       {"op": "add", "path": "/a/0", "value": 9}],
}


@pytest.mark.parametrize("adopt", [False, True])
@pytest.mark.parametrize("ops", list(_SHIFTING.values()), ids=list(_SHIFTING))
def test_a_refused_patch_of_list_insertions_and_removals_leaves_the_lists_as_they_were(
        ops: list[dict[str, Any]], adopt: bool) -> None:
    doc = {"a": list(range(10)), "b": list(range(100, 105))}
    with pytest.raises(PatchFailed):
        apply_patch(doc, [*ops, {"op": "test", "path": "/a", "value": "refused here"}], adopt_values=adopt)
    assert doc == {"a": list(range(10)), "b": list(range(100, 105))}
