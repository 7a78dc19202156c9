"""RunVerifier: the sequence rules of a run stream (rules.md §1-3, 6-8, 13; bad-inputs.md F-L)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from importlib.resources import files
from typing import TYPE_CHECKING, Literal

import pytest
from attrs import frozen

from agui_client.core.chunks import ChunkExpander
from agui_client.core.verify import TRANSITIONS, RunVerifier, Violation
from agui_client.errors import DecodeError, LimitExceeded, SequenceError, StreamEnded, StreamWarning
from agui_client.types.events import (
    ActivityDeltaEvent,
    ActivitySnapshotEvent,
    CustomEvent,
    Event,
    MessagesSnapshotEvent,
    ReasoningEncryptedValueEvent,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    StateDeltaEvent,
    StepFinishedEvent,
    StepStartedEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextMessageChunkEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    UnknownEvent,
)
from agui_client.types.messages import AssistantMessage, FunctionCall, ToolCall, UserMessage
from agui_client.types.run import (
    Interrupt,
    RunAgentInput,
    RunFinishedCancelledOutcome,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    SubagentFinishedSuspendedOutcome,
)
from agui_client.wire.codec import decode_event
from agui_client.wire.sink import collect_warnings

if TYPE_CHECKING:
    from importlib.abc import Traversable

R1 = RunStartedEvent(thread_id="t1", run_id="r1")
R1_DONE = RunFinishedEvent(thread_id="t1", run_id="r1")
R2 = RunStartedEvent(thread_id="t1", run_id="r2")
R2_DONE = RunFinishedEvent(thread_id="t1", run_id="r2")
FAILED = RunErrorEvent(message="boom")


def verify(events: Sequence[Event | UnknownEvent], verifier: RunVerifier | None = None) -> list[StreamWarning]:
    """Check ``events`` (indexed from 0), then end the stream; return every warning."""
    verifier = verifier if verifier is not None else RunVerifier()
    warnings = [w for index, event in enumerate(events) for w in verifier.check(event, index)]
    verifier.end(len(events))
    return warnings


def interrupted(*interrupts: Interrupt, run_id: str = "r1") -> RunFinishedEvent:
    return RunFinishedEvent(thread_id="t1", run_id=run_id, outcome=RunFinishedInterruptOutcome(interrupts=interrupts))


def succeeded(*pending: str) -> RunFinishedEvent:
    return RunFinishedEvent(thread_id="t1", run_id="r1",
                            outcome=RunFinishedSuccessOutcome(pending_tool_call_ids=pending))


def message(mid: str, sub: str | None = None) -> list[Event]:
    return [TextMessageStartEvent(message_id=mid, subagent_run_id=sub),
            TextMessageContentEvent(message_id=mid, delta="x"), TextMessageEndEvent(message_id=mid)]


def tool_call(cid: str, parent: str | None = None) -> list[Event]:
    return [ToolCallStartEvent(tool_call_id=cid, tool_call_name="f", parent_message_id=parent),
            ToolCallArgsEvent(tool_call_id=cid, delta="{}"), ToolCallEndEvent(tool_call_id=cid)]


# -- legal sequences --------------------------------------------------------------------------------

LEGAL: list[tuple[str, list[Event | UnknownEvent]]] = [
    ("minimal run", [R1, R1_DONE]),
    ("text message", [R1, *message("m1"), R1_DONE]),
    ("TX-06 interleaved messages", [
        R1, TextMessageStartEvent(message_id="a"), TextMessageStartEvent(message_id="b"),
        TextMessageContentEvent(message_id="a", delta="1"), TextMessageEndEvent(message_id="b"),
        TextMessageEndEvent(message_id="a"), R1_DONE]),
    ("TX-07 empty delta", [R1, TextMessageStartEvent(message_id="m1"),
                           TextMessageContentEvent(message_id="m1", delta=""), TextMessageEndEvent(message_id="m1"),
                           R1_DONE]),
    ("tool call in its message, answered", [
        R1, *message("a1"), *tool_call("c1", parent="a1"),
        ToolCallResultEvent(message_id="t1", tool_call_id="c1", content="ok"), R1_DONE]),
    ("TC-08 unknown parent message", [R1, *tool_call("c1", parent="ghost"), R1_DONE]),
    ("B210 reasoning span and message share an id", [
        R1, ReasoningStartEvent(message_id="r"), ReasoningMessageStartEvent(message_id="r"),
        ReasoningMessageContentEvent(message_id="r", delta="hm"), ReasoningMessageEndEvent(message_id="r"),
        ReasoningEndEvent(message_id="r"), R1_DONE]),
    ("RS-08 encrypted value after its entity closed, same owner", [
        R1, *tool_call("c1"), ReasoningEncryptedValueEvent(subtype="tool-call", entity_id="c1", encrypted_value="e"),
        ReasoningEncryptedValueEvent(subtype="message", entity_id="ghost", encrypted_value="e"), R1_DONE]),
    ("B141 a step of one name open in parent and subagent at once", [
        R1, StepStartedEvent(step_name="tools"), StepStartedEvent(step_name="tools", subagent_run_id="s1"),
        StepFinishedEvent(step_name="tools", subagent_run_id="s1"), StepFinishedEvent(step_name="tools"), R1_DONE]),
    ("UK-15 subagent '' has its own steps", [
        R1, StepStartedEvent(step_name="x"), StepStartedEvent(step_name="x", subagent_run_id=""),
        StepFinishedEvent(step_name="x"), StepFinishedEvent(step_name="x", subagent_run_id=""), R1_DONE]),
    ("UK-16 a message and a tool call share an id", [R1, *message("x"), *tool_call("x", parent="x"), R1_DONE]),
    ("SA subagent lifecycle with nesting and attribution", [
        R1, SubagentStartedEvent(subagent_run_id="s1", name="a"),
        SubagentStartedEvent(subagent_run_id="s2", name="b", parent_subagent_run_id="s1"),
        *message("m1", sub="s2"), SubagentFinishedEvent(subagent_run_id="s1"),
        SubagentStartedEvent(subagent_run_id="s3", name="c", parent_subagent_run_id="s1"),
        SubagentFinishedEvent(subagent_run_id="s3"), SubagentFinishedEvent(subagent_run_id="s2"), R1_DONE]),
    ("UK-15 subagent ''", [R1, SubagentStartedEvent(subagent_run_id="", name="a"),
                           SubagentFinishedEvent(subagent_run_id=""), R1_DONE]),
    ("B227 SUBAGENT_ERROR does not end the run", [
        R1, SubagentStartedEvent(subagent_run_id="s1", name="a"),
        SubagentErrorEvent(subagent_run_id="s1", message="bad"), *message("m1"), R1_DONE]),
    ("SA-12 attribution-only tags", [
        R1, *message("m1", sub="ghost"), StepStartedEvent(step_name="p", subagent_run_id="ghost"),
        StepFinishedEvent(step_name="p", subagent_run_id="ghost"), CustomEvent(name="a.b", value=1,
                                                                               subagent_run_id="ghost"), R1_DONE]),
    ("SA-11 absent tag never disagrees", [
        R1, TextMessageStartEvent(message_id="m1", subagent_run_id="s1"),
        TextMessageContentEvent(message_id="m1", delta="x"), TextMessageEndEvent(message_id="m1"),
        ToolCallStartEvent(tool_call_id="c1", tool_call_name="f", parent_message_id="m1"),
        ToolCallEndEvent(tool_call_id="c1", subagent_run_id="s1"), R1_DONE]),
    ("SP-14 attributed state events", [R1, StateDeltaEvent(delta=(), subagent_run_id="s1"), R1_DONE]),
    ("AC-08 replacing snapshot re-owns the activity", [
        R1, ActivitySnapshotEvent(message_id="x1", activity_type="p", content={}, subagent_run_id="s1"),
        ActivitySnapshotEvent(message_id="x1", activity_type="p", content={}, subagent_run_id="s2"),
        ActivityDeltaEvent(message_id="x1", activity_type="p", patch=(), subagent_run_id="s2"), R1_DONE]),
    ("LC-02 B129 stream opens with RUN_ERROR", [RunErrorEvent(message="invalid resume")]),
    ("LC-02 a rejected run, then a fresh one", [FAILED, R1, R1_DONE]),
    ("LC-06 B137 two runs in one stream", [R1, *message("m1"), interrupted(Interrupt(id="i1", reason="ok")),
                                           R2, *message("m2"), R2_DONE]),
    ("LC-06 a run after RUN_ERROR", [R1, FAILED, R2, R2_DONE]),
    ("LC-06 per-run owners reset", [
        R1, *message("m1", sub="s1"), R1_DONE, R2, TextMessageStartEvent(message_id="z", subagent_run_id="s2"),
        TextMessageEndEvent(message_id="z"), R2_DONE]),
    ("CL-02 B241 one late RUN_ERROR after an interrupt", [
        R1, interrupted(Interrupt(id="i1", reason="approval")), RunErrorEvent(message="late")]),
    ("CL-02 a late RUN_ERROR, then a new run", [R1, R1_DONE, FAILED, R2, R2_DONE]),
    ("ST-05 open entities at RUN_ERROR are debris", [
        R1, TextMessageStartEvent(message_id="m1"), ToolCallStartEvent(tool_call_id="c1", tool_call_name="f"),
        StepStartedEvent(step_name="s"), SubagentStartedEvent(subagent_run_id="s1", name="a"),
        ReasoningStartEvent(message_id="r1"), FAILED]),
    ("B217 a later run restarts a subagent that finished suspended", [
        R1, SubagentStartedEvent(subagent_run_id="s1", name="a"),
        SubagentFinishedEvent(subagent_run_id="s1", outcome=SubagentFinishedSuspendedOutcome(interrupt_ids=("i1",))),
        interrupted(Interrupt(id="i1", reason="ok", subagent_run_id="s1")),
        R2, SubagentStartedEvent(subagent_run_id="s1", name="a"), SubagentFinishedEvent(subagent_run_id="s1"),
        R2_DONE]),
    ("TC-10 result answers a call of an earlier run in the stream", [
        R1, *tool_call("c1"), interrupted(Interrupt(id="i1", reason="approval", tool_call_id="c1")),
        R2, ToolCallResultEvent(message_id="t1", tool_call_id="c1", content="yes"), R2_DONE]),
    ("TC-22 B167 a START replayed for a call from history", [
        RunStartedEvent(thread_id="t1", run_id="r1", input=RunAgentInput(thread_id="t1", run_id="r1", messages=(
            AssistantMessage(id="a0", tool_calls=(ToolCall(id="c0", function=FunctionCall(name="f")),)),))),
        *tool_call("c0"), R1_DONE]),
    ("IR interrupt naming a started subagent and a tool call of the run", [
        R1, *tool_call("c1"), SubagentStartedEvent(subagent_run_id="s1", name="a"),
        SubagentFinishedEvent(subagent_run_id="s1", outcome=SubagentFinishedSuspendedOutcome(interrupt_ids=("i1",))),
        interrupted(Interrupt(id="i1", reason="ok", subagent_run_id="s1", tool_call_id="c1"),
                    Interrupt(id="i2", reason="ok"))]),
    ("TC-16 pendingToolCallIds naming unanswered calls", [R1, *tool_call("c1"), *tool_call("c2"),
                                                          succeeded("c1", "c2")]),
    ("cancelled outcome", [R1, RunFinishedEvent(thread_id="t1", run_id="r1", outcome=RunFinishedCancelledOutcome())]),
    ("UK-02 unknown events pass anywhere", [UnknownEvent(type="X"), R1, UnknownEvent(type="X"), R1_DONE,
                                            UnknownEvent(type="X")]),
]


@pytest.mark.parametrize("events", [pytest.param(events, id=name) for name, events in LEGAL])
def test_legal_sequence_is_accepted_without_warnings(events: list[Event | UnknownEvent]) -> None:
    assert verify(events) == []


# -- illegal sequences ------------------------------------------------------------------------------


@frozen
class Refused:
    """A stream the verifier must refuse: where and under which rule."""

    events: list[Event | UnknownEvent]
    rule: str
    index: int
    event_type: str | None
    pointer: str | None = None
    error: type[SequenceError] = SequenceError


ILLEGAL: list[tuple[str, Refused]] = [
    ("LC-01 B002 first event not RUN_STARTED", Refused([*message("m1")], "LC-01/AGUI001", 0, "TEXT_MESSAGE_START")),
    ("LC-01 RUN_FINISHED first", Refused([R1_DONE], "LC-01/AGUI001", 0, "RUN_FINISHED")),
    ("LC-05 B130 second RUN_STARTED while open", Refused([R1, R2], "LC-05/AGUI002", 1, "RUN_STARTED")),
    ("CL-01 B131 event after RUN_FINISHED", Refused([R1, R1_DONE, *message("m1")], "CL-01/AGUI004", 2,
                                                    "TEXT_MESSAGE_START")),
    ("CL-01 second RUN_FINISHED", Refused([R1, R1_DONE, R1_DONE], "CL-01/AGUI004", 2, "RUN_FINISHED")),
    ("CL-03 B133 second late RUN_ERROR", Refused([R1, R1_DONE, FAILED, FAILED], "CL-03/AGUI004", 3, "RUN_ERROR")),
    ("CL-03 B134 event after the late RUN_ERROR", Refused([R1, R1_DONE, FAILED, *message("m1")], "CL-03/AGUI004", 3,
                                                          "TEXT_MESSAGE_START")),
    ("CL-05 B135 RUN_FINISHED after RUN_ERROR", Refused([R1, FAILED, R1_DONE], "CL-05/AGUI005", 2, "RUN_FINISHED")),
    ("CL-05 RUN_FINISHED after the late RUN_ERROR", Refused([R1, R1_DONE, FAILED, R1_DONE], "CL-05/AGUI005", 3,
                                                            "RUN_FINISHED")),
    ("LC-14 event after RUN_ERROR", Refused([R1, FAILED, *message("m1")], "LC-14/AGUI004", 2, "TEXT_MESSAGE_START")),
    ("LC-14 event after a first RUN_ERROR", Refused([FAILED, *message("m1")], "LC-14/AGUI004", 1,
                                                    "TEXT_MESSAGE_START")),
    ("LC-14 second RUN_ERROR", Refused([R1, FAILED, FAILED], "LC-14/AGUI004", 2, "RUN_ERROR")),
    ("LC-04 B073 stream ends mid-run", Refused([R1, TextMessageStartEvent(message_id="m1")], "LC-04/AGUI003", 2, None,
                                               error=StreamEnded)),
    ("LC-04 B050 empty stream", Refused([], "LC-04/AGUI003", 0, None, error=StreamEnded)),
    ("LC-04 only unknown events", Refused([UnknownEvent(type="X")], "LC-04/AGUI003", 1, None, error=StreamEnded)),
    ("ST-01 B138 STEP_FINISHED without start", Refused([R1, StepFinishedEvent(step_name="plan"), R1_DONE],
                                                       "ST-01/AGUI006", 1, "STEP_FINISHED", "/stepName")),
    ("ST-02 B139 step open at RUN_FINISHED", Refused([R1, StepStartedEvent(step_name="plan"), R1_DONE],
                                                     "ST-02/AGUI007", 2, "RUN_FINISHED")),
    ("ST-03 duplicate open step name", Refused([R1, StepStartedEvent(step_name="p"), StepStartedEvent(step_name="p")],
                                               "ST-03", 2, "STEP_STARTED", "/stepName")),
    ("ST-04 a subagent closes the parent's step", Refused(
        [R1, StepStartedEvent(step_name="p"), StepFinishedEvent(step_name="p", subagent_run_id="s1")],
        "ST-04/AGUI006", 2, "STEP_FINISHED", "/subagentRunId")),
    ("ST-04 UK-15 subagent '' closes the parent's step", Refused(
        [R1, StepStartedEvent(step_name="p"), StepFinishedEvent(step_name="p", subagent_run_id="")],
        "ST-04/AGUI006", 2, "STEP_FINISHED", "/subagentRunId")),
    ("TX-02 B145 content without start", Refused(
        [R1, TextMessageContentEvent(message_id="ghost", delta="x")], "TX-02/AGUI101", 1, "TEXT_MESSAGE_CONTENT",
        "/messageId")),
    ("TX-02 B146 end without start", Refused([R1, TextMessageEndEvent(message_id="ghost")], "TX-02/AGUI102", 1,
                                             "TEXT_MESSAGE_END", "/messageId")),
    ("TX-02 content after end", Refused([R1, *message("m1"), TextMessageContentEvent(message_id="m1", delta="x")],
                                        "TX-02/AGUI101", 4, "TEXT_MESSAGE_CONTENT")),
    ("TX-03 B151 start for an open id", Refused(
        [R1, TextMessageStartEvent(message_id="m1"), TextMessageStartEvent(message_id="m1")], "TX-03/AGUI106", 2,
        "TEXT_MESSAGE_START", "/messageId")),
    ("TX-04 B147 message open at RUN_FINISHED", Refused([R1, TextMessageStartEvent(message_id="m1"), R1_DONE],
                                                        "TX-04/AGUI103", 2, "RUN_FINISHED")),
    ("TC-02 B157 args without start", Refused([R1, ToolCallArgsEvent(tool_call_id="ghost", delta="{}")],
                                              "TC-02/AGUI201", 1, "TOOL_CALL_ARGS", "/toolCallId")),
    ("TC-02 B158 end without start", Refused([R1, ToolCallEndEvent(tool_call_id="ghost")], "TC-02/AGUI202", 1,
                                             "TOOL_CALL_END", "/toolCallId")),
    ("TC-03 start for an open id", Refused(
        [R1, ToolCallStartEvent(tool_call_id="c1", tool_call_name="f"),
         ToolCallStartEvent(tool_call_id="c1", tool_call_name="f")], "TC-03", 2, "TOOL_CALL_START", "/toolCallId")),
    ("TC-04 B159 tool call open at RUN_FINISHED", Refused(
        [R1, ToolCallStartEvent(tool_call_id="c1", tool_call_name="f"), R1_DONE], "TC-04/AGUI203", 2,
        "RUN_FINISHED")),
    ("TC-14 tool call tag disagrees with its parent message's owner", Refused(
        [R1, *message("a1"), ToolCallStartEvent(tool_call_id="c1", tool_call_name="f", parent_message_id="a1",
                                                subagent_run_id="s1")], "TC-14", 4, "TOOL_CALL_START",
        "/subagentRunId")),
    ("TC-14 untagged reopen under a parent message of another owner", Refused(
        [R1, *message("a1", sub="s1"), *tool_call("c1"),
         ToolCallStartEvent(tool_call_id="c1", tool_call_name="f", parent_message_id="a1")], "TC-14", 7,
        "TOOL_CALL_START", "/parentMessageId")),
    ("RS-02 B207 reasoning content without start", Refused(
        [R1, ReasoningMessageContentEvent(message_id="ghost", delta="x")], "RS-02/AGUI401", 1,
        "REASONING_MESSAGE_CONTENT", "/messageId")),
    ("RS-02 reasoning message end without start", Refused(
        [R1, ReasoningMessageEndEvent(message_id="ghost")], "RS-02/AGUI401", 1, "REASONING_MESSAGE_END")),
    ("RS-03 B209 REASONING_END without start", Refused([R1, ReasoningEndEvent(message_id="ghost")], "RS-03", 1,
                                                       "REASONING_END", "/messageId")),
    ("RS-04 span opened twice", Refused([R1, ReasoningStartEvent(message_id="r"), ReasoningStartEvent(message_id="r")],
                                        "RS-04", 2, "REASONING_START", "/messageId")),
    ("RS-04 reasoning message opened twice", Refused(
        [R1, ReasoningMessageStartEvent(message_id="r"), ReasoningMessageStartEvent(message_id="r")], "RS-04", 2,
        "REASONING_MESSAGE_START")),
    ("RS-05 span open at RUN_FINISHED", Refused([R1, ReasoningStartEvent(message_id="r"), R1_DONE], "RS-05/AGUI402", 2,
                                                "RUN_FINISHED")),
    ("RS-05 reasoning message open at RUN_FINISHED", Refused(
        [R1, ReasoningMessageStartEvent(message_id="r"), R1_DONE], "RS-05/AGUI402", 2, "RUN_FINISHED")),
    ("SA-02 B214 started twice while active", Refused(
        [R1, SubagentStartedEvent(subagent_run_id="s1", name="a"),
         SubagentStartedEvent(subagent_run_id="s1", name="a")],
        "SA-02/AGUI601", 2, "SUBAGENT_STARTED", "/subagentRunId")),
    ("SA-02 B215 restarted after finishing in the same run", Refused(
        [R1, SubagentStartedEvent(subagent_run_id="s1", name="a"), SubagentFinishedEvent(subagent_run_id="s1"),
         SubagentStartedEvent(subagent_run_id="s1", name="a")], "SA-02/AGUI601", 3, "SUBAGENT_STARTED")),
    ("SA-02 restarted after a suspended finish in the same run", Refused(
        [R1, SubagentStartedEvent(subagent_run_id="s1", name="a"),
         SubagentFinishedEvent(subagent_run_id="s1", outcome=SubagentFinishedSuspendedOutcome()),
         SubagentStartedEvent(subagent_run_id="s1", name="a")], "SA-02/AGUI601", 3, "SUBAGENT_STARTED")),
    ("SA-03 B218 finished without start", Refused([R1, SubagentFinishedEvent(subagent_run_id="ghost")],
                                                  "SA-03/AGUI602", 1, "SUBAGENT_FINISHED", "/subagentRunId")),
    ("SA-03 B219 error without start", Refused([R1, SubagentErrorEvent(subagent_run_id="ghost", message="x")],
                                               "SA-03/AGUI603", 1, "SUBAGENT_ERROR", "/subagentRunId")),
    ("SA-04 subagent open at RUN_FINISHED", Refused([R1, SubagentStartedEvent(subagent_run_id="s1", name="a"), R1_DONE],
                                                    "SA-04/AGUI604", 2, "RUN_FINISHED")),
    ("SA-05 B221 unknown parentSubagentRunId", Refused(
        [R1, SubagentStartedEvent(subagent_run_id="s1", name="a", parent_subagent_run_id="ghost")], "SA-05/AGUI605", 1,
        "SUBAGENT_STARTED", "/parentSubagentRunId")),
    ("SA-05 a parent from an earlier run", Refused(
        [R1, SubagentStartedEvent(subagent_run_id="s0", name="a"), SubagentFinishedEvent(subagent_run_id="s0"),
         R1_DONE, R2, SubagentStartedEvent(subagent_run_id="s1", name="a", parent_subagent_run_id="s0")],
        "SA-05/AGUI605", 5, "SUBAGENT_STARTED")),
    ("SA-11 B222 end tagged with another subagent", Refused(
        [R1, TextMessageStartEvent(message_id="m1", subagent_run_id="s1"),
         TextMessageEndEvent(message_id="m1", subagent_run_id="s2")], "SA-11/AGUI606", 2, "TEXT_MESSAGE_END",
        "/subagentRunId")),
    ("SA-11 a subagent tags the parent's message", Refused(
        [R1, TextMessageStartEvent(message_id="m1"), TextMessageContentEvent(message_id="m1", delta="x",
                                                                             subagent_run_id="s1")],
        "SA-11/AGUI606", 2, "TEXT_MESSAGE_CONTENT")),
    ("SA-11 UK-15 subagent '' tags the parent's message", Refused(
        [R1, TextMessageStartEvent(message_id="m1"), TextMessageEndEvent(message_id="m1", subagent_run_id="")],
        "SA-11/AGUI606", 2, "TEXT_MESSAGE_END")),
    ("SA-11 reopen after END by another owner", Refused(
        [R1, *message("m1", sub="s1"), TextMessageStartEvent(message_id="m1", subagent_run_id="s2")],
        "SA-11/AGUI606", 4, "TEXT_MESSAGE_START")),
    ("SA-11 tool call args", Refused(
        [R1, ToolCallStartEvent(tool_call_id="c1", tool_call_name="f", subagent_run_id="s1"),
         ToolCallArgsEvent(tool_call_id="c1", delta="{}", subagent_run_id="s2")], "SA-11/AGUI606", 2,
        "TOOL_CALL_ARGS")),
    ("SA-11 reasoning message under another owner than its span", Refused(
        [R1, ReasoningStartEvent(message_id="r", subagent_run_id="s1"),
         ReasoningMessageStartEvent(message_id="r", subagent_run_id="s2")], "SA-11/AGUI606", 2,
        "REASONING_MESSAGE_START")),
    ("SA-11 encrypted value for another owner's tool call", Refused(
        [R1, *tool_call("c1"), ReasoningEncryptedValueEvent(subtype="tool-call", entity_id="c1", encrypted_value="e",
                                                            subagent_run_id="s1")], "SA-11/AGUI606", 4,
        "REASONING_ENCRYPTED_VALUE")),
    ("SA-11 owner seeded from MESSAGES_SNAPSHOT", Refused(
        [R1, MessagesSnapshotEvent(messages=(AssistantMessage(id="a0", content="x", subagent_run_id="s1"),)),
         TextMessageStartEvent(message_id="a0", subagent_run_id="s2")], "SA-11/AGUI606", 2, "TEXT_MESSAGE_START")),
    ("AC-08 activity delta under another owner", Refused(
        [R1, ActivitySnapshotEvent(message_id="x1", activity_type="p", content={}, subagent_run_id="s1"),
         ActivityDeltaEvent(message_id="x1", activity_type="p", patch=(), subagent_run_id="s2")], "AC-08/AGUI606", 2,
        "ACTIVITY_DELTA", "/subagentRunId")),
    ("AC-08 replace:false does not re-own", Refused(
        [R1, ActivitySnapshotEvent(message_id="x1", activity_type="p", content={}),
         ActivitySnapshotEvent(message_id="x1", activity_type="p", content={}, replace=False, subagent_run_id="s1"),
         ActivityDeltaEvent(message_id="x1", activity_type="p", patch=(), subagent_run_id="s1")], "AC-08/AGUI606", 3,
        "ACTIVITY_DELTA")),
    ("IR-06 duplicate interrupt ids", Refused(
        [R1, interrupted(Interrupt(id="i1", reason="a"), Interrupt(id="i2", reason="b"),
                         Interrupt(id="i1", reason="c"))],
        "IR-06", 1, "RUN_FINISHED", "/outcome/interrupts/2/id")),
]


@pytest.mark.parametrize("case", [pytest.param(case, id=name) for name, case in ILLEGAL])
def test_illegal_sequence_is_refused_where_and_why(case: Refused) -> None:
    with pytest.raises(SequenceError) as caught:
        verify(case.events)

    error = caught.value
    assert type(error) is case.error
    assert (error.rule, error.index, error.event_type) == (case.rule, case.index, case.event_type)
    if case.pointer is not None:
        assert error.pointer == case.pointer


# -- tolerated contradictions -----------------------------------------------------------------------


@frozen
class Warned:
    """A stream accepted with warnings: their codes, indexes and pointers, in order."""

    events: list[Event | UnknownEvent]
    warnings: list[tuple[str, int, str | None]]
    known_tool_call_ids: Callable[[str], bool] | None = None
    known_message_ids: Callable[[str], bool] | None = None


WARNED: list[tuple[str, Warned]] = [
    ("LC-07 B142 runId differs", Warned([R1, RunFinishedEvent(thread_id="t1", run_id="r999")],
                                        [("LC-07/AGUI008", 1, "/runId")])),
    ("LC-07 threadId differs", Warned([R1, RunFinishedEvent(thread_id="t9", run_id="r1")],
                                      [("LC-07/AGUI008", 1, "/threadId")])),
    ("TX-05 id re-used after END in the same run", Warned(
        [R1, *message("m1"), *message("m1"), R1_DONE], [("TX-05/AGUI104", 4, "/messageId")])),
    ("TX-05 B149 id of an earlier run re-used", Warned(
        [R1, *message("m1"), R1_DONE, R2, *message("m1"), R2_DONE], [("TX-05/AGUI104", 6, "/messageId")])),
    ("TX-05 B149 id from the thread's history", Warned(
        [R1, *message("u1"), R1_DONE], [("TX-05/AGUI104", 1, "/messageId")],
        known_message_ids={"u1"}.__contains__)),
    ("TX-05 id from the input echo", Warned(
        [RunStartedEvent(thread_id="t1", run_id="r1", input=RunAgentInput(thread_id="t1", run_id="r1", messages=(
            UserMessage(id="u1", content="hi"),))), *message("u1"), R1_DONE], [("TX-05/AGUI104", 1, "/messageId")])),
    ("TC-05 B161 tool call id re-used after END", Warned(
        [R1, *tool_call("c1"), *tool_call("c1"), R1_DONE], [("TC-05/AGUI205", 4, "/toolCallId")])),
    ("TC-12 B162 result before END", Warned(
        [R1, ToolCallStartEvent(tool_call_id="c1", tool_call_name="f"),
         ToolCallResultEvent(message_id="t1", tool_call_id="c1", content="early"), ToolCallEndEvent(tool_call_id="c1"),
         R1_DONE], [("TC-12/AGUI206", 2, "/toolCallId")])),
    ("TC-11 B163 result for an unknown call", Warned(
        [R1, ToolCallResultEvent(message_id="t1", tool_call_id="ghost", content="?"), R1_DONE],
        [("TC-11/AGUI207", 1, "/toolCallId")])),
    ("TC-10 result for a call the thread knows", Warned(
        [R1, ToolCallResultEvent(message_id="t1", tool_call_id="c0", content="ok"), R1_DONE], [],
        known_tool_call_ids={"c0"}.__contains__)),
    ("SA-15 B225 suspended subagent, yet success", Warned(
        [R1, SubagentStartedEvent(subagent_run_id="s1", name="a"),
         SubagentFinishedEvent(subagent_run_id="s1", outcome=SubagentFinishedSuspendedOutcome()), R1_DONE],
        [("SA-15", 3, "/outcome")])),
    ("SA-15 suspended on an interrupt the outcome lacks", Warned(
        [R1, SubagentStartedEvent(subagent_run_id="s1", name="a"),
         SubagentFinishedEvent(subagent_run_id="s1", outcome=SubagentFinishedSuspendedOutcome(interrupt_ids=("i9",))),
         interrupted(Interrupt(id="i1", reason="ok"))], [("SA-15", 3, "/outcome/interrupts")])),
    ("SA-09 B226 interrupt names a subagent never started", Warned(
        [R1, interrupted(Interrupt(id="i1", reason="ok", subagent_run_id="ghost"))],
        [("SA-09", 1, "/outcome/interrupts/0/subagentRunId")])),
    ("IR-07 B239 interrupt names an unknown tool call", Warned(
        [R1, *tool_call("c1"), interrupted(Interrupt(id="i1", reason="ok", tool_call_id="c1"),
                                           Interrupt(id="i2", reason="ok", tool_call_id="ghost"))],
        [("IR-07", 4, "/outcome/interrupts/1/toolCallId")])),
    ("IR-07 a tool call the thread knows is not unknown", Warned(
        [R1, interrupted(Interrupt(id="i1", reason="ok", tool_call_id="c0"))], [],
        known_tool_call_ids={"c0"}.__contains__)),
    ("TC-18 B169 B170 pendingToolCallIds contradictions", Warned(
        [R1, *tool_call("c1"), *tool_call("c2"), ToolCallResultEvent(message_id="t2", tool_call_id="c2", content="ok"),
         succeeded("c1", "c2", "c1", "ghost")],
        [("TC-18", 8, "/outcome/pendingToolCallIds/1"), ("TC-18", 8, "/outcome/pendingToolCallIds/2"),
         ("TC-18", 8, "/outcome/pendingToolCallIds/3")])),
]


@pytest.mark.parametrize("case", [pytest.param(case, id=name) for name, case in WARNED])
def test_tolerated_contradiction_is_accepted_with_a_warning(case: Warned) -> None:
    verifier = RunVerifier(known_tool_call_ids=case.known_tool_call_ids, known_message_ids=case.known_message_ids)

    warnings = verify(case.events, verifier)

    assert [(w.code, w.index, w.pointer) for w in warnings] == case.warnings
    assert all(w.run_id is not None and w.event_type is not None for w in warnings)


def test_a_reused_message_id_says_whether_this_run_or_the_thread_used_it_before() -> None:
    # (one code, TX-05/AGUI104, for both; the message tells the producer's bug from a replayed history)
    same_run = verify([R1, *message("m1"), *message("m1"), R1_DONE])
    earlier_run = verify([R1, *message("m1"), R1_DONE, R2, *message("m1"), R2_DONE])

    assert [w.message for w in same_run] == ["message id 'm1' is already used in this run"]
    assert [w.message for w in earlier_run] == ["message id 'm1' already names a message of the thread"]


def test_a_refusal_lists_ten_open_ids_and_counts_the_rest() -> None:
    # A stream may leave a hundred thousand messages open: the message names ten, and counts the rest.
    opened = [TextMessageStartEvent(message_id=f"m{n}") for n in range(12)]

    with pytest.raises(SequenceError) as caught:
        verify([R1, *opened, R1_DONE])

    assert caught.value.rule == "TX-04/AGUI103"
    assert str(caught.value).count("'m") == 10
    assert "'m8', 'm9' and 2 more" in str(caught.value)


# -- state and views --------------------------------------------------------------------------------


def test_phase_follows_the_lifecycle_table() -> None:
    verifier = RunVerifier()
    seen = [(verifier.phase, verifier.terminated, verifier.run_id)]
    events: list[Event] = [R1, R1_DONE, FAILED, R2, FAILED]
    for index, event in enumerate(events):
        verifier.check(event, index)
        seen.append((verifier.phase, verifier.terminated, verifier.run_id))

    assert seen == [("idle", False, None), ("running", False, "r1"), ("finished", True, "r1"),
                    ("late-error", True, "r1"), ("running", False, "r2"), ("errored", True, "r2")]


def test_transition_table_covers_every_phase_and_only_running_admits_other_events() -> None:
    assert set(TRANSITIONS) == {"idle", "running", "finished", "errored", "late-error"}
    assert [phase for phase, row in TRANSITIONS.items() if not isinstance(row.other, Violation)] == ["running"]


def test_open_views_track_what_is_open_and_stream_end_lists_it() -> None:
    verifier = RunVerifier()
    events: list[Event] = [
        R1, TextMessageStartEvent(message_id="m1"), ToolCallStartEvent(tool_call_id="c1", tool_call_name="f"),
        ReasoningMessageStartEvent(message_id="r1"), StepStartedEvent(step_name="p", subagent_run_id="s1"),
        SubagentStartedEvent(subagent_run_id="s1", name="a"), *message("m2"),
    ]
    for index, event in enumerate(events):
        verifier.check(event, index)

    assert (set(verifier.open_message_ids), set(verifier.open_tool_call_ids),
            set(verifier.open_reasoning_message_ids), set(verifier.active_subagent_ids)) == (
        {"m1"}, {"c1"}, {"r1"}, {"s1"})
    with pytest.raises(StreamEnded) as caught:
        verifier.end(len(events))
    assert caught.value.open_entities == ("message 'm1'", "tool call 'c1'", "reasoning message 'r1'",
                                          "step 'p' of subagent 's1'", "subagent 's1'")
    assert (caught.value.run_id, caught.value.index) == ("r1", len(events))


def test_refused_event_leaves_the_state_as_it_was() -> None:
    verifier = RunVerifier()
    verifier.check(R1, 0)
    with pytest.raises(SequenceError):
        verifier.check(interrupted(Interrupt(id="i1", reason="a"), Interrupt(id="i1", reason="b")), 1)

    assert verifier.phase == "running"
    assert verifier.check(interrupted(Interrupt(id="i1", reason="a")), 2) == []


def test_unexpanded_chunk_is_a_caller_error() -> None:
    verifier = RunVerifier()
    verifier.check(R1, 0)

    with pytest.raises(TypeError):
        verifier.check(TextMessageChunkEvent(message_id="m1", delta="x"), 1)


def test_long_multi_run_stream_is_checked_and_each_run_scope_is_dropped() -> None:
    verifier = RunVerifier()
    index = 0
    for run in range(2_000):
        r = f"r{run}"
        events: list[Event] = [RunStartedEvent(thread_id="t1", run_id=r), StepStartedEvent(step_name="s"),
                               *message(f"{r}.m"), *tool_call(f"{r}.c", parent=f"{r}.m"),
                               ToolCallResultEvent(message_id=f"{r}.t", tool_call_id=f"{r}.c", content="ok"),
                               StepFinishedEvent(step_name="s"), RunFinishedEvent(thread_id="t1", run_id=r)]
        for event in events:
            assert verifier.check(event, index) == []
            index += 1
    body: list[Event] = [TextMessageContentEvent(message_id="long", delta="x")] * 30_000
    for event in [RunStartedEvent(thread_id="t1", run_id="last"), TextMessageStartEvent(message_id="long"), *body,
                  TextMessageEndEvent(message_id="long"), RunFinishedEvent(thread_id="t1", run_id="last")]:
        assert verifier.check(event, index) == []
        index += 1
    verifier.end(index)

    assert index > 50_000
    assert (verifier.phase, verifier.run_id, verifier.open_entities) == ("finished", "last", ())


# -- the ag-ui-validate 0.4.0 corpus ----------------------------------------------------------------

Outcome = Literal["accept", "warn", "reject"]
Judge = Literal["stream", "fold", "transport"]


@frozen
class Verdict:
    """What a 1.0 consumer does with one validator fixture (bad-inputs.md "Validator fixtures").

    ``judge`` says which stage decides: ``stream`` is decode + chunk expansion + verification (this
    file); ``fold`` and ``transport`` fixtures are judged by the fold and the SSE decoder and are only
    listed here. ``codes`` are the refusing rule (a ``DecodeError`` has none) or the warning codes;
    ``why`` says where we differ from the validator.
    """

    outcome: Outcome
    judge: Judge = "stream"
    codes: tuple[str, ...] = ()
    why: str = ""


VERDICTS: dict[str, Verdict] = {
    "valid/agentic-chat": Verdict("accept"),
    "valid/agentic-generative-ui": Verdict("accept"),
    "valid/backend-tool-rendering": Verdict("accept"),
    "valid/human-in-the-loop": Verdict("accept"),
    "valid/predictive-state-updates": Verdict("accept"),
    "valid/shared-state": Verdict("accept"),
    "valid/tool-based-generative-ui": Verdict("accept"),
    "invalid/AGUI001-first-event-not-run-started": Verdict("reject", codes=("LC-01/AGUI001",)),
    "invalid/AGUI002-duplicate-run-started": Verdict("reject", codes=("LC-05/AGUI002",)),
    "invalid/AGUI003-run-never-terminated": Verdict("reject", codes=("LC-04/AGUI003",)),
    "invalid/AGUI004-event-after-terminal": Verdict("reject", codes=("CL-01/AGUI004",)),
    "invalid/AGUI005-finished-and-error": Verdict(
        "accept", why="CL-02: one late RUN_ERROR after RUN_FINISHED is admitted (validator: error)"),
    "invalid/AGUI006-step-finished-unmatched": Verdict("reject", codes=("ST-01/AGUI006",)),
    "invalid/AGUI007-step-unterminated": Verdict("reject", codes=("ST-02/AGUI007",)),
    "invalid/AGUI008-unstable-run-ids": Verdict("warn", codes=("LC-07/AGUI008",)),
    "invalid/AGUI101-content-without-start": Verdict("reject", codes=("TX-02/AGUI101",)),
    "invalid/AGUI102-end-without-start": Verdict("reject", codes=("TX-02/AGUI102",)),
    "invalid/AGUI103-message-unterminated": Verdict("reject", codes=("TX-04/AGUI103",)),
    "invalid/AGUI104-duplicate-message-id": Verdict(
        "reject", codes=("TX-04/AGUI103",),
        why="TX-05: the re-use itself only warns; the re-opened message is never ended (TX-04)"),
    "invalid/AGUI105-empty-content-delta": Verdict(
        "accept", why="TX-07: 1.0 allows an empty delta (validator: warning)"),
    "invalid/AGUI106-interleaved-same-message-id": Verdict("reject", codes=("TX-03/AGUI106",)),
    "invalid/AGUI201-args-without-start": Verdict("reject", codes=("TC-02/AGUI201",)),
    "invalid/AGUI202-end-without-start": Verdict("reject", codes=("TC-02/AGUI202",)),
    "invalid/AGUI203-unterminated-tool-call": Verdict("reject", codes=("TC-04/AGUI203",)),
    "invalid/AGUI204-args-not-json": Verdict(
        "warn", judge="fold", why="TC-06: arguments are not validated by the protocol; raw kept, the fold warns "
                                  "(validator: error)"),
    "invalid/AGUI205-duplicate-tool-call-id": Verdict(
        "reject", codes=("TC-04/AGUI203",),
        why="TC-05: the re-use itself only warns; the re-opened call is never ended (TC-04)"),
    "invalid/AGUI206-result-before-end": Verdict("warn", codes=("TC-12/AGUI206",)),
    "invalid/AGUI207-result-unknown-id": Verdict(
        "warn", codes=("TC-11/AGUI207",),
        why="TC-10/TC-11: a result may answer an earlier run's call; keep the tool message (validator: error)"),
    "invalid/AGUI208-unknown-parent-message-id": Verdict("accept"),
    "invalid/AGUI301-delta-before-snapshot": Verdict("accept"),
    "invalid/AGUI302-delta-failed-to-apply": Verdict(
        "warn", judge="fold", why="SP-06: state left unchanged with a warning (validator: error)"),
    "invalid/AGUI303-invalid-patch-document": Verdict(
        "warn", judge="fold", why="SP-07: whole patch skipped with a warning (validator: error)"),
    "invalid/AGUI304-midrun-snapshot-discards-deltas": Verdict("accept"),
    "invalid/AGUI305-shared-state-never-established": Verdict(
        "accept", why="a client cannot know the producer's declared features (validator: warning)"),
    "invalid/AGUI401-reasoning-content-without-start": Verdict("reject", codes=("RS-02/AGUI401",)),
    "invalid/AGUI402-reasoning-unterminated": Verdict(
        "reject", codes=("RS-05/AGUI402",), why="RS-05: follow the reference client (validator: warning)"),
    "invalid/AGUI501-missing-data-prefix": Verdict("warn", judge="transport", why="TR-07 (validator: error)"),
    "invalid/AGUI502-payload-not-json": Verdict("reject", codes=("DecodeError",)),
    "invalid/AGUI503-unknown-event-type": Verdict(
        "warn", codes=("UK-02",), why="UK-02: drop the event with a warning (validator: error)"),
    "invalid/AGUI504-schema-violation": Verdict("reject", codes=("DecodeError",)),
    "invalid/AGUI505-unexpected-content-type": Verdict("warn", judge="transport"),
    "invalid/AGUI506-keepalive-gap": Verdict("accept", judge="transport"),
    "invalid/AGUI507-buffered-response": Verdict("accept", judge="transport"),
    "invalid/AGUI508-connection-dropped": Verdict("reject", judge="transport"),
    "invalid/AGUI601-duplicate-subagent-started": Verdict("reject", codes=("SA-02/AGUI601",)),
    "invalid/AGUI602-finished-without-start": Verdict("reject", codes=("SA-03/AGUI602",)),
    "invalid/AGUI603-error-without-start": Verdict("reject", codes=("SA-03/AGUI603",)),
    "invalid/AGUI604-subagent-unterminated": Verdict("reject", codes=("SA-04/AGUI604",)),
    "invalid/AGUI605-unknown-parent-subagent-run-id": Verdict(
        "reject", codes=("SA-05/AGUI605",), why="SA-05: follow the reference client (validator: warning)"),
    "invalid/AGUI606-continuation-owner-mismatch": Verdict(
        "reject", codes=("SA-11/AGUI606",), why="SA-11: follow the reference client (validator: warning)"),
    "invalid/AGUI901-raw-wraps-typed-event": Verdict("accept"),
    "invalid/AGUI902-no-timestamps": Verdict("accept"),
    "invalid/AGUI903-custom-name-not-namespaced": Verdict("accept"),
}

FIXTURES = files("ag_ui_validate") / "spec" / "fixtures"


def corpus() -> Iterator[tuple[str, Traversable]]:
    """Every fixture of the corpus: its name and its file (a JSONL stream or a transport scenario)."""
    for entry in (FIXTURES / "valid").iterdir():
        if entry.name.endswith(".jsonl"):
            yield f"valid/{entry.name.removesuffix('.jsonl')}", entry
    for entry in (FIXTURES / "invalid").iterdir():
        if entry.is_dir():
            stream = entry / "stream.jsonl"
            yield f"invalid/{entry.name}", stream if stream.is_file() else entry / "scenario.json"


def test_verdict_table_covers_the_whole_corpus() -> None:
    found = dict(corpus())

    assert len(found) == 53
    assert set(found) == set(VERDICTS)
    assert {name for name, path in found.items() if path.name == "scenario.json"} == {
        name for name, verdict in VERDICTS.items() if verdict.judge == "transport"}


def run_fixture(path: Traversable) -> tuple[Outcome, tuple[str, ...]]:
    """Decode, expand and verify one JSONL stream; the outcome and the refusing rule or warning codes."""
    # Split on LF only: str.splitlines() would also split inside JSON strings holding U+2028 (B038).
    lines = [line for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]
    expander, verifier = ChunkExpander(), RunVerifier()
    warnings: list[StreamWarning] = []
    with collect_warnings() as sink:
        try:
            for index, line in enumerate(lines):
                for event in expander.feed(decode_event(line), index):
                    warnings.extend(verifier.check(event, index))
            for event in expander.close():
                warnings.extend(verifier.check(event, len(lines)))
            verifier.end(len(lines))
        except (DecodeError, LimitExceeded) as exc:
            return "reject", (type(exc).__name__,)
        except SequenceError as exc:
            assert exc.rule is not None
            return "reject", (exc.rule,)
    codes = tuple(w.code for w in [*sink.items, *warnings])
    return ("warn" if codes else "accept"), codes


@pytest.mark.parametrize("name", [name for name, verdict in VERDICTS.items() if verdict.judge == "stream"])
def test_validator_fixture_gets_the_verdict_bad_inputs_decides(name: str) -> None:
    verdict = VERDICTS[name]

    outcome, codes = run_fixture(dict(corpus())[name])

    assert (outcome, codes) == (verdict.outcome, verdict.codes)


@pytest.mark.parametrize("name", [name for name, verdict in VERDICTS.items() if verdict.judge == "fold"])
def test_fixture_the_fold_judges_gets_through_decoding_and_verification(name: str) -> None:
    # Its warning is the fold's to give (arguments or state it alone holds); these stages must not refuse it.
    outcome, codes = run_fixture(dict(corpus())[name])

    assert outcome != "reject", codes


@pytest.mark.parametrize("shape", ["repeated", "unknown-call", "unknown-subagent", "subagent-suspended"])
def test_an_interrupt_id_the_agent_chose_is_named_cut_and_escaped_in_errors_and_warnings(shape: str) -> None:
    # The verifier wrote an interrupt's id with repr: 100,000 characters of it made a 100 KB error or
    # warning, and a Hangul filler (U+3164, which repr leaves) hid in it. It is named as every message
    # of the package names an id the agent chose (cut at 100 characters with a digest, escaped).
    import json

    from agui_client import ProtocolError, replay

    long_id = "x" * 100_000 + "\u3164\u202e"
    interrupts: list[dict[str, object]] = [{"id": long_id, "reason": "confirm"}]
    head: list[dict[str, object]] = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]
    if shape == "repeated":
        interrupts.append({"id": long_id, "reason": "confirm"})
    elif shape == "unknown-call":
        interrupts[0]["toolCallId"] = long_id
    elif shape == "unknown-subagent":
        interrupts[0]["subagentRunId"] = long_id
    else:
        interrupts = [{"id": "i1", "reason": "confirm"}]
        head += [{"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "helper"},
                 {"type": "SUBAGENT_FINISHED", "subagentRunId": "s1",
                  "outcome": {"type": "suspended", "interruptIds": [long_id] * 30}}]
    events = [*head, {"type": "RUN_FINISHED", "threadId": "t", "runId": "r",
                      "outcome": {"type": "interrupt", "interrupts": interrupts}}]
    try:
        said = [w.message for w in replay([json.dumps(e) for e in events]).warnings]
    except ProtocolError as exc:
        said = [str(exc)]
    assert said and all(len(text) < 1_500 for text in said)  # (a list names its first ten)
    assert any("...#" in text for text in said)
    assert not any(c in text for text in said for c in "\u3164\u202e")
