"""ChunkExpander: *_CHUNK shorthand into explicit start/content/end events (TX-12..14, TC-21, RS-07)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from agui_client.core.chunks import ChunkExpander
from agui_client.core.verify import RunVerifier
from agui_client.errors import SequenceError
from agui_client.types.events import (
    ActivitySnapshotEvent,
    CustomEvent,
    Event,
    MessagesSnapshotEvent,
    RawEvent,
    ReasoningMessageChunkEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    StateSnapshotEvent,
    StepStartedEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextMessageChunkEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallChunkEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    UnknownEvent,
)

RUN_STARTED = RunStartedEvent(thread_id="t1", run_id="r1")
RUN_FINISHED = RunFinishedEvent(thread_id="t1", run_id="r1")


def expand(events: Sequence[Event | UnknownEvent], expander: ChunkExpander | None = None) -> list[Event | UnknownEvent]:
    """Feed ``events`` (indexed from 0) and return everything the expander produced, ``close()`` included."""
    expander = expander if expander is not None else ChunkExpander()
    out: list[Event | UnknownEvent] = []
    for index, event in enumerate(events):
        out.extend(expander.feed(event, index))
    out.extend(expander.close())
    return out


def expansion_error(events: Sequence[Event | UnknownEvent]) -> SequenceError:
    with pytest.raises(SequenceError) as caught:
        expand(events)
    return caught.value


# -- text ------------------------------------------------------------------------------------------


def test_first_text_chunk_opens_an_assistant_message_and_adds_its_delta() -> None:
    out = expand([RUN_STARTED, TextMessageChunkEvent(message_id="m1", delta="Hel"), RUN_FINISHED])

    assert out == [
        RUN_STARTED,
        TextMessageStartEvent(message_id="m1", role="assistant"),
        TextMessageContentEvent(message_id="m1", delta="Hel"),
        TextMessageEndEvent(message_id="m1"),
        RUN_FINISHED,
    ]


def test_explicit_chunk_role_and_name_go_on_the_start() -> None:
    out = expand([TextMessageChunkEvent(message_id="m1", role="user", name="alice", delta="hi")])

    assert out[0] == TextMessageStartEvent(message_id="m1", role="user", name="alice")


def test_continuation_chunk_without_id_continues_the_open_message() -> None:
    out = expand([
        RUN_STARTED,
        TextMessageChunkEvent(message_id="m1", delta="a"),
        TextMessageChunkEvent(delta="b"),
        TextMessageChunkEvent(message_id="m1", role="assistant", delta="c"),
        RUN_FINISHED,
    ])

    assert out[1:6] == [
        TextMessageStartEvent(message_id="m1", role="assistant"),
        TextMessageContentEvent(message_id="m1", delta="a"),
        TextMessageContentEvent(message_id="m1", delta="b"),
        TextMessageContentEvent(message_id="m1", delta="c"),
        TextMessageEndEvent(message_id="m1"),
    ]


def test_chunk_with_another_id_ends_the_open_message_first() -> None:
    out = expand([TextMessageChunkEvent(message_id="m1", delta="a"), TextMessageChunkEvent(message_id="m2", delta="b")])

    assert out == [
        TextMessageStartEvent(message_id="m1", role="assistant"),
        TextMessageContentEvent(message_id="m1", delta="a"),
        TextMessageEndEvent(message_id="m1"),
        TextMessageStartEvent(message_id="m2", role="assistant"),
        TextMessageContentEvent(message_id="m2", delta="b"),
        TextMessageEndEvent(message_id="m2"),
    ]


@pytest.mark.parametrize("delta", [None, ""])
def test_chunk_without_delta_produces_no_content_event(delta: str | None) -> None:
    out = expand([TextMessageChunkEvent(message_id="m1", delta=delta), TextMessageChunkEvent(delta=delta)])

    assert out == [TextMessageStartEvent(message_id="m1", role="assistant"), TextMessageEndEvent(message_id="m1")]


def test_first_text_chunk_without_message_id_is_refused() -> None:
    error = expansion_error([RUN_STARTED, TextMessageChunkEvent(delta="orphan")])

    assert (error.rule, error.index, error.event_type, error.pointer, error.run_id) == (
        "TX-12", 1, "TEXT_MESSAGE_CHUNK", "/messageId", "r1")


@pytest.mark.parametrize(("repeat", "pointer"), [
    (TextMessageChunkEvent(message_id="m1", role="user", delta="b"), "/role"),
    (TextMessageChunkEvent(role="user", delta="b"), "/role"),
    (TextMessageChunkEvent(name="bob", delta="b"), "/name"),
])
def test_continuation_repeating_a_field_that_disagrees_with_the_opener_is_refused(
        repeat: TextMessageChunkEvent, pointer: str) -> None:
    error = expansion_error([RUN_STARTED, TextMessageChunkEvent(message_id="m1", delta="a"), repeat])

    assert (error.rule, error.index, error.event_type, error.pointer) == ("TX-13", 2, "TEXT_MESSAGE_CHUNK", pointer)


def test_continuation_repeating_the_default_role_agrees_with_the_opener() -> None:
    out = expand([TextMessageChunkEvent(message_id="m1", delta="a"),
                  TextMessageChunkEvent(role="assistant", delta="b")])

    assert out[2] == TextMessageContentEvent(message_id="m1", delta="b")


# -- when lanes close -------------------------------------------------------------------------------


@pytest.mark.parametrize("closer", [
    StepStartedEvent(step_name="s"),
    StateSnapshotEvent(snapshot={}),
    CustomEvent(name="x.y", value=1),
    ToolCallStartEvent(tool_call_id="c1", tool_call_name="f"),
    TextMessageStartEvent(message_id="m2"),
    ToolCallResultEvent(message_id="t1", tool_call_id="c0", content="ok"),
    MessagesSnapshotEvent(messages=()),
    RunErrorEvent(message="boom"),
    RUN_FINISHED,
])
def test_a_non_chunk_event_of_the_lane_ends_the_chunked_message_before_it(closer: Event) -> None:
    out = expand([TextMessageChunkEvent(message_id="m1", delta="a"), closer])

    assert out[2:] == [TextMessageEndEvent(message_id="m1"), closer]


@pytest.mark.parametrize("bystander", [
    RawEvent(event={"k": 1}),
    ActivitySnapshotEvent(message_id="x1", activity_type="plan", content={}),
    SubagentStartedEvent(subagent_run_id="s1", name="helper"),
    UnknownEvent(type="AGUI_PING"),
    StepStartedEvent(step_name="s", subagent_run_id="s9"),
])
def test_events_outside_the_lane_leave_the_chunked_message_open(bystander: Event | UnknownEvent) -> None:
    out = expand([TextMessageChunkEvent(message_id="m1", delta="a"), bystander, TextMessageChunkEvent(delta="b")])

    assert out[2:4] == [bystander, TextMessageContentEvent(message_id="m1", delta="b")]


def test_synthesized_end_takes_the_time_of_the_event_that_closed_the_lane() -> None:
    out = expand([TextMessageChunkEvent(message_id="m1", delta="a", timestamp=10), StepStartedEvent(step_name="s",
                                                                                                   timestamp=42)])

    assert out[2] == TextMessageEndEvent(message_id="m1", timestamp=42)


def test_close_ends_lanes_left_open_outside_a_run() -> None:
    expander = ChunkExpander()
    expander.feed(TextMessageChunkEvent(message_id="m1", delta="a"), 0)

    assert expander.close() == [TextMessageEndEvent(message_id="m1")]
    assert expander.close() == []


def test_close_mid_run_leaves_the_chunked_message_unterminated_for_the_verifier() -> None:
    # A stream cut off mid-run must not make truncated text look complete (LC-04, B075).
    expander, verifier = ChunkExpander(), RunVerifier()
    events: list[Event] = [RUN_STARTED, TextMessageChunkEvent(message_id="m1", delta="trunc")]
    for index, event in enumerate(events):
        for out in expander.feed(event, index):
            verifier.check(out, index)

    assert expander.close() == []
    assert set(verifier.open_message_ids) == {"m1"}


# -- tool calls -------------------------------------------------------------------------------------


def test_tool_call_chunks_expand_into_start_args_and_end() -> None:
    out = expand([
        ToolCallChunkEvent(tool_call_id="c1", tool_call_name="search", parent_message_id="a1", delta='{"q":'),
        ToolCallChunkEvent(delta='"x"}'),
        ToolCallChunkEvent(delta=""),
    ])

    assert out == [
        ToolCallStartEvent(tool_call_id="c1", tool_call_name="search", parent_message_id="a1"),
        ToolCallArgsEvent(tool_call_id="c1", delta='{"q":'),
        ToolCallArgsEvent(tool_call_id="c1", delta='"x"}'),
        ToolCallEndEvent(tool_call_id="c1"),
    ]


@pytest.mark.parametrize(("chunk", "pointer"), [
    (ToolCallChunkEvent(tool_call_id="c1", delta="{}"), "/toolCallName"),
    (ToolCallChunkEvent(tool_call_name="f", delta="{}"), "/toolCallId"),
])
def test_first_tool_call_chunk_needs_id_and_name(chunk: ToolCallChunkEvent, pointer: str) -> None:
    error = expansion_error([RUN_STARTED, chunk])

    assert (error.rule, error.index, error.event_type, error.pointer) == ("TC-21", 1, "TOOL_CALL_CHUNK", pointer)


@pytest.mark.parametrize(("repeat", "pointer"), [
    (ToolCallChunkEvent(tool_call_name="g", delta="}"), "/toolCallName"),
    (ToolCallChunkEvent(tool_call_id="c1", parent_message_id="a2", delta="}"), "/parentMessageId"),
])
def test_tool_call_continuation_disagreeing_with_its_opener_is_refused(repeat: ToolCallChunkEvent,
                                                                       pointer: str) -> None:
    error = expansion_error([
        ToolCallChunkEvent(tool_call_id="c1", tool_call_name="f", parent_message_id="a1", delta="{"), repeat])

    assert (error.rule, error.index, error.pointer) == ("TC-21", 1, pointer)


def test_id_less_tool_call_chunk_with_several_open_lanes_is_ambiguous() -> None:
    error = expansion_error([
        RUN_STARTED,
        ToolCallChunkEvent(tool_call_id="c1", tool_call_name="f", delta="{", subagent_run_id="s1"),
        ToolCallChunkEvent(tool_call_id="c2", tool_call_name="g", delta="{", subagent_run_id="s2"),
        ToolCallChunkEvent(delta="}"),
    ])

    assert (error.rule, error.index, error.event_type, error.run_id) == ("TC-21", 3, "TOOL_CALL_CHUNK", "r1")


def test_id_less_chunk_prefers_the_parent_lane_then_the_only_lane_of_its_kind() -> None:
    out = expand([
        ToolCallChunkEvent(tool_call_id="c1", tool_call_name="f", delta="{"),
        ToolCallChunkEvent(tool_call_id="c2", tool_call_name="g", delta="[", subagent_run_id="s1"),
        ToolCallChunkEvent(delta="}"),
        ToolCallChunkEvent(delta="]", subagent_run_id="s1"),
        SubagentFinishedEvent(subagent_run_id="s1"),
        StepStartedEvent(step_name="s"),
        ToolCallChunkEvent(tool_call_id="c3", tool_call_name="h", delta="(", subagent_run_id="s2"),
        ToolCallChunkEvent(delta=")"),
    ])

    assert out == [
        ToolCallStartEvent(tool_call_id="c1", tool_call_name="f"),
        ToolCallArgsEvent(tool_call_id="c1", delta="{"),
        ToolCallStartEvent(tool_call_id="c2", tool_call_name="g", subagent_run_id="s1"),
        ToolCallArgsEvent(tool_call_id="c2", delta="[", subagent_run_id="s1"),
        ToolCallArgsEvent(tool_call_id="c1", delta="}"),
        ToolCallArgsEvent(tool_call_id="c2", delta="]", subagent_run_id="s1"),
        ToolCallEndEvent(tool_call_id="c2", subagent_run_id="s1"),
        SubagentFinishedEvent(subagent_run_id="s1"),
        ToolCallEndEvent(tool_call_id="c1"),
        StepStartedEvent(step_name="s"),
        ToolCallStartEvent(tool_call_id="c3", tool_call_name="h", subagent_run_id="s2"),
        ToolCallArgsEvent(tool_call_id="c3", delta="(", subagent_run_id="s2"),
        ToolCallArgsEvent(tool_call_id="c3", delta=")", subagent_run_id="s2"),
        ToolCallEndEvent(tool_call_id="c3", subagent_run_id="s2"),
    ]


def test_subagent_with_empty_id_has_its_own_lane_apart_from_the_parent() -> None:
    # UK-15: "" is a legal subagentRunId and must not collide with the parent (absent tag).
    out = expand([
        TextMessageChunkEvent(message_id="m1", delta="p"),
        TextMessageChunkEvent(message_id="m2", delta="s", subagent_run_id=""),
        TextMessageChunkEvent(delta="P"),
        TextMessageChunkEvent(delta="S", subagent_run_id=""),
    ])

    contents = [(e.message_id, e.delta) for e in out if isinstance(e, TextMessageContentEvent)]
    assert contents == [("m1", "p"), ("m2", "s"), ("m1", "P"), ("m2", "S")]


def test_chunk_tag_disagreeing_with_the_lane_holding_its_id_is_refused() -> None:
    error = expansion_error([
        RUN_STARTED,
        TextMessageChunkEvent(message_id="m1", delta="a", subagent_run_id="s1"),
        TextMessageChunkEvent(message_id="m1", subagent_run_id="s2"),
    ])

    assert (error.rule, error.index, error.pointer) == ("SA-11/AGUI606", 2, "/subagentRunId")


# -- reasoning --------------------------------------------------------------------------------------


def test_reasoning_chunks_expand_into_a_reasoning_message() -> None:
    out = expand([ReasoningMessageChunkEvent(message_id="r1", delta="think"), ReasoningMessageChunkEvent(delta="ing")])

    assert out == [
        ReasoningMessageStartEvent(message_id="r1"),
        ReasoningMessageContentEvent(message_id="r1", delta="think"),
        ReasoningMessageContentEvent(message_id="r1", delta="ing"),
        ReasoningMessageEndEvent(message_id="r1"),
    ]


def test_first_reasoning_chunk_without_message_id_is_refused() -> None:
    error = expansion_error([RUN_STARTED, ReasoningMessageChunkEvent(delta="x")])

    assert (error.rule, error.index, error.event_type, error.pointer) == (
        "RS-07", 1, "REASONING_MESSAGE_CHUNK", "/messageId")


# -- mixing chunk and explicit forms (TX-14) --------------------------------------------------------


def test_chunk_naming_an_explicitly_opened_message_is_content_for_it() -> None:
    out = expand([
        TextMessageStartEvent(message_id="m1"),
        TextMessageChunkEvent(message_id="m1", delta="x"),
        TextMessageEndEvent(message_id="m1"),
    ])

    assert out == [
        TextMessageStartEvent(message_id="m1"),
        TextMessageContentEvent(message_id="m1", delta="x"),
        TextMessageEndEvent(message_id="m1"),
    ]


def test_explicit_tool_start_then_chunk_adds_arguments() -> None:
    out = expand([
        ToolCallStartEvent(tool_call_id="c1", tool_call_name="f"),
        ToolCallChunkEvent(tool_call_id="c1", delta="{}"),
        ToolCallEndEvent(tool_call_id="c1"),
    ])

    assert out[1] == ToolCallArgsEvent(tool_call_id="c1", delta="{}")
    assert len(out) == 3


def test_explicit_content_and_end_for_a_chunk_opened_message_continue_and_close_it() -> None:
    out = expand([
        TextMessageChunkEvent(message_id="m1", delta="a"),
        TextMessageContentEvent(message_id="m1", delta="b"),
        TextMessageEndEvent(message_id="m1"),
        TextMessageChunkEvent(message_id="m2", delta="c"),
    ])

    assert out == [
        TextMessageStartEvent(message_id="m1", role="assistant"),
        TextMessageContentEvent(message_id="m1", delta="a"),
        TextMessageContentEvent(message_id="m1", delta="b"),
        TextMessageEndEvent(message_id="m1"),
        TextMessageStartEvent(message_id="m2", role="assistant"),
        TextMessageContentEvent(message_id="m2", delta="c"),
        TextMessageEndEvent(message_id="m2"),
    ]


def test_mixed_forms_pass_the_verifier() -> None:
    verifier = RunVerifier()
    events: list[Event] = [
        RUN_STARTED,
        TextMessageStartEvent(message_id="m1"),
        TextMessageChunkEvent(message_id="m1", delta="x"),
        TextMessageEndEvent(message_id="m1"),
        ToolCallChunkEvent(tool_call_id="c1", tool_call_name="f", delta="{"),
        ToolCallArgsEvent(tool_call_id="c1", delta="}"),
        ToolCallEndEvent(tool_call_id="c1"),
        RUN_FINISHED,
    ]
    expander = ChunkExpander()
    warnings = [w for i, e in enumerate(events) for out in expander.feed(e, i) for w in verifier.check(out, i)]
    verifier.end(len(events))

    assert warnings == []
    assert verifier.phase == "finished"


# -- what the produced events carry -----------------------------------------------------------------


def test_opener_metadata_goes_on_the_start_and_continuation_metadata_on_its_content() -> None:
    out = expand([
        TextMessageChunkEvent(message_id="m1", delta="hi", metadata={"k": 1}, timestamp=5, raw_event={"p": 1}),
        TextMessageChunkEvent(delta=" there", metadata={"k": 2, "j": 3}, timestamp=6),
    ])

    assert out[:3] == [
        TextMessageStartEvent(message_id="m1", role="assistant", metadata={"k": 1}, timestamp=5),
        TextMessageContentEvent(message_id="m1", delta="hi", timestamp=5, raw_event={"p": 1}),
        TextMessageContentEvent(message_id="m1", delta=" there", metadata={"k": 2, "j": 3}, timestamp=6),
    ]


def test_metadata_of_a_delta_less_continuation_waits_for_the_next_content_in_stream_order() -> None:
    out = expand([
        TextMessageChunkEvent(message_id="m1", delta="a"),
        TextMessageChunkEvent(metadata={"k": 1, "keep": True}),
        TextMessageChunkEvent(delta="b", metadata={"k": 2}),
        TextMessageChunkEvent(metadata={"usage": 7}),
    ])

    assert out[2:] == [
        TextMessageContentEvent(message_id="m1", delta="b", metadata={"k": 2, "keep": True}),
        TextMessageEndEvent(message_id="m1", metadata={"usage": 7}),
    ]


def test_delta_less_opener_keeps_its_raw_event_on_the_start() -> None:
    out = expand([ToolCallChunkEvent(tool_call_id="c1", tool_call_name="f", raw_event={"p": 1})])

    assert out[0] == ToolCallStartEvent(tool_call_id="c1", tool_call_name="f", raw_event={"p": 1})


def test_subagent_attribution_is_carried_from_the_opener_to_content_and_end() -> None:
    out = expand([
        TextMessageChunkEvent(message_id="m1", delta="a", subagent_run_id="s1"),
        TextMessageChunkEvent(message_id="m1", delta="b"),
        SubagentFinishedEvent(subagent_run_id="s1"),
    ])

    assert out == [
        TextMessageStartEvent(message_id="m1", role="assistant", subagent_run_id="s1"),
        TextMessageContentEvent(message_id="m1", delta="a", subagent_run_id="s1"),
        TextMessageContentEvent(message_id="m1", delta="b", subagent_run_id="s1"),
        TextMessageEndEvent(message_id="m1", subagent_run_id="s1"),
        SubagentFinishedEvent(subagent_run_id="s1"),
    ]


def test_events_other_than_chunks_pass_through_unchanged_and_in_order() -> None:
    events: list[Event | UnknownEvent] = [
        RUN_STARTED,
        TextMessageStartEvent(message_id="m1", metadata={"a": 1}),
        TextMessageContentEvent(message_id="m1", delta="x"),
        UnknownEvent(type="AGUI_PING", raw={"type": "AGUI_PING"}),
        TextMessageEndEvent(message_id="m1"),
        RUN_FINISHED,
    ]

    out = expand(events)

    assert len(out) == len(events)
    assert all(a is b for a, b in zip(out, events, strict=True))


def test_long_chunked_stream_expands_and_leaves_no_lane_behind() -> None:
    expander = ChunkExpander()
    verifier = RunVerifier()
    index = 0
    for run in range(500):
        events: list[Event] = [RunStartedEvent(thread_id="t1", run_id=f"r{run}")]
        for n in range(20):
            events.append(TextMessageChunkEvent(message_id=f"m{run}.{n}", delta="a"))
            events.extend(TextMessageChunkEvent(delta="b") for _ in range(3))
            events.append(ToolCallChunkEvent(tool_call_id=f"c{run}.{n}", tool_call_name="f", delta="{}"))
        events.append(RunFinishedEvent(thread_id="t1", run_id=f"r{run}"))
        for event in events:
            for out in expander.feed(event, index):
                assert verifier.check(out, index) == []
            index += 1

    assert index > 50_000
    assert expander.close() == []
    verifier.end(index)
    assert not verifier.open_message_ids and not verifier.open_tool_call_ids
