"""RunSession and replay(): errors located and carrying the state, warnings located, the forms replay reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from wirekit import sse, sse_text

from agui_client import (
    DecodeError,
    ProtocolError,
    ReasoningMessage,
    RunFailed,
    RunSession,
    SequenceError,
    StreamEnded,
    ThreadState,
    UncoveredInterrupts,
    check_resume,
    replay,
)

START = {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"}
TEXT = [
    {"type": "TEXT_MESSAGE_START", "messageId": "m1"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "hel"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "lo"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
]
FINISH = {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"}


def _jsonl(events: list[dict[str, object]]) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in events)


@pytest.mark.parametrize("form", ["jsonl", "sse", "sse-text", "events", "path"])
def test_replay_reads_every_recorded_form_the_same(form: str, tmp_path: Path) -> None:
    events = [START, *TEXT, FINISH]
    source: object = {"jsonl": _jsonl(events), "sse": sse(*events), "sse-text": sse_text(*events),
                      "events": events}.get(form)
    if form == "path":
        source = tmp_path / "capture.sse"
        source.write_bytes(sse(*events))
    result = replay(source)  # type: ignore[arg-type]
    assert result.outcome == "success"
    assert result.text == "hello"
    assert result.events == len(events)


def test_a_protocol_error_names_run_index_type_and_keeps_the_state() -> None:
    bad = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": 5}
    with pytest.raises(DecodeError) as caught:
        replay([START, TEXT[0], TEXT[1], bad, FINISH])
    error = caught.value
    assert (error.run_id, error.index, error.event_type, error.pointer) == ("r1", 3, "TEXT_MESSAGE_CONTENT", "/delta")
    assert error.result is not None
    assert error.result.state.message("m1").content == "hel"  # type: ignore[union-attr]


def test_a_sequence_error_is_located_at_the_offending_event() -> None:
    with pytest.raises(SequenceError) as caught:
        replay([START, {"type": "TEXT_MESSAGE_CONTENT", "messageId": "ghost", "delta": "x"}, FINISH])
    assert (caught.value.index, caught.value.event_type, caught.value.rule) == (1, "TEXT_MESSAGE_CONTENT",
                                                                               "TX-02/AGUI101")


def test_a_stream_that_stops_mid_run_is_stream_ended_with_the_partial_text_flagged() -> None:
    with pytest.raises(StreamEnded) as caught:
        replay([START, TEXT[0], TEXT[1]])
    result = caught.value.result
    assert result is not None and result.outcome is None
    assert result.state.message("m1").content == "hel"  # type: ignore[union-attr]
    assert "m1" in result.state.incomplete_ids


def test_collect_errors_goes_on_past_faults_without_applying_them() -> None:
    session = RunSession(collect_errors=True)
    for event in [START, {"type": "TEXT_MESSAGE_END", "messageId": "ghost"}, *TEXT, FINISH]:
        session.feed_event(event)
    result = session.end()
    assert [e.index for e in session.errors] == [1]
    assert result.outcome == "success" and result.text == "hello"


def test_max_errors_keeps_the_first_errors_and_counts_the_rest() -> None:
    session = RunSession(collect_errors=True, max_errors=3)
    ghosts = [{"type": "TEXT_MESSAGE_END", "messageId": f"ghost-{i}"} for i in range(10)]
    for event in [START, *ghosts, *TEXT, FINISH]:
        session.feed_event(event)
    result = session.end()
    assert [e.index for e in session.errors] == [1, 2, 3]
    assert session.errors_dropped == 7
    assert result.outcome == "success" and result.text == "hello"


def test_warnings_name_the_event_index_and_run() -> None:
    result = replay([START, {"type": "AGUI_PING"}, *TEXT, FINISH])
    [warning] = [w for w in result.warnings if w.code == "UK-02"]
    assert (warning.index, warning.event_type, warning.run_id) == (1, "AGUI_PING", "r1")


def test_legacy_thinking_events_become_reasoning_with_minted_ids() -> None:
    result = replay([START, {"type": "THINKING_START"}, {"type": "THINKING_TEXT_MESSAGE_START"},
                     {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "hmm"}, {"type": "THINKING_TEXT_MESSAGE_END"},
                     {"type": "THINKING_END"}, FINISH])
    [reasoning] = [m for m in result.messages if isinstance(m, ReasoningMessage)]
    assert reasoning.content == "hmm" and reasoning.id
    assert any(w.code == "RS-09" for w in result.warnings)


def test_legacy_thinking_events_carrying_ids_are_read_with_minted_ids_as_the_reference_reads_them() -> None:
    """The old events carried no ids: one carried anyway is not read (golden thinking-legacy-carried-ids), so
    an opener's and its content's that disagree do not fail the stream, nor does a message named after a text
    message; an event continuing nothing open is still refused."""
    result = replay([START, *TEXT, {"type": "THINKING_START", "messageId": "s1"},
                     {"type": "THINKING_TEXT_MESSAGE_START", "messageId": "m1"},
                     {"type": "THINKING_TEXT_MESSAGE_CONTENT", "messageId": "other", "delta": "hmm"},
                     {"type": "THINKING_TEXT_MESSAGE_END", "messageId": "m1"}, {"type": "THINKING_END"}, FINISH])
    [reasoning] = [m for m in result.messages if isinstance(m, ReasoningMessage)]
    assert reasoning.content == "hmm" and reasoning.id not in ("s1", "m1", "other")
    assert [m.id for m in result.messages if not isinstance(m, ReasoningMessage)] == ["m1"]
    with pytest.raises(ProtocolError) as refused:
        replay([START, {"type": "THINKING_START"}, {"type": "THINKING_TEXT_MESSAGE_START"},
                {"type": "THINKING_TEXT_MESSAGE_END"}, {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "late"},
                {"type": "THINKING_END"}, FINISH])
    assert refused.value.rule == "RS-02/AGUI401" and refused.value.index == 4


def test_a_success_outcome_carrying_interrupts_is_rejected_and_its_interrupts_held_open() -> None:
    """B233: never read as success; the error carries the interrupts and they are held as pending."""
    finish = {**FINISH, "outcome": {"type": "success", "interrupts": [{"id": "i1", "reason": "approval"}]}}
    with pytest.raises(DecodeError) as caught:
        replay([START, finish])
    assert [i.id for i in caught.value.interrupts] == ["i1"]  # type: ignore[attr-defined]
    state = caught.value.result.state  # type: ignore[union-attr]
    assert [i.id for i in state.open_interrupts] == ["i1"]
    with pytest.raises(UncoveredInterrupts):
        check_resume(state.open_interrupts, ())


@pytest.mark.parametrize("form", ["jsonl", "sse"])
@pytest.mark.parametrize("field", ["metadata", "responseSchema"])
def test_interrupts_of_a_run_finished_refused_for_a_number_past_a_double_are_held_open(form: str, field: str) -> None:
    # 1e400 makes the payload no JSON either side could write back (TR-09), so the RUN_FINISHED is
    # refused; but the agent did stop to ask, and the text says what: its interrupts are held open (the
    # field holding the number left out), as for a field of the wrong type, so the thread cannot move on.
    line = (b'{"type":"RUN_FINISHED","threadId":"t1","runId":"r1","outcome":{"type":"interrupt","interrupts":['
            b'{"id":"i1","reason":"approval","message":"delete prod?","%s":{"limit":1e400}},'
            b'{"id":"i2","reason":"choice"}]}}' % field.encode())
    head = [START, *TEXT]
    source = (_jsonl(head) + line + b"\n") if form == "jsonl" else (sse(*head) + b"data: " + line + b"\n\n")
    with pytest.raises(DecodeError) as caught:
        replay(source)
    assert (caught.value.rule, caught.value.index, caught.value.event_type) == ("TR-09/AGUI502", 5, "RUN_FINISHED")
    assert caught.value.pointer == f"/outcome/interrupts/0/{field}/limit"
    state = caught.value.result.state  # type: ignore[union-attr]
    assert [(i.id, i.message) for i in state.open_interrupts] == [("i1", "delete prod?"), ("i2", None)]
    assert state.open_interrupts[0].metadata is None and state.open_interrupts[0].response_schema is None
    assert state.interrupted_run_id == "r1" and [m.id for m in state.messages] == ["m1"]
    with pytest.raises(UncoveredInterrupts):
        check_resume(state.open_interrupts, ())
    assert json.loads(json.dumps(state.dump())) == state.dump()  # (what is held can be saved)


def test_interrupts_of_a_run_finished_refused_for_a_repeated_key_are_held_open() -> None:
    line = (b'{"type":"RUN_FINISHED","threadId":"t1","runId":"r1","outcome":{"type":"interrupt","interrupts":['
            b'{"id":"i1","reason":"approval","reason":"choice"}]}}')
    with pytest.raises(DecodeError) as caught:
        replay(_jsonl([START]) + line + b"\n")
    assert (caught.value.pointer, caught.value.event_type) == ("/outcome/interrupts/0/reason", "RUN_FINISHED")
    assert [i.id for i in caught.value.result.state.open_interrupts] == ["i1"]  # type: ignore[union-attr]


ASKED = {"type": "interrupt", "interrupts": [{"id": "i1", "reason": "approval", "message": "delete staging?"},
                                            {"id": "i2", "reason": "approval", "message": "delete prod?"}]}


@pytest.mark.parametrize(("before", "outcome", "rule"), [
    pytest.param([], {"type": "interrupt",
                      "interrupts": [*ASKED["interrupts"], {**ASKED["interrupts"][1], "id": "i1"}]},
                 "IR-06", id="B232-repeated-id"),
    pytest.param([TEXT[0], TEXT[1]], ASKED, None, id="message-left-open"),
])
@pytest.mark.parametrize("form", ["events", "jsonl"])
def test_an_interrupt_outcome_the_sequence_rules_refuse_keeps_its_interrupts_open(
    before: list[dict[str, object]], outcome: dict[str, object], rule: str | None, form: str
) -> None:
    # B232 and its class: refused (the run is not a clean interrupt), but the agent did stop to ask;
    # the next run must not move past what nobody decided.
    events = [START, *before, {**FINISH, "outcome": outcome}]
    with pytest.raises(SequenceError) as caught:
        replay(events if form == "events" else _jsonl(events))
    if rule is not None:
        assert caught.value.rule == rule
    assert caught.value.index == len(events) - 1 and caught.value.event_type == "RUN_FINISHED"
    assert [i.message for i in caught.value.interrupts][:2] == ["delete staging?", "delete prod?"]  # type: ignore[attr-defined]
    state = caught.value.result.state  # type: ignore[union-attr]
    assert [i.id for i in state.open_interrupts] == ["i1", "i2"]  # (a repeated id held once, the first)
    assert state.interrupted_run_id == "r1"
    with pytest.raises(UncoveredInterrupts):
        check_resume(state.open_interrupts, ())


@pytest.mark.parametrize("form", ["events", "jsonl", "sse"])
def test_a_response_opening_with_run_error_is_a_failed_run_of_its_own(form: str) -> None:
    # LC-02 / B281: the producer refusing a resume, on a thread that already ran. It is the new run's
    # failure (raise_for_outcome raises), never a late error of the interrupted run; the interrupts
    # it did not accept stay open.
    thread = ThreadState()
    replay([START, {**FINISH, "outcome": ASKED}], state=thread)
    refusal = [{"type": "RUN_ERROR", "message": "uncovered interrupt", "code": "uncovered_interrupt"}]
    source = refusal if form == "events" else (_jsonl(refusal) if form == "jsonl" else sse(*refusal))

    result = replay(source, state=thread)

    assert result.outcome == "error" and result.error is not None
    assert (result.error.message, result.error.code, result.error.late) == ("uncovered interrupt",
                                                                           "uncovered_interrupt", False)
    with pytest.raises(RunFailed):
        result.raise_for_outcome()
    assert thread.runs[0].late_error is None and thread.runs[0].outcome == "interrupt"
    assert [i.id for i in thread.open_interrupts] == ["i1", "i2"]
    assert len(thread.runs) == 2


@pytest.mark.parametrize("kind", [["X"], {"a": 1}, []], ids=["array", "object", "empty-array"])
@pytest.mark.parametrize("form", ["jsonl", "jsonl-compact", "sse", "events"])
def test_an_unhashable_type_is_a_decode_error_keeping_what_was_folded(kind: object, form: str) -> None:
    # B087's class on the fold that reads no events (replay, Thread.run): its dispatch on "type" must
    # not meet a list or an object as a bare TypeError. (Compact JSON is what a read parses in one
    # batch, the other forms one payload at a time: two dispatch sites.)
    events = [START, *TEXT, {"type": kind}, FINISH]
    compact = b"".join(json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in events)
    source = {"events": events, "jsonl": _jsonl(events), "jsonl-compact": compact, "sse": sse(*events)}[form]
    with pytest.raises(DecodeError) as caught:
        replay(source)
    assert (caught.value.pointer, caught.value.index) == ("/type", 5)
    assert caught.value.result is not None and caught.value.result.text == "hello"


CALL_OPEN = [{"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "drop", "parentMessageId": "a1"},
             {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"table":"us'}]


@pytest.mark.parametrize(("events", "error", "cut"), [
    pytest.param([START, *TEXT[:3], {**TEXT[1], "delta": 5}], DecodeError, {"m1"}, id="B071-bad-delta"),
    pytest.param([START, *TEXT[:3], FINISH], SequenceError, {"m1"}, id="B147-message-open-at-finish"),
    pytest.param([START, *CALL_OPEN, FINISH], SequenceError, {"c1"}, id="B159-call-open-at-finish"),
    pytest.param([START, *TEXT[:3], *CALL_OPEN], StreamEnded, {"m1", "c1"}, id="B073-B075-stream-ends"),
])
@pytest.mark.parametrize("form", ["events", "jsonl"])
def test_whatever_a_failed_run_left_open_is_kept_and_flagged_incomplete(
    events: list[dict[str, object]], error: type[Exception], cut: set[str], form: str
) -> None:
    # The state column's "keep": unterminated messages and calls stay as far as they went, flagged
    # incomplete, whichever fault stopped the run (not only a stream that ended early).
    with pytest.raises(error) as caught:
        replay(events if form == "events" else _jsonl(events))
    state = caught.value.result.state  # type: ignore[attr-defined]
    assert state.incomplete_ids == cut
    assert state.pending_tool_call_ids == ()
    if "m1" in cut:
        assert state.message("m1").content == "hello"


def test_an_sse_capture_opening_with_an_unprefixed_json_line_is_read_as_sse() -> None:
    # B001 in a recording: the format is detected from the whole head, not the first line alone, so
    # the stray line gets the SSE reading's AGUI501 warning instead of being folded as an event.
    capture = b'{"type":"CUSTOM","name":"acme.ping","value":1}\n\n' + sse(START, *TEXT, FINISH)
    result = replay(capture)
    assert result.outcome == "success" and result.text == "hello"
    assert [w.code for w in result.warnings] == ["AGUI501"]
    assert replay(_jsonl([START, *TEXT, FINISH])).text == "hello"  # (JSONL is still JSONL)


@pytest.mark.parametrize("form", ["events", "jsonl"])
def test_each_thing_dropped_is_warned_at_its_event_up_to_a_bound(form: str) -> None:
    # DROP: a structured warning per dropped event or element (B101, B122), each at its own index and
    # naming its event; a stream repeating one forever gets DROP_WARNINGS of them, the last saying so.
    from agui_client.wire.sink import DROP_WARNINGS

    pings = [{"type": "AGUI_PING"}] * (DROP_WARNINGS + 50)
    call = [{"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"},
            {"type": "TOOL_CALL_END", "toolCallId": "c"}]
    results = [{"type": "TOOL_CALL_RESULT", "messageId": f"t{i}", "toolCallId": "c",
                "content": [{"type": "hologram"}, {"type": "text", "text": "a"}]} for i in range(2)]
    events = [START, *pings, *call, *results, FINISH]

    result = replay(events if form == "events" else _jsonl(events))

    unknown = [w for w in result.warnings if w.code == "UK-02"]
    assert [w.index for w in unknown] == list(range(1, DROP_WARNINGS + 1))
    assert all(w.event_type == "AGUI_PING" for w in unknown) and "further ones" in unknown[-1].message
    parts = [(w.index, w.event_type) for w in result.warnings if w.code == "UK-04"]
    first = len(pings) + 3
    assert parts == [(first, "TOOL_CALL_RESULT"), (first + 1, "TOOL_CALL_RESULT")]


def test_framing_warnings_say_where_the_frame_was() -> None:
    # The conventions' addressing for framing faults: the index the frame would have had, the run, and
    # the line and byte offset (they said only the line, inside the message).
    capture = (sse(START, *TEXT[:2]) + b'{"type":"CUSTOM","name":"acme.ping","value":1}\n\n'
               + sse(*TEXT[2:]) + b'Data: {"x":1}\n\n' + sse(FINISH))
    result = replay(capture)
    found = [(w.code, w.index, w.run_id) for w in result.warnings]
    assert found == [("AGUI501", 3, "r1"), ("AGUI501", 5, "r1")]
    first = result.warnings[0].message
    offset = capture.index(b'{"type":"CUSTOM"')
    assert f"line 7, byte {offset})" in first


def test_dropped_deltas_and_repeated_ids_name_the_field_they_concern() -> None:
    # The conventions: a warning names the field (pointer) as an error does.
    events = [START, {"type": "ACTIVITY_DELTA", "messageId": "none", "activityType": "plan", "patch": []},
              {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "u", "role": "user", "content": "a"},
                                                         {"id": "u", "role": "user", "content": "b"}]},
              FINISH]
    result = replay(events)
    assert [(w.code, w.index, w.pointer) for w in result.warnings] == [
        ("AC-04", 1, "/messageId"), ("MS-01", 2, "/messages/1/id")]


def test_a_warning_inside_an_outcome_names_the_event_not_the_outcome() -> None:
    finish = {**FINISH, "outcome": {"type": "interrupt", "later": 1,
                                    "interrupts": [{"id": "i", "reason": "x", "sooner": 1}]}}
    result = replay([START, finish])
    assert [(w.code, w.event_type, w.index) for w in result.warnings] == [("UK-03", "RUN_FINISHED", 1)] * 2


def test_a_malformed_utf8_warning_names_the_frame_it_is_in() -> None:
    capture = sse(START) + b'data: {"type":"CUSTOM","name":"x\xff","value":1}\n\n' + sse(FINISH)
    result = replay(capture)
    assert [(w.code, w.index) for w in result.warnings] == [("UTF8", 1)]


def test_a_multi_run_recording_reports_the_last_run_and_every_run_id() -> None:
    second = [{**START, "runId": "r2"}, {**FINISH, "runId": "r2", "outcome": {"type": "cancelled"}}]
    result = replay([START, *TEXT, FINISH, *second])
    assert result.run_ids == ("r1", "r2")
    assert (result.run_id, result.outcome) == ("r2", "cancelled")


def test_the_request_ids_are_compared_with_run_started() -> None:
    from agui_client import RunAgentInput

    session = RunSession(ThreadState(), run_input=RunAgentInput(thread_id="t1", run_id="other"))
    for event in [START, FINISH]:
        session.feed_event(event)
    assert any(w.code == "LC-08" and w.pointer == "/runId" for w in session.end().warnings)


def test_a_run_started_on_another_thread_than_requested_is_warned_about() -> None:
    from agui_client import RunAgentInput

    session = RunSession(ThreadState(), run_input=RunAgentInput(thread_id="t-requested", run_id="r1"))
    for event in [START, FINISH]:
        session.feed_event(event)

    warned = [(w.code, w.pointer) for w in session.end().warnings]
    assert warned == [("LC-08", "/threadId")]


def test_a_recorded_run_on_another_thread_than_the_one_folded_into_is_warned_about() -> None:
    # Without the request, the thread's own id (from its first run, or the thread replayed into) is the
    # one compared: a second thread's run in a recording is folded into the first all the same.
    other = [{**START, "threadId": "t2", "runId": "r2"}, {**FINISH, "threadId": "t2", "runId": "r2"}]
    result = replay([START, *TEXT, FINISH, *other])
    assert [(w.code, w.run_id, w.index, w.pointer) for w in result.warnings] == [("LC-08", "r2", 6, "/threadId")]
    assert "'t2'" in result.warnings[0].message and "'t1'" in result.warnings[0].message

    into = replay([START, *TEXT, FINISH], state=ThreadState(thread_id="t9"))
    assert [(w.code, w.run_id, w.index) for w in into.warnings] == [("LC-08", "r1", 0)]
    assert [w.code for w in replay([START, *TEXT, FINISH, START, FINISH]).warnings] == []


def test_replay_reads_a_file_named_by_a_string(tmp_path: Path) -> None:
    capture = tmp_path / "capture.jsonl"
    capture.write_bytes(_jsonl([START, *TEXT, FINISH]))
    assert replay(str(capture)).text == "hello"


@pytest.mark.parametrize("block", [1, 2, 3, 7, 64, 4096])
def test_jsonl_lines_longer_than_a_read_block_are_read_whole(block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A line spanning many blocks (a large snapshot) is kept in pieces until its end arrives."""
    from agui_client.core import replaying

    long_text = "x" * 300
    events = [START, {**TEXT[0]}, {**TEXT[1], "delta": long_text}, *TEXT[2:], FINISH]
    data = b"\n" + _jsonl(events).replace(b"\n", b"\n \n\n", 2) + b"  \n"
    monkeypatch.setattr(replaying, "_REPLAY_BLOCK", block)
    result = replay(data, format="jsonl")
    assert result.text == long_text + "lo"
    assert result.events == len(events)
    unterminated = replay(_jsonl(events).rstrip(b"\n"), format="jsonl")
    assert unterminated.text == long_text + "lo"


