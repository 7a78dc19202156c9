"""``max_run_memory``: what one run's response may make its thread hold (``RUN-MEMORY``).

``max_run_bytes`` bounds the body, not what folding it builds: 20,000 ``TOOL_CALL_START`` (1.5 MB)
made the thread hold some 18 MB, and state dense with small containers 21-32 times its bytes. The
budget estimates what the thread holds as the body is read, and refuses the read that would pass it.
"""

from __future__ import annotations

import asyncio
import gc
import json
import tracemalloc
from functools import partial
from typing import Any

import pytest
from clikit import agui_here
from wirekit import sse

import agui_client as ag
from agui_client.client import DEFAULT_MAX_RUN_MEMORY
from agui_client.core.budget import ENTITY_COST, PARSE_BYTE_COST, PARSE_COST, STRUCTURE_COST, WIDE, MemoryBudget
from agui_client.core.fold.document import json_structure
from agui_client.core.session import RunSession
from agui_client.testing import Finish, ScriptedAgent, Start
from agui_client.wire.sink import WARNINGS_PER_CODE

LIMIT = 4 * 2**20


_sse = partial(sse, compact=True)  # (compact JSON, as producers write it: the byte counts below are of it)


def _tool_calls(count: int) -> bytes:
    """``count`` tool calls, each started and ended: some 900 bytes held for 130 on the wire."""
    return b"".join(_sse({"type": "TOOL_CALL_START", "toolCallId": f"c{i}", "toolCallName": "f"},
                         {"type": "TOOL_CALL_END", "toolCallId": f"c{i}"}) for i in range(count))


