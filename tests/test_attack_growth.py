"""Hostile stream content that aimed at the client's time or memory (the growth audit, issue 21).

Each test builds what a hostile agent could send (thousands of interrupts, ids, warnings ...) and
checks that the work or memory it costs stays bounded by what was received: no timing is asserted,
the work is counted (a hash counted on an id, a structure's size) or memory measured against the input.
"""

from __future__ import annotations

import gc
import json
import random
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from wirekit import sse

from agui_client import RunResult, check_answer, replay
from agui_client.core import schema as schema_module
from agui_client.core import schema_dialects
from agui_client.core.fold import ThreadState
from agui_client.core.fold import entries as entries_module
from agui_client.core.interrupts import ResumeBuilder
from agui_client.core.session import RunSession
from agui_client.errors import DecodeError, InvalidResumePayload, LimitExceeded, StreamEnded, UnknownInterrupt
from agui_client.types.run import Interrupt
from agui_client.wire import jsonio
from agui_client.wire.codec import decode_event
from agui_client.wire.sink import WARNINGS_PER_CODE, collect_warnings
from agui_client.wire.sse import SSEDecoder


class _CountedId(str):
    """An interrupt id that counts how often it is hashed (each dict or set lookup or insert hashes it)."""

    hashed = 0

    def __hash__(self) -> int:
        _CountedId.hashed += 1
        return str.__hash__(self)


def test_answering_interrupts_one_by_one_reads_each_id_a_bounded_number_of_times() -> None:
    # Each answer read every open id again (n² hashes: 4 s for 8,000 interrupts); now the ids are
    # read once when the builder is made, and each answer looks its own id up.
    n = 2000
    interrupts = [Interrupt(id=_CountedId(f"i{k}"), reason="tool_approval") for k in range(n)]
    _CountedId.hashed = 0
    builder = ResumeBuilder(interrupts)
    for interrupt in interrupts:
        builder.answer(interrupt.id, {"ok": True})
    assert _CountedId.hashed <= 4 * n
    assert len(builder.build()) == n


def test_an_unknown_answer_lists_ten_open_interrupts_and_counts_the_rest() -> None:
    builder = ResumeBuilder([Interrupt(id=f"i{k}" + "x" * 500, reason="r") for k in range(5000)])
    with pytest.raises(UnknownInterrupt) as caught:
        builder.answer("nope", {})
    assert "(4990 more)" in str(caught.value)
    assert len(str(caught.value)) < 2000
    assert len(caught.value.open_ids) == 5000


class _CountedList(list):  # type: ignore[type-arg]
    """A message log's list that counts the entries read from it (by index or by iteration)."""

    def __init__(self, items: Any) -> None:
        super().__init__(items)
        self.reads = 0

    def __getitem__(self, index: Any) -> Any:
        self.reads += 1
        return super().__getitem__(index)

    def __iter__(self) -> Iterator[Any]:
        for item in super().__iter__():
            self.reads += 1
            yield item


def _fold_counting(first: list[dict[str, Any]], then: list[dict[str, Any]]) -> tuple[ThreadState, int]:
    """Fold ``first``, then count the log's reads while ``then`` is folded (each event through the fold)."""
    state = ThreadState()
    for event in first:
        state.apply(decode_event(event))
    counted = state.log.entries = _CountedList(state.log.entries)
    for event in then:
        state.apply(decode_event(event))
    assert state.log.entries is counted  # (nothing replaced the list: every read was counted)
    return state, counted.reads