@pytest.mark.parametrize("block", [5, 64, 200])
def test_a_jsonl_line_longer_than_the_event_limit_is_refused_wherever_the_blocks_cut(
    block: int, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """(The limit bounds what is buffered while waiting for a line's end, as before.)"""
    from agui_client import LimitExceeded
    from agui_client.core import replaying

    monkeypatch.setattr(replaying, "_REPLAY_BLOCK", block)
    events = [START, TEXT[0], {**TEXT[1], "delta": "y" * 500}, *TEXT[2:], FINISH]
    with pytest.raises(LimitExceeded) as caught:
        replay(_jsonl(events), format="jsonl", max_event_bytes=300)
    assert caught.value.index == 2
    assert replay(_jsonl(events), format="jsonl", max_event_bytes=600).text == "y" * 500 + "lo"


def test_an_error_about_a_chunk_names_the_chunk_and_what_it_was_folded_as() -> None:
    # A TEXT_MESSAGE_CHUNK after the run finished is folded as a TEXT_MESSAGE_START and its content: the
    # errors named those, events the stream does not hold, as if the agent had sent them.
    session = RunSession(collect_errors=True)
    for event in (START, FINISH, {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m9", "delta": "late"}):
        session.feed_payload(json.dumps(event))
    session.end()

    at_the_chunk = [error for error in session.errors if error.index == 2]
    assert [(type(e), e.event_type, e.rule) for e in at_the_chunk] == [
        (SequenceError, "TEXT_MESSAGE_CHUNK", "CL-01/AGUI004")] * 2
    assert [str(e) for e in at_the_chunk] == [
        f"run 'r1', event #2, TEXT_MESSAGE_CHUNK, [CL-01/AGUI004]: the run already finished; only one late "
        f"RUN_ERROR or a new RUN_STARTED may follow (folded as {folded})"
        for folded in ("TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT")]

    with pytest.raises(SequenceError) as caught:  # (raised, not collected: named alike)
        replay([START, FINISH, {"type": "TOOL_CALL_CHUNK", "toolCallId": "c1", "toolCallName": "f", "delta": "{}"}])
    assert caught.value.event_type == "TOOL_CALL_CHUNK" and caught.value.index == 2
    assert caught.value.detail.endswith("(folded as TOOL_CALL_START)")


def test_a_warning_about_a_chunk_names_the_chunk_and_what_it_was_folded_as() -> None:
    # (a message id used again in the run, by a chunk opening a second message)
    result = replay([START, *TEXT, {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m1", "delta": "again"}, FINISH])

    [warning] = [w for w in result.warnings if w.index == 5]
    assert (warning.code, warning.event_type) == ("TX-05/AGUI104", "TEXT_MESSAGE_CHUNK")
    assert warning.message == "message id 'm1' is already used in this run (folded as TEXT_MESSAGE_START)"
