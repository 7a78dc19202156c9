"""``ThreadState.changes()``: one run's changes since the mark rebuild, on the stored data, the whole thread.

The rule checked everywhere: for the data ``D`` a store held at the mark (the previous ``dump()``, or
``{}`` for a thread never marked), ``apply_changes(D, [changes()])`` is ``dump()``, as JSON. It is
checked run by run on every golden stream (split at its runs, and folded twice over, so the second
fold re-opens, restates and answers what the first one left), on the ``bench/gen.py`` kinds at a small
scale, and on random runs interleaved with what an application does between runs (messages and tool
results added, the state set, interrupts held, a cut stream, a reload from the store). The focused
tests check that a change holds what the run changed and no more.
"""

from __future__ import annotations

import copy
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fuzz import streams

from agui_client import AguiError, ThreadState, replay
from agui_client.core.session import RunSession
from agui_client.stores import MemoryStore
from agui_client.stores.base import apply_changes
from agui_client.types import Interrupt, UserMessage
from agui_client.wire.codec import decode
from agui_client.wire.types.messages import Message

ROOT = Path(__file__).parent.parent.parent
GOLDEN = ROOT / "tests" / "golden" / "streams"
STREAMS = sorted(p.stem for p in GOLDEN.glob("*.jsonl"))


def _json(value: Any) -> Any:
    return json.loads(json.dumps(value))


class Checked:
    """A thread and what a store would hold of it, every change checked against the whole dump."""

    def __init__(self, state: ThreadState | None = None) -> None:
        self.state = state if state is not None else ThreadState()
        self.held: dict[str, Any] = {}  # (a thread never marked: its change applies to an empty record)
        self.changes: list[dict[str, Any]] = []

    def save(self) -> dict[str, Any]:
        change = _json(self.state.changes())
        whole = _json(self.state.dump())
        rebuilt = apply_changes(copy.deepcopy(self.held), [change])
        assert rebuilt == whole, {k: (rebuilt.get(k), whole.get(k)) for k in rebuilt.keys() | whole.keys()
                                  if rebuilt.get(k) != whole.get(k)}
        self.state.mark()
        self.held = whole
        self.changes.append(change)
        return change

    def reload(self) -> None:
        """Load the thread from what the store holds (as a thread object does), marked at it."""
        self.state = ThreadState.load(_json(self.held), adopt=True)


def _fold(state: ThreadState, lines: list[bytes]) -> None:
    try:
        replay(b"\n".join(lines) + b"\n", state=state, format="jsonl")
    except AguiError:
        pass  # (what was folded before the fault stays folded, as in a live run)


def _runs(lines: list[bytes]) -> list[list[bytes]]:
    """The stream cut before each RUN_STARTED but the first: one part per run."""
    parts: list[list[bytes]] = [[]]
    for line in lines:
        try:
            kind = json.loads(line).get("type")
        except (ValueError, AttributeError):
            kind = None
        if kind == "RUN_STARTED" and parts[-1]:
            parts.append([])
        parts[-1].append(line)
    return parts


def _seeded(name: str) -> ThreadState:
    # The thread the oracle seeds (test_golden.py): history a stream may re-open, answer or restate.
    path = GOLDEN / f"{name}.input.json"
    seed = json.loads(path.read_text()) if path.exists() else {}
    return ThreadState(messages=decode(seed.get("messages", []), tuple[Message, ...]), state=seed.get("state", {}),
                       thread_id=seed.get("threadId"),
                       open_interrupts=decode(seed.get("pendingInterrupts", []), tuple[Interrupt, ...]))


@pytest.mark.parametrize("name", STREAMS)
def test_every_golden_stream_saved_run_by_run_rebuilds_the_thread(name: str) -> None:
    lines = [line for line in (GOLDEN / f"{name}.jsonl").read_bytes().splitlines() if line.strip()]
    thread = Checked(_seeded(name))
    thread.save()  # (the seeded thread, never marked: its change is the whole of it)
    for part in _runs(lines):
        _fold(thread.state, part)
        thread.save()
    # The same stream again, as later runs: it re-opens, restates and answers what the first fold made.
    _fold(thread.state, lines)
    thread.save()
    thread.reload()
    _fold(thread.state, lines)
    thread.save()


def _gen(kind: str, seed: int) -> list[bytes]:
    sys.path.insert(0, str(ROOT))
    try:
        from bench import gen
    finally:
        sys.path.remove(str(ROOT))
    return [json.dumps(event, ensure_ascii=False).encode() for event in getattr(gen.Gen(seed, 0.01), kind)()]