def _dense_adds(count: int) -> bytes:
    """``count`` deltas, each adding 1,000 empty arrays to state: some 64 bytes held for every 3 sent."""
    return _sse(*({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/x/-", "value": [[]] * 1000}]}
                  for _ in range(count)))


def _calls_held(state: Any) -> int:
    return sum(len(m.tool_calls or ()) for m in state.messages if isinstance(m, ag.AssistantMessage))


def _refused(drive: Any, url: str) -> tuple[ag.LimitExceeded, int]:
    """The run refused at LIMIT, and the peak of what was allocated while it ran (tracemalloc)."""
    gc.collect()
    tracemalloc.start()
    try:
        with drive.client(url, max_run_memory=LIMIT) as client:
            with pytest.raises(ag.LimitExceeded) as caught:
                client.thread("t").run("hi", run_id="r")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return caught.value, peak


def test_many_small_entities_are_refused_before_the_thread_holds_more_than_max_run_memory(
        drive: Any, served: Any) -> None:
    # 20,000 calls: 2.6 MB of body (within every other limit) that the thread held as some 18 MB.
    endpoint = served(ScriptedAgent([[Start(), _tool_calls(20_000), Finish()]]))

    error, peak = _refused(drive, endpoint.url)

    assert (error.rule, error.run_id, error.limit) == ("RUN-MEMORY", "r", LIMIT)
    assert error.event_type in ("TOOL_CALL_START", "TOOL_CALL_END")
    assert 1 < error.index < 40_001 and "max_run_memory" in str(error)
    assert error.result is not None and error.result.events == error.index  # (folded up to the refused read)
    calls = _calls_held(error.result.state)
    # Each call was charged at least ENTITY_COST, so the thread stopped within the budget, and not at
    # its first read either: it went on until the budget was near.
    assert LIMIT // 4 < calls * ENTITY_COST <= LIMIT
    assert peak < 2 * LIMIT  # (the whole run, client and loopback server: 18 MB and more without a bound)


def test_steps_left_open_are_refused_before_the_thread_holds_more_than_max_run_memory(drive: Any, served: Any) -> None:
    # 60,000 steps started and never finished (2.6 MB of body): each made the thread hold some 340 bytes
    # (its record and its place among the open steps), charged some 180 for its bytes and structure, so
    # the thread held twice its budget before steps were charged as entities.
    steps = _sse(*({"type": "STEP_STARTED", "stepName": f"s{i}"} for i in range(60_000)))
    endpoint = served(ScriptedAgent([[Start(), steps, Finish()]]))

    error, peak = _refused(drive, endpoint.url)

    assert (error.rule, error.run_id, error.event_type) == ("RUN-MEMORY", "r", "STEP_STARTED")
    assert error.result is not None and error.result.events == error.index
    held = len(error.result.steps)
    assert held == error.index - 1  # (every event folded before the refused read started a step)
    # Each step was charged ENTITY_COST at least, so the thread stopped within the budget, give or take
    # the steps of the last read let through (at most 64 KiB, checked before its steps were folded).
    one_read = 65536 // len(_sse({"type": "STEP_STARTED", "stepName": "s0"}))
    assert LIMIT // 4 < (held - one_read) * ENTITY_COST <= LIMIT
    assert peak < 2 * LIMIT


def test_state_dense_with_containers_is_refused_before_it_passes_max_run_memory(drive: Any, served: Any) -> None:
    # 300 deltas of 3 KB: 0.9 MB of body that the state held as some 19 MB.
    endpoint = served(ScriptedAgent([[Start(), _sse({"type": "STATE_SNAPSHOT", "snapshot": {"x": []}}),
                                      _dense_adds(300), Finish()]]))

    error, peak = _refused(drive, endpoint.url)

    assert (error.rule, error.event_type) == ("RUN-MEMORY", "STATE_DELTA")
    assert error.result is not None and error.result.events == error.index
    added = error.result.state.state["x"]  # (the state as folded before the refused read)
    assert added and all(value == [[]] * 1000 for value in added)
    # Each empty array was charged STRUCTURE_COST at least: the state stopped within the budget.
    assert len(added) * 1000 * STRUCTURE_COST <= LIMIT
    assert peak < 2 * LIMIT


def test_legitimate_large_runs_pass_at_the_default(drive: Any, served: Any) -> None:
    # Thousands of tool calls, a state snapshot of 4 MB of ordinary records, and 20,000 text deltas.
    records = [{"id": f"rec-{i:07d}", "title": f"Item number {i}", "price": i * 1.25, "tags": ["a", "b"],
                "owner": {"name": "somebody", "active": i % 2 == 0}} for i in range(40_000)]
    deltas = _sse(*({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "a few words"}
                    for _ in range(20_000)))
    endpoint = served(ScriptedAgent([[Start(), _tool_calls(5_000), _sse({"type": "STATE_SNAPSHOT", "snapshot":
                                                                      {"records": records}}),
                                      _sse({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}),
                                      deltas, _sse({"type": "TEXT_MESSAGE_END", "messageId": "m"}), Finish()]]))

    with drive.client(endpoint.url) as client:
        assert client.max_run_memory == DEFAULT_MAX_RUN_MEMORY
        result = client.thread("t").run("hi", run_id="r")

    assert result.outcome == "success" and len(result.state.state["records"]) == 40_000
    assert _calls_held(result.state) == 5_000 and len(result.text) == 20_000 * len("a few words")


def charged_budget(body: bytes, limit: int = DEFAULT_MAX_RUN_MEMORY) -> MemoryBudget:
    """A budget charged ``body`` as the framer charges it, a network read (64 KiB) at a time (its
    ``charged``: the entities aside)."""
    budget = MemoryBudget(limit)
    for at in range(0, len(body), 65536):
        chunk = body[at:at + 65536]
        budget.read(chunk, chunk.count(b"\n\n"))
    return budget


def test_the_default_holds_a_long_chat_and_a_large_snapshot() -> None:
    # A chat of 10 MB of text, streamed as deltas of 8 characters with ids and timestamps as producers
    # send them (1.25 million events, some 150 MB of body), is charged well within the default.
    delta = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg_c2ce6f447ed4457b9e2f", "delta": " abcdefg",
             "timestamp": 1767225600060}
    sample = _sse(*([delta] * 10_000))
    assert charged_budget(sample).charged * (10 * 2**20 // (10_000 * 8)) < 0.75 * DEFAULT_MAX_RUN_MEMORY
    # A state snapshot of 16 MiB of ordinary records, as one event.
    record = {"id": "rec-0000001", "title": "Item number 1", "price": 1.25, "tags": ["a", "b"],
              "owner": {"name": "somebody", "active": True}}
    one = json.dumps(record, separators=(",", ":")).encode()
    snapshot = b'data: {"type":"STATE_SNAPSHOT","snapshot":[' + b",".join([one] * (16 * 2**20 // len(one))) + b"]}\n\n"
    assert charged_budget(snapshot).charged < DEFAULT_MAX_RUN_MEMORY / 4


@pytest.mark.parametrize("make", [ag.AgentClient, ag.AsyncAgentClient])
def test_max_run_memory_refuses_what_is_no_budget(make: Any) -> None:
    assert DEFAULT_MAX_RUN_MEMORY == 2**30
    for bad in (0, -1, 1.5, "1024", True):
        with pytest.raises(ValueError) as refused:
            make("http://127.0.0.1:9/", max_run_memory=bad)
        assert "max_run_memory must be a positive int or None" in str(refused.value)
    client = make("http://127.0.0.1:9/", max_run_memory=None)
    try:
        assert client.max_run_memory is None
        for bad in (0, -5, 2.0, "1G", False):
            with pytest.raises(ValueError) as refused:
                client.max_run_memory = bad
            assert repr(bad) in str(refused.value)
        client.max_run_memory = 4096
        assert client.max_run_memory == 4096
    finally:
        if make is ag.AgentClient:
            client.close()
        else:
            asyncio.run(client.close())


def test_the_cli_bounds_a_run_with_max_run_memory(served: Any) -> None:
    endpoint = served(ScriptedAgent([[Start(), _tool_calls(5_000), Finish()]], cycle=True))

    bounded = agui_here("run", endpoint.url, "-m", "hi", "--max-run-memory", "1M")
    unbounded = agui_here("run", endpoint.url, "-m", "hi", "--max-run-memory", "none")
    refused = agui_here("run", endpoint.url, "-m", "hi", "--max-run-memory", "0")

    assert bounded.returncode != 0 and "RUN-MEMORY" in bounded.stdout + bounded.stderr
    assert unbounded.returncode == 0, unbounded.stderr
    assert refused.returncode == 2 and "--max-run-memory" in refused.stderr


def test_copies_a_few_bytes_of_patch_make_are_bounded_by_max_run_memory(drive: Any, served: Any) -> None:
    # A snapshot of 30,000 empty arrays (charged some 1.9 MB), then 200 deltas of 70 bytes, each copying
    # them: the copy allowance let 33 copies through, and the thread held 138 MB under a 4 MiB budget.
    count = 30_000
    copies = _sse(*({"type": "STATE_DELTA", "delta": [{"op": "copy", "from": "/a", "path": f"/b{i}"}]}
                    for i in range(200)))
    endpoint = served(ScriptedAgent([[Start(), _sse({"type": "STATE_SNAPSHOT", "snapshot": {"a": [[]] * count}}),
                                      copies, Finish()]]))

    error, peak = _refused(drive, endpoint.url)

    assert (error.rule, error.run_id) == ("RUN-MEMORY", "r")
    assert error.result is not None
    copied = len(error.result.state.state) - 1  # (the copies made before the budget stopped them)
    assert (copied + 1) * count * STRUCTURE_COST <= LIMIT
    # The copies past the budget's room were refused as a copy past its allowance is (SP-06).
    assert any(w.code == "SP-06/AGUI302" and "copy amplification" in w.message for w in error.result.warnings)
    # (the snapshot's one event parsed whole, the view of its state and the loopback server's body come
    # on top of what the thread holds: 10-11 MB at the peak, against 246 MB without the bound on copies)
    assert peak < 4 * LIMIT


def _records(count: int) -> list[dict[str, Any]]:
    return [{"id": f"rec-{i:07d}", "title": f"Item number {i}", "price": i * 1.25, "tags": ["a", "b"],
             "owner": {"name": "somebody", "active": i % 2 == 0}} for i in range(count)]


def test_a_state_sent_again_at_every_step_is_charged_once(drive: Any, served: Any) -> None:
    # 40 steps, each sending the whole state again (200 KB of ordinary records, charged some 2 MB):
    # charged 80 MB in all, the thread holding one state, it was refused at a 16 MiB budget (and the
    # same state sent at 540 steps at the default). Each replaced state is credited its structure.
    # (24 MiB, not 16: each snapshot, over 128 KiB, is also charged its parse while it is parsed, some
    # 5.5 MB, beside the steps' bytes, which stay charged: 17 MB at the last step, 80 MB without the credit.)
    snapshot = _sse({"type": "STATE_SNAPSHOT", "snapshot": {"records": _records(1_700)}})
    step = _sse({"type": "STEP_STARTED", "stepName": "s"}) + snapshot + _sse({"type": "STEP_FINISHED", "stepName": "s"})
    endpoint = served(ScriptedAgent([[Start(), step * 40, Finish()]]))

    with drive.client(endpoint.url, max_run_memory=24 * 2**20) as client:
        result = client.thread("t").run("hi", run_id="r")

    assert result.outcome == "success" and len(result.state.state["records"]) == 1_700


def test_only_a_state_this_response_brought_is_credited() -> None:
    # The state a thread held before the response was not charged to its budget: replacing it frees
    # what the budget never counted, so nothing is credited for it.
    state = ag.ThreadState(state={"records": _records(1_000)})
    session = RunSession(state, budget=MemoryBudget(LIMIT))
    one = b'{"type":"STATE_SNAPSHOT","snapshot":{"a":[1,2,3]}}'
    session.feed_payload(b'{"type":"RUN_STARTED","threadId":"t","runId":"r"}')
    assert session.admit([one])
    session.feed_payload(one)
    assert state.document.released == 0
    assert session.admit([one])
    session.feed_payload(one)
    assert state.document.released == json_structure({"a": [1, 2, 3]}) == 5


def test_a_new_unknown_type_at_every_event_keeps_the_warnings_bookkeeping_bounded() -> None:
    # 20,000 events, each of an unknown type of its own, which the budget charges at their bytes (an event's
    # own object is no structure it charges). Each type is warned of once, and every type warned of was
    # remembered for that: some 160 bytes each, 3 MB held while the response was read (16 MB at 100,000),
    # though the run's warnings keep WARNINGS_PER_CODE of a code and only count the rest. (20,000, not
    # 100,000: the remembering is linear, and at 20,000 it still holds three times the bound asserted,
    # while tracing every allocation took 5-8 times longer, most of this file's time.)
    session = RunSession(ag.ThreadState())
    session.feed_payload(b'{"type":"RUN_STARTED","threadId":"t","runId":"r"}')
    payloads = [b'{"type":"X%06d"}' % i for i in range(20_000)]
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for payload in payloads:
            session.feed_payload(payload)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()

    assert held < 2**20
    unknown = [w for w in session.warnings if w.code == "UK-02"]
    assert len(unknown) == WARNINGS_PER_CODE and unknown[0].event_type == "X000000"
    assert session.warnings.dropped == len(payloads) - WARNINGS_PER_CODE  # (each said, and counted)


def test_max_run_memorys_docstring_states_the_parse_charge_the_budget_makes() -> None:
    """The property's help says what a large event's parse is charged: the twenty-third round changed the
    charge (160 a structural character became 74, and 9 a byte) and the docstring kept the old number."""
    doc = " ".join((ag.AgentClient.max_run_memory.__doc__ or "").split())
    assert f"({PARSE_COST} bytes for each of those characters and {PARSE_BYTE_COST} for each of its bytes," in doc
    assert f"{WIDE} more for each byte of the response" in doc