def _calling(i: int, call_id: str) -> dict[str, Any]:
    return {"id": f"m{i}", "role": "assistant",
            "toolCalls": [{"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}]}


START_EVENT: dict[str, Any] = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}


@pytest.mark.parametrize("order", ["forward", "backward"])
def test_replacing_message_after_message_of_a_long_thread_reads_each_a_bounded_number_of_times(order: str) -> None:
    # Each replacement searched the list from the end for the message it replaces: an agent replacing
    # every message of a snapshot with an activity took n² steps (32,000 events: 3.3 s).
    n = 2000
    ids = range(n) if order == "forward" else range(n - 1, -1, -1)
    snapshot = {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": f"m{i}", "role": "assistant", "content": "x"}
                                                          for i in range(n)]}
    state, reads = _fold_counting([START_EVENT, snapshot], [
        {"type": "ACTIVITY_SNAPSHOT", "messageId": f"m{i}", "activityType": "p", "content": {"i": i}} for i in ids])
    assert reads <= 100 * n
    assert [m.id for m in state.messages] == [f"m{i}" for i in range(n)]
    assert all(m.ROLE == "activity" for m in state.messages)


def test_replacing_the_holders_of_a_shared_call_id_one_by_one_reads_each_a_bounded_number_of_times() -> None:
    # The next holder of a call id was looked for from the replaced message on through islice, which
    # steps through every message before it: n² for n holders replaced in order.
    n = 2000
    snapshot = {"type": "MESSAGES_SNAPSHOT", "messages": [_calling(i, "c") for i in range(n)]}
    state, reads = _fold_counting([START_EVENT, snapshot], [
        {"type": "ACTIVITY_SNAPSHOT", "messageId": f"m{i}", "activityType": "p", "content": {}} for i in range(n - 1)])
    assert reads <= 100 * n
    # (the last holder is the first holder now: a result goes after it)
    state.apply(decode_event({"type": "TOOL_CALL_RESULT", "messageId": "t", "toolCallId": "c", "content": "r"}))
    assert [m.id for m in state.messages][-2:] == [f"m{n - 1}", "t"]


@pytest.mark.parametrize("order", ["in order", "shuffled"])
def test_answering_a_snapshots_calls_one_by_one_reads_far_less_than_the_square(order: str) -> None:
    # Each result searched the list from the end for the message holding its call: n² steps for a
    # snapshot's n calls (32,000 events: 4.4 s). In order each is found next to the last one; in any
    # order through the map of places, remade every √n tool messages put in the middle.
    n = 2000
    ids = list(range(n))
    if order == "shuffled":
        random.Random(7).shuffle(ids)
    snapshot = {"type": "MESSAGES_SNAPSHOT", "messages": [_calling(i, f"c{i}") for i in range(n)]}
    state, reads = _fold_counting([START_EVENT, snapshot], [
        {"type": "TOOL_CALL_RESULT", "messageId": f"t{i}", "toolCallId": f"c{i}", "content": "r"} for i in ids])
    assert reads <= (300 if order == "shuffled" else 100) * n  # (before: 2,000,000 and more)
    assert [m.id for m in state.messages] == [x for i in range(n) for x in (f"m{i}", f"t{i}")]


class _CountedDict(dict):  # type: ignore[type-arg]
    """A message log's id index that counts the ids looked for in it."""

    def __init__(self, items: Any) -> None:
        super().__init__(items)
        self.asked = 0

    def __contains__(self, key: object) -> bool:
        self.asked += 1
        return super().__contains__(key)


_ONE_USER_MESSAGE_AND_A_CALL: list[dict[str, Any]] = [
    START_EVENT, {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "u", "role": "user", "content": "hi"}]},
    {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"}, {"type": "TOOL_CALL_END", "toolCallId": "c"}]


def test_results_all_named_after_one_message_look_up_a_bounded_number_of_ids() -> None:
    # Each result whose messageId names another message is kept as `u.c`, `u.c.2`, `u.c.3` ...: the
    # next free name was counted from 2 each time (16,000 events: 40 s).
    n = 2000
    state = ThreadState()
    for event in _ONE_USER_MESSAGE_AND_A_CALL:
        state.apply(decode_event(event))
    counted = state.log.by_id = _CountedDict(state.log.by_id)
    for _ in range(n):
        state.apply(decode_event({"type": "TOOL_CALL_RESULT", "messageId": "u", "toolCallId": "c", "content": "r"}))
    assert state.log.by_id is counted
    assert counted.asked <= 20 * n
    assert [m.id for m in state.messages][-2:] == [f"u.c.{n - 1}", f"u.c.{n}"]


def test_a_name_let_go_is_handed_out_again_first() -> None:
    # (free_id remembers where it stopped, and goes back for a name a replaced message let go)
    state = ThreadState()
    for event in _ONE_USER_MESSAGE_AND_A_CALL:
        state.apply(decode_event(event))
    for _ in range(4):
        state.apply(decode_event({"type": "TOOL_CALL_RESULT", "messageId": "u", "toolCallId": "c", "content": "r"}))
    assert [m.id for m in state.messages][-4:] == ["u.c", "u.c.2", "u.c.3", "u.c.4"]
    state.apply(decode_event({"type": "ACTIVITY_SNAPSHOT", "messageId": "u.c.2", "activityType": "p", "content": {}}))
    let_go = state.log.entry("u.c.2")
    assert let_go is not None
    state.log.unindex(let_go)  # (the name let go, as a replaced message's is)
    state.apply(decode_event({"type": "TOOL_CALL_RESULT", "messageId": "u", "toolCallId": "c", "content": "r"}))
    assert "u.c.2" in [m.id for m in state.messages if m.ROLE == "tool"]


def test_results_named_after_their_parentless_calls_rename_in_bounded_reads() -> None:
    # Each such result renames the call's message `cN.assistant` (TC-09), and each rename rewrote the
    # whole list of the run's new messages, and the set of messages it streamed into (16,000 events: 2 s).
    n = 1000
    state = ThreadState()
    state.apply(decode_event(START_EVENT))
    run = state.log._runs[-1]
    counted = run.added_message_ids = _CountedList([])
    for i in range(n):
        state.apply(decode_event({"type": "TOOL_CALL_START", "toolCallId": f"c{i}", "toolCallName": "f"}))
    for i in range(n):
        state.apply(decode_event({"type": "TOOL_CALL_END", "toolCallId": f"c{i}"}))
        state.apply(decode_event({"type": "TOOL_CALL_RESULT", "messageId": f"c{i}", "toolCallId": f"c{i}",
                                  "content": "r"}))
    assert run.added_message_ids is counted
    assert counted.reads <= 20 * n
    assert list(counted)[:3] == ["c0.assistant", "c1.assistant", "c2.assistant"]
    assert [m.id for m in state.messages][:4] == ["c0.assistant", "c0", "c1.assistant", "c1"]


def _repaired(run_id: str, count: int) -> bytes:
    # ``count`` messages, each with half a UTF-16 pair: one repair warning each (UTF16-SURROGATE).
    body = []
    for i in range(count):
        body += [{"type": "TEXT_MESSAGE_START", "messageId": f"{run_id}-{i}", "role": "assistant"},
                 {"type": "TEXT_MESSAGE_CONTENT", "messageId": f"{run_id}-{i}", "delta": "\ud800"},
                 {"type": "TEXT_MESSAGE_END", "messageId": f"{run_id}-{i}"}]
    return sse({"type": "RUN_STARTED", "threadId": "t", "runId": run_id}, *body,
                {"type": "RUN_FINISHED", "threadId": "t", "runId": run_id})


def test_a_runs_result_reports_its_own_repairs_not_the_threads_earlier_ones() -> None:
    # The thread's repair warnings were never let go: each later run's result reported every earlier
    # run's again (as its own run's), so a thread of k runs held and copied k runs' worth per result.
    state = ThreadState()
    first = replay(_repaired("r1", 3), state=state)
    second = replay(_repaired("r2", 0), state=state)
    third = replay(_repaired("r3", 1), state=state)
    assert [w.code for w in first.warnings] == ["UTF16-SURROGATE"] * 3
    assert second.warnings == ()
    assert [(w.code, w.run_id) for w in third.warnings] == [("UTF16-SURROGATE", "r3")]
    assert len(state.warnings) == 1


def test_a_flood_of_repairs_keeps_a_bounded_number_of_warnings() -> None:
    # A repair per message (a few dozen bytes each) kept a warning each, past the per-code bound every
    # other warning of a response obeys.
    n = WARNINGS_PER_CODE + 500
    result = replay(_repaired("r1", n))
    assert len(result.warnings) == WARNINGS_PER_CODE
    assert len(result.state.warnings) == WARNINGS_PER_CODE
    assert "further ones are not kept" in result.warnings[-1].message
    assert result.state.warnings.dropped == 500  # type: ignore[attr-defined]


class _WritesCounted:
    """orjson, with the most members of one list or object it was asked to write at once recorded."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.loads = real.loads
        self.JSONDecodeError = real.JSONDecodeError
        self.most = 0

    def dumps(self, value: Any) -> bytes:
        stack = [value]
        while stack:
            node = stack.pop()
            if type(node) is list or type(node) is dict:
                self.most = max(self.most, len(node))
                stack.extend(node.values() if type(node) is dict else node)
        return self.real.dumps(value)  # type: ignore[no-any-return]


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> _WritesCounted:
    real = jsonio._orjson
    if real is None:
        pytest.fail("orjson is a dependency")
    counted = _WritesCounted(real)
    monkeypatch.setattr(jsonio, "_orjson", counted)
    return counted


@pytest.mark.parametrize("spacing", [b",", b", "])
def test_a_payload_of_many_small_members_is_written_back_a_slice_at_a_time(writes: _WritesCounted,
                                                                          spacing: bytes) -> None:
    # The proof that orjson read a payload exactly writes it back; orjson reserves ~160 bytes for each
    # member of what it writes, so `[1,1,1,...]` written whole took 83 times its length (16 MiB: 1.4 GB).
    n = 200_000
    payload = b'{"type":"CUSTOM","name":"x","value":[' + spacing.join([b"1"] * n) + b'],"o":{' \
        + spacing.join(b'"k%d":[%d]' % (i, i) for i in range(n // 10)) + b"}}"
    value = jsonio.parse_json(payload)
    assert value["value"] == [1] * n and len(value["o"]) == n // 10 and value["o"]["k7"] == [7]
    assert 0 < writes.most <= 1024


def test_a_dense_payload_is_still_checked_for_what_orjson_cannot_prove() -> None:
    members = b",".join([b"1"] * 100_000)
    with pytest.raises(DecodeError) as refused:
        jsonio.parse_json(b'{"type":"CUSTOM","name":"x","type":"RAW","value":[' + members + b"]}")
    assert "duplicated key 'type'" in str(refused.value)
    big = jsonio.parse_json(b'{"type":"CUSTOM","name":"x","value":[' + members + b",123456789012345678901234]}")
    assert big["value"][-1] == 123456789012345678901234
    deep = b"[" * 400 + b"]" * 400
    assert len(jsonio.parse_json(b'{"type":"CUSTOM","name":"x","value":[' + members + b"," + deep + b"]}")) == 3
    with pytest.raises(LimitExceeded):
        jsonio.parse_json(b'{"type":"CUSTOM","name":"x","value":[' + members + b"," + b"[" * 600 + b"]" * 600 + b"]}")


def test_an_event_of_many_short_data_lines_is_held_joined_as_it_grows() -> None:
    # Each data line was a Python object until the blank line ended the event: an event cut into
    # 7-byte lines held about six times its size in objects (15 times with the reads' own lines).
    n = 200_000
    stream = b'data:{"type":"CUSTOM","name":"x","value":[\n' + b"data:1,\n" * n + b"data:1]}\n"
    decoder = SSEDecoder()
    frames = []
    most = 0
    for at in range(0, len(stream), 65536):
        frames += decoder.feed(stream[at:at + 65536])
        most = max(most, len(decoder._data))
    assert frames == []
    assert most < 20_000  # (before: 200,002, one per line)
    frames += decoder.feed(b"\n")
    assert len(frames) == 1
    assert json.loads(frames[0].data)["value"] == [1] * (n + 1)


def schemas_judged(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one each time a ``responseSchema`` is judged against its draft's metaschema."""
    judged: list[int] = []
    judge = schema_dialects.Dialect.first_flaw

    def counted(self: Any, schema: Any, check: Any) -> Any:
        judged.append(1)
        return judge(self, schema, check)

    monkeypatch.setattr(schema_dialects.Dialect, "first_flaw", counted)
    return judged


def test_answers_to_interrupts_sharing_a_schema_judge_that_schema_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each answer's check judged its interrupt's responseSchema against the draft's metaschema again
    # (~0.8 ms), twice per resume: 8,000 interrupts sharing one schema took 13 s to resume.
    judged = schemas_judged(monkeypatch)
    monkeypatch.setattr(schema_module, "_JUDGED", {}, raising=False)
    shared = {"type": "object", "required": ["ok"],
              "properties": {"ok": {"type": "boolean"}, "why": {"type": "string", "pattern": "(a)\\1"}}}
    interrupts = [Interrupt(id=f"i{k}", reason="r", response_schema=dict(shared)) for k in range(300)]
    builder = ResumeBuilder(interrupts)
    for interrupt in interrupts:
        builder.answer(interrupt.id, {"ok": True, "why": "aa"})
    with collect_warnings() as warned:
        assert len(builder.build()) == 300
    assert len(judged) == 1
    # (the pattern RE2 cannot run is still said, as when the schema was judged each time)
    assert sum(w.code == "IR-30" for w in warned.items) == 300
    other = Interrupt(id="x", reason="r", response_schema={"type": "object", "required": ["ok"], "properties": {}})
    with pytest.raises(InvalidResumePayload):
        ResumeBuilder([other]).answer("x", {}).build()
    assert len(judged) == 2


def held_after(work: Callable[[], object]) -> int:
    """The bytes ``work`` left held once it returned and the cycle collector ran (traced by tracemalloc)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        work()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def read_run(*payloads: bytes) -> RunResult:
    """What a run of ``payloads`` (between its RUN_STARTED and RUN_FINISHED) ends with, read on a new thread."""
    session = RunSession(ThreadState())
    session.feed_payload(b'{"type":"RUN_STARTED","threadId":"t","runId":"r"}')
    for payload in payloads:
        session.feed_payload(payload)
    session.feed_payload(b'{"type":"RUN_FINISHED","threadId":"t","runId":"r"}')
    return session.end()


def test_the_schemas_remembered_as_judged_hold_a_bounded_part_of_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    # A judged schema is remembered by its whole text, for the life of the process, up to 256 schemas:
    # an agent raising interrupts whose schemas each carry a megabyte of text (within MAX_SCHEMA_TEXT)
    # left 256 MB behind once they were answered, four times that for text outside the BMP.
    monkeypatch.setattr(schema_module, "_JUDGED", {})
    monkeypatch.setattr(schema_module, "_judged_memory", 0)
    schemas = [{"type": "object", "properties": {"ok": {"type": "boolean"}}, "description": f"{k}-" + "d" * 900_000}
               for k in range(40)]

    def answer_each() -> None:
        for schema in schemas:
            assert check_answer(schema, {"ok": True}) == []

    assert held_after(answer_each) <= schema_module._JUDGED_MEMORY + 2**20  # (36 MB before)
    # A small schema is still judged once however often it is answered.
    judged = schemas_judged(monkeypatch)
    for _ in range(3):
        assert check_answer({"type": "object", "required": ["ok"]}, {"ok": 1}) == []
    assert len(judged) == 1


def test_events_with_long_unknown_keys_leave_nothing_behind_once_read() -> None:
    # The readers compiled for each class remember every shape (the keys of an object, in order) they
    # were given, up to 64 a class, for the life of the process: an event carrying an unknown key
    # of a megabyte (within max_event_bytes) left that megabyte behind after its run was long gone.
    def read_each() -> None:
        for n in range(32):
            long_key = b"k%02d" % n + b"x" * 256_000
            result = read_run(b'{"type":"STEP_STARTED","stepName":"s","' + long_key + b'":1}',
                              b'{"type":"STEP_FINISHED","stepName":"s","' + long_key + b'":1}')
            assert result.outcome == "success" and [w.code for w in result.warnings].count("UK-03") == 2

    assert held_after(read_each) < 2**20  # (16 MB before)


def test_unknown_event_types_of_any_length_leave_nothing_behind_once_read() -> None:
    # The hint for a misspelt type ("did you mean ...?") was remembered by the type, up to 256 of them,
    # for the life of the process: an unknown type of a megabyte stayed held long after its run.
    def read_each() -> None:
        for n in range(32):
            result = read_run(b'{"type":"RUN_FINISHED_%02d' % n + b"X" * 256_000 + b'"}')
            assert result.outcome == "success" and [w.code for w in result.warnings].count("UK-02") == 1

    assert held_after(read_each) < 2**20  # (8.2 MB before)
    # A short misspelling still gets its hint.
    with collect_warnings() as warned:
        decode_event('{"type":"textMessageContent","messageId":"m","delta":"x"}')
    assert "did you mean TEXT_MESSAGE_CONTENT?" in warned.items[0].message


def test_a_long_message_re_opened_again_and_again_joins_only_what_each_re_opening_added(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Each end of a re-opened message (TX-05) joined and scanned all of its text again: an 8 MB message
    # re-opened 2,000 times (a UTF-16 half now and then) took 47 s.
    joined = []
    join = entries_module._join_text

    def counted(parts: list[str], warn: Any, entity: str) -> str:
        joined.append(sum(map(len, parts)))
        return join(parts, warn, entity)

    monkeypatch.setattr(entries_module, "_join_text", counted)
    size, times = 200_000, 500
    body: list[dict[str, Any]] = [{"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
                                  {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x" * size},
                                  {"type": "TEXT_MESSAGE_END", "messageId": "m"}]
    for k in range(times):
        delta = "y\ud800" if k % 100 == 0 else "\udc00z" if k % 100 == 1 else "y"
        body += [{"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
                 {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": delta},
                 {"type": "TEXT_MESSAGE_END", "messageId": "m"}]
    result = replay(sse({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, *body,
                         {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}))
    assert sum(joined) <= 4 * (size + 2 * times)  # (before: 500 joins of the whole, 100,000,000 characters)
    text = result.state.messages[-1].content
    expected = "x" * size + "".join("y\ufffd" if k % 100 == 0 else "\ufffdz" if k % 100 == 1 else "y"
                                    for k in range(times))
    assert text == expected
    # (a repair is said as before: once, while the message holds a replacement character already)
    assert [w.code for w in result.warnings].count("UTF16-SURROGATE") == 1


def test_a_large_payload_is_judged_dense_from_a_sample_wherever_its_members_are_packed() -> None:
    # The sample (256 random windows) decides for a large text; the whole is counted only when the
    # sample is dense enough. A fifth of the text packed as tightly as JSON allows, anywhere in it, is
    # enough to need slicing, and is found (a miss is about once in 10^8); long strings are not dense.
    from agui_client.wire import writeback

    size = 4 * writeback._SAMPLED_FROM
    sparse = b'{"a":"' + b"x" * size + b'"}'
    assert not writeback.dense(sparse) and not writeback.dense(sparse.decode())
    packed = b"1," * (size // 8)  # (a quarter of the text, in one run)
    for at in (0, size // 3, size - len(packed)):
        text = b'{"a":"' + b"x" * at + b'","b":[' + packed + b'1],"c":"' + b"x" * (size - at - len(packed)) + b'"}'
        assert writeback.dense(text), at
    spread = b"[" + b",".join([b"123456789"] * (size // 10)) + b"]"  # (a comma every 10 bytes, everywhere)
    assert writeback.dense(spread)
    assert not writeback.dense(b"[" + b",".join([b"1234567890123"] * (size // 14)) + b"]")


def test_a_thread_does_not_keep_the_text_of_streamed_messages_a_snapshot_dropped() -> None:
    # (review of the twelfth round) A run's record held the entries it streamed into (they were ids
    # before), and the thread keeps every run's record: each message a closing MESSAGES_SNAPSHOT
    # restated under another id (ag-ui-langgraph's habit) stayed in memory, text and all, for as long
    # as the thread object lived. After the run, its streamed messages are needed by nothing.
    import tracemalloc

    text = "x" * (1 << 20)

    def turn(n: int) -> bytes:
        events = [{"type": "RUN_STARTED", "threadId": "t", "runId": f"r{n}"},
                  {"type": "TEXT_MESSAGE_START", "messageId": f"s{n}", "role": "assistant"},
                  {"type": "TEXT_MESSAGE_CONTENT", "messageId": f"s{n}", "delta": text},
                  {"type": "TEXT_MESSAGE_END", "messageId": f"s{n}"},
                  {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": f"ai{n}", "role": "assistant", "content": "ok"}]},
                  {"type": "RUN_FINISHED", "threadId": "t", "runId": f"r{n}"}]
        return "".join(json.dumps(event) + "\n" for event in events).encode()

    thread = ThreadState()
    tracemalloc.start()
    try:
        for n in range(12):
            replay(turn(n), state=thread, format="jsonl")
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert [m.id for m in thread.messages] == ["ai11"]
    # (12 MiB were streamed, and dropped; one run's text may still be in flight, not twelve)
    assert held < 4 * len(text)


def _restarted_call(size: int, times: int, delta: str) -> list[dict[str, Any]]:
    # One call of ``size`` characters of arguments, then started and ended again ``times`` times in
    # the same run, each time with ``delta`` more (TC-05: the reference appends the new arguments).
    body: list[dict[str, Any]] = [
        {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": '{"a": "' + "x" * size + '"}'},
        {"type": "TOOL_CALL_END", "toolCallId": "c"}]
    for _ in range(times):
        body += [{"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"},
                 {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": delta},
                 {"type": "TOOL_CALL_END", "toolCallId": "c"}]
    return body


@pytest.fixture
def judged_args(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    # The length of every text the fold judged as tool-call arguments (TC-06).
    from agui_client.core.fold import streams as streams_module
    judged: list[int] = []
    is_json = streams_module.is_json

    def counted(text: str) -> bool:
        judged.append(len(text))
        return is_json(text)

    monkeypatch.setattr(streams_module, "is_json", counted)
    return judged


@pytest.mark.parametrize("end", ["RUN_FINISHED", "RUN_ERROR", "cut"])
def test_a_call_restarted_again_and_again_in_its_run_is_judged_once_more_when_the_run_ends(
        judged_args: list[int], end: str) -> None:
    # Each end of a restarted call (TC-05) joined and judged all its arguments again: 1 MB restarted
    # 2,000 times took 8.9 s. Its arguments are now judged once at the first end, and once more, on all
    # of them, when the run ends; the TC-06 warning then names the event that ended the run.
    size, times = 200_000, 400
    closing = ([{"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}] if end == "RUN_FINISHED" else
               [{"type": "RUN_ERROR", "message": "stopped"}] if end == "RUN_ERROR" else [])
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, *_restarted_call(size, times, "y"), *closing]
    if end == "cut":
        with pytest.raises(StreamEnded) as cut:
            replay(sse(*events))
        result = cut.value.result
    else:
        result = replay(sse(*events))
    assert judged_args == [size + 9, size + 9 + times]  # (before: 401 judgements of the whole)
    call = result.state.messages[-1].tool_calls[0]  # type: ignore[union-attr]
    assert call.function.arguments == '{"a": "' + "x" * size + '"}' + "y" * times
    tc06 = [w for w in result.warnings if w.code == "TC-06/AGUI204"]
    assert len(tc06) == 1 and "'c'" in tc06[0].message
    if end != "cut":
        assert (tc06[0].index, tc06[0].event_type) == (len(events) - 1, end)
    assert tc06[0].run_id == "r"


def test_a_restarted_call_whose_arguments_end_as_json_is_not_warned(judged_args: list[int]) -> None:
    # The verdict is on all the arguments: a restart that completes the JSON the first part left open
    # is no fault, whatever the first end thought of the part.
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
              {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"},
              {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": '{"a": '},
              {"type": "TOOL_CALL_END", "toolCallId": "c"},
              {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"},
              {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "1}"},
              {"type": "TOOL_CALL_END", "toolCallId": "c"},
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]
    result = replay(sse(*events))
    assert [w.code for w in result.warnings] == ["TC-06/AGUI204", "TC-05/AGUI205"]
    assert result.warnings[0].index == 3  # (the first end's verdict, on what it had)
    assert len(judged_args) == 2
    call = result.state.messages[-1].tool_calls[0]  # type: ignore[union-attr]
    assert call.function.arguments == '{"a": 1}'


@pytest.mark.parametrize("end", ["RUN_FINISHED", "cut"])
def test_the_repairs_and_verdicts_of_a_later_run_in_a_response_name_that_run(end: str) -> None:
    # What the thread finds below the session (a lone UTF-16 half repaired at a message's end, a restarted
    # call judged at a cut) names no run; the result gave every such warning the response's first run,
    # so a second run's repairs, and the verdict on a call it restarted and was cut after, named r1.
    def half(message_id: str) -> list[dict[str, Any]]:
        return [{"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant"},
                {"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": "a\ud800"},
                {"type": "TEXT_MESSAGE_END", "messageId": message_id}]

    restarted = [{"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"},
                 {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "{"},
                 {"type": "TOOL_CALL_END", "toolCallId": "c"},
                 {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"},
                 {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "x"},
                 {"type": "TOOL_CALL_END", "toolCallId": "c"}]
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"}, *half("m1"),
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"},
              {"type": "RUN_STARTED", "threadId": "t", "runId": "r2"}, *half("m2"), *restarted]
    if end == "cut":
        with pytest.raises(StreamEnded) as cut:
            replay(sse(*events))
        result = cut.value.result
    else:
        result = replay(sse(*events, {"type": "RUN_FINISHED", "threadId": "t", "runId": "r2"}))
    repairs = [(w.run_id, w.message) for w in result.warnings if w.code == "UTF16-SURROGATE"]
    assert [(run_id, "'m1'" in text, "'m2'" in text) for run_id, text in repairs] == [
        ("r1", True, False), ("r2", False, True)]
    verdicts = [w for w in result.warnings if w.code == "TC-06/AGUI204"]
    # (the first end's verdict, then the one on all the arguments when the run ended)
    assert [w.run_id for w in verdicts] == ["r2", "r2"]
    assert verdicts[-1].event_type == (None if end == "cut" else "RUN_FINISHED")