@pytest.mark.parametrize("kind", ["chat", "state", "tools", "snapshot", "mixed"])
def test_the_bench_kinds_saved_run_by_run_rebuild_the_thread(kind: str) -> None:
    thread = Checked()
    first, second = _gen(kind, 1), _gen(kind, 2)
    for lines in (first, second, first):  # (the last one folds over what the first made)
        _fold(thread.state, lines)
        change = thread.save()
        assert change["set"]["lastRunId"] == thread.state.last_run.run_id  # type: ignore[union-attr]
    thread.reload()
    _fold(thread.state, second)
    thread.save()


# -- random runs, with what an application does between them ---------------------------------------

_between = st.sampled_from(["nothing", "user", "replace", "tool-result", "set-state", "hold", "clear", "cut",
                            "reload", "in-sync"])


def _between_runs(thread: Checked, action: str, n: int) -> None:
    state = thread.state
    if action == "user":
        state.add_message(UserMessage(id=f"u{n}", content=f"turn {n}"))
    elif action == "replace" and len(state):
        state.add_message(UserMessage(id=state.messages[n % len(state)].id, content="replaced"))
    elif action == "tool-result":
        state.add_tool_result(["c1", "c2", "m1"][n % 3], f"result {n}", message_id=f"r{n}")
    elif action == "set-state":
        state.set_state({"n": n})
    elif action == "hold":
        state.hold_interrupts([Interrupt(id=f"i{n}", reason="approval")], f"run{n}")
    elif action == "clear":
        state.clear_open_interrupts()
    elif action == "cut":
        state.mark_incomplete(["m1", "m2"], ["c1", "c2"])
    elif action == "reload":
        thread.reload()
    elif action == "in-sync":
        state.state_in_sync = not state.state_in_sync


def _session_fold(state: ThreadState, events: list[dict[str, Any]], plain: bool) -> None:
    session = RunSession(state, collect_errors=True, events=not plain)
    for event in events:
        session.feed_payload(json.dumps(event, separators=(",", ":")).encode("utf-8", "surrogatepass"))
    session.end()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(streams, _between, st.booleans()), min_size=1, max_size=4))
def test_random_runs_saved_one_by_one_rebuild_the_thread(runs: list[tuple[list[dict[str, Any]], str, bool]]) -> None:
    thread = Checked()
    for n, (events, action, plain) in enumerate(runs):
        _session_fold(thread.state, events, plain)
        thread.save()
        _between_runs(thread, action, n)
        thread.save()


# -- what a change holds ---------------------------------------------------------------------------------

def _run(n: int, *, usage: bool = False, delta: bool = False, thread_id: str = "t") -> list[bytes]:
    ids = {"threadId": thread_id, "runId": f"run{n}"}
    events: list[dict[str, Any]] = [
        {"type": "RUN_STARTED", **ids},
        {"type": "TEXT_MESSAGE_START", "messageId": f"a{n}", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": f"a{n}", "delta": f"reply {n}"},
        {"type": "TEXT_MESSAGE_END", "messageId": f"a{n}"},
    ]
    if delta:
        events.append({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/n", "value": n}]})
    finish: dict[str, Any] = {"type": "RUN_FINISHED", **ids}
    if usage:
        finish["usage"] = [{"inputTokens": n, "outputTokens": 1}]
    events.append(finish)
    return [json.dumps(e).encode() for e in events]


def test_a_long_threads_change_after_a_short_run_holds_that_run_only() -> None:
    thread = Checked()
    for n in range(1000):
        thread.state.add_message(UserMessage(id=f"u{n}", content=f"question {n}"))
        _fold(thread.state, _run(n, usage=True))
        if n in (0, 500):
            thread.save()
    thread.save()
    before = len(thread.state)
    assert before == 2000

    thread.state.add_message(UserMessage(id="u-last", content="one more"))
    _fold(thread.state, _run(1000, usage=True))
    change = thread.save()

    assert change["messagesFrom"] == before
    assert [m["id"] for m in change["messages"]] == ["u-last", "a1000"]
    assert "state" not in change["set"]  # (the document did not change)
    assert change["merge"] == {"usageByRun": {"run1000": [{"inputTokens": 1000, "outputTokens": 1}]}}
    assert "unset" not in change
    assert len(json.dumps(change)) < 1000  # (what a save writes does not grow with the thread)


def test_the_state_is_written_only_when_the_document_changed() -> None:
    thread = Checked()
    thread.save()
    _fold(thread.state, _run(1))
    assert "state" not in thread.save()["set"]
    _fold(thread.state, _run(2, delta=True))
    assert thread.save()["set"]["state"] == {"n": 2}
    thread.state.set_state({"set": True})
    change = thread.save()
    assert change["set"]["state"] == {"set": True} and "messagesFrom" not in change


def test_nothing_changed_writes_only_the_small_fields() -> None:
    thread = Checked()
    _fold(thread.state, _run(1, usage=True))
    thread.save()
    change = thread.save()
    assert set(change) == {"set"} and "state" not in change["set"]


def test_a_new_thread_is_written_whole_to_an_empty_record() -> None:
    state = ThreadState(messages=[UserMessage(id="u1", content="hi")], state={"a": 1})
    _fold(state, _run(1, usage=True))
    change = state.changes()
    assert change["messagesFrom"] == 0 and len(change["messages"]) == 2
    assert change["set"]["state"] == {"a": 1}
    assert apply_changes({}, [_json(change)]) == _json(state.dump())
    assert apply_changes({}, [_json(ThreadState().changes())]) == _json(ThreadState().dump())


def test_a_thread_loaded_from_a_store_and_run_once_appends_to_that_record() -> None:
    first = ThreadState(thread_id="t")
    for n in range(5):
        _fold(first, _run(n, usage=True))
    with MemoryStore() as store:
        version = store.save("t", first.dump(), expected_version=None)
        stored = store.load("t")
        assert stored is not None
        state = ThreadState.load(stored.data, adopt=True)
        state.add_message(UserMessage(id="u5", content="again"))
        _fold(state, _run(5, usage=True))
        change = state.changes()
        assert change["messagesFrom"] == 5 and [m["id"] for m in change["messages"]] == ["u5", "a5"]
        store.append("t", change, expected_version=version)
        state.mark()
        again = store.load("t")
        assert again is not None and again.changes == 1
        assert again.data == _json(state.dump())


def test_a_record_without_some_fields_gets_them_from_the_first_change() -> None:
    # An older or foreign record that lacks what dump() writes: the first change writes it.
    data = {"threadId": "t", "messages": [{"id": "u1", "role": "user", "content": "hi"}]}
    state = ThreadState.load(copy.deepcopy(data), adopt=True)
    change = state.changes()
    assert apply_changes(copy.deepcopy(data), [_json(change)]) == _json(state.dump())
    assert "state" in change["set"] and set(change["merge"]) == {"usageByRun", "subagents"}
    bare = ThreadState.load({"format": 1}, adopt=True)
    assert apply_changes({"format": 1}, [_json(bare.changes())]) == _json(bare.dump())


def test_an_old_message_changed_in_place_is_written_from_its_position() -> None:
    # TX-05: a run re-opens a message of an earlier run and appends to it.
    thread = Checked()
    for n in range(10):
        _fold(thread.state, _run(n))
    thread.save()
    reopen = [json.dumps(e).encode() for e in (
        {"type": "RUN_STARTED", "threadId": "t", "runId": "again"},
        {"type": "TEXT_MESSAGE_START", "messageId": "a3"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "a3", "delta": " and more"},
        {"type": "TEXT_MESSAGE_END", "messageId": "a3"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "again"})]
    _fold(thread.state, reopen)
    change = thread.save()
    assert change["messagesFrom"] == 3
    assert change["messages"][0] == {"id": "a3", "role": "assistant", "content": "reply 3 and more"}


def test_a_tool_result_placed_among_old_messages_is_written_from_its_place() -> None:
    thread = Checked()
    call = [json.dumps(e).encode() for e in (
        {"type": "RUN_STARTED", "threadId": "t", "runId": "calls"},
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f", "parentMessageId": "m1"},
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "calls"})]
    _fold(thread.state, call)
    for n in range(5):
        _fold(thread.state, _run(n))
    thread.save()
    thread.state.add_tool_result("c1", "done", message_id="r1")
    change = thread.save()
    assert change["messagesFrom"] == 1 and change["messages"][0]["id"] == "r1"
    assert len(change["messages"]) == 6


def test_a_snapshot_restating_the_thread_keeps_what_it_does_not_change() -> None:
    thread = Checked()
    for n in range(6):
        _fold(thread.state, _run(n))
    thread.save()
    held = [m for m in _json(thread.state.dump())["messages"]]
    restated = [*held[:4], {"id": "a4", "role": "assistant", "content": "rewritten"}]  # (a5 dropped)
    snapshot = [json.dumps(e).encode() for e in (
        {"type": "RUN_STARTED", "threadId": "t", "runId": "snap"},
        {"type": "MESSAGES_SNAPSHOT", "messages": restated},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "snap"})]
    _fold(thread.state, snapshot)
    # The snapshot's messages are new objects: the change restates the thread from its first message
    # (a thread's runs then save it whole: ThreadState.restates_messages), and is still right.
    assert thread.state.restates_messages()
    change = thread.save()
    assert change["messagesFrom"] == 0 and len(change["messages"]) == len(thread.state) == 5
    assert not thread.state.restates_messages()


def test_usage_and_subagents_merge_only_what_the_run_wrote() -> None:
    thread = Checked()
    _fold(thread.state, _run(1, usage=True))
    thread.save()
    events = [json.dumps(e).encode() for e in (
        {"type": "RUN_STARTED", "threadId": "t", "runId": "run2"},
        {"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "helper"},
        {"type": "SUBAGENT_FINISHED", "subagentRunId": "s1", "outcome": {"type": "success"}},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "run2", "usage": [{"outputTokens": 7}]})]
    _fold(thread.state, events)
    change = thread.save()
    assert set(change["merge"]["usageByRun"]) == {"run2"}
    assert change["merge"]["subagents"]["s1"]["status"] == "success"


def test_clearing_interrupts_a_legacy_bridge_read_unsets_how_they_were_asked() -> None:
    data = {"format": 1, "threadId": "t", "messages": [], "state": {}, "usageByRun": {}, "subagents": {},
            "openInterrupts": [{"id": "i1", "reason": "input"}], "interruptedRunId": "r1",
            "openInterruptsVia": "langgraph", "lastOutcome": "interrupt", "lastRunId": "r1"}
    state = ThreadState.load(copy.deepcopy(data), adopt=True)
    state.clear_open_interrupts()
    change = state.changes()
    assert change["unset"] == ["openInterruptsVia"]
    assert apply_changes(copy.deepcopy(data), [_json(change)]) == _json(state.dump())


def test_a_cut_message_keeps_its_flag_in_the_record_until_it_ends() -> None:
    # A cut message is saved by a later run with its flag (``incompleteIds``); a run that re-opens and
    # ends it clears the flag, and the change unsets the key.
    data = {"format": 1, "threadId": "t", "messages": [{"id": "m1", "role": "assistant", "content": "Hel"}],
            "state": {}, "usageByRun": {}, "subagents": {}, "openInterrupts": [], "lastOutcome": "success",
            "lastRunId": "r1", "incompleteIds": ["m1"]}
    state = ThreadState.load(copy.deepcopy(data), adopt=True)
    assert state.incomplete_ids == {"m1"}
    assert state.dump()["incompleteIds"] == ["m1"]
    _fold(state, [json.dumps(e).encode() for e in (
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r2"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m1"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "lo"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r2"})])
    assert state.incomplete_ids == frozenset()
    change = state.changes()
    assert change["unset"] == ["incompleteIds"]
    assert "incompleteIds" not in state.dump()
    assert apply_changes(copy.deepcopy(data), [_json(change)]) == _json(state.dump())
    with pytest.raises(ValueError) as refused:
        ThreadState.load({**data, "incompleteIds": "m1"})
    assert "incompleteIds" in str(refused.value)


def test_the_mark_moves_only_when_asked() -> None:
    # changes() reads, it does not mark: a write that fails can be retried with the same change.
    state = ThreadState()
    _fold(state, _run(1))
    assert state.changes() == state.changes()
    state.mark()
    assert set(state.changes()) == {"set"}


def test_the_stores_page_example_of_changes_runs_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    page = (ROOT / "docs" / "stores.md").read_text()
    snippets = [s for s in re.findall(r"```py\n(.*?)```", page, flags=re.S) if "changes()" in s]
    assert len(snippets) == 1
    exec(compile(snippets[0], "docs/stores.md", "exec"), {"__name__": "__docs__"})
    assert capsys.readouterr().out == "[{'id': 'm1', 'role': 'assistant', 'content': 'Hello'}]\nTrue\n"
